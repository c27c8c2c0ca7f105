#!/bin/sh
# test_live.sh -- the live pipeline through the replay source
# (heapscript --replay TRACE [--speed N|--fast] SCRIPT): the final report of
# every bundled script is the file-mode report, byte for byte; trace:every
# callbacks see the events stamped before each interval; the session stops
# cleanly on Ctrl-C (SIGINT) and on a script error, with its counts; lost
# events and buffers a trace records are reported; --live off Windows and
# misuse are refused with one line.  `timeout` guards against a stop that
# never comes (a hang is a failure, not a wait).
HS=${HS_BIN:-./heapscript}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0
no() { echo "not ok: $*"; fails=$((fails + 1)); }
ok() { echo "ok $*"; }

# 1. final reports identical to file mode, every bundled script, text and JSON
for t in examples/memorytestapp.etl examples/notmyfault.etl; do
  for s in leaks transient growth pool peak churn policy events; do
    for j in "" "--json -"; do
      [ "$s" = events ] && [ -n "$j" ] && continue
      "$HS" $s "$t" -- $j >"$T/file" 2>/dev/null; a=$?
      "$HS" --replay "$t" --fast $s -- $j >"$T/live" 2>"$T/err"; b=$?
      if [ $a = $b ] && cmp -s "$T/file" "$T/live"; then ok "replay $s $t $j: same report (exit $a)"
      else no "replay $s $t $j: exit $b vs $a"; diff "$T/file" "$T/live" | head -5; fi
    done
  done
done
grep -q "replay stopped: end of trace; 4627 events, 0 lost events, 0 lost buffers" "$T/err" \
  && ok "the stop line counts events and losses" || no "stop line: $(cat "$T/err")"
# at a pace (not --fast) too: 200x the trace's own speed
"$HS" leaks examples/memorytestapp.etl >"$T/file"
"$HS" --replay examples/memorytestapp.etl --speed 200 leaks >"$T/live" 2>/dev/null
cmp -s "$T/file" "$T/live" && ok "replay at 200x: same report" || no "replay at 200x differs"

# 2. periodic callbacks: the events before each 5 s mark, as file mode counts them
"$HS" tests/live/before.lua examples/memorytestapp.etl -- 5 >"$T/want"
"$HS" --replay examples/memorytestapp.etl --fast tests/live/every.lua -- 5 >"$T/got" 2>/dev/null
grep '^tick' "$T/got" | sed 's/ count=[0-9]*//; s/ lost=[0-9]*//' >"$T/ticks"
if cmp -s "$T/want" "$T/ticks" && [ "$(wc -l <"$T/ticks")" -eq 4 ]; then ok "four callbacks, each with the events and heap records before its mark"
else no "callbacks:"; diff "$T/want" "$T/ticks"; fi
grep -q "^final events=14744 heap=5000 stopped=true reason=end of trace" "$T/got" \
  && ok "the final part sees the whole session" || no "final: $(grep final "$T/got")"

# 3. Ctrl-C: a slow replay is stopped, the script's final part runs over what arrived
if [ -z "$HS_NO_SIGNALS" ]; then
  "$HS" --replay examples/memorytestapp.etl --speed 0.5 tests/live/every.lua -- 0.5 >"$T/out" 2>"$T/err" &
  pid=$!
  i=0; while ! grep -q '^tick' "$T/out" 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
  kill -INT $pid
  i=0; while kill -0 $pid 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  if kill -0 $pid 2>/dev/null; then kill -9 $pid; no "Ctrl-C: still running 30 s later"; else
    wait $pid; rc=$?
    [ $rc = 0 ] && grep -q "^final events=" "$T/out" && grep -q "reason=interrupted" "$T/out" \
      && grep -q "replay stopped: interrupted" "$T/err" \
      && ok "Ctrl-C stops the session; final report over $(sed -n 's/^final events=\([0-9]*\).*/\1/p' "$T/out") events" \
      || no "Ctrl-C: exit $rc, $(tail -2 "$T/out") / $(cat "$T/err")"
  fi
else
  echo "ok - Ctrl-C # SKIP: $HS_NO_SIGNALS"
fi

# 4. a script error in a callback stops a replay that would take minutes
printf 'trace:every(0.1, function() error("boom in callback") end)\nprint(trace:count())\n' >"$T/bad.lua"
timeout 60 "$HS" --replay examples/memorytestapp.etl --speed 0.1 "$T/bad.lua" >"$T/out" 2>"$T/err"; rc=$?
if [ $rc = 124 ]; then no "script error: the session did not stop"
elif [ $rc = 1 ] && grep -q "bad.lua:1: boom in callback" "$T/err" && grep -q "replay stopped: script error" "$T/err"; then
  ok "a script error stops the session (exit 1, file:line, stop line)"
