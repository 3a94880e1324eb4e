"""radixkv.sglang in SGLang's current call style (issue 30): the parameter objects, RadixKey's
extra_key / cache_salt / limit / is_bigram, the MatchResult fields the scheduler reads, priority
and chunked reaching the policy, SGLang's mru / filo, TreeNode views, the committed-KV request
path, SGLang's own event classes, and keys in every form the engine hands them."""

import subprocess
import sys
import types
from array import array

import numpy as np
import pytest

from engine_fakes import ReqToTokenPool, SlotAllocator, values
from radixkv.sglang import (
    CacheInitParams,
    EvictParams,
    EvictResult,
    InsertParams,
    InsertResult,
    MatchPrefixParams,
    RadixCache,
    RadixKey,
)


def make_cache(page_size=1, pages=256, **kwargs):
    alloc = SlotAllocator(pages=pages, page_size=page_size)
    params = CacheInitParams(token_to_kv_pool_allocator=alloc, page_size=page_size, **kwargs)
    return RadixCache(params), alloc


def insert(cache, alloc, key, **params):
    """Inserts like an engine: fresh slots, frees the duplicates and the unaligned rest."""
    slots = alloc.alloc(len(key))
    whole = len(key) // cache.page_size * cache.page_size
    result = cache.insert(InsertParams(key=key, value=slots[: len(key)], **params))
    alloc.free(slots[: result.prefix_len])
    alloc.free(slots[whole:])
    return result, [int(s) for s in slots[result.prefix_len : whole]]


# ----- the parameter objects -----


def test_params_call_style_round_trip():
    cache, alloc = make_cache(page_size=2)
    result, kept = insert(cache, alloc, RadixKey([1, 2, 3, 4, 5]))
    assert isinstance(result, InsertResult) and result.prefix_len == 0
    assert result.last_device_node.key.token_ids == [1, 2, 3, 4]
    match = cache.match_prefix(MatchPrefixParams(key=RadixKey([1, 2, 3, 4, 9])))
    assert values(match.device_indices) == kept
    assert match.last_device_node is result.last_device_node  # one view per node
    assert match.best_match_node is match.last_host_node is match.last_device_node
    assert (match.host_hit_length, match.full_kv_hit_length, match.cache_protected_len) == (0, 4,
                                                                                             None)
    evicted = cache.evict(EvictParams(num_tokens=3))
    assert isinstance(evicted, EvictResult) and evicted.num_tokens_evicted == 4  # two pages
    assert cache.total_size() == 0 and alloc.outstanding == set()


def test_positional_and_keyword_constructors_agree():
    alloc = SlotAllocator(pages=16, page_size=4)
    for cache in (RadixCache(None, alloc, 4), RadixCache(req_to_token_pool=None,
                                                         token_to_kv_pool_allocator=alloc,
                                                         page_size=4),
                  RadixCache(CacheInitParams(token_to_kv_pool_allocator=alloc, page_size=4))):
        assert cache.page_size == 4 and cache.token_to_kv_pool_allocator is alloc
        assert cache.insert(RadixKey(list(range(8)))) == 0 and cache.total_size() == 8


def test_create_simulated_is_a_cache_without_pools():
    cache = RadixCache.create_simulated(page_size=2, enable_kv_cache_events=True)
    assert cache.req_to_token_pool is None and cache.token_to_kv_pool_allocator is None
    cache.insert(InsertParams(key=RadixKey([5, 6, 7])))
    assert values(cache.match_prefix(MatchPrefixParams(key=RadixKey([5, 6]))).device_indices) == [
        5, 6]
    assert len(cache.take_events()) == 1


def test_waiting_queue_tree_takes_dummy_bool_values(torch):
    # SGLang's scheduler inserts torch.empty(n, dtype=torch.bool) into its simulated tree.
    cache = RadixCache.create_simulated()
    cache.insert(InsertParams(key=RadixKey([1, 2, 3]), value=torch.empty(3, dtype=torch.bool)))
    assert len(cache.match_prefix(MatchPrefixParams(key=RadixKey([1, 2, 3, 4]))).device_indices) == 3


