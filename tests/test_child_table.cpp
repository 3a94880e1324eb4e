#include <doctest/doctest.h>

#include <map>
#include <random>

#include "radix/radix_node.h"

using radixkv::ChildTable;
using radixkv::RadixNode;

TEST_CASE("ChildTable agrees with std::multimap under random inserts and erases") {
  // Few distinct hashes force collisions and long probe runs through backward-shift deletion.
  std::mt19937_64 rng(7);
  ChildTable table;
  std::multimap<uint64_t, RadixNode*> oracle;
  std::vector<RadixNode*> live;
  uintptr_t next = 16;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      auto* node = reinterpret_cast<RadixNode*>(next += 16);
      const uint64_t hash = rng() % 37;
      table.insert(hash, node);
      oracle.emplace(hash, node);
      live.push_back(node);
    } else {
      const size_t i = rng() % live.size();
      RadixNode* node = live[i];
      uint64_t hash = 0;
      for (auto& [h, n] : oracle) {
        if (n == node) hash = h;
      }
      CHECK(table.erase(hash, node));
      for (auto it = oracle.begin(); it != oracle.end(); ++it) {
        if (it->second == node) {
          oracle.erase(it);
          break;
        }
      }
      live[i] = live.back();
      live.pop_back();
    }
    REQUIRE(table.size() == oracle.size());
    if (step % 97 == 0) {
      for (auto& [hash, node] : oracle) {
        RadixNode* want = node;
        CHECK(table.find(hash, [&](RadixNode* n) { return n == want; }) == want);
      }
      CHECK(table.find(1000, [](RadixNode*) { return true; }) == nullptr);
    }
  }
}
