#!/usr/bin/env bash
# Regenerates the policy table in docs/policies.md: every eviction policy and the belady bound,
# on four workloads (the Mooncake sample, two generated multi-turn traces of different shapes,
# the agentic-coding sample), at three capacities each, in cache mode with 16-token pages.
# Hit rates are deterministic (no timing), so the table is the same on any machine.
#   RADIXKV_TABLE_BUILD  build folder (default: build-policy-table; configured Release, no CUDA)
#   RADIXKV_TRACES       the sample traces (default: data/traces in the repository)
#   RADIXKV_TABLE_OUT    where traces, JSON results and plots go (default: a temporary folder)
# Usage: scripts/policy-table.sh            rewrites the table between the markers in the doc
#        scripts/policy-table.sh --print    prints it instead
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${RADIXKV_TABLE_BUILD:-$root/build-policy-table}
traces=${RADIXKV_TRACES:-$root/data/traces}
out=${RADIXKV_TABLE_OUT:-$(mktemp -d)}
policies="lru,lfu,fifo,priority,priority:retention=60,slru,sieve,gdsf,gdsf:depth_pages=inf,reuse,belady"

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DRADIXKV_CUDA=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target radixkv >/dev/null
radixkv=$build/tools/radixkv
mkdir -p "$out"

# Chat: many short multi-turn chats over a Zipf-popular pool of system prompts, three priorities.
"$radixkv" gen --seed 7 --conversations 1500 --agent-fraction 0 --turns uniform:2:12 \
  --system-prompts 32 --zipf 1.1 --priorities 10,35,80 --out "$out/chat.jsonl"
# Agent: few long agent loops with large tool results, four tenants, few system prompts.
"$radixkv" gen --seed 8 --conversations 300 --agent-fraction 0.8 --agent-steps uniform:8:40 \
  --tool-tokens lognormal:1500:1 --system-prompts 4 --namespaces 4 --out "$out/agent.jsonl"

# name | trace | capacities in tokens (footprints: 21.3M, 4.47M, 9.68M, 20k tokens)
workloads=(
  "mooncake|$traces/mooncake/synthetic_trace.jsonl|5e5,2e6,5e6"
  "chat|$out/chat.jsonl|1e5,2.5e5,5e5"
  "agent|$out/agent.jsonl|1.5e5,3e5,6e5"
  "agentic|$traces/agentic-coding/trace_0026.json|4096,10240,16384"
)
for w in "${workloads[@]}"; do
  IFS='|' read -r name trace capacities <<<"$w"
  echo "policy-table: $name" >&2
  "$radixkv" replay --trace "$trace" --sweep "$capacities" --policy "$policies" --json \
    --no-progress --plot "$out/$name.svg" >"$out/$name.json"
done

python3 - "$out" "$root/docs/policies.md" "${1:-}" <<'PY'
import json, sys
out, doc, mode = sys.argv[1], sys.argv[2], sys.argv[3]
names = {"mooncake": "Mooncake sample (3,993 requests)", "chat": "generated chat",
         "agent": "generated agent loops", "agentic": "agentic-coding sample (3 requests)"}
lines, best_lines, cost_lines = [], [], []
for name in ["mooncake", "chat", "agent", "agentic"]:
    runs = json.load(open(f"{out}/{name}.json"))["runs"]
    if not all(r["accounting_ok"] and r["pages_leaked"] == 0 for r in runs):
        sys.exit(f"policy-table: a {name} run failed its accounting check")
    caps = sorted({r["capacity_tokens"] for r in runs})
    rate = {(r["policy"], r["capacity_tokens"]): r["hit_rate"] for r in runs}
    policies = list(dict.fromkeys(r["policy"] for r in runs))
    bound = {c: rate[("belady", c)] for c in caps}
    for p in policies:
        for c in caps:
            if rate[(p, c)] > bound[c] + 1e-12:
                sys.exit(f"policy-table: {p} beats belady on {name} at {c} tokens")
    lines.append(f"**{names[name]}**, input {runs[0]['input_tokens']:,} tokens\n")
    lines.append("| policy | " + " | ".join(f"{c:,} tokens" for c in caps) + " |")
    lines.append("|---|" + "---:|" * len(caps))
    for p in policies:
        cells = []
        for c in caps:
            best = max(rate[(q, c)] for q in policies if q != "belady")
            text = f"{100 * rate[(p, c)]:.2f}%"
            if p != "belady":
                text += f" ({rate[(p, c)] / bound[c]:.3f})" if bound[c] > 0 else " (-)"
                if rate[(p, c)] == best:
                    text = f"**{text}**"
            cells.append(text)
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    lines.append("")
    per_cap = []
    for c in caps:
        best = max(rate[(q, c)] for q in policies if q != "belady")
        winners = [q for q in policies if q != "belady" and rate[(q, c)] == best]
        ratio = best / bound[c] if bound[c] > 0 else float("nan")
        who = "every policy" if len(winners) == len(policies) - 1 else ", ".join(winners)
        per_cap.append(f"{c:,}: {who} {100 * best:.2f}% = {ratio:.3f} of the bound")
    best_lines.append(f"- {names[name]}: " + "; ".join(per_cap))
    # The cost: time inside cache calls per request, relative to lru in the same process (all
    # cells of a sweep run one after another in one process), at the middle capacity.
    mid = caps[len(caps) // 2]
    secs = {r["policy"]: r["cache_seconds"] for r in runs if r["capacity_tokens"] == mid}
    if secs.get("lru", 0) > 0:
        cost_lines.append(f"- {names[name]} at {mid:,} tokens: " + ", ".join(
            f"{p} {1e6 * secs[p] / runs[0]['requests']:.1f} us ({secs[p] / secs['lru']:.2f}x)"
            for p in policies if p != "belady"))
table = "\n".join(lines + ["Best online policy per capacity:", ""] + best_lines +
                  ["", "Time inside cache calls per request, and its ratio to lru (one process, "
                   "one run: noisy; the hit rates above are exact):", ""] + cost_lines) + "\n"
if mode == "--print":
    print(table, end="")
    sys.exit(0)
begin, end = "<!-- policy-table:begin -->\n", "<!-- policy-table:end -->"
text = open(doc).read()
i, j = text.index(begin) + len(begin), text.index(end)
open(doc, "w").write(text[:i] + table + text[j:])
print(f"policy-table: rewrote the table in {doc}", file=sys.stderr)
PY
