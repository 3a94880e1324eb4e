// PrefixCacheRuntime: the adapter a batch scheduler calls (docs/design.md, "The runtime
// adapter"). It owns the radix tree and the budgeted allocator over a caller-provided PagePool,
// which it claims for its whole life (one runtime per pool), and tracks every live sequence
// (runtime/sequence.h).
//
// Life of a request, with P = page_tokens:
//   admit(request)    matches the prompt cut to reuse_cut(len) = floor((len-1)/P)*P, locks the
//                     match, shares its pages, allocates private pages for the rest.
//                     position_offset == reused tokens: the model computes positions
//                     offset .. len-1, never restarting at 0.
//                     With a host tier the match is a device run, then a host run: admit
//                     allocates device pages for the host run, starts copying it there (the pages
//                     are device pages of the trie at once) and returns load_ticket; the caller
//                     must not compute before load_done(ticket) (or after wait_load(ticket)).
//                     With a remote tier, the pages after the local match are looked up there
//                     (one round trip, bounded by its timeout) and the leading run found is
//                     loaded into the private pages that follow, then cached like computed pages
//                     before admit returns (remote_hit_tokens; a failed lookup is a miss). With a
//                     host tier the run arrives as a host-tier load does: its bytes are checked
//                     into staging pages of the host pool, the copier moves them to those device
//                     pages, and load_ticket covers that copy (runtime/remote_staging.h); no
//                     staging page to be had is a miss (remote_no_staging). Without a host tier
//                     the bytes are copied straight into the device pages (host memory only).
//                     reused_tokens = device + host + remote + partial hit tokens. A match that
//                     ends in pages another request is still loading gets a ticket covering
//                     that load.
//                     Partial-page reuse (RuntimeConfig::partial_reuse): when a cached page
//                     starts with the k < P tokens that follow the whole pages reused, admit
//                     copies that page into the sequence's next private page (a copier within the
//                     pool, kv_store/page_copier.h; admit waits for that one page) and reuses
//                     those k tokens too (partial_hit_tokens): the model computes from offset
//                     reused_tokens, which is then no multiple of P, overwriting the page's other
//                     slots. What TensorRT-LLM does with enable_partial_reuse and
//                     copy_on_partial_reuse (KvCacheConfig, both on by default there). The page
//                     stays private: commit caches it once the model has written all of it.
//   prefetch(request) optional, when the request is queued: with a remote tier, starts its
//                     remote lookup in the background; admit takes what it fetched.
//   commit(h, n)      the model has written KV for tokens [0, n) (chunked prefill): inserts the
//                     full pages of that prefix into the tree, switches the block table to the
//                     tree's canonical pages where the tree already had them (waiting first
//                     for a load still writing them), then releases the duplicates, in that order;
//                     moves the lock to the new end (lock new, unlock old); evicts down to the low
//                     watermark if cached pages passed the high one.
//   mark_computed(h, n) records n without touching the tree (decode steps).
//   append_token(h, t) decode: appends a sampled token, allocating a page when the last is full.
//   finish(h)         caches the full pages of prompt + generated tokens that have KV computed
//                     (the last sampled token usually has none and is dropped), unlocks, releases
//                     every reference of the sequence. The handle is dead afterwards.
//   abort(h)          unlocks and releases without caching anything not committed before.
//                     Both then evict down to the low watermark if cached pages are above the high
//                     one (pages a commit could not evict while this sequence pinned them).
//
// Memory pressure: admit and append_token evict cache pages to make room; when nothing more is
// evictable they return kNoSpace with nothing allocated, locked or leaked, so the scheduler can
// wait or preempt (abort/finish another sequence) and retry. kTooLarge means even an empty cache
// could not hold the request: waiting will not help. A refused admit has still touched (and may
// have split) the matched path, as the request is about to want it again.
//
// Errors: a dead, stale or unknown handle throws std::logic_error naming the sequence and what
// happened to it (a second finish is one). Bad arguments (empty prompt, priority outside
// [kMinPriority, kMaxPriority], computed counts out of range) throw std::invalid_argument before
// anything changes. So does finish or abort of a sequence one of whose pages the caller has
// released behind the runtime's back (std::logic_error naming the page): the sequence stays live,
// locked and holding its pages, exactly as before the call.
// A second runtime over a pool that one already uses is refused (std::logic_error), as is a pool
// with pages in use: each would count the other's pages as leaked.
//
// Page accounting: every page's refcount == (tree indexes it) + (live block tables holding it)
// + (a remote load's copy still writes it); capacity == free + cached + private + loading (pages
// only such a copy holds: their sequence ended and the trie let them go). Host tier: every host
// page's refcount == (tree indexes it) + (a running copy holds it: a load's source under
// write-back, or a remote load's staging page); host capacity == free + cached + in flight +
// staging. check_accounting() verifies both. Copies that are done give their pages back at the
// end of every call, and in load_done/wait_load.
//
// Tier events (TierConfig::events, radix/tier_events.h): the tree reports every change of a
// page's tiers as it applies it, to the remote tier first (it writes what the tree drops) and then
// to every observer of TierConfig::events in order; each public call that changes the cache ends
// with one flush().
//
// One front door. The runtime is the only owner of its tree: engines (through sequences), the
// cache-mode and cluster replays (tools/replay/), the SGLang facade (python/src/slot_trie.h,
// through the calls without sequences below) and the benchmarks all drive the tree through it, so
// that every combination of tiers, observers, budget and policy behaves the same for each.
//
// Destruction aborts every live sequence, then releases the tree. Not thread-safe: one scheduler
// thread owns it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "eviction/cache_budget.h"
#include "eviction/eviction_policy.h"
#include "eviction/retention_layer.h"
#include "metrics/latency_histogram.h"
#include "metrics/prompt_mrc.h"
#include "radix/radix_tree.h"
#include "runtime/remote_pages.h"
#include "runtime/runtime_metrics.h"
#include "runtime/sequence.h"
#include "runtime/tree_evictor.h"

