#include "sim/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <utility>

#include "common/splitmix64.h"

namespace radixkv {

namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Runs `call`, adding its duration in nanoseconds to `sink` when timing is on.
template <typename Call>
auto timed(bool on, std::vector<uint64_t>& sink, Call&& call) {
  using Clock = std::chrono::steady_clock;
  if (!on) return call();
  const Clock::time_point start = Clock::now();
  auto result = call();
  sink.push_back(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count()));
  return result;
}

}  // namespace

std::string_view to_string(SchedulePolicy policy) {
  switch (policy) {
    case SchedulePolicy::kFcfs:
      return "fcfs";
    case SchedulePolicy::kLpm:
      return "lpm";
  }
  return "unknown";
}

std::string_view to_string(SchedPhase phase) {
  switch (phase) {
    case SchedPhase::kWaiting:
      return "waiting";
    case SchedPhase::kPrefill:
      return "prefill";
    case SchedPhase::kDecode:
      return "decode";
  }
  return "unknown";
}

void SchedulerConfig::validate() const {
  const auto require = [](bool ok, const char* field, uint64_t value) {
    if (!ok) {
      throw std::invalid_argument(
          fmt::format("SchedulerConfig: {} is {}, it must be at least 1", field, value));
    }
  };
  require(max_running >= 1, "max_running", max_running);
  require(chunk_tokens >= 1, "chunk_tokens", chunk_tokens);
  require(scan_limit >= 1, "scan_limit", scan_limit);
  require(max_preemptions >= 1, "max_preemptions", max_preemptions);
}

SchedulerConfig SchedulerConfig::from_schedule(std::string_view name) {
  SchedulerConfig config;
  if (name == "fcfs") {
    config.policy = SchedulePolicy::kFcfs;
  } else if (name == "lpm") {
    config.policy = SchedulePolicy::kLpm;
  } else if (name == "share") {
    config.policy = SchedulePolicy::kFcfs;
    config.share_prefixes = true;
  } else if (name == "lpm-share") {
    config.policy = SchedulePolicy::kLpm;
    config.share_prefixes = true;
  } else {
    throw std::invalid_argument(
        fmt::format("unknown schedule '{}' (known: fcfs, lpm, share, lpm-share)", name));
  }
  return config;
}

uint64_t Scheduler::pages_needed(std::size_t prompt, std::size_t answer, uint32_t page_tokens) {
  // The last sampled answer token is never fed back, so a sequence holds at most
  // prompt + answer - 1 tokens (the prompt alone when there is no answer).
  const uint64_t tokens = prompt + std::max<std::size_t>(answer, 1) - 1;
  return ceil_div(tokens, page_tokens);
}

Scheduler::Scheduler(PrefixCacheRuntime& runtime, const SchedulerConfig& config)
    : runtime_(runtime), config_(config), page_tokens_(runtime.page_tokens()) {
  config_.validate();
}

Scheduler::~Scheduler() {
  for (uint32_t index : running_) runtime_.abort(entries_[index].seq);
}

bool Scheduler::submit(SchedRequest request) {
  if (request.prompt.empty()) {
    throw std::invalid_argument(
        fmt::format("Scheduler::submit: request {} has an empty prompt", request.id));
  }
  if (request.priority < kMinPriority || request.priority > kMaxPriority) {
    throw std::invalid_argument(
        fmt::format("Scheduler::submit: request {} has priority {}, outside [{}, {}]", request.id,
                    request.priority, kMinPriority, kMaxPriority));
  }
  ++stats_.submitted;
  if (pages_needed(request.prompt.size(), request.answer.size(), page_tokens_) >
      runtime_.pool().capacity_pages()) {
    ++stats_.rejected;
    return false;
  }
  const uint32_t index = new_entry();
  Entry& e = entries_[index];
  e.request = std::move(request);
  e.tokens = e.request.prompt;
  e.order = next_order_++;
  enqueue(index);
  return true;
}

uint32_t Scheduler::new_entry() {
  if (free_entries_.empty()) {
    entries_.emplace_back();
    return static_cast<uint32_t>(entries_.size() - 1);
  }
  const uint32_t index = free_entries_.back();
  free_entries_.pop_back();
  entries_[index] = Entry{};
  return index;
}

void Scheduler::free_entry(uint32_t index) {
  // Give the token buffers back now: a finished request's prompt can be long.
  entries_[index] = Entry{};
  free_entries_.push_back(index);
}

