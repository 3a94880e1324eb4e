#include "tools/replay/run_checks.h"

#include <fmt/format.h>

#include <exception>

namespace radixkv::tools {

std::string check_end_of_run(const PrefixCacheRuntime& runtime) {
  try {
    const RadixTree& tree = runtime.tree();
    const uint64_t private_pages = runtime.check_accounting();
    if (private_pages != 0 || runtime.live_sequences() != 0) {
      return fmt::format("{} private pages and {} live sequences after the run", private_pages,
                         runtime.live_sequences());
    }
    if (tree.protected_pages() != 0) {
      return fmt::format("{} cached pages still protected after every request ended",
                         tree.protected_pages());
    }
    if (tree.has_host_tier() && tree.host_pinned_pages() != 0) {
      return fmt::format("{} host pages still pinned with no request running",
                         tree.host_pinned_pages());
    }
    tree.verify();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace radixkv::tools