namespace radixkv {

namespace detail {
struct Sequence;
struct RuntimeInternals;
class RemoteStaging;
}  // namespace detail

// The host tier under the device pool (radix/tier_config.h, docs/tiers.md).
struct HostTierConfig {
  PagePool* pool = nullptr;      // the host tier's pages; nullptr: no host tier
  PageCopier* copier = nullptr;  // copies between the pools; nullptr: make_page_copier()'s
  uint64_t cache_bytes = 0;      // budget of cached host pages; 0 means the whole host pool
  // Once cached host pages pass high, the host evicts down to low (checked after each call);
  // a copy to a full host evicts just what it needs.
  Watermark high_watermark = 1.0;
  Watermark low_watermark = 1.0;
  std::string policy = "lru";               // any make_policy() spec
  std::string write_policy = "write_back";  // WritePolicy::parse()
  // Per-namespace (tenant) min and max shares of this host budget, by RuntimeConfig::quotas's
  // rule (eviction/quota_policy.h) over the host policy: a tenant under its host min keeps its
  // host pages whoever demotes into a full host (the demoted page is dropped instead).
  std::vector<NamespaceQuota> quotas{};
};

struct RuntimeConfig {
  uint64_t cache_bytes = 0;  // budget of cached pages; 0 means the whole pool
  // Fractions of the budget or sizes of their own (eviction/cache_budget.h).
  Watermark high_watermark = 0.95;
  Watermark low_watermark = 0.85;
  // A spec from the registry ("lru", "gdsf:depth_pages=512"; eviction/policy_registry.h), or a
  // factory of the caller's own policy (eviction/eviction_policy.h, PolicyChoice).
  PolicyChoice policy = "lru";
  // Reuse the matching leading tokens of a cached page by copying it (admit, above). Off by
  // default: whole-page reuse is what radixkv's replays and their oracles model.
  bool partial_reuse = false;
  // Retention hints and session holds (eviction/retention_layer.h): when set, the device policy is
  // wrapped in a RetentionLayer with this configuration, and Request::retention, hold() and
  // release() take effect. Off by default: the layer costs 96 bytes per node.
  std::optional<RetentionConfig> retention = std::nullopt;
  // Per-namespace (tenant) min and max shares of the device budget (eviction/quota_policy.h): the
  // policy above runs once per namespace named here (and once for all others) under QuotaPolicy's
  // rule. Empty: no quotas, the policy alone.
  std::vector<NamespaceQuota> quotas{};
};

// What lies beyond the device pool: a host tier, page hashes and the tier events. Apart from
// RuntimeConfig so that a one-tier runtime's configuration stays four fields.
struct TierConfig {
  HostTierConfig host;
  // Told of every change of tiers, in this order (radix/tier_events.h); each must outlive the
  // runtime. Any observer turns page hashes on.
  std::vector<TierEvents*> events;
  bool page_hashes = false;  // keep a PageHash per cached page (radix/page_hash.h)
  // A remote tier under the local ones (runtime/remote_pages.h); must outlive the runtime.
  RemotePages* remote = nullptr;

