// libFuzzer harness: the fuzzer's bytes choose the level (the tree, pool and budget through
// PropertyDriver, or the runtime adapter through RuntimeDriver), the policy, the page size and
// every operation, so coverage guidance hunts for sequences where they disagree with the naive
// oracle. Any disagreement or exception aborts with its reason.
//
// Build: CXX=clang++ cmake -B build-fuzz -DRADIXKV_FUZZ=ON && cmake --build build-fuzz --target
// fuzz_cache Run:   build-fuzz/tests/fuzz_cache -max_total_time=60 tests/fuzz_corpus
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "tests/property_driver.h"
#include "tests/runtime_driver.h"

namespace {

// Two bytes per choice; when the input runs out, the run ends.
struct FuzzSource {
  const uint8_t* data;
  size_t size;
  size_t pos = 0;
  uint64_t operator()() {
    uint64_t value = 0;
    for (int i = 0; i < 2 && pos < size; ++i) value = (value << 8) | data[pos++];
    return value;
  }
  bool has_more() const { return pos < size; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const auto policies = radixkv::policy_names();
  const std::string_view policy = policies[(data[0] & 0x7f) % policies.size()];
  const bool runtime_level = (data[0] & 0x80) != 0;
  constexpr uint32_t kPageSizes[] = {1, 2, 16};
  const uint32_t page_tokens = kPageSizes[data[1] % 3];
  try {
    const FuzzSource source{data + 2, size - 2};
    if (runtime_level) {
      radixkv::testing::RuntimeDriver<FuzzSource>(policy, page_tokens, source).run(1 << 20);
    } else {
      radixkv::testing::PropertyDriver<FuzzSource>(policy, page_tokens, source).run(1 << 20);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_cache: policy %.*s, page_tokens %u: %s\n",
                 static_cast<int>(policy.size()), policy.data(), page_tokens, e.what());
    std::abort();
  }
  return 0;
}
