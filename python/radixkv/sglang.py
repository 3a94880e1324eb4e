"""SGLang's prefix cache (``RadixCache``) over radixkv's C++ radix tree.

A drop-in for ``sglang.srt.mem_cache.radix_cache.RadixCache`` as SGLang's scheduler calls it
(the ``BasePrefixCache`` interface: match_prefix, insert, evict, inc_lock_ref / dec_lock_ref,
the sizes, cache_finished_req / cache_unfinished_req, take_events). The names, arguments,
return values and semantics follow SGLang's ``python/sglang/srt/mem_cache/radix_cache.py`` and
``base_prefix_cache.py`` (sgl-project/sglang, the positional-argument API of the 0.4/0.5
releases); no code is taken from them.

The KV slots belong to the engine: the trie stores them (one int64 per page, the page's first
slot, since a page's slots are contiguous; per token at page size 1) and hands them back through
``token_to_kv_pool_allocator.free(tensor)`` when it evicts them. python/src/slot_trie.h explains
how the tree indexes pages it does not own.

Where it differs from SGLang's Python tree, on purpose:

- eviction takes pages from the tails of least recently used leaves (radixkv's eviction), so
  ``evict(n)`` frees ceil(n / page_size) pages, not whole leaves that may overshoot ``n``;
- a node handle is refused (RuntimeError) by ``inc_lock_ref`` / ``dec_lock_ref`` once any of its
  pages was evicted: lock what ``match_prefix`` returned before anything evicts, as SGLang's
  scheduler does;
- ``eviction_policy`` takes radixkv's policy specs (``"lru"``, ``"lfu"``, ``"fifo"``,
  ``"sieve"``, ``"gdsf:depth_pages=512"``...); SGLang's ``"mru"`` and ``"filo"`` are not offered;
- no host tier (HiCache): ``last_host_node`` is ``last_device_node`` and ``host_hit_length`` is 0.

Tensors come back as torch int64 tensors on the allocator's device when torch imports, else as
NumPy arrays. ``import radixkv.sglang`` needs neither.
"""

from dataclasses import dataclass, field
from typing import Any, Iterator, List, NamedTuple, Optional, Union

from . import _radixkv

__all__ = [
    "AllBlocksCleared",
    "BaseKey",
    "BlockRemoved",
    "BlockStored",
    "MatchResult",
    "RadixCache",
    "RadixKey",
    "TreeNode",
]

TreeNode = _radixkv._TrieNode

# SGLang's eviction policies that radixkv has no counterpart for. "lru", "lfu", "fifo" and
# "priority" are radixkv policies of the same names, and any other radixkv spec is accepted too.
_UNSUPPORTED_SGLANG_POLICIES = ("mru", "filo")
_MEDIUM_GPU = "GPU"
_DEFAULT_CAPACITY_PAGES = 1 << 20


class RadixKey:
    """A key of the cache: token ids and an optional ``extra_key`` (a namespace: LoRA id, salt).

    Keys with different extra keys never share cached prefixes.
    """

    __slots__ = ("token_ids", "extra_key")

    def __init__(self, token_ids: List[int], extra_key: Optional[str] = None):
        self.token_ids = token_ids
        self.extra_key = extra_key

    def __len__(self) -> int:
        return len(self.token_ids)

    def __iter__(self) -> Iterator[int]:
        return iter(self.token_ids)

    def __getitem__(self, index: Union[int, slice]) -> "RadixKey":
        if isinstance(index, slice):
            return RadixKey(self.token_ids[index], self.extra_key)
        return RadixKey([self.token_ids[index]], self.extra_key)

    def __repr__(self) -> str:
        preview = list(self.token_ids[:10])
        more = "..." if len(self.token_ids) > 10 else ""
        return f"RadixKey(extra_key={self.extra_key!r}, token_ids={preview}{more})"


BaseKey = RadixKey


class _RootNode:
    """The root of the tree: matching nothing ends here; locking it does nothing."""

    evicted = False
    alive = True

    def __repr__(self) -> str:
        return "<radixkv trie root>"


class MatchResult(NamedTuple):
    device_indices: Any  # int64 slots of the matched prefix (torch tensor, or NumPy array)
    last_device_node: Any
    last_host_node: Any
    host_hit_length: int = 0


@dataclass
class BlockStored:
    block_hashes: List[int]
    parent_block_hash: Optional[int]
    token_ids: List[int]
    block_size: int
    lora_id: Optional[int] = None
    medium: Optional[str] = _MEDIUM_GPU


