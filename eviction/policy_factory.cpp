// The policy registry (eviction/policy_registry.h): the table, and make_policy() over it.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "eviction/fifo_policy.h"
#include "eviction/gdsf_policy.h"
#include "eviction/lfu_policy.h"
#include "eviction/lru_policy.h"
#include "eviction/newest_first_policies.h"
#include "eviction/policy_registry.h"
#include "eviction/priority_policy.h"
#include "eviction/reuse_policy.h"
#include "eviction/sieve_policy.h"
#include "eviction/slru_policy.h"

namespace radixkv {

namespace {

template <typename Policy>
std::unique_ptr<EvictionPolicy> make_plain(std::span<const double>) {
  return std::make_unique<Policy>();
}

template <typename Policy>
std::unique_ptr<EvictionPolicy> make_with_one(std::span<const double> values) {
  return std::make_unique<Policy>(values[0]);
}

// The table. A policy with no parameter builds with make_plain; one whose constructor takes its
// parameters in table order, with make_with_one or a lambda of its own.
const std::vector<PolicyInfo>& registry() {
  static const std::vector<PolicyInfo> table = {
      {"lru", "the leaf whose last access is oldest", {}, make_plain<LruPolicy>},
      {"lfu",
       "the leaf with the fewest hits, least recently used among equals",
       {},
       make_plain<LfuPolicy>},
      {"fifo",
       "the leaf that entered the cache first; accesses change nothing",
       {},
       make_plain<FifoPolicy>},
      {"mru", "the leaf whose last access is newest (SGLang's mru)", {}, make_plain<MruPolicy>},
      {"filo",
       "the leaf that entered the cache last (SGLang's filo); accesses change nothing",
       {},
       make_plain<FiloPolicy>},
      {"priority",
       "the lowest retention priority (TensorRT-LLM's), least recently used within one",
       {{"retention", PriorityPolicy::kForever, "SECONDS",
         "seconds a priority holds after its access on the caller's clock before it falls back "
         "to 35"}},
       make_with_one<PriorityPolicy>},
      {"slru",
       "segmented LRU: probation (hit once) before protected (hit again), least recent first",
       {{"protected", 0.8, "FRACTION", "share of linked entries the protected segment may hold"}},
       make_with_one<SlruPolicy>},
      {"sieve",
       "SIEVE: a hand sweeps oldest to newest, sparing leaves hit since it last passed",
       {},
       make_plain<SievePolicy>},
      {"gdsf",
       "greedy-dual size-frequency: the lowest hits x prefill saved per page, plus an aging term",
       {{"depth_pages", GdsfPolicy::kDefaultDepthPages, "PAGES",
         "depth at which attention doubles a page's prefill cost"}},
       make_with_one<GdsfPolicy>},
      {"reuse",
       "the page least likely to be reused within the cache's horizon, by a reuse rate learned "
       "online per class of request",
       {{"limit", ReusePolicy::kDefaultLimit, "FRACTION",
         "how much longer or shorter than LRU a class may keep its pages, as a fraction of the "
         "recent victims' age (0: LRU)"},
        {"prior", ReusePolicy::kDefaultPrior, "PAGES",
         "pseudo-reuses that start each class at the average rate"}},
       [](std::span<const double> values) -> std::unique_ptr<EvictionPolicy> {
         return std::make_unique<ReusePolicy>(values[0], values[1]);
       }},
  };
  return table;
}

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

std::string known_keys(const PolicyInfo& info) {
  if (info.parameters.empty()) return "none";
  std::string keys;
  for (const PolicyParameter& p : info.parameters) {
    keys += keys.empty() ? "" : ", ";
    keys += p.key;
  }
  return keys;
}

// A number as the help shows it: "inf", "0.8", "1024".
std::string format_value(double value) {
  return std::isinf(value) ? std::string("inf") : fmt::format("{}", value);
}

}  // namespace

std::span<const PolicyInfo> policy_registry() { return registry(); }

std::vector<std::string_view> policy_names() {
  std::vector<std::string_view> names;
  for (const PolicyInfo& info : registry()) names.push_back(info.name);
  return names;
}

std::unique_ptr<EvictionPolicy> make_policy(std::string_view spec) {
  const size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  const auto found = std::find_if(registry().begin(), registry().end(),
                                  [&](const PolicyInfo& info) { return info.name == name; });
  if (found == registry().end()) {
    throw std::invalid_argument(fmt::format("unknown eviction policy '{}' (known: {})", spec,
                                            fmt::join(policy_names(), ", ")));
  }
  const PolicyInfo& info = *found;
  std::vector<double> values;
  for (const PolicyParameter& p : info.parameters) values.push_back(p.default_value);
  const std::string_view list =
      colon == std::string_view::npos ? std::string_view{} : spec.substr(colon + 1);
  for (const auto& setting : parse_parameters(spec, list)) {
    const auto& [key, value] = setting;  // (a lambda may not capture a structured binding in clang)
    const auto known =
        std::find_if(info.parameters.begin(), info.parameters.end(),
                     [&](const PolicyParameter& p) { return p.key == setting.first; });
    if (known == info.parameters.end()) {
      throw std::invalid_argument(fmt::format(
          "eviction policy '{}': unknown parameter '{}' (known: {})", spec, key, known_keys(info)));
    }
    values[static_cast<size_t>(known - info.parameters.begin())] = value;
  }
  return info.make(values);
}

std::unique_ptr<EvictionPolicy> PolicyChoice::make() const {
  if (!factory_) return make_policy(spec_);
  std::unique_ptr<EvictionPolicy> policy = factory_();
  if (!policy) throw std::invalid_argument("eviction policy: the factory returned no policy");
  return policy;
}

std::string policy_help() {
  std::string help;
  for (const PolicyInfo& info : registry()) {
    help += fmt::format("  {:<22} {}\n", info.name, info.summary);
    for (const PolicyParameter& p : info.parameters) {
      help += fmt::format("    {:<20} {} [{}]\n", fmt::format("{}={}", p.key, p.unit), p.help,
                          format_value(p.default_value));
    }
  }
  return help;
}

}  // namespace radixkv
