"""Per-request cost of SGLang's prefix-cache calls from Python: radixkv.sglang.RadixCache (the C++
trie) against SGLang's Python RadixCache algorithm (sglang_algorithm.py: the commit's key match,
and the galloping one of later SGLang) and the copy-free pure-Python reference cache of the tests
(tests/python/reference_cache.py), side by side in one run, request by request in turn.

A request, as SGLang's scheduler makes it, at prompt length L: match_prefix of its key (half of it
a prefix shared with earlier requests, one of 4 system prompts, half new), inc_lock_ref of the
match, evict to make room for the tokens it will compute (the cache stays at `--resident` prompts'
worth of tokens), insert of the whole key with the slots of the computed tokens, dec_lock_ref.
Keys are Python lists of ints (SGLang's) or, for radixkv, array('q') (a buffer: no per-token
Python object); slots are int64 torch tensors (NumPy arrays without torch).

Prints a Markdown table of medians (microseconds per call and per request) and each row's request
time over radixkv's with list keys. Usage: bench/python/run.sh [--lengths 1024,32768]
[--page-sizes 1,16] [--requests N] [--resident R]
"""

import argparse
import gc
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from array import array

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "python"))

import sglang_algorithm  # noqa: E402
from reference_cache import ReferenceCache  # noqa: E402

import radixkv.sglang as radixkv_sglang  # noqa: E402

try:
    import torch
except ImportError:
    torch = None
    import numpy


class NullAllocator:
    """The engine's allocator, taking freed slots back."""

    device = "cpu"

    def __init__(self):
        self.freed = 0

    def free(self, slots):
        self.freed += len(slots)


def slots_of(first, length):
    if torch is not None:
        return torch.arange(first, first + length, dtype=torch.int64)
    return numpy.arange(first, first + length, dtype=numpy.int64)


