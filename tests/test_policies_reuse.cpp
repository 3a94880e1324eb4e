// The reuse policy's ordering and estimates, on small cases worked out by hand (the rule is in
// eviction/reuse_policy.h). Entries are created and touched through FakeOwner, which keeps their
// facts the way the radix tree does.
#include <doctest/doctest.h>

#include <cmath>

#include "eviction/reuse_policy.h"
#include "tests/test_policies_owner.h"

using namespace radixkv;
using radixkv::testing::evict;
using radixkv::testing::FakeOwner;

namespace {

ReusePolicy& reuse(FakeOwner& owner) { return dynamic_cast<ReusePolicy&>(*owner.policy); }

// The start of the hand-worked cases (prior 1 page): a (class 4, a short answer) and b (class 10,
// a long one) created at t = 0; a reused at t = 10, adding 1 reuse over 1 page x 10 s to class 4;
// then b is the victim, its page evicted at age 10, which is tau from now on and adds 10 s of
// exposure to class 10. Returns a, still linked.
EvictionEntry& reuse_one_evict_one(FakeOwner& o) {
  o.now = 0;
  o.output_tokens = 10;
  EvictionEntry& a = o.create();
  o.output_tokens = 1000;
  EvictionEntry& b = o.create();
  CHECK(reuse(o).score(a) == 0.0);  // nothing is known yet: no shift
  CHECK(reuse(o).score(b) == 0.0);
  o.now = 10;
  o.output_tokens = 10;
  o.touch(a);
  CHECK(reuse(o).overall_rate() == doctest::Approx(0.1));
  CHECK(reuse(o).score(a) == 10.0);  // no victim yet, so tau = 0 and no shift
  evict(o, b);
  REQUIRE(reuse(o).tau() == 10.0);
  return a;
}

}  // namespace

TEST_CASE("reuse: the class is the answer length's bit width, then head or continuation") {
  const auto class_of = [](uint32_t output_tokens, uint32_t prefix_pages) {
    return ReusePolicy::class_of(output_tokens, prefix_pages);
  };
  CHECK(class_of(0, 0) == 0);
  CHECK(class_of(1, 0) == 1);
  CHECK(class_of(2, 0) == 2);
  CHECK(class_of(3, 0) == 2);
  CHECK(class_of(10, 0) == 4);
  CHECK(class_of(1000, 0) == 10);
  CHECK(class_of((1u << 16) - 1, 0) == 16);
  CHECK(class_of(1u << 16, 0) == 17);
  CHECK(class_of(~0u, 0) == 17);
  // Below the root's children: the same lengths, 18 classes on.
  CHECK(class_of(0, 1) == 18);
  CHECK(class_of(10, 7) == 22);
  CHECK(class_of(~0u, 1) == ReusePolicy::kClasses - 1);
}

TEST_CASE("reuse: a head and a continuation with the same answer length learn apart") {
  FakeOwner o(std::make_unique<ReusePolicy>(1.0, 1.0));
  o.output_tokens = 10;
  EvictionEntry& head = o.create(kDefaultPriority, 1, 0);
  EvictionEntry& tail = o.create(kDefaultPriority, 1, 3);
  o.now = 2;
  o.touch(head);  // class 4 reused after 2 s; class 22 has seen nothing
  CHECK(reuse(o).overall_rate() == doctest::Approx(0.5));
  CHECK(reuse(o).rate(4) == doctest::Approx((1.0 + 1.0) / (2.0 + 2.0)));
  CHECK(reuse(o).rate(22) == doctest::Approx(0.5));
  evict(o, tail);
}

TEST_CASE("reuse: without a clock it is LRU, whatever the answer lengths") {
  FakeOwner o(std::make_unique<ReusePolicy>());
  o.output_tokens = 5;
  EvictionEntry& a = o.create();
  o.output_tokens = 3000;
  EvictionEntry& b = o.create();
  o.output_tokens = 40;
  EvictionEntry& c = o.create();
  o.touch(a);
  o.touch(b);
  o.policy->remove(c);  // pinned
  o.policy->add(c);     // unpinned: keeps its own, oldest stamp
  evict(o, c);
  CHECK(reuse(o).tau() == 0.0);
  CHECK(reuse(o).overall_rate() == 0.0);
  evict(o, a);
  evict(o, b);
}

