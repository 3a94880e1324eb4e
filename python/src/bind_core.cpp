// The core API: KvLayout, PagePool (page memory as NumPy arrays), PrefixCacheRuntime, the policy
// registry and the replay of the command line (radixkv/__init__.py wraps _run_cli).
//
// Lifetimes: a runtime keeps its pool alive (py::keep_alive), a page array keeps its pool alive
// (the array's base), and block tables are copies: a block table changes with every commit,
// append and finish, so a view would be silently stale; a copy is exactly the table at the call.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <atomic>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.h"
#include "bindings.h"
#include "disk/disk_tier.h"
#include "eviction/policy_registry.h"
#include "exclusive.h"
#include "kv_store/heap.h"
#include "kv_store/kv_layout.h"
#include "kv_store/page_pool.h"
#include "runtime/prefix_cache_runtime.h"
#include "runtime_options.h"
#include "tokens.h"
#include "tools/cli/cli.h"

namespace py = pybind11;

namespace radixkv::python {
namespace {

struct BoundRuntime {
  // `disk`: the disk tier under the runtime, owned here (nullptr: none); it outlives the runtime.
  BoundRuntime(PagePool& pool, const RuntimeConfig& config, TierConfig tiers,
               std::unique_ptr<disk::DiskTier> disk_tier)
      : disk(std::move(disk_tier)),
        runtime(pool, config, with_disk(std::move(tiers), disk.get())) {}
  static TierConfig with_disk(TierConfig tiers, disk::DiskTier* tier) {
    if (tier != nullptr) tiers.remote = tier;
    return tiers;
  }
  // For the calls that only read: refused while another thread is inside a call that changes it.
  const PrefixCacheRuntime& read() const {
    check_idle(busy, "PrefixCacheRuntime");
    return runtime;
  }
  std::unique_ptr<disk::DiskTier> disk;
  PrefixCacheRuntime runtime;
  std::atomic<bool> busy{false};
};

std::unique_ptr<PageBackend> backend_named(const std::string& name) {
  if (name == "accounting") return make_accounting_backend();
  if (name == "host") return make_host_backend();
  throw std::invalid_argument(fmt::format(
      "PagePool: backend '{}' is unknown; 'accounting' (ids and refcounts only) or 'host' "
      "(page memory in host RAM)",
      name));
}

py::array_t<int32_t> block_table_copy(std::span<const PageId> table) {
  std::vector<int32_t> out(table.size());
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (table[i] > PageId{std::numeric_limits<int32_t>::max()}) {
      throw std::overflow_error(fmt::format("page id {} does not fit an int32", table[i]));
    }
    out[i] = static_cast<int32_t>(table[i]);
  }
  return to_numpy(std::move(out));
}

py::dict commit_dict(const CommitResult& r) {
  py::dict d;
  d["new_pages"] = r.new_pages;
  d["duplicate_pages"] = r.duplicate_pages;
  return d;
}

py::dict stats_dict(const RuntimeStats& s) {
  py::dict d;
  d["admits"] = s.admits;
  d["admit_no_space"] = s.admit_no_space;
  d["admit_too_large"] = s.admit_too_large;
  d["extend_no_space"] = s.extend_no_space;
  d["finishes"] = s.finishes;
  d["aborts"] = s.aborts;
  d["prompt_tokens"] = s.prompt_tokens;
  d["reused_tokens"] = s.reused_tokens;
  d["device_hit_tokens"] = s.device_hit_tokens;
  d["host_hit_tokens"] = s.host_hit_tokens;
  d["prefill_tokens"] = s.prefill_tokens;
  d["decode_tokens"] = s.decode_tokens;
  d["committed_pages"] = s.committed_pages;
  d["duplicate_pages"] = s.duplicate_pages;
  d["evicted_pages"] = s.evicted_pages;
  d["remote_hit_tokens"] = s.remote_hit_tokens;
  d["remote_no_staging"] = s.remote_no_staging;
  d["uncached_pages"] = s.uncached_pages;
  d["peak_cached_pages"] = s.peak_cached_pages;
  d["partial_hit_tokens"] = s.partial_hit_tokens;
  d["holds"] = s.holds;
  d["releases"] = s.releases;
  return d;
}

// The disk tier's counters, as the replay's JSON names them.
void add_disk_stats(py::dict& d, const disk::DiskTier& tier, uint32_t page_tokens) {
  const disk::DiskTierStats s = tier.stats();
  d["disk_hit_tokens"] = s.loaded_pages * page_tokens;
  d["disk_loaded_pages"] = s.loaded_pages;
  d["disk_written_pages"] = s.written_pages;
  d["disk_evictions"] = s.evictions;
  d["disk_bad_pages"] = s.bad_pages;
  d["disk_recovered_pages"] = s.recovered_pages;
}

std::string status_name(RuntimeStatus status) {
  switch (status) {
    case RuntimeStatus::kOk:
      return "ok";
    case RuntimeStatus::kNoSpace:
      return "no_space";
    case RuntimeStatus::kTooLarge:
      return "too_large";
  }
  return "unknown";
}

// What admit returns to Python: the C++ result with the block table copied.
struct PyAdmitResult {
  std::string status;
  std::optional<SeqHandle> seq;
  uint32_t reused_tokens = 0;
  uint32_t position_offset = 0;
  uint32_t device_hit_tokens = 0;
  uint32_t host_hit_tokens = 0;
  uint32_t partial_hit_tokens = 0;
  LoadTicket load_ticket = 0;
  py::object block_table;
  uint64_t evicted_pages = 0;
  uint64_t short_pages = 0;
};

void bind_layout(py::module_& m) {
  py::class_<KvLayout>(m, "KvLayout",
                       "The shape of one model's KV cache and what a token and a page cost.\n"
                       "bytes_per_token = 2 * layers * kv_heads * head_dim * dtype_bytes.")
      .def(py::init([](uint32_t layers, uint32_t kv_heads, uint32_t head_dim, uint32_t dtype_bytes,
                       uint32_t page_tokens) {
             KvLayout layout{layers, kv_heads, head_dim, dtype_bytes, page_tokens};
             layout.validate();
             return layout;
           }),
           py::kw_only(), py::arg("layers") = 1, py::arg("kv_heads") = 1, py::arg("head_dim") = 1,
           py::arg("dtype_bytes") = 2, py::arg("page_tokens") = 16)
      .def_readonly("layers", &KvLayout::layers)
      .def_readonly("kv_heads", &KvLayout::kv_heads)
      .def_readonly("head_dim", &KvLayout::head_dim)
      .def_readonly("dtype_bytes", &KvLayout::dtype_bytes)
      .def_readonly("page_tokens", &KvLayout::page_tokens)
      .def_property_readonly("bytes_per_token", &KvLayout::bytes_per_token)
      .def_property_readonly("bytes_per_page", &KvLayout::bytes_per_page)
      .def_static("preset", &KvLayout::preset, py::arg("name"), py::arg("page_tokens") = 16,
                  "A published model's layout: one of preset_names().")
      .def_static("preset_names",
                  [] {
                    std::vector<std::string> names;
                    for (auto n : KvLayout::preset_names()) names.emplace_back(n);
                    return names;
                  })
      .def("__repr__", [](const KvLayout& l) { return "KvLayout(" + l.to_string() + ")"; });
}

void bind_pool(py::module_& m) {
  py::class_<PagePool>(m, "PagePool",
                       "A fixed number of KV pages with a free list and a refcount per page.\n"
                       "backend='accounting' keeps ids and counts only; 'host' also holds each\n"
                       "page's bytes in host memory, readable and writable through page().")
      .def(
          py::init([](const KvLayout& layout, uint32_t capacity_pages, const std::string& backend) {
            return std::make_unique<PagePool>(layout, capacity_pages, backend_named(backend));
          }),
          py::arg("layout"), py::arg("capacity_pages"), py::arg("backend") = "accounting")
      .def_property_readonly("layout", &PagePool::layout)
      .def_property_readonly("capacity_pages", &PagePool::capacity_pages)
      .def_property_readonly("free_pages", &PagePool::free_pages)
      .def_property_readonly("used_pages", &PagePool::used_pages)
      .def_property_readonly("bytes_per_page", &PagePool::bytes_per_page)
      .def_property_readonly("capacity_bytes", &PagePool::capacity_bytes)
      .def("refcount", &PagePool::refcount, py::arg("page"))
      .def(
          "page",
          [](py::object self, PageId page) {
            PagePool& pool = self.cast<PagePool&>();
            const std::span<std::byte> bytes = pool.host_bytes(page);
            require_module("numpy", "PagePool.page");
            // A view of the page's bytes; the array keeps the pool alive. Pages never move.
            return py::array_t<uint8_t>({bytes.size()}, {1},
                                        reinterpret_cast<uint8_t*>(bytes.data()), self);
          },
          py::arg("page"),
          "The page's bytes as a writable NumPy uint8 array (a view, valid while the pool\n"
          "lives; it keeps the pool alive). Host backend only: RuntimeError otherwise.");
}

void bind_runtime(py::module_& m) {
  py::class_<SeqHandle>(m, "Sequence", "A handle to one admitted request (slot, generation).")
      .def_readonly("slot", &SeqHandle::slot)
      .def_readonly("generation", &SeqHandle::generation)
      .def("__eq__", [](SeqHandle a, SeqHandle b) { return a == b; })
      .def("__hash__", [](SeqHandle s) { return (uint64_t{s.slot} << 32) | s.generation; })
      .def("__repr__", [](SeqHandle s) {
        return fmt::format("Sequence(slot={}, generation={})", s.slot, s.generation);
      });

  py::class_<PyAdmitResult>(m, "AdmitResult", "What admit() returns.")
      .def_readonly("status", &PyAdmitResult::status, "'ok', 'no_space' or 'too_large'")
      .def_property_readonly("ok", [](const PyAdmitResult& r) { return r.status == "ok"; })
      .def_readonly("seq", &PyAdmitResult::seq, "the Sequence when ok, else None")
      .def_readonly("reused_tokens", &PyAdmitResult::reused_tokens)
      .def_readonly("position_offset", &PyAdmitResult::position_offset,
                    "the first position to compute (== reused_tokens)")
      .def_readonly("device_hit_tokens", &PyAdmitResult::device_hit_tokens,
                    "of reused_tokens: already on the device")
      .def_readonly("host_hit_tokens", &PyAdmitResult::host_hit_tokens,
                    "of reused_tokens: being loaded from the host tier")
      .def_readonly("partial_hit_tokens", &PyAdmitResult::partial_hit_tokens,
                    "of reused_tokens: copied from part of a cached page (partial_reuse)")
      .def_readonly("load_ticket", &PyAdmitResult::load_ticket,
                    "compute only once load_done(load_ticket); 0: nothing to wait for")
      .def_readonly("block_table", &PyAdmitResult::block_table,
                    "int32 page ids, a copy taken at admit (None when refused)")
      .def_readonly("evicted_pages", &PyAdmitResult::evicted_pages)
      .def_readonly("short_pages", &PyAdmitResult::short_pages)
      .def("__repr__", [](const PyAdmitResult& r) {
        return fmt::format("AdmitResult(status='{}', reused_tokens={}, evicted_pages={})", r.status,
                           r.reused_tokens, r.evicted_pages);
      });

  using R = BoundRuntime;
  py::class_<R>(m, "PrefixCacheRuntime",
                "The adapter a batch scheduler calls: admit, commit, append_token, finish, abort.\n"
                "It claims `pool` for its whole life (one runtime per pool) and keeps it alive.")
      .def(py::init([](PagePool& pool, uint64_t cache_bytes, double high_watermark,
                       double low_watermark, std::string policy, PagePool* host_pool,
                       uint64_t host_cache_bytes, double host_high_watermark,
                       double host_low_watermark, std::string host_policy, std::string write_policy,
                       bool page_hashes, std::optional<std::string> disk_path,
                       uint64_t disk_capacity_bytes, std::string disk_policy,
                       std::string disk_write_policy, std::string model, bool partial_reuse,
                       bool retention, double hold_share, int32_t hold_priority,
                       std::optional<py::dict> quotas, std::optional<py::dict> host_quotas) {
             RuntimeConfig config;
             config.cache_bytes = cache_bytes;
             config.high_watermark = high_watermark;
             config.low_watermark = low_watermark;
             config.policy = std::move(policy);
             config.partial_reuse = partial_reuse;
             if (retention) {
               config.retention =
                   RetentionConfig{.hold_share = hold_share, .hold_priority = hold_priority};
             }
             if (quotas)
               config.quotas = quotas_from(*quotas, {"quotas", "device", pool.bytes_per_page()});
             TierConfig tiers;
             tiers.host.pool = host_pool;
             tiers.host.cache_bytes = host_cache_bytes;
             tiers.host.high_watermark = host_high_watermark;
             tiers.host.low_watermark = host_low_watermark;
             tiers.host.policy = std::move(host_policy);
             if (host_quotas) {
               if (host_pool == nullptr) {
                 throw py::value_error("PrefixCacheRuntime: host_quotas needs a host_pool");
               }
               tiers.host.quotas =
                   quotas_from(*host_quotas, {"host_quotas", "host", host_pool->bytes_per_page()});
             }
             tiers.host.write_policy = std::move(write_policy);
             tiers.page_hashes = page_hashes;
             std::unique_ptr<disk::DiskTier> disk;
             if (disk_path) {
               disk::DiskTierConfig d{*disk_path, pool.layout(), std::move(model),
                                      disk_capacity_bytes};
               d.policy = std::move(disk_policy);
               d.write_policy = std::move(disk_write_policy);
               disk = std::make_unique<disk::DiskTier>(std::move(d));
             }
             return std::make_unique<R>(pool, config, tiers, std::move(disk));
           }),
           py::arg("pool"), py::kw_only(), py::arg("cache_bytes") = 0,
           py::arg("high_watermark") = 0.95, py::arg("low_watermark") = 0.85,
           py::arg("policy") = "lru", py::arg("host_pool") = nullptr,
           py::arg("host_cache_bytes") = 0, py::arg("host_high_watermark") = 1.0,
           py::arg("host_low_watermark") = 1.0, py::arg("host_policy") = "lru",
           py::arg("write_policy") = "write_back", py::arg("page_hashes") = false,
           py::arg("disk_path") = py::none(), py::arg("disk_capacity_bytes") = 0,
           py::arg("disk_policy") = "lru", py::arg("disk_write_policy") = "write_back",
           py::arg("model") = "", py::arg("partial_reuse") = false, py::arg("retention") = false,
           py::arg("hold_share") = RetentionConfig{}.hold_share,
           py::arg("hold_priority") = RetentionConfig{}.hold_priority,
           py::arg("quotas") = py::none(), py::arg("host_quotas") = py::none(),
           py::keep_alive<1, 2>(), py::keep_alive<1, 7>(),
           "host_pool adds a host tier under `pool` (docs/tiers.md): its own budget, policy and\n"
           "write policy ('write_back', 'write_through', 'write_through_selective[:hits=N]').\n"
           "disk_path adds a disk tier (docs/tiers.md, 'The disk tier') in that directory, with\n"
           "its byte budget disk_capacity_bytes, policy and write policy; a runtime made later on\n"
           "the same path and layout (and `model`, which keeps models of one shape apart) finds\n"
           "its pages again.\n"
           "partial_reuse copies the matching leading tokens of a cached page (docs/runtime.md).\n"
           "retention wraps the policy in a retention layer (docs/policies.md, 'Retention hints\n"
           "and session holds'): admit(retention=...) hints, hold() and release(); holds stay\n"
           "within hold_share of the evictable pages and rank as hold_priority.\n"
           "quotas {namespace: (min, max)} gives tenants shares of the device budget (floats:\n"
           "fractions, ints: bytes; docs/policies.md, 'Quotas'); host_quotas the same over the\n"
           "host tier's budget.")
      .def(
          "admit",
          [](R& self, py::handle prompt, uint64_t request_id, Namespace ns, int32_t priority,
             uint64_t session, uint32_t agent, const py::object& retention) {
            const Exclusive guard(self.busy, "PrefixCacheRuntime");
            const std::vector<int32_t> tokens = to_int32s(prompt, "admit: prompt");
            const std::vector<TokenRangeRetention> ranges = retention_from(retention);
            AdmitResult r;
            {
              py::gil_scoped_release release;
              r = self.runtime.admit({.id = request_id,
                                      .name_space = ns,
                                      .prompt = tokens,
                                      .priority = priority,
                                      .session = session,
                                      .agent = agent,
                                      .retention = ranges});
            }
            PyAdmitResult out;
            out.status = status_name(r.status);
            out.reused_tokens = r.reused_tokens;
            out.position_offset = r.position_offset;
            out.device_hit_tokens = r.device_hit_tokens;
            out.host_hit_tokens = r.host_hit_tokens;
            out.partial_hit_tokens = r.partial_hit_tokens;
            out.load_ticket = r.load_ticket;
            out.block_table = py::none();
            out.evicted_pages = r.evicted_pages;
            out.short_pages = r.short_pages;
            if (r.ok()) {
              out.seq = r.seq;
              out.block_table = block_table_copy(r.block_table);
            }
            return out;
          },
          py::arg("prompt"), py::kw_only(), py::arg("request_id") = 0, py::arg("namespace") = 0,
          py::arg("priority") = kDefaultPriority, py::arg("session") = 0, py::arg("agent") = 0,
          py::arg("retention") = py::none(),
          "Matches the prompt, locks the match and allocates pages for the rest.\n"
          "session/agent name the agent conversation and sub-agent hold() keeps; retention is\n"
          "a list of (token_start, token_end or None, priority 0..100, duration_s or None),\n"
          "TensorRT-LLM's token-range retention (needs retention=True on the runtime).")
      .def(
          "commit",
          [](R& self, SeqHandle seq, uint32_t computed_tokens) {
            const Exclusive guard(self.busy, "PrefixCacheRuntime");
            CommitResult r;
            {
              py::gil_scoped_release release;
              r = self.runtime.commit(seq, computed_tokens);
            }
            return commit_dict(r);
          },
          py::arg("seq"), py::arg("computed_tokens"),
          "The model wrote KV for tokens [0, computed_tokens): cache their whole pages.")
      .def(
          "mark_computed",
          [](R& self, SeqHandle seq, uint32_t computed_tokens) {
            const Exclusive guard(self.busy, "PrefixCacheRuntime");
            self.runtime.mark_computed(seq, computed_tokens);
          },
          py::arg("seq"), py::arg("computed_tokens"))
      .def(
          "append_token",
          [](R& self, SeqHandle seq, int32_t token) {
            const Exclusive guard(self.busy, "PrefixCacheRuntime");
            const ExtendResult r = self.runtime.append_token(seq, token);
            py::dict d;
            d["status"] = status_name(r.status);
            d["ok"] = r.ok();
            d["new_page"] = r.new_page;
            d["evicted_pages"] = r.evicted_pages;
            return d;
          },
          py::arg("seq"), py::arg("token"))
      .def(
          "finish",
          [](R& self, SeqHandle seq) {
            const Exclusive guard(self.busy, "PrefixCacheRuntime");
            CommitResult r;
            {
              py::gil_scoped_release release;
              r = self.runtime.finish(seq);
            }
            return commit_dict(r);
          },
          py::arg("seq"), "Caches prompt + answer in whole pages and releases the sequence.")
      .def(
          "abort",
          [](R& self, SeqHandle seq) {
            const Exclusive guard(self.busy, "PrefixCacheRuntime");
            self.runtime.abort(seq);
          },
          py::arg("seq"))
      .def(
          "block_table",
          [](const R& self, SeqHandle seq) {
            return block_table_copy(self.read().view(seq).block_table);
          },
          py::arg("seq"), "The sequence's block table now, as a copy (int32 page ids).")
      .def(
          "sequence",
          [](const R& self, SeqHandle seq) {
            const SequenceView v = self.read().view(seq);
            py::dict d;
            d["request_id"] = v.request_id;
            d["namespace"] = v.name_space;
            d["priority"] = v.priority;
            d["prompt_tokens"] = v.prompt_tokens;
            d["reused_tokens"] = v.reused_tokens;
            d["computed_tokens"] = v.computed_tokens;
            d["committed_pages"] = v.committed_pages;
            d["tokens"] = std::vector<int32_t>(v.tokens.begin(), v.tokens.end());
            return d;
          },
          py::arg("seq"))
      .def("is_live", [](const R& self, SeqHandle seq) { return self.read().is_live(seq); })
      .def(
          "load_done",
          [](R& self, LoadTicket ticket) {
            const Exclusive guard(self.busy, "PrefixCacheRuntime");
            return self.runtime.load_done(ticket);
          },
          py::arg("ticket"), "Whether the host-tier loads of an admit's load_ticket are done.")
      .def(
          "wait_load",
          [](R& self, LoadTicket ticket) {
            const Exclusive guard(self.busy, "PrefixCacheRuntime");
            py::gil_scoped_release release;
            self.runtime.wait_load(ticket);
          },
          py::arg("ticket"), "Blocks (without the GIL) until the loads of `ticket` are done.")
      .def(
          "clear_cache",
          [](R& self) {
            const Exclusive guard(self.busy, "PrefixCacheRuntime");
            self.runtime.clear_cache();
          },
          "Drops every cached page of every tier (RuntimeError while a sequence is live).")
      .def(
          "evict",
          [](R& self, uint64_t pages) {
            const Exclusive guard(self.busy, "PrefixCacheRuntime");
            py::gil_scoped_release release;
            return self.runtime.evict(pages);
          },
          py::arg("pages"))
      .def(
          "reuse_cut", [](const R& self, std::size_t n) { return self.read().reuse_cut(n); },
          py::arg("prompt_tokens"))
      .def(
          "cached_prefix",
          [](const R& self, py::handle prompt, Namespace ns) {
            const std::vector<int32_t> tokens = to_int32s(prompt, "cached_prefix: prompt");
            return self.read().cached_prefix(ns, tokens);
          },
          py::arg("prompt"), py::kw_only(), py::arg("namespace") = 0)
      .def(
          "check_accounting", [](const R& self) { return self.read().check_accounting(); },
          "Verifies every page's refcount; returns the private page count.")
      .def("stats",
           [](const R& self) {
             py::dict d = stats_dict(self.read().stats());
             if (self.disk) add_disk_stats(d, *self.disk, self.runtime.page_tokens());
             return d;
           })
      .def(
          "metrics",
          [](const R& self) {
            std::ostringstream out;
            self.read().write_metrics(out);
            return out.str();
          },
          "The Prometheus text exposition (format 0.0.4) of the runtime's counters, gauges, "
          "latency histograms and live curve (docs/metrics.md).")
      .def(
          "start_miss_ratio_curve",
          [](R& self, uint32_t max_keys, double rate, uint64_t seed) {
            const Exclusive guard(self.busy, "PrefixCacheRuntime");
            metrics::ShardsConfig config;
            config.max_keys = max_keys;
            config.rate = rate;
            config.seed = seed;
            self.runtime.start_miss_ratio_curve(config);
          },
          py::kw_only(), py::arg("max_keys") = metrics::ShardsConfig::kDefaultMaxKeys,
          py::arg("rate") = metrics::ShardsConfig::kDefaultRate, py::arg("seed") = 0,
          "Starts the live miss-ratio curve afresh (off until called; docs/metrics.md).")
      .def(
          "miss_ratio_curve",
          [](const R& self) -> py::object {
            const metrics::PromptMrc* curve = self.read().miss_ratio_curve();
            if (curve == nullptr) return py::none();
            py::list points;
            for (const metrics::MrcPoint& p : curve->curve()) {
              py::dict d;
              d["multiple"] = p.multiple;
              d["capacity_tokens"] = p.capacity_tokens;
              d["hit_rate"] = p.hit_rate;
              points.append(d);
            }
            return points;
          },
          "The live curve's points, or None before start_miss_ratio_curve().")
      .def("set_now", [](R& self, double seconds) { self.runtime.set_now(seconds); })
      .def(
          "hold",
          [](R& self, uint64_t session, double seconds, uint32_t agent) {
            const Exclusive guard(self.busy, "PrefixCacheRuntime");
            self.runtime.hold(session, seconds, agent);
          },
          py::arg("session"), py::arg("seconds"), py::kw_only(), py::arg("agent") = 0,
          "Keeps the path the session's sub-agent last committed for `seconds` from now (the\n"
          "set_now clock; inf: until release), softly, e.g. while its agent runs a tool.\n"
          "RuntimeError without retention=True.")
      .def(
          "release",
          [](R& self, uint64_t session, uint32_t agent) {
            const Exclusive guard(self.busy, "PrefixCacheRuntime");
            self.runtime.release(session, agent);
          },
          py::arg("session"), py::kw_only(), py::arg("agent") = 0, "Ends hold(session).")
      .def_property_readonly("has_retention", [](const R& s) { return s.read().has_retention(); })
      .def_property_readonly("page_tokens", [](const R& s) { return s.read().page_tokens(); })
      .def_property_readonly("cached_pages", [](const R& s) { return s.read().cached_pages(); })
      .def_property_readonly("evictable_pages",
                             [](const R& s) { return s.read().evictable_pages(); })
      .def_property_readonly("host_cached_pages",
                             [](const R& s) {
                               const RadixTree& tree = s.read().tree();
                               return tree.has_host_tier() ? tree.host_cached_pages() : 0;
                             })
      .def_property_readonly("live_sequences", [](const R& s) { return s.read().live_sequences(); })
      .def("dump", [](const R& s) { return s.read().tree().dump(); });
}

void bind_policies(py::module_& m) {
  m.def(
      "policies",
      [] {
        py::list out;
        for (const PolicyInfo& info : policy_registry()) {
          py::list parameters;
          for (const PolicyParameter& p : info.parameters) {
            py::dict d;
            d["key"] = std::string(p.key);
            d["default"] = p.default_value;
            d["unit"] = std::string(p.unit);
            d["help"] = std::string(p.help);
            parameters.append(d);
          }
          py::dict d;
          d["name"] = std::string(info.name);
          d["summary"] = std::string(info.summary);
          d["parameters"] = parameters;
          out.append(d);
        }
        return out;
      },
      "The eviction policies, in registry order: name, summary, parameters with defaults.");
  m.def(
      "check_policy", [](const std::string& spec) { make_policy(spec); }, py::arg("spec"),
      "ValueError unless `spec` ('lru', 'gdsf:depth_pages=512') names a policy.");
}

void bind_heap(py::module_& m) {
  m.def("use_huge_pages", &heap::use_huge_pages, py::arg("on"),
        "Puts metadata mapped from now on in transparent huge pages (process-wide, off by "
        "default; for servers with large trees). False when the machine or build has none.");
}

void bind_cli(py::module_& m) {
  m.def(
      "_run_cli",
      [](const std::vector<std::string>& args) {
        std::ostringstream out, err;
        int code;
        {
          py::gil_scoped_release release;
          code = tools::run_cli(args, out, err);
        }
        return py::make_tuple(code, out.str(), err.str());
      },
      py::arg("args"), "Runs the radixkv command line in process: (exit code, stdout, stderr).");
}

}  // namespace

void bind_core(py::module_& m) {
  bind_layout(m);
  bind_pool(m);
  bind_runtime(m);
  bind_policies(m);
  bind_heap(m);
  bind_cli(m);
}

}  // namespace radixkv::python