def requests_for(length, count, seed):
    """`count` keys of `length` tokens: a shared first half from one of 4 system prompts, then a
    unique second half."""
    rng = random.Random(seed)
    systems = [[rng.randrange(32000) for _ in range(length // 2)] for _ in range(4)]
    return [rng.choice(systems) + [rng.randrange(32000) for _ in range(length - length // 2)]
            for _ in range(count)]


class Radixkv:
    def __init__(self, page_size, key_form):
        self.name = f"radixkv.sglang, {key_form} keys"
        self.form = array if key_form == "array('q')" else None
        self.cache = radixkv_sglang.RadixCache(radixkv_sglang.CacheInitParams(
            token_to_kv_pool_allocator=NullAllocator(), page_size=page_size,
            max_cached_pages=1 << 22))
        self.api = radixkv_sglang

    def key(self, tokens):
        return array("q", tokens) if self.form else tokens

    def size(self):
        return self.cache.total_size()

    def request(self, tokens, slots, resident, times):
        api, cache = self.api, self.cache
        t0 = time.perf_counter()
        match = cache.match_prefix(api.MatchPrefixParams(key=api.RadixKey(tokens)))
        t1 = time.perf_counter()
        cache.inc_lock_ref(match.last_device_node)
        t2 = time.perf_counter()
        excess = self.size() + len(tokens) - len(match.device_indices) - resident
        if excess > 0:
            cache.evict(api.EvictParams(num_tokens=excess))
        t3 = time.perf_counter()
        cache.insert(api.InsertParams(key=api.RadixKey(tokens), value=slots))
        t4 = time.perf_counter()
        cache.dec_lock_ref(match.last_device_node)
        t5 = time.perf_counter()
        times.append((t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t5 - t0))


class SGLangAlgorithm(Radixkv):
    def __init__(self, page_size, key_match):
        self.name = f"SGLang's algorithm, {key_match} match"
        self.form = None
        self.cache = sglang_algorithm.SGLangAlgorithmCache(NullAllocator(), page_size, key_match)
        self.api = sglang_algorithm

    def size(self):
        return self.cache.evictable_size_ + self.cache.protected_size_


class Reference:
    name = "pure-Python reference (copy-free)"

    def __init__(self, page_size):
        self.cache = ReferenceCache(page_size)
        self.page_size = page_size

    def key(self, tokens):
        return tokens

    def size(self):
        return self.cache.sizes()[0] * self.page_size

    def request(self, tokens, slots, resident, times):
        cache, page = self.cache, self.page_size
        t0 = time.perf_counter()
        matched, _, handle = cache.match(0, tokens)
        t1 = time.perf_counter()
        if handle is not None:
            cache.lock(handle)
        t2 = time.perf_counter()
        excess = self.size() + len(tokens) - matched - resident
        if excess > 0:
            cache.evict(-(-excess // page))
        t3 = time.perf_counter()
        cache.insert(0, tokens, slots)
        t4 = time.perf_counter()
        if handle is not None:
            cache.unlock(handle)
        t5 = time.perf_counter()
        times.append((t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t5 - t0))


def measure(length, page_size, requests, resident_prompts):
    sides = [Radixkv(page_size, "list"), Radixkv(page_size, "array('q')"),
             SGLangAlgorithm(page_size, "tokens"), SGLangAlgorithm(page_size, "gallop"),
             Reference(page_size)]
    keys = requests_for(length, resident_prompts + requests, seed=length * 31 + page_size)
    resident = resident_prompts * length
    times = {side.name: [] for side in sides}
    # Python's cyclic collector runs when allocations pass a threshold, in whichever call is
    # running then, and takes time in proportion to every object alive (the pure-Python caches
    # hold millions): it runs between requests here, untimed, so each call is charged its own work.
    gc.disable()
    try:
        for i, tokens in enumerate(keys):
            slots = slots_of(i * length, length)
            reference_slots = list(range(i * length, (i + 1) * length))
            # In turn, so that the machine's load falls on every side alike, and each side first
            # as often as the others (the first one meets the caches the last one left).
            for side in sides[i % len(sides) :] + sides[: i % len(sides)]:
                warm = i < resident_prompts  # fills the cache, untimed
                key = side.key(tokens)
                gc.collect(0)
                side.request(key, reference_slots if isinstance(side, Reference) else slots,
                             resident, [] if warm else times[side.name])
    finally:
        gc.enable()
    return [(side.name, [statistics.median(t[j] for t in times[side.name]) * 1e6
                         for j in range(6)]) for side in sides]


def commit():
    try:
        return subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", default="1024,32768")
    parser.add_argument("--page-sizes", default="1,16")
    parser.add_argument("--requests", type=int, default=0,
                        help="timed requests per cell (default: 200 at 1k tokens, 40 at 32k)")
    parser.add_argument("--resident", type=int, default=8,
                        help="prompts' worth of tokens the cache holds (an untimed warm-up fills it)")
    args = parser.parse_args()

    load = os.getloadavg()
    print(f"commit {commit()}, {platform.python_implementation()} {platform.python_version()}, "
          f"torch {torch.__version__ if torch else 'absent (NumPy slots)'}, "
          f"{os.cpu_count()} CPUs, load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; medians in us")
    print()
    print("| tokens | page | implementation | match | lock | evict | insert | unlock | request "
          "| x radixkv (list) |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for length in (int(v) for v in args.lengths.split(",")):
        for page_size in (int(v) for v in args.page_sizes.split(",")):
            requests = args.requests or (200 if length <= 4096 else 40)
            rows = measure(length, page_size, requests, args.resident)
            ours = rows[0][1][5]
            for name, (match, lock, evict, insert, unlock, request) in rows:
                print(f"| {length:,} | {page_size} | {name} | {match:,.1f} | {lock:,.1f} "
                      f"| {evict:,.1f} | {insert:,.1f} | {unlock:,.1f} | {request:,.1f} "
                      f"| {request / ours:.2f} |")


if __name__ == "__main__":
    main()
