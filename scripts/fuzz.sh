#!/usr/bin/env bash
# Runs the libFuzzer harness (tests/fuzz_cache.cpp) for SECONDS (default 60) from the seed corpus.
# New inputs go to a scratch folder, so the committed corpus is never modified.
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
CXX=clang++ cmake -S . -B build-fuzz -DRADIXKV_FUZZ=ON -DRADIXKV_CUDA=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_cache
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
build-fuzz/tests/fuzz_cache -max_total_time="$seconds" -print_final_stats=1 "$scratch" tests/fuzz_corpus
