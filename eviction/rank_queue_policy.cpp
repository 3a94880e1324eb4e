#include "eviction/rank_queue_policy.h"

#include <algorithm>
#include <iterator>
#include <new>

namespace radixkv {

namespace {

// The earlier of two candidates for the same place in the order, one from each container: on
// equal ranks the queue's (invariant 3).
const QueueState* earlier(const QueueState* queued, const QueueState* late) {
  if (queued == nullptr) return late;
  if (late == nullptr) return queued;
  return queued->rank <= late->rank ? queued : late;
}

const EvictionEntry* entry_or_null(const QueueState* s) {
  return s == nullptr ? nullptr : &entry_of(*s);
}

}  // namespace

RankQueuePolicy::~RankQueuePolicy() {
  for (uint64_t p = head_; p < tail_; ++p) {
    if (QueueState* s = slot(p)) s->queue_position = 0;
  }
  late_.clear();
}

void RankQueuePolicy::link(QueueState& s) {
  const QueueState* last = back();
  const bool in_order =
      (last == nullptr || s.rank >= last->rank) && (late_.empty() || s.rank > late_.rbegin()->rank);
  if (in_order && make_room()) {
    slot(tail_) = &s;
    s.queue_position = tail_++;
    ++queued_;
  } else {
    late_.insert(s);
  }
}

bool RankQueuePolicy::make_room() {
  if (tail_ - head_ < ring_.size()) return true;
  if (queued_ * 2 <= ring_.size() && !ring_.empty()) {
    compact();
    return true;
  }
  const std::size_t capacity = std::max(kMinRing, ring_.size() * 2);
  std::vector<QueueState*> bigger;
  try {
    bigger.resize(capacity);
  } catch (const std::bad_alloc&) {
    return false;
  }
  // Positions stay: only their slots move.
  for (uint64_t p = head_; p < tail_; ++p) bigger[p & (capacity - 1)] = slot(p);
  ring_.swap(bigger);
  return true;
}

void RankQueuePolicy::compact() {
  // In place, front to back: the slot written is never one still to be read.
  uint64_t to = head_;
  for (uint64_t from = head_; from < tail_; ++from) {
    QueueState* s = slot(from);
    if (s == nullptr) continue;
    slot(from) = nullptr;
    slot(to) = s;
    s->queue_position = to++;
  }
  tail_ = to;
  named_ = nullptr;
}

void RankQueuePolicy::remove(EvictionEntry& entry) {
  QueueState& s = state(entry);
  if (s.queue_position == 0) {
    late_.erase(late_.iterator_to(s));
    return;
  }
  slot(s.queue_position) = nullptr;
  s.queue_position = 0;
  --queued_;
  // Invariant 4: the ends hold entries.
  while (head_ < tail_ && slot(head_) == nullptr) ++head_;
  while (tail_ > head_ && slot(tail_ - 1) == nullptr) --tail_;
}

EvictionEntry* RankQueuePolicy::victim() {
  const QueueState* queued = queued_ > 0 ? slot(head_) : nullptr;
  const QueueState* first = late_.empty() ? queued : earlier(queued, &*late_.begin());
  return const_cast<EvictionEntry*>(entry_or_null(first));
}

uint64_t RankQueuePolicy::queued_after(uint64_t p) const {
  for (int skipped = 0; ++p < tail_; ++skipped) {
    if (slot(p) != nullptr) return p;
    if (skipped == kMaxSkip) return kGaveUp;
  }
  return 0;
}

uint64_t RankQueuePolicy::position_of(const QueueState& s) const {
  const bool named_last =
      named_ == &s && named_at_ >= head_ && named_at_ < tail_ && slot(named_at_) == &s;
  return named_last ? named_at_ : s.queue_position;
}

std::size_t RankQueuePolicy::next_victims_after(const EvictionEntry& entry,
                                                std::span<const EvictionEntry*> out) const {
  if (!late_.empty()) return EvictionPolicy::next_victims_after(entry, out);
  std::size_t n = 0;
  uint64_t position = position_of(state(entry));
  while (n < out.size() && position != 0) {
    position = queued_after(position);
    if (position == 0 || position == kGaveUp) break;
    named_ = slot(position);
    named_at_ = position;
    out[n++] = &entry_of(*named_);
  }
  return n;
}

const EvictionEntry* RankQueuePolicy::next_victim_after(const EvictionEntry& entry) const {
  const QueueState& s = state(entry);
  const uint64_t position = position_of(s);
  uint64_t queued_at = 0;
  const QueueState* late = nullptr;
  if (position != 0) {
    queued_at = queued_after(position);
    if (queued_at == kGaveUp) return nullptr;
    // Entries of late_ ranked equal to `entry` come after it (invariant 3).
    if (!late_.empty()) {
      const auto first = late_.lower_bound(s);
      if (first != late_.end()) late = &*first;
    }
  } else {
    const auto next = std::next(late_.iterator_to(s));
    if (next != late_.end()) late = &*next;
    // Queued entries ranked at or below `entry` come before it: victims named already.
    queued_at = queued_ > 0 ? head_ : 0;
    for (int scanned = 0; queued_at != 0 && slot(queued_at)->rank <= s.rank; ++scanned) {
      if (scanned == kMaxScan) return nullptr;
      queued_at = queued_after(queued_at);
      if (queued_at == kGaveUp) return nullptr;
    }
  }
  const QueueState* queued = queued_at != 0 ? slot(queued_at) : nullptr;
  const QueueState* next = earlier(queued, late);
  if (next != nullptr && next == queued) {
    named_ = next;
    named_at_ = queued_at;
  }
  return entry_or_null(next);
}

}  // namespace radixkv
