// TreeModel: the radix tree's nodes and the facts it keeps for eviction, rebuilt from the
// semantics that radix/radix_tree.h and radix/radix_node.h document, never read back from a tree.
// It drives a reference model of the policy (tests/policy_models.h), so that the property and
// runtime drivers can predict every victim (which leaf, how many of its pages) and compare.
//
// What it encodes:
//   - A node is a run of whole pages on one path, keyed here by its namespace and the tokens from
//     the root through its first page. insert() adds the pages past the cached prefix as one new
//     leaf; match() and insert() split the node in which the key ends inside an edge first.
//   - Every match() and insert() is one tick of the clock, even when it touches nothing; each node
//     on the path from the root to where the key ends gets last_access = tick, one more hit and
//     the access's priority, answer length and time, bottom-up, and the policy hears of each
//     access.
//   - A new leaf has inserted_at = the clock before its insert's tick, is touched, then offered.
//   - A split leaves the lower part with the node's pages past the split (it keeps its place in
//     the policy and everything the policy knows of it) and makes a new upper node that inherits
//     the node's last access (tick and time), creation time, hits, priority, answer length and
//     lock count; its pages are the ones before the split, its prefix_pages the node's old one.
//     The lower part's prefix_pages grows by the upper's pages.
//   - A lock pins the nodes from the root to the node where its key ends; pinned or inner nodes
//     leave the policy, and a node that becomes an unpinned leaf joins it.
//   - evict(n) asks the policy for a victim before every page, takes the victim's tail page, and
//     removes a leaf that runs empty, offering its parent when that becomes evictable.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "radix/radix_tree.h"
#include "tests/policy_models.h"

namespace radixkv::testing {

class TreeModel {
 public:
  // One evicted page and the leaf it came from, as the leaf was just before losing it.
  struct Victim {
    Namespace ns;
    uint32_t prefix_pages;  // where the leaf starts on its path
    uint32_t pages;         // pages it held before this one went
    PageId page;
  };
  struct Inserted {
    uint32_t cached_pages;  // leading pages that were cached already
    uint32_t new_pages;
  };
  struct Stats {
    uint64_t splits = 0;
    uint64_t evicted_pages = 0;
    uint64_t evicted_nodes = 0;
    uint64_t parents_offered = 0;  // parents that became evictable when their last child went
  };

  TreeModel(std::string_view policy, uint32_t page_tokens)
      : policy_(make_policy_model(policy)), P_(page_tokens) {}

  // Returns the matched pages.
  uint32_t match(Namespace ns, std::span<const TokenId> tokens, const AccessHint& hint) {
    Walk w = walk(ns, tokens);
    if (w.partial != nullptr) w.chain.push_back(&split(*w.partial, w.partial_pages));
    touch(w.chain, hint);
    return w.pages;
  }

  // `ids` has one page id per whole page of `tokens`; the tree takes those past the cached prefix.
  Inserted insert(Namespace ns, std::span<const TokenId> tokens, std::span<const PageId> ids,
                  const AccessHint& hint) {
    const auto n = static_cast<uint32_t>(tokens.size() / P_);
    if (ids.size() != n) throw std::logic_error("TreeModel::insert: one page id per whole page");
    Walk w = walk(ns, tokens);
    if (w.partial != nullptr) w.chain.push_back(&split(*w.partial, w.partial_pages));
    const uint32_t cached = w.pages;
    if (n > cached) {
      if (!w.chain.empty()) {
        Node& end = *w.chain.back();
        if (end.linked) policy_->remove(end);  // no longer a leaf
        ++end.children;
      }
      auto leaf = std::make_unique<Node>();
      leaf->ns = ns;
      leaf->path.assign(tokens.begin(), tokens.begin() + size_t{n} * P_);
      leaf->ids.assign(ids.begin() + cached, ids.end());
      leaf->pages = n - cached;
      leaf->prefix_pages = cached;
      leaf->inserted_at = clock_;
      w.chain.push_back(leaf.get());
      nodes_.emplace(key_of(*leaf), std::move(leaf));
      cached_pages_ += n - cached;
    }
    touch(w.chain, hint);
    if (n > cached) policy_->add(*w.chain.back());
    return {cached, n - cached};
  }

