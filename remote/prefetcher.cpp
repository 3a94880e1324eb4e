#include "remote/prefetcher.h"

#include <fmt/format.h>

#include <algorithm>
#include <new>
#include <stdexcept>

namespace radixkv::remote {

Prefetcher::Prefetcher(std::unique_ptr<RemoteStore> store, std::size_t queue, std::size_t pages,
                       std::size_t bytes)
    : store_(std::move(store)), queue_limit_(queue), pages_limit_(pages), bytes_limit_(bytes) {
  if (!store_) throw std::invalid_argument("remote prefetch: no store");
  if (queue == 0 || pages == 0 || bytes == 0) {
    throw std::invalid_argument(fmt::format(
        "remote prefetch: the queue ({} lookups), the map ({} pages) and its bytes ({}) "
        "need at least 1",
        queue, pages, bytes));
  }
  thread_ = std::thread([this] { run(); });
}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Prefetcher::request(std::vector<PageHash> hashes, std::vector<std::string> keys) {
  {
    std::lock_guard lock(mutex_);
    // Only what no lookup holds or is getting: pages shared with another waiting request (a
    // system prompt) are asked for once.
    std::size_t kept = 0;
    for (std::size_t i = 0; i < hashes.size(); ++i) {
      if (in_flight_.contains(hashes[i]) || fetched_.contains(hashes[i])) continue;
      if (kept != i) {  // a string moved onto itself would be left empty
        hashes[kept] = hashes[i];
        keys[kept] = std::move(keys[i]);
      }
      ++kept;
    }
    hashes.resize(kept);
    keys.resize(kept);
    if (hashes.empty()) return;
    if (queue_.size() >= queue_limit_) {
      ++stats_.dropped;
      return;
    }
    ++stats_.requests;
    queue_.push_back({std::move(hashes), std::move(keys)});
    for (const PageHash& h : queue_.back().hashes) in_flight_.insert(h);
  }
  wake_.notify_one();
}

void Prefetcher::forget_oldest() {
  const KeptName name = fetched_order_.front();
  fetched_order_.pop_front();
  const auto it = fetched_.find(name.hash);
  if (it == fetched_.end() || it->second.kept != name.kept) return;  // stale
  if (it->second.value) fetched_bytes_ -= it->second.value->size();
  fetched_.erase(it);
}

void Prefetcher::keep(const PageHash& hash, std::optional<std::string> value) {
  const std::size_t size = value ? value->size() : 0;
  fetched_order_.push_back({hash, next_kept_});  // first: it may throw, and nothing changed yet
  Kept& entry = fetched_[hash];
  if (entry.value) fetched_bytes_ -= entry.value->size();
  entry = {std::move(value), next_kept_++};
  fetched_bytes_ += size;
  while ((fetched_.size() > pages_limit_ || fetched_bytes_ > bytes_limit_) &&
         !fetched_order_.empty()) {
    forget_oldest();
  }
  // Stale names pile up as entries are taken: drop them once they are most of the order.
  if (fetched_order_.size() > 2 * fetched_.size() + 64) {
    std::erase_if(fetched_order_, [&](const KeptName& n) {
      const auto it = fetched_.find(n.hash);
      return it == fetched_.end() || it->second.kept != n.kept;
    });
  }
}

void Prefetcher::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Lookup lookup = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::vector<std::optional<std::string>> values;
    bool failed = false;
    bool partial = false;  // some keys failed: a missing value may be a failure, not a miss
    bool unavailable = false;
    std::string error;  // the failure's message
    try {
      values = store_->get(lookup.keys);
    } catch (RemotePartialError<std::optional<std::string>>& e) {
      values = std::move(e.results);
      partial = true;
      keep_first_error(error, e.what());
    } catch (const RemoteUnavailable&) {
      failed = unavailable = true;
    } catch (const std::bad_alloc&) {
      failed = true;
      keep_first_error(error, "out of memory");
    } catch (const std::exception& e) {  // RemoteError (down, slow): keep nothing
      failed = true;
      keep_first_error(error, e.what());
    }
    lock.lock();
    if (unavailable) {
      ++stats_.unavailable;
    } else if (failed || partial) {
      ++stats_.errors;
      if (stats_.first_error.empty()) stats_.first_error = std::move(error);
    }
    if (!failed) ++stats_.answered;
    for (const PageHash& hash : lookup.hashes) in_flight_.erase(hash);
    try {
      for (std::size_t i = 0; !failed && i < lookup.hashes.size(); ++i) {
        if (values[i]) ++stats_.fetched_pages;
        // A missing value kept means "the store does not hold it"; after a partial failure it
        // is not kept, so take() leaves that page to the caller to ask again.
        if (values[i] || !partial) keep(lookup.hashes[i], std::move(values[i]));
      }
    } catch (const std::bad_alloc&) {  // what was kept stays; the rest is asked for again
      ++stats_.errors;
    }
    busy_ = false;
    done_.notify_all();
  }
}

Prefetcher::Taken Prefetcher::take(std::span<const PageHash> hashes,
                                   std::optional<Clock::time_point> deadline) {
  Taken taken;
  std::unique_lock lock(mutex_);
  for (const PageHash& hash : hashes) {
    if (deadline) {
      done_.wait_until(lock, *deadline, [&] { return !in_flight_.contains(hash); });
    }
    const auto it = fetched_.find(hash);
    if (it == fetched_.end()) {
      taken.ended = in_flight_.contains(hash);  // else never asked for: the caller may ask now
      break;
    }
    std::optional<std::string> value = std::move(it->second.value);
    if (value) fetched_bytes_ -= value->size();
    fetched_.erase(it);  // its name in fetched_order_ is stale now
    if (!value) {
      taken.ended = true;
      break;
    }
    taken.values.push_back(std::move(*value));
  }
  stats_.taken_pages += taken.values.size();
  return taken;
}

void Prefetcher::drain() {
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

PrefetcherStats Prefetcher::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace radixkv::remote
