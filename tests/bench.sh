#!/bin/sh
# bench.sh -- `make bench`: speed and memory, measured in one run, every
# figure as a ratio against read(2) of the same bytes and against the
# plain walk of the same trace, both measured in this run.  Never a test.
#
# Traces: the generated heap trace (tests/bench/gen_heap.lua: BENCH_EVENTS
# heap events, default 5,000,000, each allocation with its StackWalk; kept
# in $TMPDIR/heapscript-bench between runs) and the largest corpus trace.
# Each figure is the best of BENCH_RUNS rounds (default 5: on a shared
# machine single runs of the same binary differ by a third), every stage
# run once a round (see bench_trace); on a trace under 200 MB the
# in-process stages (read, walk, the C pass) take their best of 5 runs
# within each round.  Stages:
#   read       read(2) of the whole file in 1 MiB chunks, page cache warm
#   walk       hs_reader_next over every record (decoding workers on)
#   walk -T    the same with HEAPSCRIPT_THREADS=0 (no extra thread)
#   info       `heapscript info` end to end
#   lifetimes  the C analysis pass: processes, memory decoders, stacks,
#              lifetimes (the reader and memory decoding on another thread)
#   lifetimes -T  the same with HEAPSCRIPT_THREADS=0
#   floor      (generated trace) bench_floor: the least a leak pass must do
#              (heap blocks in a map, records in columns, stack numbers), in
#              the walk's loop: a yardstick for the two above, not heapscript
#   leaks      `heapscript leaks TRACE` end to end (decode, processes,
#              stacks, lifetimes, grouping, report)
#   lua        trace:allocations():summary() and a group by stack
# and, under each table, the processor time of the walk, the least pass,
# the C pass and leaks (every thread): the work, whatever the overlap; and
# where the C pass's two threads waited for each other (its best run).
#
# Then: the generated traffic from 4, 16 and 128 CPUs (walk and leaks, peak
# memory); the report files of leaks (and a diff) on 100,000 distinct stacks, against the walk
# of that trace, and on 10,000 stacks each seen in 20 processes of one program; and the PDB reader: opening a ~100 MB PDB made with clang + lld,
# and 1,000,000 address lookups, beside llvm-symbolizer on the same addresses.
B=${HS_BUILD:-build/rel}
HS=./heapscript
C=${HEAPSCRIPT_CORPUS:-../shared/traces}
N=${BENCH_EVENTS:-5000000}
R=${BENCH_RUNS:-5}
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
# wall seconds of one run of a command (its output dropped)
once() {
  s=$(now_ns); "$@" >/dev/null 2>&1; e=$(now_ns)
  echo $((e - s)) | awk '{ printf "%.6f", $1 / 1e9 }'
}
# the smaller of two figures ("" is none yet)
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b + 0 < a + 0) ? b : a }'; }
# processor time of one run, every thread (user + system seconds), and its
# peak RSS (KB); "- 0" without /usr/bin/time
usage() {
  if [ -x /usr/bin/time ] && /usr/bin/time -f "%U %S %M" -o "$T/usage" "$@" >/dev/null 2>&1; then
    awk '{ print $1 + $2, $3 }' "$T/usage"
  else echo "- 0"; fi
}
peak() { usage "$@" | cut -d' ' -f2; }
# events a second at t seconds
rate() { awk -v e="$ev" -v t="$1" 'BEGIN { printf "%.1f M events/s", e / 1e6 / t }'; }
row() {  # name seconds read walk [note]
  awk -v n="$1" -v t="$2" -v r="$3" -v w="$4" -v note="$5" \
    'BEGIN { printf "  %-28s %9.3f s %8.2fx %8.2fx  %s\n", n, t, t / r, t / w, note }'
}