  // No host tier; `events` told of every change (nullptr: nobody).
  static TierConfig with_events(TierEvents* events) {
    TierConfig tiers;
    if (events != nullptr) tiers.events.push_back(events);
    return tiers;
  }
};

using LoadTicket = CopyTicket;  // 0: nothing to wait for

// What the caller of admit will compute, which decides how much of the prompt admit matches and
// allocates.
enum class AdmitMode : uint8_t {
  // An engine: it computes the rest of the prompt, then decodes. The match stops at reuse_cut()
  // (the last prompt token's logits are needed), and admit allocates a page for every prompt token
  // beyond the device match, all or nothing (kNoSpace, kTooLarge).
  kCompute,
  // A cache given KV computed elsewhere, as the cache-mode replay models it (docs/design.md,
  // "Cache mode"): the match takes every whole page of the prompt, and admit allocates pages for
  // the whole pages after it only, as many as the pool can give once everything evictable is
  // evicted (AdmitResult::uncached_pages: the rest, which the caller does not cache). The partial
  // last page is neither matched nor cached, and the sequence cannot decode (append_token throws).
  // kNoSpace only when a host run to load finds no device pages; never kTooLarge. The prompt is
  // read in place, not copied: the caller keeps it alive and unchanged until the sequence ends.
  kCacheOnly,
};

struct Request {
  uint64_t id = 0;  // the caller's label, used in error messages; need not be unique
  Namespace name_space = 0;
  std::span<const TokenId> prompt;
  int32_t priority = kDefaultPriority;
  // What the caller knows of the request, handed to the policy (AccessHint): the answer's length
  // and a request class; 0 when unknown.
  uint32_t output_tokens = 0;
  uint16_t request_class = 0;
  // The session the request belongs to (an agent's conversation) and, within it, the sub-agent
  // (0: the main agent), as the caller numbers them; 0 when it has none. Kept with the sequence
  // (SequenceView) for the caller. With RuntimeConfig::retention, each commit names the end of the
  // committed path as the session's and sub-agent's (hold()); sessions must then be < 2^32.
  uint64_t session = 0;
  uint32_t agent = 0;
  AdmitMode mode = AdmitMode::kCompute;
  // Retention hints, TensorRT-LLM's TokenRangeRetentionConfig (eviction/retention.h): each commit
  // asks the policy to keep every node of the committed path that holds a page with a token of a
  // range at the range's priority until now + its duration (a node under several ranges gets
  // the strongest priority for the longest deadline; pages reused from the cache count as
  // committed). Needs RuntimeConfig::retention; admit copies them.
  std::span<const TokenRangeRetention> retention = {};
};

enum class RuntimeStatus : uint8_t { kOk, kNoSpace, kTooLarge };
std::string_view to_string(RuntimeStatus status);

struct AdmitResult {
  RuntimeStatus status = RuntimeStatus::kOk;
  SeqHandle seq;                        // valid only when ok()
  uint32_t reused_tokens = 0;           // KV taken from the cache, from either tier
  uint32_t position_offset = 0;         // first position to compute; == reused_tokens
  uint32_t device_hit_tokens = 0;       // of reused_tokens: already on the device
  uint32_t host_hit_tokens = 0;         // of reused_tokens: loaded from the host tier
  uint32_t remote_hit_tokens = 0;       // of reused_tokens: loaded from the remote tier
  uint32_t partial_hit_tokens = 0;      // of reused_tokens: copied from part of a cached page
  LoadTicket load_ticket = 0;           // compute only once load_done(load_ticket)
  std::span<const PageId> block_table;  // valid until the sequence changes
  uint64_t evicted_pages = 0;           // cache pages evicted to make room (also when refused)
  uint64_t short_pages = 0;             // when refused: pages still missing
  uint32_t uncached_pages = 0;          // kCacheOnly: whole prompt pages that got no page
  bool ok() const noexcept { return status == RuntimeStatus::kOk; }
};

struct ExtendResult {
  RuntimeStatus status = RuntimeStatus::kOk;
  bool new_page = false;  // a page was allocated for the token
  uint64_t evicted_pages = 0;
  bool ok() const noexcept { return status == RuntimeStatus::kOk; }
};

struct CommitResult {
  uint32_t new_pages = 0;        // pages the tree took from this sequence
  uint32_t duplicate_pages = 0;  // pages the tree already had: switched and released
};

struct RuntimeStats {
  uint64_t admits = 0;
  uint64_t admit_no_space = 0;
  uint64_t admit_too_large = 0;
  uint64_t extend_no_space = 0;
  uint64_t finishes = 0;
  uint64_t aborts = 0;
  uint64_t prompt_tokens = 0;      // over admitted requests
  uint64_t reused_tokens = 0;      // prompt tokens served from the cache
  uint64_t device_hit_tokens = 0;  // of which on the device at admit
  uint64_t host_hit_tokens = 0;    // of which loaded from the host tier
  uint64_t remote_hit_tokens = 0;  // of which loaded from the remote tier
  uint64_t prefill_tokens = 0;     // prompt tokens to compute: prompt - reused
  uint64_t decode_tokens = 0;      // tokens appended by append_token
  uint64_t committed_pages = 0;    // pages handed to the tree
  uint64_t duplicate_pages = 0;    // computed pages the tree already had
  uint64_t evicted_pages = 0;      // by allocation, watermarks and evict()
  uint64_t uncached_pages = 0;     // kCacheOnly admits: whole prompt pages that got no page
  uint64_t peak_cached_pages = 0;  // the most device pages cached at once (after an insert)
  // Admits whose remote lookup was cut short (or skipped) because the host pool had too few
  // pages to stage the run in, even after host eviction: the pages past them were misses.
  uint64_t remote_no_staging = 0;
  // Of reused_tokens: copied from part of a cached page (partial-page reuse).
  uint64_t partial_hit_tokens = 0;
  uint64_t holds = 0;     // hold() calls taken (session holds)
  uint64_t releases = 0;  // release() calls taken
};

class PrefixCacheRuntime {
 public:
  // `pool` (and the host tier's pool and copier) must outlive the runtime. Throws
  // std::invalid_argument for a bad budget, policy (a factory that returns none is one), write
  // policy or host tier, a remote tier over a device pool on a GPU without a host tier (its
  // pages have to be staged through host memory), std::logic_error when the pool or the host
  // tier's pool is in use (above: another runtime's device or host pool, or pages held).
  PrefixCacheRuntime(PagePool& pool, const RuntimeConfig& config = {},
                     const TierConfig& tiers = {});
  ~PrefixCacheRuntime();
  PrefixCacheRuntime(const PrefixCacheRuntime&) = delete;
  PrefixCacheRuntime& operator=(const PrefixCacheRuntime&) = delete;

