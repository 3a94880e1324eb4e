#include "router/tier_weights.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace radixkv::router {

namespace {

bool same_name(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

double TierWeights::weight(std::string_view medium) const {
  if (medium.empty()) medium = "GPU";
  for (const auto& [name, w] : by_medium) {
    if (same_name(name, medium)) return w;
  }
  return other;
}

void TierWeights::set(std::string_view name, double w) {
  if (name.empty()) throw std::invalid_argument("a tier weight needs a medium name");
  if (!(w >= 0 && w <= 1)) {
    throw std::invalid_argument("the weight of " + std::string(name) + " must be in [0, 1], got " +
                                std::to_string(w));
  }
  if (name == "*") {
    other = w;
    return;
  }
  for (auto& [known, weight] : by_medium) {
    if (same_name(known, name)) {
      weight = w;
      return;
    }
  }
  by_medium.emplace_back(std::string(name), w);
}

void parse_tier_weight(std::string_view spec, TierWeights& weights) {
  const size_t equals = spec.find('=');
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument("--tier-weight " + std::string(spec) + ": " + why);
  };
  if (equals == std::string_view::npos || equals == 0 || equals + 1 == spec.size()) {
    throw bad("expected MEDIUM=WEIGHT, e.g. CPU=0.8");
  }
  const std::string_view number = spec.substr(equals + 1);
  double w = 0;
  const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), w);
  if (error != std::errc() || end != number.data() + number.size() || !std::isfinite(w)) {
    throw bad("the weight is not a number");
  }
  if (w < 0 || w > 1) throw bad("the weight must be in [0, 1]");
  weights.set(spec.substr(0, equals), w);
}

}  // namespace radixkv::router
