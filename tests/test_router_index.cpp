// The router's BlockIndex against naive models: holdings and prefix overlaps over event streams
// from several scripted workers, and the eviction rule under a small page bound, predicted victim
// by victim.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <random>

#include "events/event_batcher.h"
#include "router/block_index.h"
#include "tests/event_script.h"

using namespace radixkv;
using namespace radixkv::router;
using events::BlockHash;

namespace {

// The documented semantics of BlockIndex, by brute force: entries with parents, holders with
// mediums and touch ticks; children and leaves found by scanning.
class NaiveIndex {
 public:
  explicit NaiveIndex(size_t max_pages) : max_pages_(max_pages) {}

  void apply(WorkerId w, const events::EventBatch& batch) {
    for (const events::KvEvent& event : batch.events) {
      if (const auto* s = std::get_if<events::BlockStored>(&event)) {
        std::optional<BlockHash> parent = s->parent_block_hash;
        for (BlockHash h : s->block_hashes) {
          Entry& e = entries_[h];
          if (e.holders.empty()) e.parent = parent == h ? std::nullopt : parent;
          e.touched = ++tick_;
          e.holders[w].insert(s->medium.value_or(""));
          parent = h;
        }
        evict();
      } else if (const auto* r = std::get_if<events::BlockRemoved>(&event)) {
        for (BlockHash h : r->block_hashes) drop(w, r->medium.value_or(""), h);
      } else {
        for (auto& [h, e] : entries_) e.holders.erase(w);
        prune();
      }
    }
  }

  std::vector<uint32_t> overlaps(std::span<const BlockHash> hashes, size_t workers) {
    std::vector<uint32_t> out(workers, 0);
    for (WorkerId w = 0; w < workers; ++w) {
      while (out[w] < hashes.size() && holds(w, hashes[out[w]])) ++out[w];
    }
    for (size_t i = 0; i < hashes.size(); ++i) {
      if (std::any_of(out.begin(), out.end(), [&](uint32_t o) { return o > i; })) {
        entries_.at(hashes[i]).touched = ++tick_;
      }
    }
    return out;
  }

  std::vector<BlockHolding> holdings(WorkerId w) const {
    std::vector<BlockHolding> out;
    for (const auto& [h, e] : entries_) {
      const auto it = e.holders.find(w);
      if (it != e.holders.end()) out.push_back({h, {it->second.begin(), it->second.end()}});
    }
    return out;
  }
  size_t pages() const { return entries_.size(); }
  uint64_t evicted() const { return evicted_; }

 private:
  struct Entry {
    std::optional<BlockHash> parent;
    std::map<WorkerId, std::set<std::string>> holders;
    uint64_t touched = 0;
  };

  bool holds(WorkerId w, BlockHash h) const {
    const auto it = entries_.find(h);
    return it != entries_.end() && it->second.holders.contains(w);
  }
  void drop(WorkerId w, const std::string& medium, BlockHash h) {
    const auto it = entries_.find(h);
    if (it == entries_.end()) return;
    const auto holder = it->second.holders.find(w);
    if (holder == it->second.holders.end()) return;
    holder->second.erase(medium);
    if (holder->second.empty()) it->second.holders.erase(holder);
    prune();
  }
  void prune() {
    std::erase_if(entries_, [](const auto& kv) { return kv.second.holders.empty(); });
  }
  void evict() {
    while (entries_.size() > max_pages_) {
      std::optional<std::pair<uint64_t, BlockHash>> victim;
      for (const auto& [h, e] : entries_) {
        const bool has_child = std::any_of(entries_.begin(), entries_.end(),
                                           [&](const auto& kv) { return kv.second.parent == h; });
        if (!has_child && (!victim || std::pair(e.touched, h) < *victim)) victim = {e.touched, h};
      }
      if (!victim) return;
      entries_.erase(victim->second);
      ++evicted_;
    }
  }

