// RadixTree::verify(), dump() and metadata_bytes(): whole-tree walks for tests, debugging and
// reports. Kept apart from the hot paths in radix_tree.cpp.
#include <fmt/format.h>
#include <cstddef>

#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "kv_store/heap.h"
#include "radix/tree_internals.h"

namespace radixkv {

namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::logic_error("RadixTree::verify: " + what);
}

// Each namespace's counter against the pages found in it, both ways.
void verify_namespace_counts(const std::unordered_map<Namespace, uint64_t>& found,
                             const std::unordered_map<Namespace, uint64_t>& counters,
                             const char* tier) {
  for (const auto& [ns, pages] : counters) {
    const auto it = found.find(ns);
    const uint64_t want = it == found.end() ? 0 : it->second;
    if (pages != want) {
      fail(fmt::format("namespace {}: {} {} pages but its counter says {}", ns, want, tier, pages));
    }
  }
  for (const auto& [ns, pages] : found) {
    if (counters.find(ns) == counters.end())
      fail(fmt::format("namespace {}: {} {} pages but no counter", ns, pages, tier));
  }
}

}  // namespace

void RadixTree::verify() const {
  uint64_t cached = 0, protected_pages = 0, evictable_nodes = 0, nodes = 0;
  uint64_t host_cached = 0, host_pinned = 0, host_evictable_nodes = 0;
  std::vector<bool> seen(pool_.capacity_pages(), false);
  std::vector<bool> host_seen(host_tier_ ? host_tier_->pool.capacity_pages() : 0, false);
  std::vector<std::pair<const RadixNode*, Namespace>> stack;     // nodes and their namespace
  std::unordered_map<Namespace, uint64_t> namespace_pages;       // device pages per namespace
  std::unordered_map<Namespace, uint64_t> namespace_host_pages;  // host pages per namespace
  for (const auto& [ns, root] : roots_) {
    if (root->parent_ != nullptr || root->num_pages() != 0 || root->pages != 0 || root->ns_ != ns ||
        root->host_ != nullptr) {
      fail(fmt::format("root of namespace {} is malformed", ns));
    }
    if (policy_->contains(*root)) fail(fmt::format("root of namespace {} is in the policy", ns));
    stack.emplace_back(root, ns);
  }
  while (!stack.empty()) {
    // Plain variables, not a structured binding: clang (the fuzz build) will not let the lambda
    // below capture one.
    const RadixNode* node = stack.back().first;
    const Namespace ns = stack.back().second;
    stack.pop_back();
    if (node->pages > 0) namespace_pages[ns] += node->pages;
    const std::string where =
        fmt::format("node (ns {}, depth {} pages, {} pages, {} on the device)", ns,
                    node->prefix_pages, node->num_pages(), node->pages);
    uint64_t child_locks = 0;
    uint32_t device_children = 0;
    node->children_.for_each([&](uint64_t hash, const RadixNode* child) {
      if (child->parent_ != node) fail(where + ": a child's parent pointer is elsewhere");
      if (child->num_pages() == 0) fail(where + ": a child has an empty edge");
      if (hash != child->first_page_hash_ || hash != hash_page(child->token_array())) {
        fail(where + ": a child is filed under the wrong hash");
      }
      if (find_child(node, child->token_array()) != child) {
        fail(where + ": two children share a first page");
      }
      if (child->prefix_pages != node->prefix_pages + node->num_pages()) {
        fail(where + ": a child's prefix_pages is wrong");
      }
      child_locks += child->lock_count_;
      device_children += child->pages > 0 ? 1 : 0;
      stack.emplace_back(child, ns);
    });
    if (child_locks > node->lock_count_) {
      fail(fmt::format("{}: lock count {} is below its children's sum {}", where, node->lock_count_,
                       child_locks));
    }
    if (device_children != node->device_children_) {
      fail(fmt::format("{}: {} children hold device pages but the count says {}", where,
                       device_children, node->device_children_));
    }
    if (node->is_root()) continue;
    ++nodes;
    // One block: what the tree keeps in front of the node (its past, the policy's state), the
    // node, its page ids, its tokens (radix_node.h); the allocation starts at the first.
    const size_t before = bytes_before(node);
    const size_t block = before + sizeof(RadixNode) + size_t{node->capacity_} * sizeof(PageId) +
                         size_t{node->capacity_} * page_tokens_ * sizeof(TokenId);
    const void* start = reinterpret_cast<const std::byte*>(node) - before;
    if (node->num_pages() > node->capacity_ || heap::usable_size(start) < block) {
      fail(where + ": more pages than its block holds");
    }
    if (node->pages > node->num_pages()) fail(where + ": more device pages than pages");
    // The tier invariants of radix_node.h.
    if (node->pages < node->num_pages() && device_children > 0) {
      fail(where + ": a child holds device pages below a page that is not on the device (1)");
    }
    if (node->lock_count_ > 0 && node->pages < node->num_pages()) {
      fail(where + ": it is locked but not wholly on the device (3)");
    }
    if (!host_tier_ && (node->host_ != nullptr || node->pages != node->num_pages())) {
      fail(where + ": pages off the device in a tree without a host tier");
    }
    for (PageId page : node->page_ids()) {
      if (!pool_.contains(page)) fail(fmt::format("{}: page {} is not in the pool", where, page));
      if (seen[page - first_page_]) fail(fmt::format("{}: page {} is indexed twice", where, page));
      seen[page - first_page_] = true;
      if (!marked(page)) fail(fmt::format("{}: page {} is not marked as indexed", where, page));
      if (pool_.refcount(page) == 0)
        fail(fmt::format("{}: page {} is free in the pool", where, page));
    }
    if (const HostPart* host = node->host_) {
      if (host->node != node) fail(where + ": its host part belongs to another node");
      uint32_t count = 0;
      for (uint32_t i = 0; i < node->num_pages(); ++i) {
        const PageId page = host->page_ids[i];
        if (page == kInvalidPage) continue;
        ++count;
        const PagePool& pool = host_tier_->pool;
        if (!pool.contains(page))
          fail(fmt::format("{}: host page {} is not in the pool", where, page));
        if (host_seen[page]) fail(fmt::format("{}: host page {} is indexed twice", where, page));
        host_seen[page] = true;
        if (!host_tier_->indexed(page)) {
          fail(fmt::format("{}: host page {} is not marked as indexed", where, page));
        }
        if (pool.refcount(page) == 0) fail(fmt::format("{}: host page {} is free", where, page));
      }
      if (count != host->count) {
        fail(fmt::format("{}: {} host pages but the count says {}", where, count, host->count));
      }
      host_cached += count;
      if (count > 0) namespace_host_pages[ns] += count;
    }
    for (uint32_t i = node->pages; i < node->num_pages(); ++i) {
      if (node->host_page(i) == kInvalidPage) {
        fail(fmt::format("{}: page {} is on no tier (2)", where, i));
      }
    }
    cached += node->pages;
    if (node->lock_count_ > 0) {
      protected_pages += node->pages;
      host_pinned += node->num_pages() - node->pages;
    }
    if (policy_->contains(*node) != device_evictable(node)) {
      fail(fmt::format("{}: device-evictable is {} but device policy membership is {}", where,
                       device_evictable(node), policy_->contains(*node)));
    }
    evictable_nodes += device_evictable(node) ? 1 : 0;
    if (host_tier_) {
      const bool linked = node->host_ != nullptr && host_tier_->policy->contains(*node->host_);
      if (linked != host_evictable(node)) {
        fail(fmt::format("{}: host-evictable is {} but host policy membership is {}", where,
                         host_evictable(node), linked));
      }
      if (linked && (node->host_->pages != node->num_pages() - node->pages ||
                     node->host_->prefix_pages != node->prefix_pages + node->pages)) {
        fail(where + ": its host entry is charged with other pages than its host-only tail");
      }
      host_evictable_nodes += linked ? 1 : 0;
    }
    if (page_hashes()) {
      for (uint32_t i = 0; i < node->num_pages(); ++i) {
        const PageHash want = chain_page_hash(
            parent_hash(node, i), {node->token_array() + size_t{i} * page_tokens_, page_tokens_});
        const bool device_ok = i >= node->pages || device_hash(node->page_array()[i]) == want;
        const bool host_ok =
            node->host_page(i) == kInvalidPage || host_tier_->hash(node->host_page(i)) == want;
        if (!device_ok || !host_ok)
          fail(fmt::format("{}: page {} has a wrong page hash", where, i));
      }
    }
  }
  if (cached != cached_pages_)
    fail(fmt::format("cached pages {} != counter {}", cached, cached_pages_));
  if (count_namespaces_) {
    verify_namespace_counts(namespace_pages, namespace_pages_, "device");
    verify_namespace_counts(namespace_host_pages, namespace_host_pages_, "host");
  }
  if (protected_pages != protected_pages_) {
    fail(fmt::format("protected pages {} != counter {}", protected_pages, protected_pages_));
  }
  if (evictable_nodes != policy_->size()) {
    fail(fmt::format("{} evictable nodes but the policy holds {}", evictable_nodes,
                     policy_->size()));
  }
  if (nodes != stats_.nodes)
    fail(fmt::format("{} nodes but the counter says {}", nodes, stats_.nodes));
  const auto marked = static_cast<uint64_t>(std::count(in_tree_.begin(), in_tree_.end(), true));
  if (marked != cached)
    fail(fmt::format("{} pages marked as indexed but {} cached", marked, cached));
  if (!host_tier_) return;
  const HostTier& h = *host_tier_;
  if (host_cached != h.cached) {
    fail(fmt::format("host cached pages {} != counter {}", host_cached, h.cached));
  }
  if (host_pinned != h.pinned) {
    fail(fmt::format("pinned host pages {} != counter {}", host_pinned, h.pinned));
  }
  if (host_evictable_nodes != h.policy->size()) {
    fail(fmt::format("{} host-evictable nodes but the host policy holds {}", host_evictable_nodes,
                     h.policy->size()));
  }
  const auto host_marked =
      static_cast<uint64_t>(std::count(h.in_tree.begin(), h.in_tree.end(), true));
  if (host_marked != host_cached) {
    fail(fmt::format("{} host pages marked as indexed but {} cached", host_marked, host_cached));
  }
  for (const auto& [ticket, page] : h.in_flight) {
    if (h.indexed(page) || h.pool.refcount(page) == 0) {
      fail(fmt::format("host page {} in flight is indexed or free", page));
    }
  }
}

