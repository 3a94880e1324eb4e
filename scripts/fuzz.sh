#!/usr/bin/env bash
# Runs the libFuzzer harnesses for SECONDS each (default 60), from their seed corpora:
#   fuzz_cache   the cache (tree, pool, budget, runtime) against the naive oracle (tests/fuzz_corpus)
#   fuzz_traces  the trace readers, the trace model and a cache replay (tests/fuzz_corpus_traces)
# Every radixkv library is built with the fuzzer's coverage and with ASan + UBSan, not just the
# harnesses, so coverage guides the fuzzer inside the code under test and the sanitizers see it.
# New inputs go to scratch folders, so the committed corpora are never modified.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
for p in clang libclang-rt-14-dev; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    sudo=""
    [[ $(id -u) -eq 0 ]] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev
    break
  fi
done
# RADIXKV_SANITIZE instruments every target (and swaps mimalloc for the system allocator, which
# ASan watches); -fsanitize=fuzzer-no-link adds the coverage the harnesses' fuzzer reads.
CXX=clang++ cmake -S . -B build-fuzz -DRADIXKV_FUZZ=ON -DRADIXKV_CUDA=OFF \
  -DRADIXKV_SANITIZE=address,undefined -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_cache fuzz_traces
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for harness in fuzz_cache:tests/fuzz_corpus fuzz_traces:tests/fuzz_corpus_traces; do
  name=${harness%%:*}
  mkdir -p "$scratch/$name"
  echo "== $name, $seconds s"
  build-fuzz/tests/"$name" -max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb=2048 \
    "$scratch/$name" "${harness#*:}"
done
