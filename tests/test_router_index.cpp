// The router's BlockIndex against a model that spells content out instead of hashing it
// (tests/router_index_model.h): radixkv workers' streams, and hostile random streams in every shape
// the decoder lets through (vLLM's bytes-derived and SGLang's signed hashes, block sizes, missing
// or short token ids, unknown parents, re-used hashes, LoRA names and extra keys, 40 mediums and
// groups, events past the bound, parent cycles), under small bounds, victim by victim; then
// blocks keyed alike across engines, the tier weights, and each server defect the index owned.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>

#include "events/block_hash.h"
#include "events/event_batcher.h"
#include "router/block_index.h"
#include "tests/event_script.h"
#include "tests/router_index_model.h"

using namespace radixkv;
using namespace radixkv::router;
using events::BlockHash;

namespace {

events::EventBatcherOptions batcher_options() {
  events::EventBatcherOptions options;
  options.page_tokens = 4;
  return options;
}

void check_same(BlockIndex& index, testing::IndexModel& model) {
  index.verify();
  CHECK(index.pages() == model.pages());
  CHECK(index.evicted_pages() == model.evicted());
  CHECK(index.refused_blocks() == model.refused());
  CHECK(index.block_sizes() == model.block_sizes());
  for (WorkerId w = 0; w < index.num_workers(); ++w) {
    CAPTURE(w);
    REQUIRE(index.holdings(w) == model.holdings(w));
    CHECK(index.pages_of(w) == model.pages_of(w));
  }
}

void check_overlaps(const std::vector<Overlap>& got, const std::vector<Overlap>& expected) {
  REQUIRE(got.size() == expected.size());
  for (size_t w = 0; w < got.size(); ++w) {
    CAPTURE(w);
    CHECK(got[w].length == expected[w].length);
    CHECK(got[w].weighted == doctest::Approx(expected[w].weighted));
  }
}

// A query from a path the model knows: its tokens, sometimes cut or extended, in its namespace.
// Whether some worker matched some of it.
bool check_token_query(BlockIndex& index, testing::IndexModel& model, std::mt19937_64& rng) {
  const std::vector<testing::IndexModel::Path> paths = model.paths();
  if (paths.empty()) return false;
  const testing::IndexModel::Path& path = paths[rng() % paths.size()];
  KeyNamespace ns{.ns = std::stoull(path.root.substr(2)), .lora_name = path.lora_name};
  std::vector<TokenId> tokens = path.tokens;
  if (rng() % 3 == 0) tokens.resize(tokens.size() - rng() % (tokens.size() + 1));
  if (rng() % 3 == 0) tokens.push_back(static_cast<TokenId>(rng() % 50));
  CAPTURE(tokens.size());
  const std::vector<Overlap> expected = model.match_tokens(ns, tokens);
  check_overlaps(index.match_tokens(ns, tokens), expected);
  return std::any_of(expected.begin(), expected.end(),
                     [](const Overlap& o) { return o.length > 0; });
}

// Several radixkv workers (scripted caches) whose batches go to a BlockIndex and to the model.
struct RadixkvCluster {
  RadixkvCluster(size_t workers, size_t max_pages, uint64_t seed)
      : index(max_pages), model(max_pages), rng(seed) {
    for (size_t w = 0; w < workers; ++w) {
      const WorkerId id = index.add_worker(fmt::format("w{}", w));
      REQUIRE(model.add_worker() == id);
      batchers.push_back(std::make_unique<events::EventBatcher>(
          batcher_options(), [this, id](events::EventBatch&& batch) {
            index.apply(id, batch);
            model.apply(id, batch);
          }));
      caches.push_back(std::make_unique<testing::ScriptedCache>(
          testing::ScriptOptions{
              .seed = seed * 100 + w, .page_tokens = 4, .max_pages = 40, .clears = w == 2},
          *batchers.back()));
    }
  }

  BlockIndex index;
  testing::IndexModel model;
  std::mt19937_64 rng;
  std::vector<std::unique_ptr<events::EventBatcher>> batchers;
  std::vector<std::unique_ptr<testing::ScriptedCache>> caches;
};

// A hostile publisher: random events of every shape the decoder lets through.
class RandomStream {
 public:
  RandomStream(uint64_t seed, size_t max_pages) : rng_(seed), max_pages_(max_pages) {
    sizes_ = {4, 8};
  }