def test_scheduler_capabilities():
    cache, _ = make_cache()
    assert cache.supports_fast_match_prefix() and cache.is_tree_cache()
    assert not (cache.supports_swa() or cache.supports_mamba() or cache.is_chunk_cache())
    assert cache.swa_reprefill_tail_tokens() == 0 and cache.swa_evictable_size() == 0
    assert cache.root_node_handle("x") is cache.root_node and cache.is_root(cache.root_node)
    assert cache.resolve_node_handle(cache.root_node) is cache.root_node
    indices, node = cache.init_load_back(cache.root_node, 0)
    assert len(indices) == 0 and node is cache.root_node


def test_lock_results_are_ints_with_a_delta():
    cache, alloc = make_cache()
    result, _ = insert(cache, alloc, RadixKey([1, 2, 3]))
    locked = cache.inc_lock_ref(result.last_device_node)
    assert locked == -3 and locked.delta == -3
    unlocked = cache.dec_lock_ref(result.last_device_node)
    assert unlocked == 3 and unlocked.delta == 3


# ----- RadixKey -----


def test_cache_salt_and_extra_key_are_namespaces():
    cache, alloc = make_cache()
    insert(cache, alloc, RadixKey([1, 2, 3], "lora", cache_salt="a"))
    for key, expected in ((RadixKey([1, 2, 3], "lora", cache_salt="a"), 3),
                          (RadixKey([1, 2, 3], "lora", cache_salt="b"), 0),
                          (RadixKey([1, 2, 3], "lora"), 0), (RadixKey([1, 2, 3], cache_salt="a"), 0)):
        assert len(cache.match_prefix(MatchPrefixParams(key=key)).device_indices) == expected


def test_limit_caps_a_key_without_slicing_it():
    key = RadixKey([1, 2, 3, 4, 5, 6], limit=4)
    assert len(key) == 4 and list(key) == [1, 2, 3, 4] and key.raw_token_ids() == [1, 2, 3, 4]
    cache, alloc = make_cache()
    result, kept = insert(cache, alloc, key)
    assert cache.total_size() == 4 and result.last_device_node.key.token_ids == [1, 2, 3, 4]
    assert len(cache.match_prefix(MatchPrefixParams(key=RadixKey([1, 2, 3, 4, 5, 6], limit=2)))
               .device_indices) == 2


def test_bigram_key_views_raw_tokens_as_pairs():
    key = RadixKey([7, 8, 9, 10], is_bigram=True)
    assert len(key) == 3 and list(key) == [(7, 8), (8, 9), (9, 10)]
    assert key[1:3].token_ids == [8, 9, 10] and len(key[1:3]) == 2 and key[1:1].token_ids == []
    assert key.page_aligned(2).token_ids == [7, 8, 9] and key.child_key(2) == ((7, 8), (8, 9))
    assert len(RadixKey([7], is_bigram=True)) == 0


def ancestors(node, root):
    while node.parent is not root:
        node = node.parent
        yield node


def bigram_prefix(a, b):
    """Pairs two raw token lists share from the start."""
    same = 0
    while same < min(len(a), len(b)) and a[same] == b[same]:
        same += 1
    return max(same - 1, 0)


@pytest.mark.parametrize("page_size", [1, 2])
def test_eagle_cache_matches_bigrams(page_size):
    cache, alloc = make_cache(page_size=page_size, is_eagle=True)
    stored = [3, 1, 4, 1, 5, 9, 2, 6]
    result, kept = insert(cache, alloc, RadixKey(list(stored), is_bigram=True))
    assert cache.total_size() == (len(stored) - 1) // page_size * page_size
    for probe in ([3, 1, 4, 1, 5], [3, 1, 4, 2], [4, 1, 5], [3], stored + [5, 3]):
        expected = bigram_prefix(stored, probe)
        expected = min(expected, len(stored) - 1) // page_size * page_size
        match = cache.match_prefix(MatchPrefixParams(key=RadixKey(list(probe))))
        assert values(match.device_indices) == kept[:expected], probe
    # The probes split the inserted node; each node's key is its raw tokens, one before its pairs.
    node = result.last_device_node
    depth = sum(len(n.key) for n in ancestors(node, cache.root_node))
    assert node.key.is_bigram and node.key.token_ids == stored[depth : depth + len(node.key) + 1]