  // Pins (unpins) the path to the node ending at page `pages` of `tokens`, which must exist.
  void lock(Namespace ns, std::span<const TokenId> tokens, uint32_t pages) {
    const std::vector<Node*> chain = path_to(ns, tokens, pages);
    for (auto x = chain.rbegin(); x != chain.rend(); ++x) {
      if ((*x)->locks++ == 0 && (*x)->linked) policy_->remove(**x);
    }
  }
  void unlock(Namespace ns, std::span<const TokenId> tokens, uint32_t pages) {
    const std::vector<Node*> chain = path_to(ns, tokens, pages);
    for (auto x = chain.rbegin(); x != chain.rend(); ++x) {
      if ((*x)->locks == 0) throw std::logic_error("TreeModel::unlock: the node is not locked");
      if (--(*x)->locks == 0 && evictable(**x)) policy_->add(**x);
    }
  }

  // Evicts up to n pages; returns them in the order they went.
  std::vector<Victim> evict(uint64_t n) {
    std::vector<Victim> victims;
    while (victims.size() < n) {
      ModelEntry* entry = policy_->victim();
      if (entry == nullptr) break;
      Node& leaf = static_cast<Node&>(*entry);
      if (!evictable(leaf)) throw std::logic_error("TreeModel: the policy model named a non-leaf");
      victims.push_back({leaf.ns, leaf.prefix_pages, leaf.pages, leaf.ids.back()});
      leaf.ids.pop_back();
      --leaf.pages;
      --cached_pages_;
      ++stats_.evicted_pages;
      if (leaf.pages == 0) {
        remove_leaf(leaf);
      } else {
        leaf.path.resize(size_t{leaf.prefix_pages + leaf.pages} * P_);
      }
    }
    return victims;
  }

  // "" when `gone` (the pages the tree evicted in one call) are exactly the predicted victims'
  // pages; otherwise both, leaf by leaf.
  static std::string compare(const std::vector<Victim>& predicted, const std::set<PageId>& gone) {
    std::set<PageId> want;
    for (const Victim& v : predicted) want.insert(v.page);
    if (want == gone) return "";
    std::string text = "the tree evicted pages {";
    for (PageId p : gone) text += fmt::format(" {}", p);
    text += " }, the reference model predicted";
    for (const Victim& v : predicted) {
      text += fmt::format(" [ns {} leaf at pages {}..{}: page {}]", v.ns, v.prefix_pages,
                          v.prefix_pages + v.pages, v.page);
    }
    if (predicted.empty()) text += " nothing";
    return text;
  }

  uint64_t cached_pages() const { return cached_pages_; }
  uint64_t evictable_pages() const {
    uint64_t n = 0;
    for (const auto& [key, node] : nodes_) n += node->locks == 0 ? node->pages : 0;
    return n;
  }
  size_t evictable_leaves() const { return policy_->size(); }
  size_t nodes() const { return nodes_.size(); }
  const Stats& stats() const { return stats_; }
  const PolicyModel& policy() const { return *policy_; }

 private:
  struct Node : ModelEntry {
    Namespace ns = 0;
    std::vector<TokenId> path;  // tokens from the root through the node's last page
    std::vector<PageId> ids;    // its pages, in order
    uint32_t children = 0;
    uint32_t locks = 0;
  };
  using Key = std::pair<Namespace, std::vector<TokenId>>;  // tokens through the first page

  // Where a key's walk from the root stops: `chain` holds the nodes whose whole edge matched;
  // `partial`, when set, is the next node, of which only `partial_pages` leading pages matched.
  struct Walk {
    std::vector<Node*> chain;
    Node* partial = nullptr;
    uint32_t partial_pages = 0;
    uint32_t pages = 0;  // matched pages in all
  };

  Key key(Namespace ns, std::span<const TokenId> tokens, uint32_t first_page) const {
    return {ns, {tokens.begin(), tokens.begin() + size_t{first_page + 1} * P_}};
  }
  Key key_of(const Node& node) const { return key(node.ns, node.path, node.prefix_pages); }

