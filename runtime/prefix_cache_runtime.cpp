#include "runtime/prefix_cache_runtime.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>

#include "runtime/remote_staging.h"
#include "runtime/runtime_internals.h"

namespace radixkv {

using detail::Sequence;

namespace {

CacheBudget make_budget(const PagePool& pool, const RuntimeConfig& config) {
  BudgetConfig budget{config.cache_bytes, config.high_watermark, config.low_watermark};
  if (budget.cache_bytes == 0) budget.cache_bytes = pool.capacity_bytes();
  return CacheBudget(budget, pool.bytes_per_page());
}

// The policy of RuntimeConfig, wrapped in the retention layer when the config asks for one.
std::unique_ptr<EvictionPolicy> device_policy(const RuntimeConfig& config) {
  std::unique_ptr<EvictionPolicy> policy = config.policy.make();
  if (!config.retention) return policy;
  return std::make_unique<RetentionLayer>(std::move(policy), *config.retention);
}

// With quotas, QuotaPolicy outermost over one device_policy() per quota group: retention hints
// and holds then rank within a tenant's group, and the quota rule picks the group.
std::unique_ptr<EvictionPolicy> make_device_policy(const PagePool& pool,
                                                   const RuntimeConfig& config) {
  if (config.quotas.empty()) return device_policy(config);
  return std::make_unique<QuotaPolicy>(
      [&config] { return device_policy(config); },
      quota_pages(config.quotas, make_budget(pool, config), pool.bytes_per_page()));
}

// The host tier's budget (its whole pool when cache_bytes is 0); errors name the host tier.
std::optional<CacheBudget> make_host_budget(const HostTierConfig& host) {
  if (host.pool == nullptr) return std::nullopt;
  try {
    return CacheBudget({host.cache_bytes != 0 ? host.cache_bytes : host.pool->capacity_bytes(),
                        host.high_watermark, host.low_watermark},
                       host.pool->bytes_per_page());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("host tier: host budget: {}", e.what()));
  }
}

// The host tier of `config`, ready for RadixTree::add_host_tier(); errors name the host tier.
HostTierSetup host_setup(const HostTierConfig& host, const CacheBudget& budget,
                         PageCopier* copier) {
  HostTierSetup setup;
  setup.pool = host.pool;
  setup.copier = copier;
  setup.limit_pages = budget.limit_pages();
  try {
    if (host.quotas.empty()) {
      setup.policy = make_policy(host.policy);
    } else {
      setup.policy = std::make_unique<QuotaPolicy>(
          [&host] { return make_policy(host.policy); },
          quota_pages(host.quotas, budget, host.pool->bytes_per_page()));
    }
    setup.write = WritePolicy::parse(host.write_policy);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("host tier: {}", e.what()));
  }
  return setup;
}

// The copier the runtime makes for itself when the host tier names none.
std::unique_ptr<PageCopier> own_copier(const PagePool& device, const TierConfig& tiers) {
  if (tiers.host.pool == nullptr || tiers.host.copier != nullptr) return nullptr;
  try {
    return make_page_copier(device, *tiers.host.pool);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("host tier: {}", e.what()));
  }
}

// The host tier's pool, claimed as the device pool is: no other runtime may use it, as device or
// host pool. (The host pool being the device pool itself is left to the tree, which says so.)
std::optional<PagePool::Claim> claim_host_pool(const PagePool& device, const TierConfig& tiers) {
  if (tiers.host.pool == nullptr || tiers.host.pool == &device) return std::nullopt;
  return std::optional<PagePool::Claim>(std::in_place, *tiers.host.pool,
                                        "PrefixCacheRuntime's host tier");
}

// The pages that hold `tokens` tokens, the last one maybe partly.
uint32_t pages_to_hold(uint64_t tokens, uint32_t page_tokens) {
  return static_cast<uint32_t>((tokens + page_tokens - 1) / page_tokens);
}

}  // namespace

std::string_view to_string(SeqState state) {
  switch (state) {
    case SeqState::kRunning:
      return "running";
    case SeqState::kFinished:
      return "finished";
    case SeqState::kAborted:
      return "aborted";
  }
  return "unknown";
}

std::string_view to_string(RuntimeStatus status) {
  switch (status) {
    case RuntimeStatus::kOk:
      return "ok";
    case RuntimeStatus::kNoSpace:
      return "no space";
    case RuntimeStatus::kTooLarge:
      return "too large for the pool";
  }
  return "unknown";
}

namespace {

// The retention layer's key of a session's sub-agent (sessions below 2^32).
uint64_t session_key(uint64_t session, uint32_t agent) { return (session << 32) | agent; }

}  // namespace

