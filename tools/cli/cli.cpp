#include "tools/cli/cli.h"

#include <fmt/format.h>

#include <new>
#include <ostream>

#include "radixkv/version.h"
#include "tools/cli/activity.h"
#include "tools/trace/trace.h"
#include "tools/trace/units.h"

namespace radixkv::tools {

namespace {

constexpr const char* kUsage =
    "usage: radixkv <command> [flags]\n"
    "\n"
    "commands:\n"
    "  replay   replay a trace against the prefix cache and report hit rate, evictions, speed\n"
    "           (with no --trace: the bundled default multi-turn trace)\n"
    "  gen      write a synthetic multi-turn trace in the native format\n"
    "  router   route requests to the worker caching their prefix, from the workers' KV events\n"
    "\n"
    "Run `radixkv <command> --help` (or -h) for its flags, `radixkv --version` for the version.\n"
    "Traces: docs/trace_format.md.\n";

}  // namespace

int run_cli(std::span<const std::string> args, std::ostream& out, std::ostream& err,
            const CliEnvironment& env) {
  if (args.empty()) {
    err << kUsage;
    return kExitUsage;
  }
  const std::string& command = args[0];
  const auto rest = args.subspan(1);
  // Every message below carries the prefix once; what is thrown carries none.
  const std::string prefix = fmt::format("radixkv {}: ", command);
  set_command_name(command);
  try {
    if (command == "--help" || command == "-h" || command == "help") {
      out << kUsage;
      return kExitOk;
    }
    if (command == "--version" || command == "version") {
      out << "radixkv " << kVersion << "\n";
      return kExitOk;
    }
    if (command == "gen") return run_gen(rest, out, err);
    if (command == "replay") return run_replay(rest, out, err, env);
    if (command == "router") {
      if (env.router == nullptr) {
        throw UsageError(
            "runs as a program of its own (radixkv router, or radixkv-router), not "
            "inside this one");
      }
      return env.router(rest, out, err);
    }
    err << fmt::format("radixkv: unknown command '{}'\n\n{}", command, kUsage);
    return kExitUsage;
  } catch (const UsageError& e) {
    err << prefix << e.what() << "\n";
    return kExitUsage;
  } catch (const TraceError& e) {
    err << prefix << "bad trace: " << e.what() << "\n";
    return kExitFailure;
  } catch (const std::bad_alloc&) {
    err << out_of_memory_message() << "\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    err << prefix << "error: " << e.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace radixkv::tools
