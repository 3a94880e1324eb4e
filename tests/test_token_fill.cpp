// The token fill of described traces (tools/trace/trace.h, content_token): a replay's hit rates
// depend only on which pages are equal, so the fill must make pages equal exactly where the
// contents are. Checked against the block ids themselves, the oracle a hash-id trace gives.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "tools/trace/random.h"
#include "tools/trace/trace_generator.h"
#include "tools/trace/trace_reader.h"

using namespace radixkv;
using namespace radixkv::tools;

namespace {

constexpr uint32_t kBlock = 512;  // Mooncake's tokens per hash id

struct BlockTrace {
  Trace trace;
  std::vector<std::vector<uint64_t>> ids;  // each request's hash ids
};

// Requests over a small pool of ids, so that many pages meet equal and unequal blocks at the same
// position; ids far apart in value too (the key, not the id's bits, is what the fill spreads).
BlockTrace random_blocks(uint64_t seed, int requests) {
  Rng rng(seed);
  BlockTrace out;
  std::string text;
  for (int r = 0; r < requests; ++r) {
    std::vector<uint64_t> ids(1 + rng.below(5));
    for (uint64_t& id : ids) id = rng.below(4) == 0 ? rng.next() : rng.below(6);
    const uint64_t input = (ids.size() - 1) * kBlock + 1 + rng.below(kBlock);
    text += fmt::format(
        "{{\"timestamp\": {}, \"input_length\": {}, \"output_length\": 1, \"hash_ids\": [{}]}}\n",
        r, input, fmt::join(ids, ","));
    out.ids.push_back(std::move(ids));
  }
  out.trace = parse_mooncake(text, "random");
  return out;
}

}  // namespace

TEST_CASE("token fill: pages are equal exactly when their block ids are, at every page size") {
  const BlockTrace t = random_blocks(11, 40);
  std::vector<std::vector<TokenId>> prompts;
  TokenExpander expander(t.trace);
  for (std::size_t i = 0; i < t.trace.requests.size(); ++i) {
    const auto tokens = expander.expand(i);
    prompts.emplace_back(tokens.begin(), tokens.end());
  }
  // Pages that divide the block and pages that straddle two blocks (48, 100, 768); 3 tokens is the
  // smallest page that holds a whole key (trace.h).
  uint64_t equal = 0, unequal = 0;
  for (const uint32_t page : {3u, 16u, 48u, 100u, 512u, 768u}) {
    CAPTURE(page);
    for (std::size_t a = 0; a < prompts.size(); ++a) {
      for (std::size_t b = a + 1; b < prompts.size(); ++b) {
        const std::size_t shared = std::min(prompts[a].size(), prompts[b].size());
        for (std::size_t at = 0; at + page <= shared; at += page) {
          // The oracle: the ids of the blocks the page covers, in both requests.
          const std::size_t first = at / kBlock, last = (at + page - 1) / kBlock;
          const bool same_ids = std::equal(t.ids[a].begin() + first, t.ids[a].begin() + last + 1,
                                           t.ids[b].begin() + first);
          const bool same_tokens = std::equal(
              prompts[a].begin() + at, prompts[a].begin() + at + page, prompts[b].begin() + at);
          CAPTURE(a);
          CAPTURE(b);
          CAPTURE(at);
          REQUIRE(same_tokens == same_ids);
          ++(same_ids ? equal : unequal);
        }
      }
    }
  }
  // Both outcomes were exercised many times.
  CHECK(equal > 1000);
  CHECK(unequal > 1000);
}

TEST_CASE("token fill: keys one bit apart differ in every 3 consecutive tokens, at every offset") {
  Rng rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    const uint64_t key = rng.next();
    for (uint32_t begin = 0; begin < 6; ++begin) {
      std::vector<TokenId> base(3), again(3), other(3);
      fill_content(key, begin, 3, base.data());
      fill_content(key, begin, 3, again.data());
      CHECK(base == again);
      for (const TokenId token : base) CHECK(token >= 0);  // in [0, 2^31)
      for (int bit = 0; bit < 64; ++bit) {
        fill_content(key ^ (uint64_t{1} << bit), begin, 3, other.data());
        CAPTURE(bit);
        CHECK(other != base);
      }
    }
  }
  // Tokens of different phases never collide: token j of any key is tagged with j % 3.
  CHECK(content_token(0, 0) != content_token(0, 1));
  CHECK(content_token(0, 1) != content_token(0, 2));
}

TEST_CASE("token fill: fill_content writes content_token(key, begin + j), at every length") {
  // Lengths across the doubling copies' edges (24, 48, 96, ...), every phase of `begin`.
  for (const uint64_t key : {uint64_t{0}, uint64_t{0x0123456789abcdef}, ~uint64_t{0}}) {
    for (uint32_t begin = 0; begin < 4; ++begin) {
      for (uint32_t length = 0; length <= 1100; ++length) {
        std::vector<TokenId> out(length + 1, 7);
        fill_content(key, begin, length, out.data());
        uint32_t wrong = 0;
        for (uint32_t j = 0; j < length; ++j) wrong += out[j] != content_token(key, begin + j);
        CHECK_MESSAGE(wrong == 0, "key " << key << " begin " << begin << " length " << length);
        CHECK(out[length] == 7);  // nothing past the end
      }
    }
  }
}

TEST_CASE("token fill: the expander writes content_token(key, j), and a limit cuts a prefix") {
  GenConfig config;
  config.seed = 21;
  config.conversations = 30;
  const Trace trace = parse_native(generate_native(config), "gen");
  TokenExpander expander(trace);
  const TraceRequest& first = trace.requests[0];
  const Segment s = trace.segments_of(first)[0];
  const auto tokens = expander.expand(0);
  for (uint32_t j = 0; j < s.length; ++j) CHECK(tokens[j] == content_token(s.key, j));
  // The buffer is reused: a short expansion after a long one holds none of the long one's tokens.
  std::size_t longest = 0;
  for (std::size_t i = 1; i < trace.requests.size(); ++i) {
    if (trace.requests[i].input_tokens > trace.requests[longest].input_tokens) longest = i;
  }
  const auto full = expander.expand(longest);
  const std::vector<TokenId> whole(full.begin(), full.end());
  REQUIRE(whole.size() == trace.requests[longest].input_tokens);
  const auto cut = expander.expand(longest, 10);
  REQUIRE(cut.size() == 10);
  CHECK(std::equal(cut.begin(), cut.end(), whole.begin()));
  for (std::size_t i = 0; i < trace.requests.size(); ++i) {
    const auto a = expander.expand(i);
    const std::vector<TokenId> reused(a.begin(), a.end());
    TokenExpander fresh(trace);
    const auto b = fresh.expand(i);
    CHECK(std::equal(b.begin(), b.end(), reused.begin(), reused.end()));
  }
}
