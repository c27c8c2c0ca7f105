#!/bin/sh
# run.sh -- every test: C unit tests, Lua API tests, CLI and damaged-input
# tests, the real-trace corpus, and the fuzz corpus replay.  Each runs as
# one step; the last line counts them: "N passed, N failed".
# Called by `make test` with HS_BUILD set to the build directory.
B=${HS_BUILD:-build/rel}
HS=${HS_BIN:-./heapscript}
export HS_BIN=$HS
. tests/steplib.sh

for t in "$B"/tests/test_*; do
  [ -x "$t" ] && step "unit/$(basename "$t")" "$t"
done
for t in tests/lua/test_*.lua; do
  [ -f "$t" ] && step "lua/$(basename "$t" .lua)" $HS "$t"
done
for t in tests/cli/test_*.sh; do
  [ -f "$t" ] && step "cli/$(basename "$t" .sh)" sh "$t"
done
step "fuzz-replay" "$B/tests/fuzz_reader" tests/fuzz/corpus tests/corpus/traces/*.etl
step "fuzz-replay-pdb" "$B/tests/fuzz_pdb" tests/fuzz/pdb_corpus
step "fuzz-replay-symmap" "$B/tests/fuzz_symmap" tests/fuzz/symmap_corpus
step "fuzz-replay-json" "$B/tests/fuzz_json" tests/fuzz/json_corpus
step "corpus" $HS tests/corpus/test_corpus.lua -- $HS

steps_done tests
