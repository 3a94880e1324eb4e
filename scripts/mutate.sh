#!/usr/bin/env bash
# Mutation testing: does the fast suite notice small, realistic bugs?
#
#   scripts/mutate.sh                  every mutant of scripts/mutants/list.sh
#   scripts/mutate.sh 'sched-*' lfu-ties-insertion   only these ids (shell patterns)
#   scripts/mutate.sh --list           print the ids and what each one breaks
# Options: -j N (build jobs, default: nproc), --keep (keep the scratch directory),
#          --dir DIR (scratch directory to use and keep; a second run there rebuilds little).
#
# The tree (git's tracked files and untracked files that are not ignored) is copied once into a
# scratch directory and built there (Release, CUDA off: no mutant touches it; ccache when present).
# The unmutated suite must pass first. Then, for each mutant: apply its one-line edit (an edit that
# does not apply exactly once is an error that stops the run: a moved line must never pass for a
# result), rebuild the test executables incrementally, run every test not labelled `slow` (test
# executables directly, quickest first, stopping at the first failure), restore the file.
# One line per mutant:
#   killed by <test case> [<executable>]   a test failed, crashed, or ran past its time limit
#   SURVIVED                               the fast suite passed with the bug in
#   stillborn                              the mutant did not compile (not counted in the score)
# and at the end the score, killed / (mutants - stillborn), and the time taken. Exit status 0 when
# nothing survived, 1 otherwise, 2 on a usage or setup error. Not part of CI (minutes per run).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die() {
  echo "mutate.sh: $*" >&2
  exit 2
}

jobs=$(nproc)
keep=false
scratch=""
list_only=false
patterns=()
while (($#)); do
  case $1 in
    -j) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "-j needs a positive number"; jobs=$2; shift 2 ;;
    -j*) [[ ${1#-j} =~ ^[1-9][0-9]*$ ]] || die "-j needs a positive number"; jobs=${1#-j}; shift ;;
    --keep) keep=true; shift ;;
    --dir) [[ -n ${2:-} ]] || die "--dir needs a directory"; scratch=$2; keep=true; shift 2 ;;
    --list) list_only=true; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) patterns+=("$1"); shift ;;
  esac
done

