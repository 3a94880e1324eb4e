// The host tier of a radix tree: a second PagePool under the device pool, with a limit on the pages
// it caches, its own eviction policy, and the write policy that decides when device pages get a
// host copy. The byte budget and its watermarks belong to the runtime (runtime/
// prefix_cache_runtime.h), which tells the tree when to evict host pages; the tree only keeps under
// the limit when a copy needs room.
//
// Write policies (SGLang HiCache's names):
//   write_back                      a page evicted from the device is copied to the host (the host
//                                   evicting by its own policy to make room) instead of dropped;
//                                   a page loaded back to the device leaves the host.
//   write_through                   every page is copied to the host when it is cached, and keeps
//                                   its host copy when it is loaded back.
//   write_through_selective[:hits=N] as write_through, but a node's pages are copied once the node
//                                   has been hit N times (default 2; copied when a lock reaches
//                                   it).
// Under the write-through policies a device page without a host copy (not hit enough, or skipped
// because the host had no room) leaves the trie when the device evicts it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "eviction/eviction_policy.h"
#include "kv_store/page_copier.h"
#include "kv_store/page_pool.h"

namespace radixkv {

struct WritePolicy {
  enum class Mode : uint8_t { kWriteBack, kWriteThrough, kWriteThroughSelective };
  Mode mode = Mode::kWriteBack;
  uint32_t hits = 2;  // write_through_selective: hits after which a node is copied (>= 1)

  // "write_back", "write_through", "write_through_selective" or
  // "write_through_selective:hits=N". Throws std::invalid_argument naming the spec and the known
  // names for anything else.
  static WritePolicy parse(std::string_view spec);
  static std::vector<std::string_view> names();
  std::string to_string() const;
  bool write_back() const noexcept { return mode == Mode::kWriteBack; }
};

// What RadixTree::add_host_tier() takes. The pool and the copier must outlive the tree.
struct HostTierSetup {
  PagePool* pool = nullptr;
  PageCopier* copier = nullptr;
  std::unique_ptr<EvictionPolicy> policy;
  // The most host pages the tree caches (0: the whole pool); a copy to the host evicts host pages
  // to stay under it. Pages a load is still reading (in flight) use the pool beyond it.
  uint64_t limit_pages = 0;
  WritePolicy write;
};

}  // namespace radixkv