  size_t max_pages_;
  std::map<BlockHash, Entry> entries_;
  uint64_t tick_ = 0;
  uint64_t evicted_ = 0;
};

events::EventBatcherOptions batcher_options() {
  events::EventBatcherOptions options;
  options.page_tokens = 4;
  return options;
}

// Several scripted workers whose batches go to a BlockIndex and to the naive model, with the
// chains they stored remembered for queries.
struct Cluster {
  Cluster(size_t workers, size_t max_pages, uint64_t seed)
      : index(max_pages), naive(max_pages), rng(seed) {
    for (size_t w = 0; w < workers; ++w) {
      const WorkerId id = index.add_worker(fmt::format("w{}", w));
      batchers.push_back(std::make_unique<events::EventBatcher>(
          batcher_options(), [this, id](events::EventBatch&& batch) {
            for (const events::KvEvent& e : batch.events) {
              if (const auto* s = std::get_if<events::BlockStored>(&e)) {
                std::optional<BlockHash> p = s->parent_block_hash;
                for (BlockHash h : s->block_hashes) {
                  parents.emplace(h, p);
                  p = h;
                }
              }
            }
            index.apply(id, batch);
            naive.apply(id, batch);
          }));
      caches.push_back(std::make_unique<testing::ScriptedCache>(
          testing::ScriptOptions{
              .seed = seed * 100 + w, .page_tokens = 4, .max_pages = 40, .clears = w == 2},
          *batchers.back()));
    }
  }

  // A chain of known hashes from a root down to a random known block, sometimes cut short or
  // followed by a hash no worker stored.
  std::vector<BlockHash> random_query() {
    if (parents.empty()) return {};
    auto it = parents.begin();
    std::advance(it, static_cast<long>(rng() % parents.size()));
    std::vector<BlockHash> chain;
    for (std::optional<BlockHash> h = it->first; h && chain.size() < 64;) {
      chain.push_back(*h);
      h = parents.at(*h);
    }
    std::reverse(chain.begin(), chain.end());
    if (rng() % 3 == 0) chain.push_back(rng());
    return chain;
  }

  void check() {
    index.verify();
    CHECK(index.pages() == naive.pages());
    CHECK(index.evicted_pages() == naive.evicted());
    for (WorkerId w = 0; w < index.num_workers(); ++w) {
      CAPTURE(w);
      REQUIRE(index.holdings(w) == naive.holdings(w));
      CHECK(index.pages_of(w) == naive.holdings(w).size());
    }
    for (int q = 0; q < 5; ++q) {
      const std::vector<BlockHash> query = random_query();
      REQUIRE(index.overlaps(query) == naive.overlaps(query, index.num_workers()));
    }
  }

  BlockIndex index;
  NaiveIndex naive;
  std::mt19937_64 rng;
  std::map<BlockHash, std::optional<BlockHash>> parents;  // as the events said
  std::vector<std::unique_ptr<events::EventBatcher>> batchers;
  std::vector<std::unique_ptr<testing::ScriptedCache>> caches;
};

events::EventBatch stored(std::vector<BlockHash> hashes, std::optional<BlockHash> parent,
                          std::string medium = "GPU") {
  events::BlockStored s;
  s.block_hashes = std::move(hashes);
  s.parent_block_hash = parent;
  s.block_size = 4;
  s.medium = std::move(medium);
  return {0, {s}, 0};
}
events::EventBatch removed(std::vector<BlockHash> hashes, std::string medium = "GPU") {
  return {0, {events::BlockRemoved{.block_hashes = std::move(hashes), .medium = std::move(medium)}}, 0};
}

}  // namespace

