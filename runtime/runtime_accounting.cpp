// PrefixCacheRuntime::check_accounting(): a whole-pool walk for tests and the end of replays, kept
// apart from the per-request paths.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "runtime/prefix_cache_runtime.h"
#include "runtime/remote_staging.h"
#include "runtime/runtime_internals.h"

namespace radixkv {

uint64_t PrefixCacheRuntime::check_accounting() const {
  tree_.verify();
  const auto fail = [](const std::string& what) {
    throw std::logic_error("PrefixCacheRuntime::check_accounting: " + what);
  };
  // expected[p - first]: the references page p should have, from the tree and the block tables.
  const uint32_t capacity = pool_.capacity_pages();
  const PageId first = pool_.first_page();
  std::vector<uint32_t> expected(capacity, 0);
  for (PageId p = first; p < pool_.end_page(); ++p) {
    expected[p - first] = tree_.indexes_page(p) ? 1 : 0;
  }

  uint64_t private_pages = 0;
  uint32_t live = 0;
  for (const detail::Sequence& s : slots_) {
    if (s.state != SeqState::kRunning) continue;
    ++live;
    const std::string who = fmt::format("request {}", s.request_id);
    const std::span<const TokenId> tokens = s.tokens();
    // A page for every token; cache only, for whole pages only, and maybe fewer (AdmitMode).
    const bool pages_fit =
        s.mode == AdmitMode::kCacheOnly
            ? s.block_table.size() <= tokens.size() / page_tokens_
            : s.block_table.size() == (tokens.size() + page_tokens_ - 1) / page_tokens_;
    if (!pages_fit) {
      fail(fmt::format("{} has {} tokens but {} pages", who, tokens.size(), s.block_table.size()));
    }
    if (s.computed_tokens > tokens.size() || s.committed_pages * page_tokens_ > s.computed_tokens) {
      fail(fmt::format("{}: {} computed tokens, {} committed pages, {} tokens", who,
                       s.computed_tokens, s.committed_pages, tokens.size()));
    }
    if (s.locked == nullptr || s.locked->lock_count() == 0) fail(who + " holds no lock");
    // The committed prefix is exactly the path to the locked node: its tokens and its pages.
    uint32_t end = s.committed_pages;
    const RadixNode* x = s.locked;
    for (; !x->is_root(); x = x->parent()) {
      const uint32_t n = x->num_pages();
      const uint32_t begin = end >= n ? end - n : 0;
      const bool same_pages = end >= n && std::equal(x->page_ids().begin(), x->page_ids().end(),
                                                     s.block_table.begin() + begin);
      const auto edge = x->edge_tokens(page_tokens_);
      const bool same_tokens =
          same_pages &&
          std::equal(edge.begin(), edge.end(), tokens.begin() + size_t{begin} * page_tokens_);
      if (!same_pages || !same_tokens) {
        fail(
            fmt::format("{}: the locked path's node at pages [{}, {}) differs from its {} "
                        "committed pages ({})",
                        who, begin, end, s.committed_pages, same_pages ? "tokens" : "pages"));
      }
      end = begin;
    }
    if (end != 0 || x->name_space() != s.name_space) {
      fail(fmt::format(
          "{}: the locked path covers {} of its {} committed pages in namespace {}, "
          "its own is {}",
          who, s.committed_pages - end, s.committed_pages, x->name_space(), s.name_space));
    }
    for (size_t i = 0; i < s.block_table.size(); ++i) {
      const PageId page = s.block_table[i];
      if (!pool_.contains(page)) fail(fmt::format("{}: page {} is not in the pool", who, page));
      const bool in_tree = tree_.indexes_page(page);
      if (i < s.committed_pages && !in_tree) {
        fail(fmt::format("{}: committed page {} at index {} is not in the tree", who, page, i));
      }
      if (i >= s.committed_pages && in_tree) {
        fail(fmt::format("{}: private page {} at index {} is in the tree", who, page, i));
      }
      if (expected[page - first] == 0) ++private_pages;
      ++expected[page - first];
    }
  }
  if (live != live_) fail(fmt::format("{} running sequences, counter says {}", live, live_));
  // Pages a remote load's copy still writes; `loading` those nobody else holds any more.
  uint64_t loading_pages = 0;
  if (staging_) {
    for (const detail::RemoteStaging::StagedPage& staged : staging_->staged()) {
      if (!pool_.contains(staged.device)) {
        fail(fmt::format("a remote load writes page {}, not in the pool", staged.device));
      }
      if (expected[staged.device - first]++ == 0) ++loading_pages;
    }
  }

  uint64_t free_pages = 0;
  for (PageId p = first; p < pool_.end_page(); ++p) {
    if (pool_.refcount(p) != expected[p - first]) {
      fail(fmt::format("page {} has refcount {}, expected {} (tree, block tables and remote loads)",
                       p, pool_.refcount(p), expected[p - first]));
    }
    free_pages += expected[p - first] == 0 ? 1 : 0;
  }
  if (free_pages != pool_.free_pages()) {
    fail(fmt::format("{} unreferenced pages but {} on the free list", free_pages,
                     pool_.free_pages()));
  }
  if (uint64_t{capacity} != free_pages + tree_.cached_pages() + private_pages + loading_pages) {
    fail(fmt::format("capacity {} != free {} + cached {} + private {} + loading {}", capacity,
                     free_pages, tree_.cached_pages(), private_pages, loading_pages));
  }
  if (tree_.has_host_tier()) check_host_accounting();
  return private_pages;
}

// Host pages: each is held by the tree (a cached host copy), by a copy still running (a load's
// source under write-back) or by a remote load as its staging page, only one of them, and nobody
// else.
void PrefixCacheRuntime::check_host_accounting() const {
  const auto fail = [](const std::string& what) {
    throw std::logic_error("PrefixCacheRuntime::check_accounting: host tier: " + what);
  };
  const PagePool& host = *tree_.host_pool();
  const PageId first = host.first_page();
  std::vector<uint32_t> expected(host.capacity_pages(), 0);  // by page - first
  for (PageId p = first; p < host.end_page(); ++p) expected[p - first] = tree_.host_indexes_page(p);
  const std::vector<PageId> in_flight = tree_.host_in_flight_page_ids();
  for (PageId page : in_flight) ++expected[page - first];
  const std::size_t staging = staging_ ? staging_->staged().size() : 0;
  if (staging_) {
    for (const detail::RemoteStaging::StagedPage& staged : staging_->staged()) {
      if (!host.contains(staged.host)) {
        fail(fmt::format("remote load stages in page {}, not in the pool", staged.host));
      }
      ++expected[staged.host - first];
    }
  }
  uint64_t free_pages = 0;
  for (PageId p = first; p < host.end_page(); ++p) {
    if (host.refcount(p) != expected[p - first]) {
      fail(fmt::format(
          "page {} has refcount {}, expected {} (tree, copies in flight and remote staging)", p,
          host.refcount(p), expected[p - first]));
    }
    if (expected[p - first] > 1) {
      fail(fmt::format("page {} is held {} times: by the tree, a copy or staging, only one", p,
                       expected[p - first]));
    }
    free_pages += expected[p - first] == 0 ? 1 : 0;
  }
  if (free_pages != host.free_pages()) {
    fail(fmt::format("{} unreferenced pages but {} on the free list", free_pages,
                     host.free_pages()));
  }
  if (host.capacity_pages() !=
      free_pages + tree_.host_cached_pages() + in_flight.size() + staging) {
    fail(fmt::format("capacity {} != free {} + cached {} + in flight {} + staging {}",
                     host.capacity_pages(), free_pages, tree_.host_cached_pages(), in_flight.size(),
                     staging));
  }
}

}  // namespace radixkv