PrefixCacheRuntime::PrefixCacheRuntime(PagePool& pool, const RuntimeConfig& config,
                                       const TierConfig& tiers)
    : pool_(pool),
      claim_(pool, "PrefixCacheRuntime"),
      host_claim_(claim_host_pool(pool, tiers)),
      page_tokens_(pool.layout().page_tokens),
      own_copier_(own_copier(pool, tiers)),
      partial_copier_(config.partial_reuse ? make_page_copier(pool) : nullptr),
      tree_(pool, make_device_policy(pool, config)),
      tree_evictor_(tree_),
      tree_ledger_(tree_),
      host_ledger_(tree_),
      allocator_(pool, tree_evictor_, make_budget(pool, config)),
      host_budget_(make_host_budget(tiers.host)) {
  retention_ = config.retention.has_value();
  if (!host_budget_ && !tiers.host.quotas.empty()) {
    throw std::invalid_argument("host tier: quotas (HostTierConfig::quotas) need a host pool");
  }
  PageCopier* copier = own_copier_ ? own_copier_.get() : tiers.host.copier;
  if (host_budget_) {
    HostTierSetup setup = host_setup(tiers.host, *host_budget_, copier);
    if (!tiers.host.quotas.empty()) static_cast<QuotaPolicy&>(*setup.policy).attach(&host_ledger_);
    tree_.add_host_tier(std::move(setup));
  }
  if (!config.quotas.empty() || (host_budget_ && !tiers.host.quotas.empty())) {
    tree_.count_namespace_pages();
  }
  if (!config.quotas.empty()) static_cast<QuotaPolicy&>(tree_.policy()).attach(&tree_ledger_);
  if (tiers.page_hashes) tree_.enable_page_hashes();
  if (tiers.remote != nullptr) {
    if (tiers.host.pool == nullptr && pool.backend().storage() == StorageKind::kDevice) {
      throw std::invalid_argument(fmt::format(
          "PrefixCacheRuntime: a remote tier cannot load into a device pool whose pages are on a "
          "GPU ({} backend) without a host tier to stage them through: add one "
          "(TierConfig::host.pool, a pool on make_pinned_host_backend())",
          pool.backend().name()));
    }
    remote_ = tiers.remote;
    if (tiers.host.pool != nullptr) {
      host_pool_ = tiers.host.pool;
      staging_ = std::make_unique<detail::RemoteStaging>(pool, *host_pool_, *copier);
    }
    remote_->attach_pools(&pool, tiers.host.pool, staging_.get());
    remote_->add_metrics(lower_attached_);
    tree_.add_tier_events(remote_);  // the tree tells the remote tier what it drops
  }
  for (TierEvents* events : tiers.events) {
    if (events == nullptr) throw std::invalid_argument("PrefixCacheRuntime: a null tier observer");
    tree_.add_tier_events(events);
  }
}

PrefixCacheRuntime::~PrefixCacheRuntime() {
  // The tree refuses to die with locks held; sequences give theirs back first. Remote loads
  // still copying are waited for by staging_, which goes before the tree and the copier.
  for (Sequence& s : slots_) {
    if (s.state == SeqState::kRunning) release_sequence(s, SeqState::kAborted);
  }
}

Sequence& PrefixCacheRuntime::live(SeqHandle seq, const char* operation) {
  return const_cast<Sequence&>(std::as_const(*this).live(seq, operation));
}

const Sequence& PrefixCacheRuntime::live(SeqHandle seq, const char* operation) const {
  if (seq.slot >= slots_.size() || seq.generation == 0 ||
      seq.generation > slots_[seq.slot].generation) {
    throw std::logic_error(fmt::format("PrefixCacheRuntime::{}: sequence {}/{} was never admitted",
                                       operation, seq.slot, seq.generation));
  }
  const Sequence& s = slots_[seq.slot];
  if (s.generation != seq.generation) {
    throw std::logic_error(fmt::format(
        "PrefixCacheRuntime::{}: sequence {}/{} has ended (finished or aborted) and its slot now "
        "serves another request",
        operation, seq.slot, seq.generation));
  }
  if (s.state != SeqState::kRunning) {
    throw std::logic_error(fmt::format(
        "PrefixCacheRuntime::{}: sequence {}/{} (request {}) is already {}; its handle cannot be "
        "used any more",
        operation, seq.slot, seq.generation, s.request_id, to_string(s.state)));
  }
  return s;
}

