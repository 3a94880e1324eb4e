// Each policy's own ordering, on small cases worked out by hand. Entries are created and touched
// through FakeOwner, which keeps their facts the way the radix tree does.
#include <doctest/doctest.h>

#include <limits>

#include "eviction/fifo_policy.h"
#include "eviction/gdsf_policy.h"
#include "eviction/lfu_policy.h"
#include "eviction/lru_policy.h"
#include "eviction/priority_policy.h"
#include "eviction/sieve_policy.h"
#include "eviction/slru_policy.h"
#include "tests/test_policies_owner.h"

using namespace radixkv;
using radixkv::testing::evict;
using radixkv::testing::FakeOwner;

TEST_CASE("lru: least recent access first, and an unpinned leaf keeps its own stamp") {
  FakeOwner o(std::make_unique<LruPolicy>());
  EvictionEntry& a = o.create();
  EvictionEntry& b = o.create();
  EvictionEntry& c = o.create();
  o.touch(a);
  o.policy->remove(b);  // pinned
  o.policy->add(b);     // unpinned: still older than c and a
  evict(o, b);
  evict(o, c);
  evict(o, a);
}

TEST_CASE("lfu: fewest hits first, least recent among equal hits") {
  FakeOwner o(std::make_unique<LfuPolicy>());
  EvictionEntry& a = o.create();  // hits 1
  EvictionEntry& b = o.create();
  EvictionEntry& c = o.create();
  EvictionEntry& d = o.create();
  o.touch(a);
  o.touch(a);  // a: 3 hits
  o.touch(b);  // b: 2 hits
  // c and d have one hit each; c was touched earlier.
  evict(o, c);
  evict(o, d);
  evict(o, b);
  // Hits gathered while unlinked (an inner node on many paths) count when it becomes a leaf.
  EvictionEntry& inner = o.create_unlinked();
  for (int i = 0; i < 4; ++i) o.touch(inner);  // 5 hits
  o.policy->add(inner);
  EvictionEntry& e = o.create();  // 1 hit
  evict(o, e);
  evict(o, a);  // 3 < 5
  evict(o, inner);
}

TEST_CASE("fifo: first created first whatever the accesses, and re-linked entries keep their age") {
  FakeOwner o(std::make_unique<FifoPolicy>());
  EvictionEntry& a = o.create();
  EvictionEntry& b = o.create();
  EvictionEntry& c = o.create();
  for (int i = 0; i < 3; ++i) o.touch(a);
  o.policy->remove(b);
  evict(o, a);
  o.policy->add(b);  // back, ahead of c
  evict(o, b);
  evict(o, c);
}

TEST_CASE("priority: lowest priority first, least recent within a priority") {
  FakeOwner o(std::make_unique<PriorityPolicy>());
  EvictionEntry& high = o.create(80);
  EvictionEntry& low = o.create(10);
  EvictionEntry& mid1 = o.create(35);
  EvictionEntry& mid2 = o.create(35);
  o.touch(mid1, 35);  // mid2 is now the older of the two
  evict(o, low);
  evict(o, mid2);
  evict(o, mid1);
  evict(o, high);
  // The latest access sets the priority, upwards or downwards.
  EvictionEntry& x = o.create(90);
  EvictionEntry& y = o.create(20);
  o.touch(x, 5);
  evict(o, x);
  evict(o, y);
  // Out-of-range priorities count as the nearest bound.
  EvictionEntry& over = o.create(250);
  EvictionEntry& top = o.create(100);
  EvictionEntry& under = o.create(-4);
  EvictionEntry& zero = o.create(0);
  evict(o, under);
  evict(o, zero);
  evict(o, over);
  evict(o, top);
}

TEST_CASE("priority: after the retention a priority falls back to 35, on the caller's clock") {
  FakeOwner o(std::make_unique<PriorityPolicy>(10.0));
  o.now = 0;
  EvictionEntry& high = o.create(80);  // holds until t = 10
  o.now = 1;
  EvictionEntry& plain = o.create(35);
  o.now = 2;
  EvictionEntry& low = o.create(10);  // holds until t = 12
  o.now = 3;
  EvictionEntry& other = o.create(35);
  CHECK(o.policy->victim() == &low);

  o.now = 11;  // any access moves the clock on
  o.touch(other);
  // high fell back to 35 and is older than plain; low still holds.
  CHECK(o.policy->victim() == &low);
  o.now = 12;
  o.touch(other);
  // low rises to 35 too, ordered by its last access among the 35s: high, plain, low, other.
  evict(o, high);
  evict(o, plain);
  evict(o, low);
  evict(o, other);
}

TEST_CASE("priority: a new access re-arms the retention, and an entry may expire while unlinked") {
  FakeOwner o(std::make_unique<PriorityPolicy>(10.0));
  EvictionEntry& kept = o.create(80);  // t = 0
  EvictionEntry& pinned = o.create(80);
  o.policy->remove(pinned);
  EvictionEntry& plain = o.create(35);
  o.now = 8;
  o.touch(kept, 80);  // holds until 18
  o.now = 15;
  o.touch(plain);
  o.policy->add(pinned);  // its 80 ran out at t = 10 while it was pinned
  evict(o, pinned);
  evict(o, plain);
  evict(o, kept);
}

