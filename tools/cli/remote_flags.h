// The remote-tier part of `radixkv replay` (issue 16, docs/tiers.md "The remote tier"): its flags,
// their checks, the RemoteTier they describe, and what its run means for the exit status. Cache
// and engine mode.
//
// The password: the URL's userinfo, which every user of the machine can read in /proc/PID/cmdline
// while the replay runs (taken, with a warning on stderr, as redis-cli -a warns); else the file of
// --remote-password-file (one line); else REDISCLI_AUTH, the variable redis-cli reads. A password
// in the URL and in a file at once is refused.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#include "kv_store/kv_layout.h"
#include "remote/remote_tier.h"
#include "tools/cli/flags.h"

namespace radixkv::tools {

struct RemoteFlags {
  std::string url;            // --remote; empty: no remote tier
  std::string password_file;  // --remote-password-file
  std::string prefix = "radixkv";
  uint64_t timeout_ms = 50;
  uint64_t value_bytes = 0;
  uint64_t queue_pages = 4096;
  std::string write = "back";    // --remote-write: back or through
  std::string prefetch = "off";  // --remote-prefetch: off, best_effort or timeout
};

void declare_remote_flags(CommandLine& cli, RemoteFlags& flags);
// Refuses --remote-* without --remote, and --remote where `mode_refusal` is not empty (why this
// run cannot have one). Throws UsageError naming the flag.
void check_remote_flags(const CommandLine& cli, const std::string& mode_refusal);
// The tier, or nullptr without --remote. Throws UsageError naming the flag for a bad URL (the
// message masks any password), password file, value size, prefix or write mode. Warnings (a
// password on the command line, a password file others may read) go to `err`.
std::unique_ptr<remote::RemoteTier> make_remote_tier(const CommandLine& cli,
                                                     const RemoteFlags& flags,
                                                     const KvLayout& layout,
                                                     const std::string& model, std::ostream& err);

// After the run: false, with an error on `err` naming the store and its first error, when the
// tier never answered (RemoteTierStats::never_answered: a wrong password, no server there), so
// that the run exits 1 as one whose KV events were dropped does: its figures are local caching
// only. A store that failed for a while is only reported (errors, calls skipped, first error).
bool check_remote_answered(remote::RemoteTier& tier, std::ostream& err);

}  // namespace radixkv::tools