TEST_CASE("reuse: limit=0 is LRU on the caller's clock, even once classes differ") {
  FakeOwner o(std::make_unique<ReusePolicy>(0.0, 1.0));
  o.output_tokens = 10;
  EvictionEntry& often = o.create();
  o.output_tokens = 1000;
  EvictionEntry& never = o.create();
  for (int t = 1; t <= 5; ++t) {
    o.now = t;
    o.output_tokens = 10;
    o.touch(often);
  }
  evict(o, never);  // its page leaves with age 5: class 10 has exposure but no reuse
  CHECK(reuse(o).rate(10) < reuse(o).rate(4));
  o.now = 6;
  o.output_tokens = 1000;
  EvictionEntry& fresh = o.create();
  evict(o, often);  // last used at 5, fresh at 6: recency alone decides
  evict(o, fresh);
}

TEST_CASE("reuse: a class rarely reused within the horizon goes first, a likely one stays longer") {
  // Unclamped: every number below is worked out from the formulas in the header.
  FakeOwner o(std::make_unique<ReusePolicy>(ReusePolicy::kDefaultLimit, 1.0));
  EvictionEntry& a = reuse_one_evict_one(o);
  CHECK(reuse(o).overall_rate() == doctest::Approx(1.0 / 20.0));  // 1 reuse / 20 page-seconds
  CHECK(reuse(o).rate(4) == doctest::Approx((1.0 + 1.0) / (10.0 + 1.0 / 0.05)));   // 2/30
  CHECK(reuse(o).rate(10) == doctest::Approx((0.0 + 1.0) / (10.0 + 1.0 / 0.05)));  // 1/30
  CHECK(reuse(o).rate(7) == doctest::Approx(0.05));  // no data: the average
  // The chance of a reuse within tau = 10 s: 1 - exp(-rate * 10).
  const double p_all = 1.0 - std::exp(-0.5);          // 0.393
  const double p_short = 1.0 - std::exp(-2.0 / 3.0);  // 0.487
  const double p_long = 1.0 - std::exp(-1.0 / 3.0);   // 0.283
  CHECK(reuse(o).reuse_chance(4) == doctest::Approx(p_short));
  CHECK(reuse(o).reuse_chance(10) == doctest::Approx(p_long));

  // Two new leaves at t = 12: key = 12 + tau * ln(p_c / p_all).
  o.now = 12;
  o.output_tokens = 1000;
  EvictionEntry& long_answer = o.create();
  o.output_tokens = 10;
  EvictionEntry& short_answer = o.create();
  CHECK(reuse(o).score(long_answer) ==
        doctest::Approx(12.0 + 10.0 * std::log(p_long / p_all)));  // 8.72
  CHECK(reuse(o).score(short_answer) ==
        doctest::Approx(12.0 + 10.0 * std::log(p_short / p_all)));  // 14.12
  // The long-answer leaf, though newer than a (10), goes before it.
  evict(o, long_answer);
  evict(o, a);
  evict(o, short_answer);
}

TEST_CASE("reuse: a class moves at most limit * tau away from where LRU puts it") {
  // As above with limit 0.1: ln(p_long / p_all) = -0.33 and ln(p_short / p_all) = 0.21 are cut
  // to -0.1 and 0.1, so the long-answer leaf no longer overtakes a.
  FakeOwner o(std::make_unique<ReusePolicy>(0.1, 1.0));
  EvictionEntry& a = reuse_one_evict_one(o);
  o.now = 12;
  o.output_tokens = 1000;
  EvictionEntry& long_answer = o.create();
  o.output_tokens = 10;
  EvictionEntry& short_answer = o.create();
  CHECK(reuse(o).score(long_answer) == doctest::Approx(12.0 - 1.0));
  CHECK(reuse(o).score(short_answer) == doctest::Approx(12.0 + 1.0));
  evict(o, a);
  evict(o, long_answer);
  evict(o, short_answer);
}