# ----- priority and chunked reach the policy -----


def test_priority_on_insert_orders_priority_eviction():
    cache, alloc = make_cache(eviction_policy="priority")
    _, low = insert(cache, alloc, RadixKey([1, 1]), priority=-5)
    _, high = insert(cache, alloc, RadixKey([2, 2]), priority=5)
    _, default = insert(cache, alloc, RadixKey([3, 3]))
    freed = len(alloc.freed)
    cache.evict(6)
    # Lowest first, the most recent last among... priorities -5, 0, 5: low, default, high.
    assert alloc.freed[freed:] == low[::-1] + default[::-1] + high[::-1]


def test_chunked_insert_counts_no_hit():
    cache, alloc = make_cache(eviction_policy="lfu")
    first, _ = insert(cache, alloc, RadixKey([1, 2, 3]))
    node = first.last_device_node
    assert node.hit_count == 1
    insert(cache, alloc, RadixKey([1, 2, 3]), chunked=True)
    assert node.hit_count == 1
    insert(cache, alloc, RadixKey([1, 2, 3]))
    assert node.hit_count == 2


@pytest.mark.parametrize("policy,first_out", [("mru", "b"), ("filo", "c"), ("lru", "c"),
                                              ("fifo", "a")])
def test_sglang_newest_first_policies(policy, first_out):
    cache, alloc = make_cache(eviction_policy=policy)
    slots = {}
    for name, tokens in (("a", [1, 1]), ("b", [2, 2]), ("c", [3, 3])):
        slots[name] = insert(cache, alloc, RadixKey(tokens))[1]
    # Accesses: a, b, c inserted in that order; then b, a, b matched. Newest access b, oldest
    # access c; newest creation c, oldest a.
    for tokens in ([2, 2], [1, 1], [2, 2]):
        cache.match_prefix(MatchPrefixParams(key=RadixKey(tokens)))
    freed = len(alloc.freed)
    cache.evict(2)
    assert alloc.freed[freed:] == slots[first_out][::-1]


# ----- TreeNode views -----


def test_views_read_the_cpp_node(torch):
    cache, alloc = make_cache(page_size=2, enable_kv_cache_events=True)
    _, first = insert(cache, alloc, RadixKey([1, 2, 3, 4, 5, 6]))
    result, second = insert(cache, alloc, RadixKey([1, 2, 3, 4, 7, 8]))
    leaf = result.last_device_node
    assert leaf.key.token_ids == [7, 8] and values(leaf.value) == second
    assert isinstance(leaf.value, torch.Tensor) and leaf.value.dtype == torch.int64
    parent = leaf.parent
    assert parent.key.token_ids == [1, 2, 3, 4] and values(parent.value) == first[:4]
    assert parent.parent is cache.root_node and cache.root_node.parent is None
    assert set(parent.children) == {(5, 6), (7, 8)} and parent.children[(7, 8)] is leaf
    assert list(cache.root_node.children) == [(1, 2)] and len(cache.root_node.key) == 0
    assert (leaf.lock_ref, leaf.evicted, leaf.backuped, leaf.host_value) == (0, False, False, None)
    cache.inc_lock_ref(leaf)
    assert (leaf.lock_ref, parent.lock_ref, cache.root_node.lock_ref) == (1, 1, 1)
    cache.dec_lock_ref(leaf)
    # Page hashes: chained, and the low 64 bits are the events' block hashes.
    stored = [e for e in cache.take_events() if type(e).__name__ == "BlockStored"]
    by_tokens = {tuple(e.token_ids): e.block_hashes[0] for e in stored}
    for page, digest in zip(([7, 8],), leaf.hash_value):
        assert int(digest[16:], 16) == by_tokens[tuple(page)] % (1 << 64)
    assert leaf.get_prefix_hash_values(leaf.parent) == parent.hash_value
    assert leaf.get_last_hash_value() == leaf.hash_value[-1] and len(parent.hash_value) == 2
    with pytest.raises(AttributeError, match="view"):
        leaf.value = None


