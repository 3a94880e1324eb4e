"""Per-request cost of SGLang's prefix-cache calls from Python: radixkv.sglang.RadixCache (the C++
trie) against the pure-Python reference cache of the tests (tests/python/reference_cache.py, the
same semantics: a radix tree of pages with LRU eviction), side by side in one run.

One request at prompt length L: match_prefix of its key (half of it a prefix shared with earlier
requests, half new), inc_lock_ref of the match, insert of the whole key with fresh slots,
dec_lock_ref, then evict(L) so the cache stays at about `--resident` requests. The keys are
Python lists of ints (as SGLang's are); the slots are a NumPy int64 array for radixkv and a list
for the reference (each in the form it reads fastest, made before the clock starts).

Prints a Markdown table of medians (microseconds per request and per call) and the ratio.
Usage: bench/python/run.sh [--lengths 1024,4096,...] [--page-size 16] [--requests N]
"""

import argparse
import os
import platform
import random
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "python"))

from reference_cache import ReferenceCache  # noqa: E402

from radixkv.sglang import RadixCache, RadixKey  # noqa: E402


class NullAllocator:
    """Takes freed slots back (the engine's allocator); counts them."""

    def __init__(self):
        self.freed = 0

    def free(self, slots):
        self.freed += len(slots)


def requests_for(length, count, seed):
    """`count` keys of `length` tokens: a shared first half from one of 4 system prompts, then a
    unique second half."""
    rng = random.Random(seed)
    systems = [[rng.randrange(32000) for _ in range(length // 2)] for _ in range(4)]
    keys = []
    for _ in range(count):
        keys.append(rng.choice(systems) + [rng.randrange(32000) for _ in range(length - length // 2)])
    return keys


class RadixkvSide:
    name = "radixkv.sglang"

    def __init__(self, page_size):
        self.cache = RadixCache(None, NullAllocator(), page_size=page_size, max_cached_pages=1 << 22)

    def slots(self, first, length):
        return np.arange(first, first + length, dtype=np.int64)

    def request(self, key, slots, evict_tokens, times):
        t0 = time.perf_counter()
        match = self.cache.match_prefix(RadixKey(key))
        self.cache.inc_lock_ref(match.last_device_node)
        t1 = time.perf_counter()
        self.cache.insert(RadixKey(key), slots)
        t2 = time.perf_counter()
        self.cache.dec_lock_ref(match.last_device_node)
        self.cache.evict(evict_tokens)
        t3 = time.perf_counter()
        times.append((t1 - t0, t2 - t1, t3 - t2, t3 - t0))


class ReferenceSide:
    name = "pure-Python reference"

    def __init__(self, page_size):
        self.cache = ReferenceCache(page_size)
        self.page_size = page_size

    def slots(self, first, length):
        return list(range(first, first + length))

    def request(self, key, slots, evict_tokens, times):
        t0 = time.perf_counter()
        _, _, handle = self.cache.match(0, key)
        if handle is not None:
            self.cache.lock(handle)
        t1 = time.perf_counter()
        self.cache.insert(0, key, slots)
        t2 = time.perf_counter()
        if handle is not None:
            self.cache.unlock(handle)
        self.cache.evict(-(-evict_tokens // self.page_size))
        t3 = time.perf_counter()
        times.append((t1 - t0, t2 - t1, t3 - t2, t3 - t0))


def run(side, keys, resident, length):
    times = []
    next_slot = 0
    for i, key in enumerate(keys):
        slots = side.slots(next_slot, len(key))
        next_slot += len(key)
        # Warm-up: the first `resident` requests fill the cache without eviction and untimed.
        evict = length if i >= resident else 0
        side.request(key, slots, evict, times if i >= resident else [])
    return [statistics.median(t[j] for t in times) * 1e6 for j in range(4)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", default="1024,4096,16384,65536,131072")
    parser.add_argument("--page-size", type=int, default=16)
    parser.add_argument("--requests", type=int, default=0,
                        help="timed requests per length (default: 40 up to 16k tokens, then 12)")
    parser.add_argument("--resident", type=int, default=8,
                        help="requests the cache holds (untimed warm-up fills it)")
    args = parser.parse_args()

    print(f"page size {args.page_size}, {args.resident} requests resident, medians; "
          f"{platform.python_implementation()} {platform.python_version()}, "
          f"{platform.processor() or platform.machine()}")
    print()
    print("| prompt tokens | implementation | match+lock us | insert us | unlock+evict us "
          "| request us | ratio |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for length in (int(v) for v in args.lengths.split(",")):
        timed = args.requests or (40 if length <= 16384 else 12)
        keys = requests_for(length, args.resident + timed, seed=length)
        results = {}
        for side in (RadixkvSide(args.page_size), ReferenceSide(args.page_size)):
            results[side.name] = run(side, keys, args.resident, length)
        ours = results["radixkv.sglang"][3]
        for name, (match, insert, evict, total) in results.items():
            ratio = "1.00" if name == "radixkv.sglang" else f"{total / ours:.1f}x"
            print(f"| {length:,} | {name} | {match:,.0f} | {insert:,.0f} | {evict:,.0f} "
                  f"| {total:,.0f} | {ratio} |")


if __name__ == "__main__":
    main()
