#include "metrics/prometheus.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace radixkv::metrics {

namespace {

bool name_char(char c, bool first, bool colon_ok) {
  const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  const bool digit = c >= '0' && c <= '9';
  return letter || (colon_ok && c == ':') || (!first && digit);
}

bool valid_name(std::string_view name, bool colon_ok) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (!name_char(name[i], i == 0, colon_ok)) return false;
  }
  return true;
}

void check_label_names(std::string_view family, std::span<const Label> labels, bool histogram) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const std::string_view name = labels[i].name;
    if (!valid_name(name, false) || name.starts_with("__") || (histogram && name == "le")) {
      throw std::invalid_argument(fmt::format(
          "metric {}: label name '{}' is not [a-zA-Z_][a-zA-Z0-9_]*, starts with __, or is a "
          "histogram's le",
          family, name));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (labels[j].name == name) {
        throw std::invalid_argument(fmt::format("metric {}: label {} given twice", family, name));
      }
    }
  }
}

// `\` and newline, and `"` too where `quotes` (a label value).
std::string escape(std::string_view text, bool quotes) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string_view to_string(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

std::string escape_help(std::string_view help) { return escape(help, false); }

std::string escape_label_value(std::string_view value) { return escape(value, true); }

void PrometheusWriter::family(std::string_view name, MetricType type, std::string_view help) {
  if (!valid_name(name, true)) {
    throw std::invalid_argument(
        fmt::format("metric name '{}' is not [a-zA-Z_:][a-zA-Z0-9_:]*", name));
  }
  if ((type == MetricType::kCounter) != name.ends_with("_total")) {
    throw std::invalid_argument(
        fmt::format("metric {}: a counter's name ends in _total and no other's does (it is a {})",
                    name, to_string(type)));
  }
  // The names its samples use: a histogram's _bucket, _sum and _count may clash with another
  // family as well.
  std::vector<std::string> names = {std::string(name)};
  if (type == MetricType::kHistogram) {
    for (const char* suffix : {"_bucket", "_sum", "_count"})
      names.push_back(fmt::format("{}{}", name, suffix));
  }
  for (const std::string& taken : names) {
    if (families_.contains(taken)) {
      throw std::logic_error(fmt::format("metric {} written twice", taken));
    }
  }
  families_.insert(names.begin(), names.end());
  current_ = name;
  type_ = type;
  out_ << "# HELP " << name << ' ' << escape_help(help) << "\n# TYPE " << name << ' '
       << to_string(type) << '\n';
}

void PrometheusWriter::expect(MetricType type) const {
  if (current_.empty()) throw std::logic_error("metric sample before any family");
  const bool scalar = type != MetricType::kHistogram;
  if (scalar != (type_ != MetricType::kHistogram)) {
    throw std::logic_error(
        fmt::format("metric {} is a {}: wrong kind of sample", current_, to_string(type_)));
  }
}

void PrometheusWriter::write_labels(std::span<const Label> labels, std::string_view le) {
  if (labels.empty() && le.empty()) return;
  out_ << '{';
  const char* separator = "";
  for (const Label& label : labels) {
    out_ << separator << label.name << "=\"" << escape_label_value(label.value) << '"';
    separator = ",";
  }
  if (!le.empty()) out_ << separator << "le=\"" << le << '"';
  out_ << '}';
}

void PrometheusWriter::sample(std::span<const Label> labels, double value) {
  expect(MetricType::kGauge);
  check_label_names(current_, labels, false);
  out_ << current_;
  write_labels(labels);
  out_ << ' ' << format_value(value) << '\n';
}

void PrometheusWriter::sample(std::span<const Label> labels, uint64_t value) {
  expect(MetricType::kGauge);
  check_label_names(current_, labels, false);
  out_ << current_;
  write_labels(labels);
  out_ << ' ' << value << '\n';
}

void PrometheusWriter::histogram(std::span<const Label> labels,
                                 std::span<const double> upper_bounds,
                                 std::span<const uint64_t> counts, double sum) {
  expect(MetricType::kHistogram);
  check_label_names(current_, labels, true);
  if (counts.size() != upper_bounds.size() + 1) {
    throw std::invalid_argument(fmt::format("histogram {}: {} counts for {} bounds (want one more)",
                                            current_, counts.size(), upper_bounds.size()));
  }
  for (std::size_t i = 0; i < upper_bounds.size(); ++i) {
    if (!std::isfinite(upper_bounds[i]) || (i > 0 && upper_bounds[i] <= upper_bounds[i - 1])) {
      throw std::invalid_argument(
          fmt::format("histogram {}: bounds must be finite and ascending", current_));
    }
  }
  uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= upper_bounds.size(); ++i) {
    cumulative += counts[i];
    out_ << current_ << "_bucket";
    write_labels(labels, i < upper_bounds.size() ? format_value(upper_bounds[i]) : "+Inf");
    out_ << ' ' << cumulative << '\n';
  }
  out_ << current_ << "_sum";
  write_labels(labels);
  out_ << ' ' << format_value(sum) << '\n' << current_ << "_count";
  write_labels(labels);
  out_ << ' ' << cumulative << '\n';
}

}  // namespace radixkv::metrics
