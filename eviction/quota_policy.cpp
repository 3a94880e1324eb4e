#include "eviction/quota_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <new>
#include <stdexcept>

namespace radixkv {

namespace {

uint64_t share_pages(const Watermark& share, uint64_t limit_pages, uint64_t bytes_per_page,
                     uint64_t ns, const char* which) {
  if (share.is_size()) {
    if (share.bytes() / bytes_per_page > limit_pages) {
      throw std::invalid_argument(
          fmt::format("quota: namespace {}: {} {} is more than the budget of {} pages", ns, which,
                      share.to_string(), limit_pages));
    }
    return share.bytes() / bytes_per_page;
  }
  if (!(share.fraction() >= 0.0 && share.fraction() <= 1.0)) {
    throw std::invalid_argument(
        fmt::format("quota: namespace {}: {} {} is not a fraction of the budget in [0, 1]", ns,
                    which, share.to_string()));
  }
  return static_cast<uint64_t>(static_cast<double>(limit_pages) * share.fraction());
}

}  // namespace

std::vector<QuotaPages> quota_pages(const std::vector<NamespaceQuota>& quotas,
                                    const CacheBudget& budget, uint64_t bytes_per_page) {
  std::vector<QuotaPages> out;
  uint64_t min_sum = 0;
  for (const NamespaceQuota& q : quotas) {
    const uint64_t ns = q.name_space;
    for (const QuotaPages& before : out) {
      if (before.name_space == ns) {
        throw std::invalid_argument(
            fmt::format("quota: namespace {} has two quotas; give each namespace one", ns));
      }
    }
    if (!q.max.is_size() && q.max.fraction() == 0.0) {
      throw std::invalid_argument(fmt::format(
          "quota: namespace {}: max 0 would keep nothing; a max is a fraction in (0, 1] or a size",
          ns));
    }
    const uint64_t limit = budget.limit_pages();
    QuotaPages pages{ns, share_pages(q.min, limit, bytes_per_page, ns, "min"),
                     share_pages(q.max, limit, bytes_per_page, ns, "max")};
    if (pages.min_pages > pages.max_pages) {
      throw std::invalid_argument(
          fmt::format("quota: namespace {}: min {} ({} pages) is above max {} ({} pages)", ns,
                      q.min.to_string(), pages.min_pages, q.max.to_string(), pages.max_pages));
    }
    min_sum += pages.min_pages;
    out.push_back(pages);
  }
  if (min_sum > budget.limit_pages()) {
    throw std::invalid_argument(
        fmt::format("quota: the mins add up to {} pages, more than the budget of {} pages: no "
                    "eviction could keep them all",
                    min_sum, budget.limit_pages()));
  }
  return out;
}

QuotaPolicy::QuotaPolicy(const Factory& make_inner, std::vector<QuotaPages> quotas)
    : quotas_(std::move(quotas)) {
  std::sort(quotas_.begin(), quotas_.end(),
            [](const QuotaPages& a, const QuotaPages& b) { return a.name_space < b.name_space; });
  for (std::size_t i = 0; i < quotas_.size(); ++i) {
    const QuotaPages& q = quotas_[i];
    if (i > 0 && quotas_[i - 1].name_space == q.name_space) {
      throw std::invalid_argument(
          fmt::format("quota: namespace {} has two quotas; give each namespace one", q.name_space));
    }
    if (q.min_pages > q.max_pages) {
      throw std::invalid_argument(
          fmt::format("quota: namespace {}: its min ({} pages) is above its max ({} pages)",
                      q.name_space, q.min_pages, q.max_pages));
    }
  }
  // One inner policy per quota, then the shared one.
  for (std::size_t i = 0; i <= quotas_.size(); ++i) {
    std::unique_ptr<EvictionPolicy> inner = make_inner();
    if (!inner) throw std::invalid_argument("quota: the policy factory returned no policy");
    if (i == 0) {
      inner_bytes_ = inner->state_bytes();
      name_ = fmt::format("{}+quota", inner->name());
    } else if (inner->state_bytes() != inner_bytes_) {
      throw std::invalid_argument(
          "quota: the policy factory made policies of different state sizes");
    }
    policies_.push_back(std::move(inner));
  }
  state_bytes_ = inner_bytes_ + sizeof(QuotaState);
  groups_.reserve(policies_.size());
  for (std::size_t i = 0; i < policies_.size(); ++i) {
    groups_.push_back({policies_[i].get(), i < quotas_.size() ? &quotas_[i] : nullptr});
    if (i < quotas_.size()) by_namespace_[quotas_[i].name_space] = &groups_[i];
  }
}

QuotaPolicy::QuotaState& QuotaPolicy::state(const EvictionEntry& entry) const {
  auto* bytes = reinterpret_cast<std::byte*>(const_cast<EvictionEntry*>(&entry)) - state_bytes_;
  return *std::launder(reinterpret_cast<QuotaState*>(bytes));
}

void QuotaPolicy::adopt(EvictionEntry& entry, const AccessHistory& past) {
  Group* group = &groups_.back();
  if (ledger_ != nullptr) {
    const auto it = by_namespace_.find(ledger_->namespace_of(entry));
    if (it != by_namespace_.end()) group = it->second;
  }
  auto* bytes = reinterpret_cast<std::byte*>(&entry) - state_bytes_;
  new (bytes) QuotaState{group, past.last.tick};
  group->policy->adopt(entry, past);
}

AccessHistory QuotaPolicy::history(const EvictionEntry& entry) const {
  return state(entry).group->policy->history(entry);
}

void QuotaPolicy::add(EvictionEntry& entry) {
  state(entry).group->policy->add(entry);
  ++size_;
}

void QuotaPolicy::remove(EvictionEntry& entry) {
  state(entry).group->policy->remove(entry);
  --size_;
}

void QuotaPolicy::on_access(EvictionEntry& entry, const AccessHint& hint) {
  QuotaState& s = state(entry);
  s.tick = hint.tick;
  s.group->policy->on_access(entry, hint);
}

void QuotaPolicy::retain(EvictionEntry& entry, const Retention& retention) {
  state(entry).group->policy->retain(entry, retention);
}

void QuotaPolicy::hold(uint64_t session, double until) {
  for (Group& group : groups_) group.policy->hold(session, until);
}

void QuotaPolicy::release(uint64_t session) {
  for (Group& group : groups_) group.policy->release(session);
}

void QuotaPolicy::set_now(double now) {
  for (Group& group : groups_) group.policy->set_now(now);
}

bool QuotaPolicy::contains(const EvictionEntry& entry) const {
  return state(entry).group->policy->contains(entry);
}

EvictionEntry* QuotaPolicy::victim() {
  if (size_ == 0) return nullptr;
  const auto cached = [&](const Group& g) {
    return ledger_ != nullptr ? ledger_->namespace_pages(g.quota->name_space) : 0;
  };
  // Rule 1: the quota namespace furthest at or over its max.
  Group* over = nullptr;
  uint64_t most_over = 0;
  for (Group& g : groups_) {
    if (g.quota == nullptr || g.policy->size() == 0) continue;
    const uint64_t pages = cached(g);
    if (pages < g.quota->max_pages) continue;
    if (over == nullptr || pages - g.quota->max_pages > most_over) {
      over = &g;
      most_over = pages - g.quota->max_pages;
    }
  }
  if (over != nullptr) return over->policy->victim();
  // Rules 2 and 3: the oldest candidate of the namespaces above their min and the shared group.
  EvictionEntry* best = nullptr;
  uint64_t best_tick = 0;
  for (Group& g : groups_) {
    if (g.policy->size() == 0) continue;
    if (g.quota != nullptr && cached(g) <= g.quota->min_pages) continue;
    EvictionEntry* candidate = g.policy->victim();
    if (candidate == nullptr) continue;
    const uint64_t tick = state(*candidate).tick;
    if (best == nullptr || tick < best_tick) {
      best = candidate;
      best_tick = tick;
    }
  }
  return best;
}

}  // namespace radixkv
