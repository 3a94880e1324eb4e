// The `radixkv` command line as a library, so tests run it in-process.
//
//   radixkv gen     synthetic multi-turn traces in the native format
//   radixkv replay  replay a trace (or the bundled default one) against the cache and report
//   radixkv router  the cache-aware router service over workers' KV events (runs until SIGTERM)
//
// Exit status: 0 on success; 1 when the run failed (a malformed trace, an I/O error, a page
// leaked or an accounting check failed); 2 on a bad command line (the message names the flag).
#pragma once

#include <iosfwd>
#include <span>
#include <string>

namespace radixkv::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct CliEnvironment {
  bool interactive = false;  // stdout and stderr are terminals: draw a progress bar on stderr
};

// `args` excludes the program name: {"replay", "--trace", "x.jsonl"}.
int run_cli(std::span<const std::string> args, std::ostream& out, std::ostream& err,
            const CliEnvironment& env = {});

// The subcommands; each parses its own flags and throws UsageError on a bad command line.
int run_gen(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int run_replay(std::span<const std::string> args, std::ostream& out, std::ostream& err,
               const CliEnvironment& env);
int run_router_command(std::span<const std::string> args, std::ostream& out, std::ostream& err);

}  // namespace radixkv::tools
