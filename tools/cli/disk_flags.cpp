#include "tools/cli/disk_flags.h"

#include <fmt/format.h>

#include <system_error>

#include "eviction/eviction_policy.h"
#include "radix/tier_config.h"
#include "tools/trace/units.h"

namespace radixkv::tools {

namespace {
// A page's filler is written and read with every page; the replay moves no KV.
constexpr uint64_t kMaxValueBytes = uint64_t{64} << 20;
constexpr std::string_view kValueFlags[] = {"--disk-capacity-bytes", "--disk-policy",
                                            "--disk-write-policy",   "--disk-value-bytes",
                                            "--disk-read-gbps",      "--disk-write-gbps"};
constexpr std::string_view kEngineOnly[] = {"--disk-read-gbps", "--disk-write-gbps"};
}  // namespace

void declare_disk_flags(CommandLine& cli, DiskFlags& f) {
  cli.text("--disk-path", f.path, "DIR",
           "a disk tier under the host tier, in DIR (created when missing), that a later run on "
           "the same DIR finds again: pages leave the local tiers to it, come back from it, and "
           "survive the process (needs --disk-capacity-bytes; cache and engine mode)");
  cli.size("--disk-capacity-bytes", f.capacity_bytes,
           "the disk tier's byte budget, e.g. 1TiB: counted as pages of --model would take on a "
           "drive (a 4 KiB header block each and a 4 KiB manifest), never exceeded");
  cli.text("--disk-policy", f.policy, "NAME",
           "the disk tier's eviction policy over its leaves (default lru; any --policy name)");
  cli.text("--disk-write-policy", f.write_policy, "NAME",
           "when pages go to disk: write_back (default; when they leave the local tiers), "
           "write_through (also as soon as they are cached: a restart finds every prefix), "
           "write_through_selective[:hits=N]");
  cli.size("--disk-value-bytes", f.value_bytes,
           "filler bytes stored per page on disk, standing for its KV (default 0: header and "
           "tokens only; the budget counts whole pages regardless)");
  cli.real("--disk-read-gbps", f.read_gbps, "GB/S",
           fmt::format("engine mode, disk tier: read bandwidth in GB/s (default {}; a PCIe Gen4 "
                       "NVMe drive)",
                       kDefaultDiskReadGbps),
           1e-6, 1e6);
  cli.real("--disk-write-gbps", f.write_gbps, "GB/S",
           fmt::format("engine mode, disk tier: write bandwidth in GB/s (default {})",
                       kDefaultDiskWriteGbps),
           1e-6, 1e6);
}

void check_disk_flags(const CommandLine& cli, bool engine, const std::string& mode_refusal) {
  if (!cli.given("--disk-path")) {
    for (std::string_view flag : kValueFlags) {
      if (cli.given(flag)) {
        throw UsageError(fmt::format("{}: needs --disk-path", cli.describe(flag)));
      }
    }
    return;
  }
  if (!mode_refusal.empty()) {
    throw UsageError(fmt::format("{}: {}", cli.describe("--disk-path"), mode_refusal));
  }
  if (!cli.given("--disk-capacity-bytes")) {
    throw UsageError(fmt::format("{}: needs --disk-capacity-bytes (the tier's byte budget)",
                                 cli.describe("--disk-path")));
  }
  if (!engine) {
    for (std::string_view flag : kEngineOnly) {
      if (cli.given(flag))
        throw UsageError(fmt::format("{}: engine mode only", cli.describe(flag)));
    }
  }
}

std::unique_ptr<disk::DiskTier> make_disk_tier(const CommandLine& cli, const DiskFlags& f,
                                               const KvLayout& layout, const std::string& model) {
  if (!cli.given("--disk-path")) return nullptr;
  if (f.value_bytes > kMaxValueBytes) {
    throw UsageError(fmt::format("{}: {} bytes of filler per page is more than the {} allowed",
                                 cli.describe("--disk-value-bytes"), f.value_bytes,
                                 format_bytes(kMaxValueBytes)));
  }
  const auto refused = [&](std::string_view flag, const std::exception& e) {
    return UsageError(fmt::format("{}: {}", cli.describe(flag), e.what()));
  };
  try {
    make_policy(f.policy);
  } catch (const std::invalid_argument& e) {
    throw refused("--disk-policy", e);
  }
  try {
    WritePolicy::parse(f.write_policy);
  } catch (const std::invalid_argument& e) {
    throw refused("--disk-write-policy", e);
  }
  disk::DiskTierConfig config{f.path, layout, model, f.capacity_bytes};
  config.payload_bytes = f.value_bytes;
  // The budget counts the pages a drive would hold, whatever filler the replay stores.
  config.charged_slot_bytes =
      disk::SlotGeometry{layout.page_tokens, layout.bytes_per_page()}.slot_bytes();
  config.policy = f.policy;
  config.write_policy = f.write_policy;
  try {
    return std::make_unique<disk::DiskTier>(config);
  } catch (const std::invalid_argument& e) {
    throw refused(std::string_view(e.what()).find("capacity") != std::string_view::npos
                      ? "--disk-capacity-bytes"
                      : "--disk-path",
                  e);
  } catch (const std::system_error& e) {
    throw refused("--disk-path", e);
  } catch (const std::runtime_error& e) {
    throw refused("--disk-path", e);
  }
}

}  // namespace radixkv::tools