  events::EventBatch next() {
    events::EventBatch batch;
    const int n = 1 + static_cast<int>(rng_() % 4);
    for (int e = 0; e < n; ++e) {
      const uint64_t roll = rng_() % 100;
      if (roll < 60) {
        batch.events.emplace_back(stored());
      } else if (roll < 95) {
        batch.events.emplace_back(removed());
      } else if (roll < 97) {
        batch.events.emplace_back(events::AllBlocksCleared{});
        known_.clear();
      } else {
        batch.events.emplace_back(huge());
      }
    }
    return batch;
  }

  // A run of engine hashes this stream stored in order: a query by hashes.
  std::vector<BlockHash> hash_query() {
    if (runs_.empty()) return {};
    // Mostly the latest runs: older ones are more often removed or evicted by now.
    const size_t recent = std::min<size_t>(runs_.size(), 3);
    std::vector<BlockHash> run =
        rng_() % 4 != 0 ? runs_[runs_.size() - 1 - rng_() % recent] : runs_[rng_() % runs_.size()];
    if (rng_() % 3 == 0 && !run.empty()) run.resize(rng_() % run.size());
    if (rng_() % 4 == 0) run.push_back(rng_());
    return run;
  }

 private:
  std::optional<std::string> medium() {
    switch (rng_() % 8) {
      case 0:
        return std::nullopt;
      case 1:
      case 2:
        return "CPU";
      case 3:
        return "cpu";  // LMCache's
      case 4:
        return "DISK";
      case 5:  // junk: past 32 locations the stores are refused
        return fmt::format("junk{}", rng_() % 40);
      default:
        return "GPU";
    }
  }

  BlockHash fresh_or_known() {
    if (!known_.empty() && rng_() % 6 == 0) return known_[rng_() % known_.size()];  // re-used
    return rng_() % 1000;  // small: collisions between workers' opaque hashes happen
  }

  events::BlockStored stored() {
    events::BlockStored s;
    const size_t blocks = 1 + rng_() % 4;
    const uint64_t size_roll = rng_() % 10;
    s.block_size = size_roll < 8 ? sizes_[size_roll % 2] : static_cast<uint32_t>(1 + rng_() % 12);
    for (size_t b = 0; b < blocks; ++b) s.block_hashes.push_back(fresh_or_known());
    switch (rng_() % 5) {
      case 0:
        break;  // a root
      case 1:
        s.parent_block_hash = rng_() % 1000;  // most likely unknown
        break;
      case 2:
        s.parent_block_hash = s.block_hashes.back();  // a cycle
        break;
      default:
        if (!known_.empty()) s.parent_block_hash = known_[rng_() % known_.size()];
    }
    const uint64_t tokens_roll = rng_() % 10;
    if (tokens_roll != 0) {  // 1 in 10: no tokens
      size_t count = blocks * s.block_size;
      if (tokens_roll == 1) count += 1;  // do not fill block_size
      for (size_t t = 0; t < count; ++t) s.token_ids.push_back(static_cast<int64_t>(rng_() % 6));
      if (tokens_roll == 2) s.token_ids[0] = int64_t{1} << 40;  // past 32 bits
    }
    s.medium = medium();
    if (rng_() % 5 == 0) s.group_idx = static_cast<int64_t>(rng_() % 2);
    if (rng_() % 5 == 0) s.lora_name = fmt::format("lora{}", rng_() % 2);
    if (rng_() % 5 == 0) {
      s.extra_keys.emplace();
      for (size_t b = 0; b < blocks; ++b) {
        const uint64_t k = rng_() % 4;
        if (k == 0)
          s.extra_keys->push_back(testing::random_extra_keys(rng_));
        else if (k == 1)
          s.extra_keys->push_back(events::namespace_extra_keys(1 + rng_() % 2));
        else
          s.extra_keys->push_back(std::nullopt);
      }
    }
    known_.insert(known_.end(), s.block_hashes.begin(), s.block_hashes.end());
    runs_.push_back(s.block_hashes);
    if (runs_.size() > 50) runs_.erase(runs_.begin());
    return s;
  }

