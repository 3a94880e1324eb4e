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
# scratch directory and built there (Release; ccache when present). The CUDA backend and the Python
# module are left out: no mutant touches them, and the module's pytest files would add minutes per
# mutant to what the C++ suite already checks of the core.
# The unmutated suite must pass first. Then, for each mutant: apply its one-line edit (an edit that
# does not apply exactly once is an error that stops the run: a moved line must never pass for a
# result), rebuild the test executables incrementally, run every test not labelled `slow` (each
# doctest executable once for all its cases; the quickest first; stopping at the first failure),
# restore the file. One line per mutant:
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
if ! (cd "$src" && BUILD_DIR=build CMAKE_ARGS="-DRADIXKV_CUDA=OFF -DRADIXKV_BUILD_PYTHON=OFF" scripts/build.sh) >"$log" 2>&1; then
  tail -20 "$log" >&2
  die "the unmutated tree does not build (log: $log)"
fi

# ---- The fast suite, from ctest's own list: every test not labelled `slow`. A doctest executable
# runs once for all its cases (its slow cases excluded) and stops at its first failed check; any
# other test runs as ctest runs it. Each `run NAME DIR SKIP_CODE KIND COMMAND` of $suite is one,
# and `target T` names what the tests need built (every executable of the build directory that a
# command names: add_executable's name is the file's).
suite=$scratch/suite.sh
ctest --test-dir "$src/build" --show-only=json-v1 | /usr/bin/python3 -c '
import json, os, shlex, sys
build = sys.argv[1]
doctest, plain, targets = {}, [], set()
for test in json.load(sys.stdin)["tests"]:
    props = {p["name"]: p["value"] for p in test.get("properties", [])}
    command, slow = test["command"], "slow" in props.get("LABELS", [])
    env = ["env", *props["ENVIRONMENT"]] if props.get("ENVIRONMENT") else []  # as ctest sets it
    where = (props.get("WORKING_DIRECTORY", build), str(props.get("SKIP_RETURN_CODE", "")), env)
    if not slow:
        targets.update(os.path.basename(word) for word in command
                       if word.startswith(build + "/") and os.access(word, os.X_OK))
    # A test behind a launcher (scripts/with-redis.sh [--cluster] EXE --test-case=...) runs as
    # ctest runs it, one case per launch: its cases expect a server of their own.
    if len(command) == 2 and command[1].startswith("--test-case="):
        run = doctest.setdefault(command[0], {"where": where, "fast": 0, "slow": []})
        if slow:
            run["slow"].append(test["name"].replace(",", "\\,"))
        else:
            run["fast"] += 1
    elif not slow:
        plain.append((test["name"], where, command))
for exe, run in doctest.items():
    if run["fast"]:
        command = [exe, "--abort-after=1"]
        if run["slow"]:
            command.append("--test-case-exclude=" + ",".join(run["slow"]))
        plain.append((os.path.basename(exe), run["where"], command, "doctest"))
for name, (dir, skip, env), command, *kind in plain:
    print("run", *map(shlex.quote,
                      [name, dir, skip, (kind or ["plain"])[0], shlex.join(env + command)]))
for target in sorted(targets):
    print("target", shlex.quote(target))
' "$src/build" >"$suite"
names=() dirs=() skip_codes=() kinds=() commands=() targets=()
run() { names+=("$1") dirs+=("$2") skip_codes+=("$3") kinds+=("$4") commands+=("$5"); }
target() { targets+=("$1"); }
# shellcheck source=/dev/null
source "$suite"
((${#names[@]} > 0)) || die "ctest lists no test outside the slow label"
if ! cmake --build "$src/build" -j"$jobs" --target "${targets[@]}" >"$log" 2>&1; then
  tail -20 "$log" >&2
  die "the test executables do not build as targets ${targets[*]} (log: $log)"
fi

# Runs test k; prints "<seconds> <status>", where a status of 0 means it passed (or only
# skipped); its output goes to $2.
run_test() {
  local k=$1 out=$2 limit=$3 t0 status=0
  t0=$(date +%s.%N)
  (cd "${dirs[k]}" && eval "timeout -k 5 $limit ${commands[k]}") </dev/null >"$out" 2>&1 ||
    status=$?
  [[ $status != "${skip_codes[k]}" ]] || status=0
  echo "$(echo "$(date +%s.%N) - $t0" | bc) $status"
}

# Baseline: the unmutated suite must pass; its times order the runs (quickest first) and set
# each test's time limit (20 times its own, at least 60 s).
order=() limits=()
for k in "${!names[@]}"; do
  read -r seconds status < <(run_test "$k" "$scratch/baseline.out" 600)
  if ((status != 0)); then
    cat "$scratch/baseline.out" >&2
    die "the unmutated suite fails in ${names[k]}: fix that first"
  fi
  limits[k]=$(echo "l = $seconds * 20; if (l < 60) l = 60; scale = 0; l / 1" | bc)
  order+=("$seconds $k")
done
mapfile -t order < <(printf '%s\n' "${order[@]}" | sort -g | cut -d' ' -f2)
echo "mutate.sh: baseline passes (${#order[@]} test runs, $((SECONDS - start_time)) s so far)"

# Prints the verdict for the current build of the scratch tree.
verdict() {
  local k seconds status out=$scratch/mutant.out name
  for k in "${order[@]}"; do
    read -r seconds status < <(run_test "$k" "$out" "${limits[k]}")
    ((status == 0)) && continue
    # timeout(1) could not run it: a fault of this script or the machine, never a kill.
    ((status < 125 || status > 127)) || die "could not run ${names[k]} (status $status): $(head -3 "$out")"
    if ((status == 124 || status == 137)); then
      echo "killed by ${names[k]} (no end after ${limits[k]} s)"
    elif [[ ${kinds[k]} == doctest ]]; then
      name=$(sed -n 's/^TEST CASE: *//p' "$out" | head -1)
      echo "killed by ${name:-exit status $status} [${names[k]}]"
    else
      echo "killed by ${names[k]}"
    fi
    return
  done
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
  echo "score: $killed killed / $counted = $(awk -v k="$killed" -v c="$counted" 'BEGIN { printf "%.1f", 100 * k / c }') %" \
    "($survived survived, $stillborn stillborn, ${#selected[@]} mutants)"
else
  echo "score: no mutant compiled ($stillborn stillborn)"
fi
((survived == 0)) || echo "survivors: ${survivors[*]}"
echo "time: $((SECONDS - start_time)) s"
((survived == 0))
