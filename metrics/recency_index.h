// RecencyIndex: up to max_keys keys in the order of their last access, answering "how many keys
// were accessed more recently than this one" (its LRU stack distance) in O(log max_keys).
//
// Each key holds one timestamp slot in [0, width), width = 2 x max_keys. A Fenwick tree over the
// slots counts the occupied ones, so the keys more recent than a key are size - (occupied slots
// <= its slot). A touch frees the key's slot and gives it the next one at the top. When the top
// reaches the width, the keys are renumbered 0 .. size-1 in their order (compaction, O(width));
// as at most max_keys hold slots, that happens at most once per max_keys touches: O(1) amortised.
// Slots below `oldest_` are all free, so the least recent key is found by a scan that only ever
// moves up (O(1) amortised).
// Keys are any 64-bit values but kNoKey. A table (open addressing, linear probing, backward-shift
// deletion, load <= 1/2) maps each key to its slot.
//
// Every array is allocated once, at construction, and never grows: memory_bytes() ==
// memory_bound(max_keys) for the whole life. A new key beyond max_keys is the caller's error
// (std::length_error, nothing changed). Single-owner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace radixkv::metrics {

class RecencyIndex {
 public:
  static constexpr uint64_t kNoKey = ~uint64_t{0};

  // Throws std::invalid_argument for max_keys == 0.
  explicit RecencyIndex(uint32_t max_keys);

  uint32_t size() const { return size_; }
  uint32_t max_keys() const { return max_keys_; }
  bool contains(uint64_t key) const;

  // How many keys were accessed more recently than `key`; nullopt when it is absent.
  std::optional<uint64_t> more_recent(uint64_t key) const;
  // Makes `key` the most recent, adding it when absent.
  void touch(uint64_t key);
  // Removes the least recent key; false when empty.
  bool erase_least_recent();

  // Bytes of the arrays as allocated (their capacities).
  std::size_t memory_bytes() const;
  // What an index of `max_keys` keys allocates.
  static std::size_t memory_bound(uint32_t max_keys);

 private:
  // The table position holding `key`, or the empty position where it would go.
  std::size_t position(uint64_t key) const;
  std::size_t home(uint64_t key) const;
  void erase_at(std::size_t pos);  // the key at table position pos, with its slot
  // A free slot at the top, compacting first when there is none.
  uint32_t take_top_slot();
  void compact();
  void fenwick_add(uint32_t slot, int32_t delta);
  uint32_t occupied_through(uint32_t slot) const;  // occupied slots in [0, slot]

  uint32_t max_keys_;
  uint32_t size_ = 0;
  uint32_t next_slot_ = 0;             // slots at or above it are free
  uint32_t oldest_ = 0;                // slots below it are free
  int table_shift_ = 64;               // 64 - log2(table capacity)
  std::vector<uint64_t> table_keys_;   // kNoKey: empty
  std::vector<uint32_t> table_slots_;  // beside table_keys_
  std::vector<uint64_t> slot_keys_;    // the key in each slot, kNoKey: free
  std::vector<uint32_t> fenwick_;      // 1-based over the slots; fenwick_[0] unused
};

}  // namespace radixkv::metrics