# R rounds over one trace, each running every stage once; each stage's
# figure is its best round.  On a shared host the machine's speed changes
# for minutes at a time (the threaded walk by half): stages timed in turn
# see the same machine, so their ratios hold where R runs of one stage and
# then R of the next would compare a fast minute with a slow one.
bench_trace() {
  f=$1 G_=$2
  rd="" wk="" wk0="" inf="" la="" la0="" fl="" lk="" lu="" sc="" a="" flr="" ring=""
  wkc="" lac="" flc="" lkc="" lkm=0     # processor time, every thread; leaks' peak RSS
  # a trace read in a few milliseconds: the in-process stages take their
  # best of 5 runs within each round (timer and scheduling are its noise)
  n=1; [ "$(wc -c < "$f")" -lt 200000000 ] && n=5
  k=0
  while [ $k -lt "$R" ]; do
    set -- $("$B/bench_read" -t $n "$f")
    rd=$(min "$rd" "$1"); wk=$(min "$wk" "$2"); ev=$3 by=$4 wkc=$(min "$wkc" "$5")
    wk0=$(min "$wk0" "$(HEAPSCRIPT_THREADS=0 "$B/bench_read" -t $n "$f" | cut -d' ' -f2)")
    inf=$(min "$inf" "$(once $HS info "$f")")
    x=$("$B/bench_analysis" analyse "$f" $n 2>"$T/ring")
    t=$(min "$la" "$(echo "$x" | awk '{ print $2 }')")
    if [ "$t" != "$la" ]; then a=$x la=$t; ring=$(cat "$T/ring"); fi     # the best round's lines
    lac=$(min "$lac" "$(echo "$x" | awk '{ print $(NF - 1) }')")
    la0=$(min "$la0" "$(HEAPSCRIPT_THREADS=0 "$B/bench_analysis" analyse "$f" $n | awk '{ print $2 }')")
    if [ "$G_" = 1 ]; then
      flr=$("$B/bench_floor" "$f" 1)
      fl=$(min "$fl" "$(echo "$flr" | awk '{ print $2 }')")
      flc=$(min "$flc" "$(echo "$flr" | awk '{ print $7 }')")
    fi
    lk=$(min "$lk" "$(once $HS leaks "$f")")
    set -- $(usage $HS leaks "$f")
    [ "$1" != - ] && lkc=$(min "$lkc" "$1")
    lkm=$2
    lu=$(min "$lu" "$(once $HS "$T/e2e.lua" "$f")")
    sc=$(min "$sc" "$(once $HS "$T/e2e-scoped.lua" "$f")")
    k=$((k + 1))
  done
  echo
  echo "== $(basename "$f"): $(awk -v b="$by" 'BEGIN { printf "%.1f MB", b / 1e6 }'), $ev events"
  printf "  %-28s %11s %9s %9s\n" "stage" "best of $R" "x read" "x walk"
  row "read(2) of the bytes" "$rd" "$rd" "$wk" "$(awk -v b="$by" -v t="$rd" 'BEGIN { printf "%.0f MB/s", b / 1e6 / t }')"
  row "walk" "$wk" "$rd" "$wk" "$(rate "$wk")"
  row "walk, HEAPSCRIPT_THREADS=0" "$wk0" "$rd" "$wk" "$(rate "$wk0")"
  row "heapscript info" "$inf" "$rd" "$wk"
  row "lifetimes (C pass)" "$la" "$rd" "$wk" \
    "$(echo "$a" | awk '{ printf "%s records, anon %s MB = %.0f B/record", $8, $15, $8 ? $15 * 1048576 / $8 : 0 }')"
  row "lifetimes, THREADS=0" "$la0" "$rd" "$wk"
  if [ "$G_" = 1 ]; then
    row "least pass (yardstick)" "$fl" "$rd" "$wk" \
      "$(echo "$flr" | awk '{ printf "%s records, %s leaked, %s stacks", $4, $5, $6 }')"
  fi
  row "heapscript leaks, end to end" "$lk" "$rd" "$wk" "peak RSS $lkm KB"
  row "lua summary + group by stack" "$lu" "$rd" "$wk" "peak RSS $(peak $HS "$T/e2e.lua" "$f") KB"
  row "lua, trace:scope keeping none" "$sc" "$rd" "$wk" "peak RSS $(peak $HS "$T/e2e-scoped.lua" "$f") KB"
  if [ "$G_" = 1 ]; then
    awk -v l="$lk" -v p="$la" -v f="$fl" 'BEGIN { printf "  against the least pass: the C pass %.2fx, leaks %.2fx\n", p / f, l / f }'
  fi
  # the work, whatever the threads overlap: processor time against the walk's
  awk -v w="$wkc" -v f="$flc" -v p="$lac" -v l="$lkc" 'BEGIN {
    printf "  processor time, every thread, x the walk: walk %.3f s", w
    if (f != "") printf "; least pass %.3f s, %.2fx", f, f / w
    printf "\n    C pass %.3f s, %.2fx", p, p / w
    if (l != "") printf "; leaks %.3f s, %.2fx", l, l / w
    printf "\n" }'
  # where the C pass's two threads waited for each other (prefetch.h)
  [ -n "$ring" ] && echo "  C pass, $ring"
  # issue 9's two ratios, as this run measured them
  awk -v r="$rd" -v w="$wk" -v l="$lk" '
    function says(x) { x = sprintf("%.2f", x); return x "x, " (x + 0 <= 2 ? "met" : "not met") }
    BEGIN { printf "  targets (issue 9): the walk within 2x of read(2): %s\n", says(w / r)
            printf "                     leaks at most 2x the walk: %s\n", says(l / w) }'
}

