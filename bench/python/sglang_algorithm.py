"""SGLang's Python RadixCache, written to its algorithm for the benchmark: the baseline
radixkv.sglang is measured against, since SGLang itself does not install here (no PyPI).

It does per call what sgl-project/sglang's python/sglang/srt/mem_cache/radix_cache.py does at the
commit python/README.md names, in our own words and only as far as the benchmark's calls reach,
with the same objects per call (a RadixKey per slice, the parameter and result objects, a TreeNode
with SGLang's fields, torch tensors for values) so that the per-call costs are SGLang's too:

- a node holds a key (a RadixKey over a slice of the request's token list) and a value (the
  engine's KV slots, an int64 tensor), children in a dict keyed by the first token (a tuple of the
  first page at page size > 1);
- matching walks child by child, compares a child's key with the rest of the request, stamps each
  node with time.monotonic(), splits a node where the match ends inside it (both halves' values
  cloned), and concatenates the matched values. The comparison is `key_match`: "tokens", the
  commit's (a Python loop over token pairs at page size 1, a loop over page slices above), or
  "gallop", SGLang's later RadixKey.match (slices of doubling length, then a binary search: no
  Python step per token);
- inserting walks the same way (keeping the largest priority and counting hits on the path),
  splits where the key leaves a node, and adds one leaf for the rest;
- a set of evictable leaves (unlocked, every child evicted) is kept as nodes change; evicting
  heapifies it by the policy's priority (LRU: last access), frees whole leaves through the
  allocator until enough tokens are freed, pushing a parent that becomes an evictable leaf;
- locks count along the path to the root, moving sizes between evictable and protected, and
  update each node's leaf status.
"""

import dataclasses
import heapq
import time
from collections import defaultdict
from typing import Any, NamedTuple

import torch


class RadixKey:
    def __init__(self, token_ids, extra_key=None, is_bigram=False):
        self.token_ids = token_ids
        self.extra_key = extra_key
        self.is_bigram = is_bigram

    def __len__(self):
        return len(self.token_ids)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return RadixKey(self.token_ids[index], self.extra_key)
        return RadixKey([self.token_ids[index]], self.extra_key)


@dataclasses.dataclass
class MatchPrefixParams:
    key: RadixKey


@dataclasses.dataclass
class InsertParams:
    key: RadixKey
    value: Any = None
    chunked: bool = False
    priority: int = 0


@dataclasses.dataclass
class InsertResult:
    prefix_len: int


@dataclasses.dataclass
class EvictParams:
    num_tokens: int


@dataclasses.dataclass
class EvictResult:
    num_tokens_evicted: int = 0


class MatchResult(NamedTuple):
    device_indices: torch.Tensor
    last_device_node: Any
    last_host_node: Any
    host_hit_length: int = 0


class TreeNode:
    counter = 0

    def __init__(self, priority=0):
        self.children = defaultdict(TreeNode)
        self.parent = None
        self.key = None
        self.value = None
        self.lock_ref = 0
        self.last_access_time = time.monotonic()
        self.creation_time = time.monotonic()
        self.hit_count = 0
        self.host_ref_counter = 0
        self.host_value = None
        self.hash_value = None
        self.priority = priority
        self.id = TreeNode.counter
        TreeNode.counter += 1

    @property
    def evicted(self):
        return self.value is None

    def __lt__(self, other):
        return self.last_access_time < other.last_access_time


def _check_extra_key(a, b):
    if a.extra_key != b.extra_key:
        raise ValueError("keys of different extra keys")


def _match_tokens(a, b):
    _check_extra_key(a, b)
    same = 0
    for x, y in zip(a.token_ids, b.token_ids):
        if x != y:
            break
        same += 1
    return same


def _match_pages(a, b, page_size):
    _check_extra_key(a, b)
    shortest = min(len(a), len(b))
    same = 0
    while same < shortest:
        if a.token_ids[same : same + page_size] != b.token_ids[same : same + page_size]:
            break
        same += page_size
    return same


def _match_gallop(a, b, page_size):
    _check_extra_key(a, b)
    t0, t1 = a.token_ids, b.token_ids
    n = min(len(t0), len(t1))
    low, step, same = 0, 1, n
    while low < n:
        high = min(low + step, n)
        if t0[low:high] != t1[low:high]:
            while high - low > 1:
                mid = (low + high) // 2
                if t0[low:mid] == t1[low:mid]:
                    low = mid
                else:
                    high = mid
            same = low
            break
        low = high
        step *= 2
    return same if page_size == 1 else same // page_size * page_size


