// Session holds derived online (`radixkv replay --hints online`): what an engine knows when a
// request of an agent's session finishes (the gaps between that session's requests so far, never a
// later arrival) decides how long the runtime keeps the session's path (PrefixCacheRuntime::hold),
// the time its agent likely spends in a tool before the next request.
//
// The rule, per session and sub-agent (a sub-agent's context is its own path; agent 0 is the
// session's main agent):
//   - when a request arrives, the hold of its sub-agent ends (release: it is back) and the gap
//     since that sub-agent's previous request joins its history (its last kRecentGaps gaps);
//   - when a request of the main agent arrives, the holds of the sub-agents it started since its
//     previous request end too: the main agent goes on once their results are in, so they are done;
//   - when a request finishes, its sub-agent is held for kHoldFactor times the mean of its recent
//     gaps, at most kMaxHoldSeconds; a sub-agent with no gap yet uses the median of every gap seen
//     so far in the trace (0 until there is one: no hold).
// Why under the mean: a hold that outlives its use keeps pages LRU would have given to sessions
// that are back; gaps are heavy-tailed (tool times), so a hold covering the long ones costs more
// than the returns it catches (docs/policies.md, "--hints online", has the rules tried and their
// table). The holds are soft: the retention layer's share bounds them (eviction/retention_layer.h).
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

namespace radixkv {
class PrefixCacheRuntime;
}

namespace radixkv::tools {

class OnlineHolds {
 public:
  static constexpr std::size_t kRecentGaps = 8;
  static constexpr double kHoldFactor = 0.75;
  static constexpr double kMaxHoldSeconds = 300.0;

  // A request of (session, agent) arrives at `now` (session 0: none, nothing happens).
  void arrive(PrefixCacheRuntime& runtime, uint32_t session, uint32_t agent, double now);
  // It finished (at the runtime's clock): hold the sub-agent for the predicted gap.
  void finished(PrefixCacheRuntime& runtime, uint32_t session, uint32_t agent);
  // The hold the rule gives (session, agent) now, in seconds (0: none).
  double predicted_gap(uint32_t session, uint32_t agent) const;

 private:
  struct History {
    double last_arrival = 0.0;
    bool seen = false;
    std::deque<double> gaps;  // the most recent, oldest first
  };
  static uint64_t key(uint32_t session, uint32_t agent) {
    return (uint64_t{session} << 32) | agent;
  }
  double median_gap() const;

  std::unordered_map<uint64_t, History> sessions_;
  // Per session, the sub-agents that arrived since its main agent's latest request.
  std::unordered_map<uint32_t, std::vector<uint32_t>> started_;
  std::vector<double> all_gaps_;         // every gap so far, for sessions with none of their own
  mutable std::vector<double> scratch_;  // median_gap()'s copy
};

}  // namespace radixkv::tools
