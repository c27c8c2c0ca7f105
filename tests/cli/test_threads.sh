#!/bin/sh
# test_threads.sh -- the same output with every extra thread off
# (HEAPSCRIPT_THREADS=0), with the default, and with decoding workers
# forced on small files (=2): the bundled scripts, info and dump, on the
# examples and on real traces of the corpus (plain, compressed, 32-bit).
HS=${HS_BIN:-./heapscript}
C=${HEAPSCRIPT_CORPUS:-../shared/traces}
T=${TMPDIR:-/tmp}/hs-threads-cli.$$
mkdir -p "$T"
fails=0
no() { echo "not ok: $*"; fails=$((fails + 1)); }

same() {  # same LABEL COMMAND...: output and exit code alike for THREADS=0, unset, 2
  label=$1; shift
  HEAPSCRIPT_THREADS=0 "$@" >"$T/a" 2>&1; ra=$?
  "$@" >"$T/b" 2>&1; rb=$?
  HEAPSCRIPT_THREADS=2 "$@" >"$T/c" 2>&1; rc=$?
  if [ $ra != $rb ] || [ $ra != $rc ] || ! cmp -s "$T/a" "$T/b" || ! cmp -s "$T/a" "$T/c"; then
    no "$label: outputs differ with threads on and off (exit $ra/$rb/$rc)"
    diff "$T/a" "$T/b" | head -5
    diff "$T/a" "$T/c" | head -5
  fi
  [ -s "$T/a" ] || no "$label: no output"
}

for f in examples/memorytestapp.etl examples/notmyfault.etl; do
  same "leaks $f" "$HS" leaks "$f"
  same "leaks --json $f" "$HS" leaks "$f" -- --json "$T/leaks.json"
  same "transient $f" "$HS" transient "$f"
  same "growth $f" "$HS" growth "$f"
  same "pool $f" "$HS" pool "$f"
  same "info $f" "$HS" info --json "$f"
  same "dump $f" "$HS" dump --jsonl "$f"
done

if [ -d "$C" ]; then
  n=0
  for name in Siemens-Healthineers_ETWAnalyzer__TraceLoggingTester.etl \
              microsoft_perfview__net.4.5.x86_PerfViewData.etl \
              microsoft_perfview__net.4.5.2.x64.etl \
              microsoft_perfview__diagsession_diaghub.etl \
              airbus-cert_etl-parser__ShutdownPerfDiagLogger.etl; do
    f="$C/$name"
    [ -f "$f" ] || continue
    n=$((n + 1))
    same "info $name" "$HS" info --json "$f"
    same "leaks $name" "$HS" leaks "$f"
    same "dump $name" "$HS" dump --jsonl --limit 20000 "$f"
  done
  [ $n -gt 0 ] || no "no corpus trace found in $C"
elif [ "$CI" = true ]; then
  no "corpus missing at $C and CI=true"
else
  echo "skip: corpus not found at $C: real-trace comparisons skipped"
fi

rm -rf "$T"
[ $fails -eq 0 ] && echo "ok: threads on and off give the same output"
[ $fails -eq 0 ]
