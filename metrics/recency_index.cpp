#include "metrics/recency_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <stdexcept>

#include "common/splitmix64.h"

namespace radixkv::metrics {

namespace {

constexpr uint32_t kWordBits = 64;

// Table capacity for up to `keys` keys at load <= 1/2.
std::size_t table_capacity_for(uint32_t keys) {
  return std::size_t{2} * std::bit_ceil(std::max<uint32_t>(keys, 2));
}

uint32_t width_for(uint32_t max_keys) { return 2 * max_keys; }

uint32_t words_for(uint32_t width) { return (width + kWordBits - 1) / kWordBits; }

// The bits set in x, by the classic SWAR sums (H. S. Warren, "Hacker's Delight", 5-1):
// std::popcount is a library call where the build does not assume the popcnt instruction.
uint32_t count_bits(uint64_t x) {
  x -= (x >> 1) & 0x5555555555555555ull;
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return static_cast<uint32_t>((x * 0x0101010101010101ull) >> 56);
}

}  // namespace

// Level 0 has a count per word, each later one a count per group of kFanOut below, up to a level
// of at most kFanOut counts. Each level is padded with zero counts to whole groups, so that a
// query adds a whole group, masked, without a bound to check.
uint32_t RecencyIndex::layout_levels(uint32_t words, LevelBegins& begins) {
  uint32_t levels = 0;
  uint32_t level_size = words;
  begins[0] = 0;
  for (;;) {
    begins[levels + 1] = begins[levels] + (level_size + kFanOut - 1) / kFanOut * kFanOut;
    ++levels;
    if (level_size <= kFanOut) return levels;
    level_size = (level_size + kFanOut - 1) / kFanOut;
  }
}

RecencyIndex::RecencyIndex(uint32_t max_keys) : max_keys_(max_keys), width_(0) {
  if (max_keys == 0 || max_keys > kMaxKeys) {
    throw std::invalid_argument(
        fmt::format("RecencyIndex needs room for 1 to {} keys, got {}", kMaxKeys, max_keys));
  }
  width_ = width_for(max_keys);
  const std::size_t table = table_capacity_for(max_keys);
  table_shift_ = 64 - std::countr_zero(table);
  table_keys_.assign(table, kNoKey);
  table_slots_.assign(table, 0);
  slot_positions_.assign(width_, 0);
  slot_bits_.assign(words_for(width_), 0);
  levels_ = layout_levels(words_for(width_), level_begin_);
  counts_.assign(level_begin_[levels_], 0);
}

std::size_t RecencyIndex::memory_bound(uint32_t max_keys) {
  const std::size_t table = table_capacity_for(max_keys);
  const uint32_t width = width_for(max_keys);
  LevelBegins begins{};
  const uint32_t levels = layout_levels(words_for(width), begins);
  return table * (sizeof(uint64_t) + sizeof(uint32_t)) + std::size_t{width} * sizeof(uint32_t) +
         std::size_t{words_for(width)} * sizeof(uint64_t) +
         std::size_t{begins[levels]} * sizeof(uint32_t);
}

std::size_t RecencyIndex::memory_bytes() const {
  return table_keys_.capacity() * sizeof(uint64_t) + table_slots_.capacity() * sizeof(uint32_t) +
         slot_positions_.capacity() * sizeof(uint32_t) + slot_bits_.capacity() * sizeof(uint64_t) +
         counts_.capacity() * sizeof(uint32_t);
}

// Fibonacci hashing on a SplitMix64 mix: any key set spreads over the table.
inline std::size_t RecencyIndex::home(uint64_t key) const {
  return static_cast<std::size_t>(splitmix64(key) >> table_shift_);
}

inline std::size_t RecencyIndex::position(uint64_t key) const {
  const std::size_t mask = table_keys_.size() - 1;
  std::size_t pos = home(key);
  while (table_keys_[pos] != kNoKey && table_keys_[pos] != key) pos = (pos + 1) & mask;
  return pos;
}

bool RecencyIndex::contains(uint64_t key) const {
  return key != kNoKey && table_keys_[position(key)] == key;
}

std::optional<uint64_t> RecencyIndex::more_recent(uint64_t key) const {
  if (key == kNoKey) return std::nullopt;
  const std::size_t pos = position(key);
  if (table_keys_[pos] != key) return std::nullopt;
  return occupied_above(table_slots_[pos]);
}

void RecencyIndex::touch(uint64_t key) {
  if (key == kNoKey) throw std::invalid_argument("RecencyIndex: the key kNoKey is reserved");
  const std::size_t pos = position(key);
  if (table_keys_[pos] == key) return move_to_top(pos);
  if (size_ == max_keys_) {
    throw std::length_error(
        fmt::format("RecencyIndex: a new key beyond its bound of {} keys", max_keys_));
  }
  insert_at(pos, key);
}

void RecencyIndex::touch_evicting(uint64_t key) {
  if (key == kNoKey) throw std::invalid_argument("RecencyIndex: the key kNoKey is reserved");
  std::size_t pos = position(key);
  if (table_keys_[pos] == key) return move_to_top(pos);
  if (size_ == max_keys_) {
    erase_least_recent();
    pos = position(key);  // the deletion may have opened a hole on the key's probe path
  }
  insert_at(pos, key);
}

void RecencyIndex::move_to_top(std::size_t pos) {
  vacate(table_slots_[pos]);
  // Compaction renumbers only the keys in slots; this one is out of its slot meanwhile, and no
  // table entry moves.
  const uint32_t slot = take_top_slot();
  table_slots_[pos] = slot;
  occupy(slot, pos);
}

void RecencyIndex::insert_at(std::size_t pos, uint64_t key) {
  const uint32_t slot = take_top_slot();  // compaction moves no table entry
  table_keys_[pos] = key;
  table_slots_[pos] = slot;
  occupy(slot, pos);
  ++size_;
}

bool RecencyIndex::erase_least_recent() {
  if (size_ == 0) return false;
  std::size_t word = oldest_ / kWordBits;
  uint64_t bits = slot_bits_[word] & (~uint64_t{0} << (oldest_ % kWordBits));
  while (bits == 0) bits = slot_bits_[++word];
  oldest_ = static_cast<uint32_t>(word * kWordBits + std::countr_zero(bits));
  erase_at(slot_positions_[oldest_]);
  return true;
}

// Backward-shift deletion: every key after the hole that may move into it does, so that no
// probe ever stops early at a hole; a key that moves takes its slot's record of its position along.
void RecencyIndex::erase_at(std::size_t pos) {
  vacate(table_slots_[pos]);
  --size_;
  const std::size_t mask = table_keys_.size() - 1;
  std::size_t hole = pos;
  for (std::size_t next = (hole + 1) & mask; table_keys_[next] != kNoKey;
       next = (next + 1) & mask) {
    const std::size_t wanted = home(table_keys_[next]);
    // `next` may fill the hole unless its home lies cyclically in (hole, next].
    if (((next - wanted) & mask) >= ((next - hole) & mask)) {
      table_keys_[hole] = table_keys_[next];
      table_slots_[hole] = table_slots_[next];
      slot_positions_[table_slots_[hole]] = static_cast<uint32_t>(hole);
      hole = next;
    }
  }
  table_keys_[hole] = kNoKey;
}

uint32_t RecencyIndex::take_top_slot() {
  if (next_slot_ == width_) compact();
  return next_slot_++;
}

// Fewer than max_keys keys hold slots here (a touch holds its key out of its slot, or adds one
// below the bound), so at least half the width comes free.
void RecencyIndex::compact() {
  uint32_t live = 0;
  for (std::size_t word = oldest_ / kWordBits; word < slot_bits_.size(); ++word) {
    for (uint64_t bits = slot_bits_[word]; bits != 0; bits &= bits - 1) {
      // In place: slots only move down, and each is read before a lower one is written.
      const auto slot = static_cast<uint32_t>(word * kWordBits + std::countr_zero(bits));
      const uint32_t pos = slot_positions_[slot];
      table_slots_[pos] = live;
      slot_positions_[live] = pos;
      ++live;
    }
  }
  // Slots 0 .. live-1 occupied: full words, then one partial word.
  std::fill(slot_bits_.begin(), slot_bits_.end(), 0);
  std::fill(counts_.begin(), counts_.end(), 0);
  const uint32_t full_words = live / kWordBits;
  std::fill_n(slot_bits_.begin(), full_words, ~uint64_t{0});
  if (live % kWordBits != 0) slot_bits_[full_words] = (uint64_t{1} << (live % kWordBits)) - 1;
  for (std::size_t word = 0; word < slot_bits_.size(); ++word) {
    const uint32_t keys = count_bits(slot_bits_[word]);
    std::size_t unit = word;
    for (std::size_t level = 0; level < levels_; ++level, unit /= kFanOut) {
      counts_[level_begin_[level] + unit] += keys;
    }
  }
  next_slot_ = live;
  oldest_ = 0;
}

void RecencyIndex::occupy(uint32_t slot, std::size_t pos) {
  slot_positions_[slot] = static_cast<uint32_t>(pos);
  slot_bits_[slot / kWordBits] |= uint64_t{1} << (slot % kWordBits);
  std::size_t unit = slot / kWordBits;
  for (std::size_t level = 0; level < levels_; ++level, unit /= kFanOut) {
    ++counts_[level_begin_[level] + unit];
  }
}

void RecencyIndex::vacate(uint32_t slot) {
  slot_bits_[slot / kWordBits] &= ~(uint64_t{1} << (slot % kWordBits));
  std::size_t unit = slot / kWordBits;
  for (std::size_t level = 0; level < levels_; ++level, unit /= kFanOut) {
    --counts_[level_begin_[level] + unit];
  }
}

uint32_t RecencyIndex::occupied_above(uint32_t slot) const {
  // The bits above the slot's own in its word (two shifts: a shift by 64 is undefined).
  uint32_t above = count_bits(slot_bits_[slot / kWordBits] >> (slot % kWordBits) >> 1);
  // Then the later siblings of the slot's unit, level by level: its whole group, masked (no
  // branch on the unit's place: the compiler adds the group in vector registers, where a
  // conditional add would be a branch per sibling).
  std::size_t unit = slot / kWordBits;
  for (std::size_t level = 0; level < levels_; ++level, unit /= kFanOut) {
    const uint32_t* group = counts_.data() + level_begin_[level] + unit / kFanOut * kFanOut;
    const auto own = static_cast<uint32_t>(unit % kFanOut);
    for (uint32_t i = 0; i < kFanOut; ++i) {
      above += group[i] & (0u - static_cast<uint32_t>(i > own));
    }
  }
  return above;
}

}  // namespace radixkv::metrics
