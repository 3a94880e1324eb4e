"""SGLang's own unit tests of its radix cache, case for case, against radixkv.sglang.

Each test here mirrors one case of sgl-project/sglang's test/srt/test_radix_cache_unit.py
(classes TestBaseKey, TestTreeNode, TestRadixCache; python/README.md names the commit read), and
says which: the same calls and the same expectations, written in our own words. Where SGLang's
case only checks that something does not crash, or that "some" events come, this one checks the
exact outcome as well.
"""

import time
import unittest.mock

import pytest

from radixkv.sglang import BaseKey, BlockRemoved, BlockStored, RadixCache, TreeNode

PAGE_SIZE = 4


@pytest.fixture(autouse=True)
def fresh_node_counter():
    """SGLang's setUp: node ids count from 0 in every test."""
    TreeNode.counter = 0


def simulated(page_size=1, **kwargs):
    return RadixCache(req_to_token_pool=None, token_to_kv_pool_allocator=None,
                      page_size=page_size, **kwargs)


def int64(torch, values):
    return torch.tensor(values, dtype=torch.int64)


# ----- TestBaseKey -----


def test_base_key_init_basic():  # TestBaseKey.test_init_basic
    key = BaseKey([1, 2, 3, 4])
    assert key.token_ids == [1, 2, 3, 4] and key.extra_key is None


def test_base_key_init_with_extra_key():  # TestBaseKey.test_init_with_extra_key
    key = BaseKey([1, 2, 3], "test_key")
    assert key.token_ids == [1, 2, 3] and key.extra_key == "test_key"


def test_base_key_len():  # TestBaseKey.test_len
    assert len(BaseKey([1, 2, 3])) == 3 and len(BaseKey([])) == 0


def test_base_key_iter():  # TestBaseKey.test_iter
    assert list(BaseKey([1, 2, 3, 4])) == [1, 2, 3, 4]


@pytest.mark.parametrize("tokens", [[1, 2, 3], [], [42]])
def test_base_key_len_and_iter(tokens):  # TestBaseKey.test_len_and_iter
    key = BaseKey(tokens)
    assert len(key) == len(tokens) and list(key) == tokens


@pytest.mark.parametrize("index,expected", [(0, [10]), (-1, [30]), (2, [30])])
def test_base_key_getitem_int(index, expected):  # TestBaseKey.test_getitem_int
    one = BaseKey([10, 20, 30])[index]
    assert isinstance(one, BaseKey) and one.token_ids == expected


def test_base_key_getitem_slice():  # TestBaseKey.test_getitem_slice
    key = BaseKey([1, 2, 3, 4, 5], "extra")
    part = key[1:4]
    assert isinstance(part, BaseKey) and part.token_ids == [2, 3, 4] and part.extra_key == "extra"
    assert key[2:2].token_ids == [] and key[:].token_ids == [1, 2, 3, 4, 5]


def test_base_key_getitem_invalid_index():  # TestBaseKey.test_getitem_invalid_index
    with pytest.raises(IndexError):
        BaseKey([1, 2, 3])[10]


def test_base_key_repr():  # TestBaseKey.test_repr
    # SGLang's case looks for "BaseKey" in the repr; its own class prints "RadixKey" since
    # BaseKey became an alias (the one case SGLang's RadixCache fails). The class name, the
    # extra key and the tokens are what it means to check.
    text = repr(BaseKey([1, 2, 3], "test"))
    assert type(BaseKey([])).__name__ in text
    assert "extra_key='test'" in text and "[1, 2, 3]" in text


def test_base_key_repr_long_token_ids():  # TestBaseKey.test_repr_long_token_ids
    text = repr(BaseKey(list(range(15))))
    assert "..." in text and "10" not in text.split("token_ids=")[1]


# ----- TestTreeNode -----


def test_tree_node_init_basic():  # TestTreeNode.test_init_basic
    node = TreeNode()
    assert node.id == 0 and len(node.children) == 0
    assert node.parent is None and node.key is None and node.value is None
    assert node.lock_ref == 0 and node.hit_count == 0 and node.host_ref_counter == 0
    assert node.host_value is None and node.hash_value is None


def test_tree_node_init_with_id():  # TestTreeNode.test_init_with_id
    assert TreeNode(id=42).id == 42
    assert TreeNode().id == 1  # the counter moved on all the same


def test_tree_node_counter_increment():  # TestTreeNode.test_counter_increment
    assert (TreeNode().id, TreeNode().id) == (0, 1)