void Scheduler::enqueue(uint32_t index) {
  Entry& e = entries_[index];
  e.phase = Phase::kWaiting;
  e.queued_step = stats_.steps;
  waiting_.emplace(e.order, index);
  stats_.peak_waiting = std::max<uint64_t>(stats_.peak_waiting, waiting_.size());
}

std::vector<SchedRequestState> Scheduler::requests() const {
  std::vector<SchedRequestState> out;
  out.reserve(running_.size() + waiting_.size());
  const auto state_of = [&](uint32_t index) {
    const Entry& e = entries_[index];
    const bool waiting = e.phase == Phase::kWaiting;
    return SchedRequestState{e.request.id,
                             e.phase,
                             static_cast<uint32_t>(e.tokens.size()),
                             e.computed,
                             waiting ? 0 : runtime_.view(e.seq).reused_tokens,
                             e.sampled,
                             e.preemptions,
                             waiting && urgent(e)};
  };
  for (uint32_t index : running_) out.push_back(state_of(index));
  for (const auto& [order, index] : waiting_) out.push_back(state_of(index));
  return out;
}

bool Scheduler::urgent(const Entry& e) const {
  return e.preemptions >= config_.max_preemptions ||
         stats_.steps - e.queued_step > config_.starve_steps;
}

const StepReport& Scheduler::step() {
  report_.prefill_tokens = 0;
  report_.decode_tokens = 0;
  report_.admitted.clear();
  report_.first_admitted.clear();
  report_.held.clear();
  report_.first_token.clear();
  report_.finished.clear();
  report_.rejected.clear();
  report_.preempted.clear();
  ++stats_.steps;

  chunked_.clear();
  decoded_.clear();
  decode();
  uint64_t budget = config_.chunk_tokens;
  prefill(budget);
  admit(budget);
  end_step();

  report_.running = static_cast<uint32_t>(running_.size());
  stats_.peak_running = std::max<uint64_t>(stats_.peak_running, running_.size());
  return report_;
}

void Scheduler::decode() {
  done_.assign(running_.begin(), running_.end());
  for (uint32_t index : done_) {
    const Entry& e = entries_[index];
    // A request preempted earlier in this loop is waiting now; skip it.
    if (e.phase == Phase::kDecode) feed(index);
  }
}

void Scheduler::feed(uint32_t index) {
  Entry& e = entries_[index];
  const TokenId token = e.request.answer[e.sampled - 1];
  while (true) {
    if (runtime_.append_token(e.seq, token).ok()) break;
    // The pool is out of pages even after evicting every evictable cache page.
    const uint32_t victim = pick_victim();
    preempt(victim);
    if (victim == index) return;
  }
  // This step computes the fed token's KV and samples the next one (end_step records both).
  e.fed_this_step = true;
  decoded_.push_back(index);
  ++report_.decode_tokens;
  ++stats_.decode_tokens;
}

void Scheduler::end_step() {
  // The batch has run: chunks' KV is written now, so it is committed (and visible to the next
  // step's admissions) only now.
  for (uint32_t index : chunked_) {
    Entry& e = entries_[index];
    if (config_.use_cache) {
      runtime_.commit(e.seq, e.computed);
    } else {
      runtime_.mark_computed(e.seq, e.computed);
    }
    if (e.computed == e.tokens.size()) prompt_done(index);
  }
  for (uint32_t index : decoded_) {
    Entry& e = entries_[index];
    if (!e.fed_this_step) continue;  // preempted later in the decode loop
    e.fed_this_step = false;
    runtime_.mark_computed(e.seq, static_cast<uint32_t>(runtime_.view(e.seq).tokens.size()));
    ++e.sampled;
    if (e.sampled == e.request.answer.size()) finish(index);
  }
}

uint32_t Scheduler::pick_victim() const {
  const auto effective = [&](const Entry& e) {
    return e.preemptions >= config_.max_preemptions ? kMaxPriority + 1 : e.request.priority;
  };
  uint32_t victim = running_.front();
  for (uint32_t index : running_) {
    const Entry& e = entries_[index];
    const Entry& v = entries_[victim];
    if (effective(e) < effective(v) ||
        (effective(e) == effective(v) && e.admitted_at > v.admitted_at)) {
      victim = index;
    }
  }
  return victim;
}

