#!/usr/bin/env bash
# The test harness checked against a probe (tests/harness_probe.cpp): the shared main's exit codes
# and lines (tests/test_main.cpp), then scripts/check-tests.sh on small ctest projects written
# here by hand, one healthy and three broken the ways the guard exists for.
#   tests/check_harness.sh PROBE PROBE_SPLIT CHECK_TESTS_SH SKIP_CODE
set -uo pipefail
probe=$1 probe_split=$2 guard=$3 skip_code=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# expect WHAT STATUS TEXT... -- COMMAND...: COMMAND exits with STATUS and prints every TEXT.
expect() {
  local what=$1 status=$2
  shift 2
  local texts=()
  while [[ $1 != -- ]]; do
    texts+=("$1")
    shift
  done
  shift
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  local ok=1
  ((rc == status)) || ok=0
  for text in "${texts[@]}"; do
    grep -qF -- "$text" <<<"$out" || ok=0
  done
  if ((ok)); then
    echo "ok: $what"
  else
    echo "FAIL: $what: exit $rc (wanted $status), wanted the lines: ${texts[*]}"
    while IFS= read -r line; do echo "    | $line"; done <<<"$out"
    failures=$((failures + 1))
  fi
}

# The shared main.
expect "a passing case exits 0 and says it ran" 0 "[radixkv cases] ran=1 skipped=0" -- \
  "$probe" "--test-case=probe: passes"
expect "a skipping case exits with the skip code and says why" "$skip_code" \
  "[radixkv skipped] probe: skips: always, reason 42" "[radixkv cases] ran=1 skipped=1" -- \
  "$probe" "--test-case=probe: skips"
expect "a failure before a skip still fails" 1 "[radixkv cases] ran=1 skipped=1" -- \
  "$probe" "--test-case=probe: fails\, then skips"
expect "a filter that matches nothing fails" 1 "[radixkv cases] ran=0 skipped=0" \
  "no test case ran" -- "$probe" "--test-case=probe: pass"
expect "a run where only some cases skip exits 0" 0 "[radixkv cases] ran=2 skipped=1" -- \
  "$probe" "--test-case=probe: passes,probe: skips"
expect "--count still answers" 0 "passing the current filters: 3" -- "$probe" --count
expect "--list-test-cases still answers" 0 "probe: passes" -- "$probe" --list-test-cases
expect "--list-test-cases refuses a name with ';'" 1 "\"probe: split; here\"" -- \
  "$probe_split" --list-test-cases
expect "--count answers even then" 0 "passing the current filters: 4" -- "$probe_split" --count

# The guard: ctest project DIR with one entry per "EXECUTABLE|FILTER" argument.
ctest_project() {
  local dir=$work/$1
  shift
  mkdir -p "$dir"
  local entry executable filter n=0
  for entry in "$@"; do
    executable=${entry%%|*} filter=${entry#*|} n=$((n + 1))
    echo "add_test([==[${filter//\\,/,}]==] \"$executable\" [==[--test-case=$filter]==])"
    echo "set_tests_properties([==[${filter//\\,/,}]==] PROPERTIES SKIP_RETURN_CODE $skip_code)"
  done >"$dir/CTestTestfile.cmake"
  ctest --test-dir "$dir" >/dev/null 2>&1  # "fails, then skips" fails: the guard looks past that
}

ctest_project healthy "$probe|probe: passes" "$probe|probe: skips" \
  "$probe|probe: fails\, then skips"
expect "the guard passes a run where every case ran once, and lists the skip" 0 \
  "skipped: probe: skips: always, reason 42" "3 ctest entries ran 3 test cases (2 skipped)" -- \
  "$guard" "$work/healthy"

# As ctest's discovery registers a name with ';': two entries whose filters match nothing.
ctest_project split "$probe_split|probe: passes" "$probe_split|probe: skips" \
  "$probe_split|probe: fails\, then skips" "$probe_split|probe: split" "$probe_split| here"
expect "the guard fails entries that ran zero cases, and the count" 1 \
  "\"probe: split\" ($probe_split) ran zero test cases" "\" here\" ($probe_split) ran zero" \
  "defines 4 test cases, ctest has 5 entries" -- "$guard" "$work/split"

# A filter that matches more than its case (a name with a wildcard): every entry runs something.
ctest_project wildcard "$probe|probe: *" "$probe|probe: skips" "$probe|probe: fails\, then skips"
expect "the guard fails when more cases ran than the executables define" 1 \
  "5 test cases ran, 3 expected" -- "$guard" "$work/wildcard"

# Part of the entries left out of the run on purpose (ctest -R) is no failure; a case left out
# of ctest altogether is.
ctest --test-dir "$work/healthy" -R "passes" >/dev/null 2>&1
expect "the guard allows entries left out of the run" 0 "2 left out" -- "$guard" "$work/healthy"
ctest_project missing "$probe|probe: passes" "$probe|probe: skips"
expect "the guard fails a case that has no entry" 1 "defines 3 test cases, ctest has 2 entries" \
  -- "$guard" "$work/missing"

((failures == 0)) || { echo "$failures check(s) failed"; exit 1; }
