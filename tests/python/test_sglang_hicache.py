"""radixkv.sglang.HiRadixCache: SGLang's HiCache shape over the runtime's host tier. A fake engine
keeps what every device and host slot holds, so each test checks the bytes that the copies moved,
not only the counts: pages written to the host at insert (write-through) or at eviction
(write-back), reported by match_prefix as a host hit, loaded back into fresh device slots by
init_load_back, and node handles that outlive a device eviction but not a host one."""

import pytest

from engine_fakes import SlotAllocator
from radixkv.sglang import (
    CacheInitParams,
    HiRadixCache,
    InitLoadBackParams,
    InsertParams,
    MatchPrefixParams,
    RadixKey,
)


def ints(values):
    return [int(v) for v in values.tolist()]


class Engine:
    """Device slots and host slots with contents, an allocator that says None when short (as
    SGLang's does), and the host tier's copies."""

    def __init__(self, pages, page_size, host_pages):
        self.alloc = SlotAllocator(pages=pages, page_size=page_size)
        self.device = {}  # device slot -> what its KV is (the token it was computed for)
        self.host = [None] * (host_pages * page_size)
        self.writes = self.loads = 0
        self.fail_writes = None

    # token_to_kv_pool_allocator
    @property
    def device_name(self):
        return "cpu"

    def compute(self, tokens):
        slots = self.alloc.alloc(len(tokens))
        for slot, token in zip(ints(slots), tokens):
            self.device[slot] = token
        return slots

    # host_io
    def write_to_host(self, device, host):
        if self.fail_writes:
            raise self.fail_writes
        self.writes += 1
        for d, h in zip(ints(device), ints(host)):
            self.host[h] = self.device[d]

    def load_from_host(self, host, device):
        self.loads += 1
        for h, d in zip(ints(host), ints(device)):
            self.device[d] = self.host[h]


