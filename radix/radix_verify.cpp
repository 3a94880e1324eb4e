// RadixTree::verify(), dump() and metadata_bytes(): whole-tree walks for tests, debugging and
// reports. Kept apart from the hot paths in radix_tree.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "kv_store/heap.h"
#include "radix/radix_tree.h"

namespace radixkv {

namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::logic_error("RadixTree::verify: " + what);
}

}  // namespace

void RadixTree::verify() const {
  uint64_t cached = 0, protected_pages = 0, evictable_nodes = 0, nodes = 0;
  std::vector<bool> seen(pool_.capacity_pages(), false);
  std::vector<const RadixNode*> stack;
  for (const auto& [ns, root] : roots_) {
    if (root->parent_ != nullptr || root->pages != 0 || root->ns_ != ns) {
      fail(fmt::format("root of namespace {} is malformed", ns));
    }
    if (policy_->contains(*root)) fail(fmt::format("root of namespace {} is in the policy", ns));
    stack.push_back(root);
  }
  while (!stack.empty()) {
    const RadixNode* node = stack.back();
    stack.pop_back();
    const std::string where = fmt::format("node (ns {}, depth {} pages, {} pages)", node->ns_,
                                          node->prefix_pages, node->pages);
    uint64_t child_locks = 0;
    node->children_.for_each([&](uint64_t hash, const RadixNode* child) {
      if (child->parent_ != node) fail(where + ": a child's parent pointer is elsewhere");
      if (child->ns_ != node->ns_) fail(where + ": a child is in another namespace");
      if (child->pages == 0) fail(where + ": a child has an empty edge");
      if (hash != child->first_page_hash_ || hash != hash_page(child->tokens_)) {
        fail(where + ": a child is filed under the wrong hash");
      }
      if (find_child(node, child->tokens_) != child) {
        fail(where + ": two children share a first page");
      }
      if (child->prefix_pages != node->prefix_pages + node->pages) {
        fail(where + ": a child's prefix_pages is wrong");
      }
      child_locks += child->lock_count_;
      stack.push_back(child);
    });
    if (child_locks > node->lock_count_) {
      fail(fmt::format("{}: lock count {} is below its children's sum {}", where, node->lock_count_,
                       child_locks));
    }
    if (node->is_root()) continue;
    ++nodes;
    if (node->pages > node->capacity_pages_) fail(where + ": more pages than its arrays hold");
    for (PageId page : node->page_ids()) {
      if (!pool_.contains(page)) fail(fmt::format("{}: page {} is not in the pool", where, page));
      if (seen[page - first_page_]) fail(fmt::format("{}: page {} is indexed twice", where, page));
      seen[page - first_page_] = true;
      if (!marked(page)) fail(fmt::format("{}: page {} is not marked as indexed", where, page));
      if (pool_.refcount(page) == 0)
        fail(fmt::format("{}: page {} is free in the pool", where, page));
    }
    cached += node->pages;
    if (node->lock_count_ > 0) protected_pages += node->pages;
    if (policy_->contains(*node) != evictable(node)) {
      fail(fmt::format("{}: evictable is {} but policy membership is {}", where, evictable(node),
                       policy_->contains(*node)));
    }
    evictable_nodes += evictable(node) ? 1 : 0;
  }
  if (cached != cached_pages_)
    fail(fmt::format("cached pages {} != counter {}", cached, cached_pages_));
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
}

std::string RadixTree::dump(std::size_t max_tokens) const {
  std::string out = fmt::format(
      "RadixTree: page_tokens {}, {} nodes, {} cached pages ({} protected), policy {} with {} "
      "leaves\n",
      page_tokens_, stats_.nodes, cached_pages_, protected_pages_, policy_->name(),
      policy_->size());
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
        out += fmt::format("{:{}}[{}{}] pages [{}] locks {} last {} hits {}{}\n", "", depth * 2,
                           fmt::join(shown, " "), shown.size() < tokens.size() ? " ..." : "",
                           fmt::join(node->page_ids(), " "), node->lock_count_, node->last_access,
                           node->hits, evictable(node) ? " evictable" : "");
      }
      std::vector<const RadixNode*> children;
      node->children_.for_each(
          [&](uint64_t, const RadixNode* child) { children.push_back(child); });
      std::sort(children.begin(), children.end(), [](const RadixNode* a, const RadixNode* b) {
        return a->tokens_[0] > b->tokens_[0];  // popped from the stack in ascending order
      });
      for (const RadixNode* child : children)
        stack.emplace_back(child, depth + (node->is_root() ? 0 : 1));
    }
  }
  return out;
}

uint64_t RadixTree::metadata_bytes() const {
  uint64_t bytes = in_tree_.capacity() / 8;
  std::vector<const RadixNode*> stack;
  for (const auto& [ns, root] : roots_) stack.push_back(root);
  while (!stack.empty()) {
    const RadixNode* node = stack.back();
    stack.pop_back();
    bytes += heap::usable_size(node) + node->children_.heap_bytes();
    if (node->tokens_ != nullptr)
      bytes += heap::usable_size(node->tokens_) + heap::usable_size(node->pages_);
    node->children_.for_each([&](uint64_t, const RadixNode* child) { stack.push_back(child); });
  }
  return bytes;
}

}  // namespace radixkv