  events::BlockRemoved removed() {
    events::BlockRemoved r;
    const size_t n = 1 + rng_() % 3;
    for (size_t i = 0; i < n; ++i) r.block_hashes.push_back(fresh_or_known());
    r.medium = medium();
    if (rng_() % 5 == 0) r.group_idx = static_cast<int64_t>(rng_() % 2);
    return r;
  }

  events::BlockStored huge() {  // more blocks than the bound: refused whole
    events::BlockStored s;
    s.block_size = 4;
    for (size_t b = 0; b <= max_pages_; ++b) s.block_hashes.push_back(rng_());
    s.medium = "GPU";
    return s;
  }

  std::mt19937_64 rng_;
  size_t max_pages_;
  std::vector<uint32_t> sizes_;
  std::vector<BlockHash> known_;
  std::vector<std::vector<BlockHash>> runs_;
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
  return {
      0, {events::BlockRemoved{.block_hashes = std::move(hashes), .medium = std::move(medium)}}, 0};
}

// A BlockStored of `tokens` in blocks of `size`, named by `hashes`, with tokens.
events::BlockStored with_tokens(std::vector<BlockHash> hashes, std::optional<BlockHash> parent,
                                const std::vector<TokenId>& tokens, uint32_t size,
                                std::string medium = "GPU") {
  events::BlockStored s;
  s.block_hashes = std::move(hashes);
  s.parent_block_hash = parent;
  s.block_size = size;
  s.token_ids.assign(tokens.begin(), tokens.end());
  s.medium = std::move(medium);
  return s;
}

std::vector<TokenId> iota_tokens(TokenId base, size_t n) {
  std::vector<TokenId> tokens(n);
  for (size_t i = 0; i < n; ++i) tokens[i] = base + static_cast<TokenId>(i);
  return tokens;
}

}  // namespace

TEST_CASE("router: radixkv workers' streams: the index holds what the model holds") {
  for (size_t bound : {1'000'000, 5, 17, 40}) {
    for (uint64_t seed = 1; seed <= 2; ++seed) {
      CAPTURE(bound);
      CAPTURE(seed);
      RadixkvCluster cluster(3, bound, seed + bound);
      int found = 0;
      for (int step = 0; step < 120; ++step) {
        for (auto& cache : cluster.caches) cache->step();
        check_same(cluster.index, cluster.model);
        found += check_token_query(cluster.index, cluster.model, cluster.rng);
        REQUIRE(cluster.index.pages() <= bound);
      }
      CHECK(found > 30);
      if (bound < 100) CHECK(cluster.index.evicted_pages() > 0);
    }
  }
}

TEST_CASE("router: a radixkv block's key is its published hash, in every namespace") {
  BlockIndex index;
  const WorkerId w = index.add_worker("w");
  std::vector<events::EventBatch> batches;
  events::EventBatcher batcher(batcher_options(),
                               [&](events::EventBatch&& b) { batches.push_back(std::move(b)); });
  testing::ScriptedCache cache({.seed = 3, .page_tokens = 4, .namespaces = 3}, batcher);
  const std::vector<TokenId> pinned = cache.pin_prefix(2, 5, 100);
  for (int step = 0; step < 50; ++step) cache.step();
  for (const auto& b : batches) index.apply(w, b);
  // What the worker published is what the index holds, and the tokens find it by content.
  std::set<testing::MediumBlock> held;
  for (const BlockHolding& h : index.holdings(w)) {
    for (const std::string& m : h.mediums) held.emplace(m, h.hash);
  }
  CHECK(held == cache.truth());
  const std::vector<BlockHash> published = events::prefix_block_hashes(2, pinned, 4);
  CHECK(request_keys({.ns = 2}, pinned, 4) == published);
  CHECK(index.overlaps(published) == std::vector<uint32_t>{5});
  CHECK(index.match_tokens({.ns = 2}, pinned) == std::vector<Overlap>{{20, 20}});
  CHECK(index.match_tokens({.ns = 0}, pinned) == std::vector<Overlap>{{0, 0}});
  CHECK(index.match_hashes(published) == std::vector<Overlap>{{5, 5}});
}

