// PrometheusWriter: Prometheus's text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/; content type
// kPrometheusContentType).
//
// A family is a `# HELP` line, a `# TYPE` line, then its samples, all together:
//   # HELP radixkv_requests_total Requests admitted.
//   # TYPE radixkv_requests_total counter
//   radixkv_requests_total{shard="0"} 42
// A histogram family writes, per label set, cumulative `_bucket{le="..."}` lines ending at
// le="+Inf", then `_sum` and `_count`.
// Names follow Prometheus's conventions, and the writer enforces them: [a-zA-Z_:][a-zA-Z0-9_:]*,
// a counter's name ends in `_total` and no other's does; label names are [a-zA-Z_][a-zA-Z0-9_]*,
// not starting with `__`, and a histogram's labels never include `le`. Each family is written
// once. Escaping: in HELP, `\` and newline become `\\` and `\n`; in a label value, `\`, `"` and
// newline become `\\`, `\"` and `\n`. Values: integers as they are, other numbers in the shortest
// form that reads back the same, and `+Inf`, `-Inf`, `NaN`.
// Misuse (a bad name, a family repeated, a sample outside its family or of the wrong kind) throws
// std::invalid_argument or std::logic_error before anything of the offending line is written.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <set>
#include <span>
#include <string>
#include <string_view>

namespace radixkv::metrics {

inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

enum class MetricType : uint8_t { kCounter, kGauge, kHistogram };
std::string_view to_string(MetricType type);

struct Label {
  std::string_view name;
  std::string_view value;
};

class PrometheusWriter {
 public:
  explicit PrometheusWriter(std::ostream& out) : out_(out) {}

  // Starts a family (its HELP and TYPE lines); the samples that follow belong to it.
  void family(std::string_view name, MetricType type, std::string_view help);
  // A counter's or gauge's sample.
  void sample(std::span<const Label> labels, double value);
  void sample(double value) { sample({}, value); }
  void sample(std::span<const Label> labels, uint64_t value);
  void sample(uint64_t value) { sample({}, value); }
  // A histogram's sample: `upper_bounds` ascending (the +Inf bucket is implied), `counts` one per
  // bound plus the last for everything above (not cumulative: the writer sums them), `sum` the
  // sum of the observed values.
  void histogram(std::span<const Label> labels, std::span<const double> upper_bounds,
                 std::span<const uint64_t> counts, double sum);

 private:
  void expect(MetricType type) const;
  void write_labels(std::span<const Label> labels, std::string_view le = {});

  std::ostream& out_;
  std::set<std::string, std::less<>> families_;
  std::string current_;
  MetricType type_ = MetricType::kGauge;
};

// Shortest text of `value` that a Prometheus parser reads back as the same double.
std::string format_value(double value);
// The escapes above.
std::string escape_help(std::string_view help);
std::string escape_label_value(std::string_view value);

}  // namespace radixkv::metrics
