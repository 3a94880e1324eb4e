#!/usr/bin/env python3
"""Writes a two-tenant trace in radixkv's native format (docs/trace_format.md) on stdout: a quiet
tenant whose chats reuse their history, and a noisy one flooding unique prompts, interleaved in
time. docs/policies.md (Quotas) replays it with and without a quota for the quiet tenant.

Usage: two_tenants.py [--seed N] [--quiet-convs N] [--turns N] [--noisy-per-turn N]

  quiet (ns 1): --quiet-convs conversations, each opening with one of 4 shared system prompts
      (1,500 tokens) and a question, then --turns turns that continue it (parent = the turn
      before, a 150-token message, 200-token answers). Conversations take turns round robin.
  noisy (ns 2): --noisy-per-turn prompts of 1,000 to 3,000 tokens of content no request shares
      arrive between two quiet turns.
"""
import argparse
import json
import random
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quiet-convs", type=int, default=24)
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--noisy-per-turn", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    out = sys.stdout
    out.write(json.dumps({"radixkv_trace": 1, "generator": "scripts/two_tenants.py",
                          "seed": args.seed}) + "\n")
    next_id, t, content = 0, 0.0, 1000  # content ids from 1000 are each used once
    last_turn = {}  # quiet conversation -> id of its latest request

    def emit(record):
        nonlocal next_id
        record = {"id": next_id, "t": round(t, 3), **record}
        out.write(json.dumps(record, separators=(",", ":")) + "\n")
        next_id += 1
        return record["id"]

    for turn in range(args.turns):
        for conv in range(args.quiet_convs):
            t += 0.05
            if turn == 0:
                system = 1 + conv % 4  # four system prompts shared by the conversations
                last_turn[conv] = emit({"ns": 1, "segs": [[system, 1500], [content, 150]],
                                        "out": 200, "kind": "chat", "conv": conv})
            else:
                last_turn[conv] = emit({"ns": 1, "parent": last_turn[conv],
                                        "segs": [[content, 150]], "out": 200, "kind": "chat",
                                        "conv": conv})
            content += 1
            for _ in range(args.noisy_per_turn):
                t += 0.01
                emit({"ns": 2, "segs": [[content, rng.randint(1000, 3000)]], "out": 100,
                      "kind": "chat", "conv": 100000 + content})
                content += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
