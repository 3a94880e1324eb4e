#include "slot_trie.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <exception>
#include <stdexcept>
#include <utility>

#include "eviction/eviction_policy.h"
#include "kv_store/page_copier.h"

namespace radixkv::python {

// The runtime's tier events, one SlotTrieEvent per page (slot_trie.h).
class SlotTrie::EventRecorder final : public TierEvents {
 public:
  void stored(Tier tier, Namespace, std::optional<PageHash> parent,
              std::span<const PageHash> hashes, std::span<const TokenId> tokens) override {
    const std::size_t page_size = tokens.size() / hashes.size();
    for (std::size_t i = 0; i < hashes.size(); ++i) {
      SlotTrieEvent& e = events.emplace_back();
      e.kind = SlotTrieEvent::kStored;
      e.tier = tier;
      e.block_hash = as_event_hash(hashes[i]);
      e.has_parent = i > 0 || parent.has_value();
      if (e.has_parent) e.parent_hash = as_event_hash(i > 0 ? hashes[i - 1] : *parent);
      e.tokens.assign(tokens.begin() + i * page_size, tokens.begin() + (i + 1) * page_size);
    }
  }
  void removed(Tier tier, std::span<const PageHash> hashes) override {
    for (const PageHash& hash : hashes) {
      SlotTrieEvent& e = events.emplace_back();
      e.kind = SlotTrieEvent::kRemoved;
      e.tier = tier;
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

// The live handles and how they die (slot_trie.h, "Node handles"). Without a host tier they are
// filed under their tail page's id; with one, under its hash, observing the tier events.
class SlotTrie::Handles final : public TierEvents {
 public:
  explicit Handles(bool by_hash) : by_hash_(by_hash) {}
  ~Handles() override { kill_all(); }

  bool by_hash() const { return by_hash_; }

  // The handle of `node` (made and filed on first use). `tree` must hold the node.
  std::shared_ptr<NodeRef> of(RadixNode* node, const RadixTree& tree, const void* owner) {
    const uint32_t tail = node->num_pages() - 1;
    std::shared_ptr<NodeRef>* slot;
    uint8_t tiers = 0;
    if (by_hash_) {
      Filed& filed = by_hash_map_[tree.page_hash(node, tail)];
      tiers = (tail < node->device_pages() ? kOnDevice : 0) |
              (node->host_page(tail) != kInvalidPage ? kOnHost : 0);
      filed.tiers = tiers;
      slot = &filed.ref;
    } else {
      const PageId page = node->page_ids()[tail];
      if (page >= filed_.size()) filed_.resize(std::max<std::size_t>(page + 1, filed_.size() * 2));
      filed_[page] = true;
      slot = &by_page_[page];
    }
    if (!*slot) *slot = std::make_shared<NodeRef>(NodeRef{node, owner, ++issued_, true});
    return *slot;
  }

  // One tier: device pages that just left the trie.
  void evicted(std::span<const PageId> pages) {
    for (PageId page : pages) {
      if (page < filed_.size() && filed_[page]) [[unlikely]] {
        filed_[page] = false;
        const auto it = by_page_.find(page);
        kill(it->second);
        by_page_.erase(it);
      }
    }
  }

  void kill_all() {
    for (auto& [page, ref] : by_page_) kill(ref);
    for (auto& [hash, filed] : by_hash_map_) kill(filed.ref);
    by_page_.clear();
    by_hash_map_.clear();
    filed_.assign(filed_.size(), false);
    emptied_.clear();
  }

  // Every registered handle with what it is filed under, for verify().
  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (const auto& [page, ref] : by_page_) fn(*ref, std::optional<PageId>(page), PageHash{});
    for (const auto& [hash, filed] : by_hash_map_) fn(*filed.ref, std::optional<PageId>(), hash);
  }

  // TierEvents, with a host tier: the tiers of the filed tails.
  void stored(Tier tier, Namespace, std::optional<PageHash>, std::span<const PageHash> hashes,
              std::span<const TokenId>) override {
    for (const PageHash& hash : hashes) {
      if (const auto it = by_hash_map_.find(hash); it != by_hash_map_.end()) {
        it->second.tiers |= bit(tier);
      }
    }
  }
  void removed(Tier tier, std::span<const PageHash> hashes) override {
    for (const PageHash& hash : hashes) {
      if (const auto it = by_hash_map_.find(hash); it != by_hash_map_.end()) {
        it->second.tiers &= static_cast<uint8_t>(~bit(tier));
        if (it->second.tiers == 0) emptied_.push_back(hash);
      }
    }
  }
  void cleared() override { kill_all(); }
  // The end of a runtime call: a tail on no tier now left the trie (within a call a page may
  // leave one tier before it enters the other).
  void flush() override {
    for (const PageHash& hash : emptied_) {
      const auto it = by_hash_map_.find(hash);
      if (it == by_hash_map_.end() || it->second.tiers != 0) continue;
      kill(it->second.ref);
      by_hash_map_.erase(it);
    }
    emptied_.clear();
  }

 private:
  static constexpr uint8_t kOnDevice = 1;
  static constexpr uint8_t kOnHost = 2;
  static uint8_t bit(Tier tier) { return tier == Tier::kDevice ? kOnDevice : kOnHost; }
  struct Filed {
    std::shared_ptr<NodeRef> ref;
    uint8_t tiers = 0;
  };

  void kill(const std::shared_ptr<NodeRef>& ref) {
    if (!ref || !ref->alive) return;
    ref->alive = false;
    ref->node = nullptr;
  }

  const bool by_hash_;
  uint64_t issued_ = 0;
  std::unordered_map<PageId, std::shared_ptr<NodeRef>> by_page_;
  std::vector<bool> filed_;  // by pool page: a handle is filed under it
  std::unordered_map<PageHash, Filed, PageHashKey> by_hash_map_;
  std::vector<PageHash> emptied_;
};

// Copies between the engine's device and host slots (slot_trie.h, "The host tier"). A copy to the
// host that fails cannot be undone (the tree has already indexed the host pages): the error is kept
// and the trie refuses every call after it until reset(). A load that fails changes nothing (the
// tree undoes it), so its error goes straight to the caller.
class SlotTrie::HostCopier final : public PageCopierBase {
 public:
  HostCopier(const PagePool& device, const PagePool& host, const SlotTrie& trie)
      : PageCopierBase(device, host), trie_(trie) {}

  std::exception_ptr failure;

  std::string_view name() const override { return "engine"; }

 protected:
  void enqueue(CopyTicket, PagePool& from, PagePool&, std::span<const TransferRun> runs) override {
    const bool to_host = &from == &device_pool();
    const uint32_t page_size = trie_.page_size();
    device_.clear();
    host_.clear();
    for (const TransferRun& run : runs) {
      for (uint32_t k = 0; k < run.count; ++k) {
        const PageId device = to_host ? run.src + k : run.dst + k;
        const PageId host = to_host ? run.dst + k : run.src + k;
        const int64_t first = trie_.first_slot_[device];
        for (uint32_t i = 0; i < page_size; ++i) {
          device_.push_back(first + i);
          host_.push_back(int64_t{host} * page_size + i);
        }
      }
    }
    if (!to_host) {
      trie_.config_.copies->load_from_host(host_, device_);
      return;
    }
    try {
      trie_.config_.copies->write_to_host(device_, host_);
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  CopyTicket poll() override { return issued(); }
  void block_until(CopyTicket) override {}

 private:
  const SlotTrie& trie_;
  std::vector<int64_t> device_;
  std::vector<int64_t> host_;
};

SlotTrie::SlotTrie(SlotTrieConfig config)
    : config_(std::move(config)),
      recorder_(config_.record_events ? std::make_unique<EventRecorder>() : nullptr),
      handles_(std::make_unique<Handles>(config_.host_pages > 0)) {
  if (config_.page_size == 0) throw std::invalid_argument("page_size must be at least 1");
  if (config_.capacity_pages == 0 || config_.capacity_pages == kInvalidPage ||
      config_.host_pages == kInvalidPage) {
    throw std::invalid_argument(fmt::format(
        "the trie's capacities must be 1 .. {} pages (device) and 0 .. {} (host), got {} and {}",
        kInvalidPage - 1, kInvalidPage - 1, config_.capacity_pages, config_.host_pages));
  }
  if (has_host_tier() && config_.copies == nullptr) {
    throw std::invalid_argument("a host tier needs the engine's copy callbacks");
  }
  make_policy(config_.policy);  // bad specs fail here, before anything is built
  if (has_host_tier()) {
    make_policy(config_.host_policy);
    WritePolicy::parse(config_.write_policy);
  }
  build();
}

SlotTrie::~SlotTrie() = default;

void SlotTrie::build() {
  KvLayout layout;
  layout.page_tokens = config_.page_size;
  pool_ = std::make_unique<PagePool>(layout, config_.capacity_pages, make_accounting_backend());
  TierConfig tiers = TierConfig::with_events(recorder_.get());
  if (has_host_tier()) {
    host_pool_ = std::make_unique<PagePool>(layout, config_.host_pages, make_accounting_backend());
    copier_ = std::make_unique<HostCopier>(*pool_, *host_pool_, *this);
    tiers.host = {.pool = host_pool_.get(),
                  .copier = copier_.get(),
                  .policy = config_.host_policy,
                  .write_policy = config_.write_policy};
    tiers.events.push_back(handles_.get());
  }
  // The budget is the whole pool, never evicted from behind the engine's back: SGLang's engine
  // evicts when it wants slots (evict()), and an insert that does not fit is refused.
  runtime_ = std::make_unique<PrefixCacheRuntime>(
      *pool_, RuntimeConfig{.high_watermark = 1.0, .low_watermark = 1.0, .policy = config_.policy},
      tiers);
  first_slot_.assign(config_.capacity_pages, 0);
}

void SlotTrie::reset() {
  handles_->kill_all();
  runtime_.reset();
  copier_.reset();
  host_pool_.reset();
  pool_.reset();
  build();
  if (recorder_) recorder_->cleared();
}

// The caller's clock for the policies (AccessHint::now, the nodes' last access in seconds): the
// steady clock, which is Python's time.monotonic() on Linux.
void SlotTrie::refresh_clock() {
  using Seconds = std::chrono::duration<double>;
  runtime_->set_now(Seconds(std::chrono::steady_clock::now().time_since_epoch()).count());
}

std::shared_ptr<NodeRef> SlotTrie::handle(RadixNode* node) {
  if (node == nullptr || node->is_root()) return nullptr;
  return handles_->of(node, tree(), this);
}

void SlotTrie::write_slots(std::span<const PageId> pages, int64_t* out) const {
  const uint32_t page_size = config_.page_size;
  if (page_size == 1) {
    for (std::size_t i = 0; i < pages.size(); ++i) out[i] = first_slot_[pages[i]];
    return;
  }
  for (PageId page : pages) {
    const int64_t first = first_slot_[page];
    for (uint32_t i = 0; i < page_size; ++i) *out++ = first + i;
  }
}

SlotTrie::Match SlotTrie::match(Namespace ns, std::span<const TokenId> tokens, AccessHint hint) {
  check_healthy("match_prefix");
  refresh_clock();
  matched_.clear();
  const MatchResult found = runtime_->match(ns, tokens, &matched_, hint);
  Match result;
  result.device_tokens = found.device_tokens;
  result.host_tokens = found.host_tokens();
  result.node = handle(found.node);
  result.device_node = result.node;
  if (result.host_tokens > 0) {
    // The device run may end inside a node: match it alone, which splits there. The second
    // touch of the same path is no new hit.
    hint.counts_as_hit = false;
    scratch_pages_.clear();
    const MatchResult device =
        runtime_->match(ns, tokens.first(found.device_tokens), &scratch_pages_, hint);
    result.device_node = handle(device.node);
  }
  return result;
}

// Takes `count` fresh pool pages for the caller's pages first_page, first_page + 1, ... of
// `slots`, checking each page's slots are contiguous, into fresh_pages_. Throws (holding nothing)
// otherwise or when the pool is full.
uint32_t SlotTrie::allocate_pages(std::span<const int64_t> slots, uint32_t first_page,
                                  uint32_t count, const char* operation) {
  const uint32_t page_size = config_.page_size;
  for (uint32_t k = first_page; k < first_page + count; ++k) {
    const std::size_t at = std::size_t{k} * page_size;
    for (uint32_t i = 1; i < page_size; ++i) {
      if (slots[at + i] != slots[at] + i) {
        throw std::invalid_argument(fmt::format(
            "{}: the slots of page {} (tokens {}..{}) are not contiguous: slot {} follows {} "
            "(SlotTrie keeps one slot per page; the engine's allocator must hand out whole pages)",
            operation, k, at, at + page_size - 1, slots[at + i], slots[at + i - 1]));
      }
    }
  }
  fresh_pages_.clear();
  if (!pool_->allocate(count, fresh_pages_)) {
    throw std::runtime_error(fmt::format(
        "{}: {} new pages would exceed the trie's capacity of {} pages ({} cached); give the "
        "cache a larger capacity (max_cached_pages) or evict first",
        operation, count, config_.capacity_pages, cached_pages()));
  }
  for (uint32_t j = 0; j < count; ++j) {
    first_slot_[fresh_pages_[j]] = slots[std::size_t{first_page + j} * page_size];
  }
  return count;
}

SlotTrie::Insert SlotTrie::insert(Namespace ns, std::span<const TokenId> tokens,
                                  std::span<const int64_t> slots, AccessHint hint) {
  check_healthy("insert");
  const uint32_t page_size = config_.page_size;
  const std::size_t whole = tokens.size() / page_size * page_size;
  tokens = tokens.first(whole);
  if (slots.size() < whole) {
    throw std::invalid_argument(fmt::format("insert: {} whole-page tokens need {} slots, {} given",
                                            whole, whole, slots.size()));
  }
  // The device's cached prefix keeps the tree's pages; every page after it takes the caller's
  // (a page cached on the host only gets them as its device page).
  scratch_pages_.clear();
  const uint32_t cached = tree().peek(ns, tokens, &scratch_pages_);
  const auto device_cached = static_cast<uint32_t>(scratch_pages_.size());
  const uint32_t need = static_cast<uint32_t>(whole / page_size) - device_cached;
  allocate_pages(slots, device_cached, need, "insert");
  scratch_pages_.insert(scratch_pages_.end(), fresh_pages_.begin(), fresh_pages_.end());
  refresh_clock();
  InsertResult inserted;
  try {
    inserted = runtime_->insert(ns, tokens, scratch_pages_, hint);
  } catch (...) {
    pool_->release(fresh_pages_);
    throw;
  }
  pool_->release(fresh_pages_);  // the tree holds its own reference on each now
  if (inserted.cached_tokens != cached) {
    throw std::logic_error("SlotTrie::insert: the tree's cached prefix changed under the insert");
  }
  if (copier_ && copier_->failure) std::rethrow_exception(copier_->failure);
  return {device_cached * page_size, need, handle(inserted.node)};
}

uint64_t SlotTrie::evict(uint64_t pages, int64_t* out) {
  check_healthy("evict");
  evicted_.clear();
  evicted_.reserve(std::min<uint64_t>(pages, evictable_pages()));
  const uint64_t released = runtime_->evict(pages, &evicted_);
  write_slots(evicted_, out);
  if (!handles_->by_hash()) handles_->evicted(evicted_);
  if (copier_ && copier_->failure) std::rethrow_exception(copier_->failure);
  return released;
}

const RadixNode* SlotTrie::check_handle(const NodeRef& node, const char* operation) const {
  if (node.owner != this) {
    throw std::logic_error(fmt::format("{}: the node belongs to another cache", operation));
  }
  if (!node.alive) {
    throw std::logic_error(fmt::format(
        "{}: the node was evicted (or the cache reset) after the match that returned it; match "
        "again",
        operation));
  }
  check_healthy(operation);
  return node.node;
}

void SlotTrie::check_healthy(const char* operation) const {
  if (copier_ && copier_->failure) {
    throw std::logic_error(fmt::format(
        "{}: a copy to the host tier failed earlier, so host pages may hold wrong bytes; reset() "
        "the cache",
        operation));
  }
}

uint64_t SlotTrie::lock(const NodeRef& node) {
  const RadixNode* x = check_handle(node, "inc_lock_ref");
  if (x->device_pages() < x->num_pages()) {
    throw std::logic_error(fmt::format(
        "inc_lock_ref: the node has {} of its {} pages on the host tier only; load them back "
        "first (init_load_back)",
        x->num_pages() - x->device_pages(), x->num_pages()));
  }
  const uint64_t before = protected_pages();
  runtime_->lock(node.node);
  if (copier_ && copier_->failure) std::rethrow_exception(copier_->failure);
  return protected_pages() - before;
}

uint64_t SlotTrie::unlock(const NodeRef& node) {
  check_handle(node, "dec_lock_ref");
  const uint64_t before = protected_pages();
  runtime_->unlock(node.node);
  return before - protected_pages();
}

uint32_t SlotTrie::host_tokens_above(const NodeRef& end) const {
  const RadixNode* x = check_handle(end, "host_tokens_above");
  uint32_t pages = 0;
  for (; !x->is_root(); x = x->parent()) pages += x->num_pages() - x->device_pages();
  return pages * config_.page_size;
}

void SlotTrie::load(const NodeRef& end, std::span<const int64_t> slots) {
  const uint32_t wanted = host_tokens_above(end);
  if (slots.size() != wanted) {
    throw std::invalid_argument(fmt::format(
        "init_load_back: {} device slots were given for the {} host-only tokens on the path",
        slots.size(), wanted));
  }
  if (wanted == 0) return;
  allocate_pages(slots, 0, wanted / config_.page_size, "init_load_back");
  // The tree loads a locked path only; the engine copies before the load returns, so the lock
  // ends with the call and the caller locks the node for its request as after a device match.
  runtime_->lock(end.node);
  try {
    runtime_->wait_load(runtime_->load(end.node, fresh_pages_));
  } catch (...) {
    runtime_->unlock(end.node);
    pool_->release(fresh_pages_);
    throw;
  }
  runtime_->unlock(end.node);
  pool_->release(fresh_pages_);
}

// --- Views.

std::span<const TokenId> SlotTrie::key(const NodeRef& node) const {
  return check_handle(node, "key")->edge_tokens(config_.page_size);
}

std::optional<TokenId> SlotTrie::token_before(const NodeRef& node) const {
  const RadixNode* parent = check_handle(node, "key")->parent();
  if (parent->is_root()) return std::nullopt;
  return parent->edge_tokens(config_.page_size).back();
}

Namespace SlotTrie::name_space(const NodeRef& node) const {
  return check_handle(node, "key")->name_space();
}

std::shared_ptr<NodeRef> SlotTrie::parent(const NodeRef& node) {
  return handle(const_cast<RadixNode*>(check_handle(node, "parent")->parent()));
}

std::vector<std::shared_ptr<NodeRef>> SlotTrie::children(const NodeRef& node) {
  std::vector<std::shared_ptr<NodeRef>> out;
  check_handle(node, "children")->for_each_child([&](const RadixNode* child) {
    out.push_back(handle(const_cast<RadixNode*>(child)));
  });
  return out;
}

std::vector<std::shared_ptr<NodeRef>> SlotTrie::root_children(Namespace ns) {
  std::vector<std::shared_ptr<NodeRef>> out;
  if (const RadixNode* root = tree().namespace_root(ns)) {
    root->for_each_child(
        [&](const RadixNode* child) { out.push_back(handle(const_cast<RadixNode*>(child))); });
  }
  return out;
}

const RadixNode& SlotTrie::facts(const NodeRef& node) const { return *check_handle(node, "facts"); }

AccessHistory SlotTrie::history(const NodeRef& node) const {
  return tree().policy().history(*check_handle(node, "history"));
}

std::vector<int64_t> SlotTrie::device_slots(const NodeRef& node) const {
  const RadixNode* x = check_handle(node, "value");
  std::vector<int64_t> out(std::size_t{x->device_pages()} * config_.page_size);
  write_slots(x->page_ids(), out.data());
  return out;
}

std::optional<std::vector<int64_t>> SlotTrie::host_slots(const NodeRef& node) const {
  const RadixNode* x = check_handle(node, "host_value");
  if (x->host_pages() < x->num_pages()) return std::nullopt;
  std::vector<int64_t> out;
  out.reserve(std::size_t{x->num_pages()} * config_.page_size);
  for (uint32_t i = 0; i < x->num_pages(); ++i) {
    for (uint32_t j = 0; j < config_.page_size; ++j) {
      out.push_back(int64_t{x->host_page(i)} * config_.page_size + j);
    }
  }
  return out;
}

std::vector<PageHash> SlotTrie::page_hashes(const NodeRef& node) const {
  const RadixNode* x = check_handle(node, "hash_value");
  std::vector<PageHash> out;
  if (tree().page_hashes()) {
    for (uint32_t i = 0; i < x->num_pages(); ++i) out.push_back(tree().page_hash(x, i));
    return out;
  }
  // Without page hashes in the tree: chained from the namespace's seed down the path.
  std::vector<const RadixNode*> path;
  for (const RadixNode* y = x; !y->is_root(); y = y->parent()) path.push_back(y);
  PageHash hash = namespace_seed(x->name_space());
  const uint32_t page_size = config_.page_size;
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    const std::span<const TokenId> edge = (*it)->edge_tokens(page_size);
    for (uint32_t i = 0; i < (*it)->num_pages(); ++i) {
      hash = chain_page_hash(hash, edge.subspan(std::size_t{i} * page_size, page_size));
      if (*it == x) out.push_back(hash);
    }
  }
  return out;
}

void SlotTrie::append_all_slots(Namespace ns, std::vector<int64_t>& out) const {
  const RadixNode* root = tree().namespace_root(ns);
  if (root == nullptr) return;
  std::vector<const RadixNode*> stack{root};
  while (!stack.empty()) {
    const RadixNode* x = stack.back();
    stack.pop_back();
    const std::size_t at = out.size();
    out.resize(at + std::size_t{x->device_pages()} * config_.page_size);
    write_slots(x->page_ids(), out.data() + at);
    x->for_each_child([&](const RadixNode* child) { stack.push_back(child); });
  }
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
  handles_->for_each([&](const NodeRef& ref, std::optional<PageId> page, const PageHash& hash) {
    const RadixNode* x = ref.node;
    if (!ref.alive || x == nullptr || x->num_pages() == 0) {
      throw std::logic_error("SlotTrie: a registered node handle is dead");
    }
    const uint32_t tail = x->num_pages() - 1;
    const bool filed = page ? tail < x->device_pages() && x->page_ids()[tail] == *page
                            : tree().page_hash(x, tail) == hash;
    if (!filed) throw std::logic_error("SlotTrie: a node handle is not filed under its tail page");
  });
}

}  // namespace radixkv::python
