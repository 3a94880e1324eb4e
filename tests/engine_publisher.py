#!/usr/bin/env python3
"""A serving engine's KV event publisher, written for the router's tests in the shapes real engines
publish, with an encoder of its own (Debian's python3-msgpack and python3-zmq, nothing of radixkv's).

Usage: engine_publisher.py --shape SHAPE [--hash bytes|int] [--block-size N] [--chunk N]
                           [--unfull] [--rank R] [--pub-port P --replay-port P] [--seed S]
                           [--capacity BLOCKS] [--cpu]

It binds a PUB and a ROUTER (replay) socket on 127.0.0.1 (the given ports, offset by --rank as vLLM
offsets them, or free ones), prints "endpoints PUB REPLAY", then follows commands on stdin, one per
line, answering each with one line:
  cache JSON   caches a prompt: {"tokens": [...], "lora_name": str|null, "cache_salt": str|null,
               "medium": "GPU"|"CPU"} (its whole blocks; those already cached are touched), in one
               batch; evicts least recently used blocks past --capacity -> "ok SEQ"
  steps N      N steps of a generated workload (chats and agent sessions over shared system
               prompts; with --cpu, evicted blocks go to CPU memory first), one batch each -> "ok SEQ"
  clear        AllBlocksCleared -> "ok SEQ"
  query JSON   {"tokens", "lora_name", "cache_salt"}: the leading tokens this engine holds, and the
               same with each block weighted by its best medium (GPU 1, CPU 0.8) -> "overlap N W"
  sample       a cached prompt, as JSON for query (or "none")
  forged SEQ   one PUB message with sequence number SEQ (an empty batch) that is not in the replay
               buffer, as a broken or hostile publisher sends -> "ok SEQ"
  quit         exits
SEQ is the next sequence number: the batches published so far.

Shapes (the structs of each engine's publisher, field for field; see docs/cluster.md):
  vllm        vllm/distributed/kv_events.py today: the batch {"ts", "events", "data_parallel_rank"}
              and each event a map, "type" first, then its fields in order; fields defaulting to
              None (extra_keys, group_idx, ...) left out when None (msgspec's omit_defaults).
              Block hashes: SHA-256 of (parent, tokens, extra keys), 32 bytes, or with --hash int
              the low 64 bits of their big-endian value (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES).
              extra_keys per block as vLLM builds them: (lora_name, cache_salt) for the first
              block, (lora_name,) for the others.
  vllm-array  vLLM's older array_like=True structs: [ts, events, rank], each event [tag, fields..]
              without the later fields.
  sglang      SGLang's (python/sglang/srt/disaggregation/kv_events.py): [ts, events], events
              array_like and tagged, BlockStored [tag, [hash], parent, tokens, block_size,
              lora_id] one block per event, BlockRemoved [tag, hashes]; hashes signed 64-bit.
  lmcache     vLLM with LMCache: vLLM's GPU blocks, and LMCache's chunks of --chunk tokens on
              "cpu" (lowercase, as LMCache writes it), one chunk per BlockStored, integer hashes;
              with --unfull, also a prompt's last, partial chunk (block_size its token count), as
              LMCache saves it when save_unfull_chunk is on.
"""
import argparse
import hashlib
import json
import random
import struct
import sys
import threading
import time
from collections import OrderedDict

import msgpack
import zmq

SEED_HASH = hashlib.sha256(b"engine-publisher-none-hash").digest()
WEIGHTS = {"GPU": 1.0, "CPU": 0.8}
MASK64 = (1 << 64) - 1


class Block:
    __slots__ = ("digest", "parent", "tokens", "extra", "lora", "mediums")

    def __init__(self, digest, parent, tokens, extra, lora):
        self.digest, self.parent, self.tokens, self.extra, self.lora = (digest, parent, tokens,
                                                                        extra, lora)
        self.mediums = set()


def extra_keys(lora_name, cache_salt, first):
    """vLLM's extra keys of a text prompt's block: a tuple, or None."""
    keys = ([lora_name] if lora_name else []) + ([cache_salt] if first and cache_salt else [])
    return tuple(keys) if keys else None


