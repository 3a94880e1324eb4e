#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "eviction/eviction_policy.h"
#include "eviction/fifo_policy.h"
#include "eviction/gdsf_policy.h"
#include "eviction/lfu_policy.h"
#include "eviction/lru_policy.h"
#include "eviction/priority_policy.h"
#include "eviction/reuse_policy.h"
#include "eviction/sieve_policy.h"
#include "eviction/slru_policy.h"

namespace radixkv {

namespace {

// "k1=v1,k2=v2" after the colon of a policy spec, as (key, number) pairs in order.
std::vector<std::pair<std::string_view, double>> parse_parameters(std::string_view spec,
                                                                  std::string_view list) {
  std::vector<std::pair<std::string_view, double>> parameters;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      throw std::invalid_argument(
          fmt::format("eviction policy '{}': parameter '{}' is not key=value", spec, item));
    }
    const std::string_view key = item.substr(0, eq);
    const std::string_view text = item.substr(eq + 1);
    double value = 0.0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc{} || end != text.data() + text.size() ||
        std::isnan(value)) {
      throw std::invalid_argument(fmt::format(
          "eviction policy '{}': value '{}' of parameter '{}' is not a number", spec, text, key));
    }
    parameters.emplace_back(key, value);
  }
  return parameters;
}

// Applies each parameter through `set(key, value)`, which returns false for an unknown key.
template <typename Set>
void apply_parameters(std::string_view spec, std::string_view list, std::string_view known,
                      Set&& set) {
  for (const auto& [key, value] : parse_parameters(spec, list)) {
    if (!set(key, value)) {
      throw std::invalid_argument(fmt::format(
          "eviction policy '{}': unknown parameter '{}' (known: {})", spec, key, known));
    }
  }
}

}  // namespace

std::vector<std::string_view> policy_names() {
  return {"lru", "lfu", "fifo", "priority", "slru", "sieve", "gdsf", "reuse"};
}

std::unique_ptr<EvictionPolicy> make_policy(std::string_view spec) {
  const size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  const std::string_view list =
      colon == std::string_view::npos ? std::string_view{} : spec.substr(colon + 1);
  const auto no_parameters = [&] {
    apply_parameters(spec, list, "none", [](std::string_view, double) { return false; });
  };
  if (name == "lru") {
    no_parameters();
    return std::make_unique<LruPolicy>();
  }
  if (name == "lfu") {
    no_parameters();
    return std::make_unique<LfuPolicy>();
  }
  if (name == "fifo") {
    no_parameters();
    return std::make_unique<FifoPolicy>();
  }
  if (name == "sieve") {
    no_parameters();
    return std::make_unique<SievePolicy>();
  }
  if (name == "priority") {
    double retention = PriorityPolicy::kForever;
    apply_parameters(spec, list, "retention", [&](std::string_view key, double value) {
      if (key != "retention") return false;
      retention = value;
      return true;
    });
    return std::make_unique<PriorityPolicy>(retention);
  }
  if (name == "slru") {
    double fraction = 0.8;
    apply_parameters(spec, list, "protected", [&](std::string_view key, double value) {
      if (key != "protected") return false;
      fraction = value;
      return true;
    });
    return std::make_unique<SlruPolicy>(fraction);
  }
  if (name == "gdsf") {
    double depth_pages = GdsfPolicy::kDefaultDepthPages;
    apply_parameters(spec, list, "depth_pages", [&](std::string_view key, double value) {
      if (key != "depth_pages") return false;
      depth_pages = value;
      return true;
    });
    return std::make_unique<GdsfPolicy>(depth_pages);
  }
  if (name == "reuse") {
    double limit = ReusePolicy::kDefaultLimit;
    double prior = ReusePolicy::kDefaultPrior;
    apply_parameters(spec, list, "limit, prior", [&](std::string_view key, double value) {
      if (key == "limit") {
        limit = value;
      } else if (key == "prior") {
        prior = value;
      } else {
        return false;
      }
      return true;
    });
    return std::make_unique<ReusePolicy>(limit, prior);
  }
  throw std::invalid_argument(fmt::format("unknown eviction policy '{}' (known: {})", spec,
                                          fmt::join(policy_names(), ", ")));
}

}  // namespace radixkv
