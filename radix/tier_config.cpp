#include "radix/tier_config.h"

#include <fmt/format.h>

#include <charconv>
#include <stdexcept>

namespace radixkv {

std::vector<std::string_view> WritePolicy::names() {
  return {"write_back", "write_through", "write_through_selective"};
}

WritePolicy WritePolicy::parse(std::string_view spec) {
  const size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  const std::string_view rest =
      colon == std::string_view::npos ? std::string_view{} : spec.substr(colon + 1);
  WritePolicy policy;
  if (name == "write_back") {
    policy.mode = Mode::kWriteBack;
  } else if (name == "write_through") {
    policy.mode = Mode::kWriteThrough;
  } else if (name == "write_through_selective") {
    policy.mode = Mode::kWriteThroughSelective;
  } else {
    throw std::invalid_argument(
        fmt::format("unknown write policy '{}' (known: {})", spec, fmt::join(names(), ", ")));
  }
  if (colon == std::string_view::npos) return policy;
  constexpr std::string_view kHits = "hits=";
  if (policy.mode != Mode::kWriteThroughSelective) {
    throw std::invalid_argument(
        fmt::format("write policy '{}': {} takes no parameters", spec, name));
  }
  if (!rest.starts_with(kHits)) {
    throw std::invalid_argument(
        fmt::format("write policy '{}': unknown parameter '{}' (known: hits)", spec, rest));
  }
  const std::string_view value = rest.substr(kHits.size());
  uint32_t hits = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), hits);
  if (value.empty() || error != std::errc{} || end != value.data() + value.size() || hits == 0) {
    throw std::invalid_argument(fmt::format(
        "write policy '{}': hits must be a whole number of at least 1, got '{}'", spec, value));
  }
  policy.hits = hits;
  return policy;
}

std::string WritePolicy::to_string() const {
  switch (mode) {
    case Mode::kWriteBack:
      return "write_back";
    case Mode::kWriteThrough:
      return "write_through";
    case Mode::kWriteThroughSelective:
      return fmt::format("write_through_selective:hits={}", hits);
  }
  return "unknown";
}

}  // namespace radixkv
