#include "tests/combination_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <set>
#include <stdexcept>

namespace radixkv::testing {

std::string_view to_string(RunMode mode) { return mode == RunMode::kCache ? "cache" : "engine"; }

namespace {

// The default KV layout (llama-3-8b) keeps 128 KiB per token: a size watermark is written in KiB.
constexpr uint64_t kKibPerToken = 128;

FeatureValue both_modes(std::string name, std::vector<std::string> flags) {
  FeatureValue value;
  value.name = std::move(name);
  value.cache_flags = flags;
  value.engine_flags = std::move(flags);
  return value;
}

// Two capacities (the budget and twice it) replayed at once. Engine mode runs one replay.
FeatureValue sweep_on_two_jobs() {
  FeatureValue value = both_modes("sweep on 2 jobs", {"--sweep", "{budget},{budget2}", "--jobs",
                                                      "2", "--plot", "{scratch}/sweep.svg"});
  value.engine_refusal = "--sweep: cache mode only";
  return value;
}

FeatureValue quota_on_two_groups() {
  FeatureValue value = both_modes("on", {"--quota", "0=0:0.5", "--quota", "7=0.2"});
  value.engine_refusal = "--quota: cache mode only";
  return value;
}

FeatureValue host_tier(const std::string& write_policy) {
  return both_modes(write_policy,
                    {"--host-capacity-tokens", "{host}", "--write-policy", write_policy});
}

// A queue that drops nothing and a timeout a busy machine meets, on a prefix of the run's own; the
// writer is drained before each request (engine mode: each step), so that what a lookup finds does
// not depend on the writer thread's speed (cache-mode figures can be compared exactly).
FeatureValue remote_tier(std::string name, const std::string& url) {
  return both_modes(std::move(name),
                    {"--remote", url, "--remote-prefix", "{prefix}", "--remote-queue-pages", "1e6",
                     "--remote-timeout-ms", "2000", "--remote-wait-writes"});
}

// Publishing with a replay socket that keeps every batch, and the final pages beside them; the
// run lingers while the test fetches the whole stream.
FeatureValue kv_events(const std::string& encoding) {
  return both_modes(encoding,
                    {"--kv-events", "tcp://127.0.0.1:*", "--kv-events-replay", "tcp://127.0.0.1:*",
                     "--kv-events-encoding", encoding, "--kv-events-buffer", "1e6",
                     "--kv-events-linger", "120", "--dump-pages", "{scratch}/pages.json"});
}

FeatureValue policy(const std::string& name) {
  FeatureValue value = both_modes(name, {"--policy", name});
  // The offline bound needs the whole trace, in order.
  if (name == "belady") value.engine_refusal = "--policy belady: cache mode only";
  return value;
}

// Session holds derived online (issue 31): a retention layer around the policy, cache mode only.
FeatureValue hints_online() {
  FeatureValue value = both_modes("online", {"--hints", "online"});
  value.engine_refusal = "--hints: cache mode only";
  return value;
}

FeatureValue workload(std::string name, WorkloadSizes sizes) {
  FeatureValue value = both_modes(std::move(name), {"--trace", "{trace}"});
  value.sizes = sizes;
  return value;
}

// Replaces every {name} of `text` by `values[name]`; {prefix} and {scratch} stay.
std::string fill(const std::string& text, const std::map<std::string, std::string>& values) {
  std::string out;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t open = text.find('{', at);
    if (open == std::string::npos) {
      out += text.substr(at);
      break;
    }
    const std::size_t close = text.find('}', open);
    if (close == std::string::npos) throw std::logic_error("unclosed placeholder in " + text);
    out += text.substr(at, open - at);
    const std::string name = text.substr(open + 1, close - open - 1);
    if (name == "prefix" || name == "scratch") {
      out += text.substr(open, close - open + 1);
    } else if (const auto value = values.find(name); value != values.end()) {
      out += value->second;
    } else {
      throw std::logic_error(fmt::format("unknown placeholder {{{}}} in {}", name, text));
    }
    at = close + 1;
  }
  return out;
}

}  // namespace

