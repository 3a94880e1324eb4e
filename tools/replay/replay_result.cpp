#include "tools/replay/replay_result.h"

#include <utility>

#include "remote/remote_tier.h"

namespace radixkv::tools {

ReplayResult start_replay_result(std::string mode, std::string policy, const Trace& trace,
                                 std::string model, const KvLayout& layout,
                                 uint64_t capacity_pages) {
  ReplayResult result;
  result.mode = std::move(mode);
  result.policy = std::move(policy);
  result.trace = trace.source;
  result.model = std::move(model);
  result.page_tokens = layout.page_tokens;
  result.capacity_pages = capacity_pages;
  result.bytes_per_page = layout.bytes_per_page();
  result.skipped_records = trace.skipped_records;
  result.requests = trace.requests.size();
  result.input_tokens = trace.input_tokens();
  return result;
}

RemoteReplayResult remote_replay_result(remote::RemoteTier& tier, uint64_t hit_tokens) {
  tier.drain();
  const remote::RemoteTierStats s = tier.stats();
  RemoteReplayResult result;
  result.store = tier.describe();
  result.write = tier.config().write_through ? "through" : "back";
  result.hit_tokens = hit_tokens;
  result.loaded_pages = s.loaded_pages;
  result.stored_pages = s.stored_pages;
  result.dropped_writes = s.dropped_writes;
  result.errors = s.errors + s.prefetch.errors;  // every failed store call, prefetches too
  result.unavailable = s.unavailable + s.prefetch.unavailable;
  result.first_error = s.first_error;
  result.never_answered = s.never_answered();
  result.bad_values = s.bad_values;
  result.prefetch = to_string(tier.config().prefetch);
  result.prefetched_pages = s.prefetch.taken_pages;
  result.prefetch_dropped = s.prefetch.dropped;
  return result;
}

}  // namespace radixkv::tools
