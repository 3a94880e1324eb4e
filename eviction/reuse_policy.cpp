#include "eviction/reuse_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

namespace radixkv {

ReusePolicy::ReusePolicy(double limit, double prior) : limit_(limit), prior_(prior) {
  if (!(limit >= 0.0)) {
    throw std::invalid_argument(fmt::format("reuse policy: limit {} must be at least 0", limit));
  }
  if (!(prior > 0.0 && std::isfinite(prior))) {
    throw std::invalid_argument(
        fmt::format("reuse policy: prior {} must be finite and positive", prior));
  }
}

void ReusePolicy::adopt(EvictionEntry& entry, const AccessHistory& past) {
  ReuseState& s = make_state<ReuseState>(entry);
  s.rank = past.last.tick;
  s.last_s = past.last.now;
  s.output_tokens = past.last.output_tokens;
}

AccessHistory ReusePolicy::history(const EvictionEntry& entry) const {
  const ReuseState& s = state(entry);
  AccessHistory past;
  past.last.tick = s.rank;
  past.last.now = s.last_s;
  past.last.output_tokens = s.output_tokens;
  return past;
}

uint8_t ReusePolicy::class_of(uint32_t output_tokens, uint32_t prefix_pages) {
  const int answer = std::min<int>(std::bit_width(output_tokens), kAnswerClasses - 1);
  return static_cast<uint8_t>(prefix_pages == 0 ? answer : kAnswerClasses + answer);
}

uint8_t ReusePolicy::class_of(const EvictionEntry& entry) {
  return class_of(state(entry).output_tokens, entry.prefix_pages);
}

double ReusePolicy::overall_rate() const {
  return all_exposure_ > 0.0 ? all_reuses_ / all_exposure_ : 0.0;
}

double ReusePolicy::rate(uint8_t cls) const {
  const double overall = overall_rate();
  if (overall <= 0.0) return 0.0;
  return (reuses_[cls] + prior_) / (exposure_[cls] + prior_ / overall);
}

// 1 - exp(-x), accurate for small x too: a rarely reused class keeps a ratio, not 0 / 0.
double ReusePolicy::reuse_chance(uint8_t cls) const {
  if (overall_rate() <= 0.0 || tau() <= 0.0) return 0.0;
  return -std::expm1(-rate(cls) * tau());
}

double ReusePolicy::offset(uint8_t cls) const {
  const double overall = overall_rate();
  if (overall <= 0.0 || tau() <= 0.0) return 0.0;
  const double average = -std::expm1(-overall * tau());
  return tau() * std::clamp(std::log(reuse_chance(cls) / average), -limit_, limit_);
}

void ReusePolicy::set_key(EvictionEntry& entry) const {
  ReuseState& s = state(entry);
  s.score = s.last_s + offset(class_of(entry));
}

void ReusePolicy::record(uint8_t cls, double reuses, double exposure) {
  reuses_[cls] += reuses;
  exposure_[cls] += exposure;
  all_reuses_ += reuses;
  all_exposure_ += exposure;
}

void ReusePolicy::add(EvictionEntry& entry) {
  set_key(entry);
  link(state(entry));
}

void ReusePolicy::on_access(EvictionEntry& entry, const AccessHint& hint) {
  now_ = std::max(now_, hint.now);
  ReuseState& s = state(entry);
  const bool linked = s.hook.is_linked();
  if (linked) remove(entry);
  if (s.visited && hint.now > s.last_s) {
    const double pages = entry.pages;
    record(s.segment, pages, pages * (hint.now - s.last_s));
  }
  s.visited = true;
  s.output_tokens = hint.output_tokens;
  s.segment = class_of(entry);
  s.last_s = hint.now;
  s.rank = hint.tick;
  if (linked) add(entry);
}

EvictionEntry* ReusePolicy::victim() {
  EvictionEntry* entry = OrderedPolicy::victim();
  if (entry == nullptr) return nullptr;
  // The owner takes one page from it now: that page's time in the cache ends without a reuse.
  const double age = std::max(0.0, now_ - state(*entry).last_s);
  record(class_of(*entry), 0.0, age);
  if (!have_victim_) {
    victim_age_ = age;
    have_victim_ = true;
  } else {
    victim_age_ += (age - victim_age_) / kVictimAgeWindow;
  }
  return entry;
}

}  // namespace radixkv
