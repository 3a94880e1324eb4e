#include "slot_trie.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <bit>
#include <stdexcept>
#include <utility>

#include "eviction/eviction_policy.h"

namespace radixkv::python {

// The tree's policy, wrapped: tells the trie which leaf the tree takes its next page from.
class SlotTrie::VictimRecorder final : public EvictionPolicy {
 public:
  VictimRecorder(std::unique_ptr<EvictionPolicy> inner, SlotTrie& owner)
      : inner_(std::move(inner)), owner_(owner) {}
  std::string_view name() const override { return inner_->name(); }
  std::size_t state_bytes() const override { return inner_->state_bytes(); }
  void adopt(EvictionEntry& entry, const AccessHistory& past) override {
    inner_->adopt(entry, past);
  }
  AccessHistory history(const EvictionEntry& entry) const override {
    return inner_->history(entry);
  }
  void add(EvictionEntry& entry) override { inner_->add(entry); }
  void remove(EvictionEntry& entry) override { inner_->remove(entry); }
  void on_access(EvictionEntry& entry, const AccessHint& hint) override {
    inner_->on_access(entry, hint);
  }
  EvictionEntry* victim() override {
    EvictionEntry* entry = inner_->victim();
    // Every entry of a RadixTree's policy is a RadixNode (radix/radix_node.h).
    if (entry != nullptr) owner_.on_victim(static_cast<RadixNode&>(*entry));
    return entry;
  }
  bool contains(const EvictionEntry& entry) const override { return inner_->contains(entry); }
  std::size_t size() const override { return inner_->size(); }

