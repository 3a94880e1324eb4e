#include "router/block_index.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "events/block_hash.h"

namespace radixkv::router {

namespace {

// A worker's map may hold this many engine hashes past twice its held blocks before the aliases
// (engine hashes naming content the worker no longer holds) are swept out.
constexpr size_t kAliasSlack = 1024;
constexpr size_t kNone = ~size_t{0};

}  // namespace

size_t BlockIndex::holder_of(const Entry& entry, WorkerId worker) {
  for (size_t i = 0; i < entry.holders.size(); ++i) {
    if (entry.holders[i].worker == worker) return i;
  }
  return kNone;
}

BlockIndex::BlockIndex(size_t max_pages, TierWeights weights)
    : max_pages_(max_pages), weights_(std::move(weights)) {
  if (max_pages == 0) throw std::invalid_argument("the router index needs room for >= 1 page");
}

WorkerId BlockIndex::add_worker(std::string_view name) {
  if (name.empty()) throw std::invalid_argument("a worker needs a name");
  if (const std::optional<WorkerId> known = find_worker(name)) return *known;
  workers_.emplace_back();
  workers_.back().name = std::string(name);
  return static_cast<WorkerId>(workers_.size() - 1);
}

std::optional<WorkerId> BlockIndex::find_worker(std::string_view name) const {
  for (WorkerId w = 0; w < workers_.size(); ++w) {
    if (workers_[w].name == name) return w;
  }
  return std::nullopt;
}

const std::string& BlockIndex::worker_name(WorkerId worker) const {
  check_worker(worker);
  return workers_[worker].name;
}

void BlockIndex::check_worker(WorkerId worker) const {
  if (worker >= workers_.size()) {
    throw std::invalid_argument("unknown worker id " + std::to_string(worker) + " (" +
                                std::to_string(workers_.size()) + " workers)");
  }
}

std::optional<uint32_t> BlockIndex::location_bit(Worker& w,
                                                 const std::optional<std::string>& medium,
                                                 const std::optional<int64_t>& group) {
  for (size_t i = 0; i < w.locations.size(); ++i) {
    if (w.locations[i].medium == medium && w.locations[i].group == group) return 1u << i;
  }
  if (w.locations.size() == kMaxLocations) return std::nullopt;
  w.locations.push_back({medium, group, weights_.weight(medium.value_or(""))});
  return 1u << (w.locations.size() - 1);
}

void BlockIndex::apply(WorkerId worker, const events::EventBatch& batch) {
  for (const events::KvEvent& event : batch.events) apply(worker, event);
}

void BlockIndex::apply(WorkerId worker, const events::KvEvent& event) {
  for (size_t at = 0; at != kDone;) at = apply_part(worker, event, at, ~size_t{0});
}

size_t BlockIndex::apply_part(WorkerId worker, const events::KvEvent& event, size_t from,
                              size_t max_blocks) {
  check_worker(worker);
  if (const auto* stored = std::get_if<events::BlockStored>(&event)) {
    const size_t n = stored->block_hashes.size();
    if (from == 0 && n > max_pages_) {  // only its last max_pages blocks could stay: none do
      refused_ += n;
      return kDone;
    }
    const size_t end = from + std::min(max_blocks, n - std::min(from, n));
    store_part(worker, *stored, from, end);
    return end >= n ? kDone : end;
  }
  if (const auto* removed = std::get_if<events::BlockRemoved>(&event)) {
    const size_t n = removed->block_hashes.size();
    const size_t end = from + std::min(max_blocks, n - std::min(from, n));
    Worker& w = workers_[worker];
    for (size_t i = 0; i < w.locations.size(); ++i) {
      if (w.locations[i].medium == removed->medium && w.locations[i].group == removed->group_idx) {
        for (size_t b = from; b < end; ++b) remove(worker, 1u << i, removed->block_hashes[b]);
      }
    }
    return end >= n ? kDone : end;
  }
  clear_worker(worker);
  return kDone;
}

void BlockIndex::store_part(WorkerId worker, const events::BlockStored& stored, size_t from,
                            size_t end) {
  Worker& w = workers_[worker];
  const std::optional<uint32_t> bit = location_bit(w, stored.medium, stored.group_idx);
  if (!bit) {  // a 33rd location of this worker
    refused_ += end - from;
    return;
  }
  const size_t n = stored.block_hashes.size();
  const uint32_t block_tokens = stored.block_size;
  const bool has_tokens = block_tokens > 0 && stored.token_ids.size() == n * block_tokens;
  // Without extra_keys, a LoRA name alone keys every block, as vLLM builds its extra keys.
  const std::optional<events::ExtraKeys> lora_keys =
      stored.lora_name && !stored.extra_keys
          ? request_extra_keys({.lora_name = stored.lora_name}, false)
          : std::nullopt;

  for (size_t b = from; b < end; ++b) {
    const BlockHash engine = stored.block_hashes[b];
    const std::optional<BlockHash> parent_engine =
        b == 0 ? stored.parent_block_hash : std::optional(stored.block_hashes[b - 1]);
    const events::ExtraKeys* extra =
        stored.extra_keys ? ((*stored.extra_keys)[b] ? &*(*stored.extra_keys)[b] : nullptr)
                          : (lora_keys ? &*lora_keys : nullptr);

    // The chain this block continues: the namespace's seed at a root, its parent's otherwise.
    std::optional<PageHash> from_hash;
    std::optional<BlockKey> parent_key;
    if (!parent_engine) {
      const std::optional<Namespace> ns =
          extra != nullptr ? events::namespace_from_extra_keys(*extra) : std::nullopt;
      if (ns) extra = nullptr;  // radixkv's namespace seeds the chain instead
      from_hash = namespace_seed(ns.value_or(0));
    } else if (const auto up = w.blocks.find(*parent_engine);
               up != w.blocks.end() && !up->second.opaque) {
      from_hash = up->second.chain;
      parent_key = key_of(up->second.chain);
    }
    bool content = has_tokens && from_hash;
    if (content) {
      tokens_.clear();
      for (size_t t = b * block_tokens; t < (b + 1) * block_tokens; ++t) {
        const int64_t id = stored.token_ids[t];
        if (id < std::numeric_limits<TokenId>::min() || id > std::numeric_limits<TokenId>::max()) {
          content = false;
          break;
        }
        tokens_.push_back(static_cast<TokenId>(id));
      }
    }
    const Named named = content ? Named{content_hash(*from_hash, tokens_, extra), false}
                                : Named{PageHash{engine, 0}, true};
    store(worker, *bit, engine, named, content ? block_tokens : 0,
          content ? parent_key : std::nullopt);
  }
}

void BlockIndex::store(WorkerId worker, uint32_t location, BlockHash engine, const Named& named,
                       uint32_t block_tokens, std::optional<BlockKey> parent) {
  Worker& w = workers_[worker];
  const BlockKey key = key_of(named.chain);
  if (const auto known = w.blocks.find(engine);
      known != w.blocks.end() && key_of(known->second.chain) != key) {
    // The engine hash names other content now: what it named is gone from this worker.
    const BlockKey old = key_of(known->second.chain);
    w.blocks.erase(known);
    if (const auto e = entries_.find(old); e != entries_.end()) {
      if (const size_t h = holder_of(e->second, worker); h != kNone) {
        drop_holder(old, e->second, h);
      }
    }
  }
  Entry& entry = entries_[key];
  if (!entry.present()) {
    // The entry becomes present: link it under its parent, when that one is present.
    entry.has_parent = false;
    if (parent && *parent != key) {
      const auto up = entries_.find(*parent);
      if (up != entries_.end() && up->second.present()) {
        if (up->second.children == 0) leaves_.erase({up->second.touched, up->first});
        ++up->second.children;
        entry.parent = *parent;
        entry.has_parent = true;
      }
    }
    entry.block_tokens = block_tokens;
    ++present_;
    entry.touched = ++tick_;
    if (entry.children == 0) leaves_.insert({entry.touched, key});
  } else {
    touch(key, entry);
  }
  if (const size_t h = holder_of(entry, worker); h != kNone) {
    entry.holders[h].locations |= location;
    entry.holders[h].engine = engine;
  } else {
    entry.holders.push_back({worker, location, engine});
    ++w.held;
    count_size(entry.block_tokens, +1);
  }
  w.blocks[engine] = named;
  if (w.blocks.size() > 2 * w.held + kAliasSlack) sweep_aliases(w);
  evict_to_bound(key);
}

void BlockIndex::remove(WorkerId worker, uint32_t locations, BlockHash engine) {
  Worker& w = workers_[worker];
  const auto known = w.blocks.find(engine);
  if (known == w.blocks.end()) return;
  const BlockKey key = key_of(known->second.chain);
  const auto e = entries_.find(key);
  const size_t h = e == entries_.end() ? kNone : holder_of(e->second, worker);
  if (h == kNone) {  // an alias of content the worker no longer holds
    w.blocks.erase(known);
    return;
  }
  Holder& holder = e->second.holders[h];
  holder.locations &= ~locations;
  if (holder.locations != 0) return;
  drop_holder(key, e->second, h);
  w.blocks.erase(engine);  // when it was an alias, the holder's own name went with it
}

// Forgets holder `index` of `entry`; makes the entry absent when it was the last. `entry` may be
// gone afterwards.
void BlockIndex::drop_holder(BlockKey key, Entry& entry, size_t index) {
  const Holder h = entry.holders[index];
  Worker& w = workers_[h.worker];
  if (const auto m = w.blocks.find(h.engine);
      m != w.blocks.end() && key_of(m->second.chain) == key) {
    w.blocks.erase(m);
  }
  --w.held;
  count_size(entry.block_tokens, -1);
  entry.holders.erase(entry.holders.begin() + static_cast<std::ptrdiff_t>(index));
  if (!entry.present()) make_absent(key);
}

// `key` just lost its last holder: unlink it, and forget it unless present entries name it.
void BlockIndex::make_absent(BlockKey key) {
  Entry& entry = entries_.at(key);
  --present_;
  if (entry.children == 0) leaves_.erase({entry.touched, key});
  if (entry.has_parent) {
    const auto up = entries_.find(entry.parent);
    if (--up->second.children == 0) {
      if (up->second.present()) {
        leaves_.insert({up->second.touched, up->first});
      } else {
        entries_.erase(up);
      }
    }
  }
  if (entry.children == 0) entries_.erase(key);
}

void BlockIndex::touch(BlockKey key, Entry& entry) {
  const bool leaf = entry.children == 0;
  if (leaf) leaves_.erase({entry.touched, key});
  entry.touched = ++tick_;
  if (leaf) leaves_.insert({entry.touched, key});
}

void BlockIndex::evict_to_bound(BlockKey just_stored) {
  while (present_ > max_pages_) {
    // No leaf left means only a parent cycle (a key collision): the block just stored goes.
    const BlockKey victim = leaves_.empty() ? just_stored : leaves_.begin()->second;
    Entry& entry = entries_.at(victim);
    if (!entry.present()) break;  // cannot happen: a store adds one entry, just_stored is present
    while (entry.holders.size() > 1) drop_holder(victim, entry, entry.holders.size() - 1);
    drop_holder(victim, entry, 0);  // the last: the entry becomes absent (and may go)
    ++evicted_;
  }
}

void BlockIndex::count_size(uint32_t block_tokens, int delta) {
  if (block_tokens == 0) return;  // opaque blocks have no size to match by tokens
  size_t& count = size_counts_[block_tokens];
  if (count > 0) size_order_.erase({count, block_tokens});
  count += static_cast<size_t>(delta);
  if (count > 0) {
    size_order_.insert({count, block_tokens});
  } else {
    size_counts_.erase(block_tokens);
  }
}

void BlockIndex::sweep_aliases(Worker& w) {
  const WorkerId worker = static_cast<WorkerId>(&w - workers_.data());
  std::erase_if(w.blocks, [&](const auto& named) {
    const auto e = entries_.find(key_of(named.second.chain));
    return e == entries_.end() || holder_of(e->second, worker) == kNone;
  });
}

void BlockIndex::clear_worker(WorkerId worker) {
  check_worker(worker);
  Worker& w = workers_[worker];
  std::vector<BlockKey> keys;
  keys.reserve(w.blocks.size());
  for (const auto& [engine, named] : w.blocks) keys.push_back(key_of(named.chain));
  for (BlockKey key : keys) {
    const auto e = entries_.find(key);
    if (e == entries_.end()) continue;
    if (const size_t h = holder_of(e->second, worker); h != kNone) drop_holder(key, e->second, h);
  }
  w.blocks.clear();
  w.locations.clear();  // its registry starts over: what it named before means nothing now
}

std::string BlockIndex::location_name(const Location& location) {
  std::string name = location.medium.value_or("");
  if (location.group) name.append("#").append(std::to_string(*location.group));
  return name;
}

double BlockIndex::best_weight(const Worker& w, uint32_t locations) const {
  double best = 0;
  for (size_t i = 0; i < w.locations.size(); ++i) {
    if (locations & (1u << i)) best = std::max(best, w.locations[i].weight);
  }
  return best;
}

// The leading `keys` each worker holds: calls on_match(i, holder) for each worker's i-th match,
// and touches each entry matched by at least one worker.
struct BlockIndex::Walk {
  template <typename OnMatch>
  static void run(BlockIndex& index, std::span<const BlockKey> keys, OnMatch on_match) {
    std::vector<size_t> matched(index.workers_.size(), 0);
    for (size_t i = 0; i < keys.size(); ++i) {
      const auto found = index.entries_.find(keys[i]);
      if (found == index.entries_.end() || !found->second.present()) break;
      bool any = false;
      for (const Holder& holder : found->second.holders) {
        if (matched[holder.worker] != i) continue;
        matched[holder.worker] = i + 1;
        on_match(i, holder);
        any = true;
      }
      if (!any) break;
      index.touch(found->first, found->second);
    }
  }
};

std::vector<uint32_t> BlockIndex::overlaps(std::span<const BlockKey> keys) {
  std::vector<uint32_t> matched(workers_.size(), 0);
  Walk::run(*this, keys,
            [&](size_t i, const Holder& h) { matched[h.worker] = static_cast<uint32_t>(i + 1); });
  return matched;
}

std::vector<Overlap> BlockIndex::match_hashes(std::span<const BlockHash> hashes) {
  std::vector<Overlap> out(workers_.size());
  std::vector<std::vector<BlockKey>> matched_keys(workers_.size());
  size_t longest = 0;
  for (WorkerId w = 0; w < workers_.size(); ++w) {
    const Worker& worker = workers_[w];
    for (BlockHash hash : hashes) {
      const auto named = worker.blocks.find(hash);
      if (named == worker.blocks.end()) break;
      const BlockKey key = key_of(named->second.chain);
      const auto e = entries_.find(key);
      const size_t h = e == entries_.end() ? kNone : holder_of(e->second, w);
      if (h == kNone) break;
      out[w].length += 1;
      out[w].weighted += best_weight(worker, e->second.holders[h].locations);
      matched_keys[w].push_back(key);
    }
    longest = std::max(longest, matched_keys[w].size());
  }
  // Touch what was matched, position by position, each entry once.
  std::vector<BlockKey> touched;
  for (size_t i = 0; i < longest; ++i) {
    touched.clear();
    for (const auto& keys : matched_keys) {
      if (i >= keys.size() || std::find(touched.begin(), touched.end(), keys[i]) != touched.end()) {
        continue;
      }
      touched.push_back(keys[i]);
      touch(keys[i], entries_.at(keys[i]));
    }
  }
  return out;
}

std::vector<Overlap> BlockIndex::match_tokens(const KeyNamespace& ns,
                                              std::span<const TokenId> tokens) {
  struct SizeMatch {
    uint32_t block_tokens;
    std::vector<double> weights;  // of the matched blocks, in order
  };
  std::vector<std::vector<SizeMatch>> by_worker(workers_.size());
  std::vector<uint32_t> sizes;
  for (const auto& [count, block_tokens] : size_order_) {
    if (sizes.size() == kMaxMatchedSizes) break;
    sizes.push_back(block_tokens);
  }
  for (uint32_t block_tokens : sizes) {
    if (block_tokens > tokens.size()) continue;
    const std::vector<BlockKey> keys = request_keys(ns, tokens, block_tokens);
    std::vector<std::vector<double>> weights(workers_.size());
    Walk::run(*this, keys, [&](size_t, const Holder& h) {
      weights[h.worker].push_back(best_weight(workers_[h.worker], h.locations));
    });
    for (WorkerId w = 0; w < workers_.size(); ++w) {
      if (!weights[w].empty()) by_worker[w].push_back({block_tokens, std::move(weights[w])});
    }
  }
  std::vector<Overlap> out(workers_.size());
  std::vector<size_t> ends;
  for (WorkerId w = 0; w < workers_.size(); ++w) {
    // Token by token, the best weight any block size gives: between consecutive block ends of
    // every size, each size's match is one block (or over).
    ends.clear();
    for (const SizeMatch& m : by_worker[w]) {
      for (size_t k = 1; k <= m.weights.size(); ++k) ends.push_back(k * m.block_tokens);
    }
    std::sort(ends.begin(), ends.end());
    ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
    size_t start = 0;
    for (size_t end : ends) {
      double best = 0;
      for (const SizeMatch& m : by_worker[w]) {
        if (end <= m.weights.size() * m.block_tokens) {
          best = std::max(best, m.weights[start / m.block_tokens]);
        }
      }
      out[w].weighted += best * static_cast<double>(end - start);
      start = end;
    }
    out[w].length = static_cast<double>(start);
  }
  return out;
}

size_t BlockIndex::pages_of(WorkerId worker) const {
  check_worker(worker);
  return workers_[worker].held;
}

std::vector<std::pair<uint32_t, size_t>> BlockIndex::block_sizes() const {
  std::vector<std::pair<uint32_t, size_t>> sizes;
  for (const auto& [count, block_tokens] : size_order_) sizes.emplace_back(block_tokens, count);
  return sizes;
}

std::vector<BlockHolding> BlockIndex::holdings(WorkerId worker) const {
  check_worker(worker);
  const Worker& w = workers_[worker];
  std::vector<BlockHolding> out;
  out.reserve(w.held);
  for (const auto& [engine, named] : w.blocks) {
    const auto e = entries_.find(key_of(named.chain));
    const size_t h = e == entries_.end() ? kNone : holder_of(e->second, worker);
    if (h == kNone) continue;
    BlockHolding holding{engine, {}};
    for (size_t bit = 0; bit < w.locations.size(); ++bit) {
      if (!(e->second.holders[h].locations & (1u << bit))) continue;
      holding.mediums.push_back(location_name(w.locations[bit]));
    }
    std::sort(holding.mediums.begin(), holding.mediums.end());
    out.push_back(std::move(holding));
  }
  std::sort(out.begin(), out.end(),
            [](const BlockHolding& a, const BlockHolding& b) { return a.hash < b.hash; });
  return out;
}

void BlockIndex::verify() const {
  auto broken = [](const std::string& what) { throw std::logic_error("BlockIndex: " + what); };
  size_t present = 0;
  std::unordered_map<BlockKey, uint32_t> children;
  std::vector<size_t> held(workers_.size(), 0);
  std::unordered_map<uint32_t, size_t> sizes;
  for (const auto& [key, entry] : entries_) {
    if (!entry.present()) {
      if (entry.children == 0) broken("an absent entry without children was kept");
      continue;
    }
    ++present;
    if (entry.has_parent) ++children[entry.parent];
    for (const Holder& holder : entry.holders) {
      if (holder.locations == 0) broken("a holder with no location");
      const Worker& w = workers_.at(holder.worker);
      if (w.locations.size() < kMaxLocations && holder.locations >> w.locations.size() != 0) {
        broken("a holder at an unknown location");
      }
      const auto named = w.blocks.find(holder.engine);
      if (named == w.blocks.end() || key_of(named->second.chain) != key) {
        broken("worker " + w.name + " does not name a block it holds");
      }
      ++held[holder.worker];
      if (entry.block_tokens != 0) ++sizes[entry.block_tokens];
    }
    const bool leaf = entry.children == 0;
    if (leaf != leaves_.contains({entry.touched, key})) broken("the leaf order is out of date");
  }
  for (const auto& [key, entry] : entries_) {
    const auto it = children.find(key);
    if (entry.children != (it == children.end() ? 0 : it->second)) broken("a wrong child count");
  }
  if (present != present_) broken("the present count is off");
  if (sizes != size_counts_ || size_order_.size() != size_counts_.size()) {
    broken("the block sizes are miscounted");
  }
  if (present_ > max_pages_) broken("over the page bound");
  size_t leaves = 0;
  for (const auto& [key, entry] : entries_) leaves += entry.present() && entry.children == 0;
  if (leaves != leaves_.size()) broken("the leaf order holds stale entries");
  for (WorkerId w = 0; w < workers_.size(); ++w) {
    if (held[w] != workers_[w].held) broken("worker " + workers_[w].name + " miscounts its blocks");
    if (workers_[w].blocks.size() > 2 * workers_[w].held + kAliasSlack) {
      broken("worker " + workers_[w].name + " keeps too many aliases");
    }
  }
}

}  // namespace radixkv::router