bool PrefixCacheRuntime::is_live(SeqHandle seq) const {
  return seq.slot < slots_.size() && seq.generation != 0 &&
         slots_[seq.slot].generation == seq.generation &&
         slots_[seq.slot].state == SeqState::kRunning;
}

std::optional<SeqState> PrefixCacheRuntime::state(SeqHandle seq) const {
  if (seq.slot >= slots_.size() || seq.generation == 0 ||
      slots_[seq.slot].generation != seq.generation) {
    return std::nullopt;
  }
  return slots_[seq.slot].state;
}

SequenceView PrefixCacheRuntime::view(SeqHandle seq) const { return live(seq, "view").view(); }

void PrefixCacheRuntime::start_miss_ratio_curve(const metrics::ShardsConfig& config) {
  const uint64_t pages = budget().limit_pages() + (host_budget_ ? host_budget_->limit_pages() : 0);
  curve_ = std::make_unique<metrics::PromptMrc>(page_tokens_, pages, config);
}

metrics::LatencyHistogram* PrefixCacheRuntime::timed(
    metrics::LatencyHistogram& histogram) noexcept {
  if (timing_period_ <= 1) return timing_period_ == 1 ? &histogram : nullptr;
  timing_draw_ = timing_draw_ * 6364136223846793005ull + 1442695040888963407ull;  // Knuth's MMIX
  // The draw's high half scaled to [0, period) (a multiply and a shift, no division).
  const uint64_t slot = ((timing_draw_ >> 32) * timing_period_) >> 32;
  return slot == 0 ? &histogram : nullptr;
}

