"""The core API of the radixkv module: layouts, pools, the runtime, policies, replay, and
the conversions and error mapping every call shares."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import radixkv

BUILD = os.environ.get("RADIXKV_BUILD_DIR", os.path.join(os.path.dirname(__file__), "../../build"))


def make_runtime(pages=64, page_tokens=4, backend="accounting", **config):
    layout = radixkv.KvLayout(layers=2, kv_heads=2, head_dim=4, dtype_bytes=2, page_tokens=page_tokens)
    pool = radixkv.PagePool(layout, pages, backend=backend)
    return pool, radixkv.PrefixCacheRuntime(pool, **config)


# ----- KvLayout and PagePool -----


def test_layout_bytes_follow_the_formula():
    layout = radixkv.KvLayout(layers=3, kv_heads=5, head_dim=7, dtype_bytes=2, page_tokens=16)
    assert layout.bytes_per_token == 2 * 3 * 5 * 7 * 2
    assert layout.bytes_per_page == layout.bytes_per_token * 16
    llama = radixkv.KvLayout.preset("llama-3-8b", 16)
    assert llama.bytes_per_token == 2 * 32 * 8 * 128 * 2
    assert "llama-3-8b" in radixkv.KvLayout.preset_names()


def test_layout_bad_field_and_bad_preset_are_value_errors_naming_them():
    with pytest.raises(ValueError, match="head_dim"):
        radixkv.KvLayout(head_dim=0)
    with pytest.raises(ValueError, match="llama-3-8b"):
        radixkv.KvLayout.preset("gpt-9", 16)


def test_host_pool_page_is_a_writable_view_that_keeps_the_pool_alive():
    pool, runtime = make_runtime(backend="host")
    admitted = runtime.admit([1, 2, 3, 4, 5, 6])
    page = int(admitted.block_table[0])
    view = pool.page(page)
    assert view.dtype == np.uint8 and view.shape == (pool.bytes_per_page,)
    view[:3] = [7, 8, 9]
    assert list(pool.page(page)[:3]) == [7, 8, 9]  # the same bytes, not a copy
    del runtime, pool
    view[3] = 1  # the array holds the pool: still valid memory
    assert view[3] == 1


def test_accounting_pool_has_no_page_memory_and_free_pages_are_refused():
    pool, runtime = make_runtime(backend="accounting")
    admitted = runtime.admit([1, 2, 3])
    with pytest.raises(RuntimeError, match="host"):
        pool.page(int(admitted.block_table[0]))
    host_pool, _ = make_runtime(backend="host")
    with pytest.raises(RuntimeError, match="free"):
        host_pool.page(5)
    with pytest.raises(ValueError, match="backend"):
        radixkv.PagePool(radixkv.KvLayout(), 4, backend="gpu-please")


# ----- the runtime -----


def test_admit_reuses_whole_pages_and_computes_the_last_token():
    _, runtime = make_runtime(page_tokens=4)
    prompt = list(range(100, 110))  # 10 tokens: 2 whole pages + 2
    first = runtime.admit(prompt)
    assert first.ok and first.reused_tokens == 0 and first.position_offset == 0
    assert len(first.block_table) == 3
    assert runtime.commit(first.seq, 10) == {"new_pages": 2, "duplicate_pages": 0}
    runtime.finish(first.seq)

    again = runtime.admit(prompt)  # reuse_cut(10) = floor(9/4)*4 = 8
    assert again.reused_tokens == again.position_offset == 8
    assert list(again.block_table[:2]) == list(first.block_table[:2])
    whole = runtime.admit(prompt[:8])  # a fully cached prompt still computes its last token
    assert whole.reused_tokens == 4 == runtime.reuse_cut(8)
    assert runtime.cached_prefix(prompt) == 8
    assert runtime.cached_prefix(prompt, namespace=1) == 0
    runtime.abort(again.seq)
    runtime.abort(whole.seq)
    stats = runtime.stats()
    assert stats["admits"] == 3 and stats["reused_tokens"] == 12 and stats["aborts"] == 2
    assert runtime.check_accounting() == 0


def test_block_table_is_a_copy_taken_at_the_call():
    _, runtime = make_runtime(page_tokens=2)
    admitted = runtime.admit([1, 2, 3])
    before = admitted.block_table.copy()
    assert admitted.block_table.dtype == np.int32
    for token in (4, 5, 6):
        assert runtime.append_token(admitted.seq, token)["ok"]
    now = runtime.block_table(admitted.seq)
    assert len(now) == 3 and list(now[:2]) == list(before)
    assert list(admitted.block_table) == list(before)  # the earlier copy did not change
    runtime.finish(admitted.seq)
    with pytest.raises(RuntimeError, match="finished"):
        runtime.block_table(admitted.seq)


def test_misuse_is_runtime_error_and_bad_arguments_are_value_errors():
    _, runtime = make_runtime()
    admitted = runtime.admit([1, 2, 3, 4, 5])
    runtime.finish(admitted.seq)
    with pytest.raises(RuntimeError):
        runtime.finish(admitted.seq)  # a second finish
    with pytest.raises(ValueError, match="empty"):
        runtime.admit([])
    with pytest.raises(ValueError, match="priority"):
        runtime.admit([1, 2], priority=1000)
    live = runtime.admit([1, 2, 3])
    with pytest.raises(ValueError):
        runtime.commit(live.seq, 99)  # more computed tokens than the sequence has
    with pytest.raises(ValueError, match="policy"):
        make_runtime(policy="no-such-policy")
    assert runtime.check_accounting() == 1  # the live sequence's private page, nothing leaked


def test_a_second_runtime_over_one_pool_is_refused():
    pool, _runtime = make_runtime()
    with pytest.raises(RuntimeError):
        radixkv.PrefixCacheRuntime(pool)


def test_no_space_leaves_nothing_allocated():
    pool, runtime = make_runtime(pages=4, page_tokens=4)
    held = runtime.admit(list(range(16)))
    assert held.ok and pool.free_pages == 0
    refused = runtime.admit(list(range(100, 104)))
    assert refused.status == "no_space" and not refused.ok
    assert refused.seq is None and refused.block_table is None and refused.short_pages == 1
    too_large = runtime.admit(list(range(1000, 1100)))
    assert too_large.status == "too_large"
    runtime.abort(held.seq)
    assert pool.free_pages == 4


# ----- token inputs -----


@pytest.mark.parametrize(
    "make",
    [
        lambda t: list(t),
        lambda t: tuple(t),
        lambda t: np.asarray(t, dtype=np.int32),
        lambda t: np.asarray(t, dtype=np.int64),
        lambda t: np.asarray(t, dtype=np.uint16),
        lambda t: np.repeat(np.asarray(t, dtype=np.int64), 2)[::2],  # strided
    ],
    ids=["list", "tuple", "int32", "int64", "uint16", "strided"],
)
def test_token_inputs_of_every_kind_match_the_same_prefix(make):
    _, runtime = make_runtime(page_tokens=2)
    tokens = [5, 6, 7, 8, 9]
    runtime.finish(runtime.admit(tokens).seq)  # caches [5,6],[7,8] once computed
    seq = runtime.admit(tokens).seq
    runtime.commit(seq, 5)
    runtime.finish(seq)
    assert runtime.cached_prefix(make(tokens)) == 4


def test_torch_tensors_are_token_inputs(torch):
    _, runtime = make_runtime(page_tokens=2)
    seq = runtime.admit([5, 6, 7, 8, 9]).seq
    runtime.commit(seq, 5)
    runtime.finish(seq)
    assert runtime.cached_prefix(torch.tensor([5, 6, 7, 8, 1])) == 4
    assert runtime.cached_prefix(torch.tensor([5, 6, 7, 8, 9], dtype=torch.int32)) == 4
    assert runtime.cached_prefix(torch.tensor([5, 6, 7, 8])) == 2  # the admit cut


@pytest.mark.parametrize(
    "bad, message",
    [
        ([1, 2**40], "index 1"),
        ([1, np.int64(2**40)], "index 1"),
        (np.zeros((2, 2), dtype=np.int32), "1-D"),
        (np.asarray([1, 2**31], dtype=np.int64), "outside"),
    ],
)
def test_token_values_out_of_range_are_value_errors_naming_the_item(bad, message):
    pool, runtime = make_runtime()
    with pytest.raises(ValueError, match=message):
        runtime.admit(bad)
    assert pool.free_pages == pool.capacity_pages  # nothing happened


class _BadIndex:
    def __index__(self):
        raise ValueError("no index here")


@pytest.mark.parametrize(
    "bad, message",
    [
        ([1, "2", 3], r"item 1 is '2' \(a str\), not an integer"),
        ([1, 2.5], r"item 1 is 2.5 \(a float\), not an integer"),
        ([1, True], r"item 1 is True \(a bool\), not an integer"),
        ([np.bool_(True)], r"item 0 is .*\(a numpy.bool_?\), not an integer"),
        ([np.float32(1)], r"item 0 is .*\(a numpy.float32\), not an integer"),
        ([1, 2, _BadIndex()], "item 2 is .*_BadIndex"),
        (np.asarray([1.0, 2.0]), "element type 'd' is not an integer type"),
        ("123", "got str .text is not token ids"),
        (b"abc", "got bytes .text is not token ids"),
        (bytearray(b"abc"), "got bytearray .text is not token ids"),
        (memoryview(b"abc"), "got memoryview .text is not token ids"),
        (memoryview(bytearray(b"abc")), "got memoryview .text is not token ids"),
        (memoryview(b"abcd").cast("c"), "got memoryview .text is not token ids"),
        (memoryview(np.asarray([1.0, 2.0])), "element type 'd' is not an integer type"),
        (12, "expected a list of ints.*got int"),
    ],
)
def test_token_inputs_of_the_wrong_kind_are_type_errors_naming_the_item(bad, message):
    pool, runtime = make_runtime()
    with pytest.raises(TypeError, match=message):
        runtime.admit(bad)
    with pytest.raises(TypeError, match=message):
        runtime.cached_prefix(bad)
    assert pool.free_pages == pool.capacity_pages  # nothing happened


def test_integer_scalars_with_index_are_tokens_like_plain_ints():
    import enum

    class Token(enum.IntEnum):
        BOS = 5

    _, runtime = make_runtime(page_tokens=2)
    tokens = [5, 6, 7, 8, 9]
    seq = runtime.admit(tokens).seq
    runtime.commit(seq, 5)
    runtime.finish(seq)
    # NumPy scalars as list(np.arange(...)) gives them, of every integer type; an IntEnum.
    assert runtime.cached_prefix(list(np.arange(5, 10))) == 4
    assert runtime.cached_prefix([np.int8(5), np.uint16(6), np.int32(7), np.uint64(8), 9]) == 4
    assert runtime.cached_prefix([Token.BOS, 6, 7, 8, 9]) == 4
    # A view whose bytes were cast to integers is read as integers, not as text.
    assert runtime.cached_prefix(memoryview(np.asarray(tokens, dtype=np.int32).tobytes()).cast("i")) == 4


def test_numpy_scalar_tokens_in_sglang_keys():
    from radixkv.sglang import RadixCache, RadixKey

    tree = RadixCache(None, None, page_size=1)
    tree.insert(RadixKey(list(np.arange(1, 4))))
    assert tree.total_size() == 3
    with pytest.raises(TypeError, match="not token ids"):
        tree.insert(RadixKey(b"abc"))


def test_use_huge_pages_says_whether_the_machine_has_them_and_the_runtime_works_either_way():
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            available = "[never]" not in f.read()
    except OSError:
        available = False
    # The module is a mimalloc build (sanitizer builds do not build it).
    assert radixkv.use_huge_pages(True) is available
    try:  # a runtime built now (its tree in huge pages where there are some) reuses as before
        _, runtime = make_runtime(pages=64, page_tokens=4)
        prompt = list(range(1, 33))
        first = runtime.admit(prompt)
        assert first.ok and first.reused_tokens == 0
        assert runtime.commit(first.seq, 32) == {"new_pages": 8, "duplicate_pages": 0}
        runtime.finish(first.seq)
        assert runtime.admit(prompt).reused_tokens == 28  # the last token is always computed
    finally:
        assert radixkv.use_huge_pages(False) is True


# ----- policies and replay -----


def test_policy_registry_lists_every_policy_the_runtime_accepts():
    policies = radixkv.policies()
    names = [p["name"] for p in policies]
    assert "lru" in names and "gdsf" in names and len(names) == len(set(names))
    for name in names:
        radixkv.check_policy(name)
        make_runtime(policy=name)
    gdsf = next(p for p in policies if p["name"] == "gdsf")
    for parameter in gdsf["parameters"]:
        radixkv.check_policy(f"gdsf:{parameter['key']}={parameter['default']}")
    with pytest.raises(ValueError, match="lru"):  # the message lists the known names
        radixkv.check_policy("nope")


TIMING_FIELDS = {"wall_seconds", "cache_seconds", "requests_per_second", "admit_us", "finish_us"}


def test_replay_returns_the_same_dict_as_the_command_line_json():
    binary = os.path.join(BUILD, "tools", "radixkv")
    if not os.path.exists(binary):
        pytest.fail(f"{binary} is missing: build the radixkv command")
    options = {"page_tokens": 32, "capacity_tokens": 20000, "policy": "gdsf"}
    ours = radixkv.replay(**options)
    out = subprocess.run(
        [binary, "replay", "--json", "--page-tokens", "32", "--capacity-tokens", "20000",
         "--policy", "gdsf"],
        check=True, capture_output=True, text=True).stdout
    theirs = json.loads(out)
    assert set(ours) == set(theirs)
    assert {k: v for k, v in ours.items() if k not in TIMING_FIELDS} == {
        k: v for k, v in theirs.items() if k not in TIMING_FIELDS}
    assert ours["policy"] == "gdsf" and ours["page_tokens"] == 32 and ours["pages_leaked"] == 0


def test_replay_bad_option_is_a_value_error_naming_the_flag():
    with pytest.raises(ValueError, match="--page-tokens"):
        radixkv.replay(page_tokens=0)
    with pytest.raises(ValueError, match="no-such-flag"):
        radixkv.replay(no_such_flag=True)
    with pytest.raises(RuntimeError, match="missing.jsonl"):
        radixkv.replay("missing.jsonl")


# ----- import without NumPy or torch -----

BLOCK_NUMPY = (
    "import sys; sys.modules['numpy'] = None; sys.modules['torch'] = None\n"
    "import radixkv, radixkv.sglang\n"
)


def run_python(interpreter, code):
    env = dict(os.environ)
    return subprocess.run([interpreter, "-c", code], capture_output=True, text=True, env=env)


def test_import_needs_neither_numpy_nor_torch_and_arrays_name_numpy():
    code = BLOCK_NUMPY + (
        "layout = radixkv.KvLayout(page_tokens=2)\n"
        "runtime = radixkv.PrefixCacheRuntime(radixkv.PagePool(layout, 8))\n"
        "try:\n"
        "    runtime.admit([1, 2, 3])\n"
        "except ImportError as e:\n"
        "    print('ImportError:', e)\n"
    )
    result = run_python(sys.executable, code)
    assert result.returncode == 0, result.stderr
    assert "ImportError:" in result.stdout and "numpy" in result.stdout


def test_the_path_python3_imports_the_module_too():
    # The acceptance line runs `python3`: here and on CI a pyenv CPython without
    # NumPy, not Debian's. Both must load the extension.
    interpreters = {sys.executable}
    path_python = shutil.which("python3")
    if path_python:
        interpreters.add(path_python)
    for interpreter in sorted(interpreters):
        result = run_python(interpreter, "import radixkv, radixkv.sglang; print(radixkv.__version__)")
        assert result.returncode == 0, f"{interpreter}: {result.stderr}"
        assert result.stdout.strip() == radixkv.__version__


# ----- the host tier -----


def test_host_tier_keeps_evicted_pages_and_loads_them_back_with_their_bytes():
    layout = radixkv.KvLayout(layers=1, kv_heads=1, head_dim=4, dtype_bytes=2, page_tokens=4)
    device = radixkv.PagePool(layout, 8, backend="host")
    host = radixkv.PagePool(layout, 16, backend="host")
    runtime = radixkv.PrefixCacheRuntime(device, host_pool=host, write_policy="write_back")
    prompt = list(range(13))  # 3 whole pages + 1
    first = runtime.admit(prompt)
    pages = [int(p) for p in first.block_table[:3]]
    for i, page in enumerate(pages):
        device.page(page)[:] = 10 + i  # the "KV" the model wrote
    runtime.commit(first.seq, 13)
    runtime.finish(first.seq)
    assert runtime.evict(8) == 3  # every device page goes to the host (write-back)
    assert runtime.cached_pages == 0 and runtime.host_cached_pages == 3

    again = runtime.admit(prompt)
    assert again.reused_tokens == 12 and again.device_hit_tokens == 0
    assert again.host_hit_tokens == 12
    runtime.wait_load(again.load_ticket)
    assert runtime.load_done(again.load_ticket) and runtime.load_done(0)
    for i, page in enumerate(again.block_table[:3]):
        assert set(device.page(int(page))) == {10 + i}  # the bytes came back
    stats = runtime.stats()
    assert stats["host_hit_tokens"] == 12 and stats["device_hit_tokens"] == 0
    with pytest.raises(RuntimeError):
        runtime.clear_cache()  # a sequence is live
    runtime.abort(again.seq)
    runtime.clear_cache()
    assert runtime.cached_pages == 0 and runtime.host_cached_pages == 0
    runtime.check_accounting()


def test_bad_write_policy_is_a_value_error_naming_the_known_ones():
    layout = radixkv.KvLayout(page_tokens=4)
    with pytest.raises(ValueError, match="write_through"):
        radixkv.PrefixCacheRuntime(radixkv.PagePool(layout, 4), host_pool=radixkv.PagePool(layout, 4),
                                   write_policy="write_sometimes")
