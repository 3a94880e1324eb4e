// The documented semantics of router::BlockIndex (router/block_index.h), by brute force and without
// hashing: a block is named by its content spelled out — the namespace or "seed", then per block
// its extra keys (hex) and its tokens — or, when opaque, by "#" and its engine hash. Children,
// leaves, block sizes and aliases are found by scanning. Slow (every eviction scans every block
// twice), for tests with small bounds.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "events/block_hash.h"
#include "events/kv_event.h"
#include "router/block_index.h"

namespace radixkv::testing {

class IndexModel {
 public:
  using WorkerId = router::WorkerId;

  IndexModel(size_t max_pages, router::TierWeights weights = {})
      : max_pages_(max_pages), weights_(std::move(weights)) {}

  WorkerId add_worker() {
    workers_.emplace_back();
    return static_cast<WorkerId>(workers_.size() - 1);
  }

  void apply(WorkerId w, const events::EventBatch& batch) {
    for (const events::KvEvent& event : batch.events) {
      if (const auto* s = std::get_if<events::BlockStored>(&event)) {
        store(w, *s);
      } else if (const auto* r = std::get_if<events::BlockRemoved>(&event)) {
        const std::optional<size_t> loc = find_location(w, r->medium, r->group_idx);
        if (!loc) continue;
        for (uint64_t hash : r->block_hashes) remove(w, *loc, hash);
      } else {
        clear(w);
      }
    }
  }

  // The content spelled out for a request's tokens at `block_tokens`: what match_tokens walks.
  std::vector<std::string> request_ids(const router::KeyNamespace& ns,
                                       std::span<const TokenId> tokens,
                                       uint32_t block_tokens) const {
    std::vector<std::string> ids;
    std::string id = fmt::format("ns{}", ns.ns);
    for (size_t b = 0; (b + 1) * block_tokens <= tokens.size(); ++b) {
      const std::optional<events::ExtraKeys> extra = router::request_extra_keys(ns, b == 0);
      id = spell(id, extra ? &*extra : nullptr, tokens.subspan(b * block_tokens, block_tokens));
      ids.push_back(id);
    }
    return ids;
  }

  std::vector<router::Overlap> match_tokens(const router::KeyNamespace& ns,
                                            std::span<const TokenId> tokens) {
    std::vector<std::pair<uint32_t, size_t>> sizes = block_sizes();
    if (sizes.size() > router::BlockIndex::kMaxMatchedSizes) {
      sizes.resize(router::BlockIndex::kMaxMatchedSizes);
    }
    // Per worker, per token position: the best weight any size matched there.
    std::vector<std::vector<double>> best(workers_.size(), std::vector<double>(tokens.size(), -1));
    for (const auto& [size, count] : sizes) {
      if (size > tokens.size()) continue;
      const std::vector<std::string> ids = request_ids(ns, tokens, size);
      walk(ids, [&](size_t i, WorkerId w, const Holder& h) {
        for (size_t t = i * size; t < (i + 1) * size; ++t) {
          best[w][t] = std::max(best[w][t], weight_of(w, h.locations));
        }
      });
    }
    std::vector<router::Overlap> out(workers_.size());
    for (WorkerId w = 0; w < workers_.size(); ++w) {
      for (size_t t = 0; t < tokens.size() && best[w][t] >= 0; ++t) {
        out[w].length += 1;
        out[w].weighted += best[w][t];
      }
    }
    return out;
  }

  std::vector<router::Overlap> match_hashes(std::span<const uint64_t> hashes) {
    std::vector<router::Overlap> out(workers_.size());
    std::vector<std::vector<std::string>> matched(workers_.size());
    for (WorkerId w = 0; w < workers_.size(); ++w) {
      for (uint64_t hash : hashes) {
        const auto named = workers_[w].names.find(hash);
        if (named == workers_[w].names.end()) break;
        const auto block = blocks_.find(named->second.id);
        if (block == blocks_.end() || !block->second.holders.contains(w)) break;
        out[w].length += 1;
        out[w].weighted += weight_of(w, block->second.holders.at(w).locations);
        matched[w].push_back(named->second.id);
      }
    }
    for (size_t i = 0;; ++i) {
      std::set<std::string> touched;
      bool any = false;
      for (const auto& ids : matched) {
        if (i >= ids.size()) continue;
        any = true;
        if (touched.insert(ids[i]).second) blocks_.at(ids[i]).touched = ++tick_;
      }
      if (!any) break;
    }
    return out;
  }

