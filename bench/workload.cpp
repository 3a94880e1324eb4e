#include "bench/workload.h"

#include <algorithm>
#include <stdexcept>

namespace radixkv::bench {

std::string_view hit_kind_name(HitKind kind) {
  return kind == HitKind::kBoundary ? "boundary" : "inside";
}

const Workload::QuerySet* Workload::find(HitKind kind, uint32_t hit) const {
  for (const QuerySet& set : query_sets) {
    if (set.kind == kind && set.hit == hit) return &set;
  }
  return nullptr;
}

std::vector<uint32_t> hit_lengths_for(uint64_t target_tokens) {
  std::vector<uint32_t> lengths;
  for (uint32_t length : kHitLengths) {
    if (uint64_t{length} * 8 <= target_tokens) lengths.push_back(length);
  }
  return lengths;
}

namespace {

void append_fresh(std::vector<TokenId>& out, std::size_t n, Rng& rng) {
  for (std::size_t i = 0; i < n; ++i) out.push_back(rng.token());
}

struct Builder {
  Workload& w;
  Rng rng;
  std::vector<std::vector<TokenId>> system_prompts;
  // Conversations, each with the lengths of its stored prompts, before shuffling.
  std::vector<std::pair<std::vector<TokenId>, std::vector<uint32_t>>> pending;
  // (pending index, query) for the probes, resolved to stored indexes after shuffling.
  std::vector<std::pair<std::size_t, Query>> probe_queries;
  std::vector<std::pair<HitKind, uint32_t>> probe_sets;

  uint64_t pick_system_prompt() {
    const double u = static_cast<double>(rng.next() >> 11) / static_cast<double>(1ull << 53);
    return static_cast<uint64_t>(u * u * static_cast<double>(system_prompts.size()));
  }

  void add_probe(HitKind kind, uint32_t hit, uint32_t index) {
    const uint32_t page = w.page_tokens;
    const auto& system = system_prompts[index % system_prompts.size()];
    std::vector<TokenId> tokens;
    if (hit >= (system.size() / page + 1) * page + page) {
      tokens.assign(system.begin(), system.end());
    }
    const uint32_t extra = std::max(2 * page, hit / 4 / page * page);
    const uint32_t length = kind == HitKind::kBoundary ? hit : hit + extra;
    append_fresh(tokens, length - tokens.size(), rng);
    Query query;
    query.tokens.assign(tokens.begin(), tokens.begin() + hit);
    append_fresh(query.tokens, extra, rng);
    query.hit = hit;
    w.estimated_unique_tokens += length;
    probe_queries.emplace_back(pending.size(), std::move(query));
    pending.push_back({std::move(tokens), {length}});
  }

  void add_background(uint32_t hi) {
    const auto& system = system_prompts[pick_system_prompt()];
    std::vector<TokenId> tokens(system.begin(), system.end());
    std::vector<uint32_t> lengths;
    const uint64_t turns = rng.between(1, 8);
    for (uint64_t t = 0; t < turns; ++t) {
      append_fresh(tokens, rng.between(std::max(1u, hi / 128), hi / 8), rng);  // user message
      append_fresh(tokens, rng.between(std::max(1u, hi / 64), hi / 4), rng);   // answer
      lengths.push_back(static_cast<uint32_t>(tokens.size()));
    }
    w.estimated_unique_tokens += tokens.size() - system.size() + w.page_tokens;
    pending.push_back({std::move(tokens), std::move(lengths)});
  }
};

}  // namespace

Workload make_workload(uint64_t target_tokens, uint32_t page_tokens, uint64_t seed) {
  if (page_tokens == 0 || target_tokens < 64 * page_tokens) {
    throw std::invalid_argument("make_workload: target_tokens must hold at least 64 pages");
  }
  Workload w;
  w.page_tokens = page_tokens;
  w.target_tokens = target_tokens;
  Builder b{w, Rng(seed), {}, {}, {}, {}};

  const auto hi = static_cast<uint32_t>(std::clamp<uint64_t>(target_tokens / 20, 64, 4096));
  for (int i = 0; i < 8; ++i) {
    b.system_prompts.emplace_back();
    append_fresh(b.system_prompts.back(), b.rng.between(hi / 4, hi), b.rng);
    w.estimated_unique_tokens += b.system_prompts.back().size();
  }
  for (uint32_t hit : hit_lengths_for(target_tokens)) {
    const auto count =
        static_cast<uint32_t>(std::clamp<uint64_t>(target_tokens / (40 * hit), 1, 16));
    for (HitKind kind : {HitKind::kBoundary, HitKind::kInside}) {
      w.query_sets.push_back({kind, hit, {}});
      for (uint32_t q = 0; q < count; ++q) {
        b.probe_sets.emplace_back(kind, hit);
        b.add_probe(kind, hit, q);
      }
    }
  }
  while (w.estimated_unique_tokens < target_tokens) b.add_background(hi);

  // Shuffle whole conversations (Fisher-Yates on our own generator), then store each one's
  // prompts in turn order, so probes sit among the background in memory and in LRU order.
  std::vector<std::size_t> order(b.pending.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[b.rng.next() % i]);
  std::vector<uint32_t> first_stored(b.pending.size());
  for (std::size_t i : order) {
    const auto conversation = static_cast<uint32_t>(w.conversations.size());
    first_stored[i] = static_cast<uint32_t>(w.stored.size());
    for (uint32_t length : b.pending[i].second) {
      w.stored.push_back({conversation, length});
      w.max_stored_tokens = std::max(w.max_stored_tokens, length);
    }
    w.conversations.push_back(std::move(b.pending[i].first));
  }
  for (std::size_t p = 0; p < b.probe_queries.size(); ++p) {
    auto& [pending_index, query] = b.probe_queries[p];
    query.stored = first_stored[pending_index];
    for (Workload::QuerySet& set : w.query_sets) {
      if (set.kind == b.probe_sets[p].first && set.hit == b.probe_sets[p].second) {
        set.queries.push_back(std::move(query));
      }
    }
  }
  return w;
}

}  // namespace radixkv::bench
