#include "tools/replay/host_tier_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "tools/replay/replay_report.h"

namespace radixkv::tools {

namespace {

double percent(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

}  // namespace

std::string format_host_tier_text(const ReplayResult& r) {
  const HostTierResult& h = r.host;
  if (!h.enabled) return {};
  std::string out;
  auto line = [&](std::string_view label, const std::string& value) {
    out += fmt::format("  {:<18} {}\n", label, value);
  };
  line("host tier",
       fmt::format("{} tokens = {} pages = {}, policy {}, {}",
                   group_digits(checked_mul(h.capacity_pages, r.page_tokens, "host capacity")),
                   group_digits(h.capacity_pages),
                   format_bytes(r.pages_bytes(h.capacity_pages, "host capacity")), h.policy,
                   h.write_policy));
  line("hits by tier",
       fmt::format("device {} tokens ({:.2f} %), host {} tokens ({:.2f} %) of input tokens",
                   group_digits(h.device_hit_tokens), percent(h.device_hit_tokens, r.input_tokens),
                   group_digits(h.host_hit_tokens), percent(h.host_hit_tokens, r.input_tokens)));
  line("host copies", fmt::format("{} pages loaded, {} pages written", group_digits(h.loaded_pages),
                                  group_digits(h.written_pages)));
  line("host evictions",
       fmt::format("{} pages ({} pages dropped from the device, {} writes skipped)",
                   group_digits(h.host_evictions), group_digits(h.dropped_pages),
                   group_digits(h.skipped_writes)));
  line("host peak cached",
       fmt::format("{} pages ({:.1f} % of the host capacity)", group_digits(h.peak_cached_pages),
                   percent(h.peak_cached_pages, h.capacity_pages)));
  return out;
}

void add_host_tier_json(nlohmann::ordered_json& out, const ReplayResult& r) {
  const HostTierResult& h = r.host;
  if (!h.enabled) return;
  out["device_hit_tokens"] = h.device_hit_tokens;
  out["host_hit_tokens"] = h.host_hit_tokens;
  out["loaded_pages"] = h.loaded_pages;
  out["written_pages"] = h.written_pages;
  out["host_evictions"] = h.host_evictions;
  out["host_tier"] = {
      {"capacity_pages", h.capacity_pages},
      {"capacity_tokens", checked_mul(h.capacity_pages, r.page_tokens, "host capacity")},
      {"capacity_bytes", r.pages_bytes(h.capacity_pages, "host capacity")},
      {"policy", h.policy},
      {"write_policy", h.write_policy},
      {"high_watermark_pages", h.high_watermark_pages},
      {"low_watermark_pages", h.low_watermark_pages},
      {"dropped_pages", h.dropped_pages},
      {"skipped_writes", h.skipped_writes},
      {"peak_cached_pages", h.peak_cached_pages},
      {"final_cached_pages", h.final_cached_pages},
  };
}

std::string host_capacity_text(const ReplayResult& r) {
  if (!r.host.enabled) return {};
  return group_digits(checked_mul(r.host.capacity_pages, r.page_tokens, "host capacity"));
}

}  // namespace radixkv::tools