  std::vector<std::pair<uint32_t, size_t>> block_sizes() const {
    std::map<uint32_t, size_t> counts;
    for (const auto& [id, block] : blocks_) {
      if (block.size != 0) counts[block.size] += block.holders.size();
    }
    std::vector<std::pair<uint32_t, size_t>> sizes(counts.begin(), counts.end());
    std::stable_sort(sizes.begin(), sizes.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    return sizes;
  }

  std::vector<router::BlockHolding> holdings(WorkerId w) const {
    std::vector<router::BlockHolding> out;
    for (const auto& [hash, named] : workers_[w].names) {
      const auto block = blocks_.find(named.id);
      if (block == blocks_.end() || !block->second.holders.contains(w)) continue;
      router::BlockHolding h{hash, {}};
      for (size_t loc : block->second.holders.at(w).locations) {
        const Location& l = workers_[w].locations[loc];
        h.mediums.push_back(l.medium.value_or("") +
                            (l.group ? fmt::format("#{}", *l.group) : std::string()));
      }
      std::sort(h.mediums.begin(), h.mediums.end());
      out.push_back(std::move(h));
    }
    return out;  // names is a std::map: sorted by hash
  }

  size_t pages() const { return blocks_.size(); }
  size_t pages_of(WorkerId w) const { return held(w); }
  uint64_t evicted() const { return evicted_; }
  uint64_t refused() const { return refused_; }
  // The token path and namespace of every present content block, for building queries.
  struct Path {
    std::string root;  // "ns<N>"
    std::vector<TokenId> tokens;
    std::optional<std::string> lora_name;
    uint32_t size = 0;
  };
  std::vector<Path> paths() const {
    std::vector<Path> out;
    for (const auto& [id, block] : blocks_) {
      if (block.path) out.push_back(*block.path);
    }
    return out;
  }

 private:
  struct Holder {
    std::set<size_t> locations;
    uint64_t engine = 0;
  };
  struct Block {
    std::optional<std::string> parent;
    uint32_t size = 0;  // 0: opaque
    std::map<WorkerId, Holder> holders;
    uint64_t touched = 0;
    std::optional<Path> path;
  };
  struct Location {
    std::optional<std::string> medium;
    std::optional<int64_t> group;
  };
  struct Named {
    std::string id;
    bool opaque = false;
    std::optional<Path> path;
  };
  struct Worker {
    std::map<uint64_t, Named> names;
    std::vector<Location> locations;
  };

  static std::string spell(const std::string& parent, const events::ExtraKeys* extra,
                           std::span<const TokenId> tokens) {
    std::string id = parent + "/";
    if (extra != nullptr) {
      for (unsigned char c : *extra) id += fmt::format("{:02x}", c);
    }
    id += ":";
    for (TokenId t : tokens) id += fmt::format("{},", t);
    return id;
  }

  std::optional<size_t> find_location(WorkerId w, const std::optional<std::string>& medium,
                                      const std::optional<int64_t>& group) const {
    const auto& locs = workers_[w].locations;
    for (size_t i = 0; i < locs.size(); ++i) {
      if (locs[i].medium == medium && locs[i].group == group) return i;
    }
    return std::nullopt;
  }
  double weight_of(WorkerId w, const std::set<size_t>& locations) const {
    double best = 0;
    for (size_t l : locations) {
      best = std::max(best, weights_.weight(workers_[w].locations[l].medium.value_or("")));
    }
    return best;
  }
  size_t held(WorkerId w) const {
    return std::count_if(blocks_.begin(), blocks_.end(),
                         [&](const auto& b) { return b.second.holders.contains(w); });
  }
  bool has_child(const std::string& id) const {
    return std::any_of(blocks_.begin(), blocks_.end(),
                       [&](const auto& b) { return b.second.parent == id; });
  }

  void store(WorkerId w, const events::BlockStored& s) {
    const size_t n = s.block_hashes.size();
    if (n > max_pages_) {
      refused_ += n;
      return;
    }
    std::optional<size_t> loc = find_location(w, s.medium, s.group_idx);
    if (!loc) {
      if (workers_[w].locations.size() == router::BlockIndex::kMaxLocations) {
        refused_ += n;
        return;
      }
      workers_[w].locations.push_back({s.medium, s.group_idx});
      loc = workers_[w].locations.size() - 1;
    }
    const bool has_tokens = s.block_size > 0 && s.token_ids.size() == n * s.block_size;
    const std::optional<events::ExtraKeys> lora =
        s.lora_name && !s.extra_keys ? router::request_extra_keys({.lora_name = s.lora_name}, false)
                                     : std::nullopt;
    for (size_t b = 0; b < n; ++b) {
      const uint64_t engine = s.block_hashes[b];
      const std::optional<uint64_t> parent_engine =
          b == 0 ? s.parent_block_hash : std::optional(s.block_hashes[b - 1]);
      const events::ExtraKeys* extra = s.extra_keys
                                           ? ((*s.extra_keys)[b] ? &*(*s.extra_keys)[b] : nullptr)
                                           : (lora ? &*lora : nullptr);
      std::optional<std::string> from;
      std::optional<std::string> parent_link;
      std::optional<Path> from_path;
      if (!parent_engine) {
        const std::optional<Namespace> ns =
            extra != nullptr ? events::namespace_from_extra_keys(*extra) : std::nullopt;
        if (ns) extra = nullptr;
        from = fmt::format("ns{}", ns.value_or(0));
        from_path = Path{*from, {}, s.lora_name, s.block_size};
      } else if (const auto up = workers_[w].names.find(*parent_engine);
                 up != workers_[w].names.end() && !up->second.opaque) {
        from = up->second.id;
        parent_link = up->second.id;
        from_path = up->second.path;
      }
      bool content = has_tokens && from.has_value();
      std::vector<TokenId> tokens;
      for (size_t t = b * s.block_size; content && t < (b + 1) * s.block_size; ++t) {
        const int64_t id = s.token_ids[t];
        if (id < std::numeric_limits<TokenId>::min() || id > std::numeric_limits<TokenId>::max()) {
          content = false;
        }
        tokens.push_back(static_cast<TokenId>(id));
      }
      const std::string id = content ? spell(*from, extra, tokens) : fmt::format("#{}", engine);
      std::optional<Path> path;
      // A query can rebuild a path whose extra keys are the ones a request makes (none, or the
      // LoRA name in every block).
      if (content && from_path && from_path->size == s.block_size &&
          from_path->lora_name == s.lora_name &&
          (s.lora_name ? extra == &*lora : extra == nullptr)) {
        path = from_path;
        path->tokens.insert(path->tokens.end(), tokens.begin(), tokens.end());
      }
      Worker& worker = workers_[w];
      if (const auto known = worker.names.find(engine);
          known != worker.names.end() && known->second.id != id) {
        const std::string old = known->second.id;
        worker.names.erase(known);
        drop_holder(old, w);
      }
      if (!blocks_.contains(id)) {
        Block block;
        if (content && parent_link && *parent_link != id && blocks_.contains(*parent_link)) {
          block.parent = parent_link;
        }
        block.size = content ? s.block_size : 0;
        block.path = path;
        blocks_[id] = std::move(block);
      }
      Block& block = blocks_.at(id);
      block.touched = ++tick_;
      Holder& holder = block.holders[w];
      holder.locations.insert(*loc);
      holder.engine = engine;
      worker.names[engine] = {id, !content, path};
      if (worker.names.size() > 1024 && worker.names.size() > 2 * held(w) + 1024) {
        std::erase_if(worker.names, [&](const auto& named) {
          const auto b = blocks_.find(named.second.id);
          return b == blocks_.end() || !b->second.holders.contains(w);
        });
      }
      evict(id);
    }
  }

  void drop_holder(const std::string& id, WorkerId w) {
    const auto block = blocks_.find(id);
    if (block == blocks_.end()) return;
    const auto holder = block->second.holders.find(w);
    if (holder == block->second.holders.end()) return;
    const auto named = workers_[w].names.find(holder->second.engine);
    if (named != workers_[w].names.end() && named->second.id == id) workers_[w].names.erase(named);
    block->second.holders.erase(holder);
    if (block->second.holders.empty()) blocks_.erase(block);
  }

  void remove(WorkerId w, size_t loc, uint64_t engine) {
    const auto named = workers_[w].names.find(engine);
    if (named == workers_[w].names.end()) return;
    const std::string id = named->second.id;
    const auto block = blocks_.find(id);
    if (block == blocks_.end() || !block->second.holders.contains(w)) {
      workers_[w].names.erase(named);
      return;
    }
    Holder& holder = block->second.holders.at(w);
    holder.locations.erase(loc);
    if (!holder.locations.empty()) return;
    drop_holder(id, w);
    workers_[w].names.erase(engine);
  }

  void clear(WorkerId w) {
    std::vector<std::string> ids;
    for (const auto& [id, block] : blocks_) {
      if (block.holders.contains(w)) ids.push_back(id);
    }
    for (const std::string& id : ids) drop_holder(id, w);
    workers_[w].names.clear();
    workers_[w].locations.clear();
  }

  void evict(const std::string& just_stored) {
    while (blocks_.size() > max_pages_) {
      std::optional<std::pair<uint64_t, std::string>> victim;
      for (const auto& [id, block] : blocks_) {
        if (!has_child(id) && (!victim || block.touched < victim->first))
          victim = {block.touched, id};
      }
      const std::string id = victim ? victim->second : just_stored;
      const std::vector<WorkerId> holders = [&] {
        std::vector<WorkerId> ws;
        for (const auto& [w, h] : blocks_.at(id).holders) ws.push_back(w);
        return ws;
      }();
      for (WorkerId w : holders) drop_holder(id, w);
      ++evicted_;
    }
  }

  template <typename OnMatch>
  void walk(const std::vector<std::string>& ids, OnMatch on_match) {
    std::vector<size_t> matched(workers_.size(), 0);
    for (size_t i = 0; i < ids.size(); ++i) {
      const auto block = blocks_.find(ids[i]);
      if (block == blocks_.end()) break;
      bool any = false;
      for (const auto& [w, holder] : block->second.holders) {
        if (matched[w] != i) continue;
        matched[w] = i + 1;
        on_match(i, w, holder);
        any = true;
      }
      if (!any) break;
      block->second.touched = ++tick_;
    }
  }

  size_t max_pages_;
  router::TierWeights weights_;
  std::map<std::string, Block> blocks_;  // present blocks only
  std::vector<Worker> workers_;
  uint64_t tick_ = 0;
  uint64_t evicted_ = 0;
  uint64_t refused_ = 0;
};

}  // namespace radixkv::testing
