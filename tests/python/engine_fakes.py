"""Stand-ins for the parts of an SGLang engine that RadixCache talks to: a paged KV slot
allocator that checks every slot is freed exactly once, and a req_to_token pool."""

import numpy as np


def values(indices):
    """Slots (a tensor or an array) as a list of ints."""
    return [int(v) for v in indices.tolist()]


class SlotAllocator:
    """Hands out whole pages of contiguous slots; free() takes a tensor or array of slots and
    fails on a slot that is not outstanding (a double free, or a slot it never handed out)."""

    def __init__(self, pages, page_size, device="cpu"):
        self.page_size = page_size
        self.size = pages * page_size
        self.device = device
        self.free_pages = list(range(pages - 1, -1, -1))
        self.outstanding = set()
        self.freed = []  # every freed slot, in order

    def alloc(self, tokens):
        """Slots of ceil(tokens / page_size) whole pages (the caller frees what it does not use)."""
        pages = -(-tokens // self.page_size)
        assert len(self.free_pages) >= pages, "test allocator out of pages"
        slots = []
        for _ in range(pages):
            first = self.free_pages.pop() * self.page_size
            slots += range(first, first + self.page_size)
        self.outstanding.update(slots)
        return np.asarray(slots, dtype=np.int64)

    def free(self, slots):
        values = [int(s) for s in slots.tolist()] if hasattr(slots, "tolist") else list(slots)
        for slot in values:
            assert slot in self.outstanding, f"slot {slot} freed but not outstanding"
            self.outstanding.remove(slot)
        self.freed += values
        # A page returns to the free list when all of its slots are back.
        for first in {s - s % self.page_size for s in values}:
            if not any(first + i in self.outstanding for i in range(self.page_size)):
                self.free_pages.append(first // self.page_size)


class ReqToTokenPool:
    def __init__(self, torch, rows, width):
        self.req_to_token = torch.zeros((rows, width), dtype=torch.int32)
        self.free_slots = list(range(rows))
        self.freed = []

    def alloc(self):
        return self.free_slots.pop(0)

    def write(self, indices, values):
        self.req_to_token[indices] = values

    def free(self, index):
        self.freed.append(index)
        self.free_slots.append(index)
