// radixkv._SlotTrie: the C++ half of radixkv.sglang (slot_trie.h). The Python half
// (radixkv/sglang.py) turns SGLang's keys, requests and tensors into these calls.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <memory>
#include <string>

#include "arrays.h"
#include "bindings.h"
#include "exclusive.h"
#include "slot_trie.h"
#include "tokens.h"

namespace py = pybind11;

namespace radixkv::python {
namespace {

// The trie with its one-thread guard.
struct BoundTrie {
  BoundTrie(uint32_t page_size, uint32_t capacity_pages, std::string policy, bool events)
      : trie(page_size, capacity_pages, std::move(policy), events) {}
  // For the calls that only read: refused while another thread is inside a call that changes it.
  const SlotTrie& read() const {
    check_idle(busy, "RadixCache");
    return trie;
  }
  SlotTrie trie;
  std::atomic<bool> busy{false};
};

py::object node_or_none(const std::shared_ptr<NodeRef>& node) {
  return node ? py::cast(node) : py::none();
}

}  // namespace

void bind_sglang(py::module_& m) {
  py::class_<NodeRef, std::shared_ptr<NodeRef>>(m, "_TrieNode",
                                                "A node of a _SlotTrie (see radixkv.sglang).")
      .def_property_readonly(
          "alive", [](const NodeRef& n) { return n.alive; },
          "False once a page of the node was evicted or the cache reset.")
      .def_property_readonly(
          "evicted", [](const NodeRef& n) { return !n.alive; },
          "True once a page of the node was evicted or the cache reset.")
      .def("__repr__", [](const NodeRef& n) {
        if (!n.alive) return std::string("<radixkv trie node (evicted)>");
        return "<radixkv trie node: " + std::to_string(n.node->num_pages()) + " pages, " +
               std::to_string(n.node->lock_count()) + " locks>";
      });

  py::class_<BoundTrie>(m, "_SlotTrie",
                        "radixkv's radix tree over an engine's KV slots (radixkv.sglang's core).")
      .def(py::init<uint32_t, uint32_t, std::string, bool>(), py::arg("page_size"),
           py::arg("capacity_pages"), py::arg("policy") = "lru", py::arg("events") = false)
      .def(
          "match",
          [](BoundTrie& self, Namespace ns, py::handle tokens) {
            const Exclusive guard(self.busy, "RadixCache");
            const std::vector<int32_t> key = to_int32s(tokens, "match_prefix: key");
            std::vector<int64_t> slots;
            SlotTrie::Match found;
            {
              py::gil_scoped_release release;
              found = self.trie.match(ns, key, slots);
            }
            return py::make_tuple(found.tokens, to_numpy(std::move(slots)),
                                  node_or_none(found.node));
          },
          py::arg("namespace"), py::arg("tokens"),
          "(matched tokens, int64 slots of the matched tokens, node or None)")
      .def(
          "insert",
          [](BoundTrie& self, Namespace ns, py::handle tokens, py::handle slots) {
            const Exclusive guard(self.busy, "RadixCache");
            const std::vector<int32_t> key = to_int32s(tokens, "insert: key");
            const std::vector<int64_t> values = to_int64s(slots, "insert: value");
            SlotTrie::Insert inserted;
            {
              py::gil_scoped_release release;
              inserted = self.trie.insert(ns, key, values);
            }
            return py::make_tuple(inserted.cached_tokens, inserted.new_pages,
                                  node_or_none(inserted.node));
          },
          py::arg("namespace"), py::arg("tokens"), py::arg("slots"),
          "(tokens already cached, pages added, node or None)")
      .def(
          "evict",
          [](BoundTrie& self, uint64_t pages) {
            const Exclusive guard(self.busy, "RadixCache");
            std::vector<int64_t> slots;
            {
              py::gil_scoped_release release;
              self.trie.evict(pages, slots);
            }
            return to_numpy(std::move(slots));
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
      .def("reset",
           [](BoundTrie& self) {
             const Exclusive guard(self.busy, "RadixCache");
             self.trie.reset();
           })
      .def_property_readonly("page_size", [](const BoundTrie& s) { return s.read().page_size(); })
      .def_property_readonly("capacity_pages",
                             [](const BoundTrie& s) { return s.read().capacity_pages(); })
      .def_property_readonly("cached_pages",
                             [](const BoundTrie& s) { return s.read().cached_pages(); })
      .def_property_readonly("protected_pages",
                             [](const BoundTrie& s) { return s.read().protected_pages(); })
      .def_property_readonly("evictable_pages",
                             [](const BoundTrie& s) { return s.read().evictable_pages(); })
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
                  py::make_tuple(kind, e.block_hash,
                                 e.has_parent ? py::int_(e.parent_hash) : py::object(py::none()),
                                 py::cast(e.tokens)));
            }
            return out;
          },
          "(kind, block hash, parent hash or None, tokens) per event since the last call")
      .def("dump", [](const BoundTrie& s) { return s.read().dump(); })
      .def(
          "verify", [](const BoundTrie& s) { s.read().verify(); },
          "Checks the tree's invariants and the trie's page accounting (RuntimeError if broken).");
}

}  // namespace radixkv::python
