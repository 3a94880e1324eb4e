// The remote-tier part of `radixkv replay` (issue 16, docs/tiers.md "The remote tier"): its flags,
// their checks, and the RemoteTier they describe. Cache and engine mode.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kv_store/kv_layout.h"
#include "remote/remote_tier.h"
#include "tools/cli/flags.h"

namespace radixkv::tools {

struct RemoteFlags {
  std::string url;  // --remote; empty: no remote tier
  std::string prefix = "radixkv";
  uint64_t timeout_ms = 50;
  uint64_t value_bytes = 0;
  uint64_t queue_pages = 4096;
  std::string write = "back";    // --remote-write: back or through
  std::string prefetch = "off";  // --remote-prefetch: off, best_effort or timeout
  bool wait_writes = false;      // --remote-wait-writes: drain the writer before each request
};

void declare_remote_flags(CommandLine& cli, RemoteFlags& flags);
// Refuses --remote-* without --remote, and --remote where `mode_refusal` is not empty (why this
// run cannot have one). Throws UsageError naming the flag.
void check_remote_flags(const CommandLine& cli, const std::string& mode_refusal);
// The tier, or nullptr without --remote. Throws UsageError naming the flag for a bad URL (the
// message masks any password), value size, prefix or write mode.
std::unique_ptr<remote::RemoteTier> make_remote_tier(const CommandLine& cli,
                                                     const RemoteFlags& flags,
                                                     const KvLayout& layout,
                                                     const std::string& model);

}  // namespace radixkv::tools
