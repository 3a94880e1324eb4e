"""radixkv: a prefix KV cache for LLM serving, from Python.

The core API binds radixkv's C++ classes (python/README.md has the details):

- ``KvLayout``: a model's KV shape (``KvLayout.preset("llama-3-8b", 16)``);
- ``PagePool``: pages with refcounts, ``backend="accounting"`` or ``"host"`` (page memory as
  NumPy arrays through ``pool.page(id)``);
- ``PrefixCacheRuntime``: ``admit`` / ``commit`` / ``append_token`` / ``finish`` / ``abort`` /
  ``stats``, the adapter a batch scheduler calls;
- ``policies()``: the eviction policies; ``replay(trace, **options)``: the command line's replay,
  returning the dict that ``radixkv replay --json`` prints.

``radixkv.sglang`` is SGLang's ``RadixCache`` interface over the same radix tree.

Token lists may be Python lists (of ints, or of anything with ``__index__`` such as NumPy integer
scalars; never bools), NumPy integer arrays or torch tensors; text (``str``, ``bytes``,
``bytearray``) is refused. NumPy and torch are imported only where an array is produced or
accepted: ``import radixkv`` needs neither.
Errors: ``TypeError`` for an argument of the wrong kind (text as tokens, a float among them),
``ValueError`` for a bad value (a token id outside int32), ``RuntimeError`` for misuse (a finished
sequence, a node evicted since it was matched), ``MemoryError`` when memory runs out.
"""

import json as _json

from ._radixkv import (  # noqa: F401
    AdmitResult,
    KvLayout,
    PagePool,
    PrefixCacheRuntime,
    Sequence,
    __version__,
    check_policy,
    policies,
    use_huge_pages,
)
from . import _radixkv

__all__ = [
    "AdmitResult",
    "KvLayout",
    "PagePool",
    "PrefixCacheRuntime",
    "Sequence",
    "check_policy",
    "policies",
    "replay",
    "use_huge_pages",
    "__version__",
]


def _flag(name, value):
    flag = "--" + name.replace("_", "-")
    if value is True:
        return [flag]
    if value is False or value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [flag, ",".join(str(v) for v in value)]
    return [flag, str(value)]


def replay(trace=None, **options):
    """Replays a trace as ``radixkv replay --json`` does and returns its JSON as a dict.

    ``trace`` is a trace file's path (None: the bundled default trace). Every keyword is the
    command line's flag of the same name with ``-`` for ``_``: ``replay(path, page_tokens=512,
    policy="gdsf", capacity_tokens=1_000_000)``; ``True`` gives a bare flag, a list a
    comma-separated value (``sweep=[1e6, 3e6]``). It runs the same function as the command line,
    in this process, with the GIL released.

    Raises ValueError for a bad option (the command line's message, naming the flag) and
    RuntimeError when the replay fails (a malformed trace, a leaked page).
    """
    args = ["replay", "--json", "--no-progress"]
    if trace is not None:
        args += ["--trace", str(trace)]
    for name, value in options.items():
        args += _flag(name, value)
    code, out, err = _radixkv._run_cli(args)
    if code == 2:
        raise ValueError(err.strip() or "radixkv replay: bad arguments")
    if code != 0:
        raise RuntimeError(err.strip() or f"radixkv replay failed with status {code}")
    return _json.loads(out)
