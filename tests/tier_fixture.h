// TierFixture: a device pool, a host pool, a TestCopier and a radix tree over both, for the tier
// tests; check() verifies the tree and both pools' accounting. Failures throw std::logic_error.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "radix/radix_tree.h"
#include "tests/cache_fixture.h"
#include "tests/test_copier.h"

namespace radixkv::testing {

struct TierOptions {
  uint32_t device_pages = 64;
  uint32_t host_pages = 64;
  uint64_t host_budget_pages = 0;  // 0: the whole host pool
  std::string write = "write_back";
  std::string device_policy = "lru";
  std::string host_policy = "lru";
  bool deferred = false;  // copies wait for TestCopier::complete_next() or a wait
  bool bytes = false;     // host backends with real bytes
};

struct TierFixture {
  explicit TierFixture(uint32_t page_tokens, const TierOptions& o = {})
      : layout{1, 1, 4, 2, page_tokens},
        pool(layout, o.device_pages, o.bytes ? make_host_backend() : make_accounting_backend()),
        host(layout, o.host_pages, o.bytes ? make_host_backend() : make_accounting_backend()),
        copier(o.deferred),
        tree(pool, make_policy(o.device_policy)) {
    HostTierSetup setup;
    setup.pool = &host;
    setup.copier = &copier;
    setup.policy = make_policy(o.host_policy);
    setup.limit_pages = o.host_budget_pages;
    setup.write = WritePolicy::parse(o.write);
    tree.add_host_tier(std::move(setup));
  }

  InsertResult cache(std::span<const TokenId> tokens, Namespace ns = 0) {
    return cache_tokens(pool, tree, tokens, ns);
  }

  // Matches `tokens`, locks the match and loads its host run into fresh device pages, as admit
  // does; `held` gets the device pages of the whole match (one reference each, as a block table
  // holds them). Returns the match and the load's ticket.
  std::pair<MatchResult, CopyTicket> admit(std::span<const TokenId> tokens,
                                           std::vector<PageId>& held, Namespace ns = 0) {
    held.clear();
    const MatchResult m = tree.match(ns, tokens, &held);
    tree.lock(m.node);
    for (PageId p : held) pool.retain(p);
    const uint32_t host_pages = m.host_tokens() / tree.page_tokens();
    const size_t device = held.size();
    if (pool.free_pages() < host_pages) tree.evict_pages(host_pages - pool.free_pages());
    if (!pool.allocate(host_pages, held)) throw std::logic_error("TierFixture::admit: pool full");
    const CopyTicket ticket =
        tree.load(m.node, std::span<const PageId>(held).subspan(device, host_pages));
    return {m, ticket};
  }

  // verify(), then every device page's refcount is (tree) + (references in `held`) and every host
  // page's is (tree) + (copies in flight), and both identities hold.
  void check(const std::vector<std::vector<PageId>>& held = {}) const {
    tree.verify();
    check_device_accounting(pool, tree, held);
    std::vector<uint32_t> host_expected(host.capacity_pages(), 0);
    for (PageId p = 0; p < host.capacity_pages(); ++p) host_expected[p] = tree.host_indexes_page(p);
    for (PageId p : tree.host_in_flight_page_ids()) ++host_expected[p];
    for (PageId p = 0; p < host.capacity_pages(); ++p) {
      if (host.refcount(p) != host_expected[p]) {
        throw std::logic_error(fmt::format("host page {} has refcount {}, expected {}", p,
                                           host.refcount(p), host_expected[p]));
      }
    }
    if (host.capacity_pages() !=
        host.free_pages() + tree.host_cached_pages() + tree.host_in_flight_pages()) {
      throw std::logic_error("host: capacity != free + cached + in flight");
    }
  }

  KvLayout layout;
  PagePool pool;
  PagePool host;
  TestCopier copier;
  RadixTree tree;
};

}  // namespace radixkv::testing
