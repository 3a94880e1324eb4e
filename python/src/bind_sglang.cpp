// radixkv._SlotTrie: the C++ half of radixkv.sglang (slot_trie.h). The Python half
// (radixkv/sglang.py) turns SGLang's keys, requests, nodes and tensors into these calls.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "arrays.h"
#include "bindings.h"
#include "exclusive.h"
#include "slot_trie.h"
#include "tokens.h"

namespace py = pybind11;

namespace radixkv::python {
namespace {

// Keys and evictions at least this long run without the GIL; shorter calls keep it (releasing
// and taking it back costs more than they do).
constexpr std::size_t kReleaseGilFrom = 4096;

// The engine's copy callbacks (a Python object with write_to_host(device, host) and
// load_from_host(host, device), each given two int64 NumPy arrays of slots), called with the GIL
// taken back inside the trie's calls.
class PythonCopies final : public HostSlotCopies {
 public:
  explicit PythonCopies(py::object target) : target_(std::move(target)) {}
  void write_to_host(std::span<const int64_t> device, std::span<const int64_t> host) override {
    call("write_to_host", device, host);
  }
  void load_from_host(std::span<const int64_t> host, std::span<const int64_t> device) override {
    call("load_from_host", host, device);
  }

 private:
  void call(const char* name, std::span<const int64_t> from, std::span<const int64_t> to) {
    py::gil_scoped_acquire gil;
    target_.attr(name)(copy_to_numpy(from), copy_to_numpy(to));
  }
  static py::array_t<int64_t> copy_to_numpy(std::span<const int64_t> values) {
    py::array_t<int64_t> out(static_cast<py::ssize_t>(values.size()));
    std::copy(values.begin(), values.end(), out.mutable_data());
    return out;
  }
  py::object target_;
};

// The trie with its one-thread guard and the scratch buffers of key conversion.
struct BoundTrie {
  BoundTrie(SlotTrieConfig config, py::object copies)
      : python_copies(copies.is_none() ? nullptr : std::make_unique<PythonCopies>(copies)),
        trie(with_copies(std::move(config), python_copies.get())) {}
  static SlotTrieConfig with_copies(SlotTrieConfig config, HostSlotCopies* copies) {
    config.copies = copies;
    return config;
  }
  // For the calls that only read: refused while another thread is inside a call that changes it.
  SlotTrie& read() {
    check_idle(busy, "RadixCache");
    return trie;
  }
  std::unique_ptr<PythonCopies> python_copies;  // outlives trie
  SlotTrie trie;
  std::atomic<bool> busy{false};
  std::vector<int32_t> tokens;
  std::vector<int64_t> slots;
};

py::object node_or_none(const std::shared_ptr<NodeRef>& node) {
  return node ? py::cast(node) : py::none();
}

py::list nodes(const std::vector<std::shared_ptr<NodeRef>>& refs) {
  py::list out;
  for (const auto& ref : refs) out.append(py::cast(ref));
  return out;
}

Window window_of(std::size_t first, std::optional<std::size_t> limit) {
  return {.first = first, .limit = limit.value_or(std::numeric_limits<std::size_t>::max())};
}

// SGLang's priority (any int, 0 by default, lower evicted first) on radixkv's scale (0..100, 35
// by default, lower evicted first): 35 + p, clamped.
AccessHint hint_of(int64_t priority, bool chunked) {
  return {.priority = static_cast<int32_t>(
              std::clamp<int64_t>(kDefaultPriority + priority, kMinPriority, kMaxPriority)),
          .counts_as_hit = !chunked};
}

std::string hex(const PageHash& hash) { return fmt::format("{:016x}{:016x}", hash.high, hash.low); }

}  // namespace

void bind_sglang(py::module_& m) {
  // dynamic_attr: radixkv.sglang keeps a node's TreeNode view on its handle (`view`), so that one
  // node gives one view for as long as either lives.
  py::class_<NodeRef, std::shared_ptr<NodeRef>>(
      m, "_TrieNode", "A node of a _SlotTrie (see radixkv.sglang).", py::dynamic_attr())
      .def_property_readonly(
          "alive", [](const NodeRef& n) { return n.alive; },
          "False once the node's tail page left the trie, or the cache was reset.")
      .def_property_readonly(
          "id", [](const NodeRef& n) { return n.id; }, "Unique among the trie's handles.")
      .def("__repr__", [](const NodeRef& n) {
        return fmt::format("<radixkv trie node {}{}>", n.id, n.alive ? "" : " (evicted)");
      });

  py::class_<BoundTrie>(m, "_SlotTrie",
                        "radixkv's radix tree over an engine's KV slots (radixkv.sglang's core).")
      .def(py::init([](uint32_t page_size, uint32_t capacity_pages, std::string policy, bool events,
                       uint32_t host_pages, std::string host_policy, std::string write_policy,
                       py::object copies) {
             if (host_pages > 0 && copies.is_none()) {
               throw std::invalid_argument(
                   "a host tier needs the engine's copies (write_to_host, load_from_host)");
             }
             return std::make_unique<BoundTrie>(
                 SlotTrieConfig{.page_size = page_size,
                                .capacity_pages = capacity_pages,
                                .policy = std::move(policy),
                                .record_events = events,
                                .host_pages = host_pages,
                                .host_policy = std::move(host_policy),
                                .write_policy = std::move(write_policy)},
                 host_pages > 0 ? copies : py::none());
           }),
           py::arg("page_size"), py::arg("capacity_pages"), py::arg("policy") = "lru",
           py::arg("events") = false, py::arg("host_pages") = 0, py::arg("host_policy") = "lru",
           py::arg("write_policy") = "write_through", py::arg("copies") = py::none())
      .def(
          "match",
          [](BoundTrie& self, Namespace ns, py::handle tokens, std::size_t first,
             std::optional<std::size_t> limit) {
            const Exclusive guard(self.busy, "RadixCache");
            const auto key =
                read_int32s(tokens, "match_prefix: key", self.tokens, window_of(first, limit));
            SlotTrie::Match found;
            {
              std::optional<py::gil_scoped_release> release;
              if (key.values.size() >= kReleaseGilFrom) release.emplace();
              found = self.trie.match(ns, key.values);
            }
            py::array_t<int64_t> slots(static_cast<py::ssize_t>(found.device_tokens));
            self.trie.write_slots(self.trie.matched_pages(), slots.mutable_data());
            return py::make_tuple(found.device_tokens, found.host_tokens, std::move(slots),
                                  node_or_none(found.device_node), node_or_none(found.node));
          },
          py::arg("namespace"), py::arg("tokens"), py::arg("first") = 0,
          py::arg("limit") = py::none(),
          "(device tokens, host tokens, int64 slots of the device run, device node, node); "
          "tokens[first:limit] is the key, nodes are None at the namespace root")
      .def(
          "insert",
          [](BoundTrie& self, Namespace ns, py::handle tokens, py::handle slots, int64_t priority,
             bool chunked, std::size_t first, std::optional<std::size_t> limit) {
            const Exclusive guard(self.busy, "RadixCache");
            const auto key =
                read_int32s(tokens, "insert: key", self.tokens, window_of(first, limit));
            const auto values = read_int64s(slots, "insert: value", self.slots);
            SlotTrie::Insert inserted;
            {
              std::optional<py::gil_scoped_release> release;
              if (key.values.size() >= kReleaseGilFrom) release.emplace();
              inserted =
                  self.trie.insert(ns, key.values, values.values, hint_of(priority, chunked));
            }
            return py::make_tuple(inserted.cached_tokens, inserted.new_pages,
                                  node_or_none(inserted.node));
          },
          py::arg("namespace"), py::arg("tokens"), py::arg("slots"), py::arg("priority") = 0,
          py::arg("chunked") = false, py::arg("first") = 0, py::arg("limit") = py::none(),
          "(tokens the device had already, pages added, node or None); SGLang's priority, and "
          "chunked (no hit counted), reach the policy")
      .def(
          "evict",
          [](BoundTrie& self, uint64_t pages) {
            const Exclusive guard(self.busy, "RadixCache");
            const uint64_t most = std::min(pages, self.trie.evictable_pages());
            py::array_t<int64_t> slots(static_cast<py::ssize_t>(most * self.trie.page_size()));
            int64_t* out = slots.mutable_data();
            std::optional<py::gil_scoped_release> release;
            if (most * self.trie.page_size() >= kReleaseGilFrom) release.emplace();
            const uint64_t evicted = self.trie.evict(pages, out);
            release.reset();
            if (evicted == most) return slots;
            // Fewer than evictable_pages() promised: hand back only what was written.
            py::array_t<int64_t> written(static_cast<py::ssize_t>(evicted * self.trie.page_size()));
            std::copy_n(out, written.size(), written.mutable_data());
            return written;
          },
          py::arg("pages"), "Evicts up to `pages` pages; returns their slots in eviction order.")
      .def(
          "lock",
          [](BoundTrie& self, const NodeRef& node) {
            const Exclusive guard(self.busy, "RadixCache");
            return self.trie.lock(node);
          },
          py::arg("node"), "Locks the node's path; returns the pages that became protected.")
      .def(
          "unlock",
          [](BoundTrie& self, const NodeRef& node) {
            const Exclusive guard(self.busy, "RadixCache");
            return self.trie.unlock(node);
          },
          py::arg("node"), "Unlocks the node's path; returns the pages that became evictable.")
      .def(
          "host_tokens_above",
          [](BoundTrie& self, const NodeRef& node) { return self.read().host_tokens_above(node); },
          py::arg("node"), "Host-only tokens on the path to the node.")
      .def(
          "load",
          [](BoundTrie& self, const NodeRef& node, py::handle slots) {
            const Exclusive guard(self.busy, "RadixCache");
            const auto values = read_int64s(slots, "init_load_back: slots", self.slots);
            self.trie.load(node, values.values);  // the copies call back into Python: keep the GIL
          },
          py::arg("node"), py::arg("slots"),
          "Loads the host run above the node into these device slots (the engine copies).")
      .def("reset",
           [](BoundTrie& self) {
             const Exclusive guard(self.busy, "RadixCache");
             self.trie.reset();
           })
      // --- Node views (radixkv.sglang.TreeNode).
      .def("node_key",
           [](BoundTrie& self, const NodeRef& node) {
             const auto tokens = self.read().key(node);
             return py::list(py::cast(std::vector<TokenId>(tokens.begin(), tokens.end())));
           })
      .def("node_token_before",
           [](BoundTrie& self, const NodeRef& node) { return self.read().token_before(node); })
      .def("node_namespace",
           [](BoundTrie& self, const NodeRef& node) { return self.read().name_space(node); })
      .def("node_parent",
           [](BoundTrie& self, const NodeRef& node) {
             return node_or_none(self.read().parent(node));
           })
      .def("node_children",
           [](BoundTrie& self, const NodeRef& node) { return nodes(self.read().children(node)); })
      .def("root_children",
           [](BoundTrie& self, Namespace ns) { return nodes(self.read().root_children(ns)); })
      .def(
          "node_facts",
          [](BoundTrie& self, const NodeRef& node) {
            const RadixNode& x = self.read().facts(node);
            const AccessHistory past = self.read().history(node);
            py::dict out;
            out["lock_ref"] = x.lock_count();
            out["hit_count"] = past.hits;
            out["last_access_time"] = past.last.now;
            out["last_access_tick"] = past.last.tick;
            out["creation_tick"] = past.created;
            out["priority"] = past.last.priority - kDefaultPriority;  // SGLang's scale (hint_of)
            out["pages"] = x.num_pages();
            out["device_pages"] = x.device_pages();
            out["host_pages"] = x.host_pages();
            return out;
          },
          "lock_ref, hit_count, last_access_time (time.monotonic() seconds), last_access_tick "
          "and creation_tick (the tree's clock), priority (SGLang's scale), pages, device_pages, "
          "host_pages")
      .def("node_value",
           [](BoundTrie& self, const NodeRef& node) {
             return to_numpy(self.read().device_slots(node));
           })
      .def("node_host_value",
           [](BoundTrie& self, const NodeRef& node) -> py::object {
             auto slots = self.read().host_slots(node);
             if (!slots) return py::none();
             return to_numpy(std::move(*slots));
           })
      .def("node_hashes",
           [](BoundTrie& self, const NodeRef& node) {
             py::list out;
             for (const PageHash& hash : self.read().page_hashes(node)) out.append(hex(hash));
             return out;
           })
      .def(
          "all_slots",
          [](BoundTrie& self, const std::vector<Namespace>& namespaces) {
            std::vector<int64_t> out;
            for (Namespace ns : namespaces) self.read().append_all_slots(ns, out);
            return to_numpy(std::move(out));
          },
          py::arg("namespaces"))
      // --- Sizes and the rest.
      .def_property_readonly("page_size", [](BoundTrie& s) { return s.read().page_size(); })
      .def_property_readonly("capacity_pages",
                             [](BoundTrie& s) { return s.read().capacity_pages(); })
      .def_property_readonly("cached_pages", [](BoundTrie& s) { return s.read().cached_pages(); })
      .def_property_readonly("protected_pages",
                             [](BoundTrie& s) { return s.read().protected_pages(); })
      .def_property_readonly("evictable_pages",
                             [](BoundTrie& s) { return s.read().evictable_pages(); })
      .def_property_readonly("host_cached_pages",
                             [](BoundTrie& s) { return s.read().host_cached_pages(); })
      .def(
          "take_events",
          [](BoundTrie& self) {
            const Exclusive guard(self.busy, "RadixCache");
            py::list out;
            for (SlotTrieEvent& e : self.trie.take_events()) {
              const char* kind = e.kind == SlotTrieEvent::kStored    ? "stored"
                                 : e.kind == SlotTrieEvent::kRemoved ? "removed"
                                                                     : "cleared";
              out.append(
                  py::make_tuple(kind, e.tier == Tier::kDevice ? "device" : "host", e.block_hash,
                                 e.has_parent ? py::int_(e.parent_hash) : py::object(py::none()),
                                 py::cast(e.tokens)));
            }
            return out;
          },
          "(kind, tier, block hash, parent hash or None, tokens) per event since the last call")
      .def("dump", [](BoundTrie& s) { return s.read().dump(); })
      .def(
          "verify", [](BoundTrie& s) { s.read().verify(); },
          "Checks the tree's invariants and the trie's page accounting (RuntimeError if broken).");
}

}  // namespace radixkv::python