# ---- The list: each `mutant ID FILE DESCRIPTION OLD NEW` replaces the text OLD, which must occur
# exactly once in FILE, by NEW.
ids=() files=() descriptions=() olds=() news=()
mutant() {
  (($# == 5)) || die "mutant ${1:-?}: expected ID FILE DESCRIPTION OLD NEW, got $# fields"
  local id
  for id in "${ids[@]}"; do [[ $id != "$1" ]] || die "mutant id $1 is listed twice"; done
  ids+=("$1") files+=("$2") descriptions+=("$3") olds+=("$4") news+=("$5")
}
# shellcheck source=mutants/list.sh
source "$root/scripts/mutants/list.sh"

selected=()
for i in "${!ids[@]}"; do
  if ((${#patterns[@]} == 0)); then
    selected+=("$i")
    continue
  fi
  for pattern in "${patterns[@]}"; do
    # shellcheck disable=SC2053  # the pattern is a glob on purpose
    if [[ ${ids[i]} == $pattern ]]; then
      selected+=("$i")
      break
    fi
  done
done
for pattern in "${patterns[@]}"; do
  matched=false
  for i in "${selected[@]}"; do
    # shellcheck disable=SC2053
    [[ ${ids[i]} == $pattern ]] && matched=true
  done
  $matched || die "no mutant id matches '$pattern' (see --list)"
done

# Replaces the single occurrence of OLD by NEW in FILE (in place, or into OUT when given); fails,
# writing nothing, unless OLD occurs exactly once. OLD may span lines, to make it unique.
apply_edit() {
  OLD=$2 NEW=$3 /usr/bin/python3 -c '
import os, sys
source, target = sys.argv[1], sys.argv[2]
try:
    text = open(source, encoding="utf-8").read()
except OSError as error:
    sys.exit(error.strerror)
old, new = os.environ["OLD"], os.environ["NEW"]
if text.count(old) != 1:
    sys.exit(f"the text to replace occurs {text.count(old)} times, not once")
open(target, "w", encoding="utf-8").write(text.replace(old, new))
' "$1" "${4:-$1}"
}

if $list_only; then
  # Also checks that every edit still applies to the checkout, without changing it.
  check=$(mktemp)
  trap 'rm -f "$check"' EXIT
  for i in "${selected[@]}"; do
    if problem=$(apply_edit "$root/${files[i]}" "${olds[i]}" "${news[i]}" "$check" 2>&1); then
      problem=""
    else
      problem="  [DOES NOT APPLY: $problem]"
    fi
    printf '%-30s %-34s %s%s\n' "${ids[i]}" "${files[i]}" "${descriptions[i]}" "$problem"
  done
  exit 0
fi

# ---- The scratch copy.
start_time=$SECONDS
if [[ -z $scratch ]]; then
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/radixkv-mutate.XXXXXX")
fi
mkdir -p "$scratch/src"
scratch=$(cd "$scratch" && pwd)
src=$scratch/src
cleanup() {
  if $keep; then
    echo "scratch directory kept: $scratch"
  else
    rm -rf "$scratch"
  fi
}
trap cleanup EXIT

# Copy what differs and remove what the tree no longer has (a kept directory keeps its build; a
# file that is rewritten gets a new mtime, so make rebuilds what depends on it).
tree_files=$scratch/files.txt
(cd "$root" && git ls-files --cached --others --exclude-standard | sort -u) >"$tree_files"
while IFS= read -r f; do
  [[ -f $root/$f ]] || continue  # deleted in the working tree
  if ! cmp -s "$root/$f" "$src/$f"; then
    mkdir -p "$src/$(dirname "$f")"
    cp "$root/$f" "$src/$f"
  fi
done <"$tree_files"
(cd "$src" && find . -path ./build -prune -o -type f -print | sed 's|^\./||' | sort) |
  comm -13 "$tree_files" - | while IFS= read -r f; do rm -f "$src/$f"; done

echo "mutate.sh: ${#selected[@]} mutants, scratch $scratch, -j$jobs"
export CCACHE_BASEDIR=$src  # paths relative to the copy, so that cached objects serve any copy
log=$scratch/build.log
if ! (cd "$src" && BUILD_DIR=build CMAKE_ARGS="-DRADIXKV_CUDA=OFF" scripts/build.sh) >"$log" 2>&1; then
  tail -20 "$log" >&2
  die "the unmutated tree does not build (log: $log)"
fi

# ---- The fast suite: every test executable with a test not labelled slow, with its working
# directory and the slow cases it must leave out (none today: `slow` labels whole executables).
# Columns are tab-separated and a possibly empty one comes last (read collapses empty fields).
suite=$scratch/suite.tsv
ctest --test-dir "$src/build" --show-only=json-v1 | /usr/bin/python3 -c '
import json, sys
runs = {}
for test in json.load(sys.stdin)["tests"]:
    props = {p["name"]: p["value"] for p in test.get("properties", [])}
    exe = test["command"][0]
    run = runs.setdefault(exe, {"dir": props.get("WORKING_DIRECTORY", "."), "fast": 0, "slow": []})
    if "slow" in props.get("LABELS", []):
        run["slow"].append(test["name"].replace(",", "\\,"))
    else:
        run["fast"] += 1
for exe, run in runs.items():
    if run["fast"]:
        print(exe, run["dir"], ",".join(run["slow"]), sep="\t")
' >"$suite"
[[ -s $suite ]] || die "ctest lists no test outside the slow label"
mapfile -t targets < <(cut -f1 "$suite" | xargs -n1 basename)

# Runs one test executable; prints "<seconds> <exit status>"; its output goes to $2.
run_exe() {
  local exe=$1 out=$2 dir=$3 exclude=$4 limit=$5 t0 status=0 args=(--abort-after=1)
  [[ -n $exclude ]] && args+=("--test-case-exclude=$exclude")
  t0=$(date +%s.%N)
  (cd "$dir" && timeout -k 5 "$limit" "$exe" "${args[@]}") </dev/null >"$out" 2>&1 || status=$?
  echo "$(echo "$(date +%s.%N) - $t0" | bc) $status"
}

# Baseline: the unmutated suite must pass; its times order the runs (quickest first) and set
# each executable's time limit (20 times its own, at least 60 s).
order=$scratch/order.tsv
: >"$order"
while IFS=$'\t' read -r exe dir exclude; do
  read -r seconds status < <(run_exe "$exe" "$scratch/baseline.out" "$dir" "$exclude" 600)
  if ((status != 0)); then
    cat "$scratch/baseline.out" >&2
    die "the unmutated suite fails in $(basename "$exe"): fix that first"
  fi
  limit=$(echo "l = $seconds * 20; if (l < 60) l = 60; scale = 0; l / 1" | bc)
  printf '%s\t%s\t%s\t%s\t%s\n' "$seconds" "$exe" "$dir" "$limit" "$exclude" >>"$order"
done <"$suite"
sort -g -o "$order" "$order"
echo "mutate.sh: baseline passes ($(wc -l <"$order") test executables, $((SECONDS - start_time)) s so far)"

# Prints the verdict for the current build of the scratch tree.
verdict() {
  local seconds exe dir exclude limit status out=$scratch/mutant.out name
  while IFS=$'\t' read -r _ exe dir limit exclude; do
    read -r seconds status < <(run_exe "$exe" "$out" "$dir" "$exclude" "$limit")
    ((status == 0)) && continue
    # timeout(1) could not run it: a fault of this script or the machine, never a kill.
    ((status < 125 || status > 127)) || die "could not run $exe (status $status): $(head -3 "$out")"
    if ((status == 124 || status == 137)); then
      echo "killed by $(basename "$exe") (no end after ${limit} s)"
      return
    fi
    name=$(sed -n 's/^TEST CASE: *//p' "$out" | head -1)
    echo "killed by ${name:-exit status $status} [$(basename "$exe")]"
    return
  done <"$order"
  echo "SURVIVED"
}

killed=0 survived=0 stillborn=0
survivors=()
n=0
for i in "${selected[@]}"; do
  n=$((n + 1))
  id=${ids[i]} file=$src/${files[i]}
  [[ -f $file ]] || die "mutant $id: ${files[i]} does not exist"
  cp -p "$file" "$scratch/pristine"
  if ! problem=$(apply_edit "$file" "${olds[i]}" "${news[i]}" 2>&1); then
    die "mutant $id does not apply to ${files[i]}: $problem"$'\n'"  text: ${olds[i]}"
  fi
  mutant_start=$SECONDS
  if cmake --build "$src/build" -j"$jobs" --target "${targets[@]}" >"$log" 2>&1; then
    result=$(verdict) || exit 2  # verdict() said why
  else
    result="stillborn"
    cp "$log" "$scratch/$id.build.log"  # why it did not compile, for --keep
  fi
  cp "$scratch/pristine" "$file"  # a fresh mtime: the next build recompiles it
  case $result in
    killed*) killed=$((killed + 1)) ;;
    SURVIVED) survived=$((survived + 1)); survivors+=("$id") ;;
    stillborn) stillborn=$((stillborn + 1)) ;;
  esac
  printf '[%2d/%d] %-30s %-9s %s\n' "$n" "${#selected[@]}" "$id" "$((SECONDS - mutant_start)) s" "$result"
done

counted=$((killed + survived))
echo
if ((counted > 0)); then
  echo "score: $killed killed / $counted = $(echo "scale = 1; 100 * $killed / $counted" | bc) %" \
    "($survived survived, $stillborn stillborn, ${#selected[@]} mutants)"
else
  echo "score: no mutant compiled ($stillborn stillborn)"
fi
((survived == 0)) || echo "survivors: ${survivors[*]}"
echo "time: $((SECONDS - start_time)) s"
((survived == 0))
