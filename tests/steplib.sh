# steplib.sh -- what tests/run.sh and tests/windows/test.sh share (sourced): each test
# runs as one step; `step NAME COMMAND...` prints PASS (and the lines saying
# what was skipped) or FAIL with the end of its output; `steps_done` prints
# the count and sets the exit status.
pass=0; fail=0; failed=""
steplog=${TMPDIR:-/tmp}/heapscript-test.$$
mkdir -p "$steplog"

# A step that hangs (a lost wake-up between threads, say) fails after
# STEP_TIMEOUT seconds (default 600) instead of holding the run: a guard,
# not a measure of speed.  0: no guard (a caller whose steps are shell
# functions bounding themselves, tests/windows/test.sh).
guard=""
if [ "${STEP_TIMEOUT:-600}" != 0 ] && command -v timeout >/dev/null 2>&1; then
  guard="timeout -k 10 ${STEP_TIMEOUT:-600}"
fi

step() {  # step NAME COMMAND...
  name=$1; shift
  $guard "$@" >"$steplog/out" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    pass=$((pass + 1)); echo "PASS $name"
    grep -i "skip" "$steplog/out" | head -3 | sed 's/^/    /'     # say what did not run, and why
  else
    [ -n "$guard" ] && [ $rc -eq 124 ] && echo "timed out after ${STEP_TIMEOUT:-600} s" >>"$steplog/out"
    fail=$((fail + 1)); failed="$failed $name"; echo "FAIL $name"; sed 's/^/    /' "$steplog/out" | tail -40
  fi
}

steps_done() {  # steps_done LABEL
  rm -rf "$steplog"
  [ -n "$failed" ] && echo "failed:$failed"
  echo "$1: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
