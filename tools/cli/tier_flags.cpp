#include "tools/cli/tier_flags.h"

#include <fmt/format.h>

#include <stdexcept>

#include "eviction/eviction_policy.h"
#include "radix/tier_config.h"
#include "tools/cli/budget.h"
#include "tools/cli/cli.h"
#include "tools/trace/units.h"

namespace radixkv::tools {

namespace {

// Flags that mean something only with a host tier.
constexpr std::string_view kNeedHost[] = {"--write-policy", "--host-policy", "--h2d-gbps",
                                          "--d2h-gbps"};
constexpr std::string_view kEngineOnly[] = {"--h2d-gbps", "--d2h-gbps"};

}  // namespace

bool host_tier_given(const CommandLine& cli) {
  for (std::string_view flag : host_capacity_flags()) {
    if (cli.given(flag)) return true;
  }
  return false;
}

void declare_tier_flags(CommandLine& cli, TierFlags& f) {
  cli.count("--host-capacity-tokens", f.host_capacity_tokens, "N",
            "a host tier under the cache holding N tokens, e.g. 9e6 (docs/tiers.md)");
  cli.size("--host-cache-bytes", f.host_cache_bytes,
           "a host tier under the cache of this many bytes of KV, e.g. 1TiB");
  cli.text("--write-policy", f.write_policy, "NAME",
           fmt::format("host tier: when device pages get a host copy, one of {} "
                       "(write_through_selective:hits=N; default write_back)",
                       fmt::join(WritePolicy::names(), ", ")))
      ->check(units_validator([](const std::string& v) { WritePolicy::parse(v); }));
  cli.text("--host-policy", f.host_policy, "NAME",
           "host tier: its eviction policy, any --policy name (default lru)")
      ->check(units_validator([](const std::string& v) { make_policy(v); }));
  cli.text("--sweep-host", f.sweep_host, "CAP,CAP,...",
           "with --sweep: also at each host capacity (tokens like 9e6, bytes like 1TiB; 0 for "
           "none); the plot draws one line per host capacity")
      ->check(units_validator(parse_capacity_list));
  cli.real("--h2d-gbps", f.h2d_gbps, "GB/S",
           fmt::format("engine mode, host tier: host-to-device copy bandwidth in GB/s (default {}, "
                       "PCIe Gen5 x16)",
                       kDefaultCopyGbps),
           1e-6, 1e6);
  cli.real("--d2h-gbps", f.d2h_gbps, "GB/S",
           fmt::format("engine mode, host tier: device-to-host copy bandwidth in GB/s (default {})",
                       kDefaultCopyGbps),
           1e-6, 1e6);
}

std::vector<std::string_view> host_capacity_flags() {
  return {"--host-capacity-tokens", "--host-cache-bytes", "--sweep-host"};
}

void check_tier_flags(const CommandLine& cli, bool engine) {
  std::vector<std::string> hosts;
  for (std::string_view flag : host_capacity_flags()) {
    if (cli.given(flag)) hosts.push_back(cli.describe(flag));
  }
  if (hosts.size() > 1) {
    throw UsageError(fmt::format("{}: give one host capacity, not {} at once", hosts[0],
                                 fmt::join(hosts, " and ")));
  }
  if (hosts.empty()) {
    for (std::string_view flag : kNeedHost) {
      if (cli.given(flag)) {
        throw UsageError(
            fmt::format("{}: needs a host tier (--host-capacity-tokens or --host-cache-bytes)",
                        cli.describe(flag)));
      }
    }
  }
  if (engine && !hosts.empty() && cli.given("--no-cache")) {
    throw UsageError(
        fmt::format("{}: a host tier needs the cache (not with --no-cache)", hosts[0]));
  }
  if (engine && cli.given("--sweep-host")) {
    throw UsageError(fmt::format("{}: cache mode only", cli.describe("--sweep-host")));
  }
  if (cli.given("--sweep-host") && !cli.given("--sweep")) {
    throw UsageError(
        fmt::format("{}: needs --sweep (the device capacities)", cli.describe("--sweep-host")));
  }
  if (!engine) {
    for (std::string_view flag : kEngineOnly) {
      if (cli.given(flag)) {
        throw UsageError(
            fmt::format("{}: engine mode only (add --mode engine)", cli.describe(flag)));
      }
    }
  }
}

std::vector<HostTierReplayConfig> host_tiers_of(const CommandLine& cli, const TierFlags& f,
                                                const KvLayout& layout) {
  HostTierReplayConfig host;
  host.policy = f.host_policy;
  host.write_policy = f.write_policy;
  host.h2d_gbps = f.h2d_gbps;
  host.d2h_gbps = f.d2h_gbps;
  std::vector<HostTierReplayConfig> hosts;
  if (cli.given("--sweep-host")) {
    for (const std::string& value : split_list(f.sweep_host)) {
      const bool none = !has_byte_unit(value) && parse_count(value) == 0;
      host.capacity_pages =
          none ? 0 : pages_for_capacity(value, layout, cli.describe("--sweep-host"));
      hosts.push_back(host);
    }
    return hosts;
  }
  if (cli.given("--host-capacity-tokens")) {
    host.capacity_pages =
        pages_for_tokens(f.host_capacity_tokens, layout, cli.describe("--host-capacity-tokens"));
  } else if (cli.given("--host-cache-bytes")) {
    host.capacity_pages =
        pages_for_bytes(f.host_cache_bytes, layout, cli.describe("--host-cache-bytes"));
  }
  hosts.push_back(host);
  return hosts;
}

}  // namespace radixkv::tools
