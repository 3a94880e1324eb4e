// Flag parsing for the radixkv subcommands: `--name value`, `--name=value` and boolean `--name`.
//
// Each subcommand declares its flags up front; anything else (an unknown flag, a positional
// argument, a flag given twice, a value missing) is a UsageError naming the flag, raised before
// any work starts. help_text() renders the declared flags for `--help`.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace radixkv::tools {

struct FlagSpec {
  std::string name;        // without the leading dashes
  std::string value_name;  // empty for a boolean flag
  std::string help;
};

class Args {
 public:
  Args(std::string_view command, std::span<const std::string> argv, std::vector<FlagSpec> specs);

  bool has(std::string_view name) const;
  // The flag's value, or nullopt when it was not given. Boolean flags have an empty value.
  std::optional<std::string> get(std::string_view name) const;
  std::string get_or(std::string_view name, std::string_view fallback) const;

  std::string help_text(std::string_view usage, std::string_view description) const;

 private:
  const FlagSpec& spec(std::string_view name) const;

  std::string command_;
  std::vector<FlagSpec> specs_;
  std::map<std::string, std::string, std::less<>> values_;
};

}  // namespace radixkv::tools