@pytest.mark.parametrize(
    "has_value,has_host_value,evicted,backuped",
    [(False, False, True, False), (True, False, False, False),
     (True, True, False, True), (False, True, True, True)],
)
def test_tree_node_evicted_backuped_properties(torch, has_value, has_host_value, evicted,
                                               backuped):  # TestTreeNode.test_evicted_backuped_properties
    node = TreeNode()
    if has_value:
        node.value = torch.tensor([1, 2, 3])
    if has_host_value:
        node.host_value = torch.tensor([4, 5, 6])
    assert (node.evicted, node.backuped) == (evicted, backuped)


def test_tree_node_protect_release_host():  # TestTreeNode.test_protect_release_host
    node = TreeNode()
    node.protect_host()
    assert node.host_ref_counter == 1
    node.release_host()
    assert node.host_ref_counter == 0
    with pytest.raises(RuntimeError):
        node.release_host()


def test_tree_node_get_last_hash_value():  # TestTreeNode.test_get_last_hash_value
    node = TreeNode()
    assert node.get_last_hash_value() is None
    node.hash_value = ["hash1", "hash2", "hash3"]
    assert node.get_last_hash_value() == "hash3"


def test_tree_node_lt_comparison():  # TestTreeNode.test_lt_comparison
    first = TreeNode()
    time.sleep(0.001)
    second = TreeNode()
    assert first < second and not second < first


# ----- TestRadixCache -----


@pytest.mark.parametrize("page_size,disable,events", [(1, False, False), (4, False, True),
                                                      (1, True, False)])
def test_radix_cache_init_variations(torch, page_size, disable,
                                     events):  # TestRadixCache.test_init_variations
    cache = simulated(page_size, disable=disable, enable_kv_cache_events=events)
    assert (cache.page_size, cache.disable, cache.enable_kv_cache_events) == (
        page_size, disable, events)
    assert cache.device == torch.device("cpu")
    assert cache.root_node is not None and len(cache.root_node.key) == 0


def test_radix_cache_reset(torch):  # TestRadixCache.test_reset
    cache = simulated()
    cache.insert(BaseKey([1, 2, 3]), int64(torch, [10, 20, 30]))
    assert cache.total_size() > 0
    cache.reset()
    assert (cache.total_size(), cache.evictable_size(), cache.protected_size()) == (0, 0, 0)


@pytest.mark.parametrize("disable", [False, True])
def test_radix_cache_insert_and_match_basic(torch, disable):  # TestRadixCache.test_insert_and_match_basic
    cache = simulated(disable=disable)
    value = int64(torch, [10, 20, 30])
    assert cache.insert(BaseKey([1, 2, 3]), value) == 0
    if disable:
        assert cache.total_size() == 0
        return
    assert cache.total_size() == 3 and cache.evictable_size() == 3
    torch.testing.assert_close(cache.match_prefix(BaseKey([1, 2, 3])).device_indices, value)
    torch.testing.assert_close(cache.match_prefix(BaseKey([1, 2])).device_indices,
                               int64(torch, [10, 20]))


def test_radix_cache_insert_with_none_value():  # TestRadixCache.test_insert_with_none_value
    cache = simulated()
    assert cache.insert(BaseKey([1, 2, 3]), None) == 0
    assert cache.total_size() == 3


def test_radix_cache_total_size(torch):  # TestRadixCache.test_total_size
    cache = simulated()
    assert cache.total_size() == 0
    cache.insert(BaseKey([1, 2, 3]), int64(torch, [10, 20, 30]))
    assert cache.total_size() == 3
    cache.insert(BaseKey([4, 5]), int64(torch, [40, 50]))
    assert cache.total_size() == 5


@pytest.mark.parametrize("page_size,enabled", [(1, True), (2, True), (1, False)])
def test_radix_cache_kv_cache_events(page_size, enabled):  # TestRadixCache.test_kv_cache_events
    cache = simulated(page_size, enable_kv_cache_events=enabled)
    cache.insert(BaseKey([1, 2, 3, 4, 5]), None)
    events = cache.take_events()
    if not enabled:
        assert events == []
        return
    stored = [e for e in events if isinstance(e, BlockStored)]
    # Exactly one event per whole page, each page's tokens, chained.
    assert [e.token_ids for e in stored] == [[1, 2, 3, 4, 5][i : i + page_size]
                                             for i in range(0, 5 // page_size * page_size,
                                                            page_size)]
    assert all(len(e.token_ids) <= page_size for e in stored)
    assert [e.parent_block_hash for e in stored[1:]] == [e.block_hashes[0] for e in stored[:-1]]