TEST_CASE(
    "reuse: classes both reused well within the horizon keep LRU's order, whatever their rates") {
  // Agent-like pages reused every second, chat-like ones every 10 s, in a cache whose victims are
  // 100 s old: both are all but sure to be reused within tau, so their shifts nearly agree (3.83
  // and 3.58 s). Ranked by rate (ln(rate_c / rate_all): 103.5 and 59.4 s) the chat-like leaf C
  // would go before A though 20 s newer.
  FakeOwner o(std::make_unique<ReusePolicy>(ReusePolicy::kDefaultLimit, 1.0));
  o.output_tokens = 10;  // class 4
  EvictionEntry& a = o.create();
  o.output_tokens = 1000;  // class 10
  EvictionEntry& c = o.create();
  o.output_tokens = 100;  // class 7
  EvictionEntry& x = o.create();
  o.output_tokens = 10;
  for (double t : {1.0, 2.0}) {
    o.now = t;
    o.touch(a);  // class 4: 2 reuses over 2 page-seconds
  }
  o.output_tokens = 1000;
  for (double t : {10.0, 20.0}) {
    o.now = t;
    o.touch(c);  // class 10: 2 reuses over 20 page-seconds
  }
  o.now = 100;
  o.output_tokens = 100;
  EvictionEntry& probe = o.create();  // the clock reaches 100 s; tau is still 0: key 100
  evict(o, x);                        // 100 s old: tau = 100, class 7 gains 100 page-seconds
  REQUIRE(reuse(o).tau() == 100.0);
  const double all = 4.0 / 122.0;
  const double rate_a = (2.0 + 1.0) / (2.0 + 1.0 / all);
  const double rate_c = (2.0 + 1.0) / (20.0 + 1.0 / all);
  CHECK(reuse(o).rate(4) == doctest::Approx(rate_a));
  CHECK(reuse(o).rate(10) == doctest::Approx(rate_c));
  const auto chance = [](double rate) { return 1.0 - std::exp(-rate * 100.0); };
  CHECK(reuse(o).reuse_chance(4) > 0.9998);
  CHECK(reuse(o).reuse_chance(10) > 0.997);

  o.now = 110;
  o.output_tokens = 10;
  EvictionEntry& A = o.create();
  o.now = 130;
  o.output_tokens = 1000;
  EvictionEntry& C = o.create();
  CHECK(reuse(o).score(A) ==
        doctest::Approx(110.0 + 100.0 * std::log(chance(rate_a) / chance(all))));
  CHECK(reuse(o).score(C) ==
        doctest::Approx(130.0 + 100.0 * std::log(chance(rate_c) / chance(all))));
  CHECK(reuse(o).score(A) == doctest::Approx(113.83).epsilon(1e-4));
  CHECK(reuse(o).score(C) == doctest::Approx(133.58).epsilon(1e-4));
  evict(o, a);  // keyed at 2 s and 20 s before tau was known
  evict(o, c);
  evict(o, probe);
  evict(o, A);
  evict(o, C);
}

TEST_CASE("reuse: an access at the same instant as the previous one is no reuse") {
  FakeOwner o(std::make_unique<ReusePolicy>(1.0, 1.0));
  o.now = 3;
  EvictionEntry& a = o.create(kDefaultPriority, 4);
  o.touch(a);  // the same request's insert after its match
  CHECK(reuse(o).overall_rate() == 0.0);
  o.now = 5;
  o.touch(a);  // 4 pages reused after 2 s
  CHECK(reuse(o).overall_rate() == doctest::Approx(4.0 / 8.0));
}

TEST_CASE("reuse: an inner node is counted when reused and keyed by its own access as a leaf") {
  FakeOwner o(std::make_unique<ReusePolicy>(1.0, 1.0));
  o.now = 1;
  o.output_tokens = 2000;
  EvictionEntry& inner = o.create_unlinked(kDefaultPriority, 2);  // on a path, not a leaf
  EvictionEntry& old_leaf = o.create();
  o.now = 4;
  o.touch(inner);  // 2 pages reused after 3 s: class 11 learns 2 reuses over 6 page-seconds
  CHECK(reuse(o).overall_rate() == doctest::Approx(2.0 / 6.0));
  CHECK(reuse(o).rate(11) == doctest::Approx(1.0 / 3.0));
  // Its last child is gone: it becomes a leaf keyed at t = 4 (tau is still 0), after old_leaf.
  o.policy->add(inner);
  evict(o, old_leaf);
  evict(o, inner);
}
