// The Prometheus text exposition (metrics/prometheus.h) and the latency histogram: exact lines for
// small cases, every misuse refused, and a larger exposition read back by Python's
// prometheus_client (tests/prometheus_oracle.py), an independent parser, against what was meant.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "metrics/latency_histogram.h"
#include "metrics/prometheus.h"
#include "tests/child_process.h"

using namespace radixkv::metrics;
using radixkv::testing::ChildProcess;
using Json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

const std::string kPython = RADIXKV_DEBIAN_PYTHON;
const std::string kTests = RADIXKV_TESTS_DIR;

std::optional<std::string> prometheus_client_missing() {
  ChildProcess probe({kPython, "-c", "import prometheus_client.parser; print('ok')"});
  const std::optional<std::string> line = probe.read_line(30s);
  if (probe.wait(30s) != 0 || line != "ok") {
    return kPython + " lacks python3-prometheus-client";
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("prometheus: families, labels and values, line for line") {
  std::ostringstream out;
  PrometheusWriter w(out);
  w.family("radixkv_requests_total", MetricType::kCounter, "Requests admitted.");
  const Label shard0[] = {{"shard", "0"}};
  w.sample(shard0, uint64_t{42});
  w.family("radixkv_cached_bytes", MetricType::kGauge, "Bytes of KV cached,\nby \\ tier.");
  const Label tier[] = {{"tier", "a\"b\\c\nd"}, {"shard", "1"}};
  w.sample(tier, 0.1);
  w.sample(std::numeric_limits<double>::infinity());
  CHECK(out.str() ==
        "# HELP radixkv_requests_total Requests admitted.\n"
        "# TYPE radixkv_requests_total counter\n"
        "radixkv_requests_total{shard=\"0\"} 42\n"
        "# HELP radixkv_cached_bytes Bytes of KV cached,\\nby \\\\ tier.\n"
        "# TYPE radixkv_cached_bytes gauge\n"
        "radixkv_cached_bytes{tier=\"a\\\"b\\\\c\\nd\",shard=\"1\"} 0.1\n"
        "radixkv_cached_bytes +Inf\n");
}

TEST_CASE("prometheus: values print in the shortest form that reads back the same") {
  CHECK(format_value(0.0) == "0");
  CHECK(format_value(3.0) == "3");
  CHECK(format_value(0.1) == "0.1");
  CHECK(format_value(2.5e-7) == "2.5e-07");
  CHECK(format_value(-1.5) == "-1.5");
  CHECK(format_value(std::numeric_limits<double>::infinity()) == "+Inf");
  CHECK(format_value(-std::numeric_limits<double>::infinity()) == "-Inf");
  CHECK(format_value(std::nan("")) == "NaN");
  for (const double v : {0.1, 1.0 / 3.0, 6.02214076e23, 1e-300, 123456789.123456789}) {
    CHECK(std::stod(format_value(v)) == v);
  }
}

TEST_CASE("prometheus: a histogram is cumulative buckets ending at +Inf, then sum and count") {
  std::ostringstream out;
  PrometheusWriter w(out);
  w.family("radixkv_admit_seconds", MetricType::kHistogram, "Admit latency.");
  const double bounds[] = {0.001, 0.01};
  const uint64_t counts[] = {2, 0, 1};
  const Label op[] = {{"op", "admit"}};
  w.histogram(op, bounds, counts, 0.5);
  CHECK(out.str() ==
        "# HELP radixkv_admit_seconds Admit latency.\n"
        "# TYPE radixkv_admit_seconds histogram\n"
        "radixkv_admit_seconds_bucket{op=\"admit\",le=\"0.001\"} 2\n"
        "radixkv_admit_seconds_bucket{op=\"admit\",le=\"0.01\"} 2\n"
        "radixkv_admit_seconds_bucket{op=\"admit\",le=\"+Inf\"} 3\n"
        "radixkv_admit_seconds_sum{op=\"admit\"} 0.5\n"
        "radixkv_admit_seconds_count{op=\"admit\"} 3\n");
}

TEST_CASE("prometheus: misuse is refused before its line is written") {
  std::ostringstream out;
  PrometheusWriter w(out);
  CHECK_THROWS_WITH_AS(w.sample(1.0), doctest::Contains("before any family"), std::logic_error);
  for (const char* bad : {"", "1abc", "a-b", "a b", "é"}) {
    CHECK_THROWS_WITH_AS(w.family(bad, MetricType::kGauge, "x"), doctest::Contains("metric name"),
                         std::invalid_argument);
  }
  CHECK_THROWS_WITH_AS(w.family("radixkv_requests", MetricType::kCounter, "x"),
                       doctest::Contains("_total"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(w.family("radixkv_bytes_total", MetricType::kGauge, "x"),
                       doctest::Contains("_total"), std::invalid_argument);
  CHECK(out.str().empty());

  w.family("radixkv_latency_seconds", MetricType::kHistogram, "x");
  const std::string before = out.str();
  const double bounds[] = {1.0, 2.0};
  const uint64_t counts[] = {1, 1, 1};
  const Label le[] = {{"le", "1"}};
  CHECK_THROWS_WITH_AS(w.histogram(le, bounds, counts, 1.0), doctest::Contains("label name"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(w.histogram({}, bounds, std::span<const uint64_t>(counts).first(2), 1.0),
                       doctest::Contains("want one more"), std::invalid_argument);
  const double descending[] = {2.0, 1.0};
  CHECK_THROWS_WITH_AS(w.histogram({}, descending, counts, 1.0), doctest::Contains("ascending"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(w.sample(1.0), doctest::Contains("wrong kind"), std::logic_error);
  CHECK(out.str() == before);
  // Its sample names are taken too.
  CHECK_THROWS_WITH_AS(w.family("radixkv_latency_seconds_count", MetricType::kGauge, "x"),
                       doctest::Contains("twice"), std::logic_error);

  w.family("radixkv_pages", MetricType::kGauge, "x");
  CHECK_THROWS_WITH_AS(w.family("radixkv_pages", MetricType::kGauge, "x"),
                       doctest::Contains("twice"), std::logic_error);
  for (const char* bad : {"__reserved", "9lives", "a:b", ""}) {
    const Label label[] = {{bad, "v"}};
    CHECK_THROWS_WITH_AS(w.sample(label, 1.0), doctest::Contains("label name"),
                         std::invalid_argument);
  }
  const Label twice[] = {{"tier", "a"}, {"tier", "b"}};
  CHECK_THROWS_WITH_AS(w.sample(twice, 1.0), doctest::Contains("twice"), std::invalid_argument);
}

TEST_CASE("latency histogram: a value at a bound counts in that bucket (le), sums are exact") {
  LatencyHistogram h;
  h.observe(0ns);               // first bucket
  h.observe(250ns);             // at the first bound: still the first bucket
  h.observe(251ns);             // the second
  h.observe(10'000'000'001ns);  // above 10 s: the last bucket
  h.observe(-5ns);              // a clock that went back counts as 0
  const std::span<const uint64_t> counts = h.counts();
  REQUIRE(counts.size() == LatencyHistogram::kUpperBoundsNs.size() + 1);
  CHECK(counts[0] == 3);
  CHECK(counts[1] == 1);
  CHECK(counts.back() == 1);
  CHECK(h.count() == 5);
  CHECK(h.sum_ns() == 250 + 251 + 10'000'000'001ull);
  LatencyHistogram other;
  other.observe(1us);
  h.merge(other);
  CHECK(h.counts()[2] == 1);
  CHECK(h.count() == 6);
  CHECK(h.sum_seconds() == doctest::Approx(10.000001502));
  const auto& seconds = LatencyHistogram::upper_bounds_seconds();
  for (std::size_t i = 0; i < seconds.size(); ++i) {
    CHECK(seconds[i] == static_cast<double>(LatencyHistogram::kUpperBoundsNs[i]) / 1e9);
  }
}

TEST_CASE("prometheus: Python's prometheus_client reads back every family, label and value") {
  if (const auto why = prometheus_client_missing()) RADIXKV_SKIP_OUTSIDE_CI(*why);
  std::ostringstream text;
  PrometheusWriter w(text);
  Json expected = Json::array();
  auto family = [&](const std::string& name, MetricType type, const std::string& help) {
    w.family(name, type, help);
    expected.push_back({{"name", name},
                        {"type", std::string(to_string(type))},
                        {"help", help},
                        {"samples", Json::array()}});
  };
  auto expect = [&](const std::string& name, Json labels, Json value) {
    expected.back()["samples"].push_back(
        {{"name", name}, {"labels", std::move(labels)}, {"value", std::move(value)}});
  };

  family("radixkv_requests_total", MetricType::kCounter, "Requests; help with \\ and\nnewline.");
  for (const std::string shard : {"0", "1"}) {
    const Label labels[] = {{"shard", shard}};
    w.sample(labels, uint64_t{1234567890123});
    expect("radixkv_requests_total", {{"shard", shard}}, 1234567890123ull);
  }
  family("radixkv_odd_values", MetricType::kGauge, "Values at the edges.");
  const std::string nasty = "quote \" backslash \\ newline \n brace } comma , é";
  const double values[] = {0.1, -2.5, 1e-6, 1e300, 6.02214076e23};
  for (std::size_t i = 0; i < std::size(values); ++i) {
    const std::string index = std::to_string(i);
    const Label labels[] = {{"i", index}, {"text", nasty}};
    w.sample(labels, values[i]);
    expect("radixkv_odd_values", {{"i", index}, {"text", nasty}}, values[i]);
  }
  const std::pair<double, const char*> specials[] = {
      {std::numeric_limits<double>::infinity(), "+Inf"},
      {-std::numeric_limits<double>::infinity(), "-Inf"},
      {std::nan(""), "NaN"}};
  for (const auto& [value, name] : specials) {
    const Label labels[] = {{"special", name}};
    w.sample(labels, value);
    expect("radixkv_odd_values", {{"special", name}}, name);
  }
  family("radixkv_admit_seconds", MetricType::kHistogram, "Admit latency.");
  LatencyHistogram h;
  for (const std::chrono::nanoseconds d :
       {100ns, 900ns, 3000ns, 3000ns, 40000000ns, 20000000000ns}) {
    h.observe(d);
  }
  const Label op[] = {{"op", "admit"}};
  w.histogram(op, LatencyHistogram::upper_bounds_seconds(), h.counts(), h.sum_seconds());
  uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= LatencyHistogram::kUpperBoundsNs.size(); ++i) {
    cumulative += h.counts()[i];
    const Json le = i < LatencyHistogram::kUpperBoundsNs.size()
                        ? Json(static_cast<double>(LatencyHistogram::kUpperBoundsNs[i]) / 1e9)
                        : Json("+Inf");
    expect("radixkv_admit_seconds_bucket", {{"op", "admit"}, {"le", le}}, cumulative);
  }
  expect("radixkv_admit_seconds_sum", {{"op", "admit"}}, h.sum_seconds());
  expect("radixkv_admit_seconds_count", {{"op", "admit"}}, h.count());
  CHECK(h.count() == 6);

  const std::string exposition = radixkv::testing::scratch_path("exposition.txt");
  const std::string want = radixkv::testing::scratch_path("expected.json");
  std::ofstream(exposition) << text.str();
  std::ofstream(want) << expected.dump();
  ChildProcess oracle({kPython, kTests + "/prometheus_oracle.py", exposition, want});
  const std::optional<std::string> verdict = oracle.read_line(60s);
  CHECK(oracle.wait(60s) == 0);
  CHECK(verdict == std::optional<std::string>("ok"));
}
