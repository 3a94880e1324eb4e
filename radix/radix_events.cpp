// RadixTree's page hashes and tier events (radix/page_hash.h, radix/tier_events.h). Hashes live in
// per-pool-page tables (one per tier) rather than in the nodes, so that a tree without them pays
// nothing per node and a split or a move between tiers needs no rehash.
#include <fmt/format.h>

#include <stdexcept>

#include "radix/tree_internals.h"

namespace radixkv {

std::string_view to_string(Tier tier) {
  switch (tier) {
    case Tier::kDevice:
      return "device";
    case Tier::kHost:
      return "host";
  }
  return "unknown";
}

std::string_view to_string(RemovalReason reason) {
  switch (reason) {
    case RemovalReason::kEvicted:
      return "evicted";
    case RemovalReason::kDemoted:
      return "demoted";
    case RemovalReason::kPromoted:
      return "promoted";
    case RemovalReason::kCleared:
      return "cleared";
  }
  return "unknown";
}

void RadixTree::enable_page_hashes() {
  if (page_hashes()) return;
  check_empty("enable_page_hashes");
  device_hashes_.assign(pool_.capacity_pages(), PageHash{});
  extras_ = true;
  if (host_tier_) host_tier_->hashes.assign(host_tier_->pool.capacity_pages(), PageHash{});
}

void RadixTree::add_tier_events(TierEvents* events) {
  if (events == nullptr) throw std::invalid_argument("RadixTree::add_tier_events: no observer");
  check_empty("add_tier_events");
  enable_page_hashes();
  if (!events_) events_ = std::make_unique<EventBuffer>();
  events_->add(events);
  extras_ = true;
}

void RadixTree::flush_events() {
  if (events_) events_->flush();
}

PageHash RadixTree::page_hash(const RadixNode* node, uint32_t i) const {
  if (!page_hashes()) throw std::logic_error("RadixTree::page_hash: page hashes are off");
  if (i >= node->num_pages()) {
    throw std::invalid_argument(
        fmt::format("RadixTree::page_hash: page {} of a node of {} pages", i, node->num_pages()));
  }
  return i < node->pages ? device_hash(node->page_array()[i])
                         : host_tier_->hash(node->host_->page_ids[i]);
}

PageHash RadixTree::parent_hash(const RadixNode* node, uint32_t i) const {
  if (i > 0) return page_hash(node, i - 1);
  const RadixNode* parent = node->parent_;
  return parent->is_root() ? namespace_seed(parent->ns_)
                           : page_hash(parent, parent->num_pages() - 1);
}

void RadixTree::hash_new_pages(const RadixNode* node, uint32_t first) {
  PageHash hash = parent_hash(node, first);
  for (uint32_t i = first; i < node->pages; ++i) {
    hash = chain_page_hash(hash, {node->token_array() + size_t{i} * page_tokens_, page_tokens_});
    device_hash(node->page_array()[i]) = hash;
  }
}

void RadixTree::emit_stored(Tier tier, const RadixNode* node, uint32_t first, uint32_t count) {
  std::vector<PageHash>& hashes = events_->scratch();
  hashes.clear();
  for (uint32_t i = first; i < first + count; ++i) hashes.push_back(page_hash(node, i));
  std::optional<PageHash> parent;
  if (first > 0 || !node->parent_->is_root()) parent = parent_hash(node, first);
  events_->stored(
      tier, node->name_space(), parent, hashes,
      {node->token_array() + size_t{first} * page_tokens_, size_t{count} * page_tokens_});
}

void RadixTree::emit_removed(Tier tier, const RadixNode* node, uint32_t i, RemovalReason reason) {
  events_->removed(tier,
                   tier == Tier::kDevice ? device_hash(node->page_array()[i])
                                         : host_tier_->hash(node->host_->page_ids[i]),
                   reason);
}

PageHash RadixTree::emit_dropping(Tier tier, const RadixNode* node, uint32_t i,
                                  const PageHash& parent) {
  const PageId page = tier == Tier::kDevice ? node->page_array()[i] : node->host_->page_ids[i];
  const PageHash hash = tier == Tier::kDevice ? device_hash(page) : host_tier_->hash(page);
  events_->sink().dropping(
      {tier, hash, parent, {node->token_array() + size_t{i} * page_tokens_, page_tokens_}, page});
  return hash;
}

void RadixTree::emit_inserted(const RadixNode* node, uint32_t first, uint32_t count) {
  PageHash parent = parent_hash(node, first);
  for (uint32_t i = first; i < first + count; ++i) {
    const PageId page = node->page_array()[i];
    const PageHash hash = device_hash(page);
    events_->sink().inserted({Tier::kDevice,
                              hash,
                              parent,
                              {node->token_array() + size_t{i} * page_tokens_, page_tokens_},
                              page});
    parent = hash;
  }
}

std::vector<PageHash> RadixTree::tier_page_hashes(Tier tier) const {
  if (!page_hashes()) {
    throw std::logic_error("RadixTree::tier_page_hashes: page hashes are off (enable_page_hashes)");
  }
  std::vector<PageHash> hashes;
  std::vector<const RadixNode*> stack;
  for (const auto& [ns, root] : roots_) stack.push_back(root);
  while (!stack.empty()) {
    const RadixNode* node = stack.back();
    stack.pop_back();
    node->children_.for_each([&](uint64_t, const RadixNode* child) { stack.push_back(child); });
    for (uint32_t i = 0; i < node->num_pages(); ++i) {
      if (tier == Tier::kDevice && i < node->pages)
        hashes.push_back(device_hash(node->page_array()[i]));
      if (tier == Tier::kHost && node->host_page(i) != kInvalidPage) {
        hashes.push_back(host_tier_->hash(node->host_page(i)));
      }
    }
  }
  return hashes;
}

}  // namespace radixkv
