// Scheduler: a reference continuous-batching scheduler that embeds the prefix cache through
// PrefixCacheRuntime. The model is simulated: a step computes token counts, and each request
// carries the answer tokens its decode will produce (SchedRequest::answer). It knows nothing of
// time; the engine replay (tools/replay/engine_replay.h) prices each step with a cost model.
// docs/engine.md states the rules below with their reasons.
//
// A step, in this order:
//   1. Decode: every request whose prefill is done feeds its last sampled answer token
//      (append_token: a page when the last one is full) and samples the next. When the pool has
//      no page, a victim is preempted (below) and the append retried; the victim may be the
//      request itself.
//   2. Prefill: running requests still in prefill get chunks, oldest admission first, within the
//      step's budget of `chunk_tokens` prefill tokens (decode tokens do not count against it).
//      The budget goes to one prompt at a time (here and in admission), so at the end of a step
//      at most one request is part way through its prefill.
//   3. Admission: waiting requests in policy order, while budget remains and fewer than
//      `max_running` run; each admitted request gets its first chunk this step. A request is
//      tried only when free + evictable pages cover its uncached pages (as cached when it is
//      tried) plus one page of decode room per running request; that failing, or kNoSpace from
//      the runtime, stops admission for this step (nothing bypasses a request that waits for
//      memory). kTooLarge rejects it.
//   4. End of step: the batch has run. Chunks are committed to the cache only now (so requests
//      admitted in the same step do not see each other's pages, as in a real batch), in the
//      order they ran; then decoded tokens are marked computed and the next answer token is
//      sampled, in admission order. Requests complete (first_token, finished) in that order.
//   A request whose prefill completes samples its first answer token in that step (first_token
//   in StepReport). After sampling answer.size() tokens it finishes: the runtime caches its
//   prompt and every fed answer token (the last sampled one is never fed, so never cached).
//
// Ordering policies:
//   kFcfs  submission order.
//   kLpm   longest cached prefix first (PrefixCacheRuntime::cached_prefix: no side effect), ties
//          by submission order. Scoring costs a walk per waiting request, so past
//          `lpm_max_queue` waiting requests the step falls back to fcfs (SGLang does the same
//          past 128).
//   share_prefixes (with either order): when a waiting request's first uncached page (its
//          namespace, offset and tokens, hashed) equals that of a request admitted and still in
//          prefill (its first uncached page when it was admitted), it is held until no such
//          request is in prefill (each has committed its whole prompt, or was preempted), so
//          that it hits their pages instead of computing them a second time. O(1) per
//          candidate.
//   At most `scan_limit` waiting requests are examined per step.
//
// Preemption: when decode finds no page, the victim is the running request with the lowest
// effective priority, then the newest admission. Effective priority is the request's priority,
// or kMaxPriority + 1 once it has been preempted `max_preemptions` times (it is then protected).
// The victim's computed full pages are committed (they stay cached, unlocked), its sequence is
// aborted (every page reference released), and it is requeued at its original submission place
// with the answer tokens it sampled appended to its prompt, so it resumes where it was.
//
// No starvation: a waiting request is urgent once more than `starve_steps` steps have started
// since it was queued (submitted, or requeued by a preemption), or once it has been preempted
// `max_preemptions` times. Under lpm urgent requests are examined before all others, in
// submission order; under fcfs submission order already puts them before every later request.
// Urgent requests are never held; since admission stops at the first request that does not fit,
// no later request takes the memory an urgent one waits for. Running requests finish in finitely
// many steps, protected ones are preempted only after every unprotected one and then newest first,
// so the oldest protected request always completes.
//
// Copies (LoadGate): with a host tier an admission may load pages from the host, and under
// write-back the eviction that made room for it copies device pages to the host first; both take
// time on the caller's clock, which the scheduler does not keep. With a gate set, every admission
// is reported to it, and a request computes nothing until the gate says its copies are done (asked
// before each prefill chunk until it first says yes). Meanwhile it runs: it holds its pages, counts
// against max_running and may be preempted, but takes no prefill budget, so requests behind it
// compute (a load delays only the request that needs it).
//
// Caching off (use_cache = false): nothing is committed and requests end with abort, so the tree
// stays empty and every prompt is computed in full: the baseline for the cache's benefit.
//
// Requests that can never fit (ceil((prompt + answer - 1) / page_tokens) pages, the most a
// sequence holds, above the pool's capacity) are refused by submit(). Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/prefix_cache_runtime.h"

