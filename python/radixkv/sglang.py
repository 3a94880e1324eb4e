"""SGLang's prefix cache (``RadixCache``, ``HiRadixCache``) over radixkv's C++ radix tree.

A drop-in for ``sglang.srt.mem_cache.radix_cache.RadixCache`` as SGLang's scheduler calls it: the
``BasePrefixCache`` interface in both of SGLang's call styles, the parameter objects of its current
releases (``match_prefix(MatchPrefixParams(key=...))``, ``insert(InsertParams(...))``,
``evict(EvictParams(...))``, ``RadixCache(CacheInitParams(...))``) and the positional calls of its
0.4/0.5 releases (``match_prefix(key)``, ``insert(key, value)``, ``evict(n)``,
``RadixCache(req_to_token_pool, token_to_kv_pool_allocator, page_size, ...)``). Names, arguments,
results and semantics follow SGLang's ``radix_cache.py``, ``base_prefix_cache.py``,
``hiradix_cache.py`` and ``schedule_policy.py`` (python/README.md names the commits); no code is
taken from them.

The KV slots belong to the engine: the trie stores them (one int64 per page, the page's first
slot, since a page's slots are contiguous; per token at page size 1) and hands them back through
``token_to_kv_pool_allocator.free(tensor)`` when it evicts them. python/src/slot_trie.h explains
how the tree indexes pages it does not own.

Where it differs from SGLang's Python tree, on purpose:

- eviction takes pages from the tails of evictable leaves in the policy's order, so
  ``evict(n)`` frees ceil(n / page_size) pages, not whole leaves that may overshoot ``n``;
- a node handle (``TreeNode``) lives as long as its node's last page is cached on some tier; once
  that page left, the handle is dead (``evicted``, views and locks refuse with RuntimeError):
  lock what ``match_prefix`` returned before anything evicts, as SGLang's scheduler does;
- ``eviction_policy`` takes radixkv's policy specs: SGLang's names (``"lru"``, ``"lfu"``,
  ``"fifo"``, ``"mru"``, ``"filo"``, ``"priority"``) and radixkv's others (``"sieve"``,
  ``"gdsf:depth_pages=512"``...). A node's priority is its latest access's (SGLang keeps the
  path's maximum); SGLang's priority p reaches the policy as 35 + p on radixkv's 0..100 scale;
- a node's hits count matches and inserts alike (SGLang counts inserts), chunked inserts not;
- ``hash_value`` holds radixkv's page hashes (XXH3-128, hex; the KV events carry their low 64
  bits), not SHA-256; ``last_access_time`` is ``time.monotonic()`` seconds, ``creation_time`` the
  tree's logical clock;
- a bigram key (EAGLE) holds raw tokens, as SGLang's current ``RadixKey`` does; a key of
  materialized pairs is refused.

Tensors come back as torch int64 tensors on the allocator's device when torch imports, else as
NumPy arrays. ``import radixkv.sglang`` needs neither.
"""

import weakref
from typing import List, Optional

from . import _radixkv
from ._sglang_api import (
    AllBlocksCleared,
    BaseKey,
    BlockRemoved,
    BlockStored,
    CacheInitParams,
    DecLockRefResult,
    EvictParams,
    EvictResult,
    IncLockRefResult,
    InitLoadBackParams,
    InsertParams,
    InsertResult,
    MatchPrefixParams,
    MatchResult,
    RadixKey,
    event_classes,
    fields_of,
    make_event,
    new_match,
)
from ._sglang_node import TreeNode, node_facts

__all__ = [
    "AllBlocksCleared",
    "BaseKey",
    "BlockRemoved",
    "BlockStored",
    "CacheInitParams",
    "DecLockRefResult",
    "EvictParams",
    "EvictResult",
    "HiRadixCache",
    "IncLockRefResult",
    "InitLoadBackParams",
    "InsertParams",
    "InsertResult",
    "MatchPrefixParams",
    "MatchResult",
    "RadixCache",
    "RadixKey",
    "TreeNode",
]

_DEFAULT_CAPACITY_PAGES = 1 << 20

# ----- torch and NumPy, imported only when needed -----

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


# ----- the cache -----