CombinationTable combination_table() {
  std::vector<Feature> features = {
      // The budget is this row's: a sweep replaces it by two capacities.
      {"--jobs",
       FeatureKind::kObserver,
       {both_modes("one run", {"--capacity-tokens", "{budget}"}), sweep_on_two_jobs()}},
      {"host tier",
       FeatureKind::kTier,
       {both_modes("off", {}), host_tier("write_back"), host_tier("write_through"),
        host_tier("write_through_selective")}},
      {"remote tier",
       FeatureKind::kTier,
       {both_modes("off", {}), remote_tier("redis", "{redis}"),
        remote_tier("cluster", "{cluster}")}},
      {"kv events",
       FeatureKind::kObserver,
       {both_modes("off", {}), kv_events("map"), kv_events("array")}},
      // The live miss-ratio curve (SHARDS in the runtime) only watches: the report gains "mrc".
      {"live curve", FeatureKind::kObserver, {both_modes("off", {}), both_modes("on", {"--mrc"})}},
      // Tenant quotas (cache mode): namespace 0 at most half the budget with no floor, an absent
      // namespace a fifth. Not an observer: where a workload has other namespaces (the agentic
      // session's sub-agents), they form a group of their own and the quota rule picks between
      // the groups' victims by last access, which is not every policy's order.
      {"--quota", FeatureKind::kPolicy, {both_modes("off", {}), quota_on_two_groups()}},
      {"watermarks",
       FeatureKind::kBudget,
       {both_modes("off", {}),
        both_modes("fractions", {"--high-watermark", "0.9", "--low-watermark", "0.7"}),
        both_modes("sizes", {"--high-watermark", "{high_size}", "--low-watermark", "{low_size}"})}},
      {"policy",
       FeatureKind::kPolicy,
       {policy("lru"), policy("lfu"), policy("fifo"), policy("priority"), policy("slru"),
        policy("sieve"), policy("gdsf"), policy("reuse"), policy("mru"), policy("filo"),
        policy("belady")}},
      {"hints", FeatureKind::kPolicy, {both_modes("off", {}), hints_online()}},
      // Sizes: every request, its answer included, fits on the device, and every run evicts (chats:
      // 55 requests, the longest over 10,500 tokens, 226 K in all; subagents: 35 of up to 12,672,
      // 283 K in all; mooncake: 45 requests of up to 4,429, 166 K in all).
      {"workload",
       FeatureKind::kWorkload,
       {workload("chats", {12'000, 12'000}), workload("subagents", {16'000, 16'000}),
        workload("mooncake", {6'000, 6'000})}},
      {"--block-tokens",
       FeatureKind::kWorkload,
       {both_modes("off", {}), both_modes("64", {"--block-tokens", "64"})}},
  };
  std::vector<PairRefusal> refusals = {
      {"host tier",
       {"write_back", "write_through", "write_through_selective"},
       "policy",
       {"belady"},
       "--policy: belady is not for a host tier"},
      {"--jobs",
       {"sweep on 2 jobs"},
       "remote tier",
       {"redis", "cluster"},
       "--remote: not with --sweep"},
      {"--jobs",
       {"sweep on 2 jobs"},
       "kv events",
       {"map", "array"},
       "--kv-events: one replay at a time publishes, not a --sweep"},
      {"--quota", {"on"}, "policy", {"belady"}, "--quota: not with --policy belady"},
      {"--block-tokens",
       {"64"},
       "workload",
       {"chats", "subagents"},
       "--block-tokens: only mooncake and bailian traces have hash ids"},
  };
  return CombinationTable(std::move(features), std::move(refusals));
}

