// The runtime's options that Python spells its own way: quotas and retention ranges.
#include "runtime_options.h"

#include <fmt/format.h>

#include <string>

namespace py = pybind11;

namespace radixkv::python {

namespace {

// One share of quotas_from()'s (min, max), as it reads them.
Watermark quota_share(py::handle share, const QuotaArgument& arg, uint64_t ns, const char* which) {
  if (py::isinstance<py::bool_>(share) ||
      !(py::isinstance<py::int_>(share) || py::isinstance<py::float_>(share))) {
    throw py::type_error(fmt::format(
        "PrefixCacheRuntime: {}[{}] {} must be a float (a fraction of the {} budget) or an int "
        "(bytes), not {}",
        arg.name, ns, which, arg.tier, std::string(py::str(share.get_type().attr("__name__")))));
  }
  if (py::isinstance<py::float_>(share)) return Watermark(share.cast<double>());
  const auto bytes = share.cast<int64_t>();
  if (bytes == 0) return Watermark(0.0);
  if (bytes < 0 || static_cast<uint64_t>(bytes) < arg.bytes_per_page) {
    throw py::value_error(fmt::format(
        "PrefixCacheRuntime: {}[{}] {} = {} bytes is less than one page ({} bytes); give a "
        "float for a fraction of the {} budget",
        arg.name, ns, which, bytes, arg.bytes_per_page, arg.tier));
  }
  return Watermark::of_bytes(static_cast<uint64_t>(bytes));
}

}  // namespace

// `quotas`: {namespace: (min, max)}; each share as quota_share() reads it.
std::vector<NamespaceQuota> quotas_from(const py::dict& quotas, const QuotaArgument& arg) {
  std::vector<NamespaceQuota> out;
  for (const auto& [key, value] : quotas) {
    NamespaceQuota quota;
    quota.name_space = key.cast<uint64_t>();
    const auto shares = value.cast<py::sequence>();
    if (shares.size() != 2) {
      throw py::value_error(
          fmt::format("PrefixCacheRuntime: {}[{}] must be (min, max), got {} items", arg.name,
                      quota.name_space, shares.size()));
    }
    quota.min = quota_share(shares[0], arg, quota.name_space, "min");
    quota.max = quota_share(shares[1], arg, quota.name_space, "max");
    out.push_back(quota);
  }
  return out;
}

// A request's retention hints from Python: (token_start, token_end, priority, duration_s) each,
// token_end None for "to the end" and duration_s None for "never lapses" (TensorRT-LLM's
// TokenRangeRetentionConfig; the runtime checks the values).
std::vector<TokenRangeRetention> retention_from(const py::object& ranges) {
  std::vector<TokenRangeRetention> out;
  if (ranges.is_none()) return out;
  for (const py::handle item : ranges) {
    const auto range = py::reinterpret_borrow<py::object>(item).cast<py::sequence>();
    if (range.size() != 4) {
      throw py::value_error(fmt::format(
          "admit: retention range {} must be (token_start, token_end, priority, duration_s), "
          "got {} items",
          out.size(), range.size()));
    }
    TokenRangeRetention r;
    r.token_start = range[0].cast<uint32_t>();
    if (!range[1].is_none()) r.token_end = range[1].cast<uint32_t>();
    r.priority = range[2].cast<int32_t>();
    if (!range[3].is_none()) r.duration_s = range[3].cast<double>();
    out.push_back(r);
  }
  return out;
}

}  // namespace radixkv::python
