// Tests that kill mutants of scripts/mutate.sh that no other test caught: the watermark flags.
#include <doctest/doctest.h>

#include <string>

#include "eviction/cache_budget.h"
#include "tools/cli/budget.h"

using namespace radixkv;
using namespace radixkv::tools;

TEST_CASE("watermarks: a size of p pages is exactly p pages, for every p of every budget to 200") {
  // Mutant budget-watermark-size-rounds-down: a size is floor(bytes / page) pages, no fewer, for
  // sizes on a page boundary and a byte short of the next one. resolve_watermarks parses the
  // flags; CacheBudget applies the one rule.
  constexpr uint64_t kPageBytes = 4096;
  uint64_t checked = 0;
  for (uint64_t budget = 1; budget <= 200; ++budget) {
    for (uint64_t pages = 1; pages <= budget; ++pages) {
      // A byte less than one more page is still `pages` pages.
      const std::string high = std::to_string(pages * kPageBytes + kPageBytes - 1) + "B";
      const std::string low = std::to_string(pages * kPageBytes) + "B";
      const Watermarks w =
          resolve_watermarks(high, low, {1.0, 1.0}, budget, kPageBytes, "--high", "--low");
      const CacheBudget counted({budget * kPageBytes, w.high, w.low}, kPageBytes);
      if (counted.high_pages() != pages || counted.low_pages() != pages) {
        CAPTURE(budget);
        CAPTURE(pages);
        CHECK(counted.high_pages() == pages);
        CHECK(counted.low_pages() == pages);
      }
      ++checked;
    }
  }
  CHECK(checked == 200 * 201 / 2);
}