TEST_CASE("router: hostile random streams: the index holds and matches what the model does") {
  for (size_t bound : {6, 20, 60, 100'000}) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      CAPTURE(bound);
      CAPTURE(seed);
      BlockIndex index(bound);
      testing::IndexModel model(bound);
      std::vector<RandomStream> streams;
      for (uint64_t w = 0; w < 3; ++w) {
        index.add_worker(fmt::format("w{}", w));
        model.add_worker();
        streams.emplace_back(seed * 10 + w, bound);
      }
      std::mt19937_64 rng(seed);
      int found_by_tokens = 0, found_by_hashes = 0;
      for (int step = 0; step < 150; ++step) {
        CAPTURE(step);
        for (WorkerId w = 0; w < 3; ++w) {
          const events::EventBatch batch = streams[w].next();
          index.apply(w, batch);
          model.apply(w, batch);
        }
        check_same(index, model);
        found_by_tokens += check_token_query(index, model, rng);
        const std::vector<BlockHash> hashes = streams[rng() % 3].hash_query();
        const std::vector<Overlap> expected = model.match_hashes(hashes);
        check_overlaps(index.match_hashes(hashes), expected);
        found_by_hashes += std::any_of(expected.begin(), expected.end(),
                                       [](const Overlap& o) { return o.length > 0; });
        REQUIRE(index.pages() <= bound);
      }
      CHECK(found_by_tokens > 10);
      CHECK(found_by_hashes > 10);
      CHECK(index.refused_blocks() > 0);  // the huge events, and stores at a 33rd medium
    }
  }
}

TEST_CASE("router: applying an event part by part is applying it whole") {
  BlockIndex whole(50), parts(50);
  for (BlockIndex* index : {&whole, &parts}) index->add_worker("w");
  RandomStream a(7, 50), b(7, 50);
  for (int step = 0; step < 200; ++step) {
    for (const events::KvEvent& event : a.next().events) whole.apply(0, event);
    for (const events::KvEvent& event : b.next().events) {
      for (size_t at = 0; at != BlockIndex::kDone;) at = parts.apply_part(0, event, at, 1);
    }
    REQUIRE(whole.holdings(0) == parts.holdings(0));
    REQUIRE(whole.pages() == parts.pages());
  }
  parts.verify();
}

TEST_CASE("router: vLLM, SGLang and radixkv blocks of the same tokens have the same keys") {
  const std::vector<TokenId> prompt = iota_tokens(1000, 64);
  BlockIndex index;
  const WorkerId vllm = index.add_worker("vllm"), sglang = index.add_worker("sglang"),
                 radix = index.add_worker("radixkv");
  // vLLM: one event of 4 blocks of 16, hashes derived from SHA-256 bytes (any 64-bit values).
  index.apply(vllm,
              events::KvEvent{with_tokens({0xa1, 0xa2, 0xa3, 0xa4}, std::nullopt, prompt, 16)});
  // SGLang: one block per event, signed hashes, no medium, pages of 16.
  std::optional<BlockHash> parent;
  for (int b = 0; b < 4; ++b) {
    const BlockHash h = static_cast<BlockHash>(-100 - b);
    events::BlockStored s = with_tokens(
        {h}, parent, std::vector<TokenId>(prompt.begin() + 16 * b, prompt.begin() + 16 * b + 16),
        16);
    s.medium.reset();
    index.apply(sglang, events::KvEvent{s});
    parent = h;
  }
  // radixkv: its own chained hashes, 2 of the 4 blocks.
  const std::vector<BlockHash> own = events::prefix_block_hashes(0, prompt, 16);
  index.apply(radix, events::KvEvent{with_tokens(
                         {own[0], own[1]}, std::nullopt,
                         std::vector<TokenId>(prompt.begin(), prompt.begin() + 32), 16)});
  CHECK(index.match_tokens({}, prompt) == std::vector<Overlap>{{64, 64}, {64, 64}, {32, 32}});
  // Each worker's own names still find its blocks; another's do not.
  CHECK(index.match_hashes(std::vector<BlockHash>{0xa1, 0xa2}) ==
        std::vector<Overlap>{{2, 2}, {0, 0}, {0, 0}});
  CHECK(index.match_hashes(own) == std::vector<Overlap>{{0, 0}, {0, 0}, {2, 2}});
  CHECK(index.pages() == 4);  // one entry per block of content, whoever holds it

  // BlockRemoved by the engine's hash finds the block: vLLM drops its third block.
  index.apply(vllm, removed({0xa3}));
  CHECK(index.match_tokens({}, prompt)[0] == Overlap{32, 32});
  index.verify();
}

