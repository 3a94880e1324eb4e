"""TreeNode for radixkv.sglang: SGLang's node fields, on a record made by TreeNode() or as views of
radixkv's C++ nodes (radixkv.sglang's caches make those). Import it from radixkv.sglang."""

import sys
import time
from typing import List, Optional

from ._sglang_api import RadixKey


def _view_field(name: str, read):
    """A TreeNode field: stored on a node made by TreeNode(), read from the C++ node on a view
    (read-only there: the cache changes nodes through its calls)."""

    def get(self):
        if self._cache is None:
            return self._fields[name]
        return read(self)

    def set_(self, value):
        if self._cache is not None:
            raise AttributeError(
                f"TreeNode.{name} of a cache's node is a view of radixkv's tree; change the cache "
                "through its calls"
            )
        self._fields[name] = value

    return property(get, set_)


def node_facts(node) -> dict:
    """The C++ node's facts (pages, locks, hits, access stamps) as a dict."""
    return node._cache._trie.node_facts(node._ref)


def _read_key(node):
    if node._ref is None:  # the root
        return RadixKey([])
    return node._cache._key_of_node(node._ref)


def _read_value(node):
    if node._ref is None:
        return node._cache._empty_indices()
    if not node._ref.alive or node_facts(node)["device_pages"] == 0:
        return None
    return node._cache._indices(node._cache._trie.node_value(node._ref))


def _read_host_value(node):
    if node._ref is None:
        return node._cache._empty_indices()
    if not node._ref.alive:
        return None
    host = node._cache._trie.node_host_value(node._ref)
    return None if host is None else node._cache._indices(host)


def _read_parent(node):
    if node._ref is None:
        return None
    return node._cache._view(node._cache._trie.node_parent(node._ref))


def _read_children(node):
    cache = node._cache
    if node._ref is None:
        refs = [r for ns in range(len(cache._namespace_keys)) for r in cache._trie.root_children(ns)]
    else:
        refs = cache._trie.node_children(node._ref)
    children = {}
    for ref in refs:
        child = cache._view(ref)
        children[child.key.child_key(cache.page_size)] = child
    return children


def _read_fact(name: str, root_value):
    def read(node):
        return root_value if node._ref is None else node_facts(node)[name]

    return read


def _read_hashes(node):
    if node._ref is None:
        return []
    return node._cache._trie.node_hashes(node._ref)


class TreeNode:
    """A node of SGLang's radix tree.

    Made by ``TreeNode()`` (as SGLang's tests do), it is a plain record whose fields are set
    freely. Handed out by a cache (``match_prefix``, ``insert``, ``parent``, ``children``) it is a
    view of radixkv's C++ node: ``key`` (a RadixKey of the node's edge), ``value`` (its device
    slots, None once none is on the device), ``host_value`` (its host slots when every page has a
    host copy), ``parent``, ``children`` (keyed like SGLang's), ``lock_ref``, ``hit_count``,
    ``last_access_time``, ``creation_time``, ``priority``, ``hash_value``, and the flags
    ``evicted`` / ``backuped``. A view lives as long as the node's last page is cached on some
    tier; then it is dead: ``evicted`` is True, ``value`` and ``host_value`` are None, the other
    views and locking raise RuntimeError. The same node gives the same view object.
    """

    counter = 0

    __slots__ = ("id", "_cache", "_ref", "_fields", "host_ref_counter", "loading", "__weakref__")

    def __init__(self, id: Optional[int] = None, priority: int = 0):
        now = time.monotonic()
        self._cache = None
        self._ref = None
        self._fields = {
            "children": {},
            "parent": None,
            "key": None,
            "value": None,
            "lock_ref": 0,
            "last_access_time": now,
            "creation_time": now,
            "hit_count": 0,
            "host_value": None,
            "hash_value": None,
            "priority": priority,
        }
        self.host_ref_counter = 0
        self.loading = False
        self.id = TreeNode.counter if id is None else id
        TreeNode.counter += 1

    @classmethod
    def _view_of(cls, cache, ref) -> "TreeNode":
        node = cls.__new__(cls)
        node._cache, node._ref, node._fields = cache, ref, None
        node.host_ref_counter = 0
        node.loading = False
        node.id = 0 if ref is None else ref.id
        return node

    key = _view_field("key", _read_key)
    value = _view_field("value", _read_value)
    host_value = _view_field("host_value", _read_host_value)
    parent = _view_field("parent", _read_parent)
    children = _view_field("children", _read_children)
    lock_ref = _view_field("lock_ref", _read_fact("lock_ref", 1))
    hit_count = _view_field("hit_count", _read_fact("hit_count", 0))
    last_access_time = _view_field("last_access_time", _read_fact("last_access_time", 0.0))
    creation_time = _view_field("creation_time", _read_fact("creation_tick", 0))
    priority = _view_field("priority", _read_fact("priority", -sys.maxsize))
    hash_value = _view_field("hash_value", _read_hashes)

    @property
    def evicted(self) -> bool:
        if self._ref is not None and not self._ref.alive:
            return True
        return self.value is None

    @property
    def backuped(self) -> bool:
        return self.host_value is not None

    @property
    def alive(self) -> bool:
        """False once a view's node left the cache (or the cache was reset)."""
        return self._ref is None or self._ref.alive

    def protect_host(self) -> None:
        """Counts a user of the host value (SGLang's storage backup). radixkv's host tier does not
        read it: lock the node to keep it."""
        self.host_ref_counter += 1

    def release_host(self) -> None:
        if self.host_ref_counter <= 0:
            raise RuntimeError("release_host: the host reference counter is already zero")
        self.host_ref_counter -= 1

    def get_last_hash_value(self) -> Optional[str]:
        hashes = self.hash_value
        return hashes[-1] if hashes else None

    def get_prefix_hash_values(self, node: "TreeNode") -> List[str]:
        """The page hashes from the root down to ``node`` (SGLang calls it with the parent)."""
        chain = []
        while node is not None and node.hash_value is not None:
            chain.append(node.hash_value)
            node = node.parent
        return [h for hashes in reversed(chain) for h in hashes]

    def __lt__(self, other: "TreeNode") -> bool:
        # Two live views compare by the tree's clock, which orders accesses as SGLang's times do
        # (the device policy need not keep a time: LRU keeps only the tick); records by their time.
        if (self._ref is not None and other._ref is not None and self._ref.alive
                and other._ref.alive):
            return node_facts(self)["last_access_tick"] < node_facts(other)["last_access_tick"]
        return self.last_access_time < other.last_access_time

    def __repr__(self) -> str:
        if self._cache is None:
            return f"TreeNode(id={self.id})"
        if self._ref is None:
            return "TreeNode(root)"
        state = "" if self._ref.alive else ", evicted"
        return f"TreeNode(id={self.id}{state})"

