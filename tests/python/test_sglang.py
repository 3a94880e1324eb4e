"""radixkv.sglang.RadixCache case by case, against SGLang's RadixCache semantics
(python/sglang/srt/mem_cache/radix_cache.py): keys, page cuts, namespaces, locks, LRU eviction
through the engine's allocator, sizes, events, reset, and the request paths."""

import subprocess
import sys
import types

import numpy as np
import pytest

import radixkv
from engine_fakes import ReqToTokenPool, SlotAllocator, values
from radixkv.sglang import (
    AllBlocksCleared,
    BaseKey,
    BlockRemoved,
    BlockStored,
    RadixCache,
    RadixKey,
)


def make_cache(page_size=1, pages=256, **kwargs):
    alloc = SlotAllocator(pages=pages, page_size=page_size)
    return RadixCache(None, alloc, page_size=page_size, **kwargs), alloc


def insert(cache, alloc, tokens, extra_key=None):
    """Inserts like an engine: fresh slots, frees the duplicates and the unaligned rest."""
    slots = alloc.alloc(len(tokens))
    whole = len(tokens) // cache.page_size * cache.page_size
    cached = cache.insert(RadixKey(tokens, extra_key), slots[: len(tokens)])
    alloc.free(slots[:cached])
    alloc.free(slots[whole:])
    return cached, [int(s) for s in slots[cached:whole]]


def test_radix_key_behaves_like_sglangs():
    key = RadixKey([1, 2, 3, 4], extra_key="salt")
    assert len(key) == 4 and list(key) == [1, 2, 3, 4]
    one = key[2]
    assert isinstance(one, RadixKey) and one.token_ids == [3] and one.extra_key == "salt"
    part = key[1:3]
    assert isinstance(part, RadixKey) and part.token_ids == [2, 3] and part.extra_key == "salt"
    assert repr(RadixKey(list(range(12)))) == (
        "RadixKey(extra_key=None, token_ids=[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]...)")
    assert BaseKey is RadixKey


def test_constructor_attributes_and_policy_names():
    cache, alloc = make_cache(page_size=4)
    assert cache.page_size == 4 and cache.disable is False and cache.device == alloc.device
    assert cache.root_node is not None
    for sglang_name in ("lru", "lfu", "fifo", "mru", "filo", "priority"):  # SGLang's names
        assert make_cache(eviction_policy=sglang_name.upper())[0].eviction_policy == sglang_name
    with pytest.raises(ValueError, match="policy"):
        make_cache(eviction_policy="sometimes")
    with pytest.raises(ValueError, match="page_size"):
        make_cache(page_size=0)
    make_cache(eviction_policy="SIEVE")  # radixkv's policies by their names, any case


def test_insert_returns_the_cached_prefix_and_match_returns_its_slots():
    cache, alloc = make_cache(page_size=1)
    assert insert(cache, alloc, [1, 2, 3])[0] == 0
    cached, kept = insert(cache, alloc, [1, 2, 3, 4, 5])
    assert cached == 3 and len(kept) == 2
    match = cache.match_prefix(RadixKey([1, 2, 3, 4, 9]))
    assert len(match.device_indices) == 4 and values(match.device_indices)[3] == kept[0]
    assert match.last_host_node is match.last_device_node and match.host_hit_length == 0
    indices, last, *_ = match  # a namedtuple, in SGLang's field order
    assert last is match.last_device_node and indices is match.device_indices


def test_matches_and_inserts_are_cut_to_whole_pages():
    cache, alloc = make_cache(page_size=4)
    cached, kept = insert(cache, alloc, list(range(10)))  # pages [0..3], [4..7]; 8, 9 dropped
    assert cached == 0 and len(kept) == 8 and cache.total_size() == 8
    match = cache.match_prefix(RadixKey(list(range(7)) + [99, 98]))
    assert values(match.device_indices) == kept[:4]  # [4..7] differs inside the page
    assert len(cache.match_prefix(RadixKey(list(range(3)))).device_indices) == 0
    empty = cache.match_prefix(RadixKey([]))
    assert len(empty.device_indices) == 0 and empty.last_device_node is cache.root_node


