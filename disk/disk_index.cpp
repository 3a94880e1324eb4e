#include "disk/disk_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace radixkv::disk {

DiskIndex::DiskIndex(uint32_t slots, std::unique_ptr<EvictionPolicy> policy)
    : cells_(slots), policy_(std::move(policy)) {
  if (slots == 0) throw std::invalid_argument("disk index: no slots");
  if (!policy_) throw std::invalid_argument("disk index: no eviction policy");
  if (policy_->state_bytes() > SlotCell::kStateRoom || policy_->state_bytes() % 8 != 0) {
    throw std::invalid_argument(fmt::format(
        "disk index: the eviction policy '{}' keeps {} bytes per entry; a disk slot has room for "
        "a multiple of 8 up to {}",
        policy_->name(), policy_->state_bytes(), SlotCell::kStateRoom));
  }
  free_.reserve(slots);
  for (SlotId id = slots; id-- > 0;) free_.push_back(id);  // slot 0 is taken first
}

SlotId DiskIndex::id_of(const EvictionEntry& entry) const {
  const auto* slot = static_cast<const Slot*>(&entry);
  const auto offset = reinterpret_cast<const std::byte*>(slot) -
                      reinterpret_cast<const std::byte*>(&cells_.front().slot);
  return static_cast<SlotId>(offset / static_cast<std::ptrdiff_t>(sizeof(SlotCell)));
}

SlotId DiskIndex::find(const PageHash& hash) const {
  const auto it = map_.find(hash);
  return it == map_.end() ? kNoSlot : it->second;
}

SlotId DiskIndex::first_child(const PageHash& hash) const {
  const auto it = children_.find(hash);
  return it == children_.end() ? kNoSlot : it->second;
}

bool DiskIndex::evictable(SlotId id) const {
  const Slot& s = at(id);
  return s.state == State::kStored && id != keep_ && !children_.contains(s.hash);
}

void DiskIndex::sync_policy(SlotId id) {
  Slot& s = at(id);
  const bool linked = policy_->contains(s);
  if (evictable(id) && !linked) {
    policy_->add(s);
  } else if (!evictable(id) && linked) {
    policy_->remove(s);
  }
}

void DiskIndex::link_child(SlotId id) {
  Slot& s = at(id);
  auto [it, inserted] = children_.try_emplace(s.parent, id);
  s.prev_sibling = kNoSlot;
  s.next_sibling = inserted ? kNoSlot : it->second;
  if (!inserted) {
    at(it->second).prev_sibling = id;
    it->second = id;
  }
  if (inserted) {
    const SlotId parent = find(s.parent);
    if (parent != kNoSlot) sync_policy(parent);  // no longer a disk leaf
  }
}

void DiskIndex::unlink_child(SlotId id) {
  Slot& s = at(id);
  if (s.next_sibling != kNoSlot) at(s.next_sibling).prev_sibling = s.prev_sibling;
  if (s.prev_sibling != kNoSlot) {
    at(s.prev_sibling).next_sibling = s.next_sibling;
  } else if (s.next_sibling != kNoSlot) {
    children_[s.parent] = s.next_sibling;
  } else {
    children_.erase(s.parent);
    const SlotId parent = find(s.parent);
    if (parent != kNoSlot) sync_policy(parent);  // a disk leaf now
  }
  s.prev_sibling = s.next_sibling = kNoSlot;
}

void DiskIndex::add(SlotId id, const SlotHeader& header, bool stored) {
  Slot& s = at(id);
  if (s.state != State::kFree || map_.contains(header.hash)) {
    throw std::logic_error(fmt::format("disk index: add into slot {} (state {}) of a page {}", id,
                                       static_cast<int>(s.state),
                                       map_.contains(header.hash) ? "indexed already" : "new"));
  }
  s.hash = header.hash;
  s.parent = header.parent;
  s.generation = header.generation;
  s.first = header.first;
  s.state = stored ? State::kStored : State::kWriting;
  s.pages = 1;
  AccessHistory past;  // new: made now, its one access the write
  past.created = past.last.tick = ++clock_;
  policy_->adopt(s, past);
  map_.emplace(s.hash, id);
  link_child(id);
  sync_policy(id);
}

SlotId DiskIndex::take(SlotId keep) {
  keep_ = keep;
  if (keep != kNoSlot) sync_policy(keep);
  SlotId taken = kNoSlot;
  while (taken == kNoSlot) {
    if (!free_.empty()) {
      taken = free_.back();
      free_.pop_back();
      break;
    }
    EvictionEntry* victim = policy_->victim();
    if (victim == nullptr) break;
    const SlotId id = id_of(*victim);
    unindex(id);
    free_slot(id);
    ++removed_.evicted;
  }
  keep_ = kNoSlot;
  if (keep != kNoSlot) sync_policy(keep);
  return taken;
}

bool DiskIndex::write_done(SlotId id) {
  Slot& s = at(id);
  if (s.state == State::kReleasing) {
    free_slot(id);
    return true;
  }
  if (s.state != State::kWriting) {
    throw std::logic_error(
        fmt::format("disk index: write done in slot {} that was not written", id));
  }
  s.state = State::kStored;
  sync_policy(id);
  return false;
}