else no "script error: exit $rc: $(cat "$T/err")"; fi
# 0, a period below a millisecond (1e-9 s was a callback a tick: 2e8 of them on this 20 s trace,
# still running after minutes) and one past 1e7 s are errors that give the range
for sec in 0 1e-9 1e300; do
  printf 'print(pcall(trace.every, trace, %s, error))\n' "$sec" >"$T/zero.lua"
  out=$(timeout 60 "$HS" --replay examples/memorytestapp.etl --fast "$T/zero.lua" 2>"$T/err")
  case "$out" in "false	"*"seconds from 0.001 to 1e7 expected"*) ok "trace:every($sec) is an error" ;;
    *) no "trace:every($sec): '$out' $(cat "$T/err")" ;; esac
done
printf 'error("early")\n' >"$T/early.lua"
timeout 60 "$HS" --replay examples/memorytestapp.etl --speed 0.001 "$T/early.lua" >/dev/null 2>"$T/err"; rc=$?
[ $rc = 1 ] && grep -q "replay stopped: script error" "$T/err" && ok "an error before the wait stops it too" \
  || no "early error: exit $rc $(cat "$T/err")"
# --duration stops a slow replay
timeout 60 "$HS" --replay examples/memorytestapp.etl --speed 0.001 --duration 1 tests/live/every.lua >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 0 ] && grep -q "reason=--duration reached" "$T/out" && ok "--duration stops the session" || no "--duration: exit $rc $(cat "$T/err")"

# 5. losses the session recorded are reported (a trace written with them)
cat >"$T/lost.lua" <<'LUA'
local w = assert(heapscript.writer(arg[1], { events_lost = 7, buffers_lost = 2 }))
w:kernel { group = 0, opcode = 32, ts = 10 }   -- an RTLostEvent notice in the stream
w:close()
LUA
"$HS" "$T/lost.lua" -- "$T/lost.etl" || no "writing the lost-events trace"
printf 'local n = trace:count()\nlocal s = trace:session()\nprint(n, s.lost_events, s.lost_buffers)\n' >"$T/s.lua"
out=$("$HS" --replay "$T/lost.etl" --fast "$T/s.lua" 2>"$T/err")
[ "$out" = "$(printf '2\t8\t2')" ] && grep -q "8 lost events, 2 lost buffers" "$T/err" \
  && ok "lost events and buffers counted (7 + 1 notice, 2)" || no "lost: '$out' $(cat "$T/err")"

# 5b. damaged timestamps do not hold the replay: a trace of 0.5 s whose two
# records say years after its stop and years before its start (patched into
# the file) replays at its own pace in about 0.5 s (it waited for years
# once), the two records left out as damage (they were delivered before),
# the run exiting 1 for it.  info's duration of it is no overflow.
cat >"$T/far.lua" <<'LUA'
local path = arg[1]
local w = assert(heapscript.writer(path, { start_ticks = 1000000000 }))
for i = 1, 10 do w:kernel { group = 0x0f, opcode = 1, pid = 4, tid = 8, ts = 1000000000 + i * 500000 } end
w:kernel { group = 0x0f, opcode = 2, pid = 4, tid = 8, ts = 1006000000, payload = "FAR-FUTURE" }
w:kernel { group = 0x0f, opcode = 2, pid = 4, tid = 8, ts = 1006000001, payload = "FAR-PAST.." }
assert(w:close())
local f = assert(io.open(path, "r+b"))
local s = f:read("a")
for text, ts in pairs({ ["FAR-FUTURE"] = 1 << 62, ["FAR-PAST.."] = -(1 << 62) }) do
  local at = assert(s:find(text, 1, true)) - 32            -- the SYSTEM64 header before the payload
  f:seek("set", at - 1 + 16)                               -- its SystemTime
  f:write(string.pack("<i8", ts))
end
f:close()
LUA
"$HS" "$T/far.lua" -- "$T/far.etl" || no "writing the damaged-timestamp trace"
printf 'print(trace:count())\n' >"$T/c.lua"
out=$(timeout 60 "$HS" --replay "$T/far.etl" "$T/c.lua" 2>"$T/err"); rc=$?
[ $rc = 1 ] && [ "$out" = 11 ] && grep -q "replay stopped: end of trace; 11 events" "$T/err" \
  && [ "$(grep -c "expected a record timestamped within an hour of its file's span" "$T/err")" = 2 ] \
  && ok "damaged timestamps years away: replayed at once, the 2 left out as damage" \
  || no "far timestamps: exit $rc '$out' $(cat "$T/err")"
"$HS" info "$T/far.etl" >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 1 ] && grep -q "^duration:  *0\.5" "$T/out" && ! grep -q "runtime error" "$T/err" \
  && grep -q "offset 0x.* (buffer 1): damaged: expected a record timestamped within an hour" "$T/err" \
  && ok "info: the far records named as damage, the duration the trace's" || no "info far: exit $rc $(cat "$T/err")"

