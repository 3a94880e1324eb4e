// SchedulerModel: a naive reference of the scheduler's rules, written from the comments of
// sim/scheduler.h and sharing no code with sim/scheduler.cpp. Plain data: one vector of
// every request ever submitted, in submission order, never erased; each order the rules name
// (submission, admission, lpm's) is a linear scan or a sort of that vector; a share key is the
// page's namespace, offset and tokens themselves, compared in full (no hash).
//
// It drives a PrefixCacheRuntime of its own. Given a pool and runtime configured like those of a
// real Scheduler, and the same submissions, it makes the same runtime calls in the same order as
// long as the scheduler follows the rules, so both runtimes answer alike; the first rule the two
// read differently shows as a different step report, request state, statistic or runtime
// statistic (tests/test_scheduler_model.cpp compares all four after every step).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/scheduler.h"

namespace radixkv::testing {

class SchedulerModel {
 public:
  // `runtime` must be a fresh runtime of its own (not the real scheduler's) and outlive the model.
  SchedulerModel(PrefixCacheRuntime& runtime, const SchedulerConfig& config);
  ~SchedulerModel();

  bool submit(const SchedRequest& request);
  const StepReport& step();

  // As Scheduler::requests(): running requests in admission order, then waiting ones in
  // submission order.
  std::vector<SchedRequestState> requests() const;
  const SchedulerStats& stats() const { return stats_; }
  bool idle() const;

  // How often each rule decided something, so a test can tell it was exercised.
  struct Events {
    uint64_t memory_stops = 0;        // the memory check stopped admission
    uint64_t no_space_stops = 0;      // the runtime's kNoSpace stopped admission
    uint64_t protected_victims = 0;   // preempted while protected
    uint64_t self_preemptions = 0;    // the request that needed a page was the victim
    uint64_t urgent_admissions = 0;   // admitted while urgent
    uint64_t urgent_past_holder = 0;  // urgent, admitted though a request in prefill has its key
    uint64_t lpm_jumps = 0;           // lpm admitted a request before an earlier submitted one
  };
  const Events& events() const { return events_; }

 private:
  // The first page a request would compute: its namespace, offset and tokens.
  struct PageKey {
    Namespace name_space = 0;
    uint32_t offset = 0;
    std::vector<TokenId> tokens;
    friend bool operator==(const PageKey&, const PageKey&) = default;
  };
  struct Request {
    SchedRequest submitted;
    std::vector<TokenId> tokens;  // the prompt to admit
    uint64_t submission = 0;
    uint64_t admission = 0;
    uint64_t queued_at_step = 0;
    SchedPhase phase = SchedPhase::kWaiting;
    bool gone = false;  // finished or rejected
    bool ever_admitted = false;
    bool fed_this_step = false;
    bool has_key = false;  // admitted with a share key and still in prefill
    PageKey key;
    uint32_t computed = 0;
    uint32_t reused = 0;
    uint32_t sampled = 0;
    uint32_t preemptions = 0;
    SeqHandle seq;
  };

  std::vector<std::size_t> running_by_admission() const;
  std::vector<std::size_t> waiting_by_submission() const;
  std::size_t count_running() const;
  bool is_urgent(const Request& r) const;
  int32_t effective_priority(const Request& r) const;
  uint32_t cached_tokens(const Request& r) const;
  bool first_uncached_page(const Request& r, uint32_t cached, PageKey& key) const;

  void decode();
  void preempt(std::size_t victim);
  std::size_t choose_victim() const;
  void prefill(uint64_t& budget);
  void admission(uint64_t& budget);
  // False when admission stops for this step.
  bool try_to_admit(std::size_t index, bool urgent, uint64_t& budget);
  void give_chunk(std::size_t index, uint64_t& budget);
  void end_of_step();
  void prompt_complete(std::size_t index);
  void complete(std::size_t index);
  void queue(std::size_t index);

  PrefixCacheRuntime& runtime_;
  SchedulerConfig config_;
  uint32_t P_;
  std::vector<Request> all_;
  std::vector<std::size_t> chunked_, decoded_;  // this step's, in the order they ran
  uint64_t next_admission_ = 0;
  StepReport report_;
  SchedulerStats stats_;
  Events events_;
};

}  // namespace radixkv::testing
