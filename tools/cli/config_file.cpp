#include "tools/cli/config_file.h"

#include <fmt/format.h>

#include <toml++/toml.h>

#include <filesystem>
#include <system_error>

#include "tools/trace/units.h"

namespace radixkv::tools {

namespace {

std::string origin_of(const std::string& path, const toml::node& node) {
  return fmt::format("{}:{}", path, node.source().begin.line);
}

// A scalar as the flag would be written on the command line.
std::optional<std::string> scalar_text(const toml::node& node) {
  if (const auto* s = node.as_string()) return s->get();
  if (const auto* i = node.as_integer()) return std::to_string(i->get());
  if (const auto* d = node.as_floating_point()) return fmt::format("{}", d->get());
  if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
  return std::nullopt;
}

std::string value_text(const std::string& path, const std::string& key, const toml::node& node) {
  if (auto text = scalar_text(node)) return *text;
  if (const auto* array = node.as_array()) {
    std::vector<std::string> parts;
    for (const toml::node& item : *array) {
      auto text = scalar_text(item);
      if (!text) break;
      parts.push_back(*text);
    }
    if (parts.size() == array->size()) return fmt::format("{}", fmt::join(parts, ","));
  }
  throw UsageError(
      fmt::format("--config {}: {} must be a string, a number, true or false, or "
                  "an array of those",
                  origin_of(path, node), key));
}

std::vector<ConfigSetting> settings_of(const std::string& path, const toml::table& table,
                                       ConfigFile* tables) {
  std::vector<ConfigSetting> out;
  for (const auto& [key, node] : table) {
    const std::string name(key.str());
    if (const toml::table* inner = node.as_table()) {
      if (tables == nullptr) {
        throw UsageError(
            fmt::format("--config {}: [{}] is a table inside a table; only one "
                        "level ([cache], [engine]) is read",
                        origin_of(path, node), name));
      }
      tables->tables[name] = settings_of(path, *inner, nullptr);
      tables->table_origins[name] = origin_of(path, node);
      continue;
    }
    out.push_back({name, value_text(path, name, node), origin_of(path, node)});
  }
  return out;
}

}  // namespace

ConfigFile read_config(const std::string& path) {
  // A directory opens and reads as an empty file: refused, or the run would take the defaults.
  if (std::error_code error; std::filesystem::is_directory(path, error)) {
    throw UsageError(fmt::format("--config: '{}' is a directory, not a TOML file", path));
  }
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    if (e.source().begin.line == 0) {
      throw UsageError(fmt::format("--config: cannot read '{}': {}", path, e.description()));
    }
    throw UsageError(
        fmt::format("--config {}:{}: {}", path, e.source().begin.line, e.description()));
  }
  ConfigFile config;
  config.top = settings_of(path, root, &config);
  return config;
}

}  // namespace radixkv::tools