std::string RadixTree::dump(std::size_t max_tokens) const {
  std::string out = fmt::format(
      "RadixTree: page_tokens {}, {} nodes, {} cached pages ({} protected), policy {} with {} "
      "leaves\n",
      page_tokens_, stats_.nodes, cached_pages_, protected_pages_, policy_->name(),
      policy_->size());
  if (host_tier_) {
    out += fmt::format("host tier: {} cached pages ({} in flight), policy {} with {} leaves, {}\n",
                       host_tier_->cached, host_tier_->in_flight.size(), host_tier_->policy->name(),
                       host_tier_->policy->size(), host_tier_->write.to_string());
  }
  std::vector<std::pair<Namespace, const RadixNode*>> roots(roots_.begin(), roots_.end());
  std::sort(roots.begin(), roots.end());
  std::vector<std::pair<const RadixNode*, int>> stack;
  for (const auto& [ns, root] : roots) {
    out += fmt::format("ns {} (locks {})\n", ns, root->lock_count_);
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto [node, depth] = stack.back();
      stack.pop_back();
      if (!node->is_root()) {
        const auto tokens = node->edge_tokens(page_tokens_);
        const auto shown = tokens.first(std::min(tokens.size(), max_tokens));
        std::vector<std::string> pages;
        for (uint32_t i = 0; i < node->num_pages(); ++i) {
          const PageId host = node->host_page(i);
          if (i >= node->pages) {
            pages.push_back(fmt::format("h{}", host));
          } else if (host != kInvalidPage) {
            pages.push_back(fmt::format("{}+h{}", node->page_array()[i], host));
          } else {
            pages.push_back(fmt::format("{}", node->page_array()[i]));
          }
        }
        const bool host_evictable_node = host_tier_ && host_evictable(node);
        out += fmt::format("{:{}}[{}{}] pages [{}] locks {}{}{}\n", "", depth * 2,
                           fmt::join(shown, " "), shown.size() < tokens.size() ? " ..." : "",
                           fmt::join(pages, " "), node->lock_count_,
                           device_evictable(node) ? " evictable" : "",
                           host_evictable_node ? " host-evictable" : "");
      }
      std::vector<const RadixNode*> children;
      node->children_.for_each(
          [&](uint64_t, const RadixNode* child) { children.push_back(child); });
      std::sort(children.begin(), children.end(), [](const RadixNode* a, const RadixNode* b) {
        return a->token_array()[0] >
               b->token_array()[0];  // popped from the stack in ascending order
      });
      for (const RadixNode* child : children)
        stack.emplace_back(child, depth + (node->is_root() ? 0 : 1));
    }
  }
  return out;
}

uint64_t RadixTree::metadata_bytes() const {
  uint64_t bytes = in_tree_.capacity() / 8 + device_hashes_.capacity() * sizeof(PageHash);
  if (host_tier_) {
    bytes += host_tier_->in_tree.capacity() / 8 + host_tier_->hashes.capacity() * sizeof(PageHash);
  }
  std::vector<const RadixNode*> stack;
  for (const auto& [ns, root] : roots_) stack.push_back(root);
  while (!stack.empty()) {
    const RadixNode* node = stack.back();
    stack.pop_back();
    // Each block from its start: the state in front of the node (and of its host part) with it.
    const auto* block = reinterpret_cast<const std::byte*>(node) - bytes_before(node);
    bytes += heap::usable_size(block) + node->children_.heap_bytes();  // with its arrays
    if (node->host_ != nullptr) {
      bytes += heap::usable_size(reinterpret_cast<const std::byte*>(node->host_) -
                                 host_tier_->state_bytes);
    }
    node->children_.for_each([&](uint64_t, const RadixNode* child) { stack.push_back(child); });
  }
  return bytes;
}

}  // namespace radixkv
