// The disk-tier part of `radixkv replay` (issue 32, docs/tiers.md "The disk tier"): its flags,
// their checks, and the DiskTier they describe. Cache and engine mode; with --remote the disk tier
// sits above the remote tier (a lookup asks the disk first).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "disk/disk_tier.h"
#include "kv_store/kv_layout.h"
#include "tools/cli/flags.h"

namespace radixkv::tools {

// A data-center NVMe drive on PCIe Gen4 x4 (a 7.9 GB/s link) reads about 6 and writes about 4 GB/s
// sequentially; give your drive's radixkv_disk_bench figures instead.
constexpr double kDefaultDiskReadGbps = 6.0;
constexpr double kDefaultDiskWriteGbps = 4.0;

struct DiskFlags {
  std::string path;  // --disk-path; empty: no disk tier
  uint64_t capacity_bytes = 0;
  std::string policy = "lru";
  std::string write_policy = "write_back";
  uint64_t value_bytes = 0;  // filler stored per page (the replay has no KV)
  double read_gbps = kDefaultDiskReadGbps;
  double write_gbps = kDefaultDiskWriteGbps;
};

void declare_disk_flags(CommandLine& cli, DiskFlags& flags);
// Refuses --disk-* without --disk-path, --disk-path without --disk-capacity-bytes, the engine-mode
// flags in another mode, and --disk-path where `mode_refusal` is not empty (why this run cannot
// have one). Throws UsageError naming the flag.
void check_disk_flags(const CommandLine& cli, bool engine, const std::string& mode_refusal);
// The tier, or nullptr without --disk-path. Throws UsageError naming the flag for what the tier
// refuses: a capacity below one page, a bad policy or write policy, a path it cannot use (another
// layout's, in use by another process, not creatable).
std::unique_ptr<disk::DiskTier> make_disk_tier(const CommandLine& cli, const DiskFlags& flags,
                                               const KvLayout& layout, const std::string& model);

}  // namespace radixkv::tools
