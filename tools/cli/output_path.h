// Output paths of the command line (--dump-pages, --plot): checked before the work whose result
// goes there, so that a typo costs a usage error at once, not the whole replay's time.
#pragma once

#include <string>
#include <string_view>

#include "tools/cli/flags.h"

namespace radixkv::tools {

// Throws UsageError naming `flag` (as cli.describe() does) and why unless a file can be written
// at `path` now: its folder exists and this process may create files there, and the path is no
// folder, nor a file this process may not write. Creates nothing. (The write itself can still
// fail later, e.g. on a full disk: the command then says so and exits 1.)
void check_output_path(const CommandLine& cli, std::string_view flag, const std::string& path);

}  // namespace radixkv::tools
