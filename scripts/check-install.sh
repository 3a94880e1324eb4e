#!/usr/bin/env bash
# Installs a built tree into a temporary prefix and takes it in as another project would:
#   1. examples/embed configured with -DCMAKE_PREFIX_PATH=<prefix>, built and run (and, when the
#      build has radixkv::remote, its embed_remote, which links it and hiredis);
#   2. the same main.cpp compiled with `pkg-config --cflags --libs radixkv`, and run (and
#      remote.cpp with radixkv-remote.pc);
#   3. every installed header compiled on its own (none may need a header that is not installed),
#      and no internal header installed: none named *_internals.h, none that only its own
#      folder's sources include (cmake/radixkv_library.cmake, INTERNAL_HEADERS);
#   4. in the consumer, malloc, free and operator new bound to the C and C++ runtime libraries,
#      never to mimalloc (LD_DEBUG=bindings), while radixkv's own heap is mimalloc;
#   5. examples/embed again with radixkv added by add_subdirectory (as FetchContent does): it
#      builds the libraries only, and the consumer's compile line carries none of radixkv's
#      warnings and not the repository root;
#   6. (right after the install) the installed radixkv replays, and runs `radixkv router` (the
#      program radixkv-router, installed beside it);
#   7. when the build has the Python module: the installed package imports from the prefix's
#      site-packages path, with the interpreter it was built for and with the PATH's python3,
#      and runs a match through radixkv.sglang.
# usage: scripts/check-install.sh [BUILD_DIR]   (default: build, as scripts/build.sh leaves it)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
cxx=${CXX:-c++}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
prefix=$scratch/prefix

step() { echo "check-install: $*"; }
fail() {
  echo "check-install: FAILED: $*" >&2
  exit 1
}

# The remote tier is installed when the build has it (RADIXKV_BUILD_REMOTE, on with the tools).
remote=OFF
grep -q '^RADIXKV_BUILD_REMOTE:BOOL=ON' "$build_dir/CMakeCache.txt" && remote=ON

step "cmake --install $build_dir --prefix <tmp>"
cmake --install "$build_dir" --prefix "$prefix" >"$scratch/install.log" ||
  fail "install: $(tail -5 "$scratch/install.log")"

