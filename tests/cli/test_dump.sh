#!/bin/sh
# test_dump.sh -- `heapscript dump` and `info` on a trace the project's
# writer made (tests/fuzz/corpus/seed-64.etl: 51 records, 24 heap events,
# stacks, a VirtualAlloc, a pool alloc): filters, formats, errors.
HS=${HS_BIN:-./heapscript}
S=tests/fuzz/corpus/seed-64.etl
fails=0
no() { echo "not ok: $*"; fails=$((fails + 1)); }
count() { "$HS" dump "$@" "$S" 2>/dev/null | wc -l | tr -d ' '; }

[ "$(count)" = 51 ] || no "all records: $(count)"
[ "$(count --provider Heap)" = 26 ] || no "--provider Heap: $(count --provider Heap)"
[ "$(count --provider heap)" = 26 ] || no "names ignore case"
[ "$(count --provider 222962ab-6180-4b88-a825-346b75f2a24a)" = 26 ] || no "--provider GUID"
[ "$(count --opcode 33 --opcode 36)" = 24 ] || no "--opcode twice: any of them: $(count --opcode 33 --opcode 36)"
[ "$(count --header-type perfinfo64)" = 15 ] || no "--header-type: $(count --header-type perfinfo64)"
[ "$(count --no-kernel)" = 2 ] || no "--no-kernel: $(count --no-kernel)"
[ "$(count --limit 0)" = 0 ] || no "--limit 0 prints nothing"
[ "$(count --limit 5)" = 5 ] || no "--limit 5"
[ "$(count --from 0.000003 --to 0.000004 --provider Heap)" = 2 ] || no "--from/--to inclusive"
[ "$(count --pid 100 --provider Pool)" = 1 ] || no "--pid with --provider"

line=$("$HS" dump --jsonl --provider Pool "$S")
for k in '"provider": "0268a8b6-74fd-4302-9dd0-6e8f1795c0cf"' '"opcode": 32' '"pid": 100' '"tid": 101' \
         '"header_type": "SYSTEM64"' '"memory": "pool_type=NonPagedNx tag='"'"'Leak'"'"' size=64 addr=0x80001000"'; do
  echo "$line" | grep -qF "$k" || no "jsonl lacks $k: $line"
done
"$HS" dump --jsonl --provider StackWalk --limit 1 "$S" | grep -q '"pid": null, "tid": null' || no "PERFINFO ids are null"
# --jsonl's file is 1-based, as a script's ev.file (API.md): the second TRACE is file 2
printf 'for ev in trace:events{provider = "Pool"} do print(ev.file) break end\n' >"${TMPDIR:-/tmp}/hs-file.$$.lua"
lua_file=$("$HS" "${TMPDIR:-/tmp}/hs-file.$$.lua" examples/memorytestapp.etl examples/notmyfault.etl)
rm -f "${TMPDIR:-/tmp}/hs-file.$$.lua"
for want in "Pool:$lua_file" "Heap:1"; do
  "$HS" dump --jsonl --provider ${want%:*} --limit 1 examples/memorytestapp.etl examples/notmyfault.etl \
    | grep -q "\"file\": ${want#*:}, " \
    || no "dump --jsonl --provider ${want%:*} of two traces: not \"file\": ${want#*:} (ev.file: $lua_file)"
done
[ "$lua_file" = 2 ] || no "ev.file of notmyfault.etl given second: $lua_file"

# several files share one origin, the earliest file's start (as ev.time): the pool trace began
# 16,500 s after the heap trace, whichever comes first on the command line
for order in "examples/memorytestapp.etl examples/notmyfault.etl" "examples/notmyfault.etl examples/memorytestapp.etl"; do
  t=$("$HS" dump --provider Pool --limit 1 $order | awk '{print $1}')
  case "$t" in 16500.*) ;; *) no "dump of two files ($order): the first pool event at $t s, not from the earliest start" ;; esac
  [ "$("$HS" dump --provider Pool --from 16500 --to 16500.3 $order | wc -l)" -gt 0 ] \
    || no "dump --from/--to of two files ($order): on the shared origin"
done
"$HS" dump --opcode x "$S" >/dev/null 2>&1; [ $? -eq 2 ] || no "bad --opcode: exit 2"
"$HS" dump --provider NoSuchProvider "$S" >/dev/null 2>"${TMPDIR:-/tmp}/hs-dump-err.$$"; [ $? -eq 2 ] \
  && grep -q "bad option --provider NoSuchProvider: neither a GUID nor a provider name" "${TMPDIR:-/tmp}/hs-dump-err.$$" \
  || no "unknown provider name: exit 2, said so"
rm -f "${TMPDIR:-/tmp}/hs-dump-err.$$"
"$HS" dump --bogus 1 "$S" >/dev/null 2>&1; [ $? -eq 2 ] || no "unknown option: exit 2"
# times: finite, within 1e9 s of the start as the scripts' --window (1e300 s once printed every
# event; below 0 names records stamped before their file's start), --from not after --to
[ "$(count --from -1)" = 51 ] || no "--from -1: every record, as --window -1,: $(count --from -1)"
for t in "--from 1e300" "--from inf" "--to nan" "--from -2e9" "--to 1.5e9"; do
  out=$("$HS" dump $t "$S" 2>/dev/null); rc=$?
  [ $rc -eq 2 ] && [ -z "$out" ] || no "dump $t: exit $rc, $(echo "$out" | wc -l) lines"
