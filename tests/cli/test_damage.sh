#!/bin/sh
# test_damage.sh -- damaged variants of real traces (made in a temp dir,
# never committed; the bundled traces always, the full corpus when present): truncated mid-buffer, a buffer header overwritten, a
# buffer zeroed, a compressed buffer corrupted, a record size broken.
# heapscript must report each with the byte offset, keep the rest, exit 1,
# and never crash or hang.
HS=${HS_BIN:-./heapscript}
C=${HEAPSCRIPT_CORPUS:-../shared/traces}
B=tests/corpus/traces            # the traces bundled in the repository: always there
if [ ! -f "$C/MANIFEST.tsv" ]; then
  if [ "$CI" = true ]; then echo "corpus missing at $C and CI=true"; exit 1; fi
  echo "SKIP the full corpus: none at $C; the bundled traces ($B) only"
  C=
fi
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0
no() { echo "not ok: $*"; fails=$((fails + 1)); }

events() { "$HS" info --json "$1" 2>"$T/err" | sed -n 's/^  "events": \([0-9]*\),$/\1/p'; }

# check NAME FILE MIN MAX: exit 1, a message with an offset, events in [MIN, MAX]
check() {
  "$HS" info --json "$2" >"$T/out" 2>"$T/err"; rc=$?
  n=$(sed -n 's/^  "events": \([0-9]*\),$/\1/p' "$T/out")
  [ "$rc" -eq 1 ] || no "$1: exit $rc, expected 1 (damage reported)"
  grep -q "offset 0x[0-9a-f]*.*expected" "$T/err" || no "$1: no message with offset and expectation: $(head -c 300 "$T/err")"
  [ -n "$n" ] && [ "$n" -ge "$3" ] && [ "$n" -le "$4" ] || no "$1: $n events, expected $3..$4"
  echo "ok $1: $n events, $(head -n 1 "$T/err")"
}

# uncompressed K EVENTS BUFSIZE: the damage of an uncompressed trace of
# EVENTS records in BUFSIZE buffers (at least 8 of them)
uncompressed() {
  K=$1; full=$2; bs=$3; tag=$(basename "$K" .etl)
  cp "$K" "$T/k.etl"
  [ "$(events "$T/k.etl")" = "$full" ] || no "$tag baseline: $(events "$T/k.etl") events, expected $full"
  # 1. truncated in the middle of the fourth buffer; and at its end (no buffer is cut, yet the
  #    header says more were written: reported at the file's end, with the buffers missing)
  head -c $((3 * bs + bs / 2)) "$K" >"$T/trunc.etl"
  check "$tag truncated" "$T/trunc.etl" 1 $((full - 1))
  head -c $((4 * bs)) "$K" >"$T/trunc4.etl"
  check "$tag truncated at a buffer's end" "$T/trunc4.etl" 1 $((full - 1))
  grep -q "offset 0x$(printf '%x' $((4 * bs))) (buffer 4): damaged: expected [0-9]* more buffers: the header says [0-9]* were written, the file ends after 4" "$T/err" \
    || no "$tag truncated at a buffer's end: the message: $(head -c 300 "$T/err")"
  # 2. the second buffer's header overwritten with garbage: skipped, the rest read
  cp "$K" "$T/hdr.etl"
  printf '\377\377\377\377\377\377\377\377' | dd of="$T/hdr.etl" bs=1 seek=$bs conv=notrunc 2>/dev/null
  check "$tag bad-buffer-header" "$T/hdr.etl" $((full / 2)) $((full - 1))
  # 3. a whole data buffer zeroed
  cp "$K" "$T/zero.etl"
  dd if=/dev/zero of="$T/zero.etl" bs=$bs seek=5 count=1 conv=notrunc 2>/dev/null
  check "$tag zeroed-buffer" "$T/zero.etl" $((full / 2)) $((full - 1))
  # 4. a record Size broken inside a buffer (the first record of buffer 3)
  cp "$K" "$T/rec.etl"
  printf '\001\000' | dd of="$T/rec.etl" bs=1 seek=$((3 * bs + 0x48 + 4)) conv=notrunc 2>/dev/null
  check "$tag bad-record" "$T/rec.etl" $((full / 2)) $((full - 1))
}