step "no internal header installed"
# Who includes each header, from the checkout's own files (tracked, or new and not ignored).
mapfile -t sources < <(git ls-files -co --exclude-standard -- '*.h' '*.cpp' '*.cu')
((${#sources[@]} > 0)) || fail "no sources listed by git ls-files in $(pwd)"
internal=()
while IFS= read -r header; do
  relative=${header#"$prefix/include/radixkv/"}  # folder/name.h
  [[ $relative == */* ]] || continue               # version.h
  folder=${relative%%/*}
  if [[ $relative == *_internals.h ]]; then
    internal+=("$relative (named *_internals.h)")
    continue
  fi
  users=$(grep -lE "#include [\"<](radixkv/)?$relative[\">]" "${sources[@]}" |
    grep -vxE "$folder/[^/]+\.(cpp|cu)|$relative" || true)
  [[ -n $users ]] || internal+=("$relative (only $folder/'s own sources include it)")
done < <(find "$prefix/include/radixkv" -name '*.h' | sort)
((${#internal[@]} == 0)) ||
  fail "internal headers installed (list them in INTERNAL_HEADERS): ${internal[*]}"

if [[ -x $prefix/bin/radixkv ]]; then
  step "the installed radixkv: a replay, and radixkv router through radixkv-router beside it"
  "$prefix/bin/radixkv" replay --capacity-tokens 1e5 --no-progress >"$scratch/replay.log" 2>&1 ||
    fail "installed radixkv replay: $(tail -3 "$scratch/replay.log")"
  "$prefix/bin/radixkv" router --help >"$scratch/router.log" 2>&1 &&
    grep -q -- --worker "$scratch/router.log" || fail "installed radixkv router --help: $(cat "$scratch/router.log")"
fi

step "examples/embed with find_package(radixkv) from the prefix"
cmake -S examples/embed -B "$scratch/embed" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release -DEMBED_REMOTE=$remote >"$scratch/embed.log" 2>&1 ||
  fail "configure examples/embed: $(cat "$scratch/embed.log")"
cmake --build "$scratch/embed" >>"$scratch/embed.log" 2>&1 ||
  fail "build examples/embed: $(cat "$scratch/embed.log")"
"$scratch/embed/embed" || fail "examples/embed exited with $?"
if [[ $remote == ON ]]; then
  "$scratch/embed/embed_remote" || fail "examples/embed's embed_remote exited with $?"
fi

step "examples/embed/main.cpp with pkg-config"
export PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name radixkv.pc | head -1)")
# shellcheck disable=SC2046
$cxx -std=c++20 examples/embed/main.cpp -o "$scratch/embed-pc" \
  $(pkg-config --cflags --libs radixkv) || fail "pkg-config build"
libdir=$(pkg-config --variable=libdir radixkv)
LD_LIBRARY_PATH=$libdir "$scratch/embed-pc" || fail "the pkg-config build exited with $?"
if [[ $remote == ON ]]; then
  # shellcheck disable=SC2046
  $cxx -std=c++20 examples/embed/remote.cpp -o "$scratch/embed-remote-pc" \
    $(pkg-config --cflags --libs radixkv-remote) || fail "pkg-config build of remote.cpp"
  LD_LIBRARY_PATH=$libdir "$scratch/embed-remote-pc" ||
    fail "the pkg-config build of remote.cpp exited with $?"
fi

step "every installed header on its own"
count=0
while IFS= read -r header; do
  relative=${header#"$prefix/include/"}
  echo "#include <$relative>" >"$scratch/one_header.cpp"
  # shellcheck disable=SC2046
  $cxx -std=c++20 -fsyntax-only $(pkg-config --cflags radixkv) "$scratch/one_header.cpp" ||
    fail "<$relative> does not compile alone"
  count=$((count + 1))
done < <(find "$prefix/include/radixkv" -name '*.h' | sort)
((count > 0)) || fail "no header installed"
echo "  $count headers"

step "the consumer keeps the C library's malloc"
LD_DEBUG=bindings "$scratch/embed/embed" >/dev/null 2>"$scratch/bindings.log"
bound() { grep -E "normal symbol \`$1'" "$scratch/bindings.log" | grep -F "binding file $scratch/embed/embed" || true; }
for symbol in malloc free _Znwm _ZdlPv; do
  lines=$(bound "$symbol")
  [[ -n $lines ]] || continue # the program may not reference it directly
  if grep -q mimalloc <<<"$lines"; then fail "the consumer's $symbol is mimalloc's: $lines"; fi
done
[[ -n $(bound malloc) ]] || fail "no binding of malloc in the consumer seen (LD_DEBUG)"
grep -qE "normal symbol \`mi_malloc'" "$scratch/bindings.log" ||
  grep -qE '^RADIXKV_SANITIZE:STRING=.+' "$build_dir/CMakeCache.txt" ||
  fail "radixkv's heap never bound mi_malloc: is mimalloc in use?"

python_dir=$(sed -n 's/^RADIXKV_PYTHON_INSTALL_DIR:STRING=//p' "$build_dir/CMakeCache.txt")
if grep -q '^RADIXKV_BUILD_PYTHON:BOOL=ON' "$build_dir/CMakeCache.txt"; then
  step "the Python package from <tmp>/$python_dir"
  [[ -f $prefix/$python_dir/radixkv/__init__.py ]] || fail "no radixkv package in $prefix/$python_dir"
  built_for=$(sed -n 's/^Python3_EXECUTABLE:FILEPATH=//p' "$build_dir/CMakeCache.txt")
  for interpreter in "$built_for" "$(command -v python3 || true)"; do
    [[ -n $interpreter ]] || continue
    (cd "$scratch" && PYTHONPATH=$prefix/$python_dir "$interpreter" -c '
import radixkv, radixkv.sglang as s
assert radixkv.__file__.startswith(__import__("sys").argv[1]), radixkv.__file__
c = s.RadixCache(None, None, page_size=1)
c.insert(s.RadixKey([1, 2, 3]))
assert c.total_size() == 3
' "$prefix") || fail "import radixkv from the prefix with $interpreter"
  done
fi

step "examples/embed with add_subdirectory(<this checkout>)"
root=$(pwd)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S examples/embed -B "$scratch/sub" -DRADIXKV_SOURCE_DIR="$root" -DRADIXKV_WERROR=ON "${launcher[@]}" \
  -DEMBED_REMOTE=$remote \
  -DRADIXKV_CUDA=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >"$scratch/sub.log" 2>&1 ||
  fail "configure with add_subdirectory: $(cat "$scratch/sub.log")"
cmake --build "$scratch/sub" -j2 >>"$scratch/sub.log" 2>&1 ||
  fail "build with add_subdirectory: $(tail -20 "$scratch/sub.log")"
"$scratch/sub/embed" || fail "examples/embed (add_subdirectory) exited with $?"
if [[ $remote == ON ]]; then
  "$scratch/sub/embed_remote" || fail "embed_remote (add_subdirectory) exited with $?"
fi
for target in radixkv radixkv_bench test_runtime; do
  [[ ! -e $(find "$scratch/sub" -name "$target" -type f -print -quit) ]] ||
    fail "add_subdirectory built $target: tests, benchmarks and tools should be off"
done
command=$(/usr/bin/python3 - "$scratch/sub/compile_commands.json" <<'PY'
import json, sys
for entry in json.load(open(sys.argv[1])):
    if entry["file"].endswith("examples/embed/main.cpp"):
        print(entry["command"])
PY
)
[[ -n $command ]] || fail "no compile command for examples/embed/main.cpp"
for flag in -Wall -Wextra -Wpedantic -Werror "-I$root " "-I$root/tests"; do
  [[ "$command " != *"$flag"* ]] || fail "radixkv leaks '$flag' into its consumer: $command"
done
step "ok"