echo "heapscript bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc 2>/dev/null || echo '?') cores; load before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
bench_trace "$G" 1
S="$C/Siemens-Healthineers_ETWAnalyzer__TraceLoggingTester.etl"
if [ -f "$S" ]; then bench_trace "$S" 0; else echo; echo "(corpus not found in $C: the real-trace figures are skipped)"; fi
echo
echo "== many CPUs: the generated traffic (500,000 events) from 4, 16 and 128 CPUs, one thread on each"
# A many-core machine's trace has its events in as many per-CPU streams,
# interleaved: the merge and what it keeps decoded ahead grow with them.
for c in 4 16 128; do
  M=$T/heap-500000-cpus$c.etl
  [ -s "$M" ] || $HS tests/bench/gen_heap.lua -- "$M" 500000 none $c >/dev/null || exit 1
  set -- $("$B/bench_read" -t 5 "$M")
  mrd=$1 mwk=$2
  mwk0=$(HEAPSCRIPT_THREADS=0 "$B/bench_read" -t 5 "$M" | cut -d' ' -f2)
  mlk=""; k=0
  while [ $k -lt 3 ]; do mlk=$(min "$mlk" "$(once $HS leaks "$M")"); k=$((k + 1)); done
  awk -v c="$c" -v r="$mrd" -v w="$mwk" -v w0="$mwk0" -v l="$mlk" -v m="$(peak $HS leaks "$M")" 'BEGIN {
    printf "%4d CPUs: read(2) %.4f s, walk %.4f s (%.2fx read), THREADS=0 %.4f s; leaks %.3f s (%.2fx the walk), peak RSS %d KB\n",
      c, r, w, w / r, w0, l, l / w, m }'
done
echo
echo "== the lifetime tracker and the window queries alone (synthetic memops, no trace)"
"$B/bench_lifetime" 5000000
echo
echo "== report files on 100,000 distinct leaking stacks (tests/bench/gen_stacks.lua), against its walk"
S=$T/stacks-100000.etl
[ -s "$S" ] || $HS tests/bench/gen_stacks.lua -- "$S" 100000 >/dev/null || exit 1
set -- $("$B/bench_read" -t 5 "$S")
swk=$2
printf '%-28s wall %6.3f s (best of 5), read(2) %.3f s\n' "walk" "$swk" "$1"
# one run each: wall seconds, x the walk, peak RSS
report_run() {  # label command...
  l=$1; shift
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%e %M" -o "$T/usage" "$@" >/dev/null 2>&1
    awk -v l="$l" -v w="$swk" 'END { printf "%-28s wall %6.2f s %8.1fx the walk, peak RSS %d KB\n", l, $1, $1 / w, $2 }' "$T/usage"
  else
    printf '%-28s wall %6.2f s\n' "$l" "$(once "$@")"
  fi
}
for o in "" "--folded $T/s.folded" "--html $T/s.html" "--json $T/s.json"; do
  # shellcheck disable=SC2086
  report_run "leaks ${o%% *}" $HS leaks "$S" -- --top 3 $o
done
report_run "diff, the trace and itself" $HS diff "$S" "$S"
ls -l "$T/s.html" | awk '{ printf "html page: %d bytes\n", $5 }'
echo
echo "== report files on 10,000 stacks in 20 processes of one program (gen_stacks.lua 10000 20), against its walk"
S=$T/stacks-10000x20.etl
[ -s "$S" ] || $HS tests/bench/gen_stacks.lua -- "$S" 10000 20 >/dev/null || exit 1
set -- $("$B/bench_read" -t 5 "$S")
swk=$2
printf '%-28s wall %6.3f s (best of 5), read(2) %.3f s\n' "walk" "$swk" "$1"
for o in "" "--folded $T/m.folded" "--html $T/m.html"; do
  # shellcheck disable=SC2086
  report_run "leaks ${o%% *}" $HS leaks "$S" -- --top 3 $o
