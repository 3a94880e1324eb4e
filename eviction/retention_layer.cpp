#include "eviction/retention_layer.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <new>
#include <stdexcept>

namespace radixkv {

static_assert(sizeof(RetentionState) == 96 && alignof(RetentionState) <= 8);

RetentionLayer::RetentionLayer(std::unique_ptr<EvictionPolicy> inner, const RetentionConfig& config)
    : inner_(std::move(inner)), inner_bytes_(inner_ ? inner_->state_bytes() : 0), config_(config) {
  if (!inner_) throw std::invalid_argument("retention layer: no inner policy");
  if (!(config.hold_share > 0.0 && config.hold_share <= 1.0)) {
    throw std::invalid_argument(
        fmt::format("retention layer: hold share {} must lie in (0, 1]", config.hold_share));
  }
  if (config.hold_priority <= kDefaultPriority || config.hold_priority > kMaxPriority) {
    throw std::invalid_argument(
        fmt::format("retention layer: hold priority {} must lie in ({}, {}]", config.hold_priority,
                    kDefaultPriority, kMaxPriority));
  }
}

RetentionLayer::~RetentionLayer() {
  protected_.clear();
  demoted_.clear();
  expiry_.clear();
}

RetentionState& RetentionLayer::state(const EvictionEntry& entry) const {
  auto* at = reinterpret_cast<std::byte*>(const_cast<EvictionEntry*>(&entry)) - inner_bytes_ -
             sizeof(RetentionState);
  return *std::launder(reinterpret_cast<RetentionState*>(at));
}

EvictionEntry& RetentionLayer::entry_of(RetentionState& s) const {
  auto* at = reinterpret_cast<std::byte*>(&s) + sizeof(RetentionState) + inner_bytes_;
  return *std::launder(reinterpret_cast<EvictionEntry*>(at));
}

void RetentionLayer::adopt(EvictionEntry& entry, const AccessHistory& past) {
  auto* at = reinterpret_cast<std::byte*>(&entry) - inner_bytes_ - sizeof(RetentionState);
  new (at) RetentionState();
  inner_->adopt(entry, past);
}

RetentionLayer::Standing RetentionLayer::standing(const RetentionState& s) const {
  Standing st;
  st.deadline = std::numeric_limits<double>::infinity();
  bool any = false;
  if (s.hint_priority != kDefaultPriority && s.hint_until > now_) {
    st.priority = s.hint_priority;
    st.deadline = s.hint_until;
    any = true;
  }
  if (s.session != 0) {
    const auto it = sessions_.find(s.session);
    if (it != sessions_.end() && it->second.stamp == s.session_stamp &&
        it->second.hold_until > now_) {
      const auto hold = static_cast<uint8_t>(config_.hold_priority);
      st.priority = any ? std::max(st.priority, hold) : hold;
      st.deadline = std::min(st.deadline, it->second.hold_until);
      any = true;
    }
  }
  if (!any) st.priority = kDefaultPriority;
  return st;
}

void RetentionLayer::unplace(EvictionEntry& entry, RetentionState& s) {
  switch (s.place) {
    case kInner:
      inner_->remove(entry);
      break;
    case kProtected:
      protected_.erase(protected_.iterator_to(s));
      expiry_.erase(expiry_.iterator_to(s));
      protected_pages_ -= s.counted;
      break;
    case kDemoted:
      demoted_.erase(demoted_.iterator_to(s));
      expiry_.erase(expiry_.iterator_to(s));
      break;
    case kSpilled:
      inner_->remove(entry);
      expiry_.erase(expiry_.iterator_to(s));
      --spilled_;
      break;
    default:
      break;
  }
  s.place = kUnlinked;
}

void RetentionLayer::rank(EvictionEntry& entry) {
  RetentionState& s = state(entry);
  const Standing st = standing(s);
  Place want = st.priority > kDefaultPriority   ? kProtected
               : st.priority < kDefaultPriority ? kDemoted
                                                : kInner;
  // A spilled entry stays spilled while its standing is the one it spilled with.
  s.spilled =
      s.spilled && want == kProtected && st.priority == s.priority && st.deadline == s.deadline;
  if (s.spilled) want = kSpilled;
  if (want == s.place &&
      (want == kInner || (st.priority == s.priority && st.deadline == s.deadline))) {
    return;  // nothing changes: keep its place (and its tie order)
  }
  unplace(entry, s);
  s.place = want;
  s.priority = st.priority;
  s.deadline = st.deadline;
  if (want == kInner) {
    inner_->add(entry);
    return;
  }
  if (want == kSpilled) {  // back from a pin: same standing, same order
    inner_->add(entry);
    expiry_.insert(s);
    ++spilled_;
    return;
  }
  s.order = ++next_order_;
  (want == kProtected ? protected_ : demoted_).insert(s);
  expiry_.insert(s);
  if (want == kProtected) protected_pages_ += s.counted;
}

// Rule 2 of the header: what the share cannot afford goes back to the inner policy's order.
void RetentionLayer::spill() {
  while (!protected_.empty() && static_cast<double>(protected_pages_) >
                                    config_.hold_share * static_cast<double>(linked_pages_)) {
    RetentionState& s = *protected_.begin();
    EvictionEntry& entry = entry_of(s);
    unplace(entry, s);
    s.place = kSpilled;
    s.spilled = true;
    inner_->add(entry);
    expiry_.insert(s);
    ++spilled_;
  }
}

// The pages of a linked entry as they are now (the owner takes pages from the victim only).
void RetentionLayer::recount(EvictionEntry& entry, RetentionState& s) {
  linked_pages_ = linked_pages_ - s.counted + entry.pages;
  if (s.place == kProtected) protected_pages_ = protected_pages_ - s.counted + entry.pages;
  s.counted = entry.pages;
}

void RetentionLayer::add(EvictionEntry& entry) {
  RetentionState& s = state(entry);
  s.counted = entry.pages;
  linked_pages_ += s.counted;
  s.place = kUnlinked;
  if (s.session != 0) {
    const auto it = sessions_.find(s.session);
    if (it != sessions_.end() && it->second.stamp == s.session_stamp) it->second.linked = &entry;
  }
  rank(entry);
}

void RetentionLayer::remove(EvictionEntry& entry) {
  RetentionState& s = state(entry);
  if (last_victim_ == &entry) last_victim_ = nullptr;
  unplace(entry, s);
  linked_pages_ -= s.counted;
  s.counted = 0;
  if (s.session != 0) {
    const auto it = sessions_.find(s.session);
    if (it != sessions_.end() && it->second.linked == &entry) it->second.linked = nullptr;
  }
}

void RetentionLayer::on_access(EvictionEntry& entry, const AccessHint& hint) {
  now_ = std::max(now_, hint.now);
  inner_->on_access(entry, hint);
  RetentionState& s = state(entry);
  if (s.place != kUnlinked) recount(entry, s);
}

void RetentionLayer::expire() {
  while (!expiry_.empty() && expiry_.begin()->deadline <= now_) {
    rank(entry_of(*expiry_.begin()));
  }
}

EvictionEntry* RetentionLayer::victim() {
  if (last_victim_ != nullptr) recount(*last_victim_, state(*last_victim_));
  expire();
  EvictionEntry* chosen = nullptr;
  if (!demoted_.empty()) {
    chosen = &entry_of(*demoted_.begin());
  } else {
    spill();
    chosen = inner_->victim();
    if (chosen == nullptr && !protected_.empty()) chosen = &entry_of(*protected_.begin());
  }
  last_victim_ = chosen;
  return chosen;
}

bool RetentionLayer::contains(const EvictionEntry& entry) const {
  return state(entry).place != kUnlinked;
}

std::size_t RetentionLayer::size() const {
  return inner_->size() + protected_.size() + demoted_.size();
}

void RetentionLayer::retain(EvictionEntry& entry, const Retention& retention) {
  now_ = std::max(now_, retention.now);
  RetentionState& s = state(entry);
  if (retention.priority != kDefaultPriority) {
    const auto priority =
        static_cast<uint8_t>(std::clamp(retention.priority, kMinPriority, kMaxPriority));
    if (s.hint_priority != kDefaultPriority && s.hint_until > now_) {
      s.hint_priority = std::max(s.hint_priority, priority);
      s.hint_until = std::max(s.hint_until, retention.until);
    } else {
      s.hint_priority = priority;
      s.hint_until = retention.until;
    }
  }
  if (retention.session != 0) {
    if (s.session != 0 && s.session != retention.session) {  // it leaves its old session
      const auto old = sessions_.find(s.session);
      if (old != sessions_.end() && old->second.linked == &entry) old->second.linked = nullptr;
    }
    SessionRecord& record = sessions_[retention.session];
    record.stamp = ++next_stamp_;
    EvictionEntry* before = record.linked;
    record.linked = s.place != kUnlinked ? &entry : nullptr;
    s.session = retention.session;
    s.session_stamp = record.stamp;
    if (before != nullptr && before != &entry) rank(*before);  // no longer the session's
  }
  if (s.place != kUnlinked) {
    recount(entry, s);
    rank(entry);
  }
}

void RetentionLayer::hold(uint64_t session, double until) {
  const auto it = sessions_.find(session);
  if (it == sessions_.end()) return;
  it->second.hold_until = until;
  if (EvictionEntry* e = it->second.linked) rank(*e);
}

void RetentionLayer::release(uint64_t session) {
  const auto it = sessions_.find(session);
  if (it == sessions_.end()) return;
  EvictionEntry* e = it->second.linked;
  sessions_.erase(it);
  if (e != nullptr) rank(*e);
}

}  // namespace radixkv
