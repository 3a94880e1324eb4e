"""radixkv.sglang.RadixCache against the pure-Python reference cache (reference_cache.py) under
random inserts, matches, locks, unlocks and evictions, step by step and exactly: the same match
lengths and slots, the same node deaths, the same lock deltas, the same evicted slots in the same
order (LRU), the same sizes. Every slot handed in is, at the end, returned exactly once.
"""

import random

import pytest

from engine_fakes import SlotAllocator
from radixkv.sglang import RadixCache, RadixKey
from reference_cache import ReferenceCache


def random_key(rng, bases):
    base = rng.choice(bases)
    tokens = base[: rng.randint(0, len(base))]
    if rng.random() < 0.5:
        tokens = tokens + [rng.randint(0, 3) for _ in range(rng.randint(1, 12))]
    return tokens or [rng.randint(0, 3)]


def as_list(indices):
    return [int(v) for v in indices.tolist()]


@pytest.mark.parametrize("page_size", [1, 2, 4])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_operations_match_the_reference_exactly(page_size, seed):
    rng = random.Random(seed * 1000 + page_size)
    alloc = SlotAllocator(pages=4096, page_size=page_size)
    cache = RadixCache(None, alloc, page_size=page_size)
    ref = ReferenceCache(page_size)
    extra_keys = [None, "lora-1"]
    ns_of = {None: 0, "lora-1": 1}
    # Few distinct tokens so that keys share prefixes and diverge inside pages.
    bases = [[rng.randint(0, 3) for _ in range(rng.randint(8, 40))] for _ in range(6)]
    matched = []  # (our node, reference handle)
    locked = []
    for step in range(1500):
        op = rng.random()
        extra = rng.choice(extra_keys)
        tokens = random_key(rng, bases)
        if op < 0.35:
            slots = alloc.alloc(len(tokens))
            whole = len(tokens) // page_size * page_size
            cached = cache.insert(RadixKey(tokens, extra), slots[: len(tokens)])
            assert cached == ref.insert(ns_of[extra], tokens, slots.tolist()), step
            alloc.free(slots[:cached])  # duplicates: the tree kept its own
            alloc.free(slots[whole:])  # the unaligned tail and unused slots of the last page
        elif op < 0.6:
            ours = cache.match_prefix(RadixKey(tokens, extra))
            length, slots, handle = ref.match(ns_of[extra], tokens)
            assert as_list(ours.device_indices) == slots, step
            assert len(ours.device_indices) == length
            assert (ours.last_device_node is cache.root_node) == (handle is None)
            if handle is not None:
                matched.append((ours.last_device_node, handle))
                matched = matched[-8:]
        elif op < 0.75 and matched:
            node, handle = rng.choice(matched)
            assert node.alive == handle.alive, step
            if handle.alive:
                assert cache.inc_lock_ref(node) == -ref.lock(handle) * page_size
                locked.append((node, handle))
            else:
                with pytest.raises(RuntimeError, match="evicted"):
                    cache.inc_lock_ref(node)
        elif op < 0.85 and locked:
            node, handle = locked.pop(rng.randrange(len(locked)))
            assert cache.dec_lock_ref(node) == ref.unlock(handle) * page_size
        else:
            tokens_wanted = rng.randint(1, 6 * page_size)
            before = len(alloc.freed)
            cache.evict(tokens_wanted)
            expected = ref.evict(-(-tokens_wanted // page_size))
            assert alloc.freed[before:] == expected, step
        cached_pages, protected_pages, evictable_pages = ref.sizes()
        assert cache.total_size() == cached_pages * page_size, step
        assert cache.protected_size() == protected_pages * page_size, step
        assert cache.evictable_size() == evictable_pages * page_size, step
        if step % 100 == 0:
            cache._trie.verify()

    # Unlock everything and evict it all: every slot handed in comes back exactly once.
    for node, handle in locked:
        assert cache.dec_lock_ref(node) == ref.unlock(handle) * page_size
    before = len(alloc.freed)
    cache.evict(10**9)
    assert alloc.freed[before:] == ref.evict(10**9)
    assert cache.total_size() == 0
    assert alloc.outstanding == set()
    cache._trie.verify()