CombinationTable::CombinationTable(std::vector<Feature> features, std::vector<PairRefusal> refusals)
    : features_(std::move(features)), refusals_(std::move(refusals)) {
  for (const Feature& f : features_) {
    if (f.values.empty() || f.values.size() >= kUnset) {
      throw std::logic_error("feature " + f.name + ": between 1 and 254 values");
    }
  }
  for (const PairRefusal& r : refusals_) {  // every name resolves
    for (const std::string& v : r.a_values) value(feature(r.a), v);
    for (const std::string& v : r.b_values) value(feature(r.b), v);
  }
}

std::size_t CombinationTable::feature(std::string_view name) const {
  for (std::size_t f = 0; f < features_.size(); ++f) {
    if (features_[f].name == name) return f;
  }
  throw std::out_of_range(fmt::format("no feature '{}' in the combination table", name));
}

uint8_t CombinationTable::value(std::size_t feature, std::string_view name) const {
  const std::vector<FeatureValue>& values = features_.at(feature).values;
  for (std::size_t v = 0; v < values.size(); ++v) {
    if (values[v].name == name) return static_cast<uint8_t>(v);
  }
  throw std::out_of_range(
      fmt::format("feature '{}' has no value '{}'", features_.at(feature).name, name));
}

const FeatureValue& CombinationTable::value_of(const Cell& cell, std::size_t feature) const {
  return features_.at(feature).values.at(cell.values.at(feature));
}

bool CombinationTable::is(const Cell& cell, std::string_view feature,
                          std::string_view value) const {
  const std::size_t f = this->feature(feature);
  return cell.values.at(f) == this->value(f, value);
}

bool CombinationTable::off(const Cell& cell, std::string_view feature) const {
  return cell.values.at(this->feature(feature)) == 0;
}

Cell CombinationTable::with(Cell cell, std::string_view feature, std::string_view value) const {
  const std::size_t f = this->feature(feature);
  cell.values.at(f) = this->value(f, value);
  return cell;
}

std::optional<std::string> CombinationTable::refusal(const Cell& cell) const {
  for (std::size_t f = 0; f < features_.size(); ++f) {
    if (cell.values[f] == kUnset) continue;
    const FeatureValue& v = value_of(cell, f);
    const std::string& why = cell.mode == RunMode::kCache ? v.cache_refusal : v.engine_refusal;
    if (!why.empty()) return why;
  }
  const auto holds = [&](const std::string& name, const std::vector<std::string>& values) {
    const std::size_t f = feature(name);
    return cell.values[f] != kUnset &&
           std::find(values.begin(), values.end(), value_of(cell, f).name) != values.end();
  };
  for (const PairRefusal& r : refusals_) {
    if (holds(r.a, r.a_values) && holds(r.b, r.b_values)) return r.message;
  }
  return std::nullopt;
}

Cell CombinationTable::cell(RunMode mode,
                            const std::vector<std::pair<std::string, std::string>>& set) const {
  Cell c{mode, std::vector<uint8_t>(features_.size(), 0), std::nullopt};
  for (const auto& [f, v] : set) c = with(std::move(c), f, v);
  return c;
}

std::string CombinationTable::describe(const Cell& cell) const {
  std::string out(to_string(cell.mode));
  const char* separator = ": ";
  for (std::size_t f = 0; f < features_.size(); ++f) {
    if (cell.values[f] == 0 || cell.values[f] == kUnset) continue;
    out += fmt::format("{}{}={}", separator, features_[f].name, value_of(cell, f).name);
    separator = ", ";
  }
  if (cell.budget_tokens) out += fmt::format(" (budget {} tokens)", *cell.budget_tokens);
  return out;
}