AdmitResult PrefixCacheRuntime::admit(const Request& request) {
  const metrics::ScopedTimer timer(timed(latencies_.admit));
  const size_t len = request.prompt.size();
  if (len == 0) {
    throw std::invalid_argument(
        fmt::format("PrefixCacheRuntime::admit: request {} has an empty prompt", request.id));
  }
  if (len > std::numeric_limits<int32_t>::max()) {
    throw std::invalid_argument(
        fmt::format("PrefixCacheRuntime::admit: request {} has {} prompt tokens, more than 2^31-1",
                    request.id, len));
  }
  if (request.priority < kMinPriority || request.priority > kMaxPriority) {
    throw std::invalid_argument(
        fmt::format("PrefixCacheRuntime::admit: request {} has priority {}, outside [{}, {}]",
                    request.id, request.priority, kMinPriority, kMaxPriority));
  }
  if (retention_ && request.session > UINT32_MAX) {
    throw std::invalid_argument(fmt::format(
        "PrefixCacheRuntime::admit: request {} names session {}; with a retention layer "
        "sessions must be below 2^32",
        request.id, request.session));
  }
  if (!request.retention.empty()) {
    if (!retention_) {
      throw std::invalid_argument(fmt::format(
          "PrefixCacheRuntime::admit: request {} has retention ranges, but the runtime has no "
          "retention layer (RuntimeConfig::retention)",
          request.id));
    }
    check_retention_ranges(request.retention, static_cast<uint32_t>(len),
                           fmt::format("PrefixCacheRuntime::admit: request {}", request.id));
  }
  AdmitResult result;
  const bool cache_only = request.mode == AdmitMode::kCacheOnly;
  // The pages the sequence would hold: every prompt token's, or (cache only) the whole pages'.
  const uint32_t total_pages =
      cache_only ? static_cast<uint32_t>(len / page_tokens_) : pages_to_hold(len, page_tokens_);
  const uint32_t cut = cache_only ? total_pages * page_tokens_ : reuse_cut(len);
  if (!cache_only && total_pages > pool_.capacity_pages()) {
    result.status = RuntimeStatus::kTooLarge;
    result.short_pages = total_pages - pool_.capacity_pages();
    ++stats_.admit_too_large;
    return result;
  }

  // Take a slot before touching the tree, so a refusal only has to hand it back.
  uint32_t slot;
  if (free_slots_.empty()) {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  Sequence& s = slots_[slot];
  s.block_table.clear();
  s.block_table.reserve(total_pages);

  const MatchResult match =
      tree_.match(request.name_space, request.prompt.first(cut), &s.block_table, hint_for(request));
  // Lock before allocating: the allocation below may evict, and must not take the match.
  tree_.lock(match.node);
  pool_.retain(s.block_table);
  // The device run; a host run follows it (MatchResult), loaded into pages allocated below.
  const uint32_t matched_pages = static_cast<uint32_t>(s.block_table.size());

  // The host run (MatchResult::host_tokens) must have pages; cache only, the rest may go short.
  const uint32_t host_pages = match.host_tokens() / page_tokens_;
  const uint32_t wanted = total_pages - matched_pages;
  const AllocResult alloc =
      allocator_.allocate_up_to(cache_only ? host_pages : wanted, wanted, s.block_table);
  result.evicted_pages = alloc.evicted_pages;
  stats_.evicted_pages += alloc.evicted_pages;
  if (!alloc.ok()) {
    pool_.release(s.block_table);
    s.block_table.clear();
    tree_.unlock(match.node);
    free_slots_.push_back(slot);
    result.status = RuntimeStatus::kNoSpace;
    result.short_pages = alloc.short_pages;
    ++stats_.admit_no_space;
    end_call();
    return result;
  }
  result.uncached_pages = wanted - alloc.pages;
  // The host run becomes device pages of the trie now, in the pages just allocated after the
  // device run; the copies run while the caller may do other work.
  CopyTicket ticket = 0;
  if (host_pages > 0) {
    ticket = tree_.load(match.node,
                        std::span<const PageId>(s.block_table).subspan(matched_pages, host_pages));
  } else if (tree_.has_host_tier()) {
    ticket = tree_.pending_load(match.node);
  }
  // Device hits a remote load is still writing (loaded by an earlier admit): wait for it too.
  if (staging_) {
    const std::span<const PageId> device_hits(s.block_table.data(), matched_pages);
    ticket = std::max(ticket, staging_->writing(device_hits));
  }

  s.request_id = request.id;
  s.name_space = request.name_space;
  s.priority = request.priority;
  ++s.generation;
  s.state = SeqState::kRunning;
  s.prompt_tokens = static_cast<uint32_t>(len);
  s.reused_tokens = match.tokens;
  s.computed_tokens = match.tokens;
  s.committed_pages = matched_pages + host_pages;
  s.mode = request.mode;
  s.output_tokens = request.output_tokens;
  s.request_class = request.request_class;
  s.session = request.session;
  s.agent = request.agent;
  s.retention.assign(request.retention.begin(), request.retention.end());
  s.load_ticket = ticket;
  s.locked = match.node;
  s.access_owed = false;
  if (cache_only) {
    s.borrowed_tokens = request.prompt;
  } else {
    s.own_tokens.assign(request.prompt.begin(), request.prompt.end());
  }
  ++live_;
  uint32_t remote_tokens = 0, partial_tokens = 0;
  try {
    if (remote_ != nullptr) {
      // No further than the pages the sequence got (cache only, they may end before the cut).
      const auto cut_pages =
          std::min(cut / page_tokens_, static_cast<uint32_t>(s.block_table.size()));
      remote_tokens = load_remote(s, matched_pages + host_pages, cut_pages) * page_tokens_;
    }
    if (partial_copier_) partial_tokens = reuse_partial_page(s);
  } catch (...) {  // out of memory, a copier's error: nothing admitted, nothing leaked
    release_sequence(s, SeqState::kAborted);
    end_call();
    throw;
  }
  if (curve_) {
    try {
      curve_->access(request.name_space, request.prompt);
    } catch (...) {  // out of memory for the prompt's keys: nothing admitted, nothing leaked
      release_sequence(s, SeqState::kAborted);
      end_call();
      throw;
    }
  }
  ticket = s.load_ticket;  // a remote load's ticket comes last and covers the earlier ones
  const uint32_t reused = match.tokens + remote_tokens + partial_tokens;

  ++stats_.admits;
  stats_.prompt_tokens += len;
  stats_.reused_tokens += reused;
  stats_.device_hit_tokens += match.device_tokens;
  stats_.host_hit_tokens += match.host_tokens();
  stats_.remote_hit_tokens += remote_tokens;
  stats_.partial_hit_tokens += partial_tokens;
  stats_.prefill_tokens += len - reused;
  stats_.uncached_pages += result.uncached_pages;

  result.seq = {slot, s.generation};
  result.reused_tokens = reused;
  result.position_offset = reused;
  result.remote_hit_tokens = remote_tokens;
  result.partial_hit_tokens = partial_tokens;
  result.device_hit_tokens = match.device_tokens;
  result.host_hit_tokens = match.host_tokens();
  result.load_ticket = ticket;
  result.block_table = s.block_table;
  end_call();
  return result;
}

// The pages after the local match that the remote tier holds, loaded into the private pages
// allocated for them (through staging pages with a host tier, whose copy's ticket becomes the
// sequence's) and cached at once, as if computed (the sequence locks them). Returns how many.
// The insert records no access: the admit's match already recorded one of the matched path, and
// the request's next insert (or its finish) records the access of the whole path, loaded pages
// included, once, when and as a request that computed those pages would. So a remote hit leaves
// every policy's counts as a computed prefix does (tests/test_combinations.cpp, "remote: the
// local tiers as without it").
uint32_t PrefixCacheRuntime::load_remote(Sequence& s, uint32_t local_pages, uint32_t cut_pages) {
  if (cut_pages <= local_pages) return 0;
  const PageHash parent = chain_page_hashes(s.name_space, s.tokens(), page_tokens_, local_pages,
                                            cut_pages - local_pages, remote_hashes_);
  const std::span<const TokenId> tokens = s.tokens().subspan(size_t{local_pages} * page_tokens_);
  const std::span<const PageId> device_pages =
      std::span<const PageId>(s.block_table).subspan(local_pages, cut_pages - local_pages);
  const uint32_t loaded = staging_
                              ? load_remote_staged(parent, tokens, device_pages, s.load_ticket)
                              : remote_->load(parent, remote_hashes_, tokens, pool_, device_pages);
  if (loaded == 0) return 0;
  s.reused_tokens += loaded * page_tokens_;
  s.computed_tokens = (local_pages + loaded) * page_tokens_;
  insert_computed(s, PathAccess::kNotRecorded);
  s.access_owed = true;
  return loaded;
}

// Partial-page reuse (admit, in the header): the tokens after the whole pages reused that begin a
// cached page, copied with it into the sequence's next page, which the admit allocated. At most
// up to the last prompt token, which is always computed (cache only: the next page is whole).
// Returns how many tokens were reused so.
uint32_t PrefixCacheRuntime::reuse_partial_page(Sequence& s) {
  const uint32_t page = s.committed_pages;
  const uint32_t start = page * page_tokens_;
  if (s.reused_tokens != start || page >= s.block_table.size()) return 0;
  const bool cache_only = s.mode == AdmitMode::kCacheOnly;
  const uint32_t end = cache_only ? start + page_tokens_ : s.prompt_tokens - 1;
  if (end <= start) return 0;
  const PartialPage found = tree_.partial_page(s.locked, s.tokens().subspan(start, end - start));
  if (found.tokens == 0) return 0;
  const PageTransfer copy{found.page, s.block_table[page]};
  partial_copier_->wait(partial_copier_->copy(pool_, pool_, {&copy, 1}));
  s.reused_tokens += found.tokens;
  s.computed_tokens = s.reused_tokens;
  return found.tokens;
}

// The remote run after the local match, through staging pages of the host pool: as many as the
// pool has free (the host evicting, by its policy, what it must to have them), each checked by the
// remote tier and then copied to its device page under one ticket, which `ticket` becomes. The
// staging pages the run did not fill go back at once; the others when the copy is done.
uint32_t PrefixCacheRuntime::load_remote_staged(const PageHash& parent,
                                                std::span<const TokenId> tokens,
                                                std::span<const PageId> device_pages,
                                                CopyTicket& ticket) {
  const auto want = static_cast<uint32_t>(device_pages.size());
  retire_loads();  // copies done free their staging pages
  if (host_pool_->free_pages() < want) tree_.evict_host_pages(want - host_pool_->free_pages());
  const uint32_t staged = std::min(want, host_pool_->free_pages());
  if (staged < want) ++stats_.remote_no_staging;
  staging_pages_.clear();
  if (staged == 0 || !host_pool_->allocate(staged, staging_pages_)) return 0;
  const std::span<const PageId> host_pages(staging_pages_);
  uint32_t loaded = 0;
  try {
    loaded = remote_->load(parent, std::span<const PageHash>(remote_hashes_).first(staged), tokens,
                           *host_pool_, host_pages);
    const CopyTicket copied = staging_->copy(host_pages.first(loaded), device_pages.first(loaded));
    if (copied != 0) ticket = copied;
  } catch (...) {
    host_pool_->release(host_pages);
    throw;
  }
  host_pool_->release(host_pages.subspan(loaded));
  return loaded;
}

// Gives back the pages of the copies that are done: the host tier's, then remote loads'.
void PrefixCacheRuntime::retire_loads() {
  tree_.retire_copies();
  if (staging_) staging_->retire();
}

void PrefixCacheRuntime::prefetch(const Request& request) {
  if (remote_ == nullptr) return;
  const uint32_t cut_pages = reuse_cut(request.prompt.size()) / page_tokens_;
  const uint32_t local_pages =
      tree_.peek(request.name_space, request.prompt.first(size_t{cut_pages} * page_tokens_)) /
      page_tokens_;
  if (cut_pages <= local_pages) return;
  chain_page_hashes(request.name_space, request.prompt, page_tokens_, local_pages,
                    cut_pages - local_pages, remote_hashes_);
  remote_->prefetch(remote_hashes_);
}

ExtendResult PrefixCacheRuntime::append_token(SeqHandle seq, TokenId token) {
  Sequence& s = live(seq, "append_token");
  if (s.mode == AdmitMode::kCacheOnly) {
    throw std::logic_error(fmt::format(
        "PrefixCacheRuntime::append_token: request {} was admitted cache only; it does not decode",
        s.request_id));
  }
  ExtendResult result;
  if (s.own_tokens.size() == size_t{s.block_table.size()} * page_tokens_) {
    const AllocResult alloc = allocator_.allocate(1, s.block_table);
    result.evicted_pages = alloc.evicted_pages;
    stats_.evicted_pages += alloc.evicted_pages;
    if (!alloc.ok()) {
      result.status = RuntimeStatus::kNoSpace;
      ++stats_.extend_no_space;
      end_call();
      return result;
    }
    result.new_page = true;
  }
  s.own_tokens.push_back(token);
  ++stats_.decode_tokens;
  end_call();
  return result;
}

void PrefixCacheRuntime::check_computed(const Sequence& s, uint32_t computed_tokens,
                                        const char* operation) const {
  if (computed_tokens < s.computed_tokens || computed_tokens > s.tokens().size()) {
    throw std::invalid_argument(fmt::format(
        "PrefixCacheRuntime::{}: request {} cannot have {} computed tokens: it has {} already and "
        "{} tokens in all",
        operation, s.request_id, computed_tokens, s.computed_tokens, s.tokens().size()));
  }
}

void PrefixCacheRuntime::mark_computed(SeqHandle seq, uint32_t computed_tokens) {
  Sequence& s = live(seq, "mark_computed");
  check_computed(s, computed_tokens, "mark_computed");
  s.computed_tokens = computed_tokens;
}

CommitResult PrefixCacheRuntime::commit(SeqHandle seq, uint32_t computed_tokens) {
  const metrics::ScopedTimer timer(timed(latencies_.commit));
  Sequence& s = live(seq, "commit");
  check_computed(s, computed_tokens, "commit");
  s.computed_tokens = computed_tokens;
  const CommitResult result = insert_computed(s);
  if (result.new_pages > 0) stats_.evicted_pages += allocator_.enforce_watermarks();
  end_call();
  return result;
}

AccessHint PrefixCacheRuntime::access_hint(const Sequence& s) const {
  return {.priority = s.priority,
          .now = now_,
          .output_tokens = s.output_tokens,
          .request_class = s.request_class};
}

CommitResult PrefixCacheRuntime::insert_computed(Sequence& s, PathAccess access) {
  CommitResult result;
  const uint32_t full_pages = s.computed_tokens / page_tokens_;
  if (full_pages <= s.committed_pages) return result;
  if (access == PathAccess::kRecorded) s.access_owed = false;  // this insert records it

  // Only what follows the committed prefix is new to the walk: insert below the locked node that
  // ends it, instead of re-reading the whole prefix from the root.
  const size_t from = size_t{s.committed_pages} * page_tokens_;
  const std::span<const TokenId> rest(s.tokens().data() + from,
                                      size_t{full_pages} * page_tokens_ - from);
  const InsertResult inserted =
      tree_.insert_below(s.locked, rest,
                         std::span<const PageId>(s.block_table)
                             .subspan(s.committed_pages, full_pages - s.committed_pages),
                         access_hint(s), access);
  result.new_pages = inserted.new_pages;
  stats_.peak_cached_pages = std::max(stats_.peak_cached_pages, tree_.cached_pages());

  // Pages [committed_pages, cached_pages) were computed by this sequence while another one put
  // the same prefix in the tree. Walk up from the key's end node to find the tree's pages there,
  // switch the block table to them, and only then release the duplicates.
  const uint32_t cached_pages = s.committed_pages + inserted.cached_tokens / page_tokens_;
  // Pages a load is still writing must not enter a block table the model reads right away.
  if (cached_pages > s.committed_pages && tree_.has_host_tier()) {
    tree_.wait_copy(tree_.pending_load(inserted.node));
  }
  CopyTicket remote_load = 0;  // the latest remote load still writing a page switched to
  scratch_pages_.clear();
  uint32_t end = full_pages;  // the walked node covers pages [end - node pages, end)
  for (const RadixNode* x = inserted.node; end > s.committed_pages && !x->is_root();
       x = x->parent()) {
    const uint32_t begin = end - x->num_pages();
    for (uint32_t i = std::max(begin, s.committed_pages); i < std::min(end, cached_pages); ++i) {
      const PageId canonical = x->page_ids()[i - begin];
      if (s.block_table[i] == canonical) continue;
      pool_.retain(canonical);
      scratch_pages_.push_back(s.block_table[i]);
      s.block_table[i] = canonical;
      if (staging_) remote_load = std::max(remote_load, staging_->writing({&canonical, 1}));
    }
    end = begin;
  }
  if (remote_load != 0) tree_.wait_copy(remote_load);
  pool_.release(scratch_pages_);
  result.duplicate_pages = static_cast<uint32_t>(scratch_pages_.size());

  // Move the lock to the new end: lock first, so the shared ancestors never drop to zero.
  tree_.lock(inserted.node);
  tree_.unlock(s.locked);
  s.locked = inserted.node;
  s.committed_pages = full_pages;
  stats_.committed_pages += result.new_pages;
  stats_.duplicate_pages += result.duplicate_pages;
  if (retention_) apply_retention(s);
  return result;
}

// Request::retention and Request::session, on the committed path (locked: no node is linked in
// the policy, which ranks them when they are unpinned).
void PrefixCacheRuntime::apply_retention(const Sequence& s) {
  if (s.locked == nullptr || s.locked->is_root()) return;
  EvictionPolicy& policy = tree_.policy();
  if (!s.retention.empty()) {
    for (RadixNode* x = s.locked; !x->is_root(); x = x->parent()) {
      const uint64_t first = uint64_t{x->prefix_pages} * page_tokens_;
      const uint64_t end = first + uint64_t{x->num_pages()} * page_tokens_;
      for (const TokenRangeRetention& r : s.retention) {
        if (r.token_start >= end ||
            (r.token_end != TokenRangeRetention::kToEnd && r.token_end <= first)) {
          continue;
        }
        policy.retain(*x, {.priority = r.priority, .until = now_ + r.duration_s, .now = now_});
      }
    }
  }
  if (s.session != 0) {
    policy.retain(*s.locked, {.session = session_key(s.session, s.agent), .now = now_});
  }
}

void PrefixCacheRuntime::set_now(double seconds) {
  now_ = seconds;
  tree_.policy().set_now(seconds);
}

void PrefixCacheRuntime::hold(uint64_t session, double seconds, uint32_t agent) {
  if (!retention_) {
    throw std::logic_error(
        "PrefixCacheRuntime::hold: the runtime has no retention layer (RuntimeConfig::retention)");
  }
  if (!(seconds >= 0.0)) {
    throw std::invalid_argument(
        fmt::format("PrefixCacheRuntime::hold: session {} held for {} seconds; it must be >= 0",
                    session, seconds));
  }
  if (session > UINT32_MAX) {
    throw std::invalid_argument(
        fmt::format("PrefixCacheRuntime::hold: session {} is not below 2^32", session));
  }
  tree_.policy().hold(session_key(session, agent), now_ + seconds);
  ++stats_.holds;
}

void PrefixCacheRuntime::release(uint64_t session, uint32_t agent) {
  if (!retention_) {
    throw std::logic_error(
        "PrefixCacheRuntime::release: the runtime has no retention layer "
        "(RuntimeConfig::retention)");
  }
  if (session > UINT32_MAX) return;  // never held: hold() refuses such sessions
  tree_.policy().release(session_key(session, agent));
  ++stats_.releases;
}

CommitResult PrefixCacheRuntime::finish(SeqHandle seq) {
  const metrics::ScopedTimer timer(timed(latencies_.finish));
  Sequence& s = live(seq, "finish");
  // The release at the end is all or nothing, but the insert before it is not undone: so a page
  // the caller released behind our back must be found first, while nothing has changed.
  check_private_pages_held(s, "finish");
  const CommitResult result = insert_computed(s);
  if (s.access_owed) tree_.touch(s.locked, access_hint(s));  // a remote load's (load_remote)
  release_sequence(s, SeqState::kFinished);
  ++stats_.finishes;
  // Also without new pages: the ones just unpinned may be what a commit above the high watermark
  // could not evict while they were locked. An O(1) check while under high.
  stats_.evicted_pages += allocator_.enforce_watermarks();
  end_call();
  return result;
}

void PrefixCacheRuntime::abort(SeqHandle seq) {
  Sequence& s = live(seq, "abort");
  release_sequence(s, SeqState::kAborted);
  ++stats_.aborts;
  stats_.evicted_pages += allocator_.enforce_watermarks();  // as in finish
  end_call();
}

// The end of every call that may have changed the cache: the host keeps to its watermarks, and
// the tier events of the call go out as one batch.
void PrefixCacheRuntime::end_call() {
  if (staging_) staging_->retire();
  if (host_budget_) {
    tree_.retire_copies();
    if (const uint64_t excess = host_budget_->excess_pages(tree_.host_budget_pages())) {
      tree_.evict_host_pages(excess);
    }
  }
  tree_.flush_events();
}

bool PrefixCacheRuntime::load_done(LoadTicket ticket) {
  if (!tree_.copy_done(ticket)) return false;
  retire_loads();
  return true;
}

void PrefixCacheRuntime::wait_load(LoadTicket ticket) {
  tree_.wait_copy(ticket);
  if (staging_) staging_->retire();
}

void PrefixCacheRuntime::clear_cache() {
  if (live_ != 0) {
    throw std::logic_error(fmt::format(
        "PrefixCacheRuntime::clear_cache: {} sequences are live; finish or abort them first",
        live_));
  }
  tree_.clear();
  tree_.flush_events();
}

void PrefixCacheRuntime::check_private_pages_held(const Sequence& s, const char* operation) const {
  // Committed pages need no look: the tree holds a reference to each besides ours, so one release
  // behind our back cannot free them (two would have broken the tree, which check_accounting()
  // reports).
  try {
    pool_.check_held(std::span<const PageId>(s.block_table).subspan(s.committed_pages), operation);
  } catch (const std::logic_error& e) {
    throw std::logic_error(fmt::format(
        "PrefixCacheRuntime::{}: request {} holds a page that is no longer held in the pool (was "
        "it released outside the runtime?); nothing changed: {}",
        operation, s.request_id, e.what()));
  }
}

void PrefixCacheRuntime::release_sequence(Sequence& s, SeqState end_state) {
  // Pages first: the release is all or nothing, and the unlock cannot fail for a live sequence,
  // so nothing is left half done if the release throws.
  pool_.release(s.block_table);
  tree_.unlock(s.locked);
  s.block_table.clear();
  s.own_tokens.clear();
  s.retention.clear();
  s.borrowed_tokens = {};
  s.locked = nullptr;
  s.load_ticket = 0;
  s.state = end_state;
  --live_;
  free_slots_.push_back(static_cast<uint32_t>(&s - slots_.data()));
}

uint32_t PrefixCacheRuntime::reuse_cut(std::size_t prompt_tokens) const {
  // Match no further than the last page boundary strictly below the prompt length.
  return prompt_tokens == 0
             ? 0
             : static_cast<uint32_t>((prompt_tokens - 1) / page_tokens_ * page_tokens_);
}

uint32_t PrefixCacheRuntime::cached_prefix(Namespace ns, std::span<const TokenId> prompt) const {
  return tree_.peek(ns, prompt.first(reuse_cut(prompt.size())));
}

uint64_t PrefixCacheRuntime::evict(uint64_t pages, std::vector<PageId>* evicted) {
  const uint64_t released = tree_.evict_pages(pages, evicted);
  stats_.evicted_pages += released;
  end_call();
  return released;
}

AccessHint PrefixCacheRuntime::hint_for(const Request& request) const {
  return {.priority = request.priority,
          .now = now_,
          .output_tokens = request.output_tokens,
          .request_class = request.request_class};
}

MatchResult PrefixCacheRuntime::match(Namespace ns, std::span<const TokenId> tokens,
                                      std::vector<PageId>* pages, AccessHint hint) {
  hint.now = now_;
  const MatchResult found = tree_.match(ns, tokens, pages, hint);
  end_call();
  return found;
}

InsertResult PrefixCacheRuntime::insert(Namespace ns, std::span<const TokenId> tokens,
                                        std::span<const PageId> pages, AccessHint hint) {
  hint.now = now_;
  const InsertResult inserted = tree_.insert(ns, tokens, pages, hint);
  stats_.committed_pages += inserted.new_pages;
  stats_.peak_cached_pages = std::max(stats_.peak_cached_pages, tree_.cached_pages());
  if (inserted.new_pages > 0) stats_.evicted_pages += allocator_.enforce_watermarks();
  end_call();
  return inserted;
}

void PrefixCacheRuntime::lock(RadixNode* node) {
  tree_.lock(node);
  end_call();  // a write-through-selective host tier may have started a backup
}

void PrefixCacheRuntime::unlock(RadixNode* node) {
  tree_.unlock(node);
  end_call();
}

LoadTicket PrefixCacheRuntime::load(RadixNode* end, std::span<const PageId> pages) {
  const LoadTicket ticket = tree_.load(end, pages);
  end_call();
  return ticket;
}

}  // namespace radixkv