@dataclass
class BlockRemoved:
    block_hashes: List[int]
    medium: Optional[str] = _MEDIUM_GPU


@dataclass
class AllBlocksCleared:
    pass


_torch_module = None


def _torch():
    """torch when it imports, else None (then results are NumPy arrays)."""
    global _torch_module
    if _torch_module is None:
        try:
            import torch
        except ImportError:
            _torch_module = False
        else:
            _torch_module = torch
    return _torch_module or None


class RadixCache:
    """SGLang's RadixCache backed by radixkv's C++ radix tree (see the module's docstring)."""

    def __init__(
        self,
        req_to_token_pool,
        token_to_kv_pool_allocator,
        page_size: int = 1,
        disable: bool = False,
        enable_kv_cache_events: bool = False,
        eviction_policy: str = "lru",
        max_cached_pages: Optional[int] = None,
    ):
        if not isinstance(page_size, int) or page_size < 1:
            raise ValueError(f"page_size must be a positive int, got {page_size!r}")
        policy = str(eviction_policy).lower()
        if policy in _UNSUPPORTED_SGLANG_POLICIES:
            raise ValueError(
                f"eviction_policy {eviction_policy!r}: radixkv has no such policy; its policies "
                f"are {[p['name'] for p in _radixkv.policies()]}"
            )
        self.req_to_token_pool = req_to_token_pool
        self.token_to_kv_pool_allocator = token_to_kv_pool_allocator
        self.page_size = page_size
        self.disable = disable
        self.enable_kv_cache_events = enable_kv_cache_events
        self.eviction_policy = policy
        allocator_device = getattr(token_to_kv_pool_allocator, "device", None)
        if allocator_device is not None:
            self.device = allocator_device
        else:
            torch = _torch()
            self.device = torch.device("cpu") if torch else "cpu"
        if max_cached_pages is None:
            slots = getattr(token_to_kv_pool_allocator, "size", None)
            max_cached_pages = (
                -(-int(slots) // page_size) + 1 if isinstance(slots, int) and slots > 0
                else _DEFAULT_CAPACITY_PAGES
            )
        self._trie = _radixkv._SlotTrie(page_size, max_cached_pages, policy, enable_kv_cache_events)
        self._namespaces = {None: 0}
        self.root_node = _RootNode()

    # ----- keys, namespaces and tensors -----

    def _namespace(self, extra_key) -> int:
        ns = self._namespaces.get(extra_key)
        if ns is None:
            ns = len(self._namespaces)
            self._namespaces[extra_key] = ns
        return ns

    def _indices(self, slots):
        torch = _torch()
        if torch is None:
            return slots
        tensor = torch.from_numpy(slots)
        if str(self.device) != "cpu":
            tensor = tensor.to(self.device)
        return tensor

    def _empty_indices(self):
        torch = _torch()
        if torch is not None:
            return torch.empty((0,), dtype=torch.int64, device=self.device)
        import numpy

        return numpy.empty((0,), dtype=numpy.int64)

    def _free(self, slots) -> None:
        if len(slots) > 0:
            self.token_to_kv_pool_allocator.free(slots)

    # ----- BasePrefixCache -----

    def reset(self) -> None:
        """Drops everything cached (the slots are not freed: the engine resets its allocator)."""
        self._trie.reset()

    def match_prefix(self, key: RadixKey, **kwargs) -> MatchResult:
        """The longest cached prefix of ``key`` in whole pages: its slots and its last node."""
        if self.disable or len(key) == 0:
            return MatchResult(self._empty_indices(), self.root_node, self.root_node, 0)
        _, slots, node = self._trie.match(self._namespace(key.extra_key), key.token_ids)
        last = node if node is not None else self.root_node
        return MatchResult(self._indices(slots), last, last, 0)

    def insert(self, key: RadixKey, value=None, **kwargs) -> int:
        """Caches ``key``'s whole pages with ``value``'s slots (one per token; None: the token
        ids, as SGLang's tests do). Returns the length of the prefix that was cached already;
        the caller frees its own slots for that prefix."""
        if self.disable:
            return 0
        if value is None:
            value = key.token_ids
        cached, _, _ = self._trie.insert(self._namespace(key.extra_key), key.token_ids, value)
        return cached

    def evict(self, num_tokens: int) -> None:
        """Evicts at least ``num_tokens`` tokens (whole pages) if that many are evictable, least
        recently used first, and frees their slots through the allocator."""
        if self.disable or num_tokens <= 0:
            return
        pages = -(-int(num_tokens) // self.page_size)
        slots = self._trie.evict(pages)
        if len(slots) > 0:
            self._free(self._indices(slots))

    def inc_lock_ref(self, node) -> int:
        """Protects ``node`` and its ancestors from eviction; returns the change of
        evictable_size() (zero or negative)."""
        if self.disable or node is self.root_node:
            return 0
        return -self._trie.lock(node) * self.page_size

    def dec_lock_ref(self, node) -> int:
        """Undoes one inc_lock_ref; returns the change of evictable_size() (zero or positive)."""
        if self.disable or node is self.root_node:
            return 0
        return self._trie.unlock(node) * self.page_size

    def evictable_size(self) -> int:
        return self._trie.evictable_pages * self.page_size

    def protected_size(self) -> int:
        return self._trie.protected_pages * self.page_size

    def total_size(self) -> int:
        return self._trie.cached_pages * self.page_size

    def pretty_print(self) -> None:
        print(self._trie.dump(), end="")
        print(f"#tokens: {self.total_size()}")

    def take_events(self) -> list:
        """The KV events since the last call: BlockStored / BlockRemoved per page,
        AllBlocksCleared per reset. Empty unless enable_kv_cache_events."""
        if not self.enable_kv_cache_events:
            return []
        events = []
        for kind, block_hash, parent, tokens in self._trie.take_events():
            if kind == "stored":
                events.append(BlockStored([block_hash], parent, tokens, len(tokens)))
            elif kind == "removed":
                events.append(BlockRemoved([block_hash]))
            else:
                events.append(AllBlocksCleared())
        return events

    # ----- requests (SGLang's Req fields) -----

    def _protected_len(self, req) -> int:
        # Tokens of the request whose slots are the tree's (not the request's own): SGLang's
        # cache_protected_len where the request has one, else its matched prefix.
        protected = getattr(req, "cache_protected_len", None)
        return len(req.prefix_indices) if protected is None else protected

    def cache_finished_req(self, req) -> None:
        """Caches a finished request's prompt and output (the last output token has no KV yet),
        frees its duplicate and unaligned slots, its req_to_token row, and unlocks it."""
        token_ids = (list(req.origin_input_ids) + list(req.output_ids))[:-1]
        kv_indices = self.req_to_token_pool.req_to_token[req.req_pool_idx, : len(token_ids)]
        if self.disable:
            self._free(kv_indices)
            self.req_to_token_pool.free(req.req_pool_idx)
            return
        aligned = len(token_ids) // self.page_size * self.page_size
        values = kv_indices[:aligned].to(_torch().int64)
        cached = self.insert(RadixKey(token_ids[:aligned], req.extra_key), values)
        self._free(kv_indices[self._protected_len(req) : cached])
        self._free(kv_indices[aligned:])
        self.req_to_token_pool.free(req.req_pool_idx)
        self.dec_lock_ref(req.last_node)

    def cache_unfinished_req(self, req, chunked: bool = False) -> None:
        """Caches what a running request has computed (``fill_ids``), moves its lock to the new
        end and points its req_to_token row and ``prefix_indices`` at the tree's slots."""
        if self.disable:
            return
        torch = _torch()
        token_ids = list(req.fill_ids)
        kv_indices = self.req_to_token_pool.req_to_token[req.req_pool_idx, : len(token_ids)]
        aligned = len(token_ids) // self.page_size * self.page_size
        key = RadixKey(token_ids[:aligned], req.extra_key)
        protected = self._protected_len(req)
        cached = self.insert(key, kv_indices[:aligned].to(torch.int64))
        self._free(kv_indices[protected:cached])
        new_indices, new_last_node, _, _ = self.match_prefix(key)
        self.req_to_token_pool.write(
            (req.req_pool_idx, slice(protected, len(new_indices))),
            new_indices[protected:].to(kv_indices.dtype),
        )
        self.dec_lock_ref(req.last_node)
        self.inc_lock_ref(new_last_node)
        if len(new_indices) < len(kv_indices):
            req.prefix_indices = torch.cat([new_indices, kv_indices[len(new_indices) :]])
        else:
            req.prefix_indices = new_indices
        req.last_node = new_last_node
        req.cache_protected_len = len(new_indices)
