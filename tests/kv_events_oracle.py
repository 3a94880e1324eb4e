#!/usr/bin/env python3
"""An independent check of radixkv's KV event encoder, with Python's msgpack (python3-msgpack).

Usage: kv_events_oracle.py BATCHES.json MAP.bin ARRAY.bin

BATCHES.json lists the batches as plain JSON. The two .bin files hold radixkv's encoding of each
batch in vLLM's map and array encodings (each a 4-byte big-endian length, then the payload). This
script builds what vLLM's msgspec structs encode to (vllm/distributed/kv_events.py: EventBatch,
BlockStored, BlockRemoved, AllBlocksCleared; tag=True, omit_defaults=True; array_like for the
older encoding), packs it with msgpack, and compares the bytes; it also unpacks radixkv's bytes and
compares the values. Exit status 0 when everything matches, 1 with the first difference otherwise.
"""
import json
import struct
import sys

import msgpack

# vLLM's field order, after the tag.
STORED = ["block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
          "lora_name"]
REMOVED = ["block_hashes", "medium"]


def vllm_value(batch, array_like):
    events = []
    for e in batch["events"]:
        fields = {"BlockStored": STORED, "BlockRemoved": REMOVED, "AllBlocksCleared": []}[e["type"]]
        if array_like:
            events.append([e["type"]] + [e[f] for f in fields])
        else:
            events.append(dict([("type", e["type"])] + [(f, e[f]) for f in fields]))
    top = [("ts", float(batch["ts"])), ("events", events)]
    if batch["data_parallel_rank"] is not None:  # omit_defaults: None is left out
        top.append(("data_parallel_rank", batch["data_parallel_rank"]))
    return [v for _, v in top] if array_like else dict(top)


def payloads(path):
    data = open(path, "rb").read()
    at = 0
    while at < len(data):
        (n,) = struct.unpack(">I", data[at:at + 4])
        yield data[at + 4:at + 4 + n]
        at += 4 + n


def main():
    batches = json.load(open(sys.argv[1]))
    for path, array_like in ((sys.argv[2], False), (sys.argv[3], True)):
        got = list(payloads(path))
        if len(got) != len(batches):
            print(f"{path}: {len(got)} payloads for {len(batches)} batches")
            return 1
        for i, (batch, payload) in enumerate(zip(batches, got)):
            expected = msgpack.packb(vllm_value(batch, array_like), use_bin_type=True)
            if payload != expected:
                print(f"{path}: batch {i} differs\n radixkv {payload.hex()}\n msgpack {expected.hex()}")
                return 1
            if msgpack.unpackb(payload, raw=False) != vllm_value(batch, array_like):
                print(f"{path}: batch {i} decodes to another value")
                return 1
    print(f"ok: {len(batches)} batches, both encodings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
