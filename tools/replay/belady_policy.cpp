#include "tools/replay/belady_policy.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <stdexcept>

namespace radixkv::tools {

namespace {

struct PageUse {
  uint64_t identity;
  uint32_t request;
  uint32_t position;
};

}  // namespace

NextUseIndex::NextUseIndex(const Trace& trace, uint32_t page_tokens) : page_tokens_(page_tokens) {
  if (page_tokens == 0) throw std::invalid_argument("NextUseIndex: page_tokens must be at least 1");
  if (trace.requests.size() >= kNever) {
    throw std::invalid_argument(
        fmt::format("NextUseIndex: {} requests do not fit 32-bit indices", trace.requests.size()));
  }
  const auto page_bytes = size_t{page_tokens} * sizeof(TokenId);
  TokenExpander expander(trace);
  std::vector<PageUse> uses;
  first_.reserve(trace.requests.size() + 1);
  first_.push_back(0);
  for (uint32_t r = 0; r < trace.requests.size(); ++r) {
    const std::span<const TokenId> tokens = expander.expand(r);
    const auto pages = static_cast<uint32_t>(tokens.size() / page_tokens);
    // Chained: a page's identity covers its namespace and every token before it.
    uint64_t identity = splitmix64(trace.requests[r].ns ^ 0x6265'6c61'6479ull);
    for (uint32_t p = 0; p < pages; ++p) {
      identity =
          XXH3_64bits_withSeed(tokens.data() + size_t{p} * page_tokens, page_bytes, identity);
      uses.push_back({identity, r, p});
    }
    first_.push_back(first_.back() + pages);
  }
  std::sort(uses.begin(), uses.end(), [](const PageUse& a, const PageUse& b) {
    return a.identity != b.identity ? a.identity < b.identity : a.request < b.request;
  });
  next_.assign(uses.size(), kNever);
  for (size_t i = 0; i + 1 < uses.size(); ++i) {
    if (uses[i + 1].identity == uses[i].identity) {
      next_[first_[uses[i].request] + uses[i].position] = uses[i + 1].request;
    }
  }
}

uint32_t NextUseIndex::next_use(uint32_t request, uint32_t position) const {
  if (request >= requests() || position >= pages_of(request)) {
    throw std::out_of_range(fmt::format(
        "NextUseIndex: request {} has no page at position {} ({} requests, {} pages there)",
        request, position, requests(), request < requests() ? pages_of(request) : 0));
  }
  return next_[first_[request] + position];
}

uint32_t BeladyPolicy::next_use(const EvictionEntry& entry) const {
  if (entry.pages == 0) throw std::logic_error("BeladyPolicy: an entry without pages was offered");
  return index_->next_use(state(entry).toucher, entry.prefix_pages + entry.pages - 1);
}

void BeladyPolicy::add(EvictionEntry& entry) {
  state(entry).rank = next_use(entry);
  link(state(entry));
}

void BeladyPolicy::on_access(EvictionEntry& entry, const AccessHint&) {
  BeladyState& s = state(entry);
  s.toucher = current_;
  if (s.hook.is_linked()) relink(s, [&](BeladyState& x) { x.rank = next_use(entry_of(x)); });
}

EvictionEntry* BeladyPolicy::victim() {
  while (!entries_.empty()) {
    BeladyState& first = *entries_.begin();
    const uint32_t next = next_use(entry_of(first));
    if (next == first.rank) return &entry_of(first);
    relink(first, [&](BeladyState& s) { s.rank = next; });
  }
  return nullptr;
}

void use_belady(CacheReplayConfig& config, std::shared_ptr<const NextUseIndex> index) {
  if (index->page_tokens() != config.layout.page_tokens) {
    throw std::invalid_argument(
        fmt::format("belady: the next-use index has {} tokens per page but the replay uses {}",
                    index->page_tokens(), config.layout.page_tokens));
  }
  // The replay owns the policy; the request hook reaches it through this shared slot.
  auto policy = std::make_shared<BeladyPolicy*>(nullptr);
  config.policy = kBeladyPolicyName;
  config.policy_factory = [index, policy](const Trace& trace) -> std::unique_ptr<EvictionPolicy> {
    if (trace.requests.size() != index->requests()) {
      throw std::invalid_argument(
          fmt::format("belady: the next-use index covers {} requests but the trace has {}",
                      index->requests(), trace.requests.size()));
    }
    auto made = std::make_unique<BeladyPolicy>(index);
    *policy = made.get();
    return made;
  };
  config.before_request = [policy](std::size_t request) {
    (*policy)->begin_request(static_cast<uint32_t>(request));
  };
}

}  // namespace radixkv::tools
