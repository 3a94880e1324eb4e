#include "tools/cli/output_path.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "tools/trace/units.h"

namespace radixkv::tools {

namespace fs = std::filesystem;

void check_output_path(const CommandLine& cli, std::string_view flag, const std::string& path) {
  const auto refuse = [&](const std::string& why) {
    throw UsageError(fmt::format("{}: cannot write '{}': {}", cli.describe(flag), path, why));
  };
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (fs::is_directory(status)) refuse("it is a folder");
  if (fs::exists(status)) {
    if (::access(path.c_str(), W_OK) != 0) refuse(std::strerror(errno));
    return;
  }
  const fs::path parent = fs::path(path).parent_path();
  const std::string folder = parent.empty() ? "." : parent.string();
  const fs::file_status folder_status = fs::status(folder, error);
  if (!fs::exists(folder_status)) refuse(fmt::format("the folder '{}' does not exist", folder));
  if (!fs::is_directory(folder_status)) refuse(fmt::format("'{}' is not a folder", folder));
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    refuse(fmt::format("no file can be created in '{}': {}", folder, std::strerror(errno)));
  }
}

}  // namespace radixkv::tools