  AdmitResult admit(const Request& request);
  ExtendResult append_token(SeqHandle seq, TokenId token);
  void mark_computed(SeqHandle seq, uint32_t computed_tokens);
  CommitResult commit(SeqHandle seq, uint32_t computed_tokens);
  CommitResult finish(SeqHandle seq);
  void abort(SeqHandle seq);

  // With a remote tier: starts looking up, in the background, the pages of `request`'s prompt
  // that follow what the local tiers hold now (RemotePages::prefetch), so that its admit later
  // need not wait for the store. A scheduler calls it when it queues the request. No side effect
  // on the cache; nothing without a remote tier.
  void prefetch(const Request& request);

  // Loading from the host (or, through it, the remote) tier: whether the copies of `ticket` (from
  // admit) are done; wait_load blocks until they are. Ticket 0 is always done.
  bool load_done(LoadTicket ticket);
  void wait_load(LoadTicket ticket);
  // Drops every cached page of every tier (TierEvents::cleared()). Throws std::logic_error while
  // a sequence is live.
  void clear_cache();

  // Throws std::logic_error unless `seq` is live.
  SequenceView view(SeqHandle seq) const;
  bool is_live(SeqHandle seq) const;
  // The state a handle's sequence ended in (or kRunning); nullopt for a handle never issued or
  // whose slot has been reused since.
  std::optional<SeqState> state(SeqHandle seq) const;
  uint32_t live_sequences() const noexcept { return live_; }

