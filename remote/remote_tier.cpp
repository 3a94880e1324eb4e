#include "remote/remote_tier.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <new>
#include <stdexcept>

#include "remote/page_value.h"

namespace radixkv::remote {

std::optional<PrefetchPolicy> parse_prefetch_policy(std::string_view name) {
  for (PrefetchPolicy p :
       {PrefetchPolicy::kOff, PrefetchPolicy::kBestEffort, PrefetchPolicy::kTimeout}) {
    if (to_string(p) == name) return p;
  }
  return std::nullopt;
}

std::string_view to_string(PrefetchPolicy policy) {
  switch (policy) {
    case PrefetchPolicy::kOff:
      return "off";
    case PrefetchPolicy::kBestEffort:
      return "best_effort";
    case PrefetchPolicy::kTimeout:
      return "timeout";
  }
  return "unknown";
}

RemoteTier::RemoteTier(std::unique_ptr<RemoteStore> reader, std::unique_ptr<RemoteStore> writer,
                       RemoteTierConfig config, std::unique_ptr<RemoteStore> prefetcher)
    : reader_(std::move(reader)),
      writer_store_(std::move(writer)),
      config_(std::move(config)),
      layout_id_(layout_id(config_.layout, config_.model)) {
  if (!reader_ || !writer_store_) throw std::invalid_argument("remote tier: no store");
  if (config_.queue_pages == 0 || config_.batch_pages == 0) {
    throw std::invalid_argument(fmt::format(
        "remote tier: the write queue ({} pages) and its batches ({} pages) need at least 1 page",
        config_.queue_pages, config_.batch_pages));
  }
  if (config_.prefetch != PrefetchPolicy::kOff) {
    if (!prefetcher) throw std::invalid_argument("remote tier: prefetch on without its store");
    prefetcher_ = std::make_unique<Prefetcher>(std::move(prefetcher), config_.prefetch_queue,
                                               config_.prefetch_pages, config_.prefetch_bytes);
  }
  where_ = reader_->describe();
  writer_ = std::thread([this] { write_loop(); });
}

RemoteTier::~RemoteTier() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  writer_.join();
}

void RemoteTier::attach_pools(PagePool* device, PagePool* host, PageArrivals* arrivals) {
  if (host != nullptr && host->backend().storage() == StorageKind::kDevice) {
    throw std::invalid_argument(fmt::format(
        "remote tier: the host tier's pages are on a GPU ({} backend); they must be in host memory "
        "(make_pinned_host_backend())",
        host->backend().name()));
  }
  if (device != nullptr && device->backend().storage() == StorageKind::kDevice &&
      config_.write_through) {
    throw std::invalid_argument(fmt::format(
        "remote tier: write-through writes a page when it is cached, from the device pool, whose "
        "pages are on a GPU ({} backend) here and cannot be read from the host; use write-back "
        "(pages are written when they leave the host tier)",
        device->backend().name()));
  }
  device_ = device;
  host_ = host;
  arrivals_ = arrivals;
}

std::span<const std::byte> RemoteTier::bytes_of(Tier tier, PageId page) {
  PagePool* pool = tier == Tier::kDevice ? device_ : host_;
  if (pool == nullptr || pool->backend().storage() != StorageKind::kHost) return {};
  if (arrivals_ != nullptr) arrivals_->await(tier, page);  // a copy may still be writing it
  return pool->host_bytes(page);
}

bool RemoteTier::known(const PageHash& hash) {
  if (forget_.exchange(false)) {
    known_.clear();
    known_order_.clear();
  }
  return known_.contains(hash);
}

void RemoteTier::remember(const PageHash& hash) {
  if (config_.known_pages == 0 || !known_.insert(hash).second) return;
  known_order_.push_back(hash);
  if (known_order_.size() > config_.known_pages) {
    known_.erase(known_order_.front());
    known_order_.pop_front();
  }
}

void RemoteTier::count_error(std::string_view message, std::string_view detail) noexcept {
  ++errors_;
  std::lock_guard lock(error_mutex_);
  keep_first_error(first_error_, message, detail);
}