TEST_CASE("router: the index holds each worker's blocks and overlaps, as the naive model does") {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    CAPTURE(seed);
    Cluster cluster(3, 1'000'000, seed);
    for (int step = 0; step < 150; ++step) {
      for (auto& cache : cluster.caches) cache->step();
      cluster.check();
    }
    CHECK(cluster.index.evicted_pages() == 0);
    size_t shared = 0;  // the workers share the template pages: overlaps exist across workers
    for (const BlockHolding& h : cluster.index.holdings(0)) {
      const auto one = cluster.index.holdings(1);
      shared += std::any_of(one.begin(), one.end(),
                            [&](const BlockHolding& o) { return o.hash == h.hash; });
    }
    CHECK(shared > 0);
  }
}

TEST_CASE("router: under its page bound the index evicts the least recently touched leaf") {
  for (size_t bound : {5, 17, 40}) {
    CAPTURE(bound);
    Cluster cluster(3, bound, 9 + bound);
    for (int step = 0; step < 150; ++step) {
      for (auto& cache : cluster.caches) cache->step();
      cluster.check();
      REQUIRE(cluster.index.pages() <= bound);
    }
    CHECK(cluster.index.evicted_pages() > 0);
  }
}

TEST_CASE("router: a hand-made stream, medium by medium") {
  BlockIndex index;
  const WorkerId a = index.add_worker("a"), b = index.add_worker("b");
  CHECK(index.add_worker("a") == a);
  index.apply(a, stored({1, 2, 3}, std::nullopt));
  index.apply(b, stored({1, 2}, std::nullopt));
  index.apply(a, stored({2}, 1, "CPU"));
  const std::vector<BlockHash> query = {1, 2, 3, 4};
  CHECK(index.overlaps(query) == std::vector<uint32_t>{3, 2});
  CHECK(index.overlaps(std::vector<BlockHash>{2, 3}) == std::vector<uint32_t>{2, 1});

  index.apply(a, removed({2}));  // still on the CPU
  CHECK(index.overlaps(query) == std::vector<uint32_t>{3, 2});
  CHECK(index.holdings(a)[1] == BlockHolding{2, {"CPU"}});
  index.apply(a, removed({2}, "CPU"));  // gone from a: its prefix stops at block 1
  CHECK(index.overlaps(query) == std::vector<uint32_t>{1, 2});
  index.apply(a, removed({99, 3}, "CPU"));  // unknown blocks, a medium it is not on: ignored
  CHECK(index.pages_of(a) == 2);

  index.apply(b, events::EventBatch{0, {events::AllBlocksCleared{}}, 0});
  CHECK(index.pages_of(b) == 0);
  CHECK(index.overlaps(query) == std::vector<uint32_t>{1, 0});
  CHECK(index.pages() == 2);  // blocks 1 and 3: a holds them
  index.verify();
  index.clear_worker(a);
  CHECK(index.pages() == 0);
  index.verify();
}

TEST_CASE("router: the index refuses what it cannot hold, naming it") {
  BlockIndex index(3);
  const WorkerId w = index.add_worker("w");
  CHECK_THROWS_WITH_AS(index.apply(7, removed({1})), "unknown worker id 7 (1 workers)",
                       std::invalid_argument);
  CHECK_THROWS_AS(index.add_worker(""), std::invalid_argument);
  CHECK_THROWS_WITH_AS(BlockIndex(0), "the router index needs room for >= 1 page",
                       std::invalid_argument);
  for (int m = 0; m < 32; ++m) index.apply(w, stored({1}, std::nullopt, fmt::format("m{}", m)));
  CHECK_THROWS_WITH_AS(index.apply(w, stored({1}, std::nullopt, "one-too-many")),
                       "medium \"one-too-many\": the index tells at most 32 mediums apart",
                       std::invalid_argument);
  // A parent cycle from nonsense events leaves no leaf to evict: the index stays over its bound
  // rather than loop, and stays consistent.
  index.apply(w, stored({10, 11, 12, 13}, 13, "m0"));
  CHECK(index.pages() == 4);  // block 1 (the one leaf) went; the cycle stays
  index.verify();
}