void DiskIndex::unindex(SlotId id) {
  Slot& s = at(id);
  if (policy_->contains(s)) policy_->remove(s);
  map_.erase(s.hash);
  unlink_child(id);
}

void DiskIndex::free_slot(SlotId id) {
  at(id).state = State::kFree;
  free_.push_back(id);
}

void DiskIndex::remove(SlotId id) {
  Slot& s = at(id);
  if (s.state != State::kWriting && s.state != State::kStored) {
    throw std::logic_error(fmt::format("disk index: remove of slot {}, which holds no page", id));
  }
  unindex(id);
  if (s.state == State::kWriting) {
    s.state = State::kReleasing;
  } else {
    free_slot(id);
  }
}

void DiskIndex::touch(SlotId id) {
  Slot& s = at(id);
  AccessHint hint;
  hint.tick = ++clock_;
  policy_->on_access(s, hint);
}

uint64_t DiskIndex::reclaim_below(const PageHash& hash) {
  if (find(hash) != kNoSlot) return 0;
  uint64_t count = 0;
  std::vector<PageHash> stack{hash};
  std::vector<SlotId> children;
  while (!stack.empty()) {
    const PageHash parent = stack.back();
    stack.pop_back();
    children.clear();
    for (SlotId c = first_child(parent); c != kNoSlot; c = at(c).next_sibling) {
      children.push_back(c);
    }
    for (const SlotId c : children) {
      stack.push_back(at(c).hash);
      remove(c);
      ++count;
    }
  }
  removed_.unreachable += count;
  return count;
}

uint64_t DiskIndex::reclaim_unanchored() {
  std::vector<bool> reached(cells_.size(), false);
  std::vector<SlotId> stack;
  for (const auto& [hash, id] : map_) {
    if (at(id).first) stack.push_back(id);
  }
  while (!stack.empty()) {
    const SlotId id = stack.back();
    stack.pop_back();
    reached[id] = true;
    for (SlotId c = first_child(at(id).hash); c != kNoSlot; c = at(c).next_sibling) {
      stack.push_back(c);
    }
  }
  std::vector<SlotId> stranded;
  for (const auto& [hash, id] : map_) {
    if (!reached[id]) stranded.push_back(id);
  }
  for (const SlotId id : stranded) remove(id);
  removed_.unreachable += stranded.size();
  return stranded.size();
}

uint64_t DiskIndex::restore(std::vector<Found> found) {
  if (!map_.empty()) throw std::logic_error("disk index: restore into an index with pages");
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return a.header.generation < b.header.generation;
  });
  free_.clear();
  for (const Found& f : found) {
    const SlotId older = find(f.header.hash);
    if (older != kNoSlot) {
      unindex(older);
      at(older).state = State::kFree;
    }
    add(f.id, f.header, true);
  }
  for (SlotId id = static_cast<SlotId>(cells_.size()); id-- > 0;) {
    if (at(id).state == State::kFree) free_.push_back(id);
  }
  removed_ = {};
  reclaim_unanchored();
  return map_.size();
}

void DiskIndex::verify(const std::function<bool(const PageHash&)>& in_trie) const {
  const auto fail = [](const std::string& what) { throw std::logic_error("disk index: " + what); };
  uint64_t indexed = 0;
  uint64_t evictable_count = 0;
  std::vector<bool> listed_free(cells_.size(), false);
  for (const SlotId id : free_) {
    if (id >= cells_.size() || listed_free[id] || at(id).state != State::kFree) {
      fail(fmt::format("free list holds slot {} twice or in use", id));
    }
    listed_free[id] = true;
  }
  for (SlotId id = 0; id < cells_.size(); ++id) {
    const Slot& s = at(id);
    if (s.state == State::kFree && !listed_free[id]) fail(fmt::format("slot {} lost", id));
    const bool holds = s.state == State::kWriting || s.state == State::kStored;
    if (holds) {
      ++indexed;
      if (find(s.hash) != id) fail(fmt::format("slot {} not indexed by its hash", id));
      if (!s.first && find(s.parent) == kNoSlot && !in_trie(s.parent)) {
        fail(fmt::format("slot {} holds a page whose parent is on no tier", id));
      }
    }
    if (policy_->contains(s) != evictable(id)) {
      fail(fmt::format("slot {} is {}evictable but {}in the policy", id,
                       evictable(id) ? "" : "not ", policy_->contains(s) ? "" : "not "));
    }
    if (evictable(id)) ++evictable_count;
  }
  if (indexed != map_.size()) fail("map and slots disagree");
  if (evictable_count != policy_->size()) fail("policy holds other entries");
  uint64_t linked = 0;
  for (const auto& [parent, head] : children_) {
    SlotId prev = kNoSlot;
    for (SlotId c = head; c != kNoSlot; c = at(c).next_sibling) {
      const Slot& s = at(c);
      if (s.parent != parent || s.prev_sibling != prev || find(s.hash) != c) {
        fail(fmt::format("children list of a parent broken at slot {}", c));
      }
      prev = c;
      ++linked;
    }
  }
  if (linked != map_.size()) fail("not every page is listed under its parent");
}

}  // namespace radixkv::disk
