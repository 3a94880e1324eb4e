// `--config FILE`: settings of `radixkv replay` in a TOML file (read with toml++, Debian
// libtomlplusplus-dev). Keys are flag names without their dashes; values are strings, numbers,
// booleans (plain flags) or arrays (comma lists such as sweep or policy):
//
//   model = "llama-3-8b"          # every mode
//   page-tokens = 16
//   [cache]                       # cache mode only
//   capacity-tokens = 1e6
//   [engine]                      # engine mode only
//   pool-bytes = "40GiB"
//   high-watermark = "38GiB"
//   low-watermark = 0.85
//
// A flag on the command line wins over the file; a mode's table wins over the top level. What a
// key means and how it is checked is exactly what its flag means (tools/cli/flags.h).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace radixkv::tools {

struct ConfigSetting {
  std::string key;     // flag name without dashes: "cache-bytes"
  std::string value;   // as the flag would take it: "40GiB", "1000000", "lru,gdsf", "true"
  std::string origin;  // "file:line", for errors
};

struct ConfigFile {
  std::vector<ConfigSetting> top;                            // keys outside any table
  std::map<std::string, std::vector<ConfigSetting>> tables;  // [name] -> its keys
  std::map<std::string, std::string> table_origins;          // [name] -> "file:line"
};

// Throws UsageError "--config: FILE:LINE: reason" for a file that cannot be read (a directory
// included) or parsed, or a value no flag could take (a date, a table nested in a table).
ConfigFile read_config(const std::string& path);

}  // namespace radixkv::tools
