#!/usr/bin/env python3
"""Where LRU's misses come from, and what Belady's bound keeps that LRU drops (issue 19).

Reads a Mooncake-format trace (JSONL: "timestamp" in ms, "input_length", "output_length",
"hash_ids" of 512-token blocks, each hashed with every block before it) and replays it in cache
mode at page level, one page per block: a request hits its longest cached prefix of whole pages,
then its missing pages are cached, each first evicting one leaf page (a cached page that no cached
page extends) outside the request's own prefix. The evicted page is LRU's least recent (the
deepest first within a request), or Belady's farthest next use. These are the rules of
`radixkv replay --page-tokens 512 --policy lru,belady`, whose hit rates this script reproduces
(it prints its own beside the capacity, to compare).

Then it prints, at one capacity:
  1. the trace: pages, how often each is used, what an unbounded cache would hit;
  2. reuse gaps: every reuse by seconds since the page's previous use, and which of them LRU and
     Belady hit (LRU's horizon is where its hits stop);
  3. what predicts a reuse: P(reused again) and the median gap by the requesting answer length
     and the page's use number, and by depth;
  4. the victims: how many of LRU's and Belady's evictions are of pages never used again;
  5. what knowledge is worth: eviction orders that know part of the future, and LRU and Belady
     on the same requests in random order (no temporal locality left);
  6. what history could tell: orders that rank pages by how often page uses with the same
     features (answer length, use number, previous gap) were used again within 128 s, fitted to
     the trace itself, and one that knows each page's rate of use over its life.
Standard library only. Usage: scripts/reuse-gap.py TRACE [--capacity TOKENS] [--seed N]
"""
import argparse
import bisect
import collections
import heapq
import json
import math
import random
import sys

PAGE_TOKENS = 512
NEVER = float("inf")