  // The caller's clock in seconds (a trace's arrival times), passed to the policy with every access
  // (AccessHint::now) from now on, and to the policy at once (EvictionPolicy::set_now), so that a
  // retention deadline that passed is not counted by the next admit's evictions; policies with a
  // retention period read it. Starts at 0.
  void set_now(double seconds);
  double now() const noexcept { return now_; }

  // Session holds (RuntimeConfig::retention; eviction/retention_layer.h): keep the path that
  // `session`'s sub-agent `agent` (Request::session and Request::agent) last committed for
  // `seconds` from now, as a soft protection bounded by the layer's hold share, e.g. while its
  // agent runs a tool; release() ends it (and forgets the session), as does the hold's deadline;
  // a later hold replaces it. A session with no committed path is ignored. Throws
  // std::logic_error without a retention layer, std::invalid_argument for seconds < 0 or NaN
  // (infinity holds until release) or a session >= 2^32.
  void hold(uint64_t session, double seconds, uint32_t agent = 0);
  void release(uint64_t session, uint32_t agent = 0);
  bool has_retention() const noexcept { return retention_; }

  // Evicts up to n evictable device cache pages in policy order (to the host tier under
  // write-back); returns how many were released. `evicted`, when given, gets the device page of
  // every step appended, in order.
  uint64_t evict(uint64_t pages, std::vector<PageId>* evicted = nullptr);

