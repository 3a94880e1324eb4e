// LowerTiers: tiers below the local ones in order, as one RemotePages (runtime/remote_pages.h), so
// that a runtime with one tier slot (TierConfig::remote) takes a disk tier and a remote tier under
// it: a lookup asks the first tier for the run after the local match, the next one for the rest of
// the run after what the first had, and so on; each tier is told every tier event (each decides
// what to write), attached to the same pools, and asked to prefetch the same pages.
//
// Since every tier sees the pages that leave the local tiers, a page is written to each that wants
// it: the disk and the remote tier hold what the host gives up side by side (the remote one is
// shared with other servers, the disk one survives this server's restarts).
#pragma once

#include <span>
#include <vector>

#include "runtime/remote_pages.h"

namespace radixkv {

class LowerTiers final : public RemotePages {
 public:
  // The tiers, first asked first; each must outlive this object. Throws std::invalid_argument for
  // none, or a null one.
  explicit LowerTiers(std::vector<RemotePages*> tiers);

  // How many of the pages the last load() returned came from each tier, in order.
  const std::vector<uint32_t>& last_load() const { return last_load_; }

  uint32_t load(const PageHash& parent, std::span<const PageHash> hashes,
                std::span<const TokenId> tokens, PagePool& pool,
                std::span<const PageId> pages) override;
  void prefetch(std::span<const PageHash> hashes) override;
  void attach_pools(PagePool* device, PagePool* host, PageArrivals* arrivals = nullptr) override;
  // Each tier's, in order.
  void add_metrics(std::vector<LowerTierMetrics>& out) const override;
  void drain() override;

  // TierEvents: to each tier, in order.
  void stored(Tier tier, Namespace ns, std::optional<PageHash> parent,
              std::span<const PageHash> hashes, std::span<const TokenId> tokens) override;
  void removed(Tier tier, std::span<const PageHash> hashes) override;
  void cleared() override;
  void flush() override;
  void dropping(const TreePage& page) override;
  void inserted(const TreePage& page) override;

 private:
  std::vector<RemotePages*> tiers_;
  std::vector<uint32_t> last_load_;
};

}  // namespace radixkv
