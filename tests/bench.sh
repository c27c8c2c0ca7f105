#!/bin/sh
# bench.sh -- `make bench`: speed and memory, measured in one run, as
# ratios against a baseline measured in the same run.  Never a test.
#  1. decode vs reading the bytes (cat): the largest corpus traces and a
#     large generated trace;
#  2. lifetime tracking vs the plain decode of the same generated trace of
#     5 million heap events, each in its own process (peak RSS, anon RSS);
#  3. the same trace end to end through a Lua script (trace:allocations);
#  4. the report files of leaks on 100,000 distinct stacks, against leaks alone.
# BENCH_EVENTS overrides the 5,000,000 events; the trace is kept in
# $TMPDIR/heapscript-bench between runs.
B=${HS_BUILD:-build/rel}
HS=./heapscript
C=${HEAPSCRIPT_CORPUS:-../shared/traces}
N=${BENCH_EVENTS:-5000000}
T=${TMPDIR:-/tmp}/heapscript-bench
mkdir -p "$T"
G=$T/heap-$N.etl
if [ ! -s "$G" ]; then
  echo "generating $G ($N heap events with stacks)..."
  $HS tests/bench/gen_heap.lua -- "$G" "$N" >/dev/null || exit 1
fi
echo "== 1. decode (walk every record) vs read(2) of the same bytes from the page cache"
set --
for f in "$C/Siemens-Healthineers_ETWAnalyzer__TraceLoggingTester.etl" \
         "$C/microsoft_perfview__net.4.5.x86_PerfViewData.etl" \
         "$C/microsoft_perfview__net.4.5.2.x64.etl"; do
  [ -f "$f" ] && set -- "$@" "$f"
done
"$B/bench_read" "$@" "$G"
echo
echo "== 2. lifetime tracking (procmap + memory decoders + stacks + lifetimes) vs plain decode"
w=$("$B/bench_analysis" walk "$G"); a=$("$B/bench_analysis" analyse "$G")
echo "$w"; echo "$a"
echo "$w $a" | awk '{ for (i = 1; i <= NF; i++) if ($i == "s") t[++n] = $(i-1);
  printf "ratio analyse/walk: %.2f\n", t[2] / t[1] }'
echo
echo "== 2b. the lifetime tracker and the window queries alone (synthetic memops, no trace)"
"$B/bench_lifetime" 5000000
echo
echo "== 3. end to end in Lua: trace:allocations():summary() and a group by stack"
cat > "$T/e2e.lua" <<'LUA'
local t0 = os.clock()
local A = trace:allocations{ kind = "heap" }
local s = A:summary()
local g = A:group("stack", { sort = "impacting", desc = true, top = 5 })
local st = trace:memory_stats()
print(("%d records, %d outstanding bytes, top stack %d B impacting; %.2f s CPU"):format(
  s.count, s.AIFO.bytes, g[1] and g[1].impacting or 0, os.clock() - t0))
LUA
cat > "$T/e2e-scoped.lua" <<'LUA'
-- the same question, declared up front: only the blocks still outstanding
-- at the end are kept as records (trace:scope + outstanding allocations
-- are what a leak check needs)
trace:scope{ kind = "heap", pid = 999999 }    -- a process the trace does not have: keeps nothing
local A = trace:allocations()
print(("scoped: %d records kept, %d memory events left out"):format(#A, trace:memory_stats().out_of_scope))
LUA
timed() {
  if command -v /usr/bin/time >/dev/null; then /usr/bin/time -f "wall %e s, peak RSS %M KB" "$@"
  else start=$(date +%s.%N); "$@"; echo "wall $(echo "$(date +%s.%N) - $start" | bc) s"; fi
}
timed $HS "$T/e2e.lua" "$G"
echo "== 3b. memory grows with the allocations kept: the same trace with a scope that keeps none"
timed $HS "$T/e2e-scoped.lua" "$G"
echo
echo "== 4. report files on 100,000 distinct leaking stacks (tests/bench/gen_stacks.lua), vs leaks alone"
S=$T/stacks-100000.etl
[ -s "$S" ] || $HS tests/bench/gen_stacks.lua -- "$S" 100000 >/dev/null || exit 1
for o in "" "--folded $T/s.folded" "--html $T/s.html"; do
  # shellcheck disable=SC2086
  printf '%-28s' "leaks ${o%% *}"; timed $HS leaks "$S" -- --top 3 $o >/dev/null
done
ls -l "$T/s.html" | awk '{ printf "html page: %d bytes\n", $5 }'
