// Helpers of the disk tier tests: a fresh directory per tier under the test process's scratch
// folder (removed when the process ends), page contents that depend on a page's whole prefix (its
// chain hash), and a feeder that tells a tier what the radix tree would as pages are cached and
// leave the trie, with their bytes in a host pool.
#pragma once

#include <doctest/doctest.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "disk/disk_io.h"
#include "disk/disk_tier.h"
#include "kv_store/page_pool.h"
#include "radix/page_hash.h"
#include "tests/child_process.h"

namespace radixkv::testing {

// An empty directory of its own for each call.
inline std::string disk_dir(const std::string& name) {
  static std::atomic<int> next{0};
  const std::string path = scratch_path("disk-" + name + "-" + std::to_string(next++));
  std::filesystem::remove_all(path);
  return path;
}

// The bytes a model would compute for the page named `hash`: a function of the page's whole
// prefix, so a page has one content wherever it is computed, and any other page's bytes differ.
inline void fill_page(const PageHash& hash, std::span<std::byte> out) {
  uint64_t x = hash.low ^ (hash.high << 1);
  for (std::size_t i = 0; i < out.size(); i += 8) {
    x += 0x9e3779b97f4a7c15ULL;  // splitmix64
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    std::memcpy(out.data() + i, &z, std::min<std::size_t>(8, out.size() - i));
  }
}

inline bool holds_page(std::span<const std::byte> bytes, const PageHash& hash) {
  std::vector<std::byte> want(bytes.size());
  fill_page(hash, want);
  return std::equal(bytes.begin(), bytes.end(), want.begin());
}

// For DiskTier::verify() when no trie holds a page.
inline bool no_trie_pages(const PageHash&) { return false; }

// One path of pages in namespace `ns`: tokens and their chain hashes.
struct PagePath {
  PagePath(Namespace ns, std::vector<TokenId> tokens, uint32_t page_tokens)
      : ns(ns), tokens(std::move(tokens)), page_tokens(page_tokens) {
    seed = chain_page_hashes(ns, this->tokens, page_tokens, 0, this->tokens.size() / page_tokens,
                             hashes);
  }
  // A path of `pages` pages whose tokens start at `first_token` and count up.
  static PagePath counting(Namespace ns, uint32_t pages, uint32_t page_tokens,
                           TokenId first_token = 0) {
    std::vector<TokenId> tokens(size_t{pages} * page_tokens);
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = first_token + TokenId(i);
    return {ns, std::move(tokens), page_tokens};
  }
  PagePath prefix_then(std::vector<TokenId> more) const {
    std::vector<TokenId> t = tokens;
    t.insert(t.end(), more.begin(), more.end());
    return {ns, std::move(t), page_tokens};
  }
  uint32_t pages() const { return static_cast<uint32_t>(hashes.size()); }
  PageHash parent(uint32_t i) const { return i == 0 ? seed : hashes[i - 1]; }
  std::span<const TokenId> page_tokens_of(uint32_t i) const {
    return std::span<const TokenId>(tokens).subspan(size_t{i} * page_tokens, page_tokens);
  }
  std::span<const TokenId> tokens_from(uint32_t i) const {
    return std::span<const TokenId>(tokens).subspan(size_t{i} * page_tokens);
  }

