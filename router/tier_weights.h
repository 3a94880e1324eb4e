// How much a cached block counts toward a worker's overlap, by the medium that holds it: a block on
// the GPU is used at once, one on CPU memory must be copied back first, one on disk read back.
//
// The defaults are llm-d's tiered prefix scorer's (llm-d-kv-cache, pkg/kvcache/backend.go,
// DefaultKVCacheBackendConfig: gpu 1.0, cpu 0.8; its later versions add a "storage" tier at 0.3,
// here DISK). Like llm-d, medium names match without regard to case (LMCache writes "cpu"), and
// a block whose event names no medium is on the GPU (vLLM's default). A medium not listed counts
// `other` (llm-d counts an unlisted one 1.0, as if on the GPU; here it counts as little as disk,
// since nothing says it is fast). A worker holding a block on several mediums counts the best.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace radixkv::router {

struct TierWeights {
  std::vector<std::pair<std::string, double>> by_medium = {
      {"GPU", 1.0}, {"CPU", 0.8}, {"DISK", 0.3}};
  double other = 0.3;

  // The weight of a block on `medium` ("" is an unnamed medium: the GPU).
  double weight(std::string_view medium) const;
  // Sets NAME's weight ("*" sets `other`). Throws std::invalid_argument unless 0 <= w <= 1 and
  // the name is not empty.
  void set(std::string_view name, double w);
};

// "NAME=W" as --tier-weight takes it; throws std::invalid_argument naming the flag and the value.
void parse_tier_weight(std::string_view spec, TierWeights& weights);

}  // namespace radixkv::router
