#include "eviction/gdsf_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace radixkv {

GdsfPolicy::GdsfPolicy(double depth_pages) : depth_pages_(depth_pages) {
  if (!(depth_pages > 0.0)) {
    throw std::invalid_argument(
        fmt::format("gdsf policy: depth_pages {} must be positive (or inf)", depth_pages));
  }
}

void GdsfPolicy::adopt(EvictionEntry& entry, const AccessHistory& past) {
  adopt_hits_and_tick(make_state<GdsfState>(entry), past);
}

AccessHistory GdsfPolicy::history(const EvictionEntry& entry) const {
  return hits_and_tick(state(entry));
}

double GdsfPolicy::cost_per_page(const EvictionEntry& entry) const {
  const double middle = static_cast<double>(entry.prefix_pages) + entry.pages / 2.0;
  return 1.0 + middle / depth_pages_;
}

void GdsfPolicy::set_score(EvictionEntry& entry) const {
  GdsfState& s = state(entry);
  s.score = inflation_ + static_cast<double>(s.hits) * cost_per_page(entry);
}

void GdsfPolicy::add(EvictionEntry& entry) {
  set_score(entry);
  link(state(entry));
}

void GdsfPolicy::on_access(EvictionEntry& entry, const AccessHint& hint) {
  GdsfState& s = state(entry);
  const bool linked = s.hook.is_linked();
  if (linked) remove(entry);
  if (hint.counts_as_hit) ++s.hits;
  s.rank = hint.tick;
  if (linked) add(entry);
}

EvictionEntry* GdsfPolicy::victim() {
  EvictionEntry* entry = OrderedPolicy::victim();
  if (entry != nullptr) inflation_ = std::max(inflation_, state(*entry).score);
  return entry;
}

}  // namespace radixkv