namespace radixkv {

enum class SchedulePolicy : uint8_t { kFcfs, kLpm };
std::string_view to_string(SchedulePolicy policy);

struct SchedulerConfig {
  SchedulePolicy policy = SchedulePolicy::kFcfs;
  bool share_prefixes = false;
  bool use_cache = true;
  uint32_t max_running = 256;    // running requests (prefill and decode), at least 1
  uint32_t chunk_tokens = 8192;  // prefill tokens per step, at least 1
  uint32_t lpm_max_queue = 128;  // lpm scores the queue only up to this length
  uint32_t scan_limit = 1024;    // waiting requests examined per step, at least 1
  uint32_t starve_steps = 2000;  // waiting longer than this makes a request urgent
  bool time_calls = false;       // record how long each runtime admit and finish takes
  uint32_t max_preemptions =
      3;  // preempted this often: urgent when waiting, protected when running

  // Throws std::invalid_argument naming the first field out of range.
  void validate() const;
  // Parses "fcfs", "lpm", "share" (fcfs + sharing) or "lpm-share"; throws std::invalid_argument
  // listing the known names.
  static SchedulerConfig from_schedule(std::string_view name);
};

struct SchedRequest {
  uint64_t id = 0;  // the caller's tag, reported back in StepReport
  Namespace name_space = 0;
  int32_t priority = kDefaultPriority;
  std::vector<TokenId> prompt;  // at least one token
  std::vector<TokenId> answer;  // the tokens decode samples, in order; may be empty
};

struct FirstAdmission {
  uint64_t id = 0;
  uint32_t reused_tokens = 0;  // prompt tokens taken from the cache
};

// What one step did. The id vectors are cleared at the start of every step; each lists ids in
// the order the step met them.
struct StepReport {
  uint64_t prefill_tokens = 0;        // prompt tokens computed in this step
  uint32_t decode_tokens = 0;         // sequences that decoded one token
  uint32_t running = 0;               // running requests at the end of the step
  std::vector<uint64_t> admitted;     // ids admitted (first admissions and readmissions)
  std::vector<uint64_t> held;         // ids held behind a request computing their page
  std::vector<uint64_t> first_token;  // ids whose first answer token was sampled
  std::vector<uint64_t> finished;     // ids that completed (answer fully sampled)
  std::vector<uint64_t> rejected;     // ids refused by the runtime as too large
  std::vector<uint64_t> preempted;    // ids preempted and requeued, in order
  // Of `admitted`, the first admissions and what each reused (SchedulerStats::hit_tokens sums it).
  std::vector<FirstAdmission> first_admitted;
  bool worked() const { return prefill_tokens > 0 || decode_tokens > 0; }
};

enum class SchedPhase : uint8_t { kWaiting, kPrefill, kDecode };
std::string_view to_string(SchedPhase phase);

// One request as the scheduler holds it (Scheduler::requests()): for tests and for a look inside.
struct SchedRequestState {
  uint64_t id = 0;
  SchedPhase phase = SchedPhase::kWaiting;
  uint32_t tokens = 0;    // the prompt to admit: the prompt, then answer tokens sampled before
                          // its last preemption
  uint32_t computed = 0;  // of those, tokens with KV (reused ones included); 0 while waiting
  uint32_t reused = 0;    // tokens its latest admission took from the cache; 0 while waiting
  uint32_t sampled = 0;   // answer tokens sampled so far
  uint32_t preemptions = 0;
  bool urgent = false;  // waiting and urgent (No starvation, above) as of the last step
  friend bool operator==(const SchedRequestState&, const SchedRequestState&) = default;
};

struct SchedulerStats {
  uint64_t steps = 0;
  uint64_t submitted = 0;
  uint64_t admitted = 0;    // first admissions
  uint64_t readmitted = 0;  // admissions after a preemption
  uint64_t finished = 0;
  uint64_t rejected = 0;  // by submit() or the runtime
  uint64_t preemptions = 0;
  uint64_t held = 0;               // candidate-steps held by sharing
  uint64_t lpm_steps = 0;          // admission rounds ordered by lpm (the rest fell back to fcfs)
  uint64_t prompt_tokens = 0;      // at first admission
  uint64_t hit_tokens = 0;         // reused at first admission
  uint64_t host_hit_tokens = 0;    // of which loaded from a host tier
  uint64_t remote_hit_tokens = 0;  // of which loaded from a remote tier
  uint64_t prefill_tokens = 0;     // computed, recomputation after preemption included
  uint64_t decode_tokens = 0;
  uint64_t peak_waiting = 0;
  uint64_t peak_running = 0;
};

// See "Copies" above. Both functions must be set.
struct LoadGate {
  std::function<void(uint64_t id, const AdmitResult& admitted)> admitted;
  std::function<bool(uint64_t id)> ready;
};

class Scheduler {
 public:
  // Called with a request and its live sequence just before it finishes (its tokens are the
  // prompt and every fed answer token). Tests use it to compare tokens.
  using FinishHook = std::function<void(const SchedRequest&, const SequenceView&)>;