# ProcessorIndex is 11 bits (ETL-FORMAT.md §1): bits above them are no other CPU. 65,536 buffers of
# distinct indices once made 65,536 streams (1 GB, 20 s for an 8.9 MB file); notmyfault's buffer 2 with
# 0xF802 is CPU 2, its events all there and in order
cp examples/notmyfault.etl "$T/cpu.etl"
printf '\002\370' | dd of="$T/cpu.etl" bs=1 seek=$((2 * 65536 + 0x28)) conv=notrunc 2>/dev/null
a=$("$HS" dump --jsonl examples/notmyfault.etl | md5sum); b=$("$HS" dump --jsonl "$T/cpu.etl" | md5sum)
[ "$a" = "$b" ] && echo "ok ProcessorIndex 0xF802: CPU 2, the dump unchanged" || no "ProcessorIndex 0xF802 read as another CPU"

# Offset and SavedOffset disagree in a data buffer (one in every sound one): an Offset lowered in
# notmyfault's buffer 4 lost its records after it without a word; now said, and read to the larger
cp examples/notmyfault.etl "$T/off.etl"
printf '\110\000\000\000' | dd of="$T/off.etl" bs=1 seek=$((4 * 65536 + 0x30)) conv=notrunc 2>/dev/null
check "notmyfault Offset lowered in buffer 4" "$T/off.etl" "$(events examples/notmyfault.etl)" "$(events examples/notmyfault.etl)"
grep -q "offset 0x40000 (buffer 4): damaged: expected Offset (0x30) equal to SavedOffset (0x04), found 0x48 and 0xffd8" "$T/err" \
  || no "Offset lowered: the message: $(head -c 300 "$T/err")"
# ... and in a compressed buffer: both lowered to 0x49, the stream inflates past them: said
cp "$B/microsoft_perfview__net.4.5.2.x86.etl" "$T/czs.etl"
printf '\111\000\000\000' | dd of="$T/czs.etl" bs=1 seek=$((0x200 + 4)) conv=notrunc 2>/dev/null
printf '\111\000\000\000' | dd of="$T/czs.etl" bs=1 seek=$((0x200 + 0x30)) conv=notrunc 2>/dev/null
check "net.4.5.2.x86 SavedOffset lowered in compressed buffer 1" "$T/czs.etl" 100000 168297
grep -q "offset 0x200 (buffer 1): damaged: expected a compressed stream inflating to SavedOffset-0x48 bytes" "$T/err" \
  || no "compressed SavedOffset lowered: the message: $(head -c 300 "$T/err")"

# an uncompressed data buffer's BufferSize other than the file's (the logfile header's): said, and
# stepped over by the file's, so the sound buffer after it is read (twice the size swallowed it)
for sz in '\000\000\002\000' '\010\000\001\000'; do
  cp examples/notmyfault.etl "$T/bs.etl"
  printf "$sz" | dd of="$T/bs.etl" bs=1 seek=$((3 * 65536)) conv=notrunc 2>/dev/null
  check "notmyfault BufferSize of buffer 3 changed" "$T/bs.etl" "$(events examples/notmyfault.etl)" "$(events examples/notmyfault.etl)"
  grep -q "offset 0x30000 (buffer 3): damaged: expected BufferSize 0x10000 as the logfile header's, found 0x[0-9a-f]* (read as 0x10000)" "$T/err" \
    || no "BufferSize changed: the message: $(head -c 300 "$T/err")"
done

# a buffer copied in again after the CPU's later ones (its records would be read twice, out of
# order): skipped as damage, every event once
head -c $((5 * 65536)) examples/notmyfault.etl >"$T/dup.etl"
dd if=examples/notmyfault.etl bs=65536 skip=3 count=1 2>/dev/null >>"$T/dup.etl"
tail -c +$((5 * 65536 + 1)) examples/notmyfault.etl >>"$T/dup.etl"
check "notmyfault buffer 3 copied after buffer 4" "$T/dup.etl" "$(events examples/notmyfault.etl)" "$(events examples/notmyfault.etl)"
grep -q "offset 0x50000 (buffer 5): damaged: expected a buffer later than its CPU's buffers before it" "$T/err" \
  || no "a buffer copied: the message: $(head -c 300 "$T/err")"

