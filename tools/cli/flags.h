// The flags of a radixkv subcommand, parsed with CLI11 (Debian libcli11-dev).
//
// Conventions every subcommand keeps (tests/test_bad_input_matrix.cpp checks them):
//   - `--name VALUE` or `--name=VALUE`; flags without a value are plain `--name`;
//   - anything else (an unknown flag, a positional argument, a flag given twice (but one declared
//     with texts(), which collects one value per use), a missing or empty
//     value, a value given to a plain flag) is a UsageError naming the flag, before any work;
//   - values with units are checked by validators (sizes, counts, thresholds: tools/trace/units.h)
//     whose errors name the flag too;
//   - `-h` / `--help` prints the help, where every value flag shows its VALUE name.
// Values may also come from a config file (tools/cli/config_file.h) through set_if_unset(): the
// same validators run, and an error names the file and line instead of the flag.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace radixkv::tools {

class CommandLine {
 public:
  // `command` is "replay", "gen": the app is named "radixkv <command>" in help and errors.
  CommandLine(std::string_view command, std::string description);

  // A flag taking a value, kept as text; `validator` (optional) checks it up front.
  CLI::Option* text(std::string_view name, std::string& target, std::string_view value_name,
                    std::string_view help);
  // A flag that may be given several times, one value each time, kept in order.
  CLI::Option* texts(std::string_view name, std::vector<std::string>& target,
                     std::string_view value_name, std::string_view help);
  // A non-negative whole number (units.h counts: 3993, 1e6) in [min, max].
  CLI::Option* count(std::string_view name, uint64_t& target, std::string_view value_name,
                     std::string_view help, uint64_t min = 0, uint64_t max = UINT64_MAX);
  // A size in bytes (units.h sizes: 40GiB, 1e9).
  CLI::Option* size(std::string_view name, uint64_t& target, std::string_view help);
  // A real number in [min, max].
  CLI::Option* real(std::string_view name, double& target, std::string_view value_name,
                    std::string_view help, double min, double max);
  // A plain flag.
  CLI::Option* flag(std::string_view name, bool& target, std::string_view help);

  // Parses `args` (without the command); false when help was asked for (and written to `out`).
  // Throws UsageError naming the flag.
  bool parse(std::span<const std::string> args, std::ostream& out);
  bool given(std::string_view name) const;
  // Given on the command line itself (not by set_if_unset from a config file).
  bool given_on_command_line(std::string_view name) const;
  // Gives flag `name` the value `value` unless the command line gave it; `origin` ("file:line")
  // names where it came from in errors. Throws UsageError for an unknown name or a bad value.
  void set_if_unset(std::string_view name, const std::string& value, const std::string& origin);
  bool has_flag(std::string_view name) const;
  // "--pool-bytes", or "--pool-bytes (from --config budget.toml:3)" for a value set_if_unset gave:
  // how errors about the flag name it.
  std::string describe(std::string_view name) const;
  std::string help() const { return app_.help(); }
  // Text printed after the flags in --help.
  void footer(std::string text) { app_.footer(std::move(text)); }

 private:
  CLI::Option* add(CLI::Option* option, std::string_view value_name);

  std::string command_;
  CLI::App app_;
  std::map<std::string, std::string, std::less<>> origins_;  // flag -> where set_if_unset got it
  std::vector<const CLI::Option*> repeatable_;               // texts() flags
};

// "a,b,c" -> {"a", "b", "c"} (empty parts kept, so that validators see them).
std::vector<std::string> split_list(std::string_view text);

// A CLI11 validator from a units.h parser: the parser's UsageError becomes the message.
template <typename Parse>
CLI::Validator units_validator(Parse parse) {
  return CLI::Validator(
      [parse](std::string& value) -> std::string {
        try {
          parse(value);
          return {};
        } catch (const std::invalid_argument& e) {
          return e.what();
        }
      },
      "", "units");
}

}  // namespace radixkv::tools