def chain(parent_digest, tokens, extra):
    h = hashlib.sha256(parent_digest or SEED_HASH)
    h.update(struct.pack(f"<{len(tokens)}q", *tokens))
    h.update(repr(extra).encode())
    return h.digest()


class Engine:
    def __init__(self, args):
        self.shape = args.shape
        self.int_hashes = args.hash == "int" or args.shape in ("sglang", "lmcache")
        self.block_size = args.block_size
        self.chunk = args.chunk
        self.capacity = args.capacity
        self.cpu = args.cpu
        self.unfull = args.unfull
        self.rank = args.rank
        self.rng = random.Random(args.seed)
        self.blocks = OrderedDict()  # digest -> Block (GPU-sized blocks), least recent first
        self.chunks = OrderedDict()  # digest -> Block (LMCache's chunks, on "cpu")
        self.events = []
        self.sessions = []
        self.system_prompts = [[self.rng.randrange(30000) for _ in range(self.rng.choice((48, 96, 160)))]
                               for _ in range(6)]

    # ---- hashes as each engine sends them ----
    def wire_hash(self, digest):
        if digest is None:
            return None
        if self.shape == "sglang":
            return int.from_bytes(digest[:8], "big", signed=True)
        if self.int_hashes:
            return int.from_bytes(digest, "big") & MASK64
        return digest

    # ---- the cache ----
    def cache(self, tokens, lora_name=None, cache_salt=None, medium="GPU"):
        stored = []  # (digest, parent digest, tokens, extra) newly on `medium`
        parent = None
        for b in range(len(tokens) // self.block_size):
            part = tokens[b * self.block_size:(b + 1) * self.block_size]
            extra = extra_keys(lora_name, cache_salt, b == 0)
            digest = chain(parent, part, extra)
            block = self.blocks.get(digest)
            if block is None:
                block = self.blocks[digest] = Block(digest, parent, part, extra, lora_name)
            self.blocks.move_to_end(digest)
            if medium not in block.mediums:
                block.mediums.add(medium)
                stored.append(block)
            parent = digest
        self.emit_stored(stored, medium)
        if self.shape == "lmcache":
            self.cache_chunks(tokens, lora_name, cache_salt)
        self.evict()

    def emit_stored(self, stored, medium):
        # Consecutive blocks of one path go in one event (SGLang: one block per event).
        run = []
        for block in stored:
            if run and (block.parent != run[-1].digest or self.shape == "sglang"):
                self.events.append(self.stored_event(run, medium))
                run = []
            run.append(block)
        if run:
            self.events.append(self.stored_event(run, medium))

    def cache_chunks(self, tokens, lora_name, cache_salt):
        parent = None
        for start in range(0, len(tokens), self.chunk):
            part = tokens[start:start + self.chunk]
            if len(part) < self.chunk and not self.unfull:
                break
            extra = extra_keys(lora_name, cache_salt, start == 0)
            digest = chain(parent, part, extra)
            if digest not in self.chunks:
                chunk = self.chunks[digest] = Block(digest, parent, part, extra, lora_name)
                chunk.mediums.add("cpu")
                self.events.append(self.stored_event([chunk], "cpu", block_size=len(part)))
            self.chunks.move_to_end(digest)
            parent = digest
        while len(self.chunks) > self.capacity:
            digest, _ = self.chunks.popitem(last=False)
            self.events.append(self.removed_event([digest], "cpu"))

    def children(self, digest):
        return any(b.parent == digest for b in self.blocks.values())

    def evict(self):
        while len(self.blocks) > self.capacity:
            # The least recently used leaf (a block no cached block continues).
            victim = next(b for b in self.blocks.values() if not self.children(b.digest))
            if self.cpu and "GPU" in victim.mediums and "CPU" not in victim.mediums:
                victim.mediums.add("CPU")
                self.events.append(self.stored_event([victim], "CPU"))
            for medium in sorted(victim.mediums):
                self.events.append(self.removed_event([victim.digest], medium))
            del self.blocks[victim.digest]

    # ---- events, as each shape writes them ----
    def stored_event(self, run, medium, block_size=None):
        hashes = [self.wire_hash(b.digest) for b in run]
        parent = self.wire_hash(run[0].parent)
        tokens = [t for b in run for t in b.tokens]
        size = block_size or self.block_size
        if self.shape == "sglang":
            return ["BlockStored", hashes, parent, tokens, size, None]
        fields = OrderedDict([("block_hashes", hashes), ("parent_block_hash", parent),
                              ("token_ids", tokens), ("block_size", size), ("lora_id", None),
                              ("medium", medium), ("lora_name", run[0].lora)])
        if self.shape == "vllm-array":
            return ["BlockStored"] + list(fields.values())
        extras = [b.extra for b in run]
        if any(e is not None for e in extras):
            fields["extra_keys"] = extras
        return OrderedDict([("type", "BlockStored")] + list(fields.items()))

    def removed_event(self, digests, medium):
        hashes = [self.wire_hash(d) for d in digests]
        if self.shape == "sglang":
            return ["BlockRemoved", hashes]
        if self.shape == "vllm-array":
            return ["BlockRemoved", hashes, medium]
        return OrderedDict([("type", "BlockRemoved"), ("block_hashes", hashes), ("medium", medium)])

    def batch(self):
        events, self.events = self.events, []
        ts = time.time()
        if self.shape == "sglang":
            return msgpack.packb([ts, events], use_bin_type=True)
        if self.shape == "vllm-array":
            return msgpack.packb([ts, events, self.rank], use_bin_type=True)
        return msgpack.packb(OrderedDict([("ts", ts), ("events", events),
                                          ("data_parallel_rank", self.rank)]), use_bin_type=True)

    # ---- the reference answer ----
    def overlap(self, tokens, lora_name, cache_salt):
        best = [None] * len(tokens)  # per token, the best weight any block size gives it
        for size, table in ((self.block_size, self.blocks), (self.chunk, self.chunks)):
            if table is self.chunks and self.shape != "lmcache":
                continue
            parent = None
            for b in range(len(tokens) // size):
                part = tokens[b * size:(b + 1) * size]
                digest = chain(parent, part, extra_keys(lora_name, cache_salt, b == 0))
                block = table.get(digest)
                if block is None or not block.mediums:
                    break
                w = max(WEIGHTS[m.upper()] for m in block.mediums)
                for t in range(b * size, (b + 1) * size):
                    best[t] = w if best[t] is None else max(best[t], w)
                parent = digest
        n = 0
        weighted = 0.0
        while n < len(tokens) and best[n] is not None:
            weighted += best[n]
            n += 1
        return n, weighted

    def sample(self):
        if not self.sessions:
            return None
        return self.rng.choice(self.sessions)

    # ---- a generated workload: chats and agent sessions over shared system prompts ----
    def step(self):
        if not self.sessions or self.rng.random() < 0.3:
            system = self.rng.choice(self.system_prompts)
            lora = self.rng.choice([None, None, "sql"]) if self.shape in ("vllm", "lmcache") else None
            session = {"tokens": list(system), "lora_name": lora, "cache_salt": None,
                       "agent": self.rng.random() < 0.4}
            self.sessions.append(session)
            if len(self.sessions) > 40:
                self.sessions.pop(0)
        else:
            session = self.rng.choice(self.sessions)
        turn = self.rng.randrange(20, 200) if session["agent"] else self.rng.randrange(8, 60)
        session["tokens"] += [self.rng.randrange(30000) for _ in range(turn)]
        if len(session["tokens"]) > 2048:  # a long session ends; another starts
            self.sessions.remove(session)
            return
        self.cache(session["tokens"], session["lora_name"], session["cache_salt"])


class Publisher:
    """vLLM's ZmqEventPublisher protocol: PUB (topic, seq, payload), and a ROUTER answering
    ("", start_seq) with ("", seq, payload) per buffered batch from start_seq, then ("", -1, "")."""

    def __init__(self, pub_port, replay_port, buffer_steps=10000):
        self.context = zmq.Context()
        self.pub = self.context.socket(zmq.PUB)
        self.pub.setsockopt(zmq.LINGER, 0)
        self.replay = self.context.socket(zmq.ROUTER)
        self.replay.setsockopt(zmq.LINGER, 0)
        self.pub_endpoint = self.bind(self.pub, pub_port)
        self.replay_endpoint = self.bind(self.replay, replay_port)
        self.buffer = []
        self.buffer_steps = buffer_steps
        self.lock = threading.Lock()
        self.seq = 0
        self.running = True
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    @staticmethod
    def bind(socket, port):
        if port:
            socket.bind(f"tcp://127.0.0.1:{port}")
            return f"tcp://127.0.0.1:{port}"
        socket.bind("tcp://127.0.0.1:*")
        return socket.getsockopt_string(zmq.LAST_ENDPOINT)

    def forge(self, seq, payload):
        self.pub.send_multipart([b"", seq.to_bytes(8, "big"), payload])

    def publish(self, payload):
        with self.lock:
            seq = self.seq
            self.seq += 1
            self.buffer.append((seq, payload))
            del self.buffer[:-self.buffer_steps]
        self.pub.send_multipart([b"", seq.to_bytes(8, "big"), payload])

    def serve(self):
        poller = zmq.Poller()
        poller.register(self.replay, zmq.POLLIN)
        while self.running:
            if not poller.poll(50):
                continue
            frames = self.replay.recv_multipart()
            if len(frames) != 3:
                continue
            client, _, start = frames
            start = int.from_bytes(start, "big")
            with self.lock:
                batches = [(s, p) for s, p in self.buffer if s >= start]
            for s, p in batches:
                self.replay.send_multipart([client, b"", s.to_bytes(8, "big"), p])
            self.replay.send_multipart([client, b"", (-1).to_bytes(8, "big", signed=True), b""])

    def close(self):
        self.running = False
        self.thread.join()
        self.pub.close()
        self.replay.close()
        self.context.term()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", choices=["vllm", "vllm-array", "sglang", "lmcache"], required=True)
    parser.add_argument("--hash", choices=["bytes", "int"], default="bytes")
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--chunk", type=int, default=64)
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--pub-port", type=int, default=0)
    parser.add_argument("--replay-port", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--capacity", type=int, default=100000)
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--unfull", action="store_true")
    args = parser.parse_args()
    engine = Engine(args)
    # vLLM's offset_endpoint_port: a rank's ports are the base ports + rank.
    offset = args.rank if args.pub_port else 0
    publisher = Publisher(args.pub_port + offset if args.pub_port else 0,
                          args.replay_port + offset if args.replay_port else 0)
    print(f"endpoints {publisher.pub_endpoint} {publisher.replay_endpoint}", flush=True)

    def flush():
        if engine.events:
            publisher.publish(engine.batch())

    for line in sys.stdin:
        command, _, rest = line.strip().partition(" ")
        if command == "cache":
            prompt = json.loads(rest)
            engine.cache(prompt["tokens"], prompt.get("lora_name"), prompt.get("cache_salt"),
                         prompt.get("medium", "GPU"))
            flush()
            print(f"ok {publisher.seq}", flush=True)
        elif command == "steps":
            for _ in range(int(rest)):
                engine.step()
                flush()
            print(f"ok {publisher.seq}", flush=True)
        elif command == "clear":
            engine.blocks.clear()
            engine.chunks.clear()
            engine.events.append(["AllBlocksCleared"] if engine.shape in ("sglang", "vllm-array")
                                 else OrderedDict([("type", "AllBlocksCleared")]))
            flush()
            print(f"ok {publisher.seq}", flush=True)
        elif command == "query":
            q = json.loads(rest)
            n, w = engine.overlap(q["tokens"], q.get("lora_name"), q.get("cache_salt"))
            print(f"overlap {n} {w!r}", flush=True)
        elif command == "sample":
            s = engine.sample()
            print("none" if s is None else json.dumps(
                {"tokens": s["tokens"], "lora_name": s["lora_name"], "cache_salt": s["cache_salt"]}),
                flush=True)
        elif command == "forged":
            publisher.forge(int(rest), engine.batch())
            print(f"ok {publisher.seq}", flush=True)
        elif command == "quit":
            break
        else:
            print(f"error: unknown command {command}", flush=True)
    publisher.close()


if __name__ == "__main__":
    main()
