// BatchQueue: the hand-off from the thread that produces event batches (the runtime's) to the
// publisher thread. push() never blocks on the consumer: when `capacity` batches are waiting it
// drops the batch and counts it. Every pushed batch takes the next sequence number, dropped ones
// too, so a subscriber sees a gap in `seq` where a batch was dropped and knows its view is
// incomplete (the replay buffer cannot fill it), rather than missing it silently.
//
// Thread-safe: one mutex, held only to append or to swap the queue out.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "events/kv_event.h"

namespace radixkv::events {

struct SequencedBatch {
  uint64_t seq = 0;
  EventBatch batch;
};

class BatchQueue {
 public:
  // Throws std::invalid_argument when capacity is 0.
  explicit BatchQueue(size_t capacity);

  // False when the queue was full: the batch is dropped, its seq is spent and counted.
  bool push(EventBatch&& batch);
  // Everything queued, in seq order; the queue is empty afterwards.
  std::vector<SequencedBatch> take_all();

  size_t capacity() const { return capacity_; }
  uint64_t dropped() const;
  uint64_t next_seq() const;

 private:
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::vector<SequencedBatch> queued_;
  uint64_t next_seq_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace radixkv::events
