#!/bin/sh
# run.sh -- every test: C unit tests, Lua API tests, CLI and damaged-input
# tests, the real-trace corpus, and the fuzz corpus replay.  Each runs as
# one step; the last line counts them: "N passed, N failed".
# Called by `make test` with HS_BUILD set to the build directory.
B=${HS_BUILD:-build/rel}
HS=${HS_BIN:-./heapscript}
export HS_BIN=$HS
pass=0; fail=0; failed=""
log=${TMPDIR:-/tmp}/heapscript-test.$$
mkdir -p "$log"

step() {  # step NAME COMMAND...
  name=$1; shift
  if "$@" >"$log/out" 2>&1; then
    pass=$((pass + 1)); echo "PASS $name"
    grep -i "skip" "$log/out" | head -3 | sed 's/^/    /'     # say what did not run, and why
  else
    fail=$((fail + 1)); failed="$failed $name"; echo "FAIL $name"; sed 's/^/    /' "$log/out" | tail -40
  fi
}

for t in "$B"/tests/test_*; do
  [ -x "$t" ] && step "unit/$(basename "$t")" "$t"
done
for t in tests/lua/test_*.lua; do
  [ -f "$t" ] && step "lua/$(basename "$t" .lua)" $HS "$t"
done
for t in tests/cli/test_*.sh; do
  [ -f "$t" ] && step "cli/$(basename "$t" .sh)" sh "$t"
done
step "fuzz-replay" "$B/tests/fuzz_reader" tests/fuzz/corpus
step "fuzz-replay-pdb" "$B/tests/fuzz_pdb" tests/fuzz/pdb_corpus
step "corpus" $HS tests/corpus/test_corpus.lua -- $HS

rm -rf "$log"
[ -n "$failed" ] && echo "failed:$failed"
echo "tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