TEST_CASE("router: LoRA names, extra keys and cache salts key blocks as vLLM keys them") {
  const std::vector<TokenId> prompt = iota_tokens(7, 32);
  BlockIndex index;
  const WorkerId w = index.add_worker("w");
  // Without extra_keys, lora_name alone keys every block.
  events::BlockStored lora = with_tokens({1, 2}, std::nullopt, prompt, 16);
  lora.lora_name = "sql";
  index.apply(w, events::KvEvent{lora});
  CHECK(index.match_tokens({.lora_name = "sql"}, prompt)[0] == Overlap{32, 32});
  CHECK(index.match_tokens({}, prompt)[0] == Overlap{0, 0});
  CHECK(index.match_tokens({.lora_name = "chat"}, prompt)[0] == Overlap{0, 0});
  // extra_keys as vLLM publishes them: (lora, salt) on the first block, (lora,) after.
  const KeyNamespace salted{.lora_name = "sql", .cache_salt = "tenant-9"};
  events::BlockStored with_salt = with_tokens({3, 4}, std::nullopt, prompt, 16);
  with_salt.lora_name = "sql";
  with_salt.extra_keys = {{request_extra_keys(salted, true), request_extra_keys(salted, false)}};
  index.apply(w, events::KvEvent{with_salt});
  CHECK(index.match_tokens(salted, prompt)[0] == Overlap{32, 32});
  CHECK(index.match_tokens({.cache_salt = "tenant-9"}, prompt)[0] == Overlap{0, 0});
  // A multimodal block's extra keys: its tokens alone do not find it, the block before it does.
  events::BlockStored image = with_tokens({5, 6}, std::nullopt, prompt, 16);
  std::mt19937_64 rng(1);
  image.extra_keys = {{std::nullopt, testing::random_extra_keys(rng)}};
  index.apply(w, events::KvEvent{image});
  CHECK(index.match_tokens({}, prompt)[0] == Overlap{16, 16});
  index.verify();
}

TEST_CASE("router: tiers count by their weight, and block sizes combine token by token") {
  TierWeights weights;
  weights.set("CPU", 0.5);
  BlockIndex index(1000, weights);
  const WorkerId gpu = index.add_worker("gpu"), cpu = index.add_worker("cpu"),
                 lmcache = index.add_worker("vllm+lmcache");
  const std::vector<TokenId> prompt = iota_tokens(50, 64);
  index.apply(gpu, events::KvEvent{with_tokens({1, 2, 3, 4}, std::nullopt, prompt, 16)});
  index.apply(cpu, events::KvEvent{with_tokens({1, 2, 3, 4}, std::nullopt, prompt, 16, "CPU")});
  // vLLM's GPU holds the first 2 blocks of 16; LMCache's CPU ("cpu") a chunk of 64.
  index.apply(lmcache, events::KvEvent{with_tokens(
                           {9, 10}, std::nullopt,
                           std::vector<TokenId>(prompt.begin(), prompt.begin() + 32), 16)});
  index.apply(lmcache, events::KvEvent{with_tokens({77}, std::nullopt, prompt, 64, "cpu")});
  const std::vector<Overlap> m = index.match_tokens({}, prompt);
  CHECK(m[0] == Overlap{64, 64});
  CHECK(m[1] == Overlap{64, 32});
  // Tokens 0-31 on the GPU (1.0), 32-63 only in the CPU chunk (0.5): 32 + 16.
  CHECK(m[2] == Overlap{64, 48});
  // On both GPU and CPU, a block counts its best tier.
  index.apply(
      cpu, events::KvEvent{with_tokens(
               {1}, std::nullopt, std::vector<TokenId>(prompt.begin(), prompt.begin() + 16), 16)});
  CHECK(index.match_tokens({}, prompt)[1] == Overlap{64, 40});
  CHECK(index.block_sizes() == std::vector<std::pair<uint32_t, size_t>>{{16, 10}, {64, 1}});
  index.verify();
  CHECK(TierWeights{}.weight("gpu") == 1.0);
  CHECK(TierWeights{}.weight("") == 1.0);  // no medium: vLLM's GPU
  CHECK(TierWeights{}.weight("Cpu") == 0.8);
  CHECK(TierWeights{}.weight("LocalDiskBackend") == 0.3);
  CHECK_THROWS_WITH_AS(parse_tier_weight("CPU=1.5", weights),
                       "--tier-weight CPU=1.5: the weight must be in [0, 1]",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_tier_weight("CPU", weights),
                       "--tier-weight CPU: expected MEDIUM=WEIGHT, e.g. CPU=0.8",
                       std::invalid_argument);
  parse_tier_weight("*=0.1", weights);
  CHECK(weights.weight("NVMe") == 0.1);
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
  CHECK_THROWS_WITH_AS(index.apply(7, removed({1})), "unknown worker id 7 (0 workers)",
                       std::invalid_argument);
  CHECK_THROWS_AS(index.add_worker(""), std::invalid_argument);
  CHECK_THROWS_WITH_AS(BlockIndex(0), "the router index needs room for >= 1 page",
                       std::invalid_argument);
}

