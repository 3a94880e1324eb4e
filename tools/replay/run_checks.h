// What every replay checks once its last request is over, whatever its mode.
#pragma once

#include <string>

#include "runtime/prefix_cache_runtime.h"

namespace radixkv::tools {

// "" when the runtime is back at rest, else what broke: the accounting identities of both tiers
// (PrefixCacheRuntime::check_accounting), no private page, live sequence, protected page or
// pinned host page left, and the tree's own invariants (RadixTree::verify).
std::string check_end_of_run(const PrefixCacheRuntime& runtime);

}  // namespace radixkv::tools