def _legacy_params(
    req_to_token_pool=None,
    token_to_kv_pool_allocator=None,
    page_size: int = 1,
    disable: bool = False,
    enable_kv_cache_events: bool = False,
    eviction_policy: str = "lru",
    max_cached_pages: Optional[int] = None,
    is_eagle: bool = False,
    disable_finished_insert: bool = False,
    eviction_policy_config=None,
    enable_metrics: bool = False,
) -> CacheInitParams:
    return CacheInitParams(
        disable=disable,
        req_to_token_pool=req_to_token_pool,
        token_to_kv_pool_allocator=token_to_kv_pool_allocator,
        page_size=page_size,
        is_eagle=is_eagle,
        eviction_policy=eviction_policy,
        eviction_policy_config=eviction_policy_config,
        disable_finished_insert=disable_finished_insert,
        enable_metrics=enable_metrics,
        enable_kv_cache_events=enable_kv_cache_events,
        max_cached_pages=max_cached_pages,
    )


def _is_params(obj) -> bool:
    return hasattr(obj, "token_to_kv_pool_allocator") and hasattr(obj, "page_size")


def _policy_spec(policy, config) -> str:
    spec = str(policy).lower()
    if config:
        spec += ":" + ",".join(f"{k}={v}" for k, v in config.items())
    return spec


class _CopiesToEngine:
    """The host tier's copies, handed to the engine's ``host_io`` as tensors (torch when it
    imports) of its device slots and its host slots."""

    def __init__(self, cache, host_io):
        # Weak: the trie (in C++, out of the garbage collector's sight) holds this object.
        self.cache, self.host_io = weakref.ref(cache), host_io

    def write_to_host(self, device, host):
        cache = self.cache()
        self.host_io.write_to_host(cache._indices(device), cache._host_indices(host))

    def load_from_host(self, host, device):
        cache = self.cache()
        self.host_io.load_from_host(cache._host_indices(host), cache._indices(device))


