// DiskIndex (disk/disk_index.h) against a naive model: random adds, writes done, touches, removals,
// parents leaving the trie and the trie going as a whole, with every page kept reachable (the
// prefix rule), and, under LRU, the exact victim of every eviction (the least recent disk leaf).
// Under every other registered policy the invariants alone (verify()).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "disk/disk_index.h"
#include "eviction/eviction_policy.h"

namespace radixkv {
namespace {

using disk::DiskIndex;
using disk::kNoSlot;
using disk::SlotId;

// The model: pages by hash with what the prefix rule and LRU need, searched naively.
struct ModelPage {
  PageHash parent;
  bool first = false;
  bool stored = false;  // else writing
  uint64_t last_access = 0;
};

struct Model {
  std::map<PageHash, ModelPage> pages;
  std::set<PageHash> trie;  // pages the "trie" holds: disk pages below them are reachable
  uint32_t releasing = 0;   // slots of removed pages whose write is not done
  uint64_t clock = 0;

  bool has_disk_child(const PageHash& h) const {
    return std::any_of(pages.begin(), pages.end(),
                       [&](const auto& p) { return p.second.parent == h; });
  }
  bool evictable(const PageHash& h, const PageHash* keep) const {
    const ModelPage& p = pages.at(h);
    return p.stored && !(keep != nullptr && *keep == h) && !has_disk_child(h);
  }
  // The least recent evictable page (LRU's victim).
  std::optional<PageHash> victim(const PageHash* keep) const {
    std::optional<PageHash> best;
    for (const auto& [h, p] : pages) {
      if (evictable(h, keep) && (!best || p.last_access < pages.at(*best).last_access)) best = h;
    }
    return best;
  }
  // Removes the pages below `h` on disk, recursively; returns how many.
  uint64_t reclaim_below(const PageHash& h) {
    if (pages.contains(h)) return 0;
    uint64_t n = 0;
    std::vector<PageHash> stack{h};
    while (!stack.empty()) {
      const PageHash parent = stack.back();
      stack.pop_back();
      for (auto it = pages.begin(); it != pages.end();) {
        if (it->second.parent == parent) {
          stack.push_back(it->first);
          if (!it->second.stored) ++releasing;
          it = pages.erase(it);
          ++n;
        } else {
          ++it;
        }
      }
    }
    return n;
  }
  bool reachable(const PageHash& h) const {
    const ModelPage& p = pages.at(h);
    if (p.first) return true;
    if (pages.contains(p.parent)) return reachable(p.parent);
    return false;
  }
};

void check_same(const DiskIndex& index, const Model& model) {
  REQUIRE(index.pages() == model.pages.size());
  for (const auto& [h, p] : model.pages) {
    const SlotId id = index.find(h);
    REQUIRE(id != kNoSlot);
    REQUIRE(index.slot(id).parent == p.parent);
    REQUIRE((index.slot(id).state == DiskIndex::State::kStored) == p.stored);
  }
  REQUIRE(index.free_slots() == index.slots() - model.pages.size() - model.releasing);
  index.verify([&](const PageHash& h) { return model.trie.contains(h); });
}

void run(const std::string& policy, uint64_t seed, bool exact) {
  CAPTURE(policy);
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const uint32_t slots = 1 + static_cast<uint32_t>(rng() % 24);
  DiskIndex index(slots, make_policy(policy));
  Model model;
  uint64_t next_hash = 1;
  const auto pick = [&](const auto& container) {
    auto it = container.begin();
    std::advance(it, rng() % container.size());
    return *it;
  };
  for (int step = 0; step < 400; ++step) {
    const int op = static_cast<int>(rng() % 10);
    if (op <= 3) {  // a page is written: a first page, a child of a disk page or of a trie page
      disk::SlotHeader header;
      header.hash = {next_hash++, seed};
      header.generation = next_hash;
      const int kind = static_cast<int>(rng() % 3);
      if (kind == 0 || (kind == 1 && model.pages.empty()) || (kind == 2 && model.trie.empty())) {
        header.first = true;
        header.parent = {0, 999};  // a namespace's seed
      } else {
        header.parent = kind == 1 ? pick(model.pages).first : pick(model.trie);
      }
      const SlotId keep = index.find(header.parent);
      const PageHash* keep_hash = keep != kNoSlot ? &header.parent : nullptr;
      const std::optional<PageHash> victim =
          index.free_slots() == 0 ? model.victim(keep_hash) : std::nullopt;
      const SlotId id = index.take(keep);
      if (id == kNoSlot) {
        CHECK(index.free_slots() == 0);
        CHECK_FALSE(model.victim(keep_hash).has_value());
      } else {
        if (exact && victim) CHECK(index.find(*victim) == kNoSlot);
        if (victim) {  // whichever the policy took (LRU: the model's victim), an evictable page
          for (const auto& [h, p] : model.pages) {
            if (index.find(h) == kNoSlot) {
              CHECK(model.evictable(h, keep_hash));
              model.pages.erase(h);
              break;
            }
          }
        }
        const bool stored = rng() % 2 == 0;
        index.add(id, header, stored);
        model.pages[header.hash] = {header.parent, header.first, stored, ++model.clock};
      }
    } else if (op == 4 && !model.pages.empty()) {  // a write completes
      const auto [h, p] = pick(model.pages);
      if (!p.stored) {
        CHECK_FALSE(index.write_done(index.find(h)));
        model.pages[h].stored = true;
      }
    } else if (op == 5 && model.releasing > 0) {  // a removed page's write completes
      std::vector<SlotId> releasing;
      for (SlotId s = 0; s < index.slots(); ++s) {
        if (index.slot(s).state == DiskIndex::State::kReleasing) releasing.push_back(s);
      }
      REQUIRE(!releasing.empty());
      CHECK(index.write_done(pick(releasing)));
      --model.releasing;
    } else if (op == 6 && !model.pages.empty()) {  // an access
      const PageHash h = pick(model.pages).first;
      index.touch(index.find(h));
      model.pages[h].last_access = ++model.clock;
    } else if (op == 7 && !model.pages.empty()) {  // a bad copy leaves, and what hangs below it
      const auto [h, p] = pick(model.pages);
      index.remove(index.find(h));
      model.pages.erase(h);
      if (!p.stored) ++model.releasing;
      CHECK(index.reclaim_below(h) == model.reclaim_below(h));
    } else if (op == 8) {  // a page joins the trie, or leaves it (and is not on disk)
      if (rng() % 2 == 0 || model.trie.empty()) {
        model.trie.insert({next_hash++, seed});
      } else {
        const PageHash h = pick(model.trie);
        model.trie.erase(h);
        CHECK(index.reclaim_below(h) == model.reclaim_below(h));
      }
    } else if (op == 9 && rng() % 8 == 0) {  // the trie goes as a whole
      model.trie.clear();
      std::vector<PageHash> stranded;
      for (const auto& [h, p] : model.pages) {
        if (!model.reachable(h)) stranded.push_back(h);
      }
      for (const PageHash& h : stranded) {
        if (!model.pages.at(h).stored) ++model.releasing;
        model.pages.erase(h);
      }
      CHECK(index.reclaim_unanchored() == stranded.size());
    }
    check_same(index, model);
  }
}

TEST_CASE("disk index: LRU over disk leaves and the prefix rule, against a naive model") {
  for (uint64_t seed = 1; seed <= 60; ++seed) run("lru", seed, true);
}

TEST_CASE("disk index: every registered policy keeps the invariants") {
  for (const std::string_view name : policy_names()) {
    for (uint64_t seed = 1; seed <= 8; ++seed) run(std::string(name), seed, false);
  }
}

TEST_CASE("disk index: recovery keeps the newest copy of a page and only reachable pages") {
  DiskIndex index(8, make_policy("lru"));
  const PageHash seed{0, 999};
  const PageHash a{1, 0}, b{2, 0}, c{3, 0}, orphan{4, 0};
  std::vector<DiskIndex::Found> found = {
      {5, {0, 9, b, a, false, 0}},             // b, newer copy
      {0, {0, 2, a, seed, true, 0}},           // a, a first page
      {3, {0, 4, b, a, false, 0}},             // b, older copy: its slot is free
      {6, {0, 5, c, b, false, 0}},             // c below b
      {7, {0, 1, orphan, {77, 0}, false, 0}},  // its parent is nowhere
  };
  CHECK(index.restore(found) == 3);
  CHECK(index.find(b) == 5);
  CHECK(index.find(orphan) == kNoSlot);
  CHECK(index.removed().unreachable == 1);
  CHECK(index.free_slots() == 5);
  index.verify([](const PageHash&) { return false; });
  // The oldest generation leaves first (a leaf: c, written at 5, is the only one).
  for (int i = 0; i < 5; ++i) CHECK(index.take(kNoSlot) != kNoSlot);
  CHECK(index.take(kNoSlot) == 6);  // c evicted
  CHECK(index.find(c) == kNoSlot);
}

}  // namespace
}  // namespace radixkv