void RemoteTier::dropping(const TreePage& page) { write(page); }

void RemoteTier::inserted(const TreePage& page) {
  if (config_.write_through) write(page);
}

// Encodes the page (unless the store is known to hold it) and queues it for the writer. Called from
// inside the tree's insert and eviction, which must not fail halfway: out of memory drops the
// write, counted.
void RemoteTier::write(const TreePage& page) try {
  if (known(page.hash)) {
    ++known_skipped_;
    return;
  }
  PagePool* pool = page.tier == Tier::kDevice ? device_ : host_;
  if (pool != nullptr && pool->backend().storage() == StorageKind::kDevice) {
    ++dropped_writes_;  // bytes on a GPU: filler in their place would be a value that never loads
    return;
  }
  {
    std::lock_guard lock(mutex_);
    if (queue_.size() >= config_.queue_pages) {
      ++dropped_writes_;
      return;
    }
  }
  // Encoded here, while the bytes are still the page's; queued below.
  const std::span<const std::byte> bytes = bytes_of(page.tier, page.page);
  const bool has_bytes = pool != nullptr && pool->backend().storage() == StorageKind::kHost;
  Item item{page_key(config_.prefix, layout_id_, page.hash),
            has_bytes
                ? encode_page_value(layout_id_, page.parent, page.tokens, bytes)
                : encode_page_value(layout_id_, page.parent, page.tokens, config_.filler_bytes)};
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(item));
  }
  remember(page.hash);
  ++queued_pages_;
  wake_.notify_one();
} catch (const std::bad_alloc&) {
  count_error("out of memory encoding a page for the store");
  ++dropped_writes_;
}

void RemoteTier::write_loop() {
  std::vector<Item> batch;
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping with nothing left
    batch.clear();
    while (!queue_.empty() && batch.size() < config_.batch_pages) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    writing_ = true;
    lock.unlock();
    try {
      const PutResult result = writer_store_->put(batch);
      ++answered_;
      stored_pages_ += result.stored;
      dropped_writes_ += result.refused;
      if (result.refused > 0) {
        // One error per refusing batch (a full store refuses many).
        count_error("the store refused a write: ", result.first_error);
        forget_ = true;
      }
    } catch (const RemoteUnavailable&) {
      ++unavailable_;
      dropped_writes_ += batch.size();
      forget_ = true;
    } catch (const std::exception& e) {  // RemoteError; out of memory copying: drop, keep going
      count_error(e.what());
      dropped_writes_ += batch.size();
      forget_ = true;
    }
    lock.lock();
    writing_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

void RemoteTier::drain() {
  if (prefetcher_) prefetcher_->drain();
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return queue_.empty() && !writing_; });
}

std::vector<std::string> RemoteTier::keys_of(std::span<const PageHash> hashes) const {
  std::vector<std::string> keys;
  keys.reserve(hashes.size());
  for (const PageHash& h : hashes) keys.push_back(page_key(config_.prefix, layout_id_, h));
  return keys;
}

void RemoteTier::prefetch(std::span<const PageHash> hashes) try {
  if (!prefetcher_ || hashes.empty()) return;
  prefetcher_->request({hashes.begin(), hashes.end()}, keys_of(hashes));
} catch (const std::bad_alloc&) {  // never the caller's failure: the load asks later, or misses
  count_error("out of memory queueing a prefetch");
}

