#!/usr/bin/env python3
"""A KV event subscriber written for the tests, the way a vLLM consumer would write one: it
connects late, fetches what it missed through the replay socket, and rebuilds the publisher's set
of cached blocks. Needs python3-zmq and python3-msgpack.

Usage: kv_events_subscriber.py --pub EP --replay EP --batches N --out FILE [--topic T]
                               [--timeout SECONDS]

Protocol (vLLM's ZmqEventPublisher): PUB messages (topic, seq 8 bytes big-endian, payload); a
DEALER sends ("", start_seq 8 bytes big-endian) to the ROUTER replay socket and receives
("", seq, payload) per buffered batch with seq >= start_seq, then ("", -1 signed, ""). It applies
batches 0 .. N-1 in seq order, exactly once, and writes the final [medium, block hash] pairs,
sorted, as JSON. It exits 2 when replay skips a batch (the publisher no longer has it), 3 on
a timeout.
"""
import argparse
import json
import sys
import time

import msgpack
import zmq

STORED = ["block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
          "lora_name"]
REMOVED = ["block_hashes", "medium"]
END = -1


def as_fields(event):
    """An event as (type, {field: value}) from either encoding."""
    if isinstance(event, dict):
        return event["type"], event
    tag, values = event[0], event[1:]
    names = {"BlockStored": STORED, "BlockRemoved": REMOVED, "AllBlocksCleared": []}[tag]
    return tag, dict(zip(names, values))


def apply(held, payload):
    batch = msgpack.unpackb(payload, raw=False)
    events = batch["events"] if isinstance(batch, dict) else batch[1]
    for event in events:
        kind, f = as_fields(event)
        if kind == "BlockStored":
            assert len(f["token_ids"]) == len(f["block_hashes"]) * f["block_size"]
            held.update((f.get("medium") or "", h) for h in f["block_hashes"])
        elif kind == "BlockRemoved":
            held.difference_update((f.get("medium") or "", h) for h in f["block_hashes"])
        else:
            held.clear()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pub", required=True)
    parser.add_argument("--replay", required=True)
    parser.add_argument("--topic", default="")
    parser.add_argument("--batches", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()

    context = zmq.Context()
    sub = context.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, args.topic.encode())
    sub.connect(args.pub)
    replay = context.socket(zmq.DEALER)
    replay.setsockopt(zmq.RCVHWM, 0)
    replay.connect(args.replay)
    poller = zmq.Poller()
    poller.register(sub, zmq.POLLIN)
    poller.register(replay, zmq.POLLIN)

    def ask(start):
        replay.send_multipart([b"", start.to_bytes(8, "big")])
        return True

    held, waiting = set(), {}
    next_seq, replaying, from_pub, from_replay = 0, ask(0), 0, 0
    deadline, last_message = time.monotonic() + args.timeout, time.monotonic()
    print("subscribed", flush=True)
    while next_seq < args.batches:
        if time.monotonic() > deadline:
            print(f"timeout at seq {next_seq}", flush=True)
            return 3
        for socket, _ in poller.poll(100):
            last_message = time.monotonic()
            if socket is sub:
                _topic, seq_bytes, payload = sub.recv_multipart()
                seq = int.from_bytes(seq_bytes, "big")
                from_pub += 1
                if seq >= next_seq:
                    waiting[seq] = payload
                    if not replaying and seq > next_seq:
                        replaying = ask(next_seq)
            else:
                _empty, seq_bytes, payload = replay.recv_multipart()
                seq = int.from_bytes(seq_bytes, "big", signed=True)
                if seq == END:
                    replaying = False
                    continue
                from_replay += 1
                expected = next_seq
                while expected in waiting:
                    expected += 1
                if seq > expected:  # replay skips a batch: the publisher no longer has it
                    print(f"gap: batches {expected} to {seq - 1} are gone", flush=True)
                    return 2
                if seq >= next_seq:
                    waiting[seq] = payload
        while next_seq in waiting:
            apply(held, waiting.pop(next_seq))
            next_seq += 1
        if not replaying and waiting and min(waiting) > next_seq:
            # Published after the replay's snapshot, and missed on PUB: ask again.
            replaying = ask(next_seq)
        if not replaying and next_seq < args.batches and time.monotonic() - last_message > 0.5:
            replaying = ask(next_seq)  # the tail may have been lost on PUB
    with open(args.out, "w") as out:
        json.dump(sorted([m, h] for m, h in held), out)
    print(f"done: {next_seq} batches, {from_pub} from PUB, {from_replay} from replay", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