  // --- Callers that keep their own requests (python/src/slot_trie.h: SGLang's RadixCache over
  // the engine's KV slots, whose scheduler locks nodes itself). RadixTree's calls
  // (radix/radix_tree.h), made through the runtime so that tiers, observers, the budget and the
  // clock apply as they do to sequences; each ends the call as admit does (host watermarks, one
  // batch of events). The hint's `now` is the runtime's clock (set_now). A node locked here is the
  // caller's to unlock; the runtime's end releases everything regardless.
  MatchResult match(Namespace ns, std::span<const TokenId> tokens, std::vector<PageId>* pages,
                    AccessHint hint = {});
  // `pages` (one per whole page of `tokens`) are held by the caller, who releases them afterwards:
  // the tree takes its own reference on the ones it indexes (RadixTree::insert). Evicts down to
  // the low watermark once above the high one, as commit does.
  InsertResult insert(Namespace ns, std::span<const TokenId> tokens, std::span<const PageId> pages,
                      AccessHint hint = {});
  void lock(RadixNode* node);
  void unlock(RadixNode* node);
  // With a host tier: makes the host run of the match ending at `end` (which the caller has
  // locked) device pages of the trie, taking `pages` (fresh device pages the caller holds, one per
  // host-only page on the path, in path order; the tree takes its own reference on each), and
  // starts the copies host -> device. Returns their ticket (load_done / wait_load; 0 when there
  // was nothing to load). RadixTree::load's errors.
  LoadTicket load(RadixNode* end, std::span<const PageId> pages);

  // The admit cut: the most tokens of a `prompt_tokens`-token prompt that admit takes from the
  // cache, floor((prompt_tokens - 1) / P) * P, so that the last prompt token is always computed.
  uint32_t reuse_cut(std::size_t prompt_tokens) const;
  // What admit would reuse of `prompt` in `ns` if called now, in tokens, without any side effect
  // (no access recorded, no split): schedulers rank waiting requests with it.
  uint32_t cached_prefix(Namespace ns, std::span<const TokenId> prompt) const;

  // Walks the tree and every live sequence; throws std::logic_error describing the first page
  // whose refcount is not (tree reference) + (block tables holding it), a sequence whose committed
  // pages and tokens are not exactly the path to its locked node, or a broken identity
  // capacity == free + cached + private; with a host tier, the same for host pages against the
  // tree and the copies in flight. Returns the private page count.
  uint64_t check_accounting() const;

  // Read-only views. The tree is for dumps, verify() and its statistics; only the runtime
  // changes it.
  const RuntimeStats& stats() const noexcept { return stats_; }
  // What an engine exports (runtime/runtime_metrics.h): the counters above, the tiers' pages and
  // bytes, the latencies of admit, commit and finish, the live curve when configured; and their
  // Prometheus text (docs/metrics.md names every family).
  RuntimeMetrics metrics() const;
  void write_metrics(std::ostream& out) const;
  // Starts the live miss-ratio curve afresh (metrics/prompt_mrc.h, docs/metrics.md): from now on
  // every admitted prompt feeds it, and it gives the LRU hit rate at 1/4x to 8x the cache's size
  // (its budget, plus the host tier's), at the fixed memory of `config` (518 KiB by default).
  // Off until called: it costs about as much as admit itself (docs/metrics.md, "Cost"). Throws
  // std::invalid_argument for a bad config or a cache of fewer than 4 pages.
  void start_miss_ratio_curve(const metrics::ShardsConfig& config = {});
  // Admit, commit and finish time themselves into their latency histograms one call in `every`,
  // drawn at random (1: every call; 0: none). Two clock reads cost tens of ns on bare metal but
  // hundreds under a loaded VM's kvm-clock (docs/metrics.md, "Cost"), and a sample gives the
  // same quantiles: the histograms' counts are the sampled calls.
  static constexpr uint32_t kDefaultTimingPeriod = 8;
  void time_calls(uint32_t every) noexcept { timing_period_ = every; }
  uint32_t timing_period() const noexcept { return timing_period_; }
  // The live curve; nullptr until start_miss_ratio_curve().
  const metrics::PromptMrc* miss_ratio_curve() const noexcept { return curve_.get(); }
  uint32_t page_tokens() const noexcept { return page_tokens_; }
  uint64_t cached_pages() const noexcept { return tree_.cached_pages(); }
  // Cached pages no live sequence pins: what eviction could free for an allocation now.
  uint64_t evictable_pages() const noexcept { return tree_.evictable_pages(); }
  const RadixTree& tree() const noexcept { return tree_; }
  const PagePool& pool() const noexcept { return pool_; }
  const CacheBudget& budget() const { return allocator_.budget(); }
  // The host tier's budget; nullptr without a host tier.
  const CacheBudget* host_budget() const { return host_budget_ ? &*host_budget_ : nullptr; }

