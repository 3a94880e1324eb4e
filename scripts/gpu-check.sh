#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds radixkv's CUDA page backend and tier copier (Release),
# runs their tests and the remote tier's staging through pinned host pages (failing if any device
# test skipped), then checks and times page copy, gather
# and scatter, and the tier copier's D2H and H2D, against plain cudaMemcpy, printing tables.
# Every method is checked byte for byte on random pages before it is timed. Meant to finish in
# under 4 minutes on an H200 with 16 cores (mostly the build). Needs nvcc and the Debian dev packages scripts/build.sh
# lists (it installs nothing: GPU machines may be offline).
#   BUILD_DIR                  build folder (default: build-gpu-check)
#   RADIXKV_CUDA_ARCHITECTURES CUDA architectures to build (default: 90, H100/H200)
#   Arguments go to radixkv_gpu_check: --arena-mib N (default 1024), --reps N (default 10).
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
  echo "gpu-check: $*" >&2
  exit 1
}

if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
command -v nvcc >/dev/null || fail "nvcc not found (install the CUDA toolkit or put it on PATH)"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
else
  echo "gpu-check: nvidia-smi not found; the CUDA runtime will say whether a device answers"
fi

build=${BUILD_DIR:-build-gpu-check}
jobs=$(nproc 2>/dev/null || echo 4)
configure_log=$(mktemp)
trap 'rm -f "$configure_log"' EXIT

echo "== configure ($build)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DRADIXKV_WERROR=ON \
  -DRADIXKV_CUDA_ARCHITECTURES="${RADIXKV_CUDA_ARCHITECTURES:-90}" >"$configure_log" 2>&1 ||
  { cat "$configure_log"; fail "configure failed"; }
grep -q "CUDA backend ON" "$configure_log" ||
  { cat "$configure_log"; fail "CMake did not enable the CUDA backend"; }

echo "== build"
cmake --build "$build" -j "$jobs" --target test_page_backend test_page_copier test_remote_staging \
  radixkv_gpu_check

echo "== CUDA tests"
# On a GPU machine a skipped device test is a failure: it would hide a broken driver or device.
# The only cases that skip there are the ones that check the refusal without a device; they are
# left out, and every other case must run (the shared test main ends with "[radixkv cases]
# ran=N skipped=S" and exits 77 when every case skipped).
test_log=$(mktemp)
trap 'rm -f "$configure_log" "$test_log"' EXIT
for test in test_page_backend test_page_copier test_remote_staging; do
  status=0
  timeout 300 "$build/tests/$test" --test-case-exclude='without a device*' 2>&1 | tee "$test_log" ||
    status=$?
  if ((status == 77)) || ! grep -q '^\[radixkv cases\] ran=[1-9][0-9]* skipped=0$' "$test_log"; then
    fail "$test skipped device tests (see the [radixkv skipped] lines above): no usable CUDA device"
  fi
  ((status == 0)) || fail "$test failed (exit status $status)"
done

echo "== correctness and bandwidth"
timeout 300 "$build/tests/radixkv_gpu_check" "$@"
echo "gpu-check: done in ${SECONDS}s"
