// What a host tier adds to a replay's report (tools/replay/host_tier.h): lines of the text report
// and keys of the JSON one. A replay without a host tier adds nothing, so its report stays as it
// was.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

#include "tools/replay/replay_result.h"

namespace radixkv::tools {

// The host tier's lines of the text report ("" without a host tier).
std::string format_host_tier_text(const ReplayResult& result);
// Top-level keys device_hit_tokens, host_hit_tokens, loaded_pages, written_pages, host_evictions,
// and "host_tier" with its capacity, policies and counters (nothing without a host tier).
void add_host_tier_json(nlohmann::ordered_json& out, const ReplayResult& result);
// The sweep table's host capacity column ("" without a host tier).
std::string host_capacity_text(const ReplayResult& result);

}  // namespace radixkv::tools