// Out of memory anywhere in a load (the keys, the values, the known set) is a miss, counted: it
// must not leave admit half done (a function-try-block, so the body reads as the rules).
uint32_t RemoteTier::load(const PageHash& parent, std::span<const PageHash> hashes,
                          std::span<const TokenId> tokens, PagePool& pool,
                          std::span<const PageId> pages) try {
  const std::size_t count = std::min(hashes.size(), pages.size());
  if (count == 0) return 0;
  const std::size_t page_tokens = config_.layout.page_tokens;
  if (pool.backend().storage() == StorageKind::kDevice) {
    throw std::invalid_argument(
        "remote tier: cannot load into pages on a GPU; load into host pages and copy them (the "
        "runtime does, through its host tier)");
  }
  if (tokens.size() < count * page_tokens) {
    throw std::invalid_argument(
        fmt::format("remote tier: load of {} pages with {} tokens", count, tokens.size()));
  }
  const auto start = std::chrono::steady_clock::now();
  const auto waited = [&] {
    load_wait_ns_ += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                               std::chrono::steady_clock::now() - start)
                                               .count());
  };
  // What a prefetch fetched first, then (unless it ended the run) the rest from the store.
  std::vector<std::optional<std::string>> values;
  bool ended = false;
  if (prefetcher_) {
    std::optional<Prefetcher::Clock::time_point> deadline;
    if (config_.prefetch == PrefetchPolicy::kTimeout) deadline = start + config_.prefetch_wait;
    Prefetcher::Taken taken = prefetcher_->take(hashes.first(count), deadline);
    for (std::string& v : taken.values) values.emplace_back(std::move(v));
    ended = taken.ended || config_.prefetch == PrefetchPolicy::kBestEffort;
  }
  const std::size_t from_prefetch = values.size();
  if (!ended && from_prefetch < count) {
    std::vector<std::optional<std::string>> rest;
    bool failed = false;
    try {
      rest = reader_->get(keys_of(hashes.subspan(from_prefetch, count - from_prefetch)));
    } catch (const RemoteUnavailable&) {
      ++unavailable_;
    } catch (RemotePartialError<std::optional<std::string>>& e) {
      // One master of a cluster failed: the others' values still serve the leading run, which
      // ends at the first failed key (it reads as missing).
      rest = std::move(e.results);
      failed = true;
      count_error(e.what());
    } catch (const RemoteError& e) {
      failed = true;
      count_error(e.what());
    }
    if (failed) forget_ = true;  // the server may come back empty
    if (!rest.empty()) {         // the store answered, in whole or in part
      ++answered_;
      ++lookups_;
      looked_up_pages_ += rest.size();
    }
    for (std::optional<std::string>& v : rest) values.push_back(std::move(v));
  }
  waited();
  const bool has_bytes = pool.backend().storage() == StorageKind::kHost;
  ExpectedPage expected{layout_id_,
                        parent,
                        {},
                        has_bytes ? static_cast<std::size_t>(pool.bytes_per_page()) : SIZE_MAX};
  uint32_t loaded = 0;
  for (; loaded < values.size() && values[loaded]; ++loaded) {
    expected.tokens = tokens.subspan(loaded * page_tokens, page_tokens);
    std::span<const std::byte> payload;
    if (check_page_value(*values[loaded], expected, &payload) != ValueCheck::kOk) {
      ++bad_values_;
      break;
    }
    if (has_bytes) {
      std::memcpy(pool.host_bytes(pages[loaded]).data(), payload.data(), payload.size());
    }
    expected.parent = hashes[loaded];
    remember(hashes[loaded]);
  }
  loaded_pages_ += loaded;
  return loaded;
} catch (const std::bad_alloc&) {
  count_error("out of memory loading pages from the store");
  return 0;
}

void RemoteTier::add_metrics(std::vector<LowerTierMetrics>& out) const {
  out.push_back({.tier = "remote",
                 .loaded_pages = loaded_pages_,
                 .written_pages = stored_pages_,
                 .load_wait_ns = load_wait_ns_});
}

RemoteTierStats RemoteTier::stats() const {
  RemoteTierStats s{lookups_,      looked_up_pages_,
                    loaded_pages_, bad_values_,
                    queued_pages_, known_skipped_,
                    stored_pages_, dropped_writes_,
                    errors_,       unavailable_,
                    load_wait_ns_, prefetcher_ ? prefetcher_->stats() : PrefetcherStats{},
                    answered_,     {}};
  std::lock_guard lock(error_mutex_);
  s.first_error = first_error_.empty() ? s.prefetch.first_error : first_error_;
  return s;
}

}  // namespace radixkv::remote
