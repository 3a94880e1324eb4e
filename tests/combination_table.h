// The combination test's table (issue 28; tests/test_combinations.cpp): the features of `radixkv
// replay` that a user switches on, each a row with its values and the flags each value adds in
// cache mode and in engine mode, the pairs the command line refuses (with what it says), and a
// covering array: a list of cells, each one run of the command, such that every pair of values of
// two features that the command line accepts is in some cell, in each mode.
//
// A new feature is a new row in combination_table() (and, where the command line refuses it
// beside another, a PairRefusal); the covering array, the runs and the invariants follow.
//
// Flags may name placeholders, filled per cell and per run (command_line()):
//   {trace}        the workload's trace (written in the block size --block-tokens names)
//   {budget}       the workload's device budget in tokens (engine mode: the pool)
//   {budget2}      twice that (a sweep's second capacity)
//   {host}         the workload's host tier in tokens
//   {high_size}    90 % of the budget as a size, {low_size} 70 %
//   {redis}        the single Redis server's URL, {cluster} the Redis Cluster's
//   {prefix}       a remote key prefix of this run alone (its pages start empty)
//   {scratch}      a folder of this run alone
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace radixkv::testing {

enum class RunMode { kCache, kEngine };
inline constexpr RunMode kRunModes[] = {RunMode::kCache, RunMode::kEngine};
std::string_view to_string(RunMode mode);

// What a feature is; the invariants ask different things of each kind.
enum class FeatureKind {
  kObserver,  // must change no figure of the report (KV events and --dump-pages, --jobs)
  kTier,      // a tier under the cache (host, remote)
  kBudget,    // how the budget is spent (watermarks)
  kPolicy,    // which page is evicted
  kWorkload,  // what is replayed (the trace, how it is read)
};

// A workload's sizes: small enough that every run evicts, large enough that every prompt fits on
// the device (the exact LRU oracle of docs/tiers.md needs that).
struct WorkloadSizes {
  uint64_t device_tokens = 0;
  uint64_t host_tokens = 0;
};

struct FeatureValue {
  std::string name;
  std::vector<std::string> cache_flags;   // what it adds to the command line in cache mode
  std::vector<std::string> engine_flags;  // ... in engine mode
  // Not empty: the command line refuses this value's flags in that mode, and says this.
  std::string cache_refusal, engine_refusal;
  WorkloadSizes sizes;  // workload rows only
};

struct Feature {
  std::string name;
  FeatureKind kind;
  std::vector<FeatureValue> values;  // values[0]: off, or the default
};

// The command line refuses any cell where feature `a` has one of `a_values` and feature `b` one of
// `b_values`, and says `message`.
struct PairRefusal {
  std::string a;
  std::vector<std::string> a_values;
  std::string b;
  std::vector<std::string> b_values;
  std::string message;
};

inline constexpr uint8_t kUnset = 0xff;

// One run of `radixkv replay`: a mode and a value of each feature.
struct Cell {
  RunMode mode = RunMode::kCache;
  std::vector<uint8_t> values;            // per feature, an index into its values (or kUnset)
  std::optional<uint64_t> budget_tokens;  // instead of the workload's device budget (an oracle)
  bool operator==(const Cell&) const = default;
};

class CombinationTable {
 public:
  CombinationTable(std::vector<Feature> features, std::vector<PairRefusal> refusals);

  const std::vector<Feature>& features() const { return features_; }
  const std::vector<PairRefusal>& refusals() const { return refusals_; }
  // Index of the feature, and of its value, by name; throws std::out_of_range naming it.
  std::size_t feature(std::string_view name) const;
  uint8_t value(std::size_t feature, std::string_view name) const;
  const FeatureValue& value_of(const Cell& cell, std::size_t feature) const;
  bool is(const Cell& cell, std::string_view feature, std::string_view value) const;
  bool off(const Cell& cell, std::string_view feature) const;  // at values[0]
  // The cell with `feature` set to `value`.
  Cell with(Cell cell, std::string_view feature, std::string_view value) const;

  // What the command line says when it refuses `cell` (unset features ignored), or nullopt.
  std::optional<std::string> refusal(const Cell& cell) const;
  // A cell of `mode` with every feature at values[0], or at the values given.
  Cell cell(RunMode mode, const std::vector<std::pair<std::string, std::string>>& set = {}) const;
  // "cache: host tier=write_back, remote tier=redis, ..." (features at values[0] left out).
  std::string describe(const Cell& cell) const;

  // Every pair (feature f = a, feature g = b), f < g, that a cell of `mode` may hold, in a greedy
  // covering array: deterministic, each cell valid, every such pair in some cell.
  std::vector<Cell> covering_array(RunMode mode) const;

 private:
  std::vector<Feature> features_;
  std::vector<PairRefusal> refusals_;
};

// The table the test runs. Its policy row has a value per policy `radixkv replay --help` lists
// (tests/test_combination_table.cpp checks that it names exactly those).
CombinationTable combination_table();

// Where the runs of a test process find their inputs.
struct CombinationContext {
  // Trace files by workload name; "NAME@B": the same trace written in B-token blocks.
  std::map<std::string, std::string> traces;
  std::string redis, cluster;  // URLs
  bool wait_writes = true;     // the binary has --remote-wait-writes (450c845's had not)
};

// The arguments of `radixkv` that run `cell` ("replay", "--json", the mode, each feature's flags),
// every placeholder filled but {prefix} and {scratch}, which differ from run to run
// (tests/combination_runs.h). Throws std::logic_error for a placeholder it does not know.
std::vector<std::string> command_line(const CombinationTable& table, const Cell& cell,
                                      const CombinationContext& context);

}  // namespace radixkv::testing
