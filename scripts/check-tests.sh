#!/usr/bin/env bash
# The guard CI runs after ctest: it fails when ctest's last run tested less than it reports.
#   scripts/check-tests.sh [BUILD_DIR]        (default: build; run ctest there first)
#
# What it reads:
#   - BUILD_DIR/Testing/Temporary/LastTest.log, where ctest keeps the command and the whole output
#     of every test of its last run (whole: --output-junit cuts a passed test's output short).
#     The shared test main (tests/test_main.cpp) ends every run with the line
#     "[radixkv cases] ran=N skipped=S", and RADIXKV_SKIP (tests/skip.h) prints
#     "[radixkv skipped] <case>: <reason>".
#   - `ctest -N -V`: every ctest entry and its command. Entries whose command has no
#     --test-case=... are not doctest cases: check 1 alone applies to the pytest files (a command
#     with `-m pytest`), whose tests/python/conftest.py prints
#     "[radixkv pytest] passed=P skipped=S failed=F" and "[radixkv skipped] <test>: <reason>";
#     other entries are left alone.
#   - `<executable> --count` for each test executable: the doctest cases it defines.
#
# It fails when
#   1. an entry of the last run printed no case line (its executable does not use the shared main,
#      or it died) or ran zero test cases (a pytest file: no pytest line, or no test passed or
#      skipped);
#   2. an executable defines a different number of cases than ctest has entries for it (a name
#      that ctest's discovery split at ';', a duplicate name, a discovery older than the binary);
#   3. the cases that ran, skipped ones included, differ from the cases the executables define
#      less those whose entries the last run left out on purpose (-L, -LE, -R ...).
# It lists every skipped case with its reason; skipped cases count as run for check 3 (they ran
# and said why they could not test).
set -euo pipefail

build=${1:-build}
log=$build/Testing/Temporary/LastTest.log
[[ -d $build ]] || { echo "check-tests: no build folder $build" >&2; exit 2; }
[[ -f $log ]] || { echo "check-tests: $log is missing: run ctest in $build first" >&2; exit 2; }

failures=0
fail() {
  echo "check-tests: FAIL: $*" >&2
  failures=$((failures + 1))
}

# `ctest -N` rewrites LastTest.log as an empty run: read a copy, and put the log back after.
last_log=$(mktemp)
trap 'rm -f "$last_log"' EXIT
cp "$log" "$last_log"