  // `runtime` must outlive the scheduler. Throws std::invalid_argument for a bad config.
  Scheduler(PrefixCacheRuntime& runtime, const SchedulerConfig& config);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request. Returns false (and counts it rejected) when it can never fit the pool;
  // throws std::invalid_argument for an empty prompt or a priority out of range.
  bool submit(SchedRequest request);
  // Runs one step (see the header comment). The report is valid until the next step.
  const StepReport& step();

  bool idle() const { return running_.empty() && waiting_.empty(); }
  std::size_t waiting() const { return waiting_.size(); }
  std::size_t running() const { return running_.size(); }
  const SchedulerStats& stats() const { return stats_; }
  // Every request it holds: the running ones in admission order, then the waiting ones in
  // submission order. A copy; O(requests).
  std::vector<SchedRequestState> requests() const;
  const SchedulerConfig& config() const { return config_; }
  PrefixCacheRuntime& runtime() { return runtime_; }
  void set_finish_hook(FinishHook hook) { finish_hook_ = std::move(hook); }
  void set_load_gate(LoadGate gate) { gate_ = std::move(gate); }
  // Running requests whose copies the gate has not yet called done.
  uint32_t loading() const { return loading_; }
  // With config.time_calls: nanoseconds of every runtime admit (refusals included) and finish
  // (abort when caching is off), in call order.
  const std::vector<uint64_t>& admit_ns() const { return admit_ns_; }
  const std::vector<uint64_t>& finish_ns() const { return finish_ns_; }

  // The most pages a request can hold at once: ceil((prompt + answer - 1) / page_tokens).
  static uint64_t pages_needed(std::size_t prompt, std::size_t answer, uint32_t page_tokens);

 private:
  using Phase = SchedPhase;
  struct Entry {
    SchedRequest request;
    std::vector<TokenId> tokens;  // prompt to admit: the prompt, then answer[0, resumed)
    uint64_t order = 0;           // submission number: fcfs key, kept across preemption
    uint64_t admitted_at = 0;     // admission number: the newest is preempted first
    uint64_t queued_step = 0;
    uint32_t preemptions = 0;
    uint32_t sampled = 0;   // answer tokens sampled so far
    uint32_t computed = 0;  // prompt tokens with KV (prefill progress)
    bool first_admission = true;
    bool in_sharing = false;  // in prefill, counted under its share key in sharing_
    bool fed_this_step = false;
    bool loading = false;  // admitted, waiting for the gate to call its copies done
    uint64_t share_key = 0;
    Phase phase = Phase::kWaiting;
    SeqHandle seq;
  };
  struct Candidate {  // lpm's order
    uint32_t entry;
    uint32_t cached;  // cached prefix in tokens (runtime cached_prefix) when the order was made
    bool urgent;
  };

  bool urgent(const Entry& e) const;
  void decode();
  void feed(uint32_t index);
  void prefill(uint64_t& budget);
  void admit(uint64_t& budget);
  // Admits or holds one waiting request; false when admission must stop for this step.
  bool try_admit(uint32_t index, bool urgent, uint64_t& budget);
  // Gives the entry a chunk of prefill within the budget; end_step() commits it.
  void run_chunk(uint32_t index, uint64_t& budget);
  void end_step();
  void prompt_done(uint32_t index);
  void finish(uint32_t index);
  void preempt(uint32_t index);
  uint32_t pick_victim() const;
  void release_share(Entry& e);
  uint32_t cached_prefix(const Entry& e) const;
  uint64_t share_key_of(const Entry& e, uint32_t cached) const;
  void remove_running(uint32_t index);
  void enqueue(uint32_t index);
  uint32_t new_entry();
  void free_entry(uint32_t index);

  PrefixCacheRuntime& runtime_;
  SchedulerConfig config_;
  uint32_t page_tokens_;
  std::vector<Entry> entries_;
  std::vector<uint32_t> free_entries_;
  std::map<uint64_t, uint32_t> waiting_;            // submission number -> entry, fcfs order
  std::vector<uint32_t> running_;                   // admission order
  std::unordered_map<uint64_t, uint32_t> sharing_;  // share key -> requests in prefill with it
  std::vector<Candidate> candidates_;
  std::vector<uint32_t> done_;     // scratch: a copy of running_ to iterate while it changes
  std::vector<uint32_t> chunked_;  // entries given a prefill chunk in this step
  std::vector<uint32_t> decoded_;  // entries that fed a token in this step
  uint64_t next_order_ = 0;
  uint64_t next_admission_ = 0;
  StepReport report_;
  SchedulerStats stats_;
  FinishHook finish_hook_;
  LoadGate gate_;
  uint32_t loading_ = 0;
  std::vector<uint64_t> admit_ns_, finish_ns_;
};

}  // namespace radixkv