class RadixCache:
    """SGLang's RadixCache backed by radixkv's C++ radix tree (see the module's docstring).

    ``RadixCache(CacheInitParams(...))`` or ``RadixCache(req_to_token_pool,
    token_to_kv_pool_allocator, page_size=1, disable=False, enable_kv_cache_events=False,
    eviction_policy="lru", max_cached_pages=None)``.
    """

    def __init__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs.keys() - {"max_cached_pages"} and _is_params(args[0]):
            params = args[0]
            max_pages = kwargs.get("max_cached_pages", getattr(params, "max_cached_pages", None))
        else:
            params = _legacy_params(*args, **kwargs)
            max_pages = params.max_cached_pages
        self._setup(params, max_pages, host=None)

    @classmethod
    def create_simulated(
        cls,
        disable: bool = False,
        mock_allocator=None,
        page_size: int = 1,
        enable_kv_cache_events: bool = False,
    ) -> "RadixCache":
        """A cache without memory pools, for simulation (SGLang's waiting-queue tree)."""
        return cls(
            CacheInitParams(
                disable=disable,
                token_to_kv_pool_allocator=mock_allocator,
                page_size=page_size,
                enable_kv_cache_events=enable_kv_cache_events,
            )
        )

    def _setup(self, params, max_cached_pages, host) -> None:
        page_size = params.page_size
        if not isinstance(page_size, int) or page_size < 1:
            raise ValueError(f"page_size must be a positive int, got {page_size!r}")
        self.req_to_token_pool = params.req_to_token_pool
        self.token_to_kv_pool_allocator = params.token_to_kv_pool_allocator
        self.page_size = page_size
        self.disable = bool(params.disable)
        self.enable_kv_cache_events = bool(getattr(params, "enable_kv_cache_events", False))
        self.is_eagle = bool(getattr(params, "is_eagle", False))
        self.disable_finished_insert = bool(getattr(params, "disable_finished_insert", False))
        self.eviction_policy = _policy_spec(
            getattr(params, "eviction_policy", "lru"),
            getattr(params, "eviction_policy_config", None),
        )
        allocator = self.token_to_kv_pool_allocator
        torch = _torch()
        device = getattr(allocator, "device", None) if allocator is not None else None
        if device is None:
            device = torch.device("cpu") if torch else "cpu"
        self.device = device
        self._on_cpu = str(device) == "cpu"
        self._from_numpy = torch.from_numpy if torch is not None else None
        self._torch_bool = torch.bool if torch is not None else None
        self._torch_dtype = torch.dtype if torch is not None else None
        if max_cached_pages is None:
            slots = getattr(allocator, "size", None)
            max_cached_pages = (
                -(-int(slots) // page_size) + 1
                if isinstance(slots, int) and slots > 0
                else _DEFAULT_CAPACITY_PAGES
            )
        host = host or {}
        self._host_device = host.get("device", "cpu")
        copies = _CopiesToEngine(self, host["io"]) if host else None
        self._trie = _radixkv._SlotTrie(
            page_size,
            max_cached_pages,
            self.eviction_policy,
            self.enable_kv_cache_events,
            host.get("pages", 0),
            host.get("policy", "lru"),
            host.get("write_policy", "write_through"),
            copies,
        )
        self._has_host = bool(host)
        events = event_classes()
        self._BlockStored, self._BlockRemoved, self._AllBlocksCleared = events[:3]
        self._medium_gpu, self._medium_cpu = events[3:]
        self._stored_fields = fields_of(self._BlockStored)
        self._removed_fields = fields_of(self._BlockRemoved)
        self._namespaces = {(None, None, None): 0}
        self._namespace_keys = [(None, None, None)]
        self.root_node = TreeNode._view_of(self, None)
        self._empty_match = None

    # ----- keys, namespaces, views and tensors -----

    def _prepare(self, key):
        """(namespace, token source, first, limit, units) of a key; units is its length."""
        if not isinstance(key, RadixKey):
            if not hasattr(key, "token_ids"):  # a plain token list (SGLang 0.4's calls)
                return 0, key, 0, None, len(key)
            key = RadixKey(
                key.token_ids,
                getattr(key, "extra_key", None),
                getattr(key, "is_bigram", False),
                getattr(key, "limit", None),
                getattr(key, "cache_salt", None),
            )
        tokens, extra, salt = key.token_ids, key.extra_key, key.cache_salt
        bigram = key.is_bigram or self.is_eagle
        if not bigram and extra is None and salt is None:
            return 0, tokens, 0, key.limit, key._raw_len()
        first_token = None
        if bigram:
            raw = key._raw_len()
            if raw < 2:
                return None, tokens, 0, 0, 0
            first_token = tokens[0]
            if isinstance(first_token, tuple):
                raise TypeError(
                    "a bigram RadixKey holds raw tokens (SGLang's current keys), not pairs"
                )
            first_token = int(first_token)
        names = (extra, salt, first_token)
        ns = self._namespaces.get(names)
        if ns is None:
            ns = len(self._namespace_keys)
            self._namespaces[names] = ns
            self._namespace_keys.append(names)
        if bigram:
            return ns, tokens, 1, raw, raw - 1
        return ns, tokens, 0, key.limit, key._raw_len()

    def _view(self, ref):
        # One view per node: it rides on the node's handle, which the C++ side hands back as the
        # same object while anything holds it.
        if ref is None:
            return self.root_node
        node = getattr(ref, "view", None)
        if node is None:
            node = ref.view = TreeNode._view_of(self, ref)
        return node

    def _key_of_node(self, ref) -> RadixKey:
        extra, salt, first = self._namespace_keys[self._trie.node_namespace(ref)]
        edge = self._trie.node_key(ref)
        if first is None:
            return RadixKey(edge, extra, cache_salt=salt)
        before = self._trie.node_token_before(ref)
        return RadixKey([first if before is None else before] + edge, extra, True, cache_salt=salt)

    def _indices(self, slots):
        torch = _torch()
        if torch is None:
            return slots
        tensor = torch.from_numpy(slots)
        return tensor if self._on_cpu else tensor.to(self.device)

    def _host_indices(self, slots):
        torch = _torch()
        return slots if torch is None else torch.from_numpy(slots)

    def _empty_indices(self):
        torch = _torch()
        if torch is not None:
            return torch.empty((0,), dtype=torch.int64, device=self.device)
        import numpy

        return numpy.empty((0,), dtype=numpy.int64)

    def _free(self, slots) -> None:
        # A simulated cache (no allocator) has nobody to hand slots back to.
        if len(slots) > 0 and self.token_to_kv_pool_allocator is not None:
            self.token_to_kv_pool_allocator.free(slots)

    def _empty_match_result(self) -> MatchResult:
        if self._empty_match is None:
            root = self.root_node
            self._empty_match = MatchResult(self._empty_indices(), root, root, root)
        return self._empty_match

    # ----- BasePrefixCache -----

    def reset(self) -> None:
        """Drops everything cached (the slots are not freed: the engine resets its allocator)."""
        self._trie.reset()

    def match_prefix(self, params, **kwargs) -> MatchResult:
        """The longest cached prefix of the key in whole pages: the slots of its device run, where
        that run ends, where the whole match ends, and how many tokens after the device run are on
        the host tier only. ``params``: a MatchPrefixParams, or the key itself."""
        key = params if isinstance(params, RadixKey) else getattr(params, "key", params)
        if self.disable:
            return self._empty_match_result()
        ns, tokens, first, limit, units = self._prepare(key)
        if units < self.page_size or ns is None:
            return self._empty_match_result()
        device_tokens, host_tokens, slots, device_ref, end_ref = self._trie.match(
            ns, tokens, first, limit
        )
        if device_ref is None and end_ref is None:
            return self._empty_match_result()
        last_device = self._view(device_ref)
        last = self._view(end_ref) if host_tokens else last_device
        indices = self._from_numpy(slots) if self._from_numpy is not None else slots
        if not self._on_cpu:
            indices = indices.to(self.device)
        return new_match(
            (indices, last_device, last, last, host_tokens, 0, None, 0, None, None,
             device_tokens + host_tokens, ())
        )

    def insert(self, params, value=None, **kwargs):
        """Caches the key's whole pages with ``value``'s slots (one per token; None: the token ids,
        as SGLang's tests do). ``params``: an InsertParams (returns an InsertResult), or the key
        (returns the prefix length, as SGLang 0.5). The prefix length is what the device had
        cached already: the caller frees its own slots for it."""
        if isinstance(params, RadixKey) or not hasattr(params, "key"):
            result = self._insert(params, value, kwargs.get("priority", 0), kwargs.get("chunked", False))
            return result[0]
        cached, node = self._insert(params.key, params.value, params.priority, params.chunked)
        return InsertResult(prefix_len=cached, last_device_node=node)

    def _insert(self, key, value, priority, chunked):
        if self.disable:
            return 0, None
        ns, tokens, first, limit, units = self._prepare(key)
        if ns is None or units < self.page_size:
            return 0, self.root_node
        if value is None:
            value = list(tokens[first : first + units])
        else:
            dtype = getattr(value, "dtype", None)
            # SGLang's waiting-queue tree caches dummy bool values (torch's, or NumPy's: char '?').
            if dtype is not None and (
                dtype is self._torch_bool
                or (type(dtype) is not self._torch_dtype and getattr(dtype, "char", "") == "?")
            ):
                value = value.to(_torch().int64) if hasattr(value, "to") else value.astype("int64")
        cached, _, ref = self._trie.insert(ns, tokens, value, priority or 0, chunked, first, limit)
        return cached, self._view(ref)

    def evict(self, params) -> EvictResult:
        """Evicts at least the requested tokens (whole pages) if that many are evictable, in the
        policy's order, and frees their slots through the allocator. ``params``: an EvictParams,
        or the token count."""
        num_tokens = params.num_tokens if hasattr(params, "num_tokens") else int(params)
        if self.disable or num_tokens <= 0:
            return EvictResult()
        slots = self._trie.evict(-(-int(num_tokens) // self.page_size))
        if len(slots) > 0:
            self._free(self._indices(slots))
        return EvictResult(num_tokens_evicted=len(slots))

    def evict_for_alloc(self, params) -> EvictResult:
        return self.evict(params)

    def inc_lock_ref(self, node) -> IncLockRefResult:
        """Protects ``node`` and its ancestors from eviction; returns the change of
        evictable_size() (zero or negative)."""
        if self.disable or node._ref is None:
            return IncLockRefResult(0)
        return IncLockRefResult(-self._trie.lock(node._ref) * self.page_size)

    def dec_lock_ref(self, node, params=None) -> DecLockRefResult:
        """Undoes one inc_lock_ref; returns the change of evictable_size() (zero or positive)."""
        if self.disable or node._ref is None:
            return DecLockRefResult(0)
        return DecLockRefResult(self._trie.unlock(node._ref) * self.page_size)

    def evictable_size(self) -> int:
        return self._trie.evictable_pages * self.page_size

    def protected_size(self) -> int:
        return self._trie.protected_pages * self.page_size

    def total_size(self) -> int:
        return self._trie.cached_pages * self.page_size

    full_evictable_size = evictable_size
    full_protected_size = protected_size

    def all_values_flatten(self):
        """Every cached device slot, depth first."""
        return self._indices(self._trie.all_slots(list(range(len(self._namespace_keys)))))

    def pretty_print(self) -> None:
        print(self._trie.dump(), end="")
        print(f"#tokens: {self.total_size()}")

    def take_events(self) -> list:
        """The KV events since the last call: BlockStored / BlockRemoved per page (medium GPU, or
        CPU for the host tier), AllBlocksCleared per reset. Empty unless enable_kv_cache_events."""
        if not self.enable_kv_cache_events:
            return []
        events = []
        for kind, tier, block_hash, parent, tokens in self._trie.take_events():
            medium = self._medium_gpu if tier == "device" else self._medium_cpu
            if kind == "stored":
                events.append(
                    make_event(
                        self._BlockStored,
                        self._stored_fields,
                        block_hashes=[block_hash],
                        parent_block_hash=parent,
                        token_ids=tokens,
                        block_size=len(tokens),
                        lora_id=None,
                        medium=medium,
                    )
                )
            elif kind == "removed":
                events.append(
                    make_event(
                        self._BlockRemoved,
                        self._removed_fields,
                        block_hashes=[block_hash],
                        medium=medium,
                    )
                )
            else:
                events.append(self._AllBlocksCleared())
        return events

    # ----- what SGLang's scheduler asks of every prefix cache -----

    def supports_fast_match_prefix(self) -> bool:
        """True: matching is a C++ walk, cheap enough for the scheduler to match every waiting
        request at every step."""
        return True

    def supports_swa(self) -> bool:
        return False

    def supports_mamba(self) -> bool:
        return False

    def supports_streaming_session(self) -> bool:
        return False

    def is_chunk_cache(self) -> bool:
        return False

    def is_tree_cache(self) -> bool:
        return True

    def swa_reprefill_tail_tokens(self) -> int:
        return 0

    def swa_retain_floor(self, req) -> Optional[int]:
        return None

    def swa_evictable_size(self) -> int:
        return 0

    def swa_protected_size(self) -> int:
        return 0

    def resolve_node_handle(self, node_handle):
        return node_handle

    def root_node_handle(self, extra_key=None):
        return self.root_node

    def is_root(self, node) -> bool:
        return node is self.root_node

    def is_backuped(self, node) -> bool:
        return node.backuped

    def get_last_hash_value(self, node) -> Optional[str]:
        return node.get_last_hash_value()

    def get_prefix_hash_values(self, node) -> List[str]:
        return node.get_prefix_hash_values(node.parent)

    def dfs_weight_order(self, node_handles) -> List[int]:
        """Request indices (one per node handle), depth first: heavier subtrees (more requests
        ending in them) first, a node's own requests after its subtree's (SGLang's dfs-weight
        scheduling)."""
        by_node = {}
        for index, node in enumerate(node_handles):
            by_node.setdefault(node, []).append(index)
        children_of, weight, post_order = {}, {}, []
        stack = [self.root_node]
        while stack:  # every node once, parents before children
            node = stack.pop()
            children_of[node] = kids = list(node.children.values())
            post_order.append(node)
            stack.extend(kids)
        for node in reversed(post_order):  # children before parents
            weight[node] = len(by_node.get(node, ())) + sum(weight[c] for c in children_of[node])
        order = []
        stack = [(self.root_node, False)]
        while stack:
            node, subtree_done = stack.pop()
            if subtree_done:
                order.extend(by_node.get(node, ()))
                continue
            stack.append((node, True))
            # Popped heaviest first; among equals, in the children's order.
            kids = sorted(reversed(children_of[node]), key=lambda c: weight[c])
            stack.extend((c, False) for c in kids)
        return order

    def available_and_evictable_str(self) -> str:
        available = self.token_to_kv_pool_allocator.available_size()
        evictable = self.evictable_size()
        return (
            f"Available tokens: {available + evictable} ({available=} + {evictable=})\n"
        )

    def release_host_resources(self) -> None:
        pass

    def init_load_back(self, params, host_hit_length: int = 0, mem_quota=None, req=None):
        """Without a host tier nothing is ever on the host: the node, nothing to load."""
        node = getattr(params, "best_match_node", params)
        return self._empty_indices(), node

    def ready_to_load_host_cache(self):
        return None

    def check_hicache_events(self) -> None:
        pass

    # ----- requests (SGLang's Req fields) -----

    @staticmethod
    def _protected_len(req) -> int:
        # Tokens of the request whose slots are the tree's (not the request's own).
        protected = getattr(req, "cache_protected_len", None)
        if protected is None:
            protected = getattr(getattr(req, "kv", None), "cache_protected_len", None)
        return len(req.prefix_indices) if protected is None else protected

    @staticmethod
    def _set_protected_len(req, value: int) -> None:
        kv = getattr(req, "kv", None)
        if kv is not None and hasattr(kv, "cache_protected_len") and not hasattr(
            req, "cache_protected_len"
        ):
            kv.cache_protected_len = value
        else:
            req.cache_protected_len = value

    def _request_key(self, req, token_ids) -> RadixKey:
        return RadixKey(
            token_ids,
            getattr(req, "extra_key", None),
            self.is_eagle,
            cache_salt=getattr(req, "cache_salt", None),
        ).page_aligned(self.page_size)

    def cache_finished_req(self, req, is_insert: bool = True, **kwargs) -> None:
        """Caches a finished request's KV (the committed length: ``kv_len_to_handle``, else
        ``req.pop_committed_kv_cache()``, else prompt + output but the last token, which has no
        KV yet), frees its duplicate and unaligned slots, and unlocks it. With SGLang 0.5's
        requests (no committed length) it also frees the request's req_to_token row, as 0.5 did;
        later SGLangs free it themselves."""
        kv_len = kwargs.get("kv_len_to_handle")
        frees_row = False
        if kv_len is None:
            pop = getattr(req, "pop_committed_kv_cache", None)
            if pop is not None:
                kv_len = pop()
            else:
                kv_len = len(req.origin_input_ids) + len(req.output_ids) - 1
                frees_row = True
        row = self.req_to_token_pool.req_to_token[req.req_pool_idx]
        protected = self._protected_len(req)
        if self.disable:
            self._free(row[protected:kv_len])
        else:
            token_ids = (list(req.origin_input_ids) + list(req.output_ids))[:kv_len]
            kv_indices = row[: len(token_ids)]
            key = self._request_key(req, token_ids)
            keep = len(key)
            if is_insert and not self.disable_finished_insert:
                values = kv_indices[:keep].to(_torch().int64)
                prefix = self.insert(
                    InsertParams(key=key, value=values, priority=getattr(req, "priority", 0) or 0)
                ).prefix_len
                self._free(kv_indices[protected:prefix])
            else:
                self._free(kv_indices[protected:keep])
            self._free(kv_indices[keep:])
        if frees_row:
            self.req_to_token_pool.free(req.req_pool_idx)
        if req.last_node is not None:
            self.dec_lock_ref(req.last_node)

    def cache_unfinished_req(self, req, chunked: bool = False, **kwargs) -> None:
        """Caches what a running request has computed (``fill_ids``), moves its lock to the new
        end and points its req_to_token row and ``prefix_indices`` at the tree's slots."""
        if self.disable:
            return
        torch = _torch()
        fill = req.get_fill_ids() if hasattr(req, "get_fill_ids") else req.fill_ids
        token_ids = list(fill)
        kv_indices = self.req_to_token_pool.req_to_token[req.req_pool_idx, : len(token_ids)]
        key = self._request_key(req, token_ids)
        protected = self._protected_len(req)
        prefix = self.insert(
            InsertParams(
                key=key,
                value=kv_indices[: len(key)].to(torch.int64),
                chunked=chunked,
                priority=getattr(req, "priority", 0) or 0,
            )
        ).prefix_len
        self._free(kv_indices[protected:prefix])
        match = self.match_prefix(MatchPrefixParams(key=key))
        new_indices, new_last_node = match.device_indices, match.last_device_node
        self.req_to_token_pool.write(
            (req.req_pool_idx, slice(protected, len(new_indices))),
            new_indices[protected:].to(kv_indices.dtype),
        )
        self._set_protected_len(req, len(new_indices))
        self.dec_lock_ref(req.last_node)
        self.inc_lock_ref(new_last_node)
        if len(new_indices) < len(kv_indices):
            req.prefix_indices = torch.cat([new_indices, kv_indices[len(new_indices) :]])
        else:
            req.prefix_indices = new_indices
        req.last_node = new_last_node


class HiRadixCache(RadixCache):
    """RadixCache with a host tier under the device (SGLang's HiCache): pages evicted from the
    device stay on the host (``write_policy`` "write_back": copied there at eviction;
    "write_through": copied at insert; "write_through_selective[:hits=N]": once a node is hit N
    times), ``match_prefix`` reports them (``host_hit_length``, ``last_host_node``), and
    ``init_load_back`` brings them back into device slots from the allocator.

    ``host_io`` does the copies, in the engine: ``write_to_host(device_slots, host_slots)`` and
    ``load_from_host(host_slots, device_slots)``, two int64 tensors of equal length (whole pages)
    each, before it returns (or ordered before the KV's next use on the engine's stream). Host slot
    h * page_size + i is slot i of host page h: the engine's host buffer holds
    ``host_pages * page_size`` token slots.
    """

    def __init__(
        self,
        params=None,
        *,
        host_pages: int,
        host_io,
        write_policy: str = "write_through",
        host_eviction_policy: str = "lru",
        load_back_threshold: int = 10,
        max_cached_pages: Optional[int] = None,
    ):
        if params is None or not _is_params(params):
            raise TypeError("HiRadixCache(params: CacheInitParams, host_pages=..., host_io=...)")
        if not isinstance(host_pages, int) or host_pages < 1:
            raise ValueError(f"host_pages must be a positive int, got {host_pages!r}")
        self.write_policy = write_policy
        self.load_back_threshold = load_back_threshold
        self.host_pages = host_pages
        if max_cached_pages is None:
            max_cached_pages = getattr(params, "max_cached_pages", None)
        self._setup(
            params,
            max_cached_pages,
            host={
                "pages": host_pages,
                "io": host_io,
                "write_policy": write_policy,
                "policy": host_eviction_policy,
            },
        )

    def host_total_size(self) -> int:
        return self._trie.host_cached_pages * self.page_size

    def init_load_back(self, params, host_hit_length: int = 0, mem_quota=None, req=None):
        """Loads the host run above ``params.best_match_node`` (or the node given) into device
        slots from the allocator (evicting the device to make room), and returns (those slots,
        the node). When the run is shorter than ``load_back_threshold``, exceeds ``mem_quota`` or
        finds no room, nothing loads: (no slots, the deepest node wholly on the device)."""
        if hasattr(params, "best_match_node"):
            node, mem_quota = params.best_match_node, params.mem_quota
        else:
            node = params
        if node._ref is None or not node._ref.alive:
            return self._empty_indices(), node
        wanted = self._trie.host_tokens_above(node._ref)
        if wanted == 0:
            return self._empty_indices(), node
        if wanted >= self.load_back_threshold and (mem_quota is None or wanted <= mem_quota):
            allocator = self.token_to_kv_pool_allocator
            slots = allocator.alloc(wanted)
            if slots is None:
                self.evict(wanted)
                slots = allocator.alloc(wanted)
            if slots is not None:
                self._trie.load(node._ref, slots)
                return slots, node
        while node._ref is not None and node_facts(node)["device_pages"] < node_facts(node)["pages"]:
            node = node.parent
        return self._empty_indices(), node
