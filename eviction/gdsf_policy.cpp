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

double GdsfPolicy::cost_per_page(const EvictionEntry& entry) const {
  const double middle = static_cast<double>(entry.prefix_pages) + entry.pages / 2.0;
  return 1.0 + middle / depth_pages_;
}

void GdsfPolicy::set_key(EvictionEntry& entry) const {
  entry.score = inflation_ + static_cast<double>(entry.hits) * cost_per_page(entry);
  entry.rank = entry.last_access;
}

void GdsfPolicy::add(EvictionEntry& entry) {
  set_key(entry);
  link(entry);
}

void GdsfPolicy::on_access(EvictionEntry& entry, const AccessHint&) {
  if (contains(entry)) relink(entry, [&](EvictionEntry& e) { set_key(e); });
}

EvictionEntry* GdsfPolicy::victim() {
  EvictionEntry* entry = OrderedPolicy::victim();
  if (entry != nullptr) inflation_ = std::max(inflation_, entry->score);
  return entry;
}

}  // namespace radixkv
