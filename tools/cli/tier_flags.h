// The host-tier part of `radixkv replay` (docs/tiers.md): its flags, their checks, and the host
// tiers they ask for. cmd_replay.cpp calls these; every bad value is a UsageError naming the flag,
// raised before the trace is read.
//
//   --host-capacity-tokens N | --host-cache-bytes SIZE   the host budget (one of them; a host tier
//                                                         exists only when one is given)
//   --write-policy write_back|write_through|write_through_selective[:hits=N]
//   --host-policy NAME                                    the host tier's eviction policy
//   --sweep-host CAP,CAP,...                             with --sweep: host capacities (0: none)
//   --h2d-gbps, --d2h-gbps                                engine mode: copy bandwidths
// The host tier evicts on demand only (no watermark flags): eviction there frees host memory and
// delays nothing, so headroom below its budget would only lower the hit rate.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kv_store/kv_layout.h"
#include "tools/cli/flags.h"
#include "tools/replay/host_tier.h"

namespace radixkv::tools {

struct TierFlags {
  uint64_t host_capacity_tokens = 0;
  uint64_t host_cache_bytes = 0;
  std::string write_policy = "write_back";
  std::string host_policy = "lru";
  std::string sweep_host;
  double h2d_gbps = kDefaultCopyGbps;
  double d2h_gbps = kDefaultCopyGbps;
};

void declare_tier_flags(CommandLine& cli, TierFlags& flags);

// The host capacity flags: alternatives to each other, as the device budget flags are to theirs
// (a --config layer gives one only if no higher layer gave any).
std::vector<std::string_view> host_capacity_flags();
// Whether one of them was given (on the command line or by --config).
bool host_tier_given(const CommandLine& cli);

// Refuses what makes no sense: two host capacities, a tier setting with no host tier, engine-only
// flags in cache mode, --sweep-host in engine mode or without --sweep, a host tier with
// --no-cache.
void check_tier_flags(const CommandLine& cli, bool engine);

// One host tier per host capacity asked for: one (maybe disabled, capacity 0) unless --sweep-host
// gives several. Throws UsageError naming the flag.
std::vector<HostTierReplayConfig> host_tiers_of(const CommandLine& cli, const TierFlags& flags,
                                                const KvLayout& layout);

}  // namespace radixkv::tools
