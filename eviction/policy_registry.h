// The eviction policies radixkv knows, in one table (eviction/policy_factory.cpp): each policy's
// name, a line on what it evicts first, its parameters with their defaults, and how to build it.
// make_policy() and policy_names() (eviction/eviction_policy.h) and the command line's --policy
// list and help all read it, so a policy is added with one entry there.
//
// A spec names a policy and optionally sets parameters: "NAME" or "NAME:key=value,key=value";
// values are numbers ("inf" is one), and a parameter not given takes its default.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "eviction/eviction_policy.h"

namespace radixkv {

struct PolicyParameter {
  std::string_view key;
  double default_value;
  std::string_view unit;  // what the value counts: SECONDS, FRACTION, PAGES
  std::string_view help;
};

struct PolicyInfo {
  std::string_view name;
  std::string_view summary;
  std::vector<PolicyParameter> parameters;
  // Builds the policy from one value per parameter, in the order of `parameters`. Throws
  // std::invalid_argument for a value out of range, saying which.
  std::unique_ptr<EvictionPolicy> (*make)(std::span<const double> values);
};

std::span<const PolicyInfo> policy_registry();

// One line per policy with its summary, then one per parameter with its default, e.g.
//   slru                 segmented LRU: ...
//     protected=FRACTION   share of linked entries ... [0.8]
// for a command line's help.
std::string policy_help();

}  // namespace radixkv
