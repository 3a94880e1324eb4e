#include "radix/radix_tree.h"

#include <fmt/format.h>
#include <xxhash.h>

#include "kv_store/heap.h"
#include "radix/tree_internals.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>

namespace radixkv {

namespace {

// Index of the first differing token among the first n, or n. memcmp runs over blocks of 256 tokens
// until one differs, then over the rest at once (the usual case: the whole edge matches); only when
// that differs is the difference narrowed down to 16 tokens by memcmp and then found token by
// token. (A scan from 0 after one memcmp over all n read a long common prefix twice, the second
// time token by token.)
// Always inlined: the match loop calls it once per node, and an out-of-line call costs a tenth of
// a short match (measured with callgrind on BM_Match).
[[gnu::always_inline]] inline uint32_t common_prefix(const TokenId* a, const TokenId* b,
                                                     uint32_t n) {
  constexpr uint32_t kBlock = 256, kFine = 16;
  uint32_t i = 0;
  while (n - i >= kBlock && std::memcmp(a + i, b + i, kBlock * sizeof(TokenId)) == 0) i += kBlock;
  if (std::memcmp(a + i, b + i, size_t{n - i} * sizeof(TokenId)) == 0) return n;
  while (n - i >= kFine && std::memcmp(a + i, b + i, kFine * sizeof(TokenId)) == 0) i += kFine;
  while (a[i] == b[i]) ++i;  // a difference lies ahead: the memcmp above found one
  return i;
}

}  // namespace

// Where a key's walk from a root stops: `node` is the deepest node whose whole edge matched;
// `partial`, when set, is its child whose edge matched only `partial_pages` leading pages.
struct RadixTree::Cursor {
  RadixNode* node = nullptr;
  RadixNode* partial = nullptr;
  uint32_t partial_pages = 0;
  uint32_t tokens = 0;
  uint32_t device_tokens = 0;  // the leading matched tokens whose pages are on the device
};

RadixTree::RadixTree(PagePool& pool, std::unique_ptr<EvictionPolicy> policy)
    : pool_(pool),
      policy_(std::move(policy)),
      device_state_bytes_(policy_ ? checked_state_bytes(*policy_, "RadixTree") : 0),
      page_tokens_(pool.layout().page_tokens),
      first_page_(pool.first_page()),
      in_tree_(pool.capacity_pages(), false) {
  if (!policy_) throw std::invalid_argument("RadixTree: an eviction policy is required");
}

RadixTree::~RadixTree() { release_everything(); }

// Every node goes, namespace roots included, and every page the tree holds on either tier.
void RadixTree::release_everything() {
  // No page may go back to a pool while a copy still reads or writes it.
  if (host_tier_ && host_tier_->last_ticket != 0) host_tier_->copier.wait(host_tier_->last_ticket);
  std::vector<RadixNode*> stack;
  for (auto& [ns, root] : roots_) stack.push_back(root);
  roots_.clear();
  while (!stack.empty()) {
    RadixNode* node = stack.back();
    stack.pop_back();
    node->children_.for_each([&](uint64_t, RadixNode* child) { stack.push_back(child); });
    release_node_pages(node);
    destroy_node(node);
  }
  if (host_tier_) retire_copies();
}

// Unlinks `node` from both policies and releases the tree's reference on all its pages, without
// any bookkeeping: for the destructor and clear().
void RadixTree::release_node_pages(RadixNode* node) {
  if (policy_->contains(*node)) policy_->remove(*node);
  for (PageId page : node->page_ids()) {
    marked(page) = false;
    pool_.release(page);
  }
  if (HostPart* host = node->host_) {
    if (host_tier_->policy->contains(*host)) host_tier_->policy->remove(*host);
    for (uint32_t i = 0; i < node->num_pages(); ++i) {
      if (host->page_ids[i] == kInvalidPage) continue;
      host_tier_->indexed(host->page_ids[i]) = false;
      host_tier_->pool.release(host->page_ids[i]);
    }
  }
}

uint64_t RadixTree::hash_page(const TokenId* page) const {
  return XXH3_64bits(page, size_t{page_tokens_} * sizeof(TokenId));
}

RadixNode* RadixTree::find_child(const RadixNode* node, const TokenId* page) const {
  const size_t page_bytes = size_t{page_tokens_} * sizeof(TokenId);
  return node->children_.find(hash_page(page), [&](const RadixNode* child) {
    return std::memcmp(child->token_array(), page, page_bytes) == 0;
  });
}

const RadixNode* RadixTree::find_root(Namespace ns) const {
  const auto it = roots_.find(ns);
  return it == roots_.end() ? nullptr : it->second;
}

RadixNode* RadixTree::root_for(Namespace ns) {
  auto [it, inserted] = roots_.try_emplace(ns, nullptr);
  if (inserted) {
    try {
      it->second = new_node(nullptr, nullptr, nullptr, 0, fresh_past());
      it->second->ns_ = ns;
    } catch (...) {
      roots_.erase(it);
      throw;
    }
  }
  return it->second;
}

// Inlined into match() and insert(), as the plain cache always had it.
void RadixTree::touch_path(RadixNode* node, const AccessHint& hint) {
  if (host_tier_) {
    touch_path_in<true>(node, hint);
  } else {
    touch_path_in<false>(node, hint);
  }
}

void RadixTree::touch(RadixNode* end, const AccessHint& hint) {
  check_node(end, "touch");
  touch_path(end, hint);
}

template <bool kTiered>
void RadixTree::touch_path_in(RadixNode* node, const AccessHint& hint) {
  AccessHint access = hint;
  access.tick = ++clock_;
  for (RadixNode* x = node; x != nullptr && !x->is_root(); x = x->parent_) {
    if (kTiered) {
      AccessHistory& was = past(x);
      if (access.counts_as_hit) ++was.hits;
      was.last = access;
    }
    policy_->on_access(*x, access);
    if (kTiered && x->host_ != nullptr) {
      refresh_host_charge(x);
      host_tier_->policy->on_access(*x->host_, access);
    }
  }
}

RadixTree::Cursor RadixTree::locate(const RadixNode* root, std::span<const TokenId> tokens,
                                    std::vector<PageId>* pages) const {
  // One instance per kind of tree, so that a tree without a host tier walks as it always did.
  return host_tier_ ? locate_in<true>(root, tokens, pages) : locate_in<false>(root, tokens, pages);
}

template <bool kTiered>
RadixTree::Cursor RadixTree::locate_in(const RadixNode* root, std::span<const TokenId> tokens,
                                       std::vector<PageId>* pages) const {
  const uint32_t usable = static_cast<uint32_t>(tokens.size() / page_tokens_ * page_tokens_);
  Cursor cursor{const_cast<RadixNode*>(root)};
  uint32_t pos = 0;
  // Device pages are a prefix of the path (radix_node.h): once a node is not wholly on the
  // device, the pages below it are on the host only.
  bool on_device = true;
  while (pos < usable) {
    RadixNode* child = find_child(cursor.node, tokens.data() + pos);
    if (child == nullptr) break;
    // Without a host tier every page is on the device: the edge is the device count.
    const uint32_t edge_pages = kTiered ? child->num_pages() : child->pages;
    const uint32_t edge = edge_pages * page_tokens_;
    const uint32_t comparable = std::min(edge, usable - pos);
    // The first page is known equal; compare the rest and keep whole pages only.
    const uint32_t same =
        page_tokens_ + common_prefix(child->token_array() + page_tokens_,
                                     tokens.data() + pos + page_tokens_, comparable - page_tokens_);
    const uint32_t same_pages = same / page_tokens_;
    if (!kTiered) {
      if (pages != nullptr)
        pages->insert(pages->end(), child->page_array(), child->page_array() + same_pages);
    } else if (on_device) {
      const uint32_t device = std::min(same_pages, child->pages);
      if (pages != nullptr)
        pages->insert(pages->end(), child->page_array(), child->page_array() + device);
      cursor.device_tokens = pos + device * page_tokens_;
      on_device = child->pages == child->num_pages();
    }
    pos += same_pages * page_tokens_;
    if (same_pages < edge_pages) {
      cursor.partial = child;
      cursor.partial_pages = same_pages;
      break;
    }
    cursor.node = child;
  }
  cursor.tokens = pos;
  if (!kTiered) cursor.device_tokens = pos;
  return cursor;
}

MatchResult RadixTree::match(Namespace ns, std::span<const TokenId> tokens,
                             std::vector<PageId>* pages, const AccessHint& hint) {
  const Cursor cursor = locate(root_for(ns), tokens, pages);
  RadixNode* end = cursor.partial ? split(cursor.partial, cursor.partial_pages) : cursor.node;
  touch_path(end, hint);
  return {cursor.tokens, cursor.device_tokens, end};
}

uint32_t RadixTree::peek(Namespace ns, std::span<const TokenId> tokens,
                         std::vector<PageId>* pages) const {
  const RadixNode* root = find_root(ns);
  return root == nullptr ? 0 : locate(root, tokens, pages).tokens;
}

PartialPage RadixTree::partial_page(const RadixNode* end, std::span<const TokenId> next) {
  check_node(end, "partial_page");
  const std::size_t limit = std::min<std::size_t>(next.size(), page_tokens_ - 1);
  PartialPage best;
  end->children_.for_each([&](uint64_t, const RadixNode* child) {
    if (child->device_pages() == 0) return;
    if (child->host_ != nullptr && !copy_done(child->host_->load_ticket)) return;
    const TokenId* first = child->token_array();
    const auto shared = static_cast<uint32_t>(
        std::mismatch(next.begin(), next.begin() + static_cast<std::ptrdiff_t>(limit), first)
            .first -
        next.begin());
    if (shared > best.tokens) best = {shared, child->page_array()[0]};
  });
  return best;
}

InsertResult RadixTree::insert(Namespace ns, std::span<const TokenId> tokens,
                               std::span<const PageId> pages, const AccessHint& hint) {
  return insert_below(root_for(ns), tokens, pages, hint);
}

InsertResult RadixTree::insert_below(RadixNode* from, std::span<const TokenId> tokens,
                                     std::span<const PageId> pages, const AccessHint& hint,
                                     PathAccess access) {
  check_node(from, "insert");
  const size_t whole_pages = tokens.size() / page_tokens_;
  if (pages.size() != whole_pages) {
    throw std::invalid_argument(fmt::format(
        "RadixTree::insert: {} tokens make {} whole pages of {} tokens, but {} page ids were given",
        tokens.size(), whole_pages, page_tokens_, pages.size()));
  }
  const Cursor found = locate(from, tokens, nullptr);
  const uint32_t first_new = found.tokens / page_tokens_;
  // The tree takes the caller's pages for the cached pages that are on the host only (they become
  // device pages) and for the new ones.
  const uint32_t first_taken = found.device_tokens / page_tokens_;
  const std::span<const PageId> taken = pages.subspan(first_taken);
  const std::span<const PageId> fresh = pages.subspan(first_new);

  claim_pages(taken, first_taken, "insert");

  // Everything that allocates comes first; if it runs out of memory, the marks are undone and the
  // tree indexes what it did before (a split may remain: it changes no cached content).
  RadixNode* end = nullptr;
  RadixNode* leaf = nullptr;
  try {
    end = found.partial ? split(found.partial, found.partial_pages) : found.node;
    if (!fresh.empty()) {
      leaf = new_node(end, tokens.data() + size_t{first_new} * page_tokens_, fresh.data(),
                      static_cast<uint32_t>(fresh.size()), fresh_past());
      end->children_.insert(leaf->first_page_hash_, leaf);
    }
  } catch (...) {
    if (leaf != nullptr) destroy_node(leaf);
    for (PageId page : taken) marked(page) = false;
    throw;
  }
  const uint32_t promoted = first_new - first_taken;
  if (promoted > 0) promote_host_run(end, taken.first(promoted), 0);
  if (leaf != nullptr) {
    ++end->device_children_;
    if (policy_->contains(*end)) policy_->remove(*end);  // no longer a leaf
    for (PageId page : fresh) pool_.retain(page);
    cached_pages_ += fresh.size();
    count_pages(leaf, static_cast<int64_t>(fresh.size()));
    end = leaf;
    if (extras_) {
      if (page_hashes()) hash_new_pages(leaf, 0);
      if (events_) {
        emit_stored(Tier::kDevice, leaf, 0, leaf->num_pages());
        emit_inserted(leaf, 0, leaf->num_pages());
      }
    }
  }
  if (access == PathAccess::kRecorded) touch_path(end, hint);
  if (leaf != nullptr) {
    policy_->add(*end);
    if (extras_ && host_tier_ && host_tier_->write.mode == WritePolicy::Mode::kWriteThrough) {
      back_up(leaf);
    }
  }
  return {found.tokens, promoted + static_cast<uint32_t>(fresh.size()), end};
}

RadixNode* RadixTree::new_node(RadixNode* parent, const TokenId* tokens, const PageId* pages,
                               uint32_t num_pages, const AccessHistory& past) {
  // One block: the node's past (where kept), the policy's state, the node, then its page ids,
  // then its tokens (radix_node.h).
  const uint64_t num_tokens = uint64_t{num_pages} * page_tokens_;
  const std::size_t before = bytes_before(parent == nullptr);
  auto* memory = static_cast<std::byte*>(
      heap::allocate(before + sizeof(RadixNode) + uint64_t{num_pages} * sizeof(PageId) +
                     num_tokens * sizeof(TokenId)));  // throws std::bad_alloc
  ++stats_.heap_allocations;
  auto* node = new (memory + before) RadixNode();
  node->parent_ = parent;
  if (before > device_state_bytes_) new (memory) AccessHistory(past);
  node->capacity_ = num_pages;
  if (parent != nullptr) {
    node->prefix_pages = parent->prefix_pages + parent->num_pages();
    ++stats_.nodes;
  } else {
    ++stats_.namespaces;
  }
  if (num_pages > 0) {
    std::memcpy(node->token_array(), tokens, num_tokens * sizeof(TokenId));
    std::memcpy(node->page_array(), pages, num_pages * sizeof(PageId));
    node->pages = num_pages;
    node->first_page_hash_ = hash_page(node->token_array());
  }
  policy_->adopt(*node, past);
  return node;
}

void RadixTree::destroy_node(RadixNode* node) {
  if (node->parent_ != nullptr) {
    --stats_.nodes;
  } else {
    --stats_.namespaces;
  }
  if (node->host_ != nullptr) {
    node->host_->~HostPart();
    heap::release(reinterpret_cast<std::byte*>(node->host_) - host_tier_->state_bytes);
  }
  std::byte* block = reinterpret_cast<std::byte*>(node) - bytes_before(node);
  node->~RadixNode();
  heap::release(block);
}

RadixNode* RadixTree::split(RadixNode* node, uint32_t upper_pages) {
  // The upper part becomes a new node; `node` keeps the lower part, so handles to it (locked by
  // sequences) stay valid. The new node carries node's locks, since every lock that covered node
  // covers its new parent too. Tiers: the device prefix is cut at the same place, host pages go
  // with their page, and the upper part inherits the node's pending copies. The upper part
  // continues the node's past: its creation, hits and latest access (the device policy's view of
  // them, or the whole past where the tree keeps it).
  const AccessHistory node_past = host_tier_ ? past(node) : policy_->history(*node);
  RadixNode* upper =
      new_node(node->parent_, node->token_array(), node->page_array(), upper_pages, node_past);
  if (host_tier_ && node->host_ != nullptr) {
    try {
      HostPart& host = host_part(upper);
      std::memcpy(host.page_ids, node->host_->page_ids, size_t{upper_pages} * sizeof(PageId));
      host.count =
          static_cast<uint32_t>(std::count_if(host.page_ids, host.page_ids + upper_pages,
                                              [](PageId page) { return page != kInvalidPage; }));
      host.load_ticket = node->host_->load_ticket;
      host.write_ticket = node->host_->write_ticket;
    } catch (...) {
      destroy_node(upper);
      throw;
    }
  }
  upper->lock_count_ = node->lock_count_;
  node->parent_->children_.replace(node->first_page_hash_, node, upper);

  const uint32_t device_pages = node->pages, lower_pages = node->num_pages() - upper_pages;
  std::memmove(node->token_array(), node->token_array() + size_t{upper_pages} * page_tokens_,
               size_t{lower_pages} * page_tokens_ * sizeof(TokenId));
  std::memmove(node->page_array(), node->page_array() + upper_pages,
               size_t{lower_pages} * sizeof(PageId));
  node->prefix_pages += upper_pages;
  node->first_page_hash_ = hash_page(node->token_array());
  node->parent_ = upper;
  upper->children_.insert(node->first_page_hash_, node);
  upper->device_children_ = 1;
  node->pages = lower_pages;  // without a host tier every page is a device page
  if (host_tier_) split_tiers(node, upper, upper_pages, device_pages);
  ++stats_.splits;
  return upper;
}

void RadixTree::claim_pages(std::span<const PageId> pages, size_t first_index,
                            const char* operation) {
  // Marking them as we go also catches a page given twice; the marks are undone on error.
  for (size_t i = 0; i < pages.size(); ++i) {
    const PageId page = pages[i];
    std::string problem;
    if (!pool_.contains(page)) {
      problem = "is not in the pool";
    } else if (pool_.refcount(page) == 0) {
      problem = "is free: the caller must hold a reference";
    } else if (marked(page)) {
      problem = "is already indexed by the tree (or given twice)";
    }
    if (!problem.empty()) {
      for (size_t j = 0; j < i; ++j) marked(pages[j]) = false;
      throw std::invalid_argument(fmt::format("RadixTree::{}: page {} at index {} {}", operation,
                                              page, first_index + i, problem));
    }
    marked(page) = true;
  }
}

void RadixTree::check_node(const RadixNode* node, const char* operation) const {
  if (node == nullptr) {
    throw std::invalid_argument(fmt::format("RadixTree::{}: null node handle", operation));
  }
}

void RadixTree::lock(RadixNode* node) {
  check_node(node, "lock");
  for (RadixNode* x = node; x != nullptr; x = x->parent_) {
    if (x->lock_count_++ == 0) {
      protected_pages_ += x->pages;
      if (policy_->contains(*x)) policy_->remove(*x);
      if (HostPart* host = x->host_) {
        host_tier_->pinned += x->host_only_;
        if (host_tier_->policy->contains(*host)) host_tier_->policy->remove(*host);
      }
    }
  }
  if (host_tier_ && host_tier_->write.mode == WritePolicy::Mode::kWriteThroughSelective) {
    back_up_hot_path(node);
  }
}

void RadixTree::unlock(RadixNode* node) {
  check_node(node, "unlock");
  if (node->lock_count_ == 0) {
    throw std::logic_error(fmt::format(
        "RadixTree::unlock: node at depth {} pages (ns {}) is not locked (lock count 0)",
        node->prefix_pages, node->name_space()));
  }
  for (RadixNode* x = node; x != nullptr; x = x->parent_) {
    if (--x->lock_count_ == 0) {
      protected_pages_ -= x->pages;
      if (device_evictable(x)) policy_->add(*x);
      if (x->host_ != nullptr) {
        host_tier_->pinned -= x->host_only_;
        sync_host_policy(x);
      }
    }
  }
}

// Without a host tier: `node` is a device-evictable leaf that just lost its last page. Every node
// holds device pages then, so the parent is device-evictable iff it is an unlocked leaf.
void RadixTree::remove_leaf(RadixNode* node) {
  RadixNode* parent = node->parent_;
  policy_->remove(*node);
  parent->children_.erase(node->first_page_hash_, node);
  destroy_node(node);
  if (!parent->is_root() && parent->is_leaf() && parent->lock_count_ == 0) policy_->add(*parent);
}

void RadixTree::erase_leaf(RadixNode* node) {
  check_node(node, "erase_leaf");
  if (node->is_root() || !node->is_leaf() || node->lock_count_ != 0) {
    throw std::logic_error(fmt::format(
        "RadixTree::erase_leaf: node is not an evictable leaf (root: {}, children: {}, locks: {})",
        node->is_root(), node->num_children(), node->lock_count_));
  }
  if (host_tier_ != nullptr) {
    drop_from(node, 0, RemovalReason::kCleared);
    return;
  }
  PageHash parent = events_ ? parent_hash(node, 0) : PageHash{};
  for (uint32_t i = 0; i < node->pages; ++i) {
    if (events_) parent = emit_dropping(Tier::kDevice, node, i, parent);
    if (events_) emit_removed(Tier::kDevice, node, i, RemovalReason::kCleared);
    marked(node->page_array()[i]) = false;
    pool_.release(node->page_array()[i]);
  }
  cached_pages_ -= node->pages;
  count_pages(node, -int64_t{node->pages});
  node->pages = 0;
  --node->parent_->device_children_;
  remove_leaf(node);
}

uint64_t RadixTree::evict_pages(uint64_t n, std::vector<PageId>* evicted) {
  // The plain cache keeps its own loop; tiers and events take the general one.
  if (host_tier_ != nullptr || events_ != nullptr) return evict_tiered(n, evicted);
  uint64_t released = 0;
  VictimLookahead lookahead(*policy_, pool_, device_state_bytes_);
  // The policy names the victim before every page: after a leaf loses its tail page, another leaf
  // may rank first (Belady's bound does). A policy whose victim stays first until it is gone is
  // asked once per leaf, and the leaf's pages go as one run (at page size 1, a page per token).
  const bool runs = policy_->victim_stays_first();
  while (released < n) {
    EvictionEntry* entry = policy_->victim();
    if (entry == nullptr) break;
    auto* leaf = static_cast<RadixNode*>(entry);
    lookahead.on_victim(leaf);
    const uint32_t take =
        runs ? static_cast<uint32_t>(std::min<uint64_t>(leaf->pages, n - released)) : 1;
    // Pages leave from the tail: the leaf keeps its first page, so its key among siblings holds.
    for (uint32_t i = 0; i < take; ++i) {
      const PageId page = leaf->page_array()[--leaf->pages];
      if (evicted != nullptr) evicted->push_back(page);
      marked(page) = false;
      pool_.release(page);
    }
    cached_pages_ -= take;
    count_pages(leaf, -int64_t{take});
    released += take;
    if (leaf->pages == 0) {
      --leaf->parent_->device_children_;
      remove_leaf(leaf);
      ++stats_.evicted_nodes;  // here, not in remove_leaf: erase_leaf() is no eviction
    }
  }
  stats_.evicted_pages += released;
  return released;
}

void RadixTree::count_namespace_pages() {
  check_empty("count_namespace_pages");
  count_namespaces_ = true;
}

uint64_t RadixTree::namespace_pages(Namespace ns) const {
  const auto it = namespace_pages_.find(ns);
  return it == namespace_pages_.end() ? 0 : it->second;
}

uint64_t RadixTree::namespace_host_pages(Namespace ns) const {
  const auto it = namespace_host_pages_.find(ns);
  return it == namespace_host_pages_.end() ? 0 : it->second;
}

void RadixTree::check_empty(const char* operation) const {
  if (cached_pages_ != 0 || stats_.nodes != 0) {
    throw std::invalid_argument(
        fmt::format("RadixTree::{}: only on an empty tree (it caches {} pages in {} nodes)",
                    operation, cached_pages_, stats_.nodes));
  }
}

void RadixTree::clear() {
  for (const auto& [ns, root] : roots_) {
    if (root->lock_count_ != 0) {
      throw std::logic_error(
          fmt::format("RadixTree::clear: namespace {} still has {} locks", ns, root->lock_count_));
    }
  }
  release_everything();  // namespace roots come back on first use
  cached_pages_ = 0;
  namespace_pages_.clear();
  namespace_host_pages_.clear();
  if (host_tier_) host_tier_->cached = 0;
  if (events_) events_->cleared();
}

}  // namespace radixkv
