// The `radixkv` executable: everything lives in the radixkv_cli library (tools/cli/cli.h).
#include <unistd.h>

#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "tools/cli/activity.h"
#include "tools/cli/cli.h"

int main(int argc, char** argv) {
  // Out of memory ends with a message naming what was being done and status 1 (activity.h).
  std::set_new_handler([] { radixkv::tools::exit_out_of_memory(); });
  std::ios::sync_with_stdio(false);
  const std::vector<std::string> args(argv + 1, argv + argc);
  radixkv::tools::CliEnvironment env;
  env.interactive = isatty(STDOUT_FILENO) == 1 && isatty(STDERR_FILENO) == 1;
  const int status = radixkv::tools::run_cli(args, std::cout, std::cerr, env);
  std::cout.flush();
  return status;
}
