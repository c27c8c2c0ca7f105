#!/bin/sh
# test_merge.sh -- heapscript merge (and so the one file `heapscript record`
# leaves): a trace merged alone gives the same reports; the kernel and user
# sessions of one real run merged into one file hold the same records
# (provider, ids, raw time, CPU, payload length, decoded memory fields) as
# the two files read together, with one logfile header instead of two.
HS=${HS_BIN:-./heapscript}
C=${HEAPSCRIPT_CORPUS:-../shared/traces}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0
no() { echo "not ok: $*"; fails=$((fails + 1)); }

"$HS" merge -o "$T/m.etl" examples/memorytestapp.etl 2>"$T/err" || no "merge: $(cat "$T/err")"
grep -q "14743 records from 1 file (1 logfile header replaced, 0 left out)" "$T/err" || no "merge counts: $(cat "$T/err")"
cp examples/memorytestapp.sym "$T/m.sym"
for s in leaks transient growth; do
  "$HS" $s examples/memorytestapp.etl >"$T/a"; "$HS" --symbol-path examples $s "$T/m.etl" >"$T/b"
  cmp -s "$T/a" "$T/b" && echo "ok $s: same report from the merged file" || { no "$s differs"; diff "$T/a" "$T/b" | head -5; }
done
"$HS" merge -o "$T/x.etl" >/dev/null 2>&1 && no "merge without inputs succeeded"
# an output that cannot be written is named (it said "writing buffer 0: No space left on device")
if [ -w /dev/full ]; then
  "$HS" merge -o /dev/full examples/memorytestapp.etl >/dev/null 2>"$T/err"; rc=$?
  [ $rc = 2 ] && grep -q "^heapscript merge: /dev/full: writing buffer 0: No space left on device" "$T/err" \
    && echo "ok merge -o /dev/full: exit 2, the file named" || no "merge -o /dev/full: exit $rc: $(cat "$T/err")"
fi
"$HS" merge -o "$T/x.etl" "$T/missing.etl" 2>"$T/err"; [ $? = 2 ] && grep -q missing.etl "$T/err" \
  && echo "ok a missing input: exit 2, named" || no "missing input"

if [ ! -f "$C/MANIFEST.tsv" ]; then
  if [ "$CI" = true ]; then echo "corpus missing at $C and CI=true"; exit 1; fi
  echo "SKIP: no corpus at $C (the two-session merge)"
else
  A=$C/microsoft_perfview__diagsession_diaghub.kernel.1.etl
  B=$C/microsoft_perfview__diagsession_diaghub.user_injected.1.etl
  "$HS" merge -o "$T/d.etl" "$A" "$B" 2>"$T/err" || no "merge two: $(cat "$T/err")"
  keep='s/"time": [^,]*, "file": [0-9]*, "buffer": [0-9]*, "offset": [0-9]*//'
  "$HS" dump --jsonl "$A" "$B" | grep -v '"68fdd900-4a3e-11d1-84f4-0000f80464e3", "opcode": 0, "id": 0' | sed "$keep" >"$T/a"
  "$HS" dump --jsonl "$T/d.etl" | grep -v '"68fdd900-4a3e-11d1-84f4-0000f80464e3", "opcode": 0, "id": 0' | sed "$keep" >"$T/b"
  if cmp -s "$T/a" "$T/b" && [ "$(wc -l <"$T/a")" -gt 16000 ]; then echo "ok two sessions merged: $(wc -l <"$T/a") records the same"
  else no "two sessions:"; diff "$T/a" "$T/b" | head -6; fi
  n=$("$HS" info --json "$T/d.etl" | sed -n 's/^  "events": \([0-9]*\),$/\1/p')
  [ "$n" = 16338 ] && echo "ok one logfile header: 16338 events (16339 less one header)" || no "merged events: $n"
fi
# a damaged input: its damage lines (as info prints them), the rest merged,
# the summary says so, exit 1 (it used to leave the part out and exit 0)
cp examples/notmyfault.etl "$T/rec.etl"
printf '\001\000' | dd of="$T/rec.etl" bs=1 seek=$((0x40000 + 0x48 + 4)) conv=notrunc 2>/dev/null
"$HS" info "$T/rec.etl" >/dev/null 2>"$T/ierr"
"$HS" merge -o "$T/r.etl" "$T/rec.etl" examples/memorytestapp.etl >/dev/null 2>"$T/err"; rc=$?
grep "damaged: expected" "$T/err" >"$T/md"; grep "damaged: expected" "$T/ierr" >"$T/id"
n=$("$HS" info --json "$T/r.etl" | sed -n 's/^  "events": \([0-9]*\),$/\1/p')
want=$(( $("$HS" info --json "$T/rec.etl" 2>/dev/null | sed -n 's/^  "events": \([0-9]*\),$/\1/p') \
       + $("$HS" info --json examples/memorytestapp.etl | sed -n 's/^  "events": \([0-9]*\),$/\1/p') - 1 ))
if [ $rc = 1 ] && [ -s "$T/id" ] && cmp -s "$T/md" "$T/id" && grep -q "damaged parts of the inputs were skipped" "$T/err" \
   && [ "$n" = "$want" ]; then echo "ok a damaged input: info's damage lines, exit 1, the $n sound records merged"
else no "damaged input: exit $rc, $n events (want $want): $(cat "$T/err")"; fi
# the output named as one of the traces (itself, or a link to it): refused
# before anything is written; writing it destroyed the trace under the
# reader, which then died of SIGBUS
cp examples/memorytestapp.etl "$T/in.etl"
ln -s "$T/in.etl" "$T/link.etl"
for o in "$T/in.etl" "$T/link.etl"; do
  "$HS" merge -o "$o" "$T/in.etl" examples/notmyfault.etl >/dev/null 2>"$T/err"; rc=$?
  [ $rc = 2 ] && grep -q "is also a trace to merge" "$T/err" || no "merge -o $(basename "$o") onto its input: exit $rc: $(cat "$T/err")"
  cmp -s "$T/in.etl" examples/memorytestapp.etl || no "merge -o $(basename "$o") onto its input: the trace was changed"
done
# one trace given twice (a path twice, or a copy): refused, nothing written
cp examples/memorytestapp.etl "$T/copy.etl"
for other in examples/memorytestapp.etl "$T/copy.etl"; do
  "$HS" merge -o "$T/twice.etl" examples/memorytestapp.etl "$other" 2>"$T/err"; rc=$?
  [ $rc = 2 ] && grep -q "the same trace as examples/memorytestapp.etl, given twice" "$T/err" && [ ! -e "$T/twice.etl" ] \
    || no "merge of one trace twice ($other): exit $rc: $(cat "$T/err")"
done
echo "merge: $fails failed"
[ $fails = 0 ]
