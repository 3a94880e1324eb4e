#include "slot_trie.h"

#include <fmt/format.h>

#include <bit>
#include <stdexcept>
#include <utility>

#include "eviction/eviction_policy.h"

namespace radixkv::python {

// The runtime's tier events, one SlotTrieEvent per page (slot_trie.h).
class SlotTrie::EventRecorder final : public TierEvents {
 public:
  void stored(Tier, Namespace, std::optional<PageHash> parent, std::span<const PageHash> hashes,
              std::span<const TokenId> tokens) override {
    const std::size_t page_size = tokens.size() / hashes.size();
    for (std::size_t i = 0; i < hashes.size(); ++i) {
      SlotTrieEvent& e = events.emplace_back();
      e.kind = SlotTrieEvent::kStored;
      e.block_hash = as_event_hash(hashes[i]);
      e.has_parent = i > 0 || parent.has_value();
      if (e.has_parent) e.parent_hash = as_event_hash(i > 0 ? hashes[i - 1] : *parent);
      e.tokens.assign(tokens.begin() + i * page_size, tokens.begin() + (i + 1) * page_size);
    }
  }
  void removed(Tier, std::span<const PageHash> hashes) override {
    for (const PageHash& hash : hashes) {
      SlotTrieEvent& e = events.emplace_back();
      e.kind = SlotTrieEvent::kRemoved;
      e.block_hash = as_event_hash(hash);
    }
  }
  void cleared() override { events.emplace_back().kind = SlotTrieEvent::kCleared; }

  std::vector<SlotTrieEvent> events;

 private:
  static int64_t as_event_hash(const PageHash& hash) {
    return std::bit_cast<int64_t>(event_id(hash));
  }
};

SlotTrie::SlotTrie(uint32_t page_size, uint32_t capacity_pages, std::string policy,
                   bool record_events)
    : page_size_(page_size),
      capacity_pages_(capacity_pages),
      policy_spec_(std::move(policy)),
      recorder_(record_events ? std::make_unique<EventRecorder>() : nullptr) {
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
  // The budget is the whole pool, never evicted from behind the engine's back: SGLang's engine
  // evicts when it wants slots (evict()), and an insert that does not fit is refused.
  runtime_ = std::make_unique<PrefixCacheRuntime>(
      *pool_, RuntimeConfig{.high_watermark = 1.0, .low_watermark = 1.0, .policy = policy_spec_},
      TierConfig::with_events(recorder_.get()));
  first_slot_.assign(capacity_pages_, 0);
}

void SlotTrie::reset() {
  for (auto& [page, ref] : handles_) ref->alive = false;
  handles_.clear();
  runtime_.reset();
  pool_.reset();
  build();
  if (recorder_) recorder_->cleared();
}

std::shared_ptr<NodeRef> SlotTrie::handle(RadixNode* node) {
  if (node == nullptr || node->is_root()) return nullptr;
  auto& ref = handles_[node->page_ids().back()];
  if (!ref) ref = std::make_shared<NodeRef>(NodeRef{node, this, true});
  return ref;
}

void SlotTrie::append_slots(PageId page, std::vector<int64_t>& slots) const {
  const int64_t first = first_slot_[page];
  for (uint32_t i = 0; i < page_size_; ++i) slots.push_back(first + i);
}

SlotTrie::Match SlotTrie::match(Namespace ns, std::span<const TokenId> tokens,
                                std::vector<int64_t>& slots) {
  scratch_pages_.clear();
  const MatchResult found = runtime_->match(ns, tokens, &scratch_pages_);
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
  const uint32_t cached = tree().peek(ns, tokens, &scratch_pages_);
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
        need, capacity_pages_, cached_pages()));
  }
  for (uint32_t j = 0; j < need; ++j) {
    first_slot_[fresh_pages_[j]] = slots[std::size_t{first_new + j} * page_size_];
  }
  scratch_pages_.insert(scratch_pages_.end(), fresh_pages_.begin(), fresh_pages_.end());
  InsertResult inserted;
  try {
    inserted = runtime_->insert(ns, tokens, scratch_pages_);
  } catch (...) {
    pool_->release(fresh_pages_);
    throw;
  }
  pool_->release(fresh_pages_);  // the tree holds its own reference on each now
  if (inserted.cached_tokens != cached) {
    throw std::logic_error("SlotTrie::insert: the tree's cached prefix changed under the insert");
  }
  return {cached, need, handle(inserted.node)};
}

uint64_t SlotTrie::evict(uint64_t pages, std::vector<int64_t>& slots) {
  evicted_.clear();
  const uint64_t released = runtime_->evict(pages, &evicted_);
  slots.reserve(slots.size() + evicted_.size() * page_size_);
  for (PageId page : evicted_) {
    append_slots(page, slots);
    // The node whose tail this was now stands for a shorter prefix, or is gone: its handle dies.
    if (const auto it = handles_.find(page); it != handles_.end()) {
      it->second->alive = false;
      handles_.erase(it);
    }
  }
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
  const uint64_t before = protected_pages();
  runtime_->lock(node.node);
  return protected_pages() - before;
}

uint64_t SlotTrie::unlock(const NodeRef& node) {
  check_handle(node, "dec_lock_ref");
  const uint64_t before = protected_pages();
  runtime_->unlock(node.node);
  return before - protected_pages();
}

std::vector<SlotTrieEvent> SlotTrie::take_events() {
  return recorder_ ? std::exchange(recorder_->events, {}) : std::vector<SlotTrieEvent>{};
}

void SlotTrie::verify() const {
  tree().verify();
  runtime_->check_accounting();
  if (pool_->used_pages() != cached_pages()) {
    throw std::logic_error(fmt::format("SlotTrie: the pool holds {} pages, the tree indexes {}",
                                       pool_->used_pages(), cached_pages()));
  }
  for (const auto& [page, ref] : handles_) {
    if (!ref->alive || ref->node->page_ids().empty() || ref->node->page_ids().back() != page) {
      throw std::logic_error("SlotTrie: a registered node handle is dead or misfiled");
    }
  }
}

}  // namespace radixkv::python
