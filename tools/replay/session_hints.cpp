#include "tools/replay/session_hints.h"

#include <algorithm>
#include <numeric>

#include "runtime/prefix_cache_runtime.h"

namespace radixkv::tools {

void OnlineHolds::arrive(PrefixCacheRuntime& runtime, uint32_t session, uint32_t agent,
                         double now) {
  if (session == 0) return;
  History& h = sessions_[key(session, agent)];
  if (h.seen) {
    runtime.release(session, agent);
    const double gap = std::max(0.0, now - h.last_arrival);
    h.gaps.push_back(gap);
    if (h.gaps.size() > kRecentGaps) h.gaps.pop_front();
    all_gaps_.push_back(gap);
  }
  h.seen = true;
  h.last_arrival = now;
  if (agent == 0) {  // the main agent is back: the sub-agents it waited for are done
    const auto it = started_.find(session);
    if (it == started_.end()) return;
    for (const uint32_t sub : it->second) runtime.release(session, sub);
    started_.erase(it);
  } else {
    std::vector<uint32_t>& subs = started_[session];
    if (std::find(subs.begin(), subs.end(), agent) == subs.end()) subs.push_back(agent);
  }
}

void OnlineHolds::finished(PrefixCacheRuntime& runtime, uint32_t session, uint32_t agent) {
  if (session == 0) return;
  const double seconds = predicted_gap(session, agent);
  if (seconds > 0.0) runtime.hold(session, seconds, agent);
}

double OnlineHolds::predicted_gap(uint32_t session, uint32_t agent) const {
  const auto it = sessions_.find(key(session, agent));
  double gap = 0.0;
  if (it != sessions_.end() && !it->second.gaps.empty()) {
    const std::deque<double>& gaps = it->second.gaps;
    gap = std::accumulate(gaps.begin(), gaps.end(), 0.0) / static_cast<double>(gaps.size());
  } else {
    gap = median_gap();
  }
  return std::min(gap * kHoldFactor, kMaxHoldSeconds);
}

// Exact, recomputed at each call: it is asked only at the first request of a (session, agent),
// so a trace costs O(first requests x gaps).
double OnlineHolds::median_gap() const {
  if (all_gaps_.empty()) return 0.0;
  scratch_ = all_gaps_;
  const auto mid = scratch_.begin() + static_cast<std::ptrdiff_t>(scratch_.size() / 2);
  std::nth_element(scratch_.begin(), mid, scratch_.end());
  return *mid;
}

}  // namespace radixkv::tools