done
echo
echo "== PDB reader: open a large PDB, resolve 1,000,000 distinct addresses, beside llvm-symbolizer"
# A large PDB made here with clang + lld: one generated C file of 2,000
# functions (static inline helpers, so inline sites), compiled to assembly
# once, then assembled BENCH_PDB_COPIES times under other names (same-length
# renames keep the CodeView records valid) and linked.  85 copies make a
# PDB of about 100 MB.  Kept in $T/pdb between runs.
P=$T/pdb; K=${BENCH_PDB_COPIES:-85}; NA=${BENCH_PDB_ADDRS:-1000000}; NL=${BENCH_PDB_LLVM:-2000}
L=$(ls -d /usr/lib/gcc/x86_64-w64-mingw32/*-win32 2>/dev/null | head -n 1)
if ! command -v clang >/dev/null || ! command -v ld.lld >/dev/null || [ -z "$L" ]; then
  echo "SKIP: clang, lld or the mingw-w64 runtime missing (make deps)"
else
  mkdir -p "$P"
  if [ ! -s "$P/big-$K.pdb" ]; then
    echo "generating a PDB of $K x 2000 functions in $P..."
    awk 'BEGIN {
      print "struct PFX_s { int a, b; };";
      print "static inline int PFX_mix(int x, int k) { return (x * k) ^ (x >> 3); }";
      print "static inline int PFX_step(struct PFX_s *s, int i) { s->a += PFX_mix(i, s->b); return s->a & 7; }";
      for (i = 0; i < 2000; i++) {
        printf "__attribute__((noinline)) int PFX_f%d(int x) {\n  struct PFX_s s = { x, %d };\n  int r = 0;\n", i, i;
        printf "  for (int i = 0; i < x; i++) r += PFX_step(&s, i + %d);\n  return r + PFX_mix(r, %d);\n}\n", i, i + 1;
      }
      printf "int (*PFX_table[])(int) = {";
      for (i = 0; i < 2000; i++) printf "%sPFX_f%d", i ? ", " : "", i;
      print "};";
    }' > "$P/tu.c"
    clang --target=x86_64-w64-mingw32 -g -gcodeview -O1 -S -o "$P/tu.s" "$P/tu.c" || exit 1
    : > "$P/main.c"
    for k in $(seq 1 "$K"); do
      q=q$(printf %03d "$k")
      sed "s/PFX_/$q/g" "$P/tu.s" > "$P/$q.s" && clang --target=x86_64-w64-mingw32 -c -o "$P/$q.o" "$P/$q.s" || exit 1
      rm -f "$P/$q.s"
      echo "extern int (*${q}table[])(int);" >> "$P/main.c"
    done
    { echo "int main(int argc, char **argv) { (void)argv; int r = 0;"
      for k in $(seq 1 "$K"); do echo "  r += q$(printf %03d "$k")table[argc](argc);"; done
      echo "  return r; }"; } >> "$P/main.c"
    clang --target=x86_64-w64-mingw32 -g -gcodeview -O1 -fuse-ld=lld -Wl,--pdb="$P/big-$K.pdb" -L"$L" \
      -o "$P/big-$K.exe" "$P/main.c" "$P"/q*.o || exit 1
    rm -f "$P"/q*.o "$P/tu.s"
  fi
  out=$("$B/bench_pdb" "$P/big-$K.pdb" "$P/addrs" "$NA") || exit 1
  echo "$out"
  ours=$(echo "$out" | sed -n 's/^lookup: .* s: \([0-9]*\) ns\/address.*/\1/p')
  if command -v llvm-symbolizer >/dev/null; then
    # llvm-symbolizer 14 needs milliseconds an address here (it scans the
    # module's symbols and copies its line table for every lookup: 14 ms on
    # the 100 MB PDB): a million would take hours, so it resolves the first
    # NL (BENCH_PDB_LLVM, 2000) of the same shuffled addresses.
    head -n "$NL" "$P/addrs" > "$P/addrs-llvm"
    echo 0x1000 > "$P/one"
    s0=$(date +%s.%N); llvm-symbolizer --obj="$P/big-$K.exe" --relative-address --inlining < "$P/one" >/dev/null
    s1=$(date +%s.%N); llvm-symbolizer --obj="$P/big-$K.exe" --relative-address --inlining < "$P/addrs-llvm" >/dev/null
    s2=$(date +%s.%N)
    echo "$s0 $s1 $s2 $NL $ours" | awk '{ one = $2 - $1; all = $3 - $2; per = (all - one) / $4 * 1e9;
      printf "llvm-symbolizer: one address (start, open) %.0f ms; %d addresses in %.2f s: %.0f ns/address\n", one * 1e3, $4, all, per;
      if ($5 > 0) printf "ratio llvm-symbolizer/heapscript per address: %.0fx\n", per / $5 }'
  else
    echo "SKIP: llvm-symbolizer missing: no comparison"
  fi
fi