done
"$HS" dump --from 5 --to 1 "$S" 2>&1 >/dev/null | grep -q "from is after --to" || no "dump --from 5 --to 1: message"
"$HS" dump >/dev/null 2>&1; [ $? -eq 2 ] || no "no trace: exit 2"
"$HS" dump --help | grep -q "usage: heapscript dump" || no "dump --help"
"$HS" info --help | grep -q "usage: heapscript info" || no "info --help"
"$HS" info "$S" | grep -q "^events: *51$" || no "info text: events"
# info's by provider/opcode rows: id, op and v in the same columns on every row, after a long
# name too (KernelTraceControl.ImageId/DbgID_RSDS, a GUID), within 80 columns
for f in examples/memorytestapp.etl examples/notmyfault.etl tests/corpus/traces/*.etl; do
  cols=$("$HS" info "$f" 2>/dev/null | awk '/^by provider/ { p = 1; next } /^[a-z]/ { p = 0 }
    p { print index($0, " id "), index($0, " op "), index($0, " v") }' | sort -u)
  [ "$(echo "$cols" | wc -l)" -eq 1 ] || no "info $f: by provider/opcode columns not aligned: $(echo $cols)"
done
"$HS" info examples/memorytestapp.etl | grep -q "^ *4  KernelTraceControl.ImageId/DbgID_RSDS  id 0 *op 36  v2$" \
  || no "info: the ImageId row: $("$HS" info examples/memorytestapp.etl | grep ImageId)"
"$HS" info --json "$S" "$S" | head -1 | grep -q '^\[' || no "info --json of two files is an array"
# what a kernel logger says it enabled (EventTrace Extension masks)
cat >"${TMPDIR:-/tmp}/hs-masks.$$.lua" <<'LUA'
local w = assert(heapscript.writer(arg[1], {group_masks = {0, 0x8040, 0x20, 0, 0, 0, 0, 0}}))
w:close()
LUA
M=${TMPDIR:-/tmp}/hs-masks.$$.etl
"$HS" "${TMPDIR:-/tmp}/hs-masks.$$.lua" -- "$M" && "$HS" info "$M" | grep -q "kernel masks:.*(pool on, VirtualAlloc on, heap on)" || no "info reports the enabled kernel groups"
rm -f "$M" "${TMPDIR:-/tmp}/hs-masks.$$.lua"
"$HS" info "$S" | grep -q "kernel masks" && no "no masks line without an Extension record"
# info: the duration is first to last event (the header record at 0, events at 1 s and
# 3.5 s at the default 10 MHz), and by_key keys a kernel record by its whole version
# word (0x0102: one PMC counter, whose 8 bytes come before the payload; the event's
# version is 2)
cat >"${TMPDIR:-/tmp}/hs-span.$$.lua" <<'LUA'
local w = assert(heapscript.writer(arg[1], {cpus = 1}))
w:kernel { group = 0x0F, opcode = 46, header = "PERFINFO64", ts = 10000000, payload = "A" }
w:kernel { group = 0x0F, opcode = 46, version = 0x0102, header = "PERFINFO64", ts = 35000000,
           payload = string.rep("\0", 8) .. "B" }
assert(w:close())
LUA
M=${TMPDIR:-/tmp}/hs-span.$$.etl
"$HS" "${TMPDIR:-/tmp}/hs-span.$$.lua" -- "$M" || no "writing the two-event trace"
"$HS" info "$M" | grep -q "^duration: *3\.500000 s" || no "info duration: $("$HS" info "$M" | grep duration)"
"$HS" info --json "$M" | grep -q '"opcode": 46, "id": 0, "version": 258, "count": 1}' \
  || no "info --json by_key: the whole version word 258: $("$HS" info --json "$M" | grep '"opcode": 46')"
rm -f "$M" "${TMPDIR:-/tmp}/hs-span.$$.lua"
# records without ids (StackWalk, PERFINFO) match no --pid, not even the
# value that stands for none inside (0xFFFFFFFF)
n=$("$HS" dump --pid 4294967295 examples/notmyfault.etl | wc -l)
[ "$n" -eq 0 ] || no "dump --pid 4294967295 listed $n records without ids"
# The text lines, column by column, as printf made them before dump wrote
# them by hand (tests/cli/golden/dump-*.txt were written by the printf
# version): ids from the header, from a StackWalk (*) and none (-), named
# and unnamed providers, memory descriptions, a pid and tid that read as
# negative, a wide CPU number, ticks of 50 ns (ties of the 7th decimal) and
# a time past 11 days.
GD=tests/cli/golden
"$HS" dump "$S" | cmp -s - "$GD/dump-seed-64.txt" || no "dump text of $S differs from $GD/dump-seed-64.txt"
"$HS" dump --limit 40 examples/notmyfault.etl | cmp -s - "$GD/dump-notmyfault-head.txt" \
  || no "dump text of notmyfault.etl differs from $GD/dump-notmyfault-head.txt"
"$HS" dump --limit 40 tests/corpus/traces/microsoft_Tx__HTTP_Server.etl | cmp -s - "$GD/dump-http-server-head.txt" \
  || no "dump text of HTTP_Server.etl differs from $GD/dump-http-server-head.txt"
cat >"${TMPDIR:-/tmp}/hs-cols.$$.lua" <<'LUA'
local w = assert(heapscript.writer(arg[1], { cpus = 120, perf_freq = 20000000, start_ticks = 0 }))
local G = "00000000-0000-4000-8000-00000000abcd"
w:event { provider = G, id = 7, ts = 1, payload = "x", pid = 4294967295, tid = 4294967294, cpu = 119 }
w:event { provider = G, id = 65535, ts = 3, payload = "", pid = 0, tid = 123456789, cpu = 7 }
w:event { provider = G, id = 1, ts = 20000001, payload = "yy", pid = 2147483648, tid = 5, cpu = 0 }
w:event { provider = G, id = 2, ts = 20000000 * 86400 * 12 + 3, payload = "z", pid = 1, tid = 2, cpu = 1 }
assert(w:close())
LUA
M=${TMPDIR:-/tmp}/hs-cols.$$.etl
"$HS" "${TMPDIR:-/tmp}/hs-cols.$$.lua" -- "$M" || no "writing the columns trace"
# (its header record, which holds the file's path, left out)
"$HS" dump "$M" | tail -n +2 | cmp -s - "$GD/dump-columns.txt" \
  || no "dump text of the columns trace differs: $("$HS" dump "$M" | tail -n +2 | diff - "$GD/dump-columns.txt" | head -4)"
"$HS" dump --jsonl "$M" | tail -n +2 | cmp -s - "$GD/dump-columns.jsonl" \
  || no "dump --jsonl of the columns trace differs: $("$HS" dump --jsonl "$M" | tail -n +2 | diff - "$GD/dump-columns.jsonl" | head -4)"
rm -f "$M" "${TMPDIR:-/tmp}/hs-cols.$$.lua"
# --jsonl the same way (dump-*.jsonl written by the printf version): stack
# ids, null ids, memory descriptions, and pool tags holding a quote and a
# backslash, escaped
"$HS" dump --jsonl "$S" | cmp -s - "$GD/dump-seed-64.jsonl" || no "dump --jsonl of $S differs from $GD/dump-seed-64.jsonl"
"$HS" dump --jsonl --limit 40 examples/notmyfault.etl | cmp -s - "$GD/dump-notmyfault-head.jsonl" \
  || no "dump --jsonl of notmyfault.etl differs from $GD/dump-notmyfault-head.jsonl"
cat >"${TMPDIR:-/tmp}/hs-tags.$$.lua" <<'LUA'
local w = assert(heapscript.writer(arg[1], { cpus = 1 }))
local K = 0xFFFF800000000000
w:pool { op = "alloc", pid = 100, tid = 101, ts = 1000, tag = 'a"\\b', size = 64, entry = K + 0x1000 }
w:pool { op = "alloc", pid = 100, tid = 101, ts = 1100, tag = "\1\31\127z", size = 64, entry = K + 0x2000 }
assert(w:close())
LUA
M=${TMPDIR:-/tmp}/hs-tags.$$.etl
"$HS" "${TMPDIR:-/tmp}/hs-tags.$$.lua" -- "$M" || no "writing the tags trace"
"$HS" dump --jsonl "$M" | tail -n +2 | cmp -s - "$GD/dump-tags.jsonl" \
  || no "dump --jsonl of the tags trace differs: $("$HS" dump --jsonl "$M" | tail -n +2 | diff - "$GD/dump-tags.jsonl" | head -4)"
rm -f "$M" "${TMPDIR:-/tmp}/hs-tags.$$.lua"
# an option's value after "=", as the scripts take theirs: --provider=Process --limit=1 is --provider Process --limit 1
[ "$("$HS" dump --provider=Process --limit=1 examples/memorytestapp.etl 2>&1)" = "$("$HS" dump --provider Process --limit 1 examples/memorytestapp.etl 2>&1)" ] \
  && [ "$("$HS" dump --provider=Process --limit=1 examples/memorytestapp.etl | wc -l)" -eq 1 ] \
  || no "dump --provider=Process --limit=1: as with the values apart: $("$HS" dump --provider=Process --limit=1 examples/memorytestapp.etl 2>&1 | head -3)"
"$HS" dump --jsonl=1 examples/memorytestapp.etl >/dev/null 2>"${TMPDIR:-/tmp}/hs-err.$$"; rc=$?
[ $rc -eq 2 ] && grep -q "^heapscript dump: --jsonl takes no value$" "${TMPDIR:-/tmp}/hs-err.$$" || no "dump --jsonl=1: exit 2, takes no value (exit $rc)"
rm -f "${TMPDIR:-/tmp}/hs-err.$$"
[ "$fails" -eq 0 ] && echo "ok: dump and info"
[ "$fails" -eq 0 ]
