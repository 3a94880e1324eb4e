#include "tools/cli/args.h"

#include <fmt/format.h>

#include <algorithm>

#include "tools/trace/units.h"

namespace radixkv::tools {

Args::Args(std::string_view command, std::span<const std::string> argv, std::vector<FlagSpec> specs)
    : command_(command), specs_(std::move(specs)) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (!arg.starts_with("--") || arg.size() == 2) {
      throw UsageError(
          fmt::format("radixkv {}: unexpected argument '{}' (flags start with --; see "
                      "radixkv {} --help)",
                      command_, arg, command_));
    }
    std::string name = arg.substr(2);
    std::optional<std::string> inline_value;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name.resize(eq);
    }
    const auto it = std::find_if(specs_.begin(), specs_.end(),
                                 [&](const FlagSpec& s) { return s.name == name; });
    if (it == specs_.end()) {
      throw UsageError(fmt::format("radixkv {}: unknown flag --{} (see radixkv {} --help)",
                                   command_, name, command_));
    }
    if (values_.contains(name)) {
      throw UsageError(fmt::format("--{}: given more than once", name));
    }
    std::string value;
    if (it->value_name.empty()) {
      if (inline_value) throw UsageError(fmt::format("--{}: takes no value", name));
    } else if (inline_value) {
      value = *inline_value;
    } else {
      // A following flag is not a value: `--trace --json` forgot the path.
      if (i + 1 >= argv.size() || argv[i + 1].starts_with("--")) {
        throw UsageError(fmt::format("--{}: needs a value ({})", name, it->value_name));
      }
      value = argv[++i];
    }
    if (!it->value_name.empty() && value.empty()) {
      throw UsageError(
          fmt::format("--{}: needs a value ({}), got an empty one", name, it->value_name));
    }
    values_.emplace(std::move(name), std::move(value));
  }
}

bool Args::has(std::string_view name) const {
  spec(name);
  return values_.find(name) != values_.end();
}

std::optional<std::string> Args::get(std::string_view name) const {
  spec(name);
  const auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Args::get_or(std::string_view name, std::string_view fallback) const {
  auto value = get(name);
  return value ? *value : std::string(fallback);
}

const FlagSpec& Args::spec(std::string_view name) const {
  for (const FlagSpec& s : specs_) {
    if (s.name == name) return s;
  }
  throw std::logic_error(fmt::format("radixkv {}: flag --{} was never declared", command_, name));
}

std::string Args::help_text(std::string_view usage, std::string_view description) const {
  std::string text = fmt::format("usage: {}\n\n{}\n\nflags:\n", usage, description);
  std::size_t width = 0;
  std::vector<std::string> heads;
  for (const FlagSpec& s : specs_) {
    heads.push_back(s.value_name.empty() ? fmt::format("--{}", s.name)
                                         : fmt::format("--{} {}", s.name, s.value_name));
    width = std::max(width, heads.back().size());
  }
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    text += fmt::format("  {:<{}}  {}\n", heads[i], width, specs_[i].help);
  }
  return text;
}

}  // namespace radixkv::tools