void Scheduler::preempt(uint32_t index) {
  Entry& e = entries_[index];
  if (config_.use_cache) {
    // Keep what it computed: its full pages go to the cache, unlocked, before it lets go.
    runtime_.commit(e.seq, runtime_.view(e.seq).computed_tokens);
  }
  runtime_.abort(e.seq);
  release_share(e);
  remove_running(index);
  if (e.loading) {
    e.loading = false;
    --loading_;
  }
  if (e.fed_this_step) {
    // Its fed token will not be computed in this batch after all: do not count (or price) it.
    e.fed_this_step = false;
    --report_.decode_tokens;
    --stats_.decode_tokens;
  }
  // Resume where it was: the answer tokens sampled so far become part of the prompt.
  const std::size_t resumed = e.tokens.size() - e.request.prompt.size();
  e.tokens.insert(e.tokens.end(), e.request.answer.begin() + static_cast<std::ptrdiff_t>(resumed),
                  e.request.answer.begin() + e.sampled);
  e.computed = 0;
  e.seq = {};
  ++e.preemptions;
  report_.preempted.push_back(e.request.id);
  ++stats_.preemptions;
  enqueue(index);
}

void Scheduler::prefill(uint64_t& budget) {
  done_.assign(running_.begin(), running_.end());
  for (uint32_t index : done_) {
    if (budget == 0) return;
    Entry& e = entries_[index];
    if (e.phase == Phase::kPrefill) run_chunk(index, budget);
  }
}

void Scheduler::run_chunk(uint32_t index, uint64_t& budget) {
  Entry& e = entries_[index];
  if (e.loading) {
    if (!gate_.ready(e.request.id)) return;
    e.loading = false;
    --loading_;
  }
  const uint32_t length = static_cast<uint32_t>(e.tokens.size());
  const uint32_t chunk = static_cast<uint32_t>(std::min<uint64_t>(length - e.computed, budget));
  e.computed += chunk;
  budget -= chunk;
  report_.prefill_tokens += chunk;
  stats_.prefill_tokens += chunk;
  chunked_.push_back(index);
}

void Scheduler::prompt_done(uint32_t index) {
  Entry& e = entries_[index];
  release_share(e);
  if (e.sampled == 0) report_.first_token.push_back(e.request.id);
  if (e.request.answer.empty()) {
    finish(index);
    return;
  }
  // The last prompt token's logits give the next answer token.
  ++e.sampled;
  if (e.sampled == e.request.answer.size()) {
    finish(index);
  } else {
    e.phase = Phase::kDecode;
  }
}

void Scheduler::finish(uint32_t index) {
  Entry& e = entries_[index];
  if (finish_hook_) finish_hook_(e.request, runtime_.view(e.seq));
  timed(config_.time_calls, finish_ns_, [&] {
    if (config_.use_cache) {
      runtime_.finish(e.seq);
    } else {
      runtime_.abort(e.seq);
    }
    return 0;
  });
  release_share(e);
  report_.finished.push_back(e.request.id);
  ++stats_.finished;
  remove_running(index);
  free_entry(index);
}

void Scheduler::remove_running(uint32_t index) {
  running_.erase(std::find(running_.begin(), running_.end(), index));
}

void Scheduler::release_share(Entry& e) {
  if (!e.in_sharing) return;
  const auto it = sharing_.find(e.share_key);
  if (--it->second == 0) sharing_.erase(it);
  e.in_sharing = false;
}

uint32_t Scheduler::cached_prefix(const Entry& e) const {
  if (!config_.use_cache) return 0;
  return runtime_.cached_prefix(e.request.name_space, e.tokens);
}

uint64_t Scheduler::share_key_of(const Entry& e, uint32_t cached) const {
  // Only a whole page that admit could ever reuse counts: pages below the cut of admit.
  if (cached + page_tokens_ > runtime_.reuse_cut(e.tokens.size())) return 0;
  uint64_t h = splitmix64(e.request.name_space ^ splitmix64(cached));
  for (uint32_t i = cached; i < cached + page_tokens_; ++i) {
    h = splitmix64(h ^ static_cast<uint32_t>(e.tokens[i]));
  }
  return h | 1;  // 0 means "no key"
}

