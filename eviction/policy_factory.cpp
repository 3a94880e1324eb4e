#include <fmt/format.h>

#include <stdexcept>

#include "eviction/eviction_policy.h"
#include "eviction/lru_policy.h"

namespace radixkv {

std::vector<std::string_view> policy_names() { return {"lru"}; }

std::unique_ptr<EvictionPolicy> make_policy(std::string_view name) {
  if (name == "lru") return std::make_unique<LruPolicy>();
  throw std::invalid_argument(
      fmt::format("unknown eviction policy '{}' (known: {})", name, fmt::join(policy_names(), ", ")));
}

}  // namespace radixkv