def test_extra_key_isolates_namespaces():
    cache, alloc = make_cache()
    insert(cache, alloc, [1, 2, 3], extra_key="lora-a")
    assert len(cache.match_prefix(RadixKey([1, 2, 3])).device_indices) == 0
    assert len(cache.match_prefix(RadixKey([1, 2, 3], "lora-b")).device_indices) == 0
    assert len(cache.match_prefix(RadixKey([1, 2, 3], "lora-a")).device_indices) == 3
    assert insert(cache, alloc, [1, 2, 3])[0] == 0  # the default namespace had nothing


def test_value_none_caches_the_token_ids_as_slots():
    cache, _ = make_cache()
    assert cache.insert(RadixKey([7, 8, 9])) == 0
    assert values(cache.match_prefix(RadixKey([7, 8, 9])).device_indices) == [7, 8, 9]


def test_non_contiguous_page_slots_are_refused_and_change_nothing():
    cache, _ = make_cache(page_size=2)
    with pytest.raises(ValueError, match="not contiguous"):
        cache.insert(RadixKey([1, 2, 3, 4]), np.asarray([10, 11, 20, 25]))
    assert cache.total_size() == 0
    with pytest.raises(ValueError, match="slots"):
        cache.insert(RadixKey([1, 2, 3, 4]), np.asarray([10, 11]))


def test_eviction_takes_least_recently_used_pages_first_and_frees_them():
    cache, alloc = make_cache(page_size=2)
    _, a = insert(cache, alloc, [1, 1, 1, 1])
    _, b = insert(cache, alloc, [2, 2, 2, 2])
    _, c = insert(cache, alloc, [3, 3, 3, 3])
    cache.match_prefix(RadixKey([1, 1, 1, 1]))  # a is now the most recent
    freed = len(alloc.freed)
    cache.evict(2)  # one page: b's tail
    assert alloc.freed[freed:] == b[2:]
    cache.evict(3)  # two pages: b's head, then c's tail
    assert alloc.freed[freed:] == b[2:] + b[:2] + c[2:]
    assert cache.total_size() == 6 and cache.evictable_size() == 6


def test_locked_nodes_are_never_evicted():
    cache, alloc = make_cache(page_size=1)
    insert(cache, alloc, [1, 2, 3])
    insert(cache, alloc, [1, 2, 4, 5])
    node = cache.match_prefix(RadixKey([1, 2, 4, 5])).last_device_node
    assert cache.inc_lock_ref(node) == -4  # [1,2] and [4,5]
    assert cache.protected_size() == 4 and cache.evictable_size() == 1
    assert cache.inc_lock_ref(node) == 0  # already protected
    cache.evict(100)
    assert cache.total_size() == 4 and cache.evictable_size() == 0
    assert cache.dec_lock_ref(node) == 0
    assert cache.dec_lock_ref(node) == 4
    cache.evict(100)
    assert cache.total_size() == 0 and alloc.outstanding == set()


def test_a_node_evicted_since_its_match_is_refused():
    cache, alloc = make_cache()
    insert(cache, alloc, [1, 2, 3])
    node = cache.match_prefix(RadixKey([1, 2, 3])).last_device_node
    assert node.alive and not node.evicted
    cache.evict(1)  # its tail page
    assert node.evicted
    with pytest.raises(RuntimeError, match="evicted"):
        cache.inc_lock_ref(node)
    with pytest.raises(RuntimeError, match="evicted"):
        cache.dec_lock_ref(node)
    fresh = cache.match_prefix(RadixKey([1, 2, 3])).last_device_node
    assert fresh.alive and cache.inc_lock_ref(fresh) == -2


def test_unlocking_an_unlocked_node_is_a_runtime_error():
    cache, alloc = make_cache()
    insert(cache, alloc, [1, 2])
    node = cache.match_prefix(RadixKey([1, 2])).last_device_node
    with pytest.raises(RuntimeError):
        cache.dec_lock_ref(node)
    assert cache.evictable_size() == 2


def test_root_locks_are_no_ops():
    cache, _ = make_cache()
    assert cache.inc_lock_ref(cache.root_node) == 0 and cache.dec_lock_ref(cache.root_node) == 0


