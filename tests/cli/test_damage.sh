#!/bin/sh
# test_damage.sh -- damaged variants of real traces (made in a temp dir,
# never committed): truncated mid-buffer, a buffer header overwritten, a
# buffer zeroed, a compressed buffer corrupted, a record size broken.
# heapscript must report each with the byte offset, keep the rest, exit 1,
# and never crash or hang.
HS=${HS_BIN:-./heapscript}
C=${HEAPSCRIPT_CORPUS:-../shared/traces}
if [ ! -f "$C/MANIFEST.tsv" ]; then
  if [ "$CI" = true ]; then echo "corpus missing at $C and CI=true"; exit 1; fi
  echo "SKIP: no corpus at $C"; exit 0
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

K=$C/microsoft_perfview__diagsession_diaghub.kernel.1.etl     # 16335 events, 64 KiB buffers
cp "$K" "$T/k.etl"
full=$(events "$T/k.etl")
[ "$full" = 16335 ] || no "baseline: $full events"

# 1. truncated in the middle of the fourth buffer
head -c $((3 * 65536 + 30000)) "$K" >"$T/trunc.etl"
check truncated "$T/trunc.etl" 100 16334

# 2. the second buffer's header overwritten with garbage: skipped, the rest read
cp "$K" "$T/hdr.etl"
printf '\377\377\377\377\377\377\377\377' | dd of="$T/hdr.etl" bs=1 seek=65536 conv=notrunc 2>/dev/null
check bad-buffer-header "$T/hdr.etl" 10000 16334

# 3. a whole data buffer zeroed
cp "$K" "$T/zero.etl"
dd if=/dev/zero of="$T/zero.etl" bs=65536 seek=5 count=1 conv=notrunc 2>/dev/null
check zeroed-buffer "$T/zero.etl" 10000 16334

# 4. a record Size broken inside a buffer (second record of buffer 3)
cp "$K" "$T/rec.etl"
printf '\001\000' | dd of="$T/rec.etl" bs=1 seek=$((3 * 65536 + 0x48 + 4)) conv=notrunc 2>/dev/null
check bad-record "$T/rec.etl" 10000 16334

# 5. a compressed buffer corrupted (relogged, XPRESS)
X=$C/microsoft_perfview__net.4.5.2.x64.etl
cp "$X" "$T/x.etl"
printf '\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377' | dd of="$T/x.etl" bs=1 seek=$((0x3a9fd + 0x60)) conv=notrunc 2>/dev/null
check corrupt-compressed "$T/x.etl" 100000 179473

# 6. not an ETL file at all, and an empty file: exit 2, one clear message
printf 'hello, this is not a trace' >"$T/text.etl"
: >"$T/empty.etl"
for f in text empty; do
  "$HS" info "$T/$f.etl" >/dev/null 2>"$T/err"; rc=$?
  [ "$rc" -eq 2 ] || no "$f: exit $rc, expected 2"
  grep -q "$f.etl: offset 0x0: not an ETL file" "$T/err" || no "$f: message: $(cat "$T/err")"
done
"$HS" info "$T/does-not-exist.etl" >/dev/null 2>"$T/err"; rc=$?
[ "$rc" -eq 2 ] && grep -q "does-not-exist.etl: cannot open" "$T/err" || no "missing file: exit $rc: $(cat "$T/err")"

[ "$fails" -eq 0 ]
