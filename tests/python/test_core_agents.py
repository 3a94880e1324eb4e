"""Agents and tenants from Python (issue 31): retention hints on admit, session holds, quotas and
partial-page reuse reach the C++ runtime. Each scenario is small enough that the victims are
known exactly: a 6-page pool of 4-token pages, evicting only when an admit needs pages (both
watermarks at 1.0), LRU underneath. Every test runs the same calls with the feature off as the
control, so a feature that does not reach the core fails the test."""

import math

import numpy as np
import pytest

import radixkv

PAGE = 4


def make(pages=6, backend="accounting", **config):
    layout = radixkv.KvLayout(layers=1, kv_heads=1, head_dim=2, dtype_bytes=2, page_tokens=PAGE)
    pool = radixkv.PagePool(layout, pages, backend=backend)
    config.setdefault("high_watermark", 1.0)
    config.setdefault("low_watermark", 1.0)
    return pool, radixkv.PrefixCacheRuntime(pool, **config)


def prompt(first, pages):
    """`pages` whole pages of distinct tokens starting at `first`."""
    return list(range(first, first + pages * PAGE))


A, B, E = prompt(100, 2), prompt(200, 2), prompt(300, 1)


def serve(runtime, tokens, **admit):
    """Admits `tokens`, computes all of them and finishes: the whole pages stay cached."""
    result = runtime.admit(tokens, **admit)
    assert result.ok, result.status
    runtime.commit(result.seq, len(tokens))
    runtime.finish(result.seq)
    return result


def cached(runtime, tokens, namespace=0):
    """Cached tokens of `tokens`: probed with one more token, since an engine's match stops short
    of a prompt's last token (its logits are needed)."""
    return runtime.cached_prefix(list(tokens) + [0], namespace=namespace)


def evict_two_pages(runtime):
    """A + B fill 4 of the 6 pages; a fresh 4-page prompt needs 2 more than the 2 free: LRU
    would take the oldest leaf (A, 2 pages)."""
    serve(runtime, prompt(400, 4))


# ----- retention hints -----


def test_a_hinted_range_keeps_its_pages_where_lru_would_evict_them():
    for hinted in (False, True):
        _, runtime = make(retention=True, hold_share=1.0)
        serve(runtime, A, retention=[(0, None, 80, None)] if hinted else None)
        serve(runtime, B)
        evict_two_pages(runtime)
        # LRU's victim is A, the older; the hint (priority 80 > 35, never lapsing) moves it to B.
        assert (cached(runtime, A), cached(runtime, B)) == ((8, 0) if hinted else (0, 8))


def test_a_lapsed_hint_falls_back_to_lru_order():
    outcomes = {}
    for duration in (1.0, None):
        _, runtime = make(retention=True, hold_share=1.0)
        serve(runtime, A, retention=[(0, 8, 80, duration)])
        serve(runtime, B)
        runtime.set_now(50.0)
        serve(runtime, E)  # an access at t = 50: the 1-second hint has lapsed
        runtime.set_now(51.0)
        serve(runtime, prompt(400, 3))  # 5 of 6 pages cached, 1 free: evicts one leaf of 2
        outcomes[duration] = (cached(runtime, A), cached(runtime, B))
    assert outcomes == {1.0: (0, 8), None: (8, 0)}


def test_a_demoting_hint_makes_the_newer_path_go_first():
    _, runtime = make(retention=True, hold_share=1.0)
    serve(runtime, A)
    serve(runtime, B, retention=[(0, None, 10, None)])  # below the default 35: evicted first
    evict_two_pages(runtime)
    assert (cached(runtime, A), cached(runtime, B)) == (8, 0)


def test_the_hold_share_bounds_what_hints_protect():
    # With hold_share 0.1 the two protected pages exceed the share: they go before plain ones.
    _, runtime = make(retention=True, hold_share=0.1)
    serve(runtime, A, retention=[(0, None, 80, None)])
    serve(runtime, B)
    evict_two_pages(runtime)
    assert (cached(runtime, A), cached(runtime, B)) == (0, 8)


def test_bad_retention_ranges_are_value_errors_naming_the_fault():
    _, runtime = make(retention=True)
    with pytest.raises(ValueError, match="priority"):
        runtime.admit(A, retention=[(0, None, 101, None)])
    with pytest.raises(ValueError, match="range 0"):
        runtime.admit(A, retention=[(4, 4, 50, None)])
    with pytest.raises(ValueError, match="duration"):
        runtime.admit(A, retention=[(0, None, 50, math.nan)])
    with pytest.raises(ValueError, match="token_start, token_end, priority, duration_s"):
        runtime.admit(A, retention=[(0, None, 50)])
    assert runtime.live_sequences == 0 and runtime.cached_pages == 0  # nothing half-admitted


def test_hints_and_holds_need_a_retention_layer():
    _, runtime = make()
    assert not runtime.has_retention
    with pytest.raises(RuntimeError, match="retention"):
        runtime.hold(1, 10.0)
    _, runtime = make(retention=True)
    assert runtime.has_retention
    with pytest.raises(ValueError, match="seconds"):
        runtime.hold(1, -1.0)


# ----- session holds -----


def test_a_held_session_keeps_its_path_until_released():
    for held in (False, True):
        _, runtime = make(retention=True, hold_share=1.0)
        serve(runtime, A, session=7, agent=2)
        serve(runtime, B, session=8)
        if held:
            runtime.hold(7, 100.0, agent=2)  # its agent runs a tool
        evict_two_pages(runtime)
        assert (cached(runtime, A), cached(runtime, B)) == ((8, 0) if held else (0, 8))


