// RecencyIndex: up to max_keys keys in the order of their last access, answering "how many keys
// were accessed more recently than this one" (its LRU stack distance) with a few additions in a
// few KiB, and a touch in O(1) amortised.
//
// Slots. Each key holds one timestamp slot in [0, width), width = 2 x max_keys: a touch frees the
// key's slot and gives it the next one at the top, so the keys more recent than a key are exactly
// the occupied slots above its own. When the top reaches the width, the keys are renumbered
// 0 .. size-1 in their order (compaction, O(width)); as at most max_keys hold slots, that happens
// at most once per max_keys touches. Slots below `oldest_` are all free, so the least recent key
// is found by a scan that only ever moves up.
//
// Segments. Occupancy is a bitmap of the slots, counted by a tree of fan-out 8 over its 64-slot
// words: level 0 counts each word's keys, level 1 each run of 8 words, level 2 each run of 64, up
// to a level of at most 8 counts. The keys above a slot are the bits above it in its word plus, at
// each level, the counts of the later siblings in its group of 8: at most 7 additions a level
// (summed as a whole group, masked; levels are padded with zeros to whole groups, and a group's
// first count is never read), about log8 of the words levels (3 at the default 16,384 keys: 512
// words), over 2.3 KiB of counts that stay in L1. A touch clears one bit and sets another, and
// moves one count per level by 1. (Its
// predecessor, a Fenwick tree over the slots, walked log2(width) = 15 counters in 128 KiB for each
// query and each of the two updates.)
//
// Table. Keys are any 64-bit values but kNoKey. A table (open addressing, linear probing,
// backward-shift deletion, load <= 1/2) maps each key to its slot; each occupied slot records its
// key's table position, updated as deletion shifts entries, so that neither compaction nor the
// removal of the least recent key probes the table.
//
// Every array is allocated once, at construction, and never grows: memory_bytes() ==
// memory_bound(max_keys) for the whole life, about 32 bytes a key: 530,720 bytes (518 KiB) at
// 16,384 keys, 512 KiB of them the table and the slots' positions, 6.3 KiB the bitmap and the
// counts. A new key beyond max_keys is the caller's error with touch()
// (std::length_error, nothing changed); touch_evicting() makes room instead. Single-owner.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace radixkv::metrics {

class RecencyIndex {
 public:
  static constexpr uint64_t kNoKey = ~uint64_t{0};
  static constexpr uint32_t kMaxKeys = uint32_t{1} << 30;  // slots are 32-bit: width <= 2^31

  // Throws std::invalid_argument for max_keys == 0 or above kMaxKeys.
  explicit RecencyIndex(uint32_t max_keys);

  uint32_t size() const { return size_; }
  uint32_t max_keys() const { return max_keys_; }
  bool contains(uint64_t key) const;

  // How many keys were accessed more recently than `key`; nullopt when it is absent.
  std::optional<uint64_t> more_recent(uint64_t key) const;
  // Makes `key` the most recent, adding it when absent.
  void touch(uint64_t key);
  // As touch(), but a new key with max_keys() held first removes the least recent key.
  void touch_evicting(uint64_t key);
  // Removes the least recent key; false when empty.
  bool erase_least_recent();

  // Bytes of the arrays as allocated (their capacities).
  std::size_t memory_bytes() const;
  // What an index of `max_keys` keys allocates.
  static std::size_t memory_bound(uint32_t max_keys);

 private:
  static constexpr uint32_t kFanOut = 8;      // counts summed per group, per level
  static constexpr uint32_t kMaxLevels = 12;  // 2^25 words need 9
  using LevelBegins = std::array<uint32_t, kMaxLevels + 1>;
  // Fills `begins` (where each level of counts for `words` words begins, then their total) and
  // returns the number of levels.
  static uint32_t layout_levels(uint32_t words, LevelBegins& begins);

  // The table position holding `key`, or the empty position where it would go.
  std::size_t position(uint64_t key) const;
  std::size_t home(uint64_t key) const;
  // The key at table position `pos` becomes the most recent.
  void move_to_top(std::size_t pos);
  // Adds `key` as the most recent at the empty table position `pos` (size_ < max_keys_).
  void insert_at(std::size_t pos, uint64_t key);
  void erase_at(std::size_t pos);  // the key at table position pos, with its slot
  // A free slot at the top, compacting first when there is none.
  uint32_t take_top_slot();
  void compact();
  void occupy(uint32_t slot, std::size_t pos);  // marks `slot` as the key's at table position pos
  void vacate(uint32_t slot);
  uint32_t occupied_above(uint32_t slot) const;  // occupied slots in (slot, width)

  uint32_t max_keys_;
  uint32_t width_;
  uint32_t size_ = 0;
  uint32_t next_slot_ = 0;                // slots at or above it are free
  uint32_t oldest_ = 0;                   // slots below it are free
  int table_shift_ = 64;                  // 64 - log2(table capacity)
  std::vector<uint64_t> table_keys_;      // kNoKey: empty
  std::vector<uint32_t> table_slots_;     // beside table_keys_
  std::vector<uint32_t> slot_positions_;  // an occupied slot's table position; free: anything
  std::vector<uint64_t> slot_bits_;       // bit s % 64 of word s / 64: slot s is occupied
  // The counts of every level, level 0 first: level l is counts_[level_begin_[l] ..
  // level_begin_[l + 1]).
  std::vector<uint32_t> counts_;
  LevelBegins level_begin_{};
  uint32_t levels_ = 0;
};

}  // namespace radixkv::metrics
