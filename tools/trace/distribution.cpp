#include "tools/trace/distribution.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "tools/trace/units.h"

namespace radixkv::tools {

namespace {

constexpr double kMaxValue = 1e9;

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

}  // namespace

Distribution Distribution::parse(std::string_view text, std::string_view flag) {
  const auto parts = split(text, ':');
  auto bad = [&](std::string_view why) {
    return UsageError(
        fmt::format("{}: '{}' is not a distribution ({}); write N, uniform:A:B, exp:MEAN or "
                    "lognormal:MEAN:SIGMA",
                    flag, text, why));
  };
  auto number = [&](std::string_view part) {
    try {
      return parse_real(part, 0.0, kMaxValue);
    } catch (const UsageError& e) {
      throw bad(e.what());
    }
  };
  const std::string_view kind = parts[0];
  if (parts.size() == 1) return fixed(number(kind));
  if (kind == "fixed" && parts.size() == 2) return fixed(number(parts[1]));
  if (kind == "exp" && parts.size() == 2) return {Kind::kExponential, number(parts[1]), 0};
  if (kind == "uniform" && parts.size() == 3) {
    const double a = number(parts[1]), b = number(parts[2]);
    if (a > b) throw bad("A is larger than B");
    return {Kind::kUniform, a, b};
  }
  if (kind == "lognormal" && parts.size() == 3) {
    const double mean = number(parts[1]), sigma = number(parts[2]);
    if (mean <= 0) throw bad("the mean must be positive");
    if (sigma > 10) throw bad("SIGMA above 10 makes no sense for lengths");
    return {Kind::kLogNormal, mean, sigma};
  }
  throw bad("unknown form");
}

double Distribution::sample(Rng& rng) const {
  switch (kind_) {
    case Kind::kFixed:
      return a_;
    case Kind::kUniform:
      return a_ + (b_ - a_) * rng.uniform();
    case Kind::kExponential:
      return rng.exponential(a_);
    case Kind::kLogNormal: {
      const double mu = std::log(a_) - b_ * b_ / 2;  // so that the mean is a_
      return std::min(kMaxValue, std::exp(mu + b_ * rng.normal()));
    }
  }
  return a_;
}

uint32_t Distribution::sample_count(Rng& rng, uint32_t min) const {
  const double value = std::round(sample(rng));
  return std::max(min, static_cast<uint32_t>(std::clamp(value, 0.0, kMaxValue)));
}

double Distribution::mean() const {
  switch (kind_) {
    case Kind::kUniform:
      return (a_ + b_) / 2;
    default:
      return a_;
  }
}

std::string Distribution::to_string() const {
  switch (kind_) {
    case Kind::kFixed:
      return fmt::format("{}", a_);
    case Kind::kUniform:
      return fmt::format("uniform:{}:{}", a_, b_);
    case Kind::kExponential:
      return fmt::format("exp:{}", a_);
    case Kind::kLogNormal:
      return fmt::format("lognormal:{}:{}", a_, b_);
  }
  return "?";
}

}  // namespace radixkv::tools