  Namespace ns;
  std::vector<TokenId> tokens;
  uint32_t page_tokens;
  std::vector<PageHash> hashes;
  PageHash seed;  // the namespace's root: the first page's parent
};

// Tells `tier` that page i of `path`, whose bytes are in `page` of the device pool, leaves the trie
// (TierEvents::dropping).
inline void drop_page(disk::DiskTier& tier, const PagePath& path, uint32_t i, PageId page) {
  tier.dropping({Tier::kDevice, path.hashes[i], path.parent(i), path.page_tokens_of(i), page});
}

// Tells `tier` what the tree tells it when pages [first, first + count) of `path` are cached on
// the device (stored, then inserted) and, with `drop`, leave the trie again (dropping, removed),
// then ends the call (flush). The pages' bytes are fill_page()'s, in pages of `pool`.
inline void feed_pages(disk::DiskTier& tier, PagePool& pool, const PagePath& path, uint32_t first,
                       uint32_t count, bool drop = true) {
  std::vector<PageId> pages;
  if (!pool.allocate(count, pages)) throw std::logic_error("feed_pages: pool full");
  const std::span<const PageHash> hashes = std::span(path.hashes).subspan(first, count);
  std::optional<PageHash> parent;
  if (first > 0) parent = path.hashes[first - 1];
  tier.stored(Tier::kDevice, path.ns, parent, hashes,
              std::span(path.tokens)
                  .subspan(size_t{first} * path.page_tokens, size_t{count} * path.page_tokens));
  for (uint32_t i = 0; i < count; ++i) {
    if (pool.backend().storage() == StorageKind::kHost) {
      fill_page(path.hashes[first + i], pool.host_bytes(pages[i]));
    }
    tier.inserted({Tier::kDevice, path.hashes[first + i], path.parent(first + i),
                   path.page_tokens_of(first + i), pages[i]});
  }
  if (drop) {
    // As eviction does: the tail first, one page at a time.
    for (uint32_t i = count; i-- > 0;) {
      drop_page(tier, path, first + i, pages[i]);
      tier.removed(Tier::kDevice, std::span(path.hashes).subspan(first + i, 1));
    }
  }
  tier.flush();
  pool.release(pages);
}

// Loads pages [first, ...) of `path` from `tier` into fresh pages of `pool`; returns how many
// loaded, and checks each one's bytes are fill_page()'s (counted in `wrong`).
inline uint32_t load_pages(disk::DiskTier& tier, PagePool& pool, const PagePath& path,
                           uint32_t first, uint32_t count, uint64_t* wrong = nullptr) {
  std::vector<PageId> pages;
  if (!pool.allocate(count, pages)) throw std::logic_error("load_pages: pool full");
  const uint32_t loaded =
      tier.load(path.parent(first), std::span(path.hashes).subspan(first, count),
                path.tokens_from(first), pool, pages);
  if (wrong != nullptr && pool.backend().storage() == StorageKind::kHost) {
    for (uint32_t i = 0; i < loaded; ++i) {
      if (!holds_page(pool.host_bytes(pages[i]), path.hashes[first + i])) ++*wrong;
    }
  }
  pool.release(pages);
  return loaded;
}

// Bytes the tier's files take on disk now, as the budget counts them: each file's size in whole
// 4 KiB blocks. (Not the filesystem's own metadata: ext4 counts the blocks of a file's extent tree
// in its st_blocks, which grows as unwritten extents are written.)
inline uint64_t disk_bytes(const std::string& dir) {
  uint64_t bytes = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file()) bytes += disk::round_up_to_block(entry.file_size());
  }
  return bytes;
}

// Why io_uring cannot be set up here (nullopt: it can), as the tier's IoUringUnavailable says.
inline std::optional<std::string> io_uring_missing() {
  try {
    disk::make_uring_io(-1, 1);  // a ring of one entry, never used
    return std::nullopt;
  } catch (const disk::IoUringUnavailable& e) {
    return e.what();
  }
}

// Runs `body` in a child process and kills it with SIGKILL `delay` after the child has said it is
// writing (body calls its argument once it has written something: so a slow, loaded machine
// still kills the child while it writes, not while it starts), then reaps it. The child never
// returns into the test (it ends by the signal, or _exit when its body fails or ends).
inline void run_and_kill(const std::function<void(const std::function<void()>&)>& body,
                         std::chrono::microseconds delay) {
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(ready[0]);
    bool said = false;
    const auto writing = [&] {
      if (!said && ::write(ready[1], "w", 1) == 1) said = true;
    };
    try {
      body(writing);
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  ::close(ready[1]);
  pollfd wait_for{ready[0], POLLIN, 0};
  CHECK_MESSAGE(::poll(&wait_for, 1, 60000) == 1, "the child never started writing");
  ::close(ready[0]);
  std::this_thread::sleep_for(delay);
  ::kill(pid, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  // Killed, or done before the signal; never failed.
  CHECK_MESSAGE((WIFSIGNALED(status) || WEXITSTATUS(status) == 0), "child status ", status);
}

}  // namespace radixkv::testing