 private:
  std::unique_ptr<EvictionPolicy> inner_;
  SlotTrie& owner_;
};

SlotTrie::SlotTrie(uint32_t page_size, uint32_t capacity_pages, std::string policy,
                   bool record_events)
    : page_size_(page_size),
      capacity_pages_(capacity_pages),
      policy_spec_(std::move(policy)),
      record_events_(record_events) {
  if (page_size_ == 0) throw std::invalid_argument("page_size must be at least 1");
  if (capacity_pages_ == 0 || capacity_pages_ == kInvalidPage) {
    throw std::invalid_argument(fmt::format("the trie's capacity must be 1 .. {} pages, got {}",
                                            kInvalidPage - 1, capacity_pages_));
  }
  make_policy(policy_spec_);  // a bad spec fails here, before anything is built
  build();
}

SlotTrie::~SlotTrie() {
  for (auto& [node, ref] : handles_) ref->alive = false;
}

void SlotTrie::build() {
  KvLayout layout;
  layout.page_tokens = page_size_;
  pool_ = std::make_unique<PagePool>(layout, capacity_pages_, make_accounting_backend());
  tree_ = std::make_unique<RadixTree>(
      *pool_, std::make_unique<VictimRecorder>(make_policy(policy_spec_), *this));
  first_slot_.assign(capacity_pages_, 0);
  if (record_events_) page_hash_.assign(capacity_pages_, 0);
}

void SlotTrie::reset() {
  for (auto& [node, ref] : handles_) ref->alive = false;
  handles_.clear();
  tree_.reset();
  pool_.reset();
  build();
  if (record_events_) events_.emplace_back().kind = SlotTrieEvent::kCleared;
}

std::shared_ptr<NodeRef> SlotTrie::handle(RadixNode* node) {
  if (node == nullptr || node->is_root()) return nullptr;
  auto& ref = handles_[node];
  if (!ref) ref = std::make_shared<NodeRef>(NodeRef{node, this, true});
  return ref;
}

void SlotTrie::on_victim(RadixNode& leaf) {
  const PageId page = leaf.page_ids().back();  // the tree takes the tail page next
  evicted_.push_back(page);
  if (record_events_) {
    SlotTrieEvent& removed = events_.emplace_back();
    removed.kind = SlotTrieEvent::kRemoved;
    removed.block_hash = page_hash_[page];
  }
  // The node now stands for a shorter prefix (or is about to be destroyed): its handle dies.
  if (const auto it = handles_.find(&leaf); it != handles_.end()) {
    it->second->alive = false;
    handles_.erase(it);
  }
}

void SlotTrie::append_slots(PageId page, std::vector<int64_t>& slots) const {
  const int64_t first = first_slot_[page];
  for (uint32_t i = 0; i < page_size_; ++i) slots.push_back(first + i);
}

int64_t SlotTrie::chain_hash(int64_t parent, bool has_parent, Namespace ns,
                             const TokenId* page) const {
  // A namespace's first page is seeded with the namespace, so equal tokens under different
  // extra keys never share a hash; every later page with its parent's hash.
  const uint64_t seed = has_parent ? std::bit_cast<uint64_t>(parent) : ns ^ 0x9e3779b97f4a7c15ull;
  return std::bit_cast<int64_t>(
      XXH3_64bits_withSeed(page, size_t{page_size_} * sizeof(TokenId), seed));
}

SlotTrie::Match SlotTrie::match(Namespace ns, std::span<const TokenId> tokens,
                                std::vector<int64_t>& slots) {
  scratch_pages_.clear();
  const MatchResult found = tree_->match(ns, tokens, &scratch_pages_);
  slots.reserve(slots.size() + size_t{found.tokens});
  for (PageId page : scratch_pages_) append_slots(page, slots);
  return {found.tokens, handle(found.node)};
}

SlotTrie::Insert SlotTrie::insert(Namespace ns, std::span<const TokenId> tokens,
                                  std::span<const int64_t> slots) {
  const std::size_t whole = tokens.size() / page_size_ * page_size_;
  tokens = tokens.first(whole);
  if (slots.size() < whole) {
    throw std::invalid_argument(fmt::format("insert: {} whole-page tokens need {} slots, {} given",
                                            whole, whole, slots.size()));
  }
  scratch_pages_.clear();
  const uint32_t cached = tree_->peek(ns, tokens, &scratch_pages_);
  const uint32_t first_new = cached / page_size_;
  const uint32_t need = static_cast<uint32_t>(whole / page_size_) - first_new;
  for (uint32_t k = first_new; k < first_new + need; ++k) {
    const std::size_t at = std::size_t{k} * page_size_;
    for (uint32_t i = 1; i < page_size_; ++i) {
      if (slots[at + i] != slots[at] + i) {
        throw std::invalid_argument(fmt::format(
            "insert: the slots of page {} (tokens {}..{}) are not contiguous: slot {} follows {} "
            "(SlotTrie keeps one slot per page; the engine's allocator must hand out whole pages)",
            k, at, at + page_size_ - 1, slots[at + i], slots[at + i - 1]));
      }
    }
  }
  fresh_pages_.clear();
  if (!pool_->allocate(need, fresh_pages_)) {
    throw std::runtime_error(fmt::format(
        "insert: {} new pages would exceed the trie's capacity of {} pages ({} cached); give "
        "the cache a larger capacity (max_cached_pages) or evict first",
        need, capacity_pages_, tree_->cached_pages()));
  }
  for (uint32_t j = 0; j < need; ++j) {
    first_slot_[fresh_pages_[j]] = slots[std::size_t{first_new + j} * page_size_];
  }
  scratch_pages_.insert(scratch_pages_.end(), fresh_pages_.begin(), fresh_pages_.end());
  InsertResult inserted;
  try {
    inserted = tree_->insert(ns, tokens, scratch_pages_);
  } catch (...) {
    pool_->release(fresh_pages_);
    throw;
  }
  pool_->release(fresh_pages_);  // the tree holds its own reference on each now
  if (inserted.cached_tokens != cached) {
    throw std::logic_error("SlotTrie::insert: the tree's cached prefix changed under the insert");
  }
  if (record_events_ && need > 0) {
    int64_t parent = first_new > 0 ? page_hash_[scratch_pages_[first_new - 1]] : 0;
    bool has_parent = first_new > 0;
    for (uint32_t k = first_new; k < first_new + need; ++k) {
      const TokenId* page = tokens.data() + std::size_t{k} * page_size_;
      const int64_t hash = chain_hash(parent, has_parent, ns, page);
      page_hash_[scratch_pages_[k]] = hash;
      events_.push_back({.kind = SlotTrieEvent::kStored,
                         .block_hash = hash,
                         .parent_hash = parent,
                         .has_parent = has_parent,
                         .tokens = {page, page + page_size_}});
      parent = hash;
      has_parent = true;
    }
  }
  return {cached, need, handle(inserted.node)};
}

uint64_t SlotTrie::evict(uint64_t pages, std::vector<int64_t>& slots) {
  evicted_.clear();
  const uint64_t released = tree_->evict_pages(pages);
  slots.reserve(slots.size() + evicted_.size() * page_size_);
  for (PageId page : evicted_) append_slots(page, slots);
  return released;
}

void SlotTrie::check_handle(const NodeRef& node, const char* operation) const {
  if (node.owner != this) {
    throw std::logic_error(fmt::format("{}: the node belongs to another cache", operation));
  }
  if (!node.alive) {
    throw std::logic_error(fmt::format(
        "{}: the node was evicted (or the cache reset) after the match that returned it; match "
        "again",
        operation));
  }
}

uint64_t SlotTrie::lock(const NodeRef& node) {
  check_handle(node, "inc_lock_ref");
  const uint64_t before = tree_->protected_pages();
  tree_->lock(node.node);
  return tree_->protected_pages() - before;
}

uint64_t SlotTrie::unlock(const NodeRef& node) {
  check_handle(node, "dec_lock_ref");
  const uint64_t before = tree_->protected_pages();
  tree_->unlock(node.node);
  return before - tree_->protected_pages();
}

std::vector<SlotTrieEvent> SlotTrie::take_events() { return std::exchange(events_, {}); }

void SlotTrie::verify() const {
  tree_->verify();
  if (pool_->used_pages() != tree_->cached_pages()) {
    throw std::logic_error(fmt::format("SlotTrie: the pool holds {} pages, the tree indexes {}",
                                       pool_->used_pages(), tree_->cached_pages()));
  }
  for (const auto& [node, ref] : handles_) {
    if (!ref->alive || ref->node != node) {
      throw std::logic_error("SlotTrie: a registered node handle is dead or misfiled");
    }
  }
}

}  // namespace radixkv::python
