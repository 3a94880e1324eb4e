#include "radix/child_table.h"

#include "kv_store/heap.h"

#include <new>

namespace radixkv {

namespace {

ChildTable::Slot* allocate_slots(uint32_t capacity) {
  auto* slots =
      static_cast<ChildTable::Slot*>(heap::allocate_zeroed(capacity, sizeof(ChildTable::Slot)));
  return slots;
}

}  // namespace

ChildTable::~ChildTable() {
  if (capacity_ > 1) heap::release(slots_);
}

void ChildTable::clear() {
  if (capacity_ > 1) heap::release(slots_);
  inline_ = Slot{};
  capacity_ = 0;
  size_ = 0;
}

uint64_t ChildTable::heap_bytes() const { return capacity_ > 1 ? heap::usable_size(slots_) : 0; }

void ChildTable::insert(uint64_t hash, RadixNode* node) {
  if (capacity_ == 0) {
    inline_ = Slot{hash, node};
    capacity_ = 1;
    size_ = 1;
    return;
  }
  if (capacity_ == 1 && size_ == 0) {
    inline_ = Slot{hash, node};
    size_ = 1;
    return;
  }
  if (capacity_ == 1 || (size_ + 1) * 4 > capacity_ * 3) grow();
  const uint32_t mask = capacity_ - 1;
  uint32_t i = static_cast<uint32_t>(hash) & mask;
  while (slots_[i].node != nullptr) i = (i + 1) & mask;
  slots_[i] = Slot{hash, node};
  ++size_;
}

void ChildTable::grow() {
  const uint32_t new_capacity = capacity_ <= 1 ? 4 : capacity_ * 2;
  Slot* fresh = allocate_slots(new_capacity);
  const uint32_t mask = new_capacity - 1;
  for_each([&](uint64_t hash, RadixNode* node) {
    uint32_t i = static_cast<uint32_t>(hash) & mask;
    while (fresh[i].node != nullptr) i = (i + 1) & mask;
    fresh[i] = Slot{hash, node};
  });
  if (capacity_ > 1) heap::release(slots_);
  slots_ = fresh;
  capacity_ = new_capacity;
}

ChildTable::Slot* ChildTable::locate(uint64_t hash, RadixNode* node) {
  if (capacity_ <= 1) return size_ == 1 && inline_.node == node ? &inline_ : nullptr;
  const uint32_t mask = capacity_ - 1;
  for (uint32_t i = static_cast<uint32_t>(hash) & mask;; i = (i + 1) & mask) {
    if (slots_[i].node == nullptr) return nullptr;
    if (slots_[i].node == node) return &slots_[i];
  }
}

bool ChildTable::replace(uint64_t hash, RadixNode* old_node, RadixNode* new_node) {
  Slot* slot = locate(hash, old_node);
  if (slot == nullptr) return false;
  slot->node = new_node;
  return true;
}

bool ChildTable::erase(uint64_t hash, RadixNode* node) {
  Slot* slot = locate(hash, node);
  if (slot == nullptr) return false;
  --size_;
  if (capacity_ == 1) {
    inline_ = Slot{};
    return true;
  }
  // Backward-shift deletion: pull later members of the probe run into the hole so that no
  // tombstones are needed and find() can stop at the first empty slot.
  const uint32_t mask = capacity_ - 1;
  uint32_t hole = static_cast<uint32_t>(slot - slots_);
  for (uint32_t i = (hole + 1) & mask; slots_[i].node != nullptr; i = (i + 1) & mask) {
    const uint32_t home = static_cast<uint32_t>(slots_[i].hash) & mask;
    // Move slot i into the hole unless its home lies cyclically in (hole, i].
    const bool home_after_hole = ((i - home) & mask) < ((i - hole) & mask);
    if (!home_after_hole) {
      slots_[hole] = slots_[i];
      hole = i;
    }
  }
  slots_[hole] = Slot{};
  return true;
}

}  // namespace radixkv