# ... but not in a file without per-processor buffering (LogFileMode 0x10000000: a buffer is no one
# CPU's), where buffers of one index may overlap in time: every record read, no damage
cat >"$T/nppb.lua" <<'LUA'
local w = assert(heapscript.writer(arg[1], { log_file_mode = 0x10000001, buffer_size = 1024 }))
w:process { op = "dcstart", pid = 100, ts = 10, name = "a.exe" }
for i = 1, 40 do
  w:heap { op = "alloc", pid = 100, tid = 104, ts = 1000 + 10 * i, heap = 0x10000, addr = 0x20000 + 16 * i, size = 16 }
end
assert(w:close())
LUA
"$HS" "$T/nppb.lua" -- "$T/nppb.etl" >/dev/null 2>&1
# buffers 1 and 2 swapped: their times go back from one to the next
bs=1024
{ head -c $bs "$T/nppb.etl"; dd if="$T/nppb.etl" bs=$bs skip=2 count=1 2>/dev/null; dd if="$T/nppb.etl" bs=$bs skip=1 count=1 2>/dev/null
  tail -c +$((3 * bs + 1)) "$T/nppb.etl"; } >"$T/nppb2.etl"
"$HS" info "$T/nppb2.etl" >/dev/null 2>"$T/err"; rc=$?
[ $rc = 0 ] && [ "$(events "$T/nppb2.etl")" = "$(events "$T/nppb.etl")" ] \
  || no "no per-processor buffering, buffers out of order: exit $rc, $(head -c 200 "$T/err")"

# two traces joined into one file (cat a.etl b.etl): the second's header buffer starts another
# trace on its own clock; said, and the rest left out (it was read on the first's clock, -1,800 s)
cat examples/memorytestapp.etl examples/notmyfault.etl >"$T/cat.etl"
check "two traces joined" "$T/cat.etl" "$(events examples/memorytestapp.etl)" "$(events examples/memorytestapp.etl)"
grep -q "offset 0x3b43e (buffer 20): damaged: expected no second header buffer (BufferType 4): another trace starts here" "$T/err" \
  || no "two traces joined: the message: $(head -c 300 "$T/err")"
[ "$("$HS" leaks "$T/cat.etl" 2>&1 >/dev/null | grep -c 'damaged:')" = 1 ] || no "two traces joined: said once by a script (its reopen)"
# ... but a BufferType alone damaged to 4 is no header buffer: every event read
cp examples/notmyfault.etl "$T/bt4.etl"
printf '\004' | dd of="$T/bt4.etl" bs=1 seek=$((3 * 65536 + 0x36)) conv=notrunc 2>/dev/null
[ "$(events "$T/bt4.etl")" = "$(events examples/notmyfault.etl)" ] || no "BufferType 4 alone: $(events "$T/bt4.etl") events"
# a compressed buffer's Offset raised: said, and inflated to SavedOffset (every event)
cp "$B/microsoft_perfview__net.4.5.2.x86.etl" "$T/coff.etl"
printf '\240\000\001\000' | dd of="$T/coff.etl" bs=1 seek=$((0x200 + 0x30)) conv=notrunc 2>/dev/null
check "net.4.5.2.x86 Offset raised in compressed buffer 1" "$T/coff.etl" 168298 168298

