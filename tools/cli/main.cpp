// The `radixkv` executable, and with RADIXKV_ROUTER_PROGRAM defined `radixkv-router`, the router in
// a program of its own (tools/cli/cli.h, CliEnvironment::router): everything else lives in the
// radixkv_cli library.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "tools/cli/activity.h"
#include "tools/cli/cli.h"

namespace {

#ifndef RADIXKV_ROUTER_PROGRAM
// `radixkv router ARGS`: this process becomes `radixkv-router ARGS`, the program installed beside
// this one (same pid, so signals reach the router). Returns only when that fails.
int exec_router(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  const std::filesystem::path router = self.parent_path() / "radixkv-router";
  std::vector<std::string> words = {router.string()};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  out.flush();
  err.flush();
  if (!error) execv(router.c_str(), argv.data());
  const std::string why = error ? error.message() : std::strerror(errno);
  err << fmt::format(
      "radixkv router: error: cannot run {}: {} (the router is the program "
      "radixkv-router, installed beside radixkv)\n",
      error ? std::string("/proc/self/exe") : router.string(), why);
  return radixkv::tools::kExitFailure;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  // Out of memory ends with a message naming what was being done and status 1 (activity.h).
  std::set_new_handler([] { radixkv::tools::exit_out_of_memory(); });
  std::ios::sync_with_stdio(false);
  std::vector<std::string> args(argv + 1, argv + argc);
  radixkv::tools::CliEnvironment env;
  env.interactive = isatty(STDOUT_FILENO) == 1 && isatty(STDERR_FILENO) == 1;
#ifdef RADIXKV_ROUTER_PROGRAM
  args.insert(args.begin(), "router");  // its arguments are those after `radixkv router`
  env.router = radixkv::tools::run_router_command;
#else
  env.router = exec_router;
#endif
  const int status = radixkv::tools::run_cli(args, std::cout, std::cerr, env);
  std::cout.flush();
  return status;
}
