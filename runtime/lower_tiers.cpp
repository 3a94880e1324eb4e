#include "runtime/lower_tiers.h"

#include <stdexcept>

namespace radixkv {

LowerTiers::LowerTiers(std::vector<RemotePages*> tiers)
    : tiers_(std::move(tiers)), last_load_(tiers_.size(), 0) {
  if (tiers_.empty()) throw std::invalid_argument("LowerTiers: no tier");
  for (const RemotePages* t : tiers_) {
    if (t == nullptr) throw std::invalid_argument("LowerTiers: a null tier");
  }
}

uint32_t LowerTiers::load(const PageHash& parent, std::span<const PageHash> hashes,
                          std::span<const TokenId> tokens, PagePool& pool,
                          std::span<const PageId> pages) {
  const std::size_t count = std::min(hashes.size(), pages.size());
  const std::size_t page_tokens = pool.layout().page_tokens;
  std::fill(last_load_.begin(), last_load_.end(), 0);
  uint32_t loaded = 0;
  for (std::size_t i = 0; i < tiers_.size() && loaded < count; ++i) {
    const uint32_t got = tiers_[i]->load(
        loaded == 0 ? parent : hashes[loaded - 1], hashes.subspan(loaded, count - loaded),
        tokens.subspan(std::min(tokens.size(), size_t{loaded} * page_tokens)), pool,
        pages.subspan(loaded, count - loaded));
    last_load_[i] = got;
    loaded += got;
  }
  return loaded;
}

void LowerTiers::prefetch(std::span<const PageHash> hashes) {
  for (RemotePages* t : tiers_) t->prefetch(hashes);
}

void LowerTiers::attach_pools(PagePool* device, PagePool* host, PageArrivals* arrivals) {
  for (RemotePages* t : tiers_) t->attach_pools(device, host, arrivals);
}

void LowerTiers::add_metrics(std::vector<LowerTierMetrics>& out) const {
  for (const RemotePages* t : tiers_) t->add_metrics(out);
}

void LowerTiers::drain() {
  for (RemotePages* t : tiers_) t->drain();
}

void LowerTiers::stored(Tier tier, Namespace ns, std::optional<PageHash> parent,
                        std::span<const PageHash> hashes, std::span<const TokenId> tokens) {
  for (RemotePages* t : tiers_) t->stored(tier, ns, parent, hashes, tokens);
}

void LowerTiers::removed(Tier tier, std::span<const PageHash> hashes) {
  for (RemotePages* t : tiers_) t->removed(tier, hashes);
}

void LowerTiers::cleared() {
  for (RemotePages* t : tiers_) t->cleared();
}

void LowerTiers::flush() {
  for (RemotePages* t : tiers_) t->flush();
}

void LowerTiers::dropping(const TreePage& page) {
  for (RemotePages* t : tiers_) t->dropping(page);
}

void LowerTiers::inserted(const TreePage& page) {
  for (RemotePages* t : tiers_) t->inserted(page);
}

}  // namespace radixkv
