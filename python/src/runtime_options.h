// The runtime's options that Python spells its own way (PrefixCacheRuntime(quotas=...) and
// admit(retention=...)), read into the C++ configuration with errors that name the bad item.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <vector>

#include "eviction/quota_policy.h"
#include "eviction/retention.h"

namespace radixkv::python {

// Which argument quotas_from() reads, for its errors, and the page size of its tier.
struct QuotaArgument {
  const char* name;  // "quotas", "host_quotas"
  const char* tier;  // "device", "host"
  uint64_t bytes_per_page;
};

// {namespace: (min, max)}: a float is a fraction of the tier's budget, an int a size in bytes
// (0 is 0 either way); an int under one page is a ValueError, so that `(0, 1)` meant as
// fractions cannot become a one-byte maximum. TypeError for anything else.
std::vector<NamespaceQuota> quotas_from(const pybind11::dict& quotas, const QuotaArgument& arg);

// None, or an iterable of (token_start, token_end or None, priority, duration_s or None):
// TensorRT-LLM's TokenRangeRetentionConfig; None means to the end / never lapses. The values are
// checked by the runtime's admit (check_retention_ranges).
std::vector<TokenRangeRetention> retention_from(const pybind11::object& ranges);

}  // namespace radixkv::python