# 5c. a damaged file replayed: its damage is the run's, as in file mode
# (the same report, the same damage lines on stderr, exit 1): cut inside
# buffer 6, and a record of buffer 4 with Size 1
head -c $((0x60000 + 3000)) examples/notmyfault.etl >"$T/cut.etl"
cp examples/notmyfault.etl "$T/rec.etl"
printf '\001\000' | dd of="$T/rec.etl" bs=1 seek=$((0x40000 + 0x48 + 4)) conv=notrunc 2>/dev/null
for t in "$T/cut.etl" "$T/rec.etl"; do
  cp examples/notmyfault.sym "${t%.etl}.sym"
  for s in leaks pool; do
    for j in "" "--json -"; do
      "$HS" $s "$t" -- $j >"$T/file" 2>"$T/ferr"; a=$?
      "$HS" --replay "$t" --fast $s -- $j >"$T/live" 2>"$T/err"; b=$?
      grep "damaged: expected" "$T/ferr" | sort >"$T/fd"; grep "damaged: expected" "$T/err" | sort >"$T/ld"
      if [ $a = 1 ] && [ $b = 1 ] && cmp -s "$T/file" "$T/live" && [ -s "$T/fd" ] && cmp -s "$T/fd" "$T/ld"; then
        ok "replay of damaged $t, $s $j: exit 1, the file mode's report and damage lines"
      else no "replay damaged $t $s $j: exit $b vs $a"; diff "$T/file" "$T/live" | head -5; diff "$T/fd" "$T/ld"; fi
    done
  done
done

# 6. refused cleanly
"$HS" --replay examples/memorytestapp.etl leaks examples/memorytestapp.etl >/dev/null 2>"$T/err"; rc=$?
[ $rc = 2 ] && grep -q "no TRACE after SCRIPT" "$T/err" && ok "a TRACE besides --replay: exit 2" || no "trace+replay: $rc"
"$HS" --replay "$T/missing.etl" leaks >/dev/null 2>"$T/err"; rc=$?
[ $rc = 2 ] && grep -q "missing.etl" "$T/err" && ok "a missing replay file: exit 2" || no "missing: $rc $(cat "$T/err")"
# --speed is N times the trace's pace, above 0: 0 (which paced nothing, as --fast) is refused
for sp in 0 -1 0.0 1e9 x; do
  "$HS" --replay examples/memorytestapp.etl --speed $sp leaks >/dev/null 2>"$T/err"; rc=$?
  [ $rc = 2 ] && grep -q "option --speed: bad value '$sp': expected N times the trace's pace, above 0" "$T/err" \
    && ok "--speed $sp: exit 2, the range named" || no "--speed $sp: exit $rc: $(cat "$T/err")"
done
printf 'trace:every(1, print)\n' >"$T/e.lua"
"$HS" "$T/e.lua" examples/memorytestapp.etl >/dev/null 2>"$T/err"; rc=$?
[ $rc = 1 ] && grep -q "trace:every needs a live session" "$T/err" && ok "trace:every on a file: an error" || no "every on file: $rc"
if [ -z "$HS_WINE" ]; then
  "$HS" --live leaks >/dev/null 2>"$T/err"; rc=$?
  [ $rc = 2 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q "needs Windows" "$T/err" \
    && ok "--live off Windows: one line, exit 2" || no "--live: $rc $(cat "$T/err")"
  "$HS" record -o "$T/r.etl" --pid 1 >/dev/null 2>"$T/err"; rc=$?
  [ $rc = 2 ] && grep -q "needs Windows" "$T/err" && ok "record off Windows: exit 2" || no "record: $rc"
else
  # Under Wine the ETW session calls are stubs: the Windows code runs up to
  # them and must refuse with one line, stop what it started, and not crash.
  "$HS" --live leaks >/dev/null 2>"$T/err"; rc=$?
  [ $rc = 2 ] && grep -q "needs a target" "$T/err" && ok "--live without a target: exit 2" || no "--live: $rc $(cat "$T/err")"
  "$HS" --live --pid 999999 leaks >/dev/null 2>"$T/err"; rc=$?
  [ $rc = 2 ] && grep -q "no process 999999" "$T/err" && ok "--live --pid of no process: exit 2" || no "--live pid: $rc $(cat "$T/err")"
  timeout 60 "$HS" --live --exe notepad.exe --duration 1 leaks >/dev/null 2>"$T/err"; rc=$?
  [ $rc = 2 ] && [ "$(wc -l <"$T/err")" = 1 ] && ok "--live where sessions cannot be read (Wine): one line, exit 2: $(cat "$T/err")" \
    || no "--live under Wine: exit $rc: $(head -c 300 "$T/err")"
  timeout 60 "$HS" record -o "$T/r.etl" -- cmd /c rem >/dev/null 2>"$T/err"; rc=$?
  [ $rc = 2 ] && [ "$(wc -l <"$T/err")" = 1 ] && ok "record where sessions write nothing (Wine): one line, exit 2: $(cat "$T/err")" \
    || no "record under Wine: exit $rc: $(head -c 300 "$T/err")"
  "$HS" record --help | grep -q "^usage: heapscript record" && ok "record --help" || no "record --help"
fi
echo "live: $fails failed"
[ $fails = 0 ]
