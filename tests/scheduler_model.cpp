#include "tests/scheduler_model.h"

#include <algorithm>

namespace radixkv::testing {

SchedulerModel::SchedulerModel(PrefixCacheRuntime& runtime, const SchedulerConfig& config)
    : runtime_(runtime), config_(config), P_(runtime.page_tokens()) {}

SchedulerModel::~SchedulerModel() {
  for (std::size_t i : running_by_admission()) runtime_.abort(all_[i].seq);
}

bool SchedulerModel::submit(const SchedRequest& request) {
  ++stats_.submitted;
  // The most tokens it ever holds: the prompt and every answer token but the last sampled one.
  const std::size_t most_tokens =
      request.prompt.size() + (request.answer.empty() ? 0 : request.answer.size() - 1);
  if ((most_tokens + P_ - 1) / P_ > runtime_.pool().capacity_pages()) {
    ++stats_.rejected;
    return false;
  }
  Request r;
  r.submitted = request;
  r.tokens = request.prompt;
  r.submission = all_.size();
  all_.push_back(std::move(r));
  queue(all_.size() - 1);
  return true;
}

void SchedulerModel::queue(std::size_t index) {
  all_[index].phase = SchedPhase::kWaiting;
  all_[index].queued_at_step = stats_.steps;
  stats_.peak_waiting = std::max<uint64_t>(stats_.peak_waiting, waiting_by_submission().size());
}

std::vector<std::size_t> SchedulerModel::running_by_admission() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < all_.size(); ++i) {
    if (!all_[i].gone && all_[i].phase != SchedPhase::kWaiting) out.push_back(i);
  }
  std::sort(out.begin(), out.end(),
            [&](std::size_t a, std::size_t b) { return all_[a].admission < all_[b].admission; });
  return out;
}

std::vector<std::size_t> SchedulerModel::waiting_by_submission() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < all_.size(); ++i) {  // all_ is in submission order
    if (!all_[i].gone && all_[i].phase == SchedPhase::kWaiting) out.push_back(i);
  }
  return out;
}

std::size_t SchedulerModel::count_running() const { return running_by_admission().size(); }

bool SchedulerModel::idle() const {
  return running_by_admission().empty() && waiting_by_submission().empty();
}

bool SchedulerModel::is_urgent(const Request& r) const {
  return r.preemptions >= config_.max_preemptions ||
         stats_.steps - r.queued_at_step > config_.starve_steps;
}

int32_t SchedulerModel::effective_priority(const Request& r) const {
  return r.preemptions >= config_.max_preemptions ? kMaxPriority + 1 : r.submitted.priority;
}

uint32_t SchedulerModel::cached_tokens(const Request& r) const {
  if (!config_.use_cache) return 0;
  const std::size_t cut = (r.tokens.size() - 1) / P_ * P_;  // admit's cut
  return runtime_.tree().peek(r.submitted.name_space,
                              std::span<const TokenId>(r.tokens.data(), cut));
}

bool SchedulerModel::first_uncached_page(const Request& r, uint32_t cached, PageKey& key) const {
  const std::size_t cut = (r.tokens.size() - 1) / P_ * P_;
  if (cached + P_ > cut) return false;  // admit could never reuse that page
  key.name_space = r.submitted.name_space;
  key.offset = cached;
  key.tokens.assign(r.tokens.begin() + cached, r.tokens.begin() + cached + P_);
  return true;
}

const StepReport& SchedulerModel::step() {
  report_ = StepReport{};
  ++stats_.steps;
  chunked_.clear();
  decoded_.clear();
  decode();
  uint64_t budget = config_.chunk_tokens;
  prefill(budget);
  admission(budget);
  end_of_step();
  report_.running = static_cast<uint32_t>(count_running());
  stats_.peak_running = std::max<uint64_t>(stats_.peak_running, report_.running);
  return report_;
}

// 1. Every request whose prefill is done feeds its last sampled token; no page: preempt a victim
// and retry, unless the victim was the request itself.
void SchedulerModel::decode() {
  for (std::size_t i : running_by_admission()) {
    if (all_[i].phase != SchedPhase::kDecode) continue;  // in prefill, or preempted meanwhile
    while (true) {
      Request& r = all_[i];
      if (runtime_.append_token(r.seq, r.submitted.answer[r.sampled - 1]).ok()) {
        r.fed_this_step = true;
        decoded_.push_back(i);
        ++report_.decode_tokens;
        ++stats_.decode_tokens;
        break;
      }
      const std::size_t victim = choose_victim();
      events_.protected_victims += all_[victim].preemptions >= config_.max_preemptions;
      preempt(victim);
      if (victim == i) {
        ++events_.self_preemptions;
        break;
      }
    }
  }
}