def test_node_comparison_follows_last_access():
    cache, alloc = make_cache()
    a = insert(cache, alloc, RadixKey([1]))[0].last_device_node
    b = insert(cache, alloc, RadixKey([2]))[0].last_device_node
    assert a < b and not b < a
    cache.match_prefix(MatchPrefixParams(key=RadixKey([1])))
    assert b < a
    assert sorted([a, b]) == [b, a]
    assert len({a, b, cache.match_prefix(MatchPrefixParams(key=RadixKey([1]))).last_device_node}) == 2


def test_a_view_dies_with_its_node_and_a_new_match_gives_a_new_one():
    cache, alloc = make_cache()
    node = insert(cache, alloc, RadixKey([1, 2, 3]))[0].last_device_node
    cache.evict(1)  # the node's tail
    assert node.evicted and not node.alive and node.value is None
    with pytest.raises(RuntimeError, match="evicted"):
        node.key
    with pytest.raises(RuntimeError, match="evicted"):
        cache.inc_lock_ref(node)
    fresh = cache.match_prefix(MatchPrefixParams(key=RadixKey([1, 2, 3]))).last_device_node
    assert fresh is not node and fresh.key.token_ids == [1, 2] and fresh.id != node.id


def test_dfs_weight_order_puts_the_heaviest_subtree_first():
    cache, alloc = make_cache()
    a = insert(cache, alloc, RadixKey([1, 2]))[0].last_device_node
    b = insert(cache, alloc, RadixKey([1, 3]))[0].last_device_node
    c = insert(cache, alloc, RadixKey([5, 6]))[0].last_device_node
    # [1] holds a (1 request) and b (2): weight 3, before c (1); the root's own request last.
    assert cache.dfs_weight_order([c, a, b, b, cache.root_node]) == [2, 3, 1, 0, 4]


# ----- requests -----


class Request(types.SimpleNamespace):
    def pop_committed_kv_cache(self):
        committed, self.kv_committed_len = self.kv_committed_len, 0
        return committed


def admit(torch, pool, alloc, cache, prompt):
    req = Request(origin_input_ids=list(prompt), output_ids=[], extra_key=None,
                  req_pool_idx=pool.alloc(), priority=None, cache_protected_len=0)
    match = cache.match_prefix(MatchPrefixParams(key=RadixKey(list(prompt))))
    req.prefix_indices, req.last_node = match.device_indices, match.last_device_node
    req.cache_protected_len = len(req.prefix_indices)
    cache.inc_lock_ref(req.last_node)
    fresh = torch.from_numpy(alloc.alloc(len(prompt) + 8 - len(req.prefix_indices)))
    row = torch.cat([req.prefix_indices, fresh]).to(torch.int32)
    pool.req_to_token[req.req_pool_idx, : len(row)] = row
    req.spare = fresh[len(prompt) - len(req.prefix_indices) :]
    return req


