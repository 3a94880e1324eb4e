#!/usr/bin/env bash
# Installs what radixkv needs (Debian 12; skipped when already there), then configures and builds.
#   BUILD_DIR    build folder (default: build)
#   BUILD_TYPE   CMake build type (default: Release)
#   CMAKE_ARGS   extra configure arguments, e.g. "-DRADIXKV_WERROR=ON"
#   TARGETS      targets to build (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ cmake make libboost-dev libmimalloc-dev libfmt-dev doctest-dev libbenchmark-dev
          libxxhash-dev
          # KV events and the router (events/, router/), and the Python their tests talk to
          pkg-config libmsgpack-cxx-dev libzmq3-dev cppzmq-dev libcpp-httplib-dev
          nlohmann-json3-dev libcli11-dev python3-zmq python3-msgpack
          # the metrics' exposition, read back by Python's own parser (tests/prometheus_oracle.py)
          python3-prometheus-client
          # the command line (tools/): trace readers, reports, flags, config files
          libsimdjson-dev libtomlplusplus-dev
          # the Python module (python/) and its tests
          pybind11-dev python3-dev python3-pytest python3-numpy
          # the remote tier (remote/) and the Redis its tests start (scripts/with-redis.sh)
          libhiredis-dev redis-server redis-tools
          # the disk tier (disk/)
          liburing-dev)
# torch is optional for the module; CI installs it so that the tests that need it run (under
# CI=true they fail rather than skip without it: tests/python/conftest.py).
[[ ${CI:-} == true ]] && packages+=(python3-torch)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "radixkv: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

build_dir=${BUILD_DIR:-build}
# ccache, when the machine has it, makes rebuilds in several checkouts cheap (not needed by CI).
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" "${launcher[@]}" ${CMAKE_ARGS:-} >/dev/null
# shellcheck disable=SC2086
cmake --build "$build_dir" -j"$(nproc)" ${TARGETS:+--target $TARGETS}
