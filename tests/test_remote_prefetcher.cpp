// The remote tier's prefetch thread on its own (remote/prefetcher.h), over the in-memory store of
// tests/memory_store.h: what it asks the store for, what it keeps, what it forgets first, and that
// take() waits only for what it does not hold yet.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "radix/page_hash.h"
#include "remote/prefetcher.h"
#include "tests/memory_store.h"

namespace radixkv {
namespace {

using remote::Prefetcher;

// Page i: hash {i + 1, 7}, key "k<i>", value "v<i>" padded to `bytes` bytes.
struct PrefetchRig {
  testing::MemoryStore::Shared shared;
  Prefetcher prefetcher;

  PrefetchRig(std::size_t pages, std::size_t bytes, std::size_t values = 8,
              std::size_t value_bytes = 4)
      : prefetcher(std::make_unique<testing::MemoryStore>(shared), 16, pages, bytes) {
    for (std::size_t i = 0; i < values; ++i) shared.values[key(i)] = value(i, value_bytes);
  }
  static PageHash hash(std::size_t i) { return {i + 1, 7}; }
  static std::string key(std::size_t i) { return fmt::format("k{}", i); }
  static std::string value(std::size_t i, std::size_t bytes) {
    std::string v = fmt::format("v{}", i);
    v.resize(bytes, '.');
    return v;
  }
  void request(std::initializer_list<std::size_t> pages) {
    std::vector<PageHash> hashes;
    std::vector<std::string> keys;
    for (std::size_t i : pages) {
      hashes.push_back(hash(i));
      keys.push_back(key(i));
    }
    prefetcher.request(std::move(hashes), std::move(keys));
  }
  // What take() hands over for page i alone, without waiting.
  std::vector<std::string> take(std::size_t i) {
    const PageHash h = hash(i);
    return prefetcher.take({&h, 1}, std::nullopt).values;
  }
};

TEST_CASE("remote prefetcher: the oldest kept page is forgotten first, a page kept again is new") {
  PrefetchRig rig(/*pages=*/3, /*bytes=*/1 << 20);
  for (std::size_t i : {0, 1}) {
    rig.request({i});
    rig.prefetcher.drain();
  }
  CHECK(rig.take(0) == std::vector<std::string>{"v0.."});
  rig.request({2});
  rig.prefetcher.drain();
  rig.request({0});  // kept again: now the newest
  rig.prefetcher.drain();
  rig.request({3});  // a fourth entry: the oldest, page 1, goes
  rig.prefetcher.drain();
  CHECK(rig.take(1).empty());
  CHECK(rig.take(0) == std::vector<std::string>{"v0.."});
  CHECK(rig.take(2) == std::vector<std::string>{"v2.."});
  CHECK(rig.take(3) == std::vector<std::string>{"v3.."});
}

TEST_CASE("remote prefetcher: kept values are bounded by bytes too, the oldest forgotten first") {
  // Values of 100 bytes, at most 250 bytes kept: two of them.
  PrefetchRig rig(/*pages=*/64, /*bytes=*/250, 8, 100);
  rig.request({0, 1, 2, 3});
  rig.prefetcher.drain();
  CHECK(rig.prefetcher.stats().fetched_pages == 4);
  CHECK(rig.take(0).empty());
  CHECK(rig.take(1).empty());
  CHECK(rig.take(2).size() == 1);
  CHECK(rig.take(3).size() == 1);
  // Taken values leave room: two more fit again.
  rig.request({4, 5});
  rig.prefetcher.drain();
  CHECK(rig.take(4).size() == 1);
  CHECK(rig.take(5).size() == 1);
}

TEST_CASE("remote prefetcher: pages already fetched or in flight are not asked for again") {
  PrefetchRig rig(64, 1 << 20);
  rig.shared.gate_timeout = std::chrono::milliseconds(5000);
  rig.shared.gate_closed = true;
  rig.request({0, 1});  // held at the gate
  while (rig.shared.at_gate == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  rig.request({1, 2});  // page 1 is in flight: only page 2 is asked for
  rig.shared.gate_closed = false;
  rig.prefetcher.drain();
  CHECK(rig.prefetcher.stats().fetched_pages == 3);
  rig.request({0, 1, 2});  // all three held: nothing to ask
  rig.prefetcher.drain();
  CHECK(rig.prefetcher.stats().requests == 2);
  CHECK(rig.shared.gets == 2);
  CHECK(rig.prefetcher.stats().fetched_pages == 3);
}

TEST_CASE("remote prefetcher: take() does not wait for a page it holds while another lookup runs") {
  PrefetchRig rig(64, 1 << 20);
  rig.request({0, 1});
  rig.prefetcher.drain();
  rig.shared.gate_timeout = std::chrono::milliseconds(5000);
  rig.shared.gate_closed = true;
  rig.request({0, 1, 2});  // a request sharing pages 0 and 1; page 2 is held at the gate
  while (rig.shared.at_gate == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const PageHash run[] = {PrefetchRig::hash(0), PrefetchRig::hash(1)};
  const auto start = std::chrono::steady_clock::now();
  const Prefetcher::Taken taken = rig.prefetcher.take(run, start + std::chrono::milliseconds(2000));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(taken.values == std::vector<std::string>{"v0..", "v1.."});
  CHECK(seconds < 1.0);  // 2 s if it waited on the lookup at the gate
  rig.shared.gate_closed = false;
  rig.prefetcher.drain();
}

TEST_CASE("remote prefetcher: a partial failure keeps the values and not the misses, counted") {
  PrefetchRig rig(64, 1 << 20);
  {
    std::lock_guard lock(rig.shared.mutex);
    rig.shared.failing_keys.insert(PrefetchRig::key(1));
  }
  rig.request({0, 1, 2});
  rig.prefetcher.drain();
  CHECK(rig.prefetcher.stats().errors == 1);
  CHECK(rig.prefetcher.stats().fetched_pages == 2);
  const PageHash run[] = {PrefetchRig::hash(0), PrefetchRig::hash(1), PrefetchRig::hash(2)};
  const Prefetcher::Taken taken = rig.prefetcher.take(run, std::nullopt);
  CHECK(taken.values == std::vector<std::string>{"v0.."});
  CHECK_FALSE(taken.ended);   // page 1 is not known missing: the caller may ask for it
  rig.shared.failing = true;  // a whole failure keeps nothing
  rig.request({5});
  rig.prefetcher.drain();
  CHECK(rig.prefetcher.stats().errors == 2);
  CHECK(rig.take(5).empty());
}

TEST_CASE("remote prefetcher: a queue, map or byte bound of 0 is refused") {
  testing::MemoryStore::Shared shared;
  const auto make = [&](std::size_t queue, std::size_t pages, std::size_t bytes) {
    Prefetcher p(std::make_unique<testing::MemoryStore>(shared), queue, pages, bytes);
  };
  CHECK_THROWS_AS(make(0, 1, 1), std::invalid_argument);
  CHECK_THROWS_AS(make(1, 0, 1), std::invalid_argument);
  CHECK_THROWS_AS(make(1, 1, 0), std::invalid_argument);
  CHECK_NOTHROW(make(1, 1, 1));
}

}  // namespace
}  // namespace radixkv