TEST_CASE(
    "slru: probation before protected, and the protected excess is demoted to probation's MRU") {
  FakeOwner o(std::make_unique<SlruPolicy>(0.5));
  auto& slru = static_cast<SlruPolicy&>(*o.policy);
  EvictionEntry& a = o.create();  // tick 1, probation
  EvictionEntry& b = o.create();  // 2
  EvictionEntry& c = o.create();  // 3
  EvictionEntry& d = o.create();  // 4
  o.touch(a);                     // 5: a second hit promotes
  CHECK(slru.segment(a) == SlruPolicy::kProtected);
  // 4 linked, protected may hold 2: probation b, c, d, then protected a.
  CHECK(o.policy->victim() == &b);
  o.touch(b);  // 6
  o.touch(c);  // 7: protected a, b, c is one too many; a (LRU) goes to probation after d
  CHECK(o.policy->victim() == &d);
  CHECK(slru.protected_size() == 2);
  CHECK(slru.segment(a) == SlruPolicy::kProbation);
  evict(o, d);
  // 3 linked, protected may hold 1: b is demoted behind a.
  evict(o, a);
  evict(o, b);
  evict(o, c);
}

TEST_CASE("slru: an inner node that was hit joins protected when it becomes a leaf") {
  FakeOwner o(std::make_unique<SlruPolicy>(1.0));
  EvictionEntry& inner = o.create_unlinked();
  o.touch(inner);
  EvictionEntry& fresh = o.create();
  o.policy->add(inner);
  evict(o, fresh);
  evict(o, inner);
}

TEST_CASE("sieve: hits set a bit, the hand clears bits and stops at the first unvisited entry") {
  FakeOwner o(std::make_unique<SievePolicy>());
  auto& sieve = static_cast<SievePolicy&>(*o.policy);
  EvictionEntry& a = o.create();
  EvictionEntry& b = o.create();
  EvictionEntry& c = o.create();
  EvictionEntry& d = o.create();
  EvictionEntry& e = o.create();
  CHECK_FALSE(sieve.visited(a));  // the insertion itself is not a hit
  o.touch(a);
  o.touch(c);
  // Hand from the oldest: a visited -> cleared, b is the victim.
  evict(o, b);
  CHECK_FALSE(sieve.visited(a));
  // Hand resumes after b: c visited -> cleared, d is the victim.
  evict(o, d);
  o.touch(a);
  // e is next; then the hand wraps: a visited -> cleared, c (cleared before) is the victim.
  evict(o, e);
  evict(o, c);
  evict(o, a);
}

TEST_CASE(
    "sieve: the hand does not move while its victim stays, and a re-linked entry keeps its age") {
  FakeOwner o(std::make_unique<SievePolicy>());
  EvictionEntry& a = o.create();
  EvictionEntry& b = o.create();
  EvictionEntry& c = o.create();
  CHECK(o.policy->victim() == &a);  // the tree took some of a's pages
  o.touch(b);
  CHECK(o.policy->victim() == &a);
  o.policy->remove(a);  // pinned by a request, then unpinned: back at its old place
  o.touch(a);
  o.policy->add(a);
  // a visited -> cleared, b visited -> cleared, c is the victim.
  evict(o, c);
  evict(o, a);
  evict(o, b);
}

TEST_CASE("gdsf: lowest L + hits * cost first, with L rising to each victim's priority") {
  FakeOwner o(std::make_unique<GdsfPolicy>(std::numeric_limits<double>::infinity()));
  auto& gdsf = static_cast<GdsfPolicy&>(*o.policy);
  EvictionEntry& a = o.create();  // H = 0 + 1
  EvictionEntry& b = o.create();
  o.touch(b);
  o.touch(b);  // H = 3
  evict(o, a);
  CHECK(gdsf.inflation() == doctest::Approx(1.0));
  EvictionEntry& c = o.create();  // H = 1 + 1 = 2: newer, yet colder than b
  evict(o, c);
  CHECK(gdsf.inflation() == doctest::Approx(2.0));
  o.touch(b);                     // H = 2 + 4 = 6
  EvictionEntry& d = o.create();  // H = 3
  CHECK(gdsf.score(b) == doctest::Approx(6.0));
  CHECK(gdsf.score(d) == doctest::Approx(3.0));
  evict(o, d);
  evict(o, b);
}

TEST_CASE("gdsf: deeper pages save more prefill and stay longer") {
  FakeOwner o(std::make_unique<GdsfPolicy>(10.0));
  auto& gdsf = static_cast<GdsfPolicy&>(*o.policy);
  EvictionEntry& deep = o.create(kDefaultPriority, 2, 20);    // 1 + 21 / 10 = 3.1 per page
  EvictionEntry& shallow = o.create(kDefaultPriority, 2, 0);  // 1 + 1 / 10 = 1.1
  o.touch(shallow);                                           // 2 hits: 2.2 < 3.1
  CHECK(gdsf.score(deep) == doctest::Approx(3.1));
  CHECK(gdsf.score(shallow) == doctest::Approx(2.2));
  evict(o, shallow);
  evict(o, deep);
}