# Every doctest entry ctest knows: executable <TAB> entry name.
# The executable is the last word before --test-case=: a launcher may come first (ctest runs the
# Redis tests through scripts/with-redis.sh [--cluster]).
awk_last_word='function last_word(text,   n, words) { n = split(text, words, " "); gsub(/"/, "", words[n]); return words[n] }'
all_entries=$(ctest --test-dir "$build" -N -V | awk "$awk_last_word"'
  match($0, /^[0-9]+: Test command: /) { command = substr($0, RLENGTH + 1); next }
  match($0, /^ *Test +#[0-9]+: /) {
    at = index(command, " \"--test-case=")
    if (at > 0) print last_word(substr(command, 1, at - 1)) "\t" substr($0, RLENGTH + 1)
    command = ""
  }')
cp "$last_log" "$log"

# Every doctest entry of the last run: executable <TAB> ran <TAB> skipped <TAB> entry name, where
# ran is -1 when the output has no case line; then "skip <TAB> reason" for each skip marker.
last_run=$(awk "$awk_last_word"'
  function finish() {
    if (name != "" && doctest) print executable "\t" ran "\t" skipped "\t" name
    if (name != "" && pytest) print "pytest\t" passed "\t" skipped "\t" name
    name = ""
  }
  match($0, /^[0-9]+\/[0-9]+ Test: /) {
    finish()
    name = substr($0, RLENGTH + 1); ran = -1; passed = -1; skipped = 0; doctest = 0; pytest = 0
    next
  }
  name != "" && /^Command: "/ {
    at = index($0, " \"--test-case=")
    executable = last_word(substr($0, 10, at > 0 ? at - 10 : length($0)))
    doctest = at > 0
    pytest = index($0, "\"-m\" \"pytest\"") > 0; next
  }
  name != "" && match($0, /^\[radixkv cases\] ran=[0-9]+ skipped=[0-9]+$/) {
    split($0, parts, /[= ]/); ran = parts[4]; skipped = parts[6]; next
  }
  name != "" && pytest && match($0, /^\[radixkv pytest\] passed=[0-9]+ skipped=[0-9]+ failed=[0-9]+$/) {
    split($0, parts, /[= ]/); passed = parts[4]; skipped = parts[6]; next
  }
  name != "" && (doctest || pytest) && /^\[radixkv skipped\] / { print "skip\t" substr($0, 19) }
  END { finish() }' "$last_log")

# Check 1: every entry of the last run ran at least one case.
declare -A ran_by_executable=() entries_by_executable=() run_entries_by_executable=()
ran_total=0 skipped_total=0 run_entries=0
pytest_entries=0 pytest_passed=0 pytest_skipped=0
while IFS=$'\t' read -r executable ran skipped name; do
  [[ -z $executable || $executable == skip ]] && continue
  if [[ $executable == pytest ]]; then
    # A pytest file (tests/python/conftest.py prints the line): it must have run a test.
    pytest_entries=$((pytest_entries + 1))
    if ((ran < 0)); then
      fail "\"$name\" printed no [radixkv pytest] line: not run with tests/python/conftest.py, or it died"
    elif ((ran + skipped == 0)); then
      fail "\"$name\" ran zero pytest tests"
    fi
    ((ran < 0)) || { pytest_passed=$((pytest_passed + ran)); pytest_skipped=$((pytest_skipped + skipped)); }
    continue
  fi
  run_entries=$((run_entries + 1))
  run_entries_by_executable[$executable]=$((${run_entries_by_executable[$executable]:-0} + 1))
  if ((ran < 0)); then
    fail "\"$name\" ($executable) printed no [radixkv cases] line: not built with tests/test_main.cpp, or it died"
    continue
  fi
  if ((ran == 0)); then fail "\"$name\" ($executable) ran zero test cases"; fi
  ran_by_executable[$executable]=$((${ran_by_executable[$executable]:-0} + ran))
  ran_total=$((ran_total + ran))
  skipped_total=$((skipped_total + skipped))
done <<<"$last_run"
((run_entries > 0)) || fail "the last ctest run in $build ran no doctest entry"

while IFS=$'\t' read -r executable name; do
  if [[ -n $executable ]]; then
    entries_by_executable[$executable]=$((${entries_by_executable[$executable]:-0} + 1))
  fi
done <<<"$all_entries"

# Checks 2 and 3, executable by executable.
defined_total=0 left_out_total=0
for executable in $(printf '%s\n' "${!entries_by_executable[@]}" | sort); do
  entries=${entries_by_executable[$executable]}
  run=${run_entries_by_executable[$executable]:-0}
  defined=$("$executable" --count | sed -n 's/.*passing the current filters: \([0-9]*\)$/\1/p' || true)
  if [[ -z $defined ]]; then
    fail "$executable --count did not say how many test cases it defines"
    continue
  fi
  ((defined == entries)) ||
    fail "$executable defines $defined test cases, ctest has $entries entries for it (a name split at ';'? rebuild to rediscover)"
  left_out=$((entries - run))
  expected=$((defined - left_out))
  ran=${ran_by_executable[$executable]:-0}
  ((ran == expected)) ||
    fail "$executable: $ran test cases ran, $expected expected ($defined defined, $left_out left out of the run)"
  defined_total=$((defined_total + defined))
  left_out_total=$((left_out_total + left_out))
done

while IFS=$'\t' read -r tag reason; do
  if [[ $tag == skip ]]; then echo "check-tests: skipped: $reason"; fi
done <<<"$last_run"

echo "check-tests: $run_entries ctest entries ran $ran_total test cases ($skipped_total skipped);" \
  "the executables define $defined_total, $left_out_total left out of this run"
if ((pytest_entries > 0)); then
  echo "check-tests: $pytest_entries pytest files: $pytest_passed tests passed, $pytest_skipped skipped"
fi
if ((failures > 0)); then
  echo "check-tests: $failures problem(s): ctest passing does not mean that every test case ran once" >&2
  exit 1
fi
