// EvictionEntry: the part of a cached item that eviction policies see, and the policy's own state
// of it.
//
// An entry holds two facts that its owner (the radix tree) keeps: its charge in pages and its
// depth. Everything else a policy knows of an entry is the policy's *state* of it, a struct the
// policy lays out (its links, its keys, and what it keeps of the entry's accesses) in the
// EvictionPolicy::state_bytes() bytes that the owner reserves immediately before each entry, in
// the same allocation: [state][entry...]. So an entry pays for the policy in use only (LRU: 40
// bytes; the most, reuse: 56), and naming and unlinking a victim reads the state and the owner's
// fields beside it. What a policy learns of an access arrives with the access (AccessHint, with
// the owner's clock tick); what happened before an entry reached the policy arrives with
// EvictionPolicy::adopt (AccessHistory).
//
// Like CacheLib's MMContainers, policies link entries through hooks in that state, so adding,
// removing and touching never allocates; the one side table is LRU and FIFO's ring of state
// pointers (eviction/rank_queue_policy.h), which grows amortised and, when memory is short, links
// the entry through its hook instead: no policy operation throws. An entry is linked into at most
// one policy at a time.
#pragma once

#include <boost/intrusive/set_hook.hpp>

#include <cstddef>
#include <cstdint>
#include <new>

namespace radixkv {

// TensorRT-LLM's KvCacheRetentionConfig: priorities run 0..100, 35 when none is given.
inline constexpr int32_t kMinPriority = 0;
inline constexpr int32_t kMaxPriority = 100;
inline constexpr int32_t kDefaultPriority = 35;

// What the caller knows about one access (a match or an insert along a path).
struct AccessHint {
  int32_t priority = kDefaultPriority;
  // Time of the access on the caller's clock, in seconds (a trace's arrival time). Only policies
  // with a notion of duration read it (the priority policy's retention, the reuse policy's
  // ages); callers that have no clock leave it at 0, and such policies then see time stand still.
  double now = 0.0;
  // Length of the accessing request's answer in tokens, where the caller knows it (cache-mode
  // replay: the trace's output length, the request being over before the next one starts); 0 when
  // unknown. A request class for the reuse policy.
  uint32_t output_tokens = 0;
  // The accessing request's class (a trace's request type: Bailian's "text"/"search"/"image",
  // an agentic request's type), a small integer the caller assigns; 0 when unknown. Policies may
  // learn per class; none has to.
  uint16_t request_class = 0;
  // The owner's logical clock at this access: one tick per tree operation (match or insert), the
  // same for every entry on its path, larger for a later operation. Set by the owner (RadixTree
  // overwrites it); callers leave it 0.
  uint64_t tick = 0;
  // False for an access that continues a request already counted (SGLang's chunked insert: the
  // next chunk of a chunked prefill): the access stamps the path (tick) but no policy counts it
  // as a hit (nor does the owner's AccessHistory), so that a request does not inflate the hits of
  // the nodes its own earlier chunks created.
  bool counts_as_hit = true;
};

// An entry's past as its owner tells it to a policy that did not see it (EvictionPolicy::adopt).
struct AccessHistory {
  uint64_t created = 0;  // the owner's clock when the entry was made
  uint64_t hits = 0;     // accesses since (0: none yet)
  AccessHint last;       // the latest of them (last.tick: when; 0 when none)
};

struct EvictionEntry {
  // The policy's state lies right before this (see above); the facts are the owner's.
  uint32_t pages = 0;         // pages the entry holds now: its charge
  uint32_t prefix_pages = 0;  // pages on its path above it (deeper entries save longer prefills)
};

// The policy's state of an entry, as a State: a type of the policy's whose size is its
// state_bytes() (a multiple of 8, with alignment at most 8), created by the policy's adopt().
// These only compute addresses: they read nothing.
template <typename State>
State& state_of(EvictionEntry& entry) {
  static_assert(sizeof(State) % 8 == 0 && alignof(State) <= 8);
  return *std::launder(
      reinterpret_cast<State*>(reinterpret_cast<std::byte*>(&entry) - sizeof(State)));
}
template <typename State>
const State& state_of(const EvictionEntry& entry) {
  return state_of<State>(const_cast<EvictionEntry&>(entry));
}
template <typename State>
EvictionEntry& entry_of(State& state) {
  return *std::launder(
      reinterpret_cast<EvictionEntry*>(reinterpret_cast<std::byte*>(&state) + sizeof(State)));
}
template <typename State>
const EvictionEntry& entry_of(const State& state) {
  return entry_of(const_cast<State&>(state));
}
// Starts the lifetime of a fresh State before `entry` (in adopt()). The owner frees the memory of
// an unlinked entry without telling the policy, so a State must need no destructor call: its
// members are numbers and unlinked hooks.
template <typename State>
State& make_state(EvictionEntry& entry) {
  return *new (reinterpret_cast<std::byte*>(&entry) - sizeof(State)) State();
}

// The hook of the policies that link their entries in an ordered set.
using SetHook = boost::intrusive::set_member_hook<boost::intrusive::optimize_size<true>>;

}  // namespace radixkv
