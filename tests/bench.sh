#!/bin/sh
# bench.sh -- `make bench`: speed and memory, measured in one run, every
# figure as a ratio against read(2) of the same bytes and against the
# plain walk of the same trace, both measured in this run.  Never a test.
#
# Traces: the generated heap trace (tests/bench/gen_heap.lua: BENCH_EVENTS
# heap events, default 5,000,000, each allocation with its StackWalk; kept
# in $TMPDIR/heapscript-bench between runs) and the largest corpus trace.
# Each figure is the best of BENCH_RUNS runs (default 3).  Stages:
#   read       read(2) of the whole file in 1 MiB chunks, page cache warm
#   walk       hs_reader_next over every record (decoding workers on)
#   walk -T    the same with HEAPSCRIPT_THREADS=0 (no extra thread)
#   info       `heapscript info` end to end
#   lifetimes  the C analysis pass: processes, memory decoders, stacks,
#              lifetimes (the reader and memory decoding on another thread)
#   lifetimes -T  the same with HEAPSCRIPT_THREADS=0
#   leaks      `heapscript leaks TRACE` end to end (decode, processes,
#              stacks, lifetimes, grouping, report)
#   lua        trace:allocations():summary() and a group by stack
B=${HS_BUILD:-build/rel}
HS=./heapscript
C=${HEAPSCRIPT_CORPUS:-../shared/traces}
N=${BENCH_EVENTS:-5000000}
R=${BENCH_RUNS:-3}
T=${TMPDIR:-/tmp}/heapscript-bench
mkdir -p "$T"
G=$T/heap-$N.etl
if [ ! -s "$G" ]; then
  echo "generating $G ($N heap events with stacks)..."
  $HS tests/bench/gen_heap.lua -- "$G" "$N" >/dev/null || exit 1
fi
cat > "$T/e2e.lua" <<'LUA'
local A = trace:allocations{ kind = "heap" }
local s = A:summary()
local g = A:group("stack", { sort = "impacting", desc = true, top = 5 })
print(("%d records, %d outstanding bytes, top stack %d B impacting"):format(
  s.count, s.AIFO.bytes, g[1] and g[1].impacting or 0))
LUA
cat > "$T/e2e-scoped.lua" <<'LUA'
trace:scope{ kind = "heap", pid = 999999 }    -- a process the trace does not have: keeps nothing
local A = trace:allocations()
print(("scoped: %d records kept, %d memory events left out"):format(#A, trace:memory_stats().out_of_scope))
LUA

now_ns() { date +%s%N; }
# best wall seconds of R runs of a command (its output dropped)
best() {
  b=""
  i=0
  while [ $i -lt "$R" ]; do
    s=$(now_ns); "$@" >/dev/null 2>&1; e=$(now_ns)
    t=$((e - s))
    if [ -z "$b" ] || [ $t -lt $b ]; then b=$t; fi
    i=$((i + 1))
  done
  echo "$b" | awk '{ printf "%.6f", $1 / 1e9 }'
}
# peak RSS (KB) of one run
peak() {
  if [ -x /usr/bin/time ]; then /usr/bin/time -f "%M" "$@" 2>&1 >/dev/null | tail -1; else echo 0; fi
}
row() {  # name seconds read walk [note]
  awk -v n="$1" -v t="$2" -v r="$3" -v w="$4" -v note="$5" \
    'BEGIN { printf "  %-28s %9.3f s %8.2fx %8.2fx  %s\n", n, t, t / r, t / w, note }'
}

bench_trace() {
  f=$1
  set -- $("$B/bench_read" -t "$R" "$f")
  rd=$1 wk=$2 ev=$3 by=$4
  wk0=$(HEAPSCRIPT_THREADS=0 "$B/bench_read" -t "$R" "$f" | cut -d' ' -f2)
  echo
  echo "== $(basename "$f"): $(awk -v b="$by" 'BEGIN { printf "%.1f MB", b / 1e6 }'), $ev events"
  printf "  %-28s %11s %9s %9s\n" "stage" "best of $R" "x read" "x walk"
  row "read(2) of the bytes" "$rd" "$rd" "$wk" "$(awk -v b="$by" -v t="$rd" 'BEGIN { printf "%.0f MB/s", b / 1e6 / t }')"
  row "walk" "$wk" "$rd" "$wk" "$(awk -v e="$ev" -v t="$wk" 'BEGIN { printf "%.1f M events/s", e / 1e6 / t }')"
  row "walk, HEAPSCRIPT_THREADS=0" "$wk0" "$rd" "$wk" "$(awk -v e="$ev" -v t="$wk0" 'BEGIN { printf "%.1f M events/s", e / 1e6 / t }')"
  row "heapscript info" "$(best $HS info "$f")" "$rd" "$wk"
  a=$("$B/bench_analysis" analyse "$f")
  a0=$(HEAPSCRIPT_THREADS=0 "$B/bench_analysis" analyse "$f")
  la=$(echo "$a" | awk '{ print $2 }')
  row "lifetimes (C pass)" "$la" "$rd" "$wk" \
    "$(echo "$a" | awk '{ printf "%s records, anon %s MB = %.0f B/record", $8, $15, $8 ? $15 * 1048576 / $8 : 0 }')"
  row "lifetimes, THREADS=0" "$(echo "$a0" | awk '{ print $2 }')" "$rd" "$wk"
  row "heapscript leaks, end to end" "$(best $HS leaks "$f")" "$rd" "$wk" "peak RSS $(peak $HS leaks "$f") KB"
  row "lua summary + group by stack" "$(best $HS "$T/e2e.lua" "$f")" "$rd" "$wk" "peak RSS $(peak $HS "$T/e2e.lua" "$f") KB"
  row "lua, trace:scope keeping none" "$(best $HS "$T/e2e-scoped.lua" "$f")" "$rd" "$wk" "peak RSS $(peak $HS "$T/e2e-scoped.lua" "$f") KB"
}

echo "heapscript bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc 2>/dev/null || echo '?') cores; load before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
bench_trace "$G"
S="$C/Siemens-Healthineers_ETWAnalyzer__TraceLoggingTester.etl"
if [ -f "$S" ]; then bench_trace "$S"; else echo; echo "(corpus not found in $C: the real-trace figures are skipped)"; fi
echo
echo "== the lifetime tracker and the window queries alone (synthetic memops, no trace)"
"$B/bench_lifetime" 5000000
