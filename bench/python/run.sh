#!/usr/bin/env bash
# radixkv.sglang against the pure-Python reference cache, per request from Python
# (bench/python/bench_sglang.py; bench/README.md has the table). Needs the module built:
# scripts/build.sh. Arguments go to the script, e.g. bench/python/run.sh --page-size 1.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
python=${RADIXKV_PYTHON:-/usr/bin/python3}
[[ -x $python ]] || python=python3
PYTHONPATH=$root/build/python exec "$python" "$root/bench/python/bench_sglang.py" "$@"
