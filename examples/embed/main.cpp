// examples/embed: one conversation through an installed radixkv, as a batch scheduler drives it.
// The lines between the README markers are the README's "How a scheduler uses it", verbatim
// (scripts/check-readme-example.py fails when the two differ); the rest gives them their inputs
// and checks that the second turn is served from the cache.
#include <cstdio>
#include <numeric>
#include <vector>

// README begin
#include <radixkv/runtime/prefix_cache_runtime.h>
// README end
#include <radixkv/version.h>

int main() {
  // 64 pages of 16 tokens of Llama-3-8B KV (2 MiB a page, 128 MiB in host memory), one tenant,
  // a 100-token prompt and the token the model samples after it.
  const uint32_t pages = 64;
  const radixkv::Namespace tenant = 1;
  std::vector<radixkv::TokenId> tokens(100);
  std::iota(tokens.begin(), tokens.end(), 1000);
  const radixkv::TokenId sampled = 7;

  // README begin
  radixkv::PagePool pool(radixkv::KvLayout::preset("llama-3-8b", 16), pages,
                         radixkv::make_host_backend());
  radixkv::PrefixCacheRuntime cache(pool, {.cache_bytes = 40ull << 30, .policy = "lru"});

  auto admitted = cache.admit({.id = 7, .name_space = tenant, .prompt = tokens});
  if (!admitted.ok()) return 1;  // kNoSpace: wait or preempt and retry; kTooLarge: reject
  // Compute positions admitted.position_offset .. tokens.size()-1 (never from 0), writing K/V into
  // admitted.block_table; the first position_offset tokens' KV is already there.
  cache.commit(admitted.seq, tokens.size());  // chunked prefill: cache what is computed
  cache.append_token(admitted.seq, sampled);  // decode: a new page when the last is full
  cache.finish(admitted.seq);                 // caches prompt + answer in whole pages
  // README end

  // The next turn repeats the conversation so far (prompt and answer) and adds 20 tokens: its
  // first 96 tokens, six whole pages, are already cached, so the model starts at position 96.
  std::vector<radixkv::TokenId> next = tokens;
  next.push_back(sampled);
  for (radixkv::TokenId t = 0; t < 20; ++t) next.push_back(5000 + t);
  const auto again = cache.admit({.id = 8, .name_space = tenant, .prompt = next});
  if (!again.ok() || again.position_offset != 96) {
    std::fprintf(stderr, "embed: the second turn should start at position 96, got %u (%s)\n",
                 again.position_offset, radixkv::to_string(again.status).data());
    return 1;
  }
  cache.abort(again.seq);
  std::printf("radixkv %s: turn 2 reused %u of %zu prompt tokens; %llu pages committed\n",
              radixkv::kVersion, again.reused_tokens, next.size(),
              static_cast<unsigned long long>(cache.stats().committed_pages));
  return 0;
}