class SGLangAlgorithmCache:
    def __init__(self, allocator, page_size=1, key_match="tokens"):
        self.token_to_kv_pool_allocator = allocator
        self.page_size = page_size
        self.enable_kv_cache_events = False
        self.is_eagle = False
        self.device = torch.device("cpu")
        if key_match == "gallop":
            self.key_match_fn = lambda a, b: _match_gallop(a, b, page_size)
        elif page_size == 1:
            self.key_match_fn = _match_tokens
        else:
            self.key_match_fn = lambda a, b: _match_pages(a, b, page_size)
        self.evictable_leaves = set()
        self.root_node = TreeNode(priority=-(1 << 62))
        self.root_node.key = RadixKey([])
        self.root_node.value = []
        self.root_node.lock_ref = 1
        self.evictable_size_ = 0
        self.protected_size_ = 0

    def get_child_key_fn(self, key):
        plain = key.token_ids[0] if self.page_size == 1 else tuple(key.token_ids[: self.page_size])
        return plain if key.extra_key is None else (key.extra_key, plain)

    def maybe_bigram_convert(self, key, value=None):
        return key, value  # not EAGLE

    # ----- the public calls -----

    def match_prefix(self, params):
        key, _ = self.maybe_bigram_convert(params.key)
        if len(key) == 0:
            return self._empty()
        if self.page_size != 1:
            key = key[: len(key) // self.page_size * self.page_size]
        if len(key) == 0:
            return self._empty()
        values, last = self._match_prefix_helper(self.root_node, key)
        device_indices = torch.cat(values) if values else torch.empty((0,), dtype=torch.int64)
        return MatchResult(device_indices, last, last)

    def _empty(self):
        empty = torch.empty((0,), dtype=torch.int64, device=self.device)
        return MatchResult(empty, self.root_node, self.root_node)

    def insert(self, params):
        key, value = self.maybe_bigram_convert(params.key, params.value)
        if value is None:
            value = torch.tensor(key.token_ids, dtype=torch.int64)
        return InsertResult(self._insert_helper(self.root_node, key, value, params.priority))

    def evict(self, params):
        start = time.perf_counter()
        heap = [(node.last_access_time, node) for node in list(self.evictable_leaves)]
        heapq.heapify(heap)
        evicted = 0
        while evicted < params.num_tokens and heap:
            _, leaf = heapq.heappop(heap)
            self.token_to_kv_pool_allocator.free(leaf.value)
            evicted += len(leaf.value)
            self._delete_leaf(leaf)
            parent = leaf.parent
            if len(parent.children) == 0 and parent.lock_ref == 0:
                heapq.heappush(heap, (parent.last_access_time, parent))
            self._record_remove_event(leaf)
        self._update_eviction_metrics(evicted, start)
        return EvictResult(num_tokens_evicted=evicted)

    def inc_lock_ref(self, node):
        delta = 0
        while node != self.root_node:
            if node.lock_ref == 0:
                self.evictable_size_ -= len(node.key)
                self.protected_size_ += len(node.key)
                delta -= len(node.key)
            node.lock_ref += 1
            self._update_leaf_status(node)
            node = node.parent
        return delta

    def dec_lock_ref(self, node):
        delta = 0
        while node != self.root_node:
            if node.lock_ref == 1:
                self.evictable_size_ += len(node.key)
                self.protected_size_ -= len(node.key)
                delta += len(node.key)
            node.lock_ref -= 1
            self._update_leaf_status(node)
            node = node.parent
        return delta

    # ----- the tree -----

    def _match_prefix_helper(self, node, key):
        now = time.monotonic()
        node.last_access_time = now
        child_key = self.get_child_key_fn(key)
        values = []
        while len(key) > 0 and child_key in node.children.keys():
            child = node.children[child_key]
            child.last_access_time = now
            same = self.key_match_fn(child.key, key)
            if same < len(child.key):
                upper = self._split_node(child.key, child, same)
                values.append(upper.value)
                node = upper
                break
            values.append(child.value)
            node = child
            key = key[same:]
            if len(key):
                child_key = self.get_child_key_fn(key)
        return values, node

    def _split_node(self, key, child, at):
        upper = TreeNode(priority=child.priority)
        upper.children = {self.get_child_key_fn(key[at:]): child}
        upper.parent = child.parent
        upper.lock_ref = child.lock_ref
        upper.key = child.key[:at]
        upper.value = child.value[:at].clone()
        child.parent = upper
        child.key = child.key[at:]
        child.value = child.value[at:].clone()
        upper.parent.children[self.get_child_key_fn(key)] = upper
        return upper

    def _insert_helper(self, node, key, value, priority=0):
        now = time.monotonic()
        node.last_access_time = now
        node.priority = max(node.priority, priority)
        if len(key) == 0:
            return 0
        child_key = self.get_child_key_fn(key)
        cached = 0
        while len(key) > 0 and child_key in node.children.keys():
            node = node.children[child_key]
            node.last_access_time = now
            same = self.key_match_fn(node.key, key)
            cached += same
            key = key[same:]
            value = value[same:]
            if same < len(node.key):
                node = self._split_node(node.key, node, same)
            node.priority = max(node.priority, priority)
            node.hit_count += 1
            if len(key):
                child_key = self.get_child_key_fn(key)
        if len(key):
            leaf = TreeNode(priority=priority)
            leaf.parent = node
            leaf.key = key
            leaf.value = value.clone()
            leaf.hit_count += 1
            node.children[child_key] = leaf
            self.evictable_size_ += len(key)
            self._update_leaf_status(node)
            self._update_leaf_status(leaf)
            self._record_store_event(leaf)
        return cached

    def _delete_leaf(self, node):
        key = self.get_child_key_fn(node.key)
        node.parent.children.pop(key, None)
        self.evictable_size_ -= len(node.key)
        self.evictable_leaves.discard(node)
        self._update_leaf_status(node.parent)

    def _update_leaf_status(self, node):
        if node.evicted or node.lock_ref > 0:
            self.evictable_leaves.discard(node)
            return
        for child in node.children.values():
            if not child.evicted:
                self.evictable_leaves.discard(node)
                return
        self.evictable_leaves.add(node)

    def _record_store_event(self, node):
        if self.enable_kv_cache_events:
            raise NotImplementedError

    def _record_remove_event(self, node):
        if self.enable_kv_cache_events:
            raise NotImplementedError

    def _update_eviction_metrics(self, evicted, start):
        pass
