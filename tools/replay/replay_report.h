// Reports of a replay: a table for people, one JSON object for programs.
//
// JSON keys (stable; later modes may add keys, never rename): mode, policy, trace, model,
// page_tokens, capacity_pages, capacity_tokens, capacity_bytes, high_watermark_pages,
// high_watermark_bytes, low_watermark_pages, low_watermark_bytes, requests, input_tokens,
// hit_tokens, hit_rate, hit_bytes, inserted_pages, uncached_pages, evictions (pages),
// evicted_nodes, peak_cached_pages, peak_cached_bytes, final_cached_pages, pages_leaked,
// accounting_ok, accounting_error, skipped_records, wall_seconds, cache_seconds,
// requests_per_second, admit_us and finish_us ({count, p50, p90, p99, max, mean}). With --quota:
// namespaces ([{namespace, min_pages, max_pages, requests, input_tokens, hit_tokens, hit_rate,
// final_cached_pages, lowest_after_min}], the quota namespaces, then the others as namespace null).
#pragma once

#include <string>
#include <vector>

#include "tools/replay/replay_result.h"

namespace radixkv::tools {

std::string format_report_text(const ReplayResult& result);
std::string format_report_json(const ReplayResult& result);

// A sweep: one row per (policy, capacity), in the order given.
std::string format_sweep_text(const std::vector<ReplayResult>& results);
std::string format_sweep_json(const std::vector<ReplayResult>& results);

// 61190000 -> "61,190,000"
std::string group_digits(uint64_t value);

}  // namespace radixkv::tools
