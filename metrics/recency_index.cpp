#include "metrics/recency_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <stdexcept>

#include "common/splitmix64.h"

namespace radixkv::metrics {

namespace {

// Table capacity for up to `keys` keys at load <= 1/2.
std::size_t table_capacity_for(uint32_t keys) {
  return std::size_t{2} * std::bit_ceil(std::max<uint32_t>(keys, 2));
}

}  // namespace

RecencyIndex::RecencyIndex(uint32_t max_keys) : max_keys_(max_keys) {
  if (max_keys == 0) throw std::invalid_argument("RecencyIndex needs room for at least 1 key");
  const std::size_t table = table_capacity_for(max_keys);
  table_shift_ = 64 - std::countr_zero(table);
  table_keys_.assign(table, kNoKey);
  table_slots_.assign(table, 0);
  slot_keys_.assign(std::size_t{2} * max_keys, kNoKey);
  fenwick_.assign(slot_keys_.size() + 1, 0);
}

std::size_t RecencyIndex::memory_bound(uint32_t max_keys) {
  const std::size_t table = table_capacity_for(max_keys);
  const std::size_t width = std::size_t{2} * max_keys;
  return table * (sizeof(uint64_t) + sizeof(uint32_t)) + width * sizeof(uint64_t) +
         (width + 1) * sizeof(uint32_t);
}

std::size_t RecencyIndex::memory_bytes() const {
  return table_keys_.capacity() * sizeof(uint64_t) + table_slots_.capacity() * sizeof(uint32_t) +
         slot_keys_.capacity() * sizeof(uint64_t) + fenwick_.capacity() * sizeof(uint32_t);
}

// Fibonacci hashing on a SplitMix64 mix: any key set spreads over the table.
std::size_t RecencyIndex::home(uint64_t key) const {
  return static_cast<std::size_t>(splitmix64(key) >> table_shift_);
}

std::size_t RecencyIndex::position(uint64_t key) const {
  const std::size_t mask = table_keys_.size() - 1;
  std::size_t pos = home(key);
  while (table_keys_[pos] != kNoKey && table_keys_[pos] != key) pos = (pos + 1) & mask;
  return pos;
}

bool RecencyIndex::contains(uint64_t key) const {
  return key != kNoKey && table_keys_[position(key)] == key;
}

void RecencyIndex::touch(uint64_t key) {
  if (key == kNoKey) throw std::invalid_argument("RecencyIndex: the key kNoKey is reserved");
  const std::size_t pos = position(key);
  if (table_keys_[pos] == key) {
    const uint32_t old_slot = table_slots_[pos];
    fenwick_add(old_slot, -1);
    slot_keys_[old_slot] = kNoKey;
    // Compaction renumbers only the keys in slots; this one is out of its slot meanwhile.
    const uint32_t slot = take_top_slot();
    slot_keys_[slot] = key;
    fenwick_add(slot, +1);
    table_slots_[pos] = slot;
    return;
  }
  if (size_ == max_keys_) {
    throw std::length_error(
        fmt::format("RecencyIndex: a new key beyond its bound of {} keys", max_keys_));
  }
  const uint32_t slot = take_top_slot();  // compaction moves no table entry
  table_keys_[pos] = key;
  table_slots_[pos] = slot;
  slot_keys_[slot] = key;
  fenwick_add(slot, +1);
  ++size_;
}

std::optional<uint64_t> RecencyIndex::more_recent(uint64_t key) const {
  if (key == kNoKey) return std::nullopt;
  const std::size_t pos = position(key);
  if (table_keys_[pos] != key) return std::nullopt;
  return size_ - occupied_through(table_slots_[pos]);
}

bool RecencyIndex::erase_least_recent() {
  if (size_ == 0) return false;
  while (slot_keys_[oldest_] == kNoKey) ++oldest_;
  erase_at(position(slot_keys_[oldest_]));
  return true;
}

// Backward-shift deletion: every key after the hole that may move into it does, so that no
// probe ever stops early at a hole.
void RecencyIndex::erase_at(std::size_t pos) {
  const uint32_t slot = table_slots_[pos];
  fenwick_add(slot, -1);
  slot_keys_[slot] = kNoKey;
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
      hole = next;
    }
  }
  table_keys_[hole] = kNoKey;
}

uint32_t RecencyIndex::take_top_slot() {
  if (next_slot_ == slot_keys_.size()) compact();
  return next_slot_++;
}

// Fewer than max_keys keys hold slots here (a touch holds its key out of its slot, or adds one
// below the bound), so at least half the width comes free.
void RecencyIndex::compact() {
  uint32_t live = 0;
  for (uint32_t slot = oldest_; slot < next_slot_; ++slot) {  // in place: keys only move down
    const uint64_t key = slot_keys_[slot];
    if (key == kNoKey) continue;
    slot_keys_[slot] = kNoKey;
    slot_keys_[live] = key;
    table_slots_[position(key)] = live;
    ++live;
  }
  // Linear Fenwick build over slots 0 .. live-1 occupied.
  for (std::size_t i = 1; i < fenwick_.size(); ++i) fenwick_[i] = i <= live ? 1 : 0;
  for (std::size_t i = 1; i < fenwick_.size(); ++i) {
    const std::size_t parent = i + (i & (~i + 1));
    if (parent < fenwick_.size()) fenwick_[parent] += fenwick_[i];
  }
  next_slot_ = live;
  oldest_ = 0;
}

void RecencyIndex::fenwick_add(uint32_t slot, int32_t delta) {
  for (std::size_t i = std::size_t{slot} + 1; i < fenwick_.size(); i += i & (~i + 1)) {
    fenwick_[i] += static_cast<uint32_t>(delta);
  }
}

uint32_t RecencyIndex::occupied_through(uint32_t slot) const {
  uint32_t sum = 0;
  for (std::size_t i = std::size_t{slot} + 1; i > 0; i -= i & (~i + 1)) sum += fenwick_[i];
  return sum;
}

}  // namespace radixkv::metrics