// Issue 29, item 4: parent cycles held the index over its bound and evicted every later block
// at once; one BlockStored of 3 M hashes under a bound of 1,000 took 521 MB and 8 s.
TEST_CASE("router: parent cycles never hold the index over its bound") {
  BlockIndex index(100);
  const WorkerId w = index.add_worker("w");
  for (BlockHash chain = 0; chain < 50; ++chain) {
    std::vector<BlockHash> hashes;
    for (BlockHash b = 0; b < 100; ++b) hashes.push_back(chain * 1000 + b);
    index.apply(w, stored(hashes, hashes.back()));  // the first names the last as parent
    REQUIRE(index.pages() <= 100);
  }
  // A real chain after them is kept, not evicted at once.
  const std::vector<TokenId> prompt = iota_tokens(3, 40);
  index.apply(
      w, events::KvEvent{with_tokens({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, std::nullopt, prompt, 4)});
  CHECK(index.match_tokens({}, prompt)[0] == Overlap{40, 40});
  CHECK(index.pages() == 100);
  index.verify();
}

TEST_CASE("router: a BlockStored of more blocks than the bound is refused whole, at once") {
  BlockIndex index(1000);
  const WorkerId w = index.add_worker("w");
  events::BlockStored huge;
  huge.block_size = 16;
  huge.medium = "GPU";
  huge.block_hashes.resize(3'000'000);
  for (size_t i = 0; i < huge.block_hashes.size(); ++i) huge.block_hashes[i] = i + 1;
  const events::KvEvent event{huge};
  const auto start = std::chrono::steady_clock::now();
  index.apply(w, event);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(index.pages() == 0);
  CHECK(index.refused_blocks() == 3'000'000);
  CHECK(seconds < 0.5);  // nothing is stored (8 s before: 3 M stores, then the evictions)
  // One just at the bound is taken: parts of 4,096 blocks each leave it at the bound throughout.
  huge.block_hashes.resize(1000);
  for (size_t at = 0; at != BlockIndex::kDone;) {
    at = index.apply_part(w, events::KvEvent{huge}, at, 256);
    REQUIRE(index.pages() <= 1000);
  }
  CHECK(index.pages() == 1000);
  index.verify();
}

// Issue 29, item 5: the medium-name registry was shared by all workers and never shrank: one
// worker's 32 junk mediums made another worker's valid "CPU" batch fail, wiping its whole view.
TEST_CASE("router: each worker has its own mediums, and junk stays the sender's") {
  BlockIndex index;
  const WorkerId junk = index.add_worker("junk"), good = index.add_worker("good");
  index.apply(good, stored({1}, std::nullopt, "GPU"));
  for (int m = 0; m < 40; ++m)
    index.apply(junk, stored({100}, std::nullopt, fmt::format("m{}", m)));
  CHECK(index.refused_blocks() == 8);  // the junk worker's 33rd to 40th mediums
  index.apply(good, stored({2}, std::nullopt, "CPU"));
  CHECK(index.holdings(good) == std::vector<BlockHolding>{{1, {"GPU"}}, {2, {"CPU"}}});
  // Cleared, the junk worker starts over with room for 32 again.
  index.apply(junk, events::EventBatch{0, {events::AllBlocksCleared{}}, 0});
  index.apply(junk, stored({7}, std::nullopt, "CPU"));
  CHECK(index.holdings(junk) == std::vector<BlockHolding>{{7, {"CPU"}}});
  index.verify();
}
