#include "tools/replay/replay_result.h"

#include <utility>

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

}  // namespace radixkv::tools