def test_radix_cache_kv_cache_events_with_eviction(torch):  # TestRadixCache.test_kv_cache_events_with_eviction
    allocator = unittest.mock.Mock()
    allocator.device = torch.device("cpu")
    cache = RadixCache(req_to_token_pool=None, token_to_kv_pool_allocator=allocator, page_size=1,
                       enable_kv_cache_events=True)
    cache.insert(BaseKey([1, 2, 3]), int64(torch, [10, 20, 30]))
    cache.evict(3)
    events = cache.take_events()
    stored = [e for e in events if isinstance(e, BlockStored)]
    removed = [e for e in events if isinstance(e, BlockRemoved)]
    assert len(stored) == 3 and all(len(e.block_hashes) > 0 for e in removed)
    # Every stored page was removed, each once.
    assert sorted(h for e in removed for h in e.block_hashes) == sorted(
        e.block_hashes[0] for e in stored)


def test_radix_cache_extra_key_isolation(torch):  # TestRadixCache.test_extra_key_isolation
    cache = simulated()
    cache.insert(BaseKey([1, 2, 3], "key1"), int64(torch, [10, 20, 30]))
    cache.insert(BaseKey([1, 2, 3], "key2"), int64(torch, [40, 50, 60]))
    cache.insert(BaseKey([1, 2, 3], None), int64(torch, [70, 80, 90]))
    for extra, expected in (("key1", [10, 20, 30]), ("key2", [40, 50, 60]), (None, [70, 80, 90])):
        torch.testing.assert_close(cache.match_prefix(BaseKey([1, 2, 3], extra)).device_indices,
                                   int64(torch, expected))
    assert len(cache.match_prefix(BaseKey([1, 2, 3], "nonexistent")).device_indices) == 0


def test_radix_cache_lock_ref_operations(torch):  # TestRadixCache.test_lock_ref_operations
    cache = simulated()
    cache.insert(BaseKey([1, 2, 3]), int64(torch, [10, 20, 30]))
    node = cache.match_prefix(BaseKey([1, 2, 3])).last_device_node
    evictable, protected = cache.evictable_size(), cache.protected_size()
    cache.inc_lock_ref(node)
    assert (cache.evictable_size(), cache.protected_size()) == (evictable - 3, protected + 3)
    cache.dec_lock_ref(node)
    assert (cache.evictable_size(), cache.protected_size()) == (evictable, protected)


def test_radix_cache_evict_functionality(torch):  # TestRadixCache.test_evict_functionality
    allocator = unittest.mock.Mock()
    allocator.device = torch.device("cpu")
    cache = RadixCache(req_to_token_pool=None, token_to_kv_pool_allocator=allocator, page_size=1)
    cache.insert(BaseKey([1, 2]), int64(torch, [10, 20]))
    cache.insert(BaseKey([3, 4]), int64(torch, [30, 40]))
    before = cache.total_size()
    cache.evict(2)
    allocator.free.assert_called()
    assert cache.total_size() < before
    # Least recently used first: [1, 2], tail first.
    freed = [int(v) for call in allocator.free.call_args_list for v in call.args[0].tolist()]
    assert freed == [20, 10] and cache.total_size() == 2


@pytest.mark.parametrize("page_size,length", [(1, 5), (2, 5), (4, 6)])
def test_radix_cache_page_alignment_boundary(torch, page_size,
                                             length):  # TestRadixCache.test_page_alignment_boundary
    cache = simulated(page_size)
    tokens = list(range(length))
    cache.insert(BaseKey(tokens), int64(torch, tokens))
    matched = len(cache.match_prefix(BaseKey(tokens)).device_indices)
    assert matched > 0 and matched % page_size == 0
    assert matched == length // page_size * page_size


def test_radix_cache_pretty_print_basic(torch, capsys):  # TestRadixCache.test_pretty_print_basic
    cache = simulated()
    cache.insert(BaseKey([1, 2, 3]), int64(torch, [10, 20, 30]))
    cache.pretty_print()
    assert "#tokens: 3" in capsys.readouterr().out


def test_radix_cache_all_values_flatten(torch):  # TestRadixCache.test_all_values_flatten
    cache = simulated()
    cache.insert(BaseKey([1, 2]), int64(torch, [10, 20]))
    cache.insert(BaseKey([3, 4]), int64(torch, [30, 40]))
    values = cache.all_values_flatten()
    assert len(values) == 4 and set(values.tolist()) == {10, 20, 30, 40}