class Allocator:
    def __init__(self, engine):
        self.engine = engine
        self.device = "cpu"
        self.size = engine.alloc.size

    def alloc(self, n):
        pages = -(-n // self.engine.alloc.page_size)
        if len(self.engine.alloc.free_pages) < pages:
            return None
        return self.engine.alloc.alloc(n)

    def free(self, slots):
        for slot in ints(slots):
            self.engine.device[slot] = "freed"
        self.engine.alloc.free(slots)


def make(write_policy, page_size=1, pages=64, host_pages=64, **kwargs):
    engine = Engine(pages, page_size, host_pages)
    params = CacheInitParams(token_to_kv_pool_allocator=Allocator(engine), page_size=page_size,
                             **kwargs)
    cache = HiRadixCache(params, host_pages=host_pages, host_io=engine,
                         write_policy=write_policy, load_back_threshold=1)
    return cache, engine


def cache_tokens(cache, engine, tokens):
    slots = engine.compute(tokens)
    result = cache.insert(InsertParams(key=RadixKey(tokens), value=slots))
    engine.alloc.free(slots[: result.prefix_len])
    return result


def match(cache, tokens):
    return cache.match_prefix(MatchPrefixParams(key=RadixKey(tokens)))


@pytest.mark.parametrize("write_policy", ["write_back", "write_through"])
@pytest.mark.parametrize("page_size", [1, 4])
def test_evicted_pages_come_back_from_the_host_with_their_bytes(write_policy, page_size):
    cache, engine = make(write_policy, page_size)
    tokens = list(range(100, 116))
    node = cache_tokens(cache, engine, tokens).last_device_node
    assert engine.writes == (1 if write_policy == "write_through" else 0)
    cache.evict(len(tokens))
    assert engine.writes == 1 and cache.total_size() == 0 and cache.host_total_size() == 16
    assert engine.alloc.outstanding == set()  # every device slot went back

    hit = match(cache, tokens + [7])
    assert len(hit.device_indices) == 0 and hit.last_device_node is cache.root_node
    assert hit.host_hit_length == 16 and hit.full_kv_hit_length == 16
    assert hit.last_host_node is node and hit.best_match_node is node
    assert node.evicted and node.backuped and node.value is None and len(node.host_value) == 16

    loaded, last = cache.init_load_back(InitLoadBackParams(hit.best_match_node, hit.host_hit_length))
    assert last is node and len(loaded) == 16 and engine.loads == 1
    assert [engine.device[s] for s in ints(loaded)] == tokens  # the bytes came back
    again = match(cache, tokens)
    assert ints(again.device_indices) == ints(loaded) and again.host_hit_length == 0
    assert not node.evicted and cache.total_size() == 16
    cache.inc_lock_ref(again.last_device_node)
    assert cache.protected_size() == 16
    cache.dec_lock_ref(again.last_device_node)
    cache._trie.verify()


def test_a_match_split_between_device_and_host():
    cache, engine = make("write_back")
    tokens = list(range(10))
    node = cache_tokens(cache, engine, tokens).last_device_node
    cache.evict(4)  # the tail: 6 tokens stay on the device, 4 go to the host
    hit = match(cache, tokens)
    assert len(hit.device_indices) == 6 and hit.host_hit_length == 4
    assert hit.last_device_node.key.token_ids == tokens[:6] and hit.last_host_node is node
    assert node.key.token_ids == tokens[6:]  # the split left the handle's node the host part
    assert [engine.device[s] for s in ints(hit.device_indices)] == tokens[:6]
    with pytest.raises(RuntimeError, match="host tier only"):
        cache.inc_lock_ref(node)
    loaded, last = cache.init_load_back(node, hit.host_hit_length)
    assert [engine.device[s] for s in ints(loaded)] == tokens[6:] and last is node
    cache._trie.verify()


def test_a_handle_lives_while_its_node_is_on_the_host_and_dies_with_it():
    cache, engine = make("write_back", host_pages=4)
    first = cache_tokens(cache, engine, [1, 2, 3, 4]).last_device_node
    cache.evict(4)
    assert first.alive and first.evicted and first.key.token_ids == [1, 2, 3, 4]
    cache_tokens(cache, engine, [5, 6, 7, 8])
    cache.evict(4)  # write-back needs the whole host: [1, 2, 3, 4] leaves the cache
    assert not first.alive and first.evicted
    with pytest.raises(RuntimeError, match="evicted"):
        first.key
    assert match(cache, [1, 2, 3, 4]).host_hit_length == 0
    assert match(cache, [5, 6, 7, 8]).host_hit_length == 4
    cache._trie.verify()


def test_load_back_respects_the_threshold_the_quota_and_the_allocator():
    cache, engine = make("write_back", pages=8)
    tokens = list(range(8))
    node = cache_tokens(cache, engine, tokens).last_device_node
    cache.evict(8)
    indices, last = cache.init_load_back(node, 8, mem_quota=7)
    assert len(indices) == 0 and last is cache.root_node  # over the quota: nothing on device
    cache.load_back_threshold = 9
    assert len(cache.init_load_back(node, 8)[0]) == 0
    cache.load_back_threshold = 1
    engine.compute([0] * 8)  # the device is full: nothing evictable makes room
    indices, last = cache.init_load_back(node, 8)
    assert len(indices) == 0 and last is cache.root_node and node.evicted
    cache._trie.verify()


def test_host_events_carry_the_cpu_medium():
    cache, engine = make("write_back", enable_kv_cache_events=True)
    cache_tokens(cache, engine, [1, 2])
    cache.evict(2)
    events = [(type(e).__name__, e.medium) for e in cache.take_events()]
    assert events.count(("BlockStored", "GPU")) == 2 and events.count(("BlockStored", "CPU")) == 2
    assert events.count(("BlockRemoved", "GPU")) == 2


def test_a_failed_host_write_stops_the_cache_until_reset():
    cache, engine = make("write_through")
    engine.fail_writes = ValueError("host buffer gone")
    with pytest.raises(ValueError, match="host buffer gone"):
        cache_tokens(cache, engine, [1, 2, 3])
    with pytest.raises(RuntimeError, match="reset"):
        match(cache, [1, 2, 3])
    engine.fail_writes = None
    cache.reset()
    engine.alloc = engine.alloc  # the engine resets its allocator with the cache
    assert match(cache, [1, 2, 3]).full_kv_hit_length == 0
    cache_tokens(cache, engine, [4, 5])
    assert len(match(cache, [4, 5]).device_indices) == 2
