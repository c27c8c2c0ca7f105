#!/bin/sh
# bigtrace.sh -- `make bigcheck`: a trace larger than 4 GiB, end to end.
# Not part of `make test` or CI (it writes ~4.6 GB and takes a few
# minutes); run it after touching file offsets, buffer indexes or the
# reader's slots and mappings.
#
# tests/bench/gen_heap.lua writes BIG_EVENTS heap events (default
# 32,000,000: 48 M records, 4.6 GB) into $BIG_DIR (default
# $TMPDIR/heapscript-big) and prints what it wrote.  Then:
#   - the file is larger than 4 GiB;
#   - `info --json` counts every record the generator wrote (and the
#     logfile header), no damaged buffer, and as many buffers as written;
#   - the last event is read from a buffer that starts past 4 GiB;
#   - `leaks --json` finds every allocation and exactly the leaked ones;
#   - its peak resident memory stays below 100 bytes a record (the
#     README's figure is 56: proportional to the allocations kept).
# The trace is kept for the next run (BIG_KEEP=0 removes it).
HS=${HS_BIN:-./heapscript}
N=${BIG_EVENTS:-32000000}
D=${BIG_DIR:-${TMPDIR:-/tmp}/heapscript-big}
G=$D/heap-$N.etl
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

mkdir -p "$D" || exit 1
if [ ! -s "$G" ] || [ ! -s "$G.gen" ]; then
  need=$((N / 1000 * 150 / 1000 + 500))     # MB: ~144 bytes an event, and room
  free=$(df -Pm "$D" | awk 'NR == 2 { print $4 }')
  if [ "${free:-0}" -lt "$need" ]; then
    echo "FAIL $D has ${free:-?} MB free; the trace needs about $need MB (set BIG_DIR)"
    exit 1
  fi
  echo "generating $G ($N heap events with stacks)..."
  $HS tests/bench/gen_heap.lua -- "$G" "$N" > "$G.gen" || { rm -f "$G" "$G.gen"; exit 1; }
fi
# events=N allocs=N frees=N leaked=N stacks=N records=N bytes=N seconds=S
gen() { tr ' ' '\n' < "$G.gen" | sed -n "s/^$1=//p"; }
allocs=$(gen allocs); leaked=$(gen leaked); records=$(gen records); bytes=$(gen bytes)
size=$(wc -c < "$G" | tr -d ' ')
echo "trace: $size bytes, $records records, $allocs allocations, $leaked leaked"
[ "$size" = "$bytes" ] && [ "$size" -gt 4294967296 ] && ok "the file is $size bytes, past 4 GiB" \
  || bad "the file is $size bytes (generator: $bytes), not past 4 GiB"

# num KEY: the first number after "KEY": in standard input (JSON)
num() { sed -n "s/.*\"$1\": *\([0-9][0-9]*\).*/\1/p" | head -1; }

# info: every record, every buffer, no damage
info=$($HS info --json "$G") || bad "info exited $?"
field() { echo "$info" | num "$1"; }
inbufs() { echo "$info" | grep '"buffers": *{' | num "$1"; }
ev=$(field events); written=$(field buffers_written); walked=$(inbufs walked); damaged=$(inbufs damaged)
[ "$ev" = "$((records + 1))" ] && ok "info: $ev events (the generator's $records records and the logfile header)" \
  || bad "info: $ev events, expected $((records + 1))"
[ -n "$written" ] && [ "$walked" = "$written" ] && [ "$damaged" = "0" ] && ok "info: $walked buffers walked of $written written, none damaged" \
  || bad "info: buffers walked '$walked', written '$written', damaged '$damaged'"

# the last event comes from a buffer that starts past 4 GiB
bsize=$(field buffer_size)
dur=$($HS info "$G" | sed -n 's/^duration: *\([0-9.]*\) s.*/\1/p')
from=$(echo "$dur" | awk '{ printf "%.6f", ($1 > 0.01 ? $1 - 0.01 : 0) }')
last=$($HS dump --jsonl --from "$from" "$G" | tail -1)
buf=$(echo "$last" | num buffer)
[ -n "$buf" ] && [ -n "$bsize" ] && [ $((buf * bsize)) -gt 4294967296 ] \
  && ok "dump: the last event is in buffer $buf, at byte $((buf * bsize)) and beyond" \
  || bad "dump: the last event's buffer is '$buf' (buffer size '$bsize'): $last"

# leaks: every allocation, exactly the leaked ones, memory per record
tm=""
[ -x /usr/bin/time ] && tm="/usr/bin/time -f %M -o $D/rss"
$tm $HS leaks --json "$D/leaks.json" "$G" > /dev/null || bad "leaks exited $?"
recs=$(num records < "$D/leaks.json")
lc=$(num leaked_count < "$D/leaks.json")
[ "$recs" = "$allocs" ] && ok "leaks: $recs heap records" || bad "leaks: $recs heap records, expected $allocs"
[ "$lc" = "$leaked" ] && ok "leaks: $lc leaked" || bad "leaks: $lc leaked, expected $leaked"
if [ -s "$D/rss" ]; then
  kb=$(tail -1 "$D/rss")
  per=$((kb * 1024 / allocs))
  [ "$per" -lt 100 ] && ok "leaks: peak resident $((kb / 1024)) MB, $per bytes a record" \
    || bad "leaks: peak resident $((kb / 1024)) MB, $per bytes a record (100 at most)"
else
  echo "skip peak resident memory: no /usr/bin/time"
fi
[ "${BIG_KEEP:-1}" = 0 ] && rm -f "$G" "$G.gen"
rm -f "$D/leaks.json" "$D/rss"
[ $fail = 0 ] && echo "bigcheck: ok" || echo "bigcheck: FAILED"
exit $fail
