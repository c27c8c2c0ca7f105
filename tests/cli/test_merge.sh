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
# -o - is no file name here: it made a file named "-" in the working directory
# (run here: HS_EXE, under Wine, is a path from here)
[ -e ./- ] && no "a file named '-' is here before the test"
"$HS" merge -o - examples/memorytestapp.etl >/dev/null 2>"$T/err"; rc=$?
made=no; [ -e ./- ] && { made=yes; rm -f ./-; }
[ $rc -eq 2 ] && [ $made = no ] && grep -q "^heapscript merge: -o -: a trace is written to a file, not to standard output$" "$T/err" \
  || no "merge -o -: exit 2, said, no file '-' (exit $rc): $(head -c 200 "$T/err")"
# an output that cannot be written is named (it said "writing buffer 0: No space left on device")
if [ -w /dev/full ]; then
  "$HS" merge -o /dev/full examples/memorytestapp.etl >/dev/null 2>"$T/err"; rc=$?
  [ $rc = 2 ] && grep -q "^heapscript merge: /dev/full: writing buffer 0: No space left on device" "$T/err" \
    && echo "ok merge -o /dev/full: exit 2, the file named" || no "merge -o /dev/full: exit $rc: $(cat "$T/err")"
fi
# files of two clocks (QPC at 3,579,545 Hz, and system time) are merged on FILETIME, 100 ns at a
# time: an event of the second, moved to the first's clock, can land before the first's event of
# the same 100 ns on its CPU. It goes at that event's time, its StackWalk with it (and only its: an
# event of another thread at the same time on another CPU keeps its own); 28 of 200 heap events were
# left out (and their stacks), with exit 0
cat >"$T/gm.lua" <<'LUA'
local dir = arg[1]
local S, f = 132223104000000000, 3579545
local w = assert(heapscript.writer(dir .. "/k.etl", {start_time = S, perf_freq = f}))
w:process{op = "dcstart", pid = 1000, ts = 1, name = "app.exe"}
for i = 1, 200 do w:kernel{group = 0x0f, opcode = 1, pid = 1000, tid = 1004, ts = 1000 + i * 3, payload = string.pack("<I4", i)} end
assert(w:close())
w = assert(heapscript.writer(dir .. "/u.etl", {start_time = S, clock_type = "system", cpus = 2}))
for i = 1, 200 do
  local ts = S + math.floor((1000 + i * 3) * 1e7 / f) + (i % 7)
  w:heap{op = "alloc", pid = 1000, tid = 1004, ts = ts, heap = 0x10000, addr = 0x20000 + i * 16, size = 16,
         stack = { 0x7ff600001000 + i }, cpu = 0, stack_cpu = 0, stack_delay = 0}
  w:heap{op = "alloc", pid = 1000, tid = 1008, ts = ts, heap = 0x10000, addr = 0x90000 + i * 16, size = 16,
         stack = { 0x7ff600002000 + i }, cpu = 1, stack_cpu = 1, stack_delay = 0}
end
assert(w:close())
LUA
printf 'local n, s = 0, 0\nfor a in trace:allocations():each() do n = n + 1; if a.stack then s = s + 1 end end\nprint(n, s)\n' >"$T/stk.lua"
if "$HS" "$T/gm.lua" -- "$T" 2>"$T/err"; then
  "$HS" merge -o "$T/gm.etl" "$T/k.etl" "$T/u.etl" 2>"$T/err"; rc=$?
  a=$("$HS" "$T/stk.lua" "$T/k.etl" "$T/u.etl"); b=$("$HS" "$T/stk.lua" "$T/gm.etl")
  [ $rc = 0 ] && [ "$a" = "400	400" ] && [ "$b" = "$a" ] && grep -q " 0 left out, [1-9][0-9]* moved up to 100 ns later" "$T/err" \
    && echo "ok two clocks merged: every allocation and its stack kept" || no "two clocks merged: rc $rc, together '$a', merged '$b': $(cat "$T/err")"
else
  no "writing the two-clock traces: $(cat "$T/err")"
fi
# buffers flagged as having lost events (EVENTS_LOST) are carried, one merged buffer for each,
# holding its first record: the merge had none, and leaks no longer warned
cat >"$T/lost.lua" <<'LUA'
local dir, S = arg[1], 132223104000000000
local w = assert(heapscript.writer(dir .. "/l.etl", {start_time = S, buffer_size = 4096, cpus = 2, buffer_flags = 2, events_lost = 5}))
w:process{op = "dcstart", pid = 1000, ts = 1, name = "app.exe"}
for i = 1, 20 do w:heap{op = "alloc", pid = 1000, tid = 1004, ts = 1000 + i * 3, heap = 0x10000, addr = 0x20000 + i * 16, size = 16, cpu = i % 2} end
assert(w:close())
w = assert(heapscript.writer(dir .. "/n.etl", {start_time = S, buffer_size = 4096}))
for i = 1, 200 do w:kernel{group = 0x0f, opcode = 1, pid = 1000, tid = 1004, ts = 1000 + i * 3, payload = string.rep("x", 100)} end
assert(w:close())
LUA
if "$HS" "$T/lost.lua" -- "$T" 2>"$T/err"; then
  "$HS" merge -o "$T/lm.etl" "$T/n.etl" "$T/l.etl" 2>"$T/err" || no "merge of a trace with lost buffers: $(cat "$T/err")"
  n=$(printf 'local n = 0 for i = 1, #trace:files() do n = n + trace:stats(i).buffers_lost_flag end print(n)\n' >"$T/fl.lua"; "$HS" "$T/fl.lua" "$T/lm.etl")
  [ "$n" = 2 ] && "$HS" leaks "$T/lm.etl" | grep -q "2 buffers marked as having lost events" \
    && echo "ok lost buffers merged: 2 flagged, as the input" || no "lost buffers merged: $n flagged, 2 expected"