@pytest.mark.parametrize("page_size", [1, 4])
@pytest.mark.parametrize("is_insert", [True, False])
def test_committed_kv_path(torch, page_size, is_insert):
    alloc = SlotAllocator(pages=512, page_size=page_size)
    pool = ReqToTokenPool(torch, rows=4, width=128)
    cache = RadixCache(CacheInitParams(req_to_token_pool=pool, token_to_kv_pool_allocator=alloc,
                                       page_size=page_size))
    req = admit(torch, pool, alloc, cache, list(range(100, 123)))
    req.output_ids = [1, 2, 3]
    req.kv_committed_len = 25  # two of three output tokens have KV
    cache.cache_finished_req(req, is_insert=is_insert)
    assert req.kv_committed_len == 0 and pool.freed == []  # the row is the scheduler's now
    assert cache.total_size() == (25 // page_size * page_size if is_insert else 0)
    assert cache.protected_size() == 0
    alloc.free(req.spare[25 - 23 :])  # never written
    cache.evict(10**6)
    assert alloc.outstanding == set()


def test_kv_len_to_handle_overrides_the_committed_length(torch):
    alloc = SlotAllocator(pages=512, page_size=1)
    pool = ReqToTokenPool(torch, rows=4, width=128)
    cache = RadixCache(CacheInitParams(req_to_token_pool=pool, token_to_kv_pool_allocator=alloc,
                                       page_size=1))
    req = admit(torch, pool, alloc, cache, list(range(10)))
    req.kv_committed_len = 99
    cache.cache_finished_req(req, kv_len_to_handle=6)
    assert cache.total_size() == 6 and req.kv_committed_len == 99
    alloc.free(req.spare)
    alloc.free(torch.from_numpy(pool.req_to_token[req.req_pool_idx, 6:10].numpy().astype("int64")))
    cache.evict(10**6)
    assert alloc.outstanding == set()


# ----- events as SGLang's own classes -----


def test_events_are_sglangs_classes_when_sglang_imports():
    # A stand-in for sglang.srt.disaggregation.kv_events with msgspec-like structs (their
    # __struct_fields__; the older ones have no `medium`).
    code = """
import sys, types
kv = types.ModuleType("sglang.srt.disaggregation.kv_events")
class Struct:
    def __init__(self, **kw):
        assert set(kw) == set(self.__struct_fields__), kw
        self.__dict__.update(kw)
class BlockStored(Struct):
    __struct_fields__ = ("block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id")
class BlockRemoved(Struct):
    __struct_fields__ = ("block_hashes",)
class AllBlocksCleared(Struct):
    __struct_fields__ = ()
kv.BlockStored, kv.BlockRemoved, kv.AllBlocksCleared = BlockStored, BlockRemoved, AllBlocksCleared
for name in ("sglang", "sglang.srt", "sglang.srt.disaggregation"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["sglang.srt.disaggregation.kv_events"] = kv
sys.modules["sglang.srt.disaggregation"].kv_events = kv
import radixkv.sglang as s
c = s.RadixCache.create_simulated(enable_kv_cache_events=True)
c.insert(s.RadixKey([1, 2]))
c.evict(1)
c.reset()
print([type(e).__module__ + "." + type(e).__name__ for e in c.take_events()])
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    names = eval(result.stdout)
    assert names == ["__main__.BlockStored"] * 2 + ["__main__.BlockRemoved",
                                                    "__main__.AllBlocksCleared"]


# ----- keys in every form -----


@pytest.mark.parametrize("make", [list, tuple, lambda t: array("q", t), lambda t: array("i", t),
                                  lambda t: np.asarray(t, dtype=np.int64),
                                  lambda t: np.asarray(t, dtype=np.uint16),
                                  lambda t: np.repeat(np.asarray(t, dtype=np.int64), 2)[::2],
                                  lambda t: [np.int64(v) for v in t]])
def test_keys_in_every_form_match_alike(make):
    cache, alloc = make_cache()
    insert(cache, alloc, RadixKey([4, 5, 6, 7]))
    assert len(cache.match_prefix(MatchPrefixParams(key=RadixKey(make([4, 5, 6, 9]))))
               .device_indices) == 3


def test_torch_keys_and_slots(torch):
    cache, alloc = make_cache()
    cache.insert(RadixKey(torch.tensor([4, 5, 6])), torch.tensor([40, 50, 60]))
    assert values(cache.match_prefix(RadixKey(torch.tensor([4, 5], dtype=torch.int32)))
                  .device_indices) == [40, 50]


@pytest.mark.parametrize("bad,error,words", [
    (b"abc", TypeError, "text"), ("abc", TypeError, "text"), ([1, True], TypeError, "bool"),
    ([1, 2.5], TypeError, "not an integer"), ([1, 1 << 40], ValueError, "outside"),
    (np.asarray([1.0, 2.0]), TypeError, "not an integer type"), (object(), TypeError, "len"),
])
def test_bad_keys_are_refused_and_change_nothing(bad, error, words):
    cache, alloc = make_cache()
    insert(cache, alloc, RadixKey([1, 2]))
    with pytest.raises(error, match=words):
        cache.match_prefix(MatchPrefixParams(key=RadixKey(bad)))
    with pytest.raises(error, match=words):
        cache.insert(InsertParams(key=RadixKey(bad), value=[1, 2, 3]))
    assert cache.total_size() == 2
    cache._trie.verify()