  bool same_page(const Node& node, std::span<const TokenId> tokens, uint32_t page) const {
    const size_t from = size_t{page} * P_;
    return std::equal(node.path.begin() + from, node.path.begin() + from + P_,
                      tokens.begin() + from);
  }

  Walk walk(Namespace ns, std::span<const TokenId> tokens) const {
    Walk w;
    const auto usable = static_cast<uint32_t>(tokens.size() / P_);
    while (w.pages < usable) {
      const auto it = nodes_.find(key(ns, tokens, w.pages));
      if (it == nodes_.end()) break;
      Node* node = it->second.get();
      uint32_t same = 1;
      while (same < node->pages && w.pages + same < usable &&
             same_page(*node, tokens, w.pages + same)) {
        ++same;
      }
      w.pages += same;
      if (same < node->pages) {
        w.partial = node;
        w.partial_pages = same;
        break;
      }
      w.chain.push_back(node);
    }
    return w;
  }

  // The nodes from the root to the one that ends exactly at page `pages` of `tokens`.
  std::vector<Node*> path_to(Namespace ns, std::span<const TokenId> tokens, uint32_t pages) const {
    const Walk w = walk(ns, tokens.first(size_t{pages} * P_));
    if (w.pages != pages || w.partial != nullptr) {
      throw std::logic_error(
          fmt::format("TreeModel: no node ends at page {} of the key (it matches {} pages{})",
                      pages, w.pages, w.partial != nullptr ? ", inside an edge" : ""));
    }
    return w.chain;
  }

  bool evictable(const Node& node) const { return node.children == 0 && node.locks == 0; }

  Node& split(Node& node, uint32_t upper_pages) {
    auto lower = nodes_.extract(key_of(node));
    auto upper = std::make_unique<Node>();
    upper->ns = node.ns;
    upper->path.assign(node.path.begin(),
                       node.path.begin() + size_t{node.prefix_pages + upper_pages} * P_);
    upper->ids.assign(node.ids.begin(), node.ids.begin() + upper_pages);
    upper->pages = upper_pages;
    upper->prefix_pages = node.prefix_pages;
    upper->last_access = node.last_access;
    upper->inserted_at = node.inserted_at;
    upper->hits = node.hits;
    upper->priority = node.priority;
    upper->output_tokens = node.output_tokens;
    upper->last_access_s = node.last_access_s;
    upper->locks = node.locks;
    upper->children = 1;
    node.ids.erase(node.ids.begin(), node.ids.begin() + upper_pages);
    node.pages -= upper_pages;
    node.prefix_pages += upper_pages;
    lower.key() = key_of(node);
    nodes_.insert(std::move(lower));
    Node& made = *upper;
    nodes_.emplace(key_of(made), std::move(upper));
    ++stats_.splits;
    return made;
  }

  void touch(const std::vector<Node*>& chain, const AccessHint& hint) {
    ++clock_;
    for (auto x = chain.rbegin(); x != chain.rend(); ++x) {
      (*x)->last_access = clock_;
      ++(*x)->hits;
      (*x)->priority = hint.priority;
      (*x)->output_tokens = hint.output_tokens;
      (*x)->last_access_s = hint.now;
      policy_->on_access(**x, hint);
    }
  }

  void remove_leaf(Node& leaf) {
    policy_->remove(leaf);
    Node* parent =
        leaf.prefix_pages == 0 ? nullptr : path_to(leaf.ns, leaf.path, leaf.prefix_pages).back();
    nodes_.erase(key_of(leaf));  // destroys `leaf`
    ++stats_.evicted_nodes;
    if (parent != nullptr && --parent->children == 0 && evictable(*parent)) {
      policy_->add(*parent);
      ++stats_.parents_offered;
    }
  }

  std::unique_ptr<PolicyModel> policy_;
  uint32_t P_;
  std::map<Key, std::unique_ptr<Node>> nodes_;
  uint64_t clock_ = 0;
  uint64_t cached_pages_ = 0;
  Stats stats_;
};

}  // namespace radixkv::testing
