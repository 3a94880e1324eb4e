// RadixTree's host tier: policy membership on both tiers, device eviction to the host, host
// eviction, write-through copies, and loading host runs back to the device. The rules are in
// radix_tree.h and radix_node.h; docs/tiers.md explains them.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <new>
#include <stdexcept>

#include "kv_store/heap.h"
#include "radix/tree_internals.h"

namespace radixkv {

namespace {

[[noreturn]] void bad_host_tier(const std::string& what) {
  throw std::invalid_argument("RadixTree::add_host_tier: " + what);
}

}  // namespace

void RadixTree::add_host_tier(HostTierSetup setup) {
  check_empty("add_host_tier");
  if (host_tier_) bad_host_tier("the tree has a host tier already");
  if (setup.pool == nullptr) bad_host_tier("no host pool was given");
  if (setup.pool == &pool_) bad_host_tier("the host pool must be another pool than the device's");
  if (setup.copier == nullptr) bad_host_tier("no page copier was given");
  if (!setup.policy) bad_host_tier("an eviction policy for the host is required");
  checked_state_bytes(*setup.policy, "RadixTree::add_host_tier");
  if (!(setup.pool->layout() == pool_.layout())) {
    bad_host_tier(fmt::format(
        "the host pool's layout ({}) differs from the device pool's ({}): pages must copy whole",
        setup.pool->layout().to_string(), pool_.layout().to_string()));
  }
  auto tier = std::make_unique<HostTier>(*setup.pool, *setup.copier, std::move(setup.policy),
                                         setup.limit_pages, setup.write);
  if (page_hashes()) tier->hashes.assign(tier->pool.capacity_pages(), PageHash{});
  host_tier_ = std::move(tier);
  extras_ = true;
}

const PagePool* RadixTree::host_pool() const { return host_tier_ ? &host_tier_->pool : nullptr; }
const EvictionPolicy* RadixTree::host_policy() const {
  return host_tier_ ? host_tier_->policy.get() : nullptr;
}
const WritePolicy* RadixTree::write_policy() const {
  return host_tier_ ? &host_tier_->write : nullptr;
}
uint64_t RadixTree::host_budget_pages() const {
  if (!host_tier_) return 0;
  const HostTier& h = *host_tier_;
  // Under write-back, host-only pages of locked nodes are about to be loaded and leave the host.
  return h.write.write_back() ? h.cached - h.pinned : h.cached;
}
uint64_t RadixTree::host_cached_pages() const { return host_tier_ ? host_tier_->cached : 0; }
uint64_t RadixTree::host_in_flight_pages() const {
  return host_tier_ ? host_tier_->in_flight.size() : 0;
}
std::vector<PageId> RadixTree::host_in_flight_page_ids() const {
  std::vector<PageId> pages;
  if (host_tier_) {
    for (const auto& [ticket, page] : host_tier_->in_flight) pages.push_back(page);
  }
  return pages;
}
uint64_t RadixTree::host_pinned_pages() const { return host_tier_ ? host_tier_->pinned : 0; }
bool RadixTree::host_indexes_page(PageId page) const {
  return host_tier_ && host_tier_->pool.contains(page) && host_tier_->indexed(page);
}

HostPart& RadixTree::host_part(RadixNode* node) {
  if (node->host_ != nullptr) return *node->host_;
  // One block: the host policy's state, the part, then its page array.
  // Edges only shrink: room for the pages the edge has now is room for good.
  const size_t before = host_tier_->state_bytes;
  const size_t bytes = before + sizeof(HostPart) + size_t{node->num_pages()} * sizeof(PageId);
  auto* memory = static_cast<std::byte*>(heap::allocate(bytes));  // throws std::bad_alloc
  ++stats_.heap_allocations;
  auto* host = new (memory + before) HostPart();
  host->node = node;
  host->page_ids = reinterpret_cast<PageId*>(memory + before + sizeof(HostPart));
  std::uninitialized_fill_n(host->page_ids, node->num_pages(), kInvalidPage);
  // The host policy meets the node now: it takes over the node's past.
  host_tier_->policy->adopt(*host, past(node));
  node->host_ = host;
  return *host;
}

// split()'s tier work: the device prefix is cut where the edge is, host pages go with their page,
// the upper part inherits the node's pending copies, and the policies learn the new tails.
void RadixTree::split_tiers(RadixNode* lower, RadixNode* upper, uint32_t upper_pages,
                            uint32_t device) {
  const uint32_t lower_pages = lower->pages;  // split() set the whole lower edge
  upper->pages = std::min(upper_pages, device);
  upper->host_only_ = upper_pages - upper->pages;
  lower->pages = device > upper_pages ? device - upper_pages : 0;
  lower->host_only_ = lower_pages - lower->pages;
  upper->device_children_ = lower->pages > 0 ? 1 : 0;
  if (HostPart* host = lower->host_) {
    std::memmove(host->page_ids, host->page_ids + upper_pages,
                 size_t{lower->num_pages()} * sizeof(PageId));
    host->count -= upper->host_->count;
    refresh_host_charge(lower);
  }
  // Where the cut falls inside the device prefix nothing changes for the policies; where it falls
  // at or below its end, the upper part may be the device tail now.
  sync_device_policy(lower);
  sync_device_policy(upper);
}

// With a host tier: `node` holds no page any more, on any tier; it leaves both policies.
void RadixTree::remove_tiered_leaf(RadixNode* node) {
  RadixNode* parent = node->parent_;
  if (policy_->contains(*node)) policy_->remove(*node);
  if (node->host_ != nullptr && host_tier_->policy->contains(*node->host_)) {
    host_tier_->policy->remove(*node->host_);
  }
  parent->children_.erase(node->first_page_hash_, node);
  destroy_node(node);
  sync_device_policy(parent);
  if (parent->host_ != nullptr) sync_host_policy(parent);
}

void RadixTree::sync_device_policy(RadixNode* node) {
  const bool want = device_evictable(node);
  if (want == policy_->contains(*node)) return;
  if (want) {
    policy_->add(*node);
  } else {
    policy_->remove(*node);
  }
}

void RadixTree::sync_host_policy(RadixNode* node) {
  if (node->host_ == nullptr) return;
  EvictionPolicy& policy = *host_tier_->policy;
  refresh_host_charge(node);
  const bool want = host_evictable(node);
  if (want == policy.contains(*node->host_)) return;
  if (want) {
    policy.add(*node->host_);
  } else {
    policy.remove(*node->host_);
  }
}

// The host entry is charged with the node's host-only tail, which starts below its device pages.
void RadixTree::refresh_host_charge(RadixNode* node) {
  EvictionEntry& entry = *node->host_;
  entry.pages = node->host_only_;
  entry.prefix_pages = node->prefix_pages + node->pages;
}

// Keeps the parent's count of children holding device pages, and its device policy membership.
void RadixTree::device_count_changed(RadixNode* node, uint32_t before) {
  if ((before == 0) == (node->pages == 0)) return;
  RadixNode* parent = node->parent_;
  if (node->pages > 0) {
    ++parent->device_children_;
  } else {
    --parent->device_children_;
  }
  sync_device_policy(parent);
}

uint64_t RadixTree::host_room() const {
  const HostTier& h = *host_tier_;
  const uint64_t counted = host_budget_pages();
  const uint64_t budget_room = h.limit_pages > counted ? h.limit_pages - counted : 0;
  return std::min<uint64_t>(budget_room, h.pool.free_pages());
}

uint64_t RadixTree::make_host_room(uint64_t n) {
  HostTier& h = *host_tier_;
  retire_copies();
  uint64_t room = host_room();
  if (room < n && h.pool.free_pages() < n && !h.in_flight.empty()) {
    // Pages still being read by loads hold the pool: they are free as soon as those finish.
    h.copier.wait(h.in_flight.back().first);
    retire_copies();
    room = host_room();
  }
  if (room < n) {
    evict_host_pages(n - room);
    room = host_room();
  }
  return std::min(room, n);
}

void RadixTree::wait_node_copies(RadixNode* node) {
  HostPart* host = node->host_;
  if (host == nullptr) return;
  for (CopyTicket* ticket : {&host->load_ticket, &host->write_ticket}) {
    if (*ticket == 0) continue;
    if (!host_tier_->copier.done(*ticket)) host_tier_->copier.wait(*ticket);
    *ticket = 0;
  }
}

void RadixTree::release_host_page(RadixNode* node, uint32_t i) {
  HostTier& h = *host_tier_;
  HostPart& host = *node->host_;
  const PageId page = host.page_ids[i];
  host.page_ids[i] = kInvalidPage;
  --host.count;
  h.indexed(page) = false;
  --h.cached;
  count_host_pages(node, -1);
  h.pool.release(page);
}

void RadixTree::back_up(RadixNode* node) {
  HostTier& h = *host_tier_;
  uint32_t missing = node->pages;
  if (node->host_ != nullptr) missing -= node->host_->count - node->host_only_;
  if (missing == 0) return;
  HostPart* host = nullptr;
  try {
    host = &host_part(node);
  } catch (const std::bad_alloc&) {
    stats_.skipped_writes += missing;  // a copy is an optimisation: no memory, no copy
    return;
  }
  uint64_t room = make_host_room(missing);
  std::vector<PageId>& fresh = h.fresh;
  fresh.clear();
  if (!h.pool.allocate(static_cast<uint32_t>(room), fresh)) room = 0;  // room <= free pages
  h.transfers.clear();
  for (uint32_t i = 0, used = 0; i < node->pages; ++i) {
    if (host->page_ids[i] != kInvalidPage) continue;
    if (used == room) {
      ++stats_.skipped_writes;
      continue;
    }
    const PageId page = fresh[used++];
    host->page_ids[i] = page;
    ++host->count;
    h.indexed(page) = true;
    ++h.cached;
    if (page_hashes()) h.hash(page) = device_hash(node->page_array()[i]);
    h.transfers.push_back({node->page_array()[i], page});
    if (events_) emit_stored(Tier::kHost, node, i, 1);
  }
  if (h.transfers.empty()) return;
  count_host_pages(node, static_cast<int64_t>(h.transfers.size()));  // one walk to the root
  host->write_ticket = h.last_ticket = h.copier.copy(pool_, h.pool, h.transfers);
  stats_.written_pages += h.transfers.size();
}

void RadixTree::back_up_hot_path(RadixNode* node) {
  const uint32_t hits = host_tier_->write.hits;
  for (RadixNode* x = node; !x->is_root(); x = x->parent_) {
    const uint32_t host_only = x->host_only_;
    const bool backed = x->host_ != nullptr && x->host_->count - host_only == x->pages;
    if (past(x).hits >= hits && x->pages > 0 && !backed) back_up(x);
  }
}

namespace {

// The nodes of the path ending at `end` that hold host-only pages, top-down: by invariant 1 they
// are the bottom of the path. Returns how many host-only pages they hold.
uint32_t host_run(RadixNode* end, std::vector<RadixNode*>& run) {
  run.clear();
  uint32_t pages = 0;
  for (RadixNode* x = end; !x->is_root() && x->device_pages() < x->num_pages(); x = x->parent()) {
    run.push_back(x);
    pages += x->num_pages() - x->device_pages();
  }
  std::reverse(run.begin(), run.end());
  return pages;
}

}  // namespace

uint32_t RadixTree::promote_host_run(RadixNode* end, std::span<const PageId> device_pages,
                                     CopyTicket ticket) {
  HostTier& h = *host_tier_;
  std::vector<RadixNode*> run;
  host_run(end, run);
  uint32_t k = 0;
  for (RadixNode* x : run) {
    HostPart& host = *x->host_;
    const uint32_t before = x->pages;
    const uint32_t n = x->num_pages() - before;
    for (uint32_t i = before; i < x->num_pages(); ++i) {
      const PageId page = device_pages[k++];
      x->page_array()[i] = page;
      pool_.retain(page);
      if (page_hashes()) device_hash(page) = h.hash(host.page_ids[i]);
    }
    x->pages += x->host_only_;
    x->host_only_ = 0;
    cached_pages_ += n;
    count_pages(x, n);
    if (x->lock_count_ > 0) {
      protected_pages_ += n;
      h.pinned -= n;
    }
    if (events_) emit_stored(Tier::kDevice, x, before, n);
    if (h.write.write_back()) {
      // The host copies leave the trie: at once, or when the load reading them is done.
      for (uint32_t i = before; i < x->num_pages(); ++i) {
        if (events_) emit_removed(Tier::kHost, x, i, RemovalReason::kPromoted);
        if (ticket == 0) {
          release_host_page(x, i);
          continue;
        }
        h.in_flight.emplace_back(ticket, host.page_ids[i]);
        h.indexed(host.page_ids[i]) = false;
        host.page_ids[i] = kInvalidPage;
        --host.count;
        --h.cached;
        count_host_pages(x, -1);
      }
    }
    if (ticket != 0) host.load_ticket = ticket;
    device_count_changed(x, before);
    sync_device_policy(x);
    sync_host_policy(x);
  }
  return k;
}

CopyTicket RadixTree::load(RadixNode* end, std::span<const PageId> device_pages) {
  check_node(end, "load");
  if (end->lock_count_ == 0) {
    throw std::invalid_argument("RadixTree::load: the match's end node must be locked");
  }
  std::vector<RadixNode*> run;
  const uint32_t wanted = host_tier_ ? host_run(end, run) : 0;
  if (device_pages.size() != wanted) {
    throw std::invalid_argument(fmt::format(
        "RadixTree::load: {} device pages were given for {} host-only pages on the path",
        device_pages.size(), wanted));
  }
  if (wanted == 0) return 0;
  claim_pages(device_pages, 0, "load");
  HostTier& h = *host_tier_;
  h.transfers.clear();
  uint32_t k = 0;
  for (const RadixNode* x : run) {
    for (uint32_t i = x->pages; i < x->num_pages(); ++i) {
      h.transfers.push_back({x->host_->page_ids[i], device_pages[k++]});
    }
  }
  CopyTicket ticket;
  try {
    ticket = h.copier.copy(h.pool, pool_, h.transfers);
  } catch (...) {
    for (PageId page : device_pages) marked(page) = false;
    throw;
  }
  h.last_ticket = h.last_load = ticket;
  promote_host_run(end, device_pages, ticket);
  stats_.loaded_pages += wanted;
  return ticket;
}

CopyTicket RadixTree::pending_load(const RadixNode* end) {
  if (!host_tier_ || host_tier_->last_load == 0) return 0;
  PageCopier& copier = host_tier_->copier;
  if (copier.done(host_tier_->last_load)) {
    host_tier_->last_load = 0;
    return 0;
  }
  CopyTicket latest = 0;
  for (const RadixNode* x = end; !x->is_root(); x = x->parent_) {
    if (x->host_ == nullptr || x->host_->load_ticket == 0) continue;
    if (copier.done(x->host_->load_ticket)) {
      x->host_->load_ticket = 0;
    } else {
      latest = std::max(latest, x->host_->load_ticket);
    }
  }
  return latest;
}

bool RadixTree::copy_done(CopyTicket ticket) {
  return ticket == 0 || !host_tier_ || host_tier_->copier.done(ticket);
}

void RadixTree::wait_copy(CopyTicket ticket) {
  if (ticket != 0 && host_tier_) host_tier_->copier.wait(ticket);
  if (host_tier_) retire_copies();
}

uint64_t RadixTree::retire_copies() {
  if (!host_tier_) return 0;
  HostTier& h = *host_tier_;
  uint64_t retired = 0;
  while (!h.in_flight.empty() && h.copier.done(h.in_flight.front().first)) {
    h.pool.release(h.in_flight.front().second);
    h.in_flight.pop_front();
    ++retired;
  }
  return retired;
}

uint64_t RadixTree::evict_tiered(uint64_t n, std::vector<PageId>* evicted) {
  if (!host_tier_) {  // events without a host tier: every page leaves the trie from the device
    uint64_t released = 0;
    for (; released < n; ++released) {
      EvictionEntry* entry = policy_->victim();
      if (entry == nullptr) break;
      auto* x = static_cast<RadixNode*>(entry);
      if (evicted != nullptr) evicted->push_back(x->page_array()[x->pages - 1]);
      stats_.evicted_nodes += drop_from(x, x->pages - 1, RemovalReason::kEvicted).nodes;
    }
    stats_.evicted_pages += released;
    return released;
  }
  HostTier& h = *host_tier_;
  retire_copies();
  // Under write-back every evicted page needs a host page. Room is made for all of them first;
  // where the host cannot make enough, the oldest victims leave the trie and the newest go to the
  // host, as one LRU cache over both tiers would keep the newest.
  const uint64_t want = std::min(n, evictable_pages());
  uint64_t room = h.write.write_back() ? make_host_room(want) : 0;
  uint64_t to_drop = h.write.write_back() ? want - room : 0;
  std::vector<PageId>& fresh = h.fresh;
  fresh.clear();
  if (room > 0 && !h.pool.allocate(static_cast<uint32_t>(room), fresh)) room = 0;
  h.transfers.clear();
  h.sources.clear();
  uint64_t released = 0, used = 0;
  for (; released < n; ++released) {
    EvictionEntry* entry = policy_->victim();
    if (entry == nullptr) break;
    auto* x = static_cast<RadixNode*>(entry);
    wait_node_copies(x);
    const uint32_t i = x->pages - 1;
    const PageId page = x->page_array()[i];
    if (evicted != nullptr) evicted->push_back(page);
    bool on_host = x->host_ != nullptr && x->host_->page_ids[i] != kInvalidPage;
    bool written = false;
    if (!on_host && to_drop == 0 && used < fresh.size()) {
      try {
        HostPart& host = host_part(x);
        const PageId copy = fresh[used++];
        host.page_ids[i] = copy;
        ++host.count;
        h.indexed(copy) = true;
        ++h.cached;
        count_host_pages(x, 1);
        if (page_hashes()) h.hash(copy) = device_hash(page);
        h.transfers.push_back({page, copy});
        h.sources.push_back(page);  // released once the copy is done
        if (events_) emit_stored(Tier::kHost, x, i, 1);
        on_host = written = true;
      } catch (const std::bad_alloc&) {
        // No memory for the node's host part: the page leaves the trie instead.
      }
    }
    if (!on_host) {
      if (to_drop > 0) --to_drop;
      // A drop may take host pages of this batch (below x): their copies must be done first.
      // (Drops come before writes, except when a host part could not be allocated.)
      if (!h.transfers.empty()) finish_write_back();
      const DropResult dropped = drop_from(x, i, RemovalReason::kEvicted);
      stats_.dropped_pages += dropped.pages;
      stats_.evicted_nodes += dropped.nodes;
      continue;
    }
    if (events_) emit_removed(Tier::kDevice, x, i, RemovalReason::kDemoted);
    if (!written) pool_.release(page);
    marked(page) = false;
    x->page_array()[i] = kInvalidPage;
    const uint32_t before = x->pages--;
    ++x->host_only_;
    --cached_pages_;
    count_pages(x, -1);
    sync_device_policy(x);
    sync_host_policy(x);
    device_count_changed(x, before);
  }
  // Host pages set aside but not used (fewer victims than expected) go back.
  if (used < fresh.size()) h.pool.release(std::span<const PageId>(fresh).subspan(used));
  if (!h.transfers.empty()) finish_write_back();
  stats_.evicted_pages += released;
  return released;
}

// Copies the batch of write-backs to the host, waits, and releases their device pages.
void RadixTree::finish_write_back() {
  HostTier& h = *host_tier_;
  h.last_ticket = h.copier.copy(pool_, h.pool, h.transfers);
  h.copier.wait(h.last_ticket);
  pool_.release(h.sources);
  stats_.written_pages += h.transfers.size();
  h.transfers.clear();
  h.sources.clear();
}

RadixTree::DropResult RadixTree::drop_from(RadixNode* node, uint32_t first, RemovalReason reason) {
  DropResult result;
  // Releases edge pages [from, edge) of x on both tiers, telling the events which tier each page
  // leaves the trie from (the lowest that holds it). `parent`: the hash of the page before.
  const auto release_pages = [&](RadixNode* x, uint32_t from, PageHash parent) {
    wait_node_copies(x);
    for (uint32_t i = from; i < x->num_pages(); ++i) {
      const bool on_host = x->host_ != nullptr && x->host_->page_ids[i] != kInvalidPage;
      if (events_) parent = emit_dropping(on_host ? Tier::kHost : Tier::kDevice, x, i, parent);
      if (i < x->pages) {
        if (events_) emit_removed(Tier::kDevice, x, i, reason);
        marked(x->page_array()[i]) = false;
        pool_.release(x->page_array()[i]);
        x->page_array()[i] = kInvalidPage;
        --cached_pages_;
        count_pages(x, -1);
      }
      if (on_host) {
        if (events_) emit_removed(Tier::kHost, x, i, reason);
        release_host_page(x, i);
      }
      ++result.pages;
    }
  };
  // Everything below `node` first (host-only, since the caller evicts node's device tail or
  // erases a leaf), each node with the hash of the page before its first (its parent's last).
  // The nodes are destroyed after the walk: releasing a page counts it against its namespace,
  // which walks the parent pointers up to the root.
  const auto last_hash = [&](const RadixNode* x) {
    return events_ ? page_hash(x, x->num_pages() - 1) : PageHash{};
  };
  std::vector<std::pair<RadixNode*, PageHash>> stack;
  std::vector<RadixNode*> dropped;
  node->children_.for_each(
      [&](uint64_t, RadixNode* child) { stack.emplace_back(child, last_hash(node)); });
  node->children_.clear();
  node->device_children_ = 0;
  while (!stack.empty()) {
    // Plain variables: clang (the fuzz build) will not let the lambda below capture a binding.
    RadixNode* const x = stack.back().first;
    const PageHash parent = stack.back().second;
    stack.pop_back();
    x->children_.for_each(
        [&](uint64_t, RadixNode* child) { stack.emplace_back(child, last_hash(x)); });
    release_pages(x, 0, parent);
    if (policy_->contains(*x)) policy_->remove(*x);
    if (x->host_ != nullptr && host_tier_->policy->contains(*x->host_)) {
      host_tier_->policy->remove(*x->host_);
    }
    dropped.push_back(x);
    ++result.nodes;
  }
  for (RadixNode* x : dropped) destroy_node(x);
  const uint32_t before = node->pages;
  release_pages(node, first, events_ ? parent_hash(node, first) : PageHash{});
  node->pages = std::min(node->pages, first);
  node->host_only_ = first - node->pages;
  if (first == 0) {
    // As a plain tree removes a leaf: the node leaves the policies before its parent is offered.
    if (before > 0) --node->parent_->device_children_;
    remove_tiered_leaf(node);
    ++result.nodes;
  } else {
    sync_device_policy(node);
    sync_host_policy(node);
    device_count_changed(node, before);
  }
  return result;
}

void RadixTree::evict_one_host_page(RadixNode* leaf) {
  wait_node_copies(leaf);
  const uint32_t tail = leaf->num_pages() - 1;  // on the host only: the leaf is host-evictable
  if (events_) {
    emit_dropping(Tier::kHost, leaf, tail, parent_hash(leaf, tail));
    emit_removed(Tier::kHost, leaf, tail, RemovalReason::kEvicted);
  }
  release_host_page(leaf, tail);
  --leaf->host_only_;
  ++stats_.host_evicted_pages;
  if (leaf->num_pages() == 0) {
    remove_tiered_leaf(leaf);
    ++stats_.evicted_nodes;
    return;
  }
  sync_host_policy(leaf);
}

uint64_t RadixTree::evict_host_pages(uint64_t n) {
  if (!host_tier_) return 0;
  uint64_t evicted = 0;
  for (; evicted < n; ++evicted) {
    EvictionEntry* entry = host_tier_->policy->victim();
    if (entry == nullptr) break;
    evict_one_host_page(static_cast<HostPart*>(entry)->node);  // it links only HostParts
  }
  return evicted;
}

}  // namespace radixkv