// The lowest effective priority, then the newest admission.
std::size_t SchedulerModel::choose_victim() const {
  const std::vector<std::size_t> running = running_by_admission();
  std::size_t victim = running.front();
  for (std::size_t i : running) {
    const int32_t mine = effective_priority(all_[i]), theirs = effective_priority(all_[victim]);
    if (mine < theirs || (mine == theirs && all_[i].admission > all_[victim].admission)) {
      victim = i;
    }
  }
  return victim;
}

void SchedulerModel::preempt(std::size_t victim) {
  Request& r = all_[victim];
  if (config_.use_cache) {
    // What it computed: its prefill progress, or in decode its prompt and every fed token but
    // one fed in this step (computed only at the end of the step).
    const std::size_t computed =
        r.phase == SchedPhase::kPrefill ? r.computed : r.submitted.prompt.size() + r.sampled - 1;
    runtime_.commit(r.seq, static_cast<uint32_t>(computed));
  }
  runtime_.abort(r.seq);
  if (r.fed_this_step) {
    r.fed_this_step = false;
    --report_.decode_tokens;
    --stats_.decode_tokens;
  }
  r.has_key = false;
  r.tokens = r.submitted.prompt;
  r.tokens.insert(r.tokens.end(), r.submitted.answer.begin(),
                  r.submitted.answer.begin() + r.sampled);
  r.computed = r.reused = 0;
  r.seq = {};
  ++r.preemptions;
  report_.preempted.push_back(r.submitted.id);
  ++stats_.preemptions;
  queue(victim);
}

// 2. Running requests in prefill get chunks, oldest admission first, within the budget.
void SchedulerModel::prefill(uint64_t& budget) {
  for (std::size_t i : running_by_admission()) {
    if (budget == 0) return;
    if (all_[i].phase == SchedPhase::kPrefill) give_chunk(i, budget);
  }
}

void SchedulerModel::give_chunk(std::size_t index, uint64_t& budget) {
  Request& r = all_[index];
  const uint64_t chunk = std::min<uint64_t>(r.tokens.size() - r.computed, budget);
  r.computed += static_cast<uint32_t>(chunk);
  budget -= chunk;
  report_.prefill_tokens += chunk;
  stats_.prefill_tokens += chunk;
  chunked_.push_back(index);
}

// 3. Waiting requests in policy order while budget remains and fewer than max_running run.
void SchedulerModel::admission(uint64_t& budget) {
  const auto full = [&] { return budget == 0 || count_running() >= config_.max_running; };
  std::vector<std::size_t> waiting = waiting_by_submission();
  if (full() || waiting.empty()) return;
  const bool lpm = config_.policy == SchedulePolicy::kLpm && config_.use_cache &&
                   waiting.size() <= config_.lpm_max_queue;
  if (waiting.size() > config_.scan_limit) waiting.resize(config_.scan_limit);
  struct Candidate {
    std::size_t index;
    bool urgent;
    uint32_t cached;
  };
  std::vector<Candidate> candidates;
  for (std::size_t i : waiting) {
    candidates.push_back({i, is_urgent(all_[i]), lpm ? cached_tokens(all_[i]) : 0});
  }
  if (lpm) {
    ++stats_.lpm_steps;
    // Urgent first (in submission order), then the longest cached prefix, ties by submission.
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      if (a.urgent != b.urgent) return a.urgent;
      if (a.urgent) return a.index < b.index;
      if (a.cached != b.cached) return a.cached > b.cached;
      return a.index < b.index;
    });
  }
  for (const Candidate& c : candidates) {
    if (full()) return;
    const std::size_t admitted_before = report_.admitted.size();
    if (!try_to_admit(c.index, c.urgent, budget)) return;
    bool jumped = false;  // over a request submitted earlier, still waiting
    for (std::size_t i : waiting_by_submission()) jumped = jumped || i < c.index;
    events_.lpm_jumps += lpm && jumped && report_.admitted.size() > admitted_before;
  }
}