std::vector<Cell> CombinationTable::covering_array(RunMode mode) const {
  const std::size_t n = features_.size();
  using Pair = std::array<std::size_t, 4>;  // feature f, its value, feature g > f, its value
  std::set<Pair> uncovered;
  const Cell unset{mode, std::vector<uint8_t>(n, kUnset), std::nullopt};
  for (std::size_t f = 0; f < n; ++f) {
    for (std::size_t g = f + 1; g < n; ++g) {
      for (uint8_t a = 0; a < features_[f].values.size(); ++a) {
        for (uint8_t b = 0; b < features_[g].values.size(); ++b) {
          Cell c = unset;
          c.values[f] = a;
          c.values[g] = b;
          if (!refusal(c)) uncovered.insert({f, a, g, b});
        }
      }
    }
  }
  const auto new_pairs = [&](const Cell& c, std::size_t h) {
    std::size_t count = 0;
    for (std::size_t k = 0; k < n; ++k) {
      if (k == h || c.values[k] == kUnset) continue;
      const Pair p =
          k < h ? Pair{k, c.values[k], h, c.values[h]} : Pair{h, c.values[h], k, c.values[k]};
      count += uncovered.count(p);
    }
    return count;
  };
  std::vector<Cell> cells;
  while (!uncovered.empty()) {
    // Start from the first pair not yet run; give every other feature the value that runs the
    // most new pairs beside those already chosen (the lowest such value on a tie).
    const Pair seed = *uncovered.begin();
    Cell c = unset;
    c.values[seed[0]] = static_cast<uint8_t>(seed[1]);
    c.values[seed[2]] = static_cast<uint8_t>(seed[3]);
    for (std::size_t h = 0; h < n; ++h) {
      if (c.values[h] != kUnset) continue;
      std::optional<uint8_t> best;
      std::size_t best_count = 0;
      for (uint8_t v = 0; v < features_[h].values.size(); ++v) {
        c.values[h] = v;
        if (refusal(c)) continue;
        const std::size_t count = new_pairs(c, h);
        if (!best || count > best_count) {
          best = v;
          best_count = count;
        }
      }
      if (!best) {
        c.values[h] = kUnset;
        throw std::logic_error(
            fmt::format("no value of '{}' fits beside {}", features_[h].name, describe(c)));
      }
      c.values[h] = *best;
    }
    for (std::size_t f = 0; f < n; ++f) {
      for (std::size_t g = f + 1; g < n; ++g) uncovered.erase({f, c.values[f], g, c.values[g]});
    }
    cells.push_back(std::move(c));
  }
  return cells;
}

std::vector<std::string> command_line(const CombinationTable& table, const Cell& cell,
                                      const CombinationContext& context) {
  const FeatureValue& workload = table.value_of(cell, table.feature("workload"));
  const FeatureValue& blocks = table.value_of(cell, table.feature("--block-tokens"));
  std::string trace_key = workload.name;
  if (blocks.name != "off" && context.traces.contains(workload.name + "@" + blocks.name)) {
    trace_key += "@" + blocks.name;
  }
  const uint64_t budget = cell.budget_tokens.value_or(workload.sizes.device_tokens);
  const std::map<std::string, std::string> values = {
      {"trace", context.traces.at(trace_key)},
      {"budget", std::to_string(budget)},
      {"budget2", std::to_string(2 * budget)},
      {"host", std::to_string(workload.sizes.host_tokens)},
      {"high_size", fmt::format("{}KiB", budget * 9 / 10 * kKibPerToken)},
      {"low_size", fmt::format("{}KiB", budget * 7 / 10 * kKibPerToken)},
      {"redis", context.redis},
      {"cluster", context.cluster}};
  std::vector<std::string> args = {"replay", "--json", "--mode", std::string(to_string(cell.mode))};
  for (std::size_t f = 0; f < table.features().size(); ++f) {
    const FeatureValue& v = table.value_of(cell, f);
    for (const std::string& flag : cell.mode == RunMode::kCache ? v.cache_flags : v.engine_flags) {
      if (flag == "--remote-wait-writes" && !context.wait_writes) continue;
      args.push_back(fill(flag, values));
    }
  }
  return args;
}

}  // namespace radixkv::testing