def test_disabled_cache_caches_nothing():
    cache, alloc = make_cache(disable=True)
    assert cache.insert(RadixKey([1, 2, 3]), np.asarray([5, 6, 7])) == 0
    match = cache.match_prefix(RadixKey([1, 2, 3]))
    assert len(match.device_indices) == 0 and match.last_device_node is cache.root_node
    cache.evict(10)
    assert cache.total_size() == 0 and alloc.freed == []


def test_capacity_overflow_is_a_runtime_error_naming_the_option():
    cache, _ = make_cache(max_cached_pages=2)
    cache.insert(RadixKey([1, 2]))
    with pytest.raises(RuntimeError, match="max_cached_pages"):
        cache.insert(RadixKey([3, 4, 5]))
    assert cache.total_size() == 2


def test_events_chain_page_hashes_and_report_removals_and_resets():
    cache, alloc = make_cache(page_size=2, enable_kv_cache_events=True)
    insert(cache, alloc, [1, 2, 3, 4])
    insert(cache, alloc, [1, 2, 5, 6], extra_key=None)
    stored = cache.take_events()
    assert [type(e) for e in stored] == [BlockStored] * 3
    first, second, third = stored
    assert first.parent_block_hash is None and first.token_ids == [1, 2] and first.block_size == 2
    assert second.parent_block_hash == first.block_hashes[0] and second.token_ids == [3, 4]
    assert third.parent_block_hash == first.block_hashes[0] and third.token_ids == [5, 6]
    assert cache.take_events() == []
    cache.evict(2)
    removed = cache.take_events()
    assert removed == [BlockRemoved([second.block_hashes[0]])]  # [3,4] is least recent
    cache.reset()
    assert cache.take_events() == [AllBlocksCleared()]
    quiet, quiet_alloc = make_cache()
    insert(quiet, quiet_alloc, [1, 2])
    assert quiet.take_events() == []


def test_reset_empties_the_cache_and_kills_old_nodes():
    cache, alloc = make_cache()
    insert(cache, alloc, [1, 2, 3])
    node = cache.match_prefix(RadixKey([1, 2, 3])).last_device_node
    cache.reset()
    assert cache.total_size() == 0 and node.evicted
    assert len(cache.match_prefix(RadixKey([1, 2, 3])).device_indices) == 0


def test_pretty_print_shows_the_tree_and_the_size(capsys):
    cache, alloc = make_cache()
    insert(cache, alloc, [1, 2, 3])
    cache.pretty_print()
    out = capsys.readouterr().out
    assert "#tokens: 3" in out and "RadixTree" in out


def test_match_returns_torch_int64_tensors_on_the_device(torch):
    cache, alloc = make_cache()
    alloc.device = torch.device("cpu")
    insert(cache, alloc, [1, 2, 3])
    match = cache.match_prefix(RadixKey([1, 2, 3]))
    assert isinstance(match.device_indices, torch.Tensor)
    assert match.device_indices.dtype == torch.int64
    empty = cache.match_prefix(RadixKey([9]))
    assert isinstance(empty.device_indices, torch.Tensor) and empty.device_indices.numel() == 0
    freed = []
    alloc.free = lambda t: freed.append(t)
    cache.evict(3)
    assert len(freed) == 1 and isinstance(freed[0], torch.Tensor) and freed[0].dtype == torch.int64


def make_request(torch, pool, alloc, cache, prompt, extra_key=None):
    """A request as SGLang's scheduler admits it: match, lock, slots for the rest."""
    req = types.SimpleNamespace(origin_input_ids=list(prompt), output_ids=[], extra_key=extra_key,
                                req_pool_idx=pool.alloc())
    match = cache.match_prefix(RadixKey(list(prompt), extra_key))
    req.prefix_indices, req.last_node = match.device_indices, match.last_device_node
    cache.inc_lock_ref(req.last_node)
    prefix = len(req.prefix_indices)
    # New slots start at a page boundary (a paged allocator); the prefix is whole pages.
    fresh = torch.from_numpy(alloc.alloc(len(prompt) + 64 - prefix))
    row = torch.cat([req.prefix_indices, fresh]).to(torch.int32)
    pool.req_to_token[req.req_pool_idx, : len(row)] = row
    req.spare = fresh[len(prompt) - prefix :]  # slots for decoding, freed by the test at the end
    return req


