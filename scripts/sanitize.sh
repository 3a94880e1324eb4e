#!/usr/bin/env bash
# Builds and runs the test suite under sanitizers, then scripts/check-tests.sh on that run.
#   scripts/sanitize.sh address,undefined   every test but those labelled slow, under ASan + UBSan
#   scripts/sanitize.sh thread              the multi-threaded tests under TSan
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizers=${1:-address,undefined}
build_dir=build-${sanitizers//,/-}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# libzmq is not TSan-instrumented: scripts/tsan.supp says why its reports are noise.
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:suppressions=$PWD/scripts/tsan.supp}
targets=""
[[ $sanitizers == thread ]] && targets="test_shared_runtime test_event_publisher test_router_feed test_runtime_events test_remote test_remote_prefetcher test_remote_staging"  # labelled `threads`
# Warnings are not errors here: the normal build enforces them, and GCC 12's -Wmaybe-uninitialized
# misfires on libstdc++'s std::regex once sanitizer instrumentation is in. No benchmarks: the
# Release suite runs their test; compiling them again under a sanitizer checks nothing more.
BUILD_DIR=$build_dir BUILD_TYPE=RelWithDebInfo TARGETS=$targets \
  CMAKE_ARGS="${CMAKE_ARGS:-} -DRADIXKV_WERROR=OFF -DRADIXKV_SANITIZE=$sanitizers -DRADIXKV_CUDA=OFF -DRADIXKV_BUILD_BENCH=OFF" \
  scripts/build.sh
if [[ $sanitizers == thread ]]; then
  ctest --test-dir "$build_dir" --output-on-failure -j2 -L threads
else
  ctest --test-dir "$build_dir" --output-on-failure -j2 -LE slow
fi
scripts/check-tests.sh "$build_dir"
