#include "bench/router_world.h"

#include <stdexcept>

namespace radixkv::bench {

namespace {

std::vector<TokenId> random_tokens(std::mt19937_64& rng, size_t n) {
  std::vector<TokenId> tokens(n);
  for (TokenId& t : tokens) t = static_cast<TokenId>(rng() % 128'000);
  return tokens;
}

}  // namespace

RouterWorld::RouterWorld(RouterWorldOptions options)
    : options_(options), names_(options.seed * 7919 + 1) {
  if (options_.workers == 0 || options_.block_tokens == 0 ||
      options_.system_tokens % options_.block_tokens != 0 ||
      options_.prompt_tokens <= options_.system_tokens ||
      (options_.prompt_tokens - options_.system_tokens) % options_.block_tokens != 0) {
    throw std::invalid_argument("RouterWorld: prompts of whole blocks longer than the system's");
  }
  std::mt19937_64 rng(options_.seed);
  for (uint32_t s = 0; s < options_.system_prompts; ++s) {
    system_.push_back(random_tokens(rng, options_.system_tokens));
  }
  system_last_.assign(options_.workers, std::vector<BlockHash>(options_.system_prompts, 0));
  prompts_.assign(options_.workers, 0);
}

std::vector<TokenId> RouterWorld::prompt(uint32_t worker, uint64_t index) const {
  std::vector<TokenId> tokens = system_[index % options_.system_prompts];
  std::mt19937_64 rng(options_.seed ^ (uint64_t{worker} << 40) ^ (index * 0x9e3779b97f4a7c15));
  const std::vector<TokenId> tail = random_tokens(rng, options_.prompt_tokens - tokens.size());
  tokens.insert(tokens.end(), tail.begin(), tail.end());
  return tokens;
}

events::BlockStored RouterWorld::store(const std::vector<TokenId>& tokens, size_t from_block,
                                       std::optional<BlockHash> parent) {
  events::BlockStored event;
  const size_t blocks = tokens.size() / options_.block_tokens;
  for (size_t b = from_block; b < blocks; ++b) event.block_hashes.push_back(names_());
  event.parent_block_hash = parent;
  event.token_ids.assign(
      tokens.begin() + static_cast<std::ptrdiff_t>(from_block * options_.block_tokens),
      tokens.end());
  event.block_size = options_.block_tokens;
  event.medium = "GPU";
  stored_ += event.block_hashes.size();
  return event;
}

events::BlockStored RouterWorld::next_prompt(uint32_t worker) {
  const uint64_t index = prompts_[worker]++;
  return store(prompt(worker, index), options_.system_tokens / options_.block_tokens,
               system_last_[worker][index % options_.system_prompts]);
}

bool RouterWorld::next_fill(uint32_t& worker, events::BlockStored& event) {
  if (stored_ >= options_.blocks) return false;
  worker = static_cast<uint32_t>(fill_step_ % options_.workers);
  const uint64_t round = fill_step_ / options_.workers;
  ++fill_step_;
  if (round < options_.system_prompts) {
    event = store(system_[round], 0, std::nullopt);
    system_last_[worker][round] = event.block_hashes.back();
  } else {
    event = next_prompt(worker);
  }
  return true;
}

std::vector<TokenId> RouterWorld::query(Query kind, uint32_t worker, std::mt19937_64& rng) const {
  switch (kind) {
    case Query::kCached:
      if (prompts_[worker] > 0) return prompt(worker, rng() % prompts_[worker]);
      [[fallthrough]];
    case Query::kSystem: {
      std::vector<TokenId> tokens = system_[rng() % options_.system_prompts];
      const std::vector<TokenId> tail =
          random_tokens(rng, options_.prompt_tokens - options_.system_tokens);
      tokens.insert(tokens.end(), tail.begin(), tail.end());
      return tokens;
    }
    case Query::kMiss:
      break;
  }
  return random_tokens(rng, options_.prompt_tokens);
}

events::BlockStored RouterWorld::churn(uint32_t worker) { return next_prompt(worker); }

}  // namespace radixkv::bench
