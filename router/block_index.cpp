#include "router/block_index.h"

#include <algorithm>
#include <stdexcept>

namespace radixkv::router {

namespace {

constexpr uint32_t kMaxMediums = 32;  // one bit each in Holder::mediums

}  // namespace

BlockIndex::BlockIndex(size_t max_pages) : max_pages_(max_pages) {
  if (max_pages == 0) throw std::invalid_argument("the router index needs room for >= 1 page");
}

WorkerId BlockIndex::add_worker(std::string_view name) {
  if (name.empty()) throw std::invalid_argument("a worker needs a name");
  if (const std::optional<WorkerId> known = find_worker(name)) return *known;
  workers_.push_back({std::string(name), {}});
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

uint32_t BlockIndex::medium_bit(const std::optional<std::string>& medium) {
  const std::string name = medium.value_or("");
  const auto it = std::find(medium_names_.begin(), medium_names_.end(), name);
  if (it != medium_names_.end()) return 1u << (it - medium_names_.begin());
  if (medium_names_.size() == kMaxMediums) {
    throw std::invalid_argument("medium \"" + name + "\": the index tells at most " +
                                std::to_string(kMaxMediums) + " mediums apart");
  }
  medium_names_.push_back(name);
  return 1u << (medium_names_.size() - 1);
}

void BlockIndex::apply(WorkerId worker, const events::EventBatch& batch) {
  for (const events::KvEvent& event : batch.events) apply(worker, event);
}

void BlockIndex::apply(WorkerId worker, const events::KvEvent& event) {
  check_worker(worker);
  if (const auto* stored = std::get_if<events::BlockStored>(&event)) {
    const uint32_t medium = medium_bit(stored->medium);
    std::optional<BlockHash> parent = stored->parent_block_hash;
    for (BlockHash hash : stored->block_hashes) {
      store(worker, medium, parent, hash);
      parent = hash;
    }
    evict_to_bound();
  } else if (const auto* removed = std::get_if<events::BlockRemoved>(&event)) {
    const uint32_t medium = medium_bit(removed->medium);
    for (BlockHash hash : removed->block_hashes) remove(worker, medium, hash);
  } else {
    clear_worker(worker);
  }
}

void BlockIndex::store(WorkerId worker, uint32_t medium, std::optional<BlockHash> parent,
                       BlockHash hash) {
  if (parent == hash) parent.reset();  // a block cannot be its own parent
  Entry& entry = entries_[hash];
  if (!entry.present()) {
    // The entry becomes present: link it under its parent.
    entry.parent = parent;
    if (parent) {
      Entry& up = entries_[*parent];  // references into the map stay valid across inserts
      if (up.present() && up.children == 0) leaves_.erase({up.touched, *parent});
      ++up.children;
    }
    ++present_;
    entry.touched = ++tick_;
    if (entry.children == 0) leaves_.insert({entry.touched, hash});
  } else {
    touch(hash, entry);
  }
  const auto holder = std::find_if(entry.holders.begin(), entry.holders.end(),
                                   [&](const Holder& h) { return h.worker == worker; });
  if (holder != entry.holders.end()) {
    holder->mediums |= medium;
  } else {
    entry.holders.push_back({worker, medium});
    workers_[worker].held.insert(hash);
  }
}

void BlockIndex::remove(WorkerId worker, uint32_t mediums, BlockHash hash) {
  const auto found = entries_.find(hash);
  if (found == entries_.end()) return;
  Entry& entry = found->second;
  const auto holder = std::find_if(entry.holders.begin(), entry.holders.end(),
                                   [&](const Holder& h) { return h.worker == worker; });
  if (holder == entry.holders.end()) return;
  holder->mediums &= ~mediums;
  if (holder->mediums != 0) return;
  entry.holders.erase(holder);
  workers_[worker].held.erase(hash);
  if (!entry.present()) make_absent(hash);
}

// `hash` just lost its last holder: unlink it, and forget it unless present entries name it.
void BlockIndex::make_absent(BlockHash hash) {
  Entry& entry = entries_.at(hash);
  --present_;
  if (entry.children == 0) leaves_.erase({entry.touched, hash});
  if (entry.parent) {
    const auto up = entries_.find(*entry.parent);
    if (--up->second.children == 0) {
      if (up->second.present()) {
        leaves_.insert({up->second.touched, up->first});
      } else {
        entries_.erase(up);
      }
    }
  }
  if (entry.children == 0) entries_.erase(hash);
}

void BlockIndex::touch(BlockHash hash, Entry& entry) {
  const bool leaf = entry.children == 0;
  if (leaf) leaves_.erase({entry.touched, hash});
  entry.touched = ++tick_;
  if (leaf) leaves_.insert({entry.touched, hash});
}

void BlockIndex::evict_to_bound() {
  // Only a parent cycle (a->b->a, from nonsense events) leaves present entries and no leaves.
  while (present_ > max_pages_ && !leaves_.empty()) {
    const BlockHash hash = leaves_.begin()->second;
    Entry& entry = entries_.at(hash);
    for (const Holder& holder : entry.holders) workers_[holder.worker].held.erase(hash);
    entry.holders.clear();
    make_absent(hash);
    ++evicted_;
  }
}

void BlockIndex::clear_worker(WorkerId worker) {
  check_worker(worker);
  const std::vector<BlockHash> held(workers_[worker].held.begin(), workers_[worker].held.end());
  for (BlockHash hash : held) remove(worker, ~0u, hash);
}

std::vector<uint32_t> BlockIndex::overlaps(std::span<const BlockHash> hashes) {
  std::vector<uint32_t> matched(workers_.size(), 0);
  std::vector<WorkerId> alive;  // workers holding every block so far
  for (size_t i = 0; i < hashes.size(); ++i) {
    const auto found = entries_.find(hashes[i]);
    if (found == entries_.end() || !found->second.present()) break;
    const Entry& entry = found->second;
    std::vector<WorkerId> still;
    for (const Holder& holder : entry.holders) {
      if (i == 0 || std::find(alive.begin(), alive.end(), holder.worker) != alive.end()) {
        still.push_back(holder.worker);
        matched[holder.worker] = static_cast<uint32_t>(i + 1);
      }
    }
    if (still.empty()) break;
    touch(found->first, found->second);
    alive.swap(still);
  }
  return matched;
}

size_t BlockIndex::pages_of(WorkerId worker) const {
  check_worker(worker);
  return workers_[worker].held.size();
}

std::vector<BlockHolding> BlockIndex::holdings(WorkerId worker) const {
  check_worker(worker);
  std::vector<BlockHolding> out;
  out.reserve(workers_[worker].held.size());
  for (BlockHash hash : workers_[worker].held) {
    BlockHolding holding{hash, {}};
    for (const Holder& holder : entries_.at(hash).holders) {
      if (holder.worker != worker) continue;
      for (uint32_t bit = 0; bit < medium_names_.size(); ++bit) {
        if (holder.mediums & (1u << bit)) holding.mediums.push_back(medium_names_[bit]);
      }
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
  std::unordered_map<BlockHash, uint32_t> children;
  std::vector<size_t> held(workers_.size(), 0);
  for (const auto& [hash, entry] : entries_) {
    if (!entry.present()) {
      if (entry.children == 0) broken("an absent entry without children was kept");
      continue;
    }
    ++present;
    if (entry.parent) ++children[*entry.parent];
    for (const Holder& holder : entry.holders) {
      if (holder.mediums == 0) broken("a holder with no medium");
      if (!workers_.at(holder.worker).held.contains(hash)) broken("a holder its worker lacks");
      ++held[holder.worker];
    }
    const bool leaf = entry.children == 0;
    if (leaf != leaves_.contains({entry.touched, hash})) broken("the leaf order is out of date");
  }
  for (const auto& [hash, entry] : entries_) {
    const auto it = children.find(hash);
    if (entry.children != (it == children.end() ? 0 : it->second)) broken("a wrong child count");
  }
  if (present != present_) broken("the present count is off");
  if (present_ > max_pages_ && !leaves_.empty()) broken("over the page bound with leaves left");
  size_t leaves = 0;
  for (const auto& [hash, entry] : entries_) leaves += entry.present() && entry.children == 0;
  if (leaves != leaves_.size()) broken("the leaf order holds stale entries");
  for (WorkerId w = 0; w < workers_.size(); ++w) {
    if (held[w] != workers_[w].held.size()) broken("worker " + workers_[w].name + " holds extras");
  }
}

}  // namespace radixkv::router
