// EventLog: a consumer of the tree's tier events (radix/tier_events.h) for the tests. It applies
// them as a consumer would, holding a page set per tier, and checks them as they come: every
// stored page's hash chains from its parent's, nothing is stored twice or removed when absent,
// dropping() comes while the page is still held and still on that tier, inserted() after its
// stored() while the device page holds its bytes. Failures throw
// PropertyFailure.
#pragma once

#include <optional>
#include <set>
#include <span>
#include <vector>

#include "kv_store/page_pool.h"
#include "radix/tier_events.h"
#include "tests/property_driver.h"

namespace radixkv::testing {

class EventLog final : public TierEvents {
 public:
  EventLog(uint32_t page_tokens, const PagePool& device, const PagePool& host)
      : P_(page_tokens), device_(device), host_(host) {}

  void stored(Tier tier, Namespace ns, std::optional<PageHash> parent,
              std::span<const PageHash> hashes, std::span<const TokenId> tokens) override {
    expect(tokens.size() == hashes.size() * P_, "stored(): one page of tokens per hash");
    PageHash chain = parent ? *parent : namespace_seed(ns);
    for (size_t i = 0; i < hashes.size(); ++i) {
      chain = chain_page_hash(chain, tokens.subspan(i * P_, P_));
      expect(chain == hashes[i], "stored(): a page's hash chains from its parent's");
      expect(held(tier).insert(hashes[i]).second, "stored(): a page already on that tier");
    }
    ++events_;
  }
  void removed(Tier tier, std::span<const PageHash> hashes) override {
    for (const PageHash& hash : hashes) {
      expect(held(tier).erase(hash) == 1, "removed(): a page that was not on that tier");
    }
    ++events_;
  }
  void cleared() override {
    device_set_.clear();
    host_set_.clear();
  }
  void flush() override { ++flushes_; }
  void dropping(const TreePage& d) override {
    const PagePool& pool = d.tier == Tier::kDevice ? device_ : host_;
    expect(pool.contains(d.page) && pool.refcount(d.page) > 0,
           "dropping(): the page must still hold its bytes");
    expect(held(d.tier).contains(d.hash), "dropping(): a page that is not on that tier");
    expect(d.tokens.size() == P_ && chain_page_hash(d.parent, d.tokens) == d.hash,
           "dropping(): the page's hash must chain from its parent over its tokens");
    ++dropping_;
  }
  void inserted(const TreePage& d) override {
    expect(d.tier == Tier::kDevice && device_.contains(d.page) && device_.refcount(d.page) > 0,
           "inserted(): a device page that holds its bytes");
    expect(device_set_.contains(d.hash), "inserted(): the stored() event must come first");
    expect(d.tokens.size() == P_ && chain_page_hash(d.parent, d.tokens) == d.hash,
           "inserted(): the page's hash must chain from its parent over its tokens");
    ++inserted_;
  }

  std::vector<PageHash> sorted(Tier tier) const {
    const std::set<PageHash>& set = tier == Tier::kDevice ? device_set_ : host_set_;
    return {set.begin(), set.end()};
  }
  uint64_t flushes() const { return flushes_; }
  uint64_t events() const { return events_; }
  uint64_t droppings() const { return dropping_; }
  uint64_t insertions() const { return inserted_; }

 private:
  std::set<PageHash>& held(Tier tier) { return tier == Tier::kDevice ? device_set_ : host_set_; }

  uint32_t P_;
  const PagePool& device_;
  const PagePool& host_;
  std::set<PageHash> device_set_, host_set_;
  uint64_t flushes_ = 0, events_ = 0, dropping_ = 0, inserted_ = 0;
};

}  // namespace radixkv::testing
