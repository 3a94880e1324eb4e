"""SGLang's data types for radixkv.sglang: RadixKey, the parameter and result objects of its
prefix-cache interface, and the KV events (SGLang's own classes when SGLang imports). They follow
SGLang's radix_cache.py, base_prefix_cache.py, cache_init_params.py and
disaggregation/kv_events.py (python/README.md names the commits); no code is taken from them.
Import them from radixkv.sglang."""

import dataclasses
import functools
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence, Union

MEDIUM_GPU = "GPU"
MEDIUM_CPU = "CPU"



class RadixKey:
    """A key of the cache: token ids, and what scopes them.

    ``extra_key`` (a LoRA id...) and ``cache_salt`` are namespaces: keys that differ in either
    never share cached prefixes. ``limit`` caps the key at ``token_ids[:limit]`` without a copy.
    ``is_bigram`` (EAGLE's keys) views the raw tokens t0..tn as the pairs (t0, t1)..(tn-1, tn):
    its length is n, and a slice of pairs [i, j) holds raw tokens [i, j + 1).
    """

    __slots__ = ("token_ids", "extra_key", "is_bigram", "limit", "cache_salt")

    def __init__(
        self,
        token_ids,
        extra_key: Optional[str] = None,
        is_bigram: bool = False,
        limit: Optional[int] = None,
        cache_salt: Optional[str] = None,
    ):
        self.token_ids = token_ids
        self.extra_key = extra_key
        self.is_bigram = is_bigram
        self.limit = limit
        self.cache_salt = cache_salt

    def _raw_len(self) -> int:
        n = len(self.token_ids)
        return n if self.limit is None or self.limit >= n else max(self.limit, 0)

    def raw_token_ids(self):
        """token_ids as far as ``limit`` reaches (copied only when it cuts)."""
        n = self._raw_len()
        return self.token_ids if n == len(self.token_ids) else self.token_ids[:n]

    def __len__(self) -> int:
        n = self._raw_len()
        return max(n - 1, 0) if self.is_bigram else n

    def __iter__(self) -> Iterator:
        t, n = self.token_ids, self._raw_len()
        if self.is_bigram:
            return ((t[i], t[i + 1]) for i in range(n - 1))
        return iter(t) if n == len(t) else (t[i] for i in range(n))

    def __getitem__(self, index: Union[int, slice]) -> "RadixKey":
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                raise ValueError("RadixKey slices take step 1")
        else:
            start = index + len(self) if index < 0 else index
            if not 0 <= start < len(self):
                raise IndexError(f"RadixKey index {index} out of range for length {len(self)}")
            stop = start + 1
        stop = max(stop, start)
        if self.is_bigram:
            raw = self.token_ids[start : stop + 1] if stop > start else self.token_ids[:0]
            return RadixKey(raw, self.extra_key, True, cache_salt=self.cache_salt)
        return RadixKey(self.token_ids[start:stop], self.extra_key, cache_salt=self.cache_salt)

    def page_aligned(self, page_size: int) -> "RadixKey":
        return self if page_size == 1 else self[: len(self) // page_size * page_size]

    def maybe_to_bigram_view(self, is_eagle: bool, value=None):
        """EAGLE's caches key by bigrams: flips the view (no copy), cuts ``value`` to match."""
        if is_eagle and not self.is_bigram:
            self.is_bigram = True
            if value is not None:
                value = value[: len(self)]
        return self, value

    def child_key(self, page_size: int = 1):
        """What a parent files this key under: its first page (SGLang's child key)."""
        units = list(self[:page_size])
        plain = units[0] if page_size == 1 else tuple(units)
        return plain if self.extra_key is None else (self.extra_key, plain)

    def __repr__(self) -> str:
        preview = list(self.token_ids[:10])
        more = "..." if len(self.token_ids) > 10 else ""
        bigram = ", is_bigram=True" if self.is_bigram else ""
        return f"RadixKey(extra_key={self.extra_key!r}, token_ids={preview}{more}{bigram})"


BaseKey = RadixKey


# ----- SGLang's parameter and result objects (base_prefix_cache.py, cache_init_params.py) -----


@dataclasses.dataclass
class CacheInitParams:
    disable: bool = False
    req_to_token_pool: Any = None
    token_to_kv_pool_allocator: Any = None
    page_size: int = 1
    is_eagle: bool = False
    eviction_policy: str = "lru"
    eviction_policy_config: Optional[Dict[str, Any]] = None
    disable_finished_insert: bool = False
    enable_metrics: bool = False
    enable_kv_cache_events: bool = False
    # radixkv's own: the pages the trie may cache (default: the allocator's size).
    max_cached_pages: Optional[int] = None


@dataclasses.dataclass(slots=True)
class MatchPrefixParams:
    key: Any
    cow_mamba: bool = False
    req: Any = None


@dataclasses.dataclass(slots=True)
class InsertParams:
    key: Any = None
    value: Any = None
    mamba_value: Any = None
    prev_prefix_len: int = 0
    swa_evicted_seqlen: int = 0
    chunked: bool = False
    priority: int = 0


@dataclasses.dataclass(slots=True)
class InsertResult:
    prefix_len: int
    total_len: int = 0
    last_device_node: Any = None
    mamba_exist: bool = False


@dataclasses.dataclass(slots=True)
class EvictParams:
    num_tokens: int = 0
    swa_num_tokens: int = 0
    mamba_num: int = 0


@dataclasses.dataclass(slots=True)
class EvictResult:
    num_tokens_evicted: int = 0
    swa_num_tokens_evicted: int = 0
    mamba_num_evicted: int = 0


@dataclasses.dataclass(slots=True)
class InitLoadBackParams:
    best_match_node: Any
    host_hit_length: int
    mem_quota: Optional[int] = None
    req: Any = None


class IncLockRefResult(int):
    """inc_lock_ref's change of evictable_size(): an int (SGLang 0.5), with ``delta`` (newer)."""

    @property
    def delta(self) -> int:
        return int(self)


class DecLockRefResult(IncLockRefResult):
    """dec_lock_ref's change of evictable_size(), as IncLockRefResult."""


class MatchResult(NamedTuple):
    device_indices: Any  # int64 slots of the device run (torch tensor, or a NumPy array)
    last_device_node: Any  # where the device run ends
    last_host_node: Any  # where the match ends (the host run included)
    best_match_node: Any = None  # last_host_node: radixkv has one component
    host_hit_length: int = 0  # tokens after the device run, on the host tier only
    swa_host_hit_length: int = 0
    swa_branching_seqlen: Optional[int] = None
    mamba_host_hit_length: int = 0
    mamba_branching_seqlen: Optional[int] = None
    cache_protected_len: Optional[int] = None
    full_kv_hit_length: int = 0  # device + host tokens
    cache_actions: Sequence[Any] = ()


new_match = functools.partial(tuple.__new__, MatchResult)  # every field given, no keywords


# ----- KV events: SGLang's classes when SGLang imports, else these -----


@dataclasses.dataclass
class BlockStored:
    block_hashes: List[int]
    parent_block_hash: Optional[int]
    token_ids: List[int]
    block_size: int
    lora_id: Optional[int] = None
    medium: Optional[str] = MEDIUM_GPU


@dataclasses.dataclass
class BlockRemoved:
    block_hashes: List[int]
    medium: Optional[str] = MEDIUM_GPU


@dataclasses.dataclass
class AllBlocksCleared:
    pass


def event_classes():
    """(BlockStored, BlockRemoved, AllBlocksCleared, GPU medium, CPU medium): SGLang's own
    (sglang.srt.disaggregation.kv_events, msgspec structs) when they import, else ours."""
    try:
        from sglang.srt.disaggregation import kv_events
    except ImportError:
        return BlockStored, BlockRemoved, AllBlocksCleared, MEDIUM_GPU, MEDIUM_CPU
    return (
        kv_events.BlockStored,
        kv_events.BlockRemoved,
        kv_events.AllBlocksCleared,
        getattr(kv_events, "MEDIUM_GPU", MEDIUM_GPU),
        getattr(kv_events, "MEDIUM_CPU", MEDIUM_CPU),
    )


def fields_of(cls) -> Optional[frozenset]:
    names = getattr(cls, "__struct_fields__", None)  # msgspec
    if names is None and dataclasses.is_dataclass(cls):
        names = [f.name for f in dataclasses.fields(cls)]
    return frozenset(names) if names is not None else None


def make_event(cls, fields, **values):
    if fields is not None:
        values = {k: v for k, v in values.items() if k in fields}
    return cls(**values)

