#!/usr/bin/env python3
"""An independent check of radixkv's KV event encoder, with Python's msgpack (python3-msgpack).

Usage: kv_events_oracle.py BATCHES.json MAP.bin ARRAY.bin

BATCHES.json lists the batches as plain JSON. The two .bin files hold radixkv's encoding of each
batch in vLLM's map and array encodings (each a 4-byte big-endian length, then the payload). This
script builds what vLLM's msgspec structs encode to (vllm/distributed/kv_events.py: EventBatch,
BlockStored, BlockRemoved, AllBlocksCleared; tag=True, omit_defaults=True; array_like for the
older encoding), packs it with msgpack, and compares the bytes; it also unpacks radixkv's bytes and
compares the values. BlockRemoved's `reason` is radixkv's own field, after vLLM's: the oracle
also decodes each payload as a consumer that knows vLLM's fields only, by msgspec's rule for a
struct that gained fields (docs/source/schema-evolution.rst of msgspec: an array_like struct's
extra trailing elements and a map's unknown keys are skipped), and checks that it reads every
event as vLLM's, reason dropped. Exit status 0 when everything matches, 1 with the first
difference otherwise.
"""
import json
import struct
import sys

import msgpack

# vLLM's field order, after the tag: the fields without a default, then those defaulting to None.
STORED = ["block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
          "lora_name"]
STORED_DEFAULTED = ["extra_keys", "group_idx", "kv_cache_spec_kind", "kv_cache_spec_sliding_window"]
REMOVED = ["block_hashes", "medium"]
REMOVED_DEFAULTED = ["group_idx", "reason"]  # reason: radixkv's, after vLLM's fields
VLLM_DEFAULTED = {"BlockStored": STORED_DEFAULTED, "BlockRemoved": ["group_idx"],
                  "AllBlocksCleared": []}
FIELDS = {"BlockStored": (STORED, STORED_DEFAULTED), "BlockRemoved": (REMOVED, REMOVED_DEFAULTED),
          "AllBlocksCleared": ([], [])}


def field_value(name, value):
    """extra_keys come as hex of each block's msgpack tuple: the tuple itself, as vLLM holds it."""
    if name == "extra_keys" and value is not None:
        return [None if k is None else tuple(msgpack.unpackb(bytes.fromhex(k), raw=False))
                for k in value]
    return value


def vllm_value(batch, array_like):
    events = []
    for e in batch["events"]:
        required, defaulted = FIELDS[e["type"]]
        values = [(f, field_value(f, e[f])) for f in required]
        # omit_defaults: a map leaves out every None default; an array only its trailing ones.
        tail = [(f, field_value(f, e[f])) for f in defaulted]
        if array_like:
            while tail and tail[-1][1] is None:
                tail.pop()
        else:
            tail = [(f, v) for f, v in tail if v is not None]
        values += tail
        if array_like:
            events.append([e["type"]] + [v for _, v in values])
        else:
            events.append(dict([("type", e["type"])] + values))
    top = [("ts", float(batch["ts"])), ("events", events)]
    if batch["data_parallel_rank"] is not None:  # omit_defaults: None is left out
        top.append(("data_parallel_rank", batch["data_parallel_rank"]))
    return [v for _, v in top] if array_like else dict(top)


def as_tuples(value):
    """Lists as tuples, so that a value compares equal to what unpackb(use_list=False) reads."""
    if isinstance(value, (list, tuple)):
        return tuple(as_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: as_tuples(v) for k, v in value.items()}
    return value


def payloads(path):
    data = open(path, "rb").read()
    at = 0
    while at < len(data):
        (n,) = struct.unpack(">I", data[at:at + 4])
        yield data[at + 4:at + 4 + n]
        at += 4 + n


def vllm_decode(payload):
    """The events as a vLLM consumer decodes them: {field: value} with vLLM's fields only."""
    batch = msgpack.unpackb(payload, raw=False)
    events = batch["events"] if isinstance(batch, dict) else batch[1]
    out = []
    for e in events:
        if isinstance(e, dict):
            tag = e["type"]
            known = FIELDS[tag][0] + VLLM_DEFAULTED[tag]
            fields = {f: e.get(f) for f in known}  # unknown keys skipped, missing ones None
        else:
            tag = e[0]
            known = FIELDS[tag][0] + VLLM_DEFAULTED[tag]
            values = list(e[1:1 + len(known)])  # extra trailing elements skipped
            fields = dict(zip(known, values + [None] * (len(known) - len(values))))
        out.append((tag, fields))
    return out


def vllm_expected(batch):
    out = []
    for e in batch["events"]:
        known = FIELDS[e["type"]][0] + VLLM_DEFAULTED[e["type"]]
        out.append((e["type"], {f: field_value(f, e[f]) for f in known}))
    return out


def main():
    batches = json.load(open(sys.argv[1]))
    reasons = sum(1 for b in batches for e in b["events"]
                  if e["type"] == "BlockRemoved" and e["reason"] is not None)
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
            if msgpack.unpackb(payload, raw=False, use_list=False) != as_tuples(
                    vllm_value(batch, array_like)):
                print(f"{path}: batch {i} decodes to another value")
                return 1
            if as_tuples(vllm_decode(payload)) != as_tuples(vllm_expected(batch)):
                print(f"{path}: batch {i}: a decoder of vLLM's fields reads another value")
                return 1
    print(f"ok: {len(batches)} batches, both encodings, {reasons} reasons skipped by vLLM's fields")
    return 0


if __name__ == "__main__":
    sys.exit(main())
