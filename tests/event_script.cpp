#include "tests/event_script.h"

#include <msgpack.hpp>

#include <numeric>

#include "events/block_hash.h"

namespace radixkv::testing {

ScriptedCache::ScriptedCache(ScriptOptions options, TierEvents& observer)
    : options_(options), observer_(observer), rng_(options.seed) {
  std::mt19937_64 shared(options_.template_seed);
  for (int t = 0; t < 4; ++t) {
    std::vector<TokenId> page(options_.page_tokens);
    for (TokenId& token : page) token = static_cast<TokenId>(1000 + shared() % 1000);
    templates_.push_back(std::move(page));
  }
}

std::vector<TokenId> ScriptedCache::pin_prefix(Namespace ns, uint32_t pages, TokenId base) {
  std::vector<TokenId> tokens(size_t{pages} * options_.page_tokens);
  std::iota(tokens.begin(), tokens.end(), base);
  std::vector<std::vector<TokenId>> chain;
  for (uint32_t p = 0; p < pages; ++p) {
    chain.emplace_back(tokens.begin() + p * options_.page_tokens,
                       tokens.begin() + (p + 1) * options_.page_tokens);
  }
  make_resident(ns, std::nullopt, chain, true);
  observer_.flush();
  return tokens;
}

void ScriptedCache::step() {
  const int changes = 1 + static_cast<int>(rng_() % 3);
  for (int c = 0; c < changes; ++c) {
    if (options_.clears && rng_() % 50 == 0) {
      observer_.cleared();
      pages_.clear();
      continue;
    }
    // Past max_pages only offloads and drops, which make room; else stores half the time.
    const uint64_t roll = rng_() % 4;
    if (roll == 2 || (roll == 0 && pages_.size() > options_.max_pages)) {
      offload_one();
    } else if (roll == 3 || pages_.size() > options_.max_pages) {
      drop_one();
    } else {
      store_chain();
    }
  }
  observer_.flush();
}

void ScriptedCache::store_chain() {
  std::optional<PageHash> parent;
  Namespace ns = rng_() % options_.namespaces;
  std::vector<std::vector<TokenId>> chain;
  const std::vector<PageHash> below = pick([](const Page&) { return true; });
  if (below.empty() || rng_() % 5 < 2) {
    chain.push_back(templates_[rng_() % templates_.size()]);
  } else {
    parent = below[rng_() % below.size()];
    ns = pages_.at(*parent).ns;
  }
  const int fresh = (chain.empty() ? 1 : 0) + static_cast<int>(rng_() % 3);
  for (int p = 0; p < fresh; ++p) {
    std::vector<TokenId> page(options_.page_tokens);
    for (TokenId& token : page) token = static_cast<TokenId>(rng_() % 50);
    chain.push_back(std::move(page));
  }
  make_resident(ns, parent, chain, false);
}

void ScriptedCache::make_resident(Namespace ns, std::optional<PageHash> parent,
                                  const std::vector<std::vector<TokenId>>& chain, bool pinned) {
  PageHash hash = parent ? *parent : namespace_seed(ns);
  std::optional<PageHash> run_parent = parent;
  std::vector<PageHash> run;
  std::vector<TokenId> run_tokens;
  auto emit = [&] {
    if (!run.empty()) observer_.stored(Tier::kDevice, ns, run_parent, run, run_tokens);
    run.clear();
    run_tokens.clear();
  };
  std::optional<PageHash> previous = parent;
  for (const std::vector<TokenId>& tokens : chain) {
    hash = chain_page_hash(hash, tokens);
    Page& page = pages_[hash];
    if (page.tokens.empty()) page = {ns, previous, tokens, false, false, false};
    page.pinned = page.pinned || pinned;
    if (page.device) {
      emit();
      run_parent = hash;
    } else {
      page.device = true;
      run.push_back(hash);
      run_tokens.insert(run_tokens.end(), tokens.begin(), tokens.end());
    }
    previous = hash;
  }
  emit();
}

bool ScriptedCache::has_child(const PageHash& hash, bool device_only) const {
  for (const auto& [h, page] : pages_) {
    if (page.parent == hash && (!device_only || page.device)) return true;
  }
  return false;
}

template <typename Pred>
std::vector<PageHash> ScriptedCache::pick(Pred pred) const {
  std::vector<PageHash> out;
  for (const auto& [hash, page] : pages_) {
    if (pred(page)) out.push_back(hash);
  }
  return out;
}

void ScriptedCache::offload_one() {
  const std::vector<PageHash> tails = pick([](const Page& p) { return p.device && !p.pinned; });
  std::vector<PageHash> candidates;
  for (const PageHash& h : tails) {
    if (!has_child(h, true)) candidates.push_back(h);
  }
  if (candidates.empty()) return;
  const PageHash hash = candidates[rng_() % candidates.size()];
  Page& page = pages_.at(hash);
  const PageHash one[1] = {hash};
  if (!page.host && !has_child(hash, false) && rng_() % 2 == 0) {
    observer_.removed(Tier::kDevice, one);
    pages_.erase(hash);
    return;
  }
  if (!page.host) {
    observer_.stored(Tier::kHost, page.ns, page.parent, one, page.tokens);
    page.host = true;
  }
  observer_.removed(Tier::kDevice, one);
  page.device = false;
}

void ScriptedCache::drop_one() {
  const std::vector<PageHash> host_only =
      pick([](const Page& p) { return p.host && !p.device && !p.pinned; });
  std::vector<PageHash> candidates;
  for (const PageHash& h : host_only) {
    if (!has_child(h, false)) candidates.push_back(h);
  }
  if (candidates.empty()) return;
  const PageHash hash = candidates[rng_() % candidates.size()];
  const PageHash one[1] = {hash};
  observer_.removed(Tier::kHost, one);
  pages_.erase(hash);
}

std::set<MediumBlock> ScriptedCache::truth(const std::string& device,
                                           const std::string& host) const {
  std::set<MediumBlock> out;
  for (const auto& [hash, page] : pages_) {
    if (page.device) out.emplace(device, events::block_hash(hash));
    if (page.host) out.emplace(host, events::block_hash(hash));
  }
  return out;
}

void apply_events(std::set<MediumBlock>& held, const events::EventBatch& batch) {
  for (const events::KvEvent& event : batch.events) {
    if (const auto* stored = std::get_if<events::BlockStored>(&event)) {
      for (uint64_t h : stored->block_hashes) held.emplace(stored->medium.value_or(""), h);
    } else if (const auto* removed = std::get_if<events::BlockRemoved>(&event)) {
      for (uint64_t h : removed->block_hashes) held.erase({removed->medium.value_or(""), h});
    } else {
      held.clear();
    }
  }
}

events::ExtraKeys random_extra_keys(std::mt19937_64& rng) {
  // Tuples as vLLM builds them: the LoRA name, (multimodal identifier, offset) pairs, the cache
  // salt, a prompt-embedding digest (bytes).
  msgpack::sbuffer bytes;
  msgpack::packer<msgpack::sbuffer> pk(&bytes);
  const int parts = 1 + static_cast<int>(rng() % 3);
  pk.pack_array(static_cast<uint32_t>(parts));
  for (int p = 0; p < parts; ++p) {
    switch (rng() % 3) {
      case 0:
        pk.pack("lora-" + std::to_string(rng() % 5));
        break;
      case 1:
        pk.pack_array(2);
        pk.pack("mm-" + std::to_string(rng() % 1000));
        pk.pack(rng() % 64);
        break;
      default: {
        const std::string digest(32, static_cast<char>(rng()));
        pk.pack_bin(static_cast<uint32_t>(digest.size()));
        pk.pack_bin_body(digest.data(), static_cast<uint32_t>(digest.size()));
      }
    }
  }
  return {bytes.data(), bytes.size()};
}

events::EventBatch random_event_batch(std::mt19937_64& rng) {
  using namespace events;
  EventBatch batch;
  batch.ts = static_cast<double>(rng() % 2'000'000'000) + 0.25;
  if (rng() % 4 != 0) batch.data_parallel_rank = static_cast<int64_t>(rng() % 8);
  const int n = static_cast<int>(rng() % 6);
  for (int e = 0; e < n; ++e) {
    switch (rng() % 3) {
      case 0: {
        BlockStored s;
        s.block_size = 1 + static_cast<uint32_t>(rng() % 32);
        const int blocks = static_cast<int>(rng() % 4);
        for (int b = 0; b < blocks; ++b) s.block_hashes.push_back(rng());
        for (uint32_t t = 0; t < blocks * s.block_size; ++t) {
          s.token_ids.push_back(static_cast<int64_t>(rng() % 200'000) - 100);
        }
        if (rng() % 2) s.parent_block_hash = rng();
        if (rng() % 3 == 0) s.lora_id = static_cast<int64_t>(rng() % 100);
        if (rng() % 2) s.medium = rng() % 2 ? "GPU" : "CPU";
        if (rng() % 3 == 0) s.lora_name = "adapter-" + std::to_string(rng() % 10);
        // vLLM's later fields, each left out unless set: every combination, so that an array's
        // unset fields before a set one are written as nil.
        if (rng() % 3 == 0) {
          s.extra_keys.emplace();
          for (int b = 0; b < blocks; ++b) {
            if (rng() % 2)
              s.extra_keys->push_back(random_extra_keys(rng));
            else
              s.extra_keys->push_back(std::nullopt);
          }
        }
        if (rng() % 3 == 0) s.group_idx = static_cast<int64_t>(rng() % 3);
        if (rng() % 4 == 0) s.kv_cache_spec_kind = rng() % 2 ? "full_attention" : "sliding_window";
        if (rng() % 4 == 0) s.kv_cache_spec_sliding_window = static_cast<int64_t>(rng() % 4096);
        batch.events.emplace_back(std::move(s));
        break;
      }
      case 1: {
        BlockRemoved r;
        const int blocks = static_cast<int>(rng() % 5);
        for (int b = 0; b < blocks; ++b) r.block_hashes.push_back(rng());
        if (rng() % 2) r.medium = "CPU";
        if (rng() % 3 == 0) r.group_idx = static_cast<int64_t>(rng() % 3);
        if (rng() % 3 == 0) r.reason = rng() % 2 ? "evicted" : "demoted";  // radixkv's, last
        batch.events.emplace_back(std::move(r));
        break;
      }
      default:
        batch.events.emplace_back(AllBlocksCleared{});
    }
  }
  return batch;
}

}  // namespace radixkv::testing