void Scheduler::admit(uint64_t& budget) {
  if (budget == 0 || running_.size() >= config_.max_running || waiting_.empty()) return;
  const auto full = [&] { return budget == 0 || running_.size() >= config_.max_running; };
  const bool lpm = config_.policy == SchedulePolicy::kLpm && config_.use_cache &&
                   waiting_.size() <= config_.lpm_max_queue;
  if (lpm) {
    ++stats_.lpm_steps;
    candidates_.clear();
    for (const auto& [order, index] : waiting_) {
      if (candidates_.size() == config_.scan_limit) break;
      const Entry& e = entries_[index];
      candidates_.push_back({index, cached_prefix(e), urgent(e)});
    }
    // Urgent first in submission order, then the longest cached prefix; stable, so every tie
    // keeps submission order.
    std::stable_sort(candidates_.begin(), candidates_.end(),
                     [](const Candidate& a, const Candidate& b) {
                       if (a.urgent != b.urgent) return a.urgent;
                       return !a.urgent && a.cached > b.cached;
                     });
    for (const Candidate& c : candidates_) {
      if (full() || !try_admit(c.entry, c.urgent, budget)) return;
    }
    return;
  }
  // fcfs: submission order already puts every request before all later ones (a requeued one
  // keeps its place), so urgency only exempts a request from being held. Walked lazily: the walk
  // usually stops at the first request, on memory or budget.
  uint32_t examined = 0;
  for (auto it = waiting_.begin(); it != waiting_.end() && examined < config_.scan_limit;
       ++examined) {
    if (full()) return;
    const uint32_t index = it->second;
    ++it;  // try_admit may erase the request from waiting_
    if (!try_admit(index, urgent(entries_[index]), budget)) return;
  }
}

bool Scheduler::try_admit(uint32_t index, bool urgent, uint64_t& budget) {
  const PagePool& pool = runtime_.pool();
  Entry& e = entries_[index];
  // Walked again even when lpm has scored it: an admission earlier in this step may have evicted
  // part of it, and the check below must not count evicted pages as cached.
  const uint32_t cached = cached_prefix(e);
  uint64_t key = 0;
  if (config_.share_prefixes && config_.use_cache) {
    key = share_key_of(e, cached);
    if (key != 0 && !urgent && sharing_.contains(key)) {
      report_.held.push_back(e.request.id);
      ++stats_.held;
      return true;
    }
  }
  // Leave a page of decode room per running request, and do not ask the runtime for what it
  // surely cannot give: a refused admit has already evicted the whole evictable cache.
  // (The matched pages may be evictable now and locked by the admit, so this can pass and the
  // admit still fail; it never refuses what the admit would grant without the reserve.)
  const uint64_t available = pool.free_pages() + runtime_.evictable_pages();
  const uint64_t wanted =
      ceil_div(e.tokens.size(), page_tokens_) - cached / page_tokens_ + running_.size();
  if (available < wanted && !running_.empty()) return false;

  const AdmitResult r = timed(config_.time_calls, admit_ns_, [&] {
    return runtime_.admit({e.request.id, e.request.name_space, e.tokens, e.request.priority});
  });
  if (r.status == RuntimeStatus::kNoSpace) return false;
  waiting_.erase(e.order);
  if (r.status == RuntimeStatus::kTooLarge) {
    report_.rejected.push_back(e.request.id);
    ++stats_.rejected;
    free_entry(index);
    return true;
  }
  e.seq = r.seq;
  e.phase = Phase::kPrefill;
  e.computed = r.reused_tokens;
  e.admitted_at = next_admission_++;
  running_.push_back(index);
  report_.admitted.push_back(e.request.id);
  if (e.first_admission) {
    e.first_admission = false;
    ++stats_.admitted;
    stats_.prompt_tokens += e.tokens.size();
    stats_.hit_tokens += r.reused_tokens;
    report_.first_admitted.push_back({e.request.id, r.reused_tokens});
    stats_.host_hit_tokens += r.host_hit_tokens;
    stats_.remote_hit_tokens += r.remote_hit_tokens;
  } else {
    ++stats_.readmitted;
  }
  if (key != 0) {
    ++sharing_[key];
    e.in_sharing = true;
    e.share_key = key;
  }
  if (gate_.ready) {
    gate_.admitted(e.request.id, r);
    e.loading = true;
    ++loading_;
  }
  run_chunk(index, budget);
  return true;
}

}  // namespace radixkv
