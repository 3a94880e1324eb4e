#!/usr/bin/env bash
# Installs a built tree into a temporary prefix and takes it in as another project would:
#   1. examples/embed configured with -DCMAKE_PREFIX_PATH=<prefix>, built and run;
#   2. the same main.cpp compiled with `pkg-config --cflags --libs radixkv`, and run;
#   3. every installed header compiled on its own (none may need a header that is not installed);
#   4. in the consumer, malloc, free and operator new bound to the C and C++ runtime libraries,
#      never to mimalloc (LD_DEBUG=bindings), while radixkv's own heap is mimalloc.
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

step "cmake --install $build_dir --prefix <tmp>"
cmake --install "$build_dir" --prefix "$prefix" >"$scratch/install.log" ||
  fail "install: $(tail -5 "$scratch/install.log")"

step "examples/embed with find_package(radixkv) from the prefix"
cmake -S examples/embed -B "$scratch/embed" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >"$scratch/embed.log" 2>&1 ||
  fail "configure examples/embed: $(cat "$scratch/embed.log")"
cmake --build "$scratch/embed" >>"$scratch/embed.log" 2>&1 ||
  fail "build examples/embed: $(cat "$scratch/embed.log")"
"$scratch/embed/embed" || fail "examples/embed exited with $?"

step "examples/embed/main.cpp with pkg-config"
export PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name radixkv.pc | head -1)")
# shellcheck disable=SC2046
$cxx -std=c++20 examples/embed/main.cpp -o "$scratch/embed-pc" \
  $(pkg-config --cflags --libs radixkv) || fail "pkg-config build"
libdir=$(pkg-config --variable=libdir radixkv)
LD_LIBRARY_PATH=$libdir "$scratch/embed-pc" || fail "the pkg-config build exited with $?"

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
step "ok"
