#!/usr/bin/env bash
# The hints table of docs/policies.md ("Retention hints and session holds"): LRU with and without
# --hints online against the Belady bound, on the agentic-coding samples and on generated agent
# sessions, at three capacities each, in cache mode with 16-token pages.
#   scripts/hints-table.sh RADIXKV OUT_DIR "agentic caps" "generated caps" [gen flags...]
# prints the markdown rows; hit rates are exact (no timing), so they hold on any machine.
set -euo pipefail
radixkv=$1 out=$2 agentic_caps=$3 gen_caps=$4
shift 4
root="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out"
"$radixkv" gen --agents "$@" --out "$out/agents.jsonl" >/dev/null
run() {  # name trace capacities
  "$radixkv" replay --trace "$2" --sweep "$3" --policy lru,belady --json --no-progress \
    --jobs 2 --plot "$out/$1.svg" >"$out/$1.json"
  "$radixkv" replay --trace "$2" --sweep "$3" --policy lru --hints online --json --no-progress \
    --jobs 2 --plot "$out/$1-hints.svg" >"$out/$1-hints.json"
}
run agentic "$root/data/traces/agentic-coding" "$agentic_caps"
run agents "$out/agents.jsonl" "$gen_caps"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
for name, label in [("agentic", "agentic-coding samples (both files)"),
                    ("agents", "`radixkv gen --agents`")]:
    runs = json.load(open(f"{out}/{name}.json"))["runs"] + \
        json.load(open(f"{out}/{name}-hints.json"))["runs"]
    if not all(r["accounting_ok"] and r["pages_leaked"] == 0 for r in runs):
        sys.exit(f"hints-table: a {name} run failed its accounting check")
    rate = {(r["policy"], r["capacity_tokens"]): r["hit_rate"] for r in runs}
    for c in sorted({r["capacity_tokens"] for r in runs}):
        lru, hints, bound = rate[("lru", c)], rate[("lru+hints", c)], rate[("belady", c)]
        gap = bound - lru
        closed = (hints - lru) / gap if gap > 1e-12 else float("nan")
        print(f"| {label} | {c:,} | {100*lru:.2f}% ({lru/bound:.3f}) | "
              f"{100*hints:.2f}% ({hints/bound:.3f}) | {100*bound:.2f}% | "
              f"{100*(hints-lru):+.2f} | {closed:.2f} |")
PY