def load(path):
    requests = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                requests.append((r["timestamp"] / 1000.0, r["input_length"], r["output_length"],
                                 r["hash_ids"][: r["input_length"] // PAGE_TOKENS]))
            except (ValueError, KeyError, TypeError) as e:
                sys.exit(f"{path}:{number}: not a Mooncake record ({e})")
    return requests


class Trace:
    """Requests in order, with each page use's next use (request index, or NEVER)."""

    def __init__(self, requests):
        self.time = [r[0] for r in requests]
        self.input_tokens = sum(r[1] for r in requests)
        self.output = [r[2] for r in requests]
        self.pages = [r[3] for r in requests]
        self.next = [[NEVER] * len(p) for p in self.pages]
        self.use_number = [[0] * len(p) for p in self.pages]
        following, count = {}, collections.Counter()
        for i in range(len(self.pages) - 1, -1, -1):
            for j, h in enumerate(self.pages[i]):
                self.next[i][j] = following.get(h, NEVER)
                following[h] = i
        self.previous_gap = [[NEVER] * len(p) for p in self.pages]
        self.first_use, last = {}, {}
        for i, p in enumerate(self.pages):
            for j, h in enumerate(p):
                count[h] += 1
                self.use_number[i][j] = count[h]
                if h in last:
                    self.previous_gap[i][j] = self.time[i] - last[h]
                last[h] = self.time[i]
                self.first_use.setdefault(h, self.time[i])
        self.total_uses = count

    def gap(self, i, j):
        n = self.next[i][j]
        return NEVER if n == NEVER else self.time[n] - self.time[i]


class Page:
    __slots__ = ("block", "parent", "children", "depth", "last", "request", "version")


def replay(trace, capacity_pages, key, on_evict=None, on_hit=None, rekey=False):
    """Cache-mode replay; `key(page, now)` orders eviction (smallest first). It is computed when a
    page becomes a leaf or is used, and kept until then; with `rekey`, every leaf is keyed again
    at each request that evicts (for orders that change with age). Returns the token hit rate."""
    cache, heap, hit_tokens, tiebreak, leaves = {}, [], 0, 0, set()

    def offer(page):
        nonlocal tiebreak
        page.version += 1
        tiebreak += 1
        heapq.heappush(heap, (key(page, trace.time[i]), tiebreak, page.version, page))

    for i, pages in enumerate(trace.pages):
        m = 0
        while m < len(pages) and pages[m] in cache:
            m += 1
        hit_tokens += m * PAGE_TOKENS
        locked = set(pages[:m])
        for j in range(m):
            page = cache[pages[j]]
            if on_hit:
                on_hit(page, i)
            page.last, page.request = trace.time[i], i
            if page.children == 0:
                offer(page)
            else:
                page.version += 1
        need, free, deferred = len(pages) - m, capacity_pages - len(cache), []
        if rekey and free < need:
            heap = []
            for page in leaves:
                offer(page)
        while free < need and heap:
            _, _, version, page = heapq.heappop(heap)
            if version != page.version or page.block not in cache or page.children > 0:
                continue  # stale, or re-offered when it becomes a leaf again
            if page.block in locked:
                deferred.append(page)
                continue
            if on_evict:
                on_evict(page, i)
            del cache[page.block]
            leaves.discard(page)
            free += 1
            parent = page.parent
            if parent is not None and parent.block in cache:
                parent.children -= 1
                if parent.children == 0:
                    leaves.add(parent)
                    (deferred.append(parent) if parent.block in locked else offer(parent))
        for page in deferred:
            if page.block in cache and page.children == 0:
                offer(page)
        parent = cache[pages[m - 1]] if m > 0 else None
        got = min(need, free)
        for j in range(m, m + got):
            page = Page()
            page.block, page.parent, page.children, page.depth = pages[j], parent, 0, j
            page.last, page.request, page.version = trace.time[i], i, 0
            if parent is not None:
                parent.children += 1
                parent.version += 1
                leaves.discard(parent)
            cache[page.block] = page
            leaves.add(page)
            parent = page
        if got > 0:
            offer(parent)  # the new leaf
    return hit_tokens / trace.input_tokens


def lru(trace):
    return lambda p, now: (p.last, -p.depth)


def belady(trace):
    return lambda p, now: (-trace.next[p.request][p.depth], -p.depth)


def answer_class(tokens):
    return "answer < 32" if tokens < 32 else ("answer 32-127" if tokens < 128 else "answer >= 128")


HORIZON = 128  # seconds, for the orders of section 6: about twice LRU's horizon at 3e6 tokens
AGE_EDGES = [0, 8, 16, 32, 64, 128, 256, 512]


def age_bucket(seconds):
    return bisect.bisect_right(AGE_EDGES, seconds) - 1


def fit_reuse_table(trace, feature):
    """P(used again within HORIZON s of reaching age a | features, not used again before a), per
    (features of the use, age bucket), counted over every page use of the trace."""
    at_risk, reused = collections.Counter(), collections.Counter()
    for i, pages in enumerate(trace.pages):
        for j in range(len(pages)):
            f, gap = feature(i, j), trace.gap(i, j)
            for b, age in enumerate(AGE_EDGES):
                if gap < age:
                    break
                at_risk[(f, b)] += 1
                reused[(f, b)] += gap < age + HORIZON
    return {k: reused[k] / at_risk[k] for k in at_risk}


def pct(x):
    return f"{100 * x:5.1f}%"


def median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--capacity", type=float, default=3e6, help="tokens [3e6]")
    parser.add_argument("--seed", type=int, default=1, help="for the random order [1]")
    args = parser.parse_args()
    trace = Trace(load(args.trace))
    capacity = int(args.capacity) // PAGE_TOKENS
    if capacity < 1:
        sys.exit(f"--capacity {args.capacity}: less than one {PAGE_TOKENS}-token page")

    # 1. The trace.
    uses = collections.Counter(h for p in trace.pages for h in p)
    total = sum(uses.values())
    print(f"trace: {len(trace.pages):,} requests over {trace.time[-1] - trace.time[0]:,.0f} s, "
          f"{total:,} page uses of {len(uses):,} distinct {PAGE_TOKENS}-token pages")
    print(f"  pages used once: {pct(sum(1 for c in uses.values() if c == 1) / len(uses))} of "
          f"distinct pages; an unbounded cache hits {pct((total - len(uses)) / total)} of page uses")
    print(f"capacity {capacity * PAGE_TOKENS:,} tokens = {capacity:,} pages "
          f"(the pages of {capacity / (total / len(trace.pages)):,.0f} average requests)\n")

    # 2. Reuse gaps, and which reuses each policy hits.
    hits = {}
    victim_ages = []
    for name, make in (("lru", lru), ("belady", belady)):
        hit = set()
        on_hit = lambda page, i, hit=hit: hit.add((i, page.depth))
        on_evict = None
        if name == "lru":
            on_evict = lambda page, i: victim_ages.append(trace.time[i] - page.last)
        rate = replay(trace, capacity, make(trace), on_evict, on_hit)
        hits[name] = hit
        print(f"  {name:7s} hit rate {pct(rate)}")
    print(f"  LRU evicts pages {median(victim_ages):.0f} s (median) after their last use\n")
    print("2. reuses by seconds since the page's previous use: how many, and how many each hits")
    print(f"  {'gap':>12s} {'reuses':>8s} {'lru':>8s} {'belady':>8s}")
    previous, buckets = {}, collections.defaultdict(lambda: [0, 0, 0])
    for i, pages in enumerate(trace.pages):
        for j, h in enumerate(pages):
            if h in previous:
                gap = trace.time[i] - previous[h]
                b = buckets[0 if gap < 1 else int(math.log2(gap)) + 1]
                b[0] += 1
                b[1] += (i, j) in hits["lru"]
                b[2] += (i, j) in hits["belady"]
            previous[h] = trace.time[i]
    for k in sorted(buckets):
        low, high = (0, 1) if k == 0 else (2 ** (k - 1), 2 ** k)
        print(f"  {f'{low}-{high} s':>12s} {buckets[k][0]:8,} {buckets[k][1]:8,} {buckets[k][2]:8,}")

    # 3. What predicts a reuse.
    print("\n3. P(the page is used again) and the median gap, by the request's answer length and "
          "the page's use number")
    table = collections.defaultdict(list)
    by_depth = collections.defaultdict(list)
    for i, pages in enumerate(trace.pages):
        for j in range(len(pages)):
            use = min(trace.use_number[i][j], 3)
            table[(answer_class(trace.output[i]), use)].append(trace.gap(i, j))
            by_depth[(answer_class(trace.output[i]), min(j // 32, 3))].append(trace.gap(i, j))
    for cls in ("answer < 32", "answer 32-127", "answer >= 128"):
        cells = []
        for use in (1, 2, 3):
            gaps = table[(cls, use)]
            reused = [g for g in gaps if g != NEVER]
            label = "use 3+" if use == 3 else f"use {use}"
            cells.append(f"{label}: {pct(len(reused) / max(1, len(gaps)))} "
                         f"gap {median(reused):4.0f} s ({len(gaps):,})")
        print(f"  {cls:14s} " + "   ".join(cells))
    print("  reuses per 1,000 page-seconds by age since the last use (0-32, 32-64, 64-128, 128-256, "
          "256-512 s): what keeping a page one second longer buys at that age")
    edges = [0, 32, 64, 128, 256, 512]
    for cls in ("answer < 32", "answer 32-127", "answer >= 128"):
        cells = []
        for use in (1, 2, 3):
            gaps = table[(cls, use)]
            rates = []
            for low, high in zip(edges, edges[1:]):
                hits = sum(1 for g in gaps if low <= g < high)
                exposure = sum(min(g, high) - low for g in gaps if g > low)
                rates.append(f"{1000 * hits / exposure:4.1f}" if exposure > 0 else "   -")
            cells.append(("use 3+" if use == 3 else f"use {use}") + ": " + " ".join(rates))
        print(f"  {cls:14s} " + "   ".join(cells))
    print("  by depth (pages 0-31, 32-63, 64-95, 96+): P(used again)")
    for cls in ("answer < 32", "answer 32-127", "answer >= 128"):
        cells = [pct(sum(g != NEVER for g in by_depth[(cls, d)]) / max(1, len(by_depth[(cls, d)])))
                 for d in range(4)]
        print(f"  {cls:14s} " + "  ".join(cells))

    # 4. The victims.
    print("\n4. evictions: pages evicted, and how many of them are never used again")
    for name, make in (("lru", lru), ("belady", belady)):
        count = collections.Counter()
        dead = collections.Counter()

        def on_evict(page, i, count=count, dead=dead):
            cls = answer_class(trace.output[page.request])
            count[cls] += 1
            dead[cls] += trace.next[page.request][page.depth] == NEVER

        replay(trace, capacity, make(trace), on_evict)
        cells = [f"{cls}: {count[cls]:,} ({pct(dead[cls] / max(1, count[cls]))} dead)"
                 for cls in ("answer < 32", "answer 32-127", "answer >= 128")]
        print(f"  {name:7s} {sum(count.values()):7,} evicted, "
              f"{pct(sum(dead.values()) / max(1, sum(count.values())))} dead;  " + "; ".join(cells))

    # 5. What knowledge is worth.
    print("\n5. eviction orders that know part of the future, then the same requests in random order")
    remaining = [[0] * len(p) for p in trace.pages]
    seen = collections.Counter()
    for i in range(len(trace.pages) - 1, -1, -1):
        for j, h in enumerate(trace.pages[i]):
            remaining[i][j] = seen[h]
            seen[h] += 1
    orders = [
        ("LRU, long answers (>= 128 tokens) first", lambda p, now: (
            trace.output[p.request] < 128, p.last, -p.depth)),
        ("LRU, pages never used again first (oracle)", lambda p, now: (
            trace.next[p.request][p.depth] != NEVER, p.last, -p.depth)),
        ("fewest remaining uses first (oracle)", lambda p, now: (
            remaining[p.request][p.depth], p.last, -p.depth)),
    ]
    for label, key in orders:
        print(f"  {label:44s} {pct(replay(trace, capacity, key))}")
    order = list(range(len(trace.pages)))
    random.Random(args.seed).shuffle(order)
    shuffled = Trace([(trace.time[i], 0, trace.output[i], trace.pages[i]) for i in order])
    shuffled.time = sorted(trace.time)
    shuffled.input_tokens = trace.input_tokens
    print(f"  {'random order: lru':44s} {pct(replay(shuffled, capacity, lru(shuffled)))}")
    print(f"  {'random order: belady':44s} {pct(replay(shuffled, capacity, belady(shuffled)))}")

    # 6. What history could tell.
    print(f"\n6. orders learned from history, fitted to this very trace (so optimistic): each ranks "
          f"pages by the\n  share of page uses with the same features that are used again within "
          f"the next {HORIZON} s, at the\n  page's age; history is the whole trace's, as if the cache "
          f"remembered every page it ever held")
    bucket = lambda seconds: NEVER if seconds == NEVER else int(math.log2(1 + seconds))
    features = [
        ("answer length", lambda i, j: answer_class(trace.output[i])),
        ("answer length, use number", lambda i, j: (
            answer_class(trace.output[i]), min(trace.use_number[i][j], 4))),
        ("answer length, use number, previous gap", lambda i, j: (
            answer_class(trace.output[i]), min(trace.use_number[i][j], 4),
            bucket(trace.previous_gap[i][j]))),
    ]
    for label, feature in features:
        table = fit_reuse_table(trace, feature)
        key = lambda p, now, feature=feature, table=table: (table.get(
            (feature(p.request, p.depth), age_bucket(now - p.last)), 0.0), p.last, -p.depth)
        print(f"  {label:44s} {pct(replay(trace, capacity, key, rekey=True))}")
    end = trace.time[-1]

    def lifetime_rate(p, now):
        block = trace.pages[p.request][p.depth]
        rate = (trace.total_uses[block] - 1) / max(1.0, end - trace.first_use[block])
        return (rate, p.last, -p.depth)

    label = "uses per second over its life (oracle)"
    print(f"  {label:44s} {pct(replay(trace, capacity, lifetime_rate))}")


if __name__ == "__main__":
    main()
