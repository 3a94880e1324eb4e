#include "tools/cli/cli.h"

#include <fmt/format.h>

#include <ostream>

#include "radixkv/version.h"
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
    "\n"
    "Run `radixkv <command> --help` for its flags, `radixkv --version` for the version.\n"
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
    err << fmt::format("radixkv: unknown command '{}'\n\n{}", command, kUsage);
    return kExitUsage;
  } catch (const UsageError& e) {
    err << "radixkv " << command << ": " << e.what() << "\n";
    return kExitUsage;
  } catch (const TraceError& e) {
    err << "radixkv " << command << ": bad trace: " << e.what() << "\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    err << "radixkv " << command << ": error: " << e.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace radixkv::tools