def test_a_released_or_other_agents_hold_protects_nothing():
    for call in ("release", "other_agent"):
        _, runtime = make(retention=True, hold_share=1.0)
        serve(runtime, A, session=7, agent=2)
        serve(runtime, B)
        if call == "release":
            runtime.hold(7, 100.0, agent=2)
            runtime.release(7, agent=2)
            assert (runtime.stats()["holds"], runtime.stats()["releases"]) == (1, 1)
        else:
            runtime.hold(7, 100.0, agent=1)  # a sub-agent that committed nothing
        evict_two_pages(runtime)
        assert (cached(runtime, A), cached(runtime, B)) == (0, 8), call


# ----- quotas -----


def flood(runtime, namespace, count, first=1000):
    for i in range(count):
        serve(runtime, prompt(first + 10 * PAGE * i, 2), namespace=namespace)


def test_a_quiet_tenant_keeps_its_min_while_a_noisy_one_floods():
    quiet = [prompt(100, 2), prompt(200, 1)]  # 3 of 6 pages: the quiet tenant's min of 0.5
    for quotas in (None, {1: (0.5, 1.0)}):
        _, runtime = make(quotas=quotas)
        for p in quiet:
            serve(runtime, p, namespace=1)
        flood(runtime, namespace=2, count=10)
        kept = [cached(runtime, p, namespace=1) for p in quiet]
        assert kept == ([8, 4] if quotas else [0, 0])


def test_a_tenant_at_its_max_evicts_its_own_pages_first():
    for quotas in (None, {2: (0.0, 2 * 32)}):  # an int share is bytes: 2 pages of 32 bytes
        pool, runtime = make(quotas=quotas)
        assert pool.bytes_per_page == 32
        serve(runtime, A, namespace=1)  # the oldest: LRU's first victim
        flood(runtime, namespace=2, count=3)
        # Each flood prompt needs 2 pages; at its max, tenant 2 gives up its own older prompt.
        assert cached(runtime, A, namespace=1) == (8 if quotas else 0)


def test_a_host_min_keeps_a_quiet_tenants_demoted_pages():
    # A 6-page device over a 12-page host (write-back): the quiet tenant's 3 pages are demoted by
    # the flood; with a host min of 3 pages (0.25) they stay on the host and hit from there.
    quiet = prompt(100, 3)
    for host_quotas in (None, {1: (0.25, 1.0)}):
        layout = radixkv.KvLayout(layers=1, kv_heads=1, head_dim=2, dtype_bytes=2, page_tokens=PAGE)
        pool = radixkv.PagePool(layout, 6)
        host = radixkv.PagePool(layout, 12)
        runtime = radixkv.PrefixCacheRuntime(pool, high_watermark=1.0, low_watermark=1.0,
                                             host_pool=host, host_quotas=host_quotas)
        serve(runtime, quiet, namespace=1)
        flood(runtime, namespace=2, count=20)
        again = runtime.admit(quiet + [0], namespace=1)
        runtime.wait_load(again.load_ticket)
        assert (again.reused_tokens, again.host_hit_tokens) == ((12, 12) if host_quotas else (0, 0))
        runtime.abort(again.seq)


def test_bad_quotas_are_errors_naming_the_namespace():
    with pytest.raises(ValueError, match=r"quotas\[3\] max = 1 bytes is less than one page"):
        make(quotas={3: (0, 1)})
    with pytest.raises(TypeError, match=r"quotas\[3\] min must be a float"):
        make(quotas={3: ("half", 1.0)})
    with pytest.raises(ValueError, match=r"quotas\[3\] must be \(min, max\)"):
        make(quotas={3: (0.1, 0.5, 0.9)})
    with pytest.raises(ValueError, match="3"):
        make(quotas={3: (0.9, 0.2)})  # min above max: the core's check
    layout = radixkv.KvLayout(layers=1, kv_heads=1, head_dim=2, dtype_bytes=2, page_tokens=PAGE)
    with pytest.raises(ValueError, match="host_quotas needs a host_pool"):
        radixkv.PrefixCacheRuntime(radixkv.PagePool(layout, 6), host_quotas={1: (0.5, 1.0)})
    with pytest.raises(ValueError, match=r"host_quotas\[1\] max = 8 bytes .* host budget"):
        radixkv.PrefixCacheRuntime(radixkv.PagePool(layout, 6), host_pool=radixkv.PagePool(layout, 6),
                                   host_quotas={1: (0, 8)})


# ----- partial-page reuse -----


def test_partial_reuse_copies_the_matching_tokens_of_a_cached_page():
    first = prompt(100, 2)
    second = first[:6] + [900, 901, 902, 903]  # one whole page and 2 tokens of the next
    for partial in (False, True):
        pool, runtime = make(backend="host", partial_reuse=partial)
        admitted = runtime.admit(first)
        table = [int(p) for p in admitted.block_table]
        pool.page(table[1])[:] = np.arange(pool.bytes_per_page, dtype=np.uint8)
        runtime.commit(admitted.seq, len(first))
        runtime.finish(admitted.seq)
        again = runtime.admit(second)
        assert again.ok
        assert again.partial_hit_tokens == (2 if partial else 0)
        assert again.reused_tokens == again.position_offset == (6 if partial else 4)
        assert runtime.stats()["partial_hit_tokens"] == again.partial_hit_tokens
        copy = int(again.block_table[1])
        assert copy != table[1]  # a private page: the cached one stays the tree's
        if partial:
            assert bytes(pool.page(copy)) == bytes(pool.page(table[1]))
        runtime.abort(again.seq)
        assert runtime.check_accounting() == 0
