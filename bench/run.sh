#!/usr/bin/env bash
# The one command for the benchmark suite: configures a Release build, builds radixkv_bench, runs
# every benchmark with repetitions (medians are reported) and writes
#   bench/results/results.json  Google Benchmark's JSON (aggregates only)
#   bench/results/results.md    the ratio tables of bench/README.md, with the machine
# Extra arguments go to the benchmark binary, e.g. bench/run.sh --benchmark_filter='BM_Match/'.
# Environment: RADIXKV_BENCH_BUILD (build dir), RADIXKV_BENCH_OUT (output dir),
# RADIXKV_BENCH_REPETITIONS (default 5), RADIXKV_BENCH_MIN_TIME (seconds per run, default 0.05),
# RADIXKV_BENCH_MAX_TOKENS (largest tree, default 10^7), RADIXKV_BENCH_JOBS (build jobs).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${RADIXKV_BENCH_BUILD:-$root/build-bench-release}
out=${RADIXKV_BENCH_OUT:-$root/bench/results}
repetitions=${RADIXKV_BENCH_REPETITIONS:-5}
min_time=${RADIXKV_BENCH_MIN_TIME:-0.05}
jobs=${RADIXKV_BENCH_JOBS:-$(nproc)}

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DRADIXKV_WERROR=ON >/dev/null
cmake --build "$build" -j"$jobs" --target radixkv_bench
mkdir -p "$out"
"$build/bench/radixkv_bench" \
  --benchmark_repetitions="$repetitions" \
  --benchmark_min_time="$min_time" \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/results.json" \
  --benchmark_out_format=json \
  "$@"
python3 "$root/bench/report.py" "$out/results.json" >"$out/results.md"
cat "$out/results.md"
