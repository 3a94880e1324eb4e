#include "events/batch_queue.h"

#include <stdexcept>

namespace radixkv::events {

BatchQueue::BatchQueue(size_t capacity) : capacity_(capacity) {
  if (capacity == 0) throw std::invalid_argument("event queue capacity must be at least 1 batch");
}

bool BatchQueue::push(EventBatch&& batch) {
  std::lock_guard lock(mutex_);
  const uint64_t seq = next_seq_++;
  if (queued_.size() >= capacity_) {
    ++dropped_;
    return false;
  }
  queued_.push_back({seq, std::move(batch)});
  return true;
}

std::vector<SequencedBatch> BatchQueue::take_all() {
  std::vector<SequencedBatch> taken;
  std::lock_guard lock(mutex_);
  taken.swap(queued_);
  return taken;
}

uint64_t BatchQueue::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

uint64_t BatchQueue::next_seq() const {
  std::lock_guard lock(mutex_);
  return next_seq_;
}

}  // namespace radixkv::events