else
  no "writing the lost-buffer traces: $(cat "$T/err")"
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
  # the logfile header keeps the inputs' OS version, time zone, boot time, timer resolution, the
  # latest EndTime, the modes that still hold with RELOG: it said Windows 10.0 of a Win7 trace,
  # UTC, a boot time worked out, 15.625 ms, the last event's time, mode 0x1
  printf 'local h = trace:header()\nfor _, k in ipairs{"os_build", "cpus", "pointer_size", "clock_type", "perf_freq", "cpu_mhz", "start_time", "end_time", "boot_time", "tz_bias", "log_file_mode", "timer_resolution", "events_lost", "buffers_lost"} do print(k, h[k]) end\nprint("version", table.concat(h.version, "."))\n' >"$T/lf.lua"
  f=danyquenneville_Dany-Quenneville__ExplorerStartupLog_RunOnce
  "$HS" merge -o "$T/h.etl" "$C/$f.etl" 2>"$T/err" || no "merge $f: $(cat "$T/err")"
  "$HS" "$T/lf.lua" "$C/$f.etl" | sed 's/^log_file_mode\t133121$/log_file_mode\t198657/' >"$T/a"   # 0x20801 | RELOG
  "$HS" "$T/lf.lua" "$T/h.etl" >"$T/b"
  if grep -q "^tz_bias	300$" "$T/a" && cmp -s "$T/a" "$T/b" && "$HS" info "$T/h.etl" | grep -q "^os: *Windows 6.1 build 7601 "
  then echo "ok $f merged: its logfile header fields kept, RELOG set"; else no "$f merged: header"; diff "$T/a" "$T/b"; fi
  end=$("$HS" "$T/lf.lua" "$A" "$B" | sed -n 's/^end_time\t//p'); end2=$(printf 'print(trace:header(2).end_time)\n' >"$T/e2.lua"; "$HS" "$T/e2.lua" "$A" "$B")
  [ "$end2" -gt "$end" ] && end=$end2
  got=$("$HS" "$T/lf.lua" "$T/d.etl" | sed -n 's/^end_time\t//p'); mode=$("$HS" "$T/lf.lua" "$T/d.etl" | sed -n 's/^log_file_mode\t//p')
  [ "$got" = "$end" ] && [ "$mode" = 69633 ] && echo "ok two sessions merged: the latest EndTime, mode 0x11001" \
    || no "two sessions merged: EndTime $got (want $end), mode $mode (want 69633)"
  # the header fields of a record a decoder reads (TraceLogging's channel 11, STRING_ONLY
  # and the other Flags, level, version) are kept: channel and Flags became 0
  printf 'for ev in trace:events() do if not (ev.kernel and ev.hook == 0) then print(ev.provider, ev.id, ev.opcode, ev.version, ev.level, ev.channel, ev.header_flags, ev.keyword, ev.timestamp) end end\n' >"$T/hdr.lua"
  for f in Siemens-Healthineers_ETWAnalyzer__TraceLoggingTester jtbraun_pyetw__user google_syzygy__sawbuck_viewer_test_data__test_data_64_v2; do
    "$HS" merge -o "$T/h.etl" "$C/$f.etl" 2>"$T/err" || no "merge $f: $(cat "$T/err")"
    "$HS" "$T/hdr.lua" "$C/$f.etl" >"$T/a"; "$HS" "$T/hdr.lua" "$T/h.etl" >"$T/b"
    if [ -s "$T/a" ] && cmp -s "$T/a" "$T/b"; then echo "ok $f merged: every record's header fields the same"
    else no "$f merged: header fields differ"; diff "$T/a" "$T/b" | head -4; fi
  done
  n=$("$HS" "$T/hdr.lua" "$C/Siemens-Healthineers_ETWAnalyzer__TraceLoggingTester.etl" | awk -F'\t' '$6 == 11' | wc -l)
  [ "$n" = 70 ] || no "TraceLoggingTester: $n events of channel 11, 70 expected"
  n=$("$HS" "$T/hdr.lua" "$C/jtbraun_pyetw__user.etl" | awk -F'\t' '$7 == 4' | wc -l)
  [ "$n" = 4 ] || no "pyetw user: $n STRING_ONLY events, 4 expected"
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
