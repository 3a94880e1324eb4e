// Retention hints (Request::retention) and session holds through the runtime: what they keep
// against LRU's order, when they fall back, and the errors of bad input.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "runtime/prefix_cache_runtime.h"
#include "tests/cache_fixture.h"

using namespace radixkv;
using radixkv::testing::iota_tokens;

namespace {

const KvLayout kLayout{1, 1, 4, 2, 4};  // 4 tokens a page

// `quotas`: a quota layer over the retention layer too (eviction/quota_policy.h), one that changes
// no order here (namespace 0, the only one used, may take the whole budget), so every figure must
// come out as without it: it forwards the hints and holds to the namespace's retention layer.
RuntimeConfig with_retention(RetentionConfig retention = {}, bool quotas = false) {
  RuntimeConfig config;
  config.retention = retention;
  if (quotas) config.quotas = {{.name_space = 0, .min = 0.0, .max = 1.0}};
  return config;
}

void serve(PrefixCacheRuntime& runtime, const std::vector<TokenId>& prompt,
           std::span<const TokenRangeRetention> retention = {}, uint64_t session = 0) {
  Request request{.id = 1, .prompt = prompt, .session = session, .retention = retention};
  const AdmitResult r = runtime.admit(request);
  REQUIRE(r.ok());
  runtime.commit(r.seq, static_cast<uint32_t>(prompt.size()));
  runtime.finish(r.seq);
}

}  // namespace

TEST_CASE("a request's retention range keeps its pages against LRU until the duration ends") {
  const auto a = iota_tokens(9, 0), b = iota_tokens(9, 100), c = iota_tokens(9, 200);
  for (int run = 0; run < 4; ++run) {
    const bool hinted = run % 2 == 0, quotas = run >= 2;
    CAPTURE(hinted);
    CAPTURE(quotas);
    PagePool pool(kLayout, 16);
    PrefixCacheRuntime runtime(pool, with_retention({}, quotas));
    const std::vector<TokenRangeRetention> keep = {
        {.token_start = 4, .token_end = 8, .priority = 90, .duration_s = 10.0}};
    serve(runtime, a,
          hinted ? std::span<const TokenRangeRetention>(keep)
                 : std::span<const TokenRangeRetention>());
    runtime.set_now(1.0);
    serve(runtime, b);
    REQUIRE(runtime.evict(1) == 1);
    // LRU takes a's tail; the hint (on a's one node of two pages: its second page is in range)
    // sends the eviction to b.
    CHECK(runtime.cached_prefix(0, a) == (hinted ? 8 : 4));
    CHECK(runtime.cached_prefix(0, b) == (hinted ? 4 : 8));
    runtime.check_accounting();
    if (!hinted) continue;
    // Past the deadline a is plain again, and the least recently used.
    runtime.set_now(10.5);
    serve(runtime, c);
    REQUIRE(runtime.evict(1) == 1);
    CHECK(runtime.cached_prefix(0, a) == 4);
    CHECK(runtime.cached_prefix(0, b) == 4);
    CHECK(runtime.cached_prefix(0, c) == 8);
    runtime.tree().verify();
  }
}

namespace {

void hold_until_release(bool quotas) {
  const auto a = iota_tokens(9, 0), b = iota_tokens(9, 100);
  PagePool pool(kLayout, 16);
  PrefixCacheRuntime runtime(pool, with_retention({.hold_share = 1.0}, quotas));
  serve(runtime, a, {}, /*session=*/5);
  runtime.hold(5, 30.0);
  runtime.set_now(1.0);
  serve(runtime, b, {}, /*session=*/6);
  REQUIRE(runtime.evict(1) == 1);
  CHECK(runtime.cached_prefix(0, a) == 8);  // held
  CHECK(runtime.cached_prefix(0, b) == 4);
  runtime.release(5);
  REQUIRE(runtime.evict(1) == 1);
  CHECK(runtime.cached_prefix(0, a) == 4);  // LRU again: a is older than b
  CHECK(runtime.cached_prefix(0, b) == 4);
  // Held again, for two seconds: the hold protects b, then runs out by itself.
  runtime.hold(6, 2.0);
  runtime.set_now(2.5);
  const auto d = iota_tokens(5, 300), e = iota_tokens(5, 400);
  serve(runtime, d);
  REQUIRE(runtime.evict(2) == 2);
  CHECK(runtime.cached_prefix(0, a) == 0);
  CHECK(runtime.cached_prefix(0, b) == 4);
  CHECK(runtime.cached_prefix(0, d) == 0);
  runtime.set_now(3.5);
  serve(runtime, e);
  REQUIRE(runtime.evict(1) == 1);
  CHECK(runtime.cached_prefix(0, b) == 0);
  CHECK(runtime.cached_prefix(0, e) == 4);
  runtime.tree().verify();
  runtime.check_accounting();
}

}  // namespace

TEST_CASE("a session hold keeps the session's last path until release") {
  for (bool quotas : {false, true}) {
    CAPTURE(quotas);
    hold_until_release(quotas);
  }
}

TEST_CASE("bad retention input is refused with a clear error and changes nothing") {
  const auto a = iota_tokens(9, 0);
  PagePool pool(kLayout, 16);
  PrefixCacheRuntime runtime(pool, with_retention());
  const auto refused = [&](TokenRangeRetention range, const char* why) {
    const std::vector<TokenRangeRetention> ranges = {range};
    CHECK_THROWS_WITH_AS(runtime.admit({.id = 4, .prompt = a, .retention = ranges}), why,
                         std::invalid_argument);
    CHECK(runtime.live_sequences() == 0);
    CHECK(runtime.cached_pages() == 0);
  };
  refused({0, 12, 50, 1.0},
          "PrefixCacheRuntime::admit: request 4: retention range 0 [0, 12) ends at token 12, "
          "past the prompt's 9 tokens");
  refused({0, 4, 50, -1.0},
          "PrefixCacheRuntime::admit: request 4: retention range 0 [0, 4) has a duration of -1 "
          "seconds; it must be positive (or forever)");
  refused({0, 4, 120, 1.0},
          "PrefixCacheRuntime::admit: request 4: retention range 0 [0, 4) has priority 120, "
          "outside [0, 100]");
  CHECK_THROWS_WITH_AS(runtime.hold(1, -3.0),
                       "PrefixCacheRuntime::hold: session 1 held for -3 seconds; it must be >= 0",
                       std::invalid_argument);
  CHECK_THROWS_AS(runtime.hold(1, std::nan("")), std::invalid_argument);

  PagePool plain_pool(kLayout, 16);
  PrefixCacheRuntime plain(plain_pool);
  const std::vector<TokenRangeRetention> ranges = {{0, 4, 50, 1.0}};
  CHECK_THROWS_WITH_AS(plain.admit({.id = 2, .prompt = a, .retention = ranges}),
                       "PrefixCacheRuntime::admit: request 2 has retention ranges, but the "
                       "runtime has no retention layer (RuntimeConfig::retention)",
                       std::invalid_argument);
  CHECK_THROWS_AS(plain.hold(1, 1.0), std::logic_error);
  CHECK_THROWS_AS(plain.release(1), std::logic_error);
}
