#include "eviction/rank_queue_policy.h"

#include <iterator>

namespace radixkv {

namespace {

// The earlier of two candidates for the same place in the order, one from each container: on
// equal ranks the queue's (invariant 3).
const EvictionEntry* earlier(const EvictionEntry* queued, const EvictionEntry* late) {
  if (queued == nullptr) return late;
  if (late == nullptr) return queued;
  return queued->rank <= late->rank ? queued : late;
}

}  // namespace

RankQueuePolicy::~RankQueuePolicy() {
  queue_.clear();
  late_.clear();
}

void RankQueuePolicy::link(EvictionEntry& entry) {
  const bool in_order = (queue_.empty() || entry.rank >= queue_.back().rank) &&
                        (late_.empty() || entry.rank > late_.rbegin()->rank);
  if (in_order) {
    queue_.push_back(entry);
  } else {
    late_.insert(entry);
  }
}

void RankQueuePolicy::remove(EvictionEntry& entry) {
  if (entry.list_hook.is_linked()) {
    queue_.erase(queue_.iterator_to(entry));
  } else {
    late_.erase(late_.iterator_to(entry));
  }
}

EvictionEntry* RankQueuePolicy::victim() {
  if (late_.empty()) return queue_.empty() ? nullptr : &queue_.front();
  if (queue_.empty()) return &*late_.begin();
  return const_cast<EvictionEntry*>(earlier(&queue_.front(), &*late_.begin()));
}

const EvictionEntry* RankQueuePolicy::next_victim_after(const EvictionEntry& entry) const {
  const EvictionEntry* queued = nullptr;
  const EvictionEntry* late = nullptr;
  if (entry.list_hook.is_linked()) {
    const auto next = std::next(queue_.iterator_to(entry));
    if (next != queue_.end()) queued = &*next;
    // Entries of late_ ranked equal to `entry` come after it (invariant 3).
    if (!late_.empty()) {
      const auto first = late_.lower_bound(entry);
      if (first != late_.end()) late = &*first;
    }
  } else {
    const auto next = std::next(late_.iterator_to(entry));
    if (next != late_.end()) late = &*next;
    // Entries of queue_ ranked at or below `entry` come before it: victims named already.
    auto it = queue_.begin();
    for (int scanned = 0; it != queue_.end() && it->rank <= entry.rank; ++it) {
      if (++scanned > kMaxScan) return nullptr;
    }
    if (it != queue_.end()) queued = &*it;
  }
  return earlier(queued, late);
}

}  // namespace radixkv
