"""A small pure-Python radix cache over engine slots: the oracle of radixkv.sglang's tests and
the baseline of bench/python.

It implements exactly the semantics radixkv.sglang promises (python/radixkv/sglang.py), the
simple way: keys cut to whole pages, a node split where a match ends inside it (the lower part
keeps its identity), every access stamping the whole path with one new tick, eviction one page
at a time from the tail of the evictable leaf with the oldest stamp (LRU), a lock counting on
every node of the path, and a node handle that dies when any page of its node is evicted.
"""

import heapq


class Handle:
    __slots__ = ("node", "alive")

    def __init__(self, node):
        self.node = node
        self.alive = True


class Node:
    __slots__ = ("parent", "pages", "slots", "children", "stamp", "locks", "handle")

    def __init__(self, parent, pages, slots):
        self.parent = parent
        self.pages = pages  # list of tuples of page_size tokens
        self.slots = slots  # first slot of each page
        self.children = {}  # first page -> Node
        self.stamp = 0
        self.locks = 0
        self.handle = None


class ReferenceCache:
    def __init__(self, page_size):
        self.page_size = page_size
        self.roots = {}
        self.clock = 0

    def _pages(self, tokens):
        p = self.page_size
        whole = len(tokens) // p * p
        return [tuple(tokens[i : i + p]) for i in range(0, whole, p)]

    def _root(self, ns):
        if ns not in self.roots:
            self.roots[ns] = Node(None, [], [])
        return self.roots[ns]

    def _locate(self, root, pages):
        """(deepest fully matched node, partially matched child or None, pages matched in it,
        matched pages in all, their slots)."""
        node, pos, slots = root, 0, []
        while pos < len(pages):
            child = node.children.get(pages[pos])
            if child is None:
                break
            same = 0
            while same < len(child.pages) and pos + same < len(pages) and \
                    child.pages[same] == pages[pos + same]:
                same += 1
            slots += child.slots[:same]
            pos += same
            if same < len(child.pages):
                return node, child, same, pos, slots
            node = child
        return node, None, 0, pos, slots

    def _split(self, node, upper_pages):
        upper = Node(node.parent, node.pages[:upper_pages], node.slots[:upper_pages])
        upper.stamp, upper.locks = node.stamp, node.locks
        node.parent.children[upper.pages[0]] = upper
        node.pages, node.slots = node.pages[upper_pages:], node.slots[upper_pages:]
        node.parent = upper
        upper.children[node.pages[0]] = node
        return upper

    def _touch(self, node):
        self.clock += 1
        while node.parent is not None:
            node.stamp = self.clock
            node = node.parent

    def _handle(self, node):
        if node.parent is None:
            return None
        if node.handle is None:
            node.handle = Handle(node)
        return node.handle

    def match(self, ns, tokens):
        """(matched tokens, slots per matched token, handle or None for the root)"""
        node, partial, partial_pages, matched, slots = self._locate(self._root(ns), self._pages(tokens))
        end = self._split(partial, partial_pages) if partial is not None else node
        self._touch(end)
        return matched * self.page_size, self._expand(slots), self._handle(end)

    def insert(self, ns, tokens, slots):
        """Tokens already cached; caches the rest of the whole pages with `slots` (per token)."""
        pages = self._pages(tokens)
        node, partial, partial_pages, matched, _ = self._locate(self._root(ns), pages)
        end = self._split(partial, partial_pages) if partial is not None else node
        if matched < len(pages):
            first = [slots[k * self.page_size] for k in range(matched, len(pages))]
            leaf = Node(end, pages[matched:], first)
            end.children[leaf.pages[0]] = leaf
            end = leaf
        self._touch(end)
        return matched * self.page_size

    def _expand(self, first_slots):
        return [s + i for s in first_slots for i in range(self.page_size)]

    def _evictable_leaves(self):
        out = []
        stack = list(self.roots.values())
        while stack:
            node = stack.pop()
            stack.extend(node.children.values())
            if self._is_evictable(node):
                out.append(node)
        return out

    @staticmethod
    def _is_evictable(node):
        return node.parent is not None and not node.children and node.locks == 0

    def evict(self, pages):
        """Slots of up to `pages` evicted pages, in eviction order. Like SGLang, a heap of the
        evictable leaves per call (stamps do not change during it); a parent that runs out of
        children joins it."""
        freed = []
        heap = [(leaf.stamp, id(leaf), leaf) for leaf in self._evictable_leaves()]
        heapq.heapify(heap)
        while len(freed) < pages * self.page_size and heap:
            leaf = heap[0][2]
            key = leaf.pages[0]
            leaf.pages.pop()
            freed += self._expand([leaf.slots.pop()])
            if leaf.handle is not None:
                leaf.handle.alive = False
                leaf.handle = None
            if not leaf.pages:
                heapq.heappop(heap)
                parent = leaf.parent
                del parent.children[key]
                if self._is_evictable(parent):
                    heapq.heappush(heap, (parent.stamp, id(parent), parent))
        return freed

    def lock(self, handle):
        if not handle.alive:
            raise RuntimeError("evicted")
        node, newly = handle.node, 0
        while node.parent is not None:
            if node.locks == 0:
                newly += len(node.pages)
            node.locks += 1
            node = node.parent
        return newly

    def unlock(self, handle):
        if not handle.alive:
            raise RuntimeError("evicted")
        node, freed = handle.node, 0
        if node.locks == 0:
            raise RuntimeError("not locked")
        while node.parent is not None:
            node.locks -= 1
            if node.locks == 0:
                freed += len(node.pages)
            node = node.parent
        return freed

    def sizes(self):
        """(cached, protected, evictable) pages."""
        cached = protected = 0
        stack = list(self.roots.values())
        while stack:
            node = stack.pop()
            stack.extend(node.children.values())
            cached += len(node.pages)
            protected += len(node.pages) if node.locks > 0 else 0
        return cached, protected, cached - protected