# a logfile header field no trace has (PointerSize 3, PerfFreq 0, a QPC file said to be on system
# time): said at its offset, exit 1, and the trace read as the rest of the file says (PerfFreq 0
# once moved every time silently, 5.5x; ClockType 2 made every record damage)
for c in "0x94 \\003 PointerSize 8, as the header record's type says, found 3" "0x168 \\000\\000\\000\\000\\000\\000\\000\\000 PerfFreq above 0 for its clock, found 0" \
         "0x178 \\002 ClockType 2 (system time) with the header record stamped at StartTime, found it"; do
  at=${c%% *}; rest=${c#* }; bytes=${rest%% *}; want=${rest#* }
  cp examples/notmyfault.etl "$T/lf.etl"
  printf "$bytes" | dd of="$T/lf.etl" bs=1 seek=$((at)) conv=notrunc 2>/dev/null
  check "notmyfault logfile header at $at" "$T/lf.etl" "$(events examples/notmyfault.etl)" "$(events examples/notmyfault.etl)"
  grep -qF "offset $at (buffer 0): damaged: expected $want" "$T/err" || no "header field at $at: the message: $(head -c 300 "$T/err")"
  # the analysis reads the trace as repaired too (it reopens the file), and reports the field once
  "$HS" pool "$T/lf.etl" >"$T/out" 2>"$T/err"; rc=$?
  [ $rc = 1 ] && grep -q "^pool: 1640 allocations" "$T/out" && [ "$(grep -c 'damaged:' "$T/err")" = 1 ] \
    || no "header field at $at: pool (exit $rc): $(head -1 "$T/out") $(grep -c 'damaged:' "$T/err") damage lines"
done

# compressed X OFFSET MIN FULL: 16 bytes of a compressed buffer's stream overwritten
compressed() {
  cp "$1" "$T/x.etl"
  printf '\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377' | dd of="$T/x.etl" bs=1 seek=$2 conv=notrunc 2>/dev/null
  check "$(basename "$1" .etl) corrupt-compressed" "$T/x.etl" $3 $(($4 - 1))
}

# the bundled traces: an old-layout logger with 8 KiB buffers, a relogged XPRESS trace
uncompressed "$B/microsoft_Tx__HTTP_Server.etl" 2042 8192
compressed "$B/microsoft_perfview__net.4.5.2.x86.etl" $((0xb3d4 + 0x60)) 100000 168298

# the full corpus: a kernel session with 64 KiB buffers, the x64 twin of the XPRESS trace
if [ -n "$C" ]; then
  uncompressed "$C/microsoft_perfview__diagsession_diaghub.kernel.1.etl" 16335 65536
  compressed "$C/microsoft_perfview__net.4.5.2.x64.etl" $((0x3a9fd + 0x60)) 100000 179474
fi

# 5. a trace followed by 42 MB of damage: 524,288 blocks of 80 bytes, each
# a short empty buffer (BufferSize 0x48) at byte 3 and garbage after it,
# so that every block is one damage and the next buffer is found 8 bytes
# on, never at a multiple of the logfile's BufferSize (patched to 0x48);
# the 3 bytes before the first block are a damage too, and the last block,
# too short to be a buffer (77 bytes), trails: 524,288 damaged buffers and
# 5 + 524,287 walked.  Each damage scanned those
# multiples to the end of the file once: 1.5e11 looks, about 9 minutes
# here (13 MB took 21 s).  Found in linear time, it takes 2-4 s; the
# processor-time limit of 60 s is a guard against that hang, not a
# measure of speed.
A=tests/fuzz/corpus/seed-64.etl
ht=$(od -An -tu1 -j74 -N1 "$A" | tr -d ' ')
cp "$A" "$T/adv.etl"
printf '\110\000\000\000' | dd of="$T/adv.etl" bs=1 seek=$((0x48 + (ht <= 2 ? 0x20 : 0x10))) conv=notrunc 2>/dev/null
dd if=/dev/zero of="$T/u" bs=80 count=1 2>/dev/null
for at in 3 51; do printf '\110' | dd of="$T/u" bs=1 seek=$at conv=notrunc 2>/dev/null; done
printf '\001' | dd of="$T/u" bs=1 seek=57 conv=notrunc 2>/dev/null
for k in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19; do cat "$T/u" "$T/u" >"$T/u2"; mv "$T/u2" "$T/u"; done
cat "$T/u" >>"$T/adv.etl"
rm -f "$T/u"
(ulimit -t 60; "$HS" info --json "$T/adv.etl" >"$T/out" 2>"$T/err"; echo "rc $?" >"$T/rc")
lines=$(grep -c 'damaged: expected a buffer header' "$T/err")
rc=$(sed -n 's/^rc //p' "$T/rc")
dmg=$(sed -n 's/.*"buffers": {.*"damaged": \([0-9]*\).*/\1/p' "$T/out")
walked=$(sed -n 's/.*"buffers": {"walked": \([0-9]*\).*/\1/p' "$T/out")
rm -f "$T/adv.etl"
[ "$rc" = 1 ] || no "42 MB of damage: exit $rc, expected 1 (a status above 128: killed at the limit)"
[ "$dmg" = 524288 ] && [ "$walked" = $((5 + 524287)) ] || no "42 MB of damage: $dmg damaged, $walked walked; expected 524288 and 524292"
# the first 4,096 reports listed, one line for the rest (as scripts print them)
[ "$lines" = 4096 ] && [ "$(grep -c . "$T/err")" = 4097 ] \
  && grep -q "adv.etl: 520192 more damage reports not listed (only the first 4096 are kept)" "$T/err" \
  || no "42 MB of damage: $lines damage lines on stderr, expected 4096 and one for the 520192 others: $(tail -n 1 "$T/err")"
echo "ok 42 MB of damage: exit $rc, $dmg damaged buffers, $walked walked"

# 6. not an ETL file at all, and an empty file: exit 2, one clear message
printf 'hello, this is not a trace' >"$T/text.etl"
: >"$T/empty.etl"
for f in text empty; do
  "$HS" info "$T/$f.etl" >/dev/null 2>"$T/err"; rc=$?
  [ "$rc" -eq 2 ] || no "$f: exit $rc, expected 2"
  grep -q "$f.etl: offset 0x0: not an ETL file" "$T/err" || no "$f: message: $(cat "$T/err")"
done
# the empty file said plainly (it was "... fitting the file (0 bytes), found BufferSize 0x0")
grep -qx "heapscript: $T/empty.etl: offset 0x0: not an ETL file: the file is empty (0 bytes)" "$T/err" \
  || no "empty: message: $(cat "$T/err")"
# a trace as `-` (standard input): not supported, said so (it was "-: cannot open: No such file ...")
for cmd in info dump symbols leaks "merge -o $T/m.etl"; do
  "$HS" $cmd - </dev/null >/dev/null 2>"$T/err"; rc=$?
  [ "$rc" -eq 2 ] && grep -q "^heapscript.*: -: reading a trace from standard input is not supported" "$T/err" \
    || no "$cmd -: exit $rc: $(cat "$T/err")"
done
# a leaks --json report given as diff's first trace: the message, then
# where a baseline report goes
"$HS" leaks examples/memorytestapp.etl --json "$T/base.json" >/dev/null 2>&1
"$HS" diff "$T/base.json" examples/memorytestapp.etl >/dev/null 2>"$T/err"; rc=$?
[ "$rc" -eq 2 ] && grep -q "base.json: offset 0x0: not an ETL file" "$T/err" \
  && grep -q "base.json holds JSON, not a trace: a report taken as a baseline goes after --baseline" "$T/err" \
  || no "a JSON report as a trace: exit $rc: $(cat "$T/err")"
"$HS" info "$T/does-not-exist.etl" >/dev/null 2>"$T/err"; rc=$?
[ "$rc" -eq 2 ] && grep -q "does-not-exist.etl: cannot open" "$T/err" || no "missing file: exit $rc: $(cat "$T/err")"

# 7. a FIFO nobody writes to: refused at once, not waited on (timeout
# stops a wait: a hang guard)
if mkfifo "$T/fifo.etl" 2>/dev/null; then
  timeout 60 "$HS" info "$T/fifo.etl" >/dev/null 2>"$T/err"; rc=$?
  [ "$rc" -eq 2 ] && grep -q "fifo.etl: not a regular file" "$T/err" || no "a FIFO: exit $rc (124: it waited): $(cat "$T/err")"
fi

# 8. a trace cut short while a script reads it (another program writing
# over it): its buffers are mapped (1 MiB over 20 CPUs), so the pages past
# the new end cannot be read.  Linux: the guard reads them as zeros, the
# lost buffers are damage (exit 1).  Windows (Wine; a device error on
# Windows itself): the reading cannot go on, one line names the file and
# the offset, exit 2 -- never a crash.
cat >"$T/mk.lua" <<'EOF'
local w = assert(heapscript.writer(..., { cpus = 20, buffer_size = 1 << 20 }))
for i = 1, 6000 do
  assert(w:heap { op = "alloc", pid = 100, tid = 101, ts = 1000 + 10 * i, heap = 0x10000, addr = 0x20000 + 16 * i,
                  size = 16, cpu = i % 20, stack = { 0x401000 + i, 0x402000 } })
end
assert(w:close())
EOF
cat >"$T/slow.lua" <<'EOF'
local ready = ...
local p, t = trace:files()[1], trace
local function size() local f = assert(io.open(p, "rb")); local n = f:seek("end"); f:close(); return n end
local whole = size()
local f = assert(io.open(ready, "w")); f:write("x"); f:close()
local t0 = os.clock()
while size() == whole and os.clock() - t0 < 60 do end
local n = 0
for _ in t:events() do n = n + 1 end
print(n)
EOF
"$HS" "$T/mk.lua" -- "$T/cut.etl" >/dev/null 2>&1 || no "writing the 20-CPU trace"
full=$(wc -c <"$T/cut.etl")
rm -f "$T/ready"
timeout 120 "$HS" "$T/slow.lua" "$T/cut.etl" -- "$T/ready" >"$T/out" 2>"$T/err" &
pid=$!
i=0; while [ ! -f "$T/ready" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
truncate -s $((full / 3)) "$T/cut.etl"
wait $pid; rc=$?
if [ -n "$HS_WINE" ]; then
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "cut.etl: offset 0x[0-9a-f]*: expected bytes the file holds (it was cut short after it was opened); stopped" "$T/err" \
    && echo "ok cut while read (Windows): one line with the offset, exit 2" || no "cut while read (Windows): exit $rc: $(head -c 400 "$T/err")"
else
  [ "$rc" -eq 1 ] && grep -q "cut.etl: offset 0x[0-9a-f]* (buffer [0-9]*): damaged: expected a buffer the file still holds (the file was cut short after it was opened)" "$T/err" \
    && [ "$(cat "$T/out")" -gt 0 ] \
    && echo "ok cut while read: $(cat "$T/out") events, the lost buffers are damage, exit 1" || no "cut while read: exit $rc: $(head -c 400 "$T/err")"
fi

# 9. a full disk (/dev/full): a report or an output cut short never
# passes for whole: one line naming what could not be written, exit 2
if [ -z "$HS_WINE" ] && [ -c /dev/full ]; then
  for c in "leaks examples/memorytestapp.etl --json /dev/full" "leaks examples/memorytestapp.etl --html /dev/full" \
           "leaks examples/memorytestapp.etl --folded /dev/full" \
           "policy examples/memorytestapp.etl --junit /dev/full"; do
    $HS $c >/dev/null 2>"$T/err"; rc=$?
    [ "$rc" -eq 2 ] && grep -q "/dev/full: cannot write the report: No space left on device" "$T/err" \
      && echo "ok $c: exit 2, said" || no "$c: exit $rc: $(cat "$T/err")"
  done
  for c in "leaks examples/memorytestapp.etl" "leaks examples/memorytestapp.etl --json -" "info examples/memorytestapp.etl" \
           "dump examples/memorytestapp.etl" "symbols examples/memorytestapp.etl"; do
    $HS $c >/dev/full 2>"$T/err"; rc=$?
    [ "$rc" -eq 2 ] && grep -q "cannot write the output (standard output)" "$T/err" \
      && echo "ok $c >/dev/full: exit 2, said" || no "$c >/dev/full: exit $rc: $(cat "$T/err")"
  done
  printf 'print("x"); os.exit(0)\n' >"$T/exit.lua"
  $HS "$T/exit.lua" >/dev/full 2>"$T/err"; rc=$?
  [ "$rc" -eq 2 ] && grep -q "cannot write the output" "$T/err" && echo "ok os.exit(0) with its output lost: exit 2" \
    || no "os.exit >/dev/full: exit $rc: $(cat "$T/err")"
fi

# 10. a report file that is a directory: said before the analysis, naming
# the option, as a missing directory is (the text report was printed first,
# then "heapscript: DIR: Is a directory")
mkdir "$T/dir"
for c in "leaks examples/memorytestapp.etl --json $T/dir|leaks: --json" "leaks examples/memorytestapp.etl --csv $T/dir/|leaks: --csv" \
         "policy examples/memorytestapp.etl --junit $T/dir|policy: --junit"; do
  args=${c%%|*}; want=${c#*|}
  $HS $args >"$T/out" 2>"$T/err"; rc=$?
  # (Windows refuses to open a directory for writing as "Permission denied")
  why="Is a directory"; [ -n "$HS_WINE" ] && why="Permission denied"
  [ "$rc" -eq 2 ] && [ ! -s "$T/out" ] && grep -q "^$want: cannot write $T/dir/* ($why)" "$T/err" \
    && echo "ok $want DIR: exit 2 before the analysis, said" || no "$args: exit $rc, $(wc -l <"$T/out") lines out: $(head -1 "$T/err")"
done

[ "$fails" -eq 0 ]
