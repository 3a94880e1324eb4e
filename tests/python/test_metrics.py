"""The runtime's metrics from Python (issue 33): metrics() is Prometheus text that
prometheus_client parses, whose counters are what the caller counted and what stats() says, and
the live curve from start_miss_ratio_curve()."""

import pytest
from prometheus_client.parser import text_string_to_metric_families

import radixkv


def samples(text):
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def make_runtime(pages=32):
    layout = radixkv.KvLayout(layers=2, kv_heads=2, head_dim=4, dtype_bytes=2, page_tokens=4)
    pool = radixkv.PagePool(layout, pages, backend="accounting")
    return pool, radixkv.PrefixCacheRuntime(pool)


def test_metrics_count_what_the_caller_saw_and_the_curve_starts_when_asked():
    pool, runtime = make_runtime()
    assert runtime.miss_ratio_curve() is None
    assert "radixkv_mrc_" not in runtime.metrics()
    runtime.start_miss_ratio_curve(max_keys=1024)
    prompts = [[1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 3, 4, 5, 6, 7, 8, 10, 11], [7] * 13]
    prompt_tokens = reused = 0
    for prompt in prompts * 3:
        admitted = runtime.admit(prompt)
        prompt_tokens += len(prompt)
        reused += admitted.reused_tokens
        runtime.commit(admitted.seq, len(prompt))
        runtime.finish(admitted.seq)
    values = samples(runtime.metrics())
    assert values[("radixkv_requests_total", ())] == 9
    assert values[("radixkv_prompt_tokens_total", ())] == prompt_tokens
    assert values[("radixkv_hit_tokens_total", (("tier", "device"),))] == reused > 0
    assert values[("radixkv_finish_duration_seconds_count", ())] <= 9  # one call in 8, drawn
    stats = runtime.stats()
    assert values[("radixkv_pages_inserted_total", (("tier", "device"),))] == stats["committed_pages"]
    assert values[("radixkv_cached_bytes", (("tier", "device"),))] == (
        runtime.cached_pages * pool.bytes_per_page)
    curve = runtime.miss_ratio_curve()
    assert [p["multiple"] for p in curve] == [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
    assert [p["capacity_tokens"] for p in curve] == [32, 64, 128, 256, 512, 1024]
    for p in curve:
        label = (("multiple", f"{p['multiple']:g}"),)
        assert values[("radixkv_mrc_hit_ratio", label)] == pytest.approx(p["hit_rate"])
    # The 5 distinct pages fit at every size: the second prompt hits the first's 2 pages, then
    # the next two passes hit all 7 full pages (of 4 tokens), out of every prompt token.
    assert curve[0]["hit_rate"] == pytest.approx((2 + 2 * 7) * 4 / prompt_tokens)


def test_start_miss_ratio_curve_refuses_a_bad_config_naming_it():
    _, runtime = make_runtime()
    with pytest.raises(ValueError, match="rate"):
        runtime.start_miss_ratio_curve(rate=0.0)
    _, small = make_runtime(pages=3)
    with pytest.raises(ValueError, match="at least 4 pages"):
        small.start_miss_ratio_curve()
    assert small.miss_ratio_curve() is None