bool SchedulerModel::try_to_admit(std::size_t index, bool urgent, uint64_t& budget) {
  Request& r = all_[index];
  const uint32_t cached = cached_tokens(r);
  PageKey key;
  const bool keyed =
      config_.share_prefixes && config_.use_cache && first_uncached_page(r, cached, key);
  bool key_in_prefill = false;  // a request in prefill computes that page
  for (std::size_t i : running_by_admission()) {
    key_in_prefill = key_in_prefill || (keyed && all_[i].has_key && all_[i].key == key);
  }
  if (key_in_prefill && !urgent) {
    report_.held.push_back(r.submitted.id);
    ++stats_.held;
    return true;
  }
  // Its uncached pages plus a page of decode room per running request.
  const std::size_t running = count_running();
  const uint64_t wanted = (r.tokens.size() + P_ - 1) / P_ - cached / P_ + running;
  const uint64_t available = runtime_.pool().free_pages() + runtime_.tree().evictable_pages();
  if (running > 0 && available < wanted) {
    ++events_.memory_stops;
    return false;
  }

  const AdmitResult result =
      runtime_.admit({r.submitted.id, r.submitted.name_space, r.tokens, r.submitted.priority});
  if (result.status == RuntimeStatus::kNoSpace) {
    ++events_.no_space_stops;
    return false;
  }
  if (result.status == RuntimeStatus::kTooLarge) {
    r.gone = true;
    report_.rejected.push_back(r.submitted.id);
    ++stats_.rejected;
    return true;
  }
  r.seq = result.seq;
  r.phase = SchedPhase::kPrefill;
  r.computed = r.reused = result.reused_tokens;
  r.admission = next_admission_++;
  report_.admitted.push_back(r.submitted.id);
  events_.urgent_admissions += urgent;
  events_.urgent_past_holder += key_in_prefill;
  if (!r.ever_admitted) {
    r.ever_admitted = true;
    ++stats_.admitted;
    stats_.prompt_tokens += r.tokens.size();
    stats_.hit_tokens += result.reused_tokens;
  } else {
    ++stats_.readmitted;
  }
  if (keyed) {
    r.has_key = true;
    r.key = std::move(key);
  }
  give_chunk(index, budget);
  return true;
}

// 4. The batch has run: chunks are committed (in the order they ran), then fed tokens are marked
// computed and the next answer token sampled.
void SchedulerModel::end_of_step() {
  for (std::size_t i : chunked_) {
    Request& r = all_[i];
    if (config_.use_cache) {
      runtime_.commit(r.seq, r.computed);
    } else {
      runtime_.mark_computed(r.seq, r.computed);
    }
    if (r.computed == r.tokens.size()) prompt_complete(i);
  }
  for (std::size_t i : decoded_) {
    Request& r = all_[i];
    if (!r.fed_this_step) continue;  // preempted after it fed
    r.fed_this_step = false;
    // The prompt and answer[0, sampled): the last one was fed in this step.
    runtime_.mark_computed(r.seq, static_cast<uint32_t>(r.submitted.prompt.size() + r.sampled));
    ++r.sampled;
    if (r.sampled == r.submitted.answer.size()) complete(i);
  }
}

void SchedulerModel::prompt_complete(std::size_t index) {
  Request& r = all_[index];
  r.has_key = false;
  if (r.sampled == 0) report_.first_token.push_back(r.submitted.id);
  if (r.submitted.answer.empty()) {
    complete(index);
    return;
  }
  ++r.sampled;  // from the last prompt token's logits
  if (r.sampled == r.submitted.answer.size()) {
    complete(index);
  } else {
    r.phase = SchedPhase::kDecode;
  }
}

void SchedulerModel::complete(std::size_t index) {
  Request& r = all_[index];
  if (config_.use_cache) {
    runtime_.finish(r.seq);
  } else {
    runtime_.abort(r.seq);
  }
  r.has_key = false;
  r.gone = true;
  report_.finished.push_back(r.submitted.id);
  ++stats_.finished;
}

std::vector<SchedRequestState> SchedulerModel::requests() const {
  std::vector<SchedRequestState> out;
  const auto state_of = [&](std::size_t i) {
    const Request& r = all_[i];
    const bool waiting = r.phase == SchedPhase::kWaiting;
    return SchedRequestState{r.submitted.id,
                             r.phase,
                             static_cast<uint32_t>(r.tokens.size()),
                             r.computed,
                             r.reused,
                             r.sampled,
                             r.preemptions,
                             waiting && is_urgent(r)};
  };
  for (std::size_t i : running_by_admission()) out.push_back(state_of(i));
  for (std::size_t i : waiting_by_submission()) out.push_back(state_of(i));
  return out;
}

}  // namespace radixkv::testing
