#!/bin/sh
# bench.sh -- `make bench`: speed and memory, measured in one run, as
# ratios against a baseline measured in the same run.  Never a test.
#  1. decode vs reading the bytes (cat): the largest corpus traces and a
#     large generated trace;
#  2. lifetime tracking vs the plain decode of the same generated trace of
#     5 million heap events, each in its own process (peak RSS, anon RSS);
#  3. the same trace end to end through a Lua script (trace:allocations);
#  4. the report files of leaks on 100,000 distinct stacks, against leaks alone.
#  5. the PDB reader: opening a ~100 MB PDB made with clang + lld, and
#     1,000,000 address lookups, beside llvm-symbolizer on the same addresses.
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
echo
echo "== 5. PDB reader: open a large PDB, resolve 1,000,000 distinct addresses, beside llvm-symbolizer"
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
