// The `radixkv` command line as a library, so tests run it in-process.
//
//   radixkv gen     synthetic multi-turn traces in the native format
//   radixkv replay  replay a trace (or the bundled default one) against the cache and report
//   radixkv router  the cache-aware router service over workers' KV events (runs until SIGTERM;
//                   a program of its own, radixkv-router: CliEnvironment::router)
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

// A subcommand: its arguments (after its name), standard output, standard error; the exit status.
using Subcommand = int (*)(std::span<const std::string> args, std::ostream& out, std::ostream& err);

struct CliEnvironment {
  bool interactive = false;  // stdout and stderr are terminals: draw a progress bar on stderr
  // What `radixkv router` runs; null: refused (a UsageError). The router is a program of its own,
  // radixkv-router (tools/cli/main.cpp), with run_router_command here; `radixkv` replaces itself
  // with it. So the other commands never load the router's libraries (its HTTP server once
  // brought OpenSSL, Kerberos and brotli: ~1.5 ms of every start), and a process that runs the
  // command line as a library (the Python module, tests) is never replaced by a router.
  Subcommand router = nullptr;
};

// `args` excludes the program name: {"replay", "--trace", "x.jsonl"}.
int run_cli(std::span<const std::string> args, std::ostream& out, std::ostream& err,
            const CliEnvironment& env = {});

// The subcommands; each parses its own flags and throws UsageError on a bad command line.
int run_gen(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int run_replay(std::span<const std::string> args, std::ostream& out, std::ostream& err,
               const CliEnvironment& env);
// Only in radixkv-router (tools/cli/cmd_router.cpp is not in the radixkv_cli library).
int run_router_command(std::span<const std::string> args, std::ostream& out, std::ostream& err);

}  // namespace radixkv::tools