@pytest.mark.parametrize("page_size", [1, 4])
def test_request_paths_cache_everything_and_leak_nothing(torch, page_size):
    alloc = SlotAllocator(pages=1024, page_size=page_size)
    pool = ReqToTokenPool(torch, rows=8, width=512)
    cache = RadixCache(pool, alloc, page_size=page_size)
    system = list(range(1000, 1021))  # 21 tokens: not page-aligned at 4

    first = make_request(torch, pool, alloc, cache, system + [1, 2, 3])
    # Chunked prefill: the first 13 tokens computed, then cached while the request runs.
    first.fill_ids = first.origin_input_ids[:13]
    cache.cache_unfinished_req(first)
    assert cache.total_size() == 13 // page_size * page_size
    assert len(first.prefix_indices) == 13 and first.cache_protected_len == 13 // page_size * page_size
    assert cache.protected_size() == cache.total_size()  # the request's lock moved to the new end
    first.output_ids = [7, 8, 9]
    used = len(first.origin_input_ids) + len(first.output_ids) - 1
    spare_used = used - len(first.origin_input_ids)

    second = make_request(torch, pool, alloc, cache, system + [4, 5])
    assert len(second.prefix_indices) == 13 // page_size * page_size

    cache.cache_finished_req(first)
    assert pool.freed == [first.req_pool_idx]
    # first's whole pages of prompt + output (minus the last token) are cached.
    assert cache.total_size() == used // page_size * page_size
    alloc.free(first.spare[max(spare_used, 0) :])  # decoding slots never written

    second.output_ids = [6]
    cache.cache_finished_req(second)
    alloc.free(second.spare)
    assert cache.protected_size() == 0
    match = cache.match_prefix(RadixKey(system))
    assert len(match.device_indices) == len(system) // page_size * page_size

    cache.evict(10**6)
    assert cache.total_size() == 0
    assert alloc.outstanding == set(), "slots neither cached nor returned"


def test_import_does_not_need_torch_and_results_become_numpy():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import radixkv.sglang as s\n"
        "class A:\n"
        "    def free(self, t): print('freed', type(t).__name__, list(t))\n"
        "c = s.RadixCache(None, A(), page_size=1)\n"
        "c.insert(s.RadixKey([1, 2]), [5, 6])\n"
        "m = c.match_prefix(s.RadixKey([1, 2]))\n"
        "print(type(m.device_indices).__name__, list(m.device_indices))\n"
        "c.evict(2)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["ndarray [5, 6]", "freed ndarray [6, 5]"]


def test_a_node_of_another_cache_is_refused():
    one, alloc_one = make_cache()
    two, alloc_two = make_cache()
    insert(one, alloc_one, [1, 2])
    insert(two, alloc_two, [1, 2])
    node = one.match_prefix(RadixKey([1, 2])).last_device_node
    with pytest.raises(RuntimeError, match="another cache"):
        two.inc_lock_ref(node)
    assert two.protected_size() == 0 and one.protected_size() == 0


class ReentrantKey:
    """A token sequence that calls back into the cache while the cache reads it."""

    def __init__(self, cache, tokens):
        self.cache, self.tokens = cache, tokens

    def __len__(self):
        return len(self.tokens)

    def __getitem__(self, index):
        return self.tokens[index]

    def __iter__(self):
        self.cache.total_size()
        return iter(self.tokens)


def test_a_call_inside_another_call_is_refused_not_raced():
    # The same guard refuses a second thread while a call is inside the trie without the GIL.
    cache, alloc = make_cache()
    insert(cache, alloc, [1, 2, 3])
    with pytest.raises(RuntimeError, match="already inside another call"):
        cache.match_prefix(RadixKey(ReentrantKey(cache, [1, 2, 3])))
    assert len(cache.match_prefix(RadixKey([1, 2, 3])).device_indices) == 3
    cache._trie.verify()