 private:
  friend struct detail::RuntimeInternals;
  detail::Sequence& live(SeqHandle seq, const char* operation);
  const detail::Sequence& live(SeqHandle seq, const char* operation) const;
  CommitResult insert_computed(detail::Sequence& s, PathAccess access = PathAccess::kRecorded);
  AccessHint access_hint(const detail::Sequence& s) const;
  // Throws std::logic_error, naming the page, if the pool no longer counts one of the sequence's
  // private pages as held (a release behind the runtime's back).
  void check_private_pages_held(const detail::Sequence& s, const char* operation) const;
  void release_sequence(detail::Sequence& s, SeqState end_state);
  void check_computed(const detail::Sequence& s, uint32_t computed_tokens,
                      const char* operation) const;
  AccessHint hint_for(const Request& request) const;
  void apply_retention(const detail::Sequence& s);
  void end_call();
  void check_host_accounting() const;
  uint32_t load_remote(detail::Sequence& s, uint32_t local_pages, uint32_t cut_pages);
  uint32_t reuse_partial_page(detail::Sequence& s);
  uint32_t load_remote_staged(const PageHash& parent, std::span<const TokenId> tokens,
                              std::span<const PageId> device_pages, CopyTicket& ticket);
  void retire_loads();
  // `histogram` when this call is one of the timed ones (time_calls), else nullptr.
  metrics::LatencyHistogram* timed(metrics::LatencyHistogram& histogram) noexcept;

  PagePool& pool_;
  PagePool::Claim claim_;  // before tree_: held until the tree has released its pages
  std::optional<PagePool::Claim> host_claim_;  // the host tier's pool, likewise
  uint32_t page_tokens_;
  std::unique_ptr<PageCopier> own_copier_;      // when TierConfig names none; outlives tree_
  std::unique_ptr<PageCopier> partial_copier_;  // within pool_: partial-page reuse, when on
  RadixTree tree_;
  TreeEvictor tree_evictor_;    // the budget's view of tree_
  TreeLedger tree_ledger_;      // the quota layer's, when RuntimeConfig::quotas are given
  HostTreeLedger host_ledger_;  // the host quota layer's, when HostTierConfig::quotas are given
  BudgetedAllocator allocator_;
  std::optional<CacheBudget> host_budget_;
  std::vector<detail::Sequence> slots_;
  std::vector<uint32_t> free_slots_;
  uint32_t live_ = 0;
  double now_ = 0.0;
  bool retention_ = false;  // the device policy is a RetentionLayer
  RuntimeStats stats_;
  struct Latencies {
    metrics::LatencyHistogram admit, commit, finish;
  } latencies_;
  uint32_t timing_period_ = kDefaultTimingPeriod;
  uint64_t timing_draw_ = 0x9E3779B97F4A7C15ull;  // an LCG's state: which calls are timed
  std::unique_ptr<metrics::PromptMrc> curve_;
  std::vector<PageId> scratch_pages_;  // duplicates to release, reused across commits
  RemotePages* remote_ = nullptr;
  std::vector<PageHash> remote_hashes_;  // scratch for remote lookups
  // With a remote and a host tier: remote pages reach the device through the host pool (after
  // tree_: its copies are waited for, and their pages released, before the tree goes).
  PagePool* host_pool_ = nullptr;
  std::unique_ptr<detail::RemoteStaging> staging_;
  std::vector<PageId> staging_pages_;  // scratch: the staging pages of one load
  // The tiers below's counters when this runtime attached them: metrics() reports what they
  // gained since (RemotePages::add_metrics).
  std::vector<LowerTierMetrics> lower_attached_;
};

}  // namespace radixkv
