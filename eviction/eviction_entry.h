// EvictionEntry: the part of a cached item that eviction policies see.
//
// Like CacheLib's MMContainers, policies link entries through hooks that live inside the entry, so
// adding, removing and touching never allocates; the one side table is LRU and FIFO's ring of
// entry pointers (eviction/rank_queue_policy.h), which grows amortised and, when memory is short,
// links the entry through its hook instead: no policy operation throws. The owner of the
// entries (the radix tree) fills in the facts below; a policy reads them and may use the
// policy-owned fields however it likes. An entry is linked into at most one policy at a time.
#pragma once

#include <boost/intrusive/set_hook.hpp>

#include <cstdint>

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
  // False for an access that continues a request already counted (SGLang's chunked insert: the
  // next chunk of a chunked prefill): the tree stamps the path but does not count a hit, so that
  // a request does not inflate the hits of the nodes its own earlier chunks created.
  bool counts_as_hit = true;
};

struct EvictionEntry {
  using SetHook = boost::intrusive::set_member_hook<boost::intrusive::optimize_size<true>>;

  // The fields are in the order of use: the hook, the queue position, `pages` and `rank` fill
  // the first 64 bytes, which is all of the entry that naming and unlinking a victim reads (the
  // radix tree adds the fields it needs to free a node in its own last line: radix/radix_node.h).

  // Policy-owned links: ordered policies (LFU, priority, cost-aware, SIEVE, ...) use set_hook;
  // LRU and FIFO keep an entry either in a ring, at queue_position (0: not there), or in a set
  // through set_hook (eviction/rank_queue_policy.h).
  SetHook set_hook;
  uint64_t queue_position = 0;

  // Facts kept by the owner.
  uint32_t pages = 0;         // pages the entry holds now: its charge
  uint32_t prefix_pages = 0;  // pages on its path above it (deeper entries save longer prefills)

  // Policy-owned: an ordered policy keys on these (and score, segment below), never on the facts,
  // which the owner rewrites just before on_access() while the entry may still be linked.
  uint64_t rank = 0;

  // More facts kept by the owner.
  uint64_t last_access = 0;  // logical clock of the last access (one tick per tree operation)
  uint64_t inserted_at = 0;  // logical clock of creation
  uint64_t hits = 0;         // accesses since creation
  int32_t priority = kDefaultPriority;  // priority of the latest access
  uint32_t output_tokens = 0;           // AccessHint::output_tokens of the latest access
  double last_access_s = 0.0;           // AccessHint::now of the latest access (seconds)

  // Policy-owned as well.
  double score = 0.0;
  double stamp = 0.0;  // a time the policy remembers (reuse: its previous access)
  uint8_t segment = 0;
  bool visited = false;
};

}  // namespace radixkv
