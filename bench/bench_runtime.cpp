#include "bench/suite.h"

namespace radixkv::bench {

void register_runtime_benchmarks() {}

}  // namespace radixkv::bench
