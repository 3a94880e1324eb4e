#!/usr/bin/env python3
"""Turns radixkv_bench's JSON (bench/run.sh) into the ratio tables of bench/README.md.

Every figure is the median over repetitions. Match, lock and evict use CPU time per iteration;
insert and admit+finish are timed by hand around the operation (wall time). A ratio "x faster"
is baseline time / radix time for the same queries (same hit tokens per iteration).
"""
import json
import platform
import re
import sys
from collections import defaultdict


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load(path):
    with open(path) as f:
        data = json.load(f)
    medians = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b["run_name"].removesuffix("/manual_time").removesuffix("/iterations:1")
        medians[name] = b
    return data["context"], medians


def fields(name):
    parts = name.split("/")
    out = {"op": parts[0], "impl": parts[1] if len(parts) > 1 else ""}
    for p in parts[2:]:
        if ":" in p:
            k, v = p.split(":", 1)
            out[k] = int(v)
        else:
            out["case"] = p
    return out


def ns(b):
    unit = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
    time = b["real_time"] if "manual_time" in b["run_name"] else b["cpu_time"]
    return time * unit


def fmt_ratio(x):
    return "-" if x is None else f"{x:.2f}x"


def main(path):
    context, runs = load(path)
    by = defaultdict(dict)
    for name, b in runs.items():
        f = fields(name)
        key = (f["op"],) + tuple((k, f[k]) for k in sorted(f) if k not in ("op", "impl"))
        by[key][f["impl"]] = b

    print("## Machine and command\n")
    print(f"- CPU: {cpu_model()}, {context.get('num_cpus')} logical CPUs "
          f"(nproc), {context.get('mhz_per_cpu')} MHz; load average at start "
          f"{context.get('load_avg')}")
    print(f"- {platform.platform()}; run {context.get('date')}; Google Benchmark "
          f"library_build_type={context.get('library_build_type')}")
    reps = max((b.get("repetitions", 1) for b in runs.values()), default=1)
    print(f"- command: `bench/run.sh` (Release build; {reps} repetitions, medians shown)\n")

    # Match.
    print("## Match (`BM_Match/`): radix = `RadixTree::peek` with page ids\n")
    print("Time ratios on the same queries: blockhash/radix and linear/radix are how many times "
          "faster radix is; radix/memcmp is how far radix is from the floor. radix_match = "
          "`match()` (lookup + LRU touch), boundary hits only. Targets: radix >= 1.5x blockhash "
          "for hits >= 256; radix/memcmp <= 3 for hits >= 4096.\n")
    print("| tree tokens | hit | kind | radix Gtok/s | vs blockhash | vs linear | radix/memcmp "
          "| radix_match vs blockhash | allocs/match (radix, match) | targets |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---|")
    misses = []
    match_keys = sorted(
        (k for k in by if k[0] == "BM_Match"),
        key=lambda k: (dict(k[1:])["tree"], dict(k[1:])["hit"], dict(k[1:])["case"]))
    for key in match_keys:
        d = dict(key[1:])
        impls = by[key]
        if "radix" not in impls:
            continue
        r = ns(impls["radix"])
        ratio = lambda impl: ns(impls[impl]) / r if impl in impls else None
        vs_block, vs_linear = ratio("blockhash"), ratio("linear")
        floor = r / ns(impls["memcmp"]) if "memcmp" in impls else None
        rm = impls.get("radix_match")
        rm_vs_block = ns(impls["blockhash"]) / ns(rm) if rm and "blockhash" in impls else None
        allocs = [impls[i]["allocs_per_match"] for i in ("radix", "radix_match") if i in impls]
        verdict = []
        if d["hit"] >= 256 and vs_block is not None:
            ok = vs_block >= 1.5
            verdict.append("blockhash " + ("ok" if ok else "MISS"))
            if not ok:
                misses.append(f"match vs blockhash {d['case']} tree {d['tree']} hit {d['hit']}: "
                              f"{vs_block:.2f}x")
        if d["hit"] >= 4096 and floor is not None:
            ok = floor <= 3
            verdict.append("memcmp " + ("ok" if ok else "MISS"))
            if not ok:
                misses.append(f"match vs memcmp {d['case']} tree {d['tree']} hit {d['hit']}: "
                              f"{floor:.2f}x the floor")
        gtoks = d["hit"] / r
        print(f"| {d['tree']} | {d['hit']} | {d['case']} | {gtoks:.2f} | {fmt_ratio(vs_block)} "
              f"| {fmt_ratio(vs_linear)} | {fmt_ratio(floor)} | {fmt_ratio(rm_vs_block)} "
              f"| {' / '.join(f'{a:g}' for a in allocs)} | {', '.join(verdict)} |")

    # Insert.
    print("\n## Insert (`BM_Insert/`), ns per insert (wall, timed around the insert)\n")
    print("| case | tree | hit | new tokens | radix ns | blockhash ns | linear ns "
          "| blockhash/radix |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for key in sorted(k for k in by if k[0] == "BM_Insert"):
        d, impls = dict(key[1:]), by[key]
        t = {i: ns(b) for i, b in impls.items()}
        print(f"| {d['case']} | {d['tree']} | {d['hit']} | {impls['radix']['new_tokens']:g} "
              f"| {t.get('radix', 0):.0f} | {t.get('blockhash', 0):.0f} | {t.get('linear', 0):.0f} "
              f"| {fmt_ratio(t['blockhash'] / t['radix'])} |")

    # Evict.
    print("\n## Evict (`BM_Evict/`), ns per evicted page\n")
    print("Target: cost per page changes by less than 2x from 10^3 to 10^6 evictable leaves. "
          "\"vs 10^3\" is the cost per page relative to 10^3 leaves, same implementation.\n")
    print("| pages per leaf | leaves | radix ns/page | radix vs 10^3 | radix nodes/page "
          "| blockhash ns/page | blockhash vs 10^3 | blockhash/radix |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    evict = sorted((k for k in by if k[0] == "BM_Evict"),
                   key=lambda k: (dict(k[1:])["pages_per_leaf"], dict(k[1:])["leaves"]))
    base = {}
    for key in evict:
        d, impls = dict(key[1:]), by[key]
        per_page = {i: 1e9 / b["items_per_second"] for i, b in impls.items()}
        change = {}
        for impl, value in per_page.items():
            base.setdefault((impl, d["pages_per_leaf"]), value)
            change[impl] = value / base[(impl, d["pages_per_leaf"])]
        r = change.get("radix")
        if d["leaves"] == 1_000_000 and r is not None and not (0.5 < r < 2):
            misses.append(f"evict radix {d['pages_per_leaf']} pages/leaf: {r:.2f}x from 10^3 "
                          f"to 10^6 leaves (blockhash: {change.get('blockhash', 0):.2f}x)")
        blk = per_page.get("blockhash")
        print(f"| {d['pages_per_leaf']} | {d['leaves']} | {per_page['radix']:.1f} "
              f"| {r:.2f}x | {impls['radix']['nodes_per_page']:g} "
              f"| {'-' if blk is None else f'{blk:.1f}'} "
              f"| {fmt_ratio(change.get('blockhash'))} "
              f"| {fmt_ratio(None if blk is None else blk / per_page['radix'])} |")

    # Lock and runtime.
    print("\n## Lock + unlock (`BM_LockUnlock/`) and admit + finish (`BM_AdmitFinish/`)\n")
    print("| benchmark | hit | radix ns | blockhash ns | blockhash/radix |")
    print("|---|---:|---:|---:|---:|")
    for key in sorted(k for k in by if k[0] in ("BM_LockUnlock", "BM_AdmitFinish")):
        d, impls = dict(key[1:]), by[key]
        r = ns(impls.get("radix") or impls["runtime"])
        blk = ns(impls["blockhash"]) if "blockhash" in impls else None
        name = f"{key[0]} (metrics {d['metrics']})" if "metrics" in d else key[0]
        print(f"| {name} | {d['hit']} | {r:.0f} | {'-' if blk is None else f'{blk:.0f}'} "
              f"| {fmt_ratio(None if blk is None else blk / r)} |")

    # Metadata.
    print("\n## Metadata bytes per cached token (page tokens 16, measured)\n")
    print("Target: radix <= 8 bytes per cached token.\n")
    print("| tree | cached tokens | nodes | radix | blockhash | linear |")
    print("|---:|---:|---:|---:|---:|---:|")
    for key in sorted(k for k in by if k[0] == "BM_Metadata"):
        d, impls = dict(key[1:]), by[key]
        bpt = {i: b["bytes_per_token"] for i, b in impls.items()}
        if bpt.get("radix", 0) > 8:
            misses.append(f"metadata tree {d['tree']}: {bpt['radix']:.2f} bytes/token")
        print(f"| {d['tree']} | {impls['radix']['cached_tokens']:.0f} | {impls['radix']['nodes']:.0f} "
              f"| {bpt.get('radix', 0):.2f} | {bpt.get('blockhash', 0):.2f} "
              f"| {bpt.get('linear', 0):.2f} |")

    print("\n## Targets missed\n")
    print("\n".join(f"- {m}" for m in misses) if misses else "None.")


if __name__ == "__main__":
    main(sys.argv[1])
