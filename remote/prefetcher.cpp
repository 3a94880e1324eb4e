#include "remote/prefetcher.h"

#include <fmt/format.h>

#include <stdexcept>

namespace radixkv::remote {

Prefetcher::Prefetcher(std::unique_ptr<RemoteStore> store, std::size_t queue, std::size_t pages)
    : store_(std::move(store)), queue_limit_(queue), pages_limit_(pages) {
  if (!store_) throw std::invalid_argument("remote prefetch: no store");
  if (queue == 0 || pages == 0) {
    throw std::invalid_argument(fmt::format(
        "remote prefetch: the queue ({} lookups) and the map ({} pages) need at least 1", queue,
        pages));
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
  if (hashes.empty()) return;
  {
    std::lock_guard lock(mutex_);
    if (queue_.size() >= queue_limit_) {
      ++stats_.dropped;
      return;
    }
    ++stats_.requests;
    for (const PageHash& h : hashes) in_flight_.insert(h);
    queue_.push_back({std::move(hashes), std::move(keys)});
  }
  wake_.notify_one();
}

void Prefetcher::keep(const PageHash& hash, std::optional<std::string> value) {
  if (fetched_.insert_or_assign(hash, std::move(value)).second) fetched_order_.push_back(hash);
  while (fetched_.size() > pages_limit_ && !fetched_order_.empty()) {
    fetched_.erase(fetched_order_.front());
    fetched_order_.pop_front();
  }
  // Entries taken since leave names behind: drop them once they are most of the order.
  if (fetched_order_.size() > 2 * pages_limit_) {
    std::erase_if(fetched_order_, [&](const PageHash& h) { return !fetched_.contains(h); });
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
    try {
      values = store_->get(lookup.keys);
    } catch (const RemotePartialError<std::optional<std::string>>& e) {
      values = e.results;
      partial = true;
    } catch (const std::exception&) {  // RemoteError (down, slow), out of memory: keep nothing
      failed = true;
    }
    lock.lock();
    if (failed || partial) ++stats_.errors;
    for (std::size_t i = 0; i < lookup.hashes.size(); ++i) {
      in_flight_.erase(lookup.hashes[i]);
      if (failed) continue;
      if (values[i]) ++stats_.fetched_pages;
      // A missing value kept means "the store does not hold it"; after a partial failure it
      // is not kept, so take() leaves that page to the caller to ask again.
      if (values[i] || !partial) keep(lookup.hashes[i], std::move(values[i]));
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
    std::optional<std::string> value = std::move(it->second);
    fetched_.erase(it);
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
