// ChildTable: a node's children, keyed by the hash of each child's first page of tokens.
//
// Open addressing with linear probing and backward-shift deletion; slots hold the hash beside the
// pointer so a probe touches no child it does not return. Fan-out is 0 or 1 for most nodes, so a
// single child lives inline and a table is only allocated (kv_store/heap.h) from the second on.
// Hashes may collide: find() takes a predicate that confirms the tokens and keeps probing.
// Invariants: capacity is 0 (empty), 1 (inline) or a power of two >= 4 with load <= 3/4.
#pragma once

#include <cstdint>
#include <utility>

namespace radixkv {

class RadixNode;

class ChildTable {
 public:
  struct Slot {
    uint64_t hash = 0;
    RadixNode* node = nullptr;
  };

  ChildTable() = default;
  ~ChildTable();
  ChildTable(const ChildTable&) = delete;
  ChildTable& operator=(const ChildTable&) = delete;

  uint32_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Bytes allocated beyond the object itself.
  uint64_t heap_bytes() const;

  template <typename Matches>
  RadixNode* find(uint64_t hash, Matches&& matches) const {
    if (capacity_ <= 1) {
      return size_ == 1 && inline_.hash == hash && matches(inline_.node) ? inline_.node : nullptr;
    }
    const uint32_t mask = capacity_ - 1;
    for (uint32_t i = static_cast<uint32_t>(hash) & mask;; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (slot.node == nullptr) return nullptr;
      if (slot.hash == hash && matches(slot.node)) return slot.node;
    }
  }

  // Starts loading the slots where a probe for `hash` begins into the cache, ahead of an erase:
  // the line of its first slot and the next line, which the backward shift of an erase reads
  // when the run crosses a line. Always inlined, as every prefetch helper must be: g++ 12 finds a
  // function that only prefetches "pure" and deletes calls to it (radix/tree_internals.h).
  [[gnu::always_inline]] void prefetch(uint64_t hash) const {
    if (capacity_ <= 1) return;
    const Slot* first = &slots_[static_cast<uint32_t>(hash) & (capacity_ - 1)];
    __builtin_prefetch(first, 1);
    __builtin_prefetch(reinterpret_cast<const char*>(first) + 64, 1);  // may pass the end: harmless
  }
  void insert(uint64_t hash, RadixNode* node);
  // Removes the slot holding `node` (found by its hash); returns false if it is not there.
  bool erase(uint64_t hash, RadixNode* node);
  // Forgets every child (they are not touched).
  void clear();
  // Points the slot of `old_node` at `new_node`, which must have the same hash.
  bool replace(uint64_t hash, RadixNode* old_node, RadixNode* new_node);

  template <typename Fn>
  void for_each(Fn&& fn) const {
    if (capacity_ <= 1) {
      if (size_ == 1) fn(inline_.hash, inline_.node);
      return;
    }
    for (uint32_t i = 0; i < capacity_; ++i) {
      if (slots_[i].node != nullptr) fn(slots_[i].hash, slots_[i].node);
    }
  }

 private:
  Slot* locate(uint64_t hash, RadixNode* node);
  void grow();

  union {
    Slot inline_{};  // capacity_ <= 1
    Slot* slots_;    // capacity_ >= 4
  };
  uint32_t capacity_ = 0;
  uint32_t size_ = 0;
};

}  // namespace radixkv
