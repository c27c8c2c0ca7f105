#!/bin/sh
# test_same.sh -- the Windows build prints what the Linux build prints,
# byte for byte and with the same exit status: every bundled script on the
# example traces (text and --json), info and dump; its memory flat on a
# 58 MB trace (peak resident under half the file); and the Windows ways:
# a trace, a script, a rule set, a symbol map and a --json output under a
# directory named Zoë, rule files and symbol maps with CRLF line ends.
# HS_LINUX and HS_BIN (the Windows build, e.g. tests/windows/wine-hs) are the two.
L=${HS_LINUX:-./heapscript}
W=${HS_BIN:-tests/windows/wine-hs}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0; n=0
no() { echo "not ok: $*"; fails=$((fails + 1)); }

# same NAME ARGS...: stdout, stderr and status of both builds equal
same() {
  name=$1; shift; n=$((n + 1))
  "$L" "$@" >"$T/l.out" 2>"$T/l.err"; lrc=$?
  "$W" "$@" >"$T/w.out" 2>"$T/w.err"; wrc=$?
  if [ "$lrc" != "$wrc" ]; then no "$name: exit $wrc on Windows, $lrc on Linux: $(head -c 300 "$T/w.err")"
  elif ! cmp -s "$T/l.out" "$T/w.out"; then no "$name: output differs:"; diff "$T/l.out" "$T/w.out" | head -8
  elif ! cmp -s "$T/l.err" "$T/w.err"; then no "$name: stderr differs:"; diff "$T/l.err" "$T/w.err" | head -8
  else echo "ok $name ($(wc -c <"$T/l.out") bytes, exit $lrc)"; fi
}

for t in examples/memorytestapp.etl examples/notmyfault.etl; do
  for s in leaks transient growth pool peak churn policy events; do
    same "$s $t" "$s" "$t"
    same "$s $t --json -" "$s" "$t" -- --json -
  done
  same "info $t" info "$t"
  same "info --json $t" info --json "$t"
  same "dump --jsonl $t" dump --jsonl "$t"
done
# Memory that stays flat: the buffers are read (ReadFile), not kept mapped
# in the working set, so a pass over a 58 MB trace peaks far under the
# file's size (the build that mapped every buffer peaked at 73 MB).
if [ -x /usr/bin/time ]; then
  "$L" tests/bench/gen_heap.lua -- "$T/big.etl" 400000 >/dev/null
  same "info (58 MB)" info "$T/big.etl"
  /usr/bin/time -f "%M" -o "$T/rss" "$W" info "$T/big.etl" >/dev/null 2>&1
  kb=$(tail -n 1 "$T/rss"); size=$(( $(wc -c <"$T/big.etl") / 1024 ))
  if [ "$kb" -lt $((size / 2)) ]; then echo "ok info (58 MB): peak resident ${kb} KB, the file ${size} KB"
  else no "info (58 MB): peak resident ${kb} KB, not under half the file's ${size} KB"; fi
  rm -f "$T/big.etl"
fi
same "no such trace" leaks "$T/missing.etl"
same "leaks --json FILE" leaks examples/memorytestapp.etl -- --json "$T/l.json"
"$W" leaks examples/memorytestapp.etl -- --json "$T/w.json" >/dev/null
cmp -s "$T/l.json" "$T/w.json" || no "leaks --json FILE: the files differ"

# A directory with a non-ASCII name: the wide-character paths.
Z="$T/Zoë"
mkdir -p "$Z"
cp examples/memorytestapp.etl examples/memorytestapp.sym examples/MemoryTestApp.pdb "$Z/"
"$L" leaks "$Z/memorytestapp.etl" >"$T/want"
n=$((n + 1))
if "$W" leaks "$Z/memorytestapp.etl" >"$T/got" 2>"$T/err" && cmp -s "$T/want" "$T/got"; then
  echo "ok a trace under Zoë/ opens (and its .sym beside it)"
else no "trace under Zoë/: $(head -c 300 "$T/err")"; fi
printf 'local n = trace:count()\nprint("events", n)\nlocal f = assert(io.open(arg[1], "wb"))\nf:write("ünïcode\\n")\nf:close()\n' >"$Z/count.lua"
n=$((n + 1))
out=$("$W" "$Z/count.lua" "$Z/memorytestapp.etl" -- "$Z/out-é.txt" 2>&1)
if [ "$out" = "events	14744" ] && [ "$(cat "$Z/out-é.txt")" = "ünïcode" ]; then
  echo "ok a script under Zoë/ runs, and io.open writes a file named out-é.txt"
else no "script under Zoë/: $out"; fi
"$L" leaks "$Z/memorytestapp.etl" -- --json "$Z/l.json" >/dev/null
n=$((n + 1))
if "$W" leaks "$Z/memorytestapp.etl" -- --json "$Z/r.json" >/dev/null 2>"$T/err" && cmp -s "$Z/l.json" "$Z/r.json"; then
  echo "ok --json writes under Zoë/"
else no "--json under Zoë/: $(head -c 300 "$T/err")"; fi

# CRLF line ends: a rule set and a symbol map written on Windows.
sed 's/$/\r/' rules/default.lua >"$Z/team.lua"
sed 's/$/\r/' examples/memorytestapp.sym >"$Z/crlf.sym"
"$L" policy examples/memorytestapp.etl -- --rules rules/default.lua >"$T/want" 2>&1; lrc=$?
"$W" policy "$Z/memorytestapp.etl" -- --rules "$Z/team.lua" >"$T/got" 2>&1; wrc=$?
n=$((n + 1))
if [ "$lrc" = "$wrc" ] && diff -q "$T/want" "$T/got" >/dev/null; then echo "ok a CRLF rule set under Zoë/ gives the same verdict (exit $wrc)"
else no "CRLF rule set: exit $wrc vs $lrc"; diff "$T/want" "$T/got" | head -6; fi
"$W" leaks "$Z/memorytestapp.etl" -- --symbols "$Z/crlf.sym" >"$T/got" 2>&1
"$L" leaks "$Z/memorytestapp.etl" >"$T/want"
n=$((n + 1))
if cmp -s "$T/want" "$T/got"; then echo "ok a CRLF symbol map names the same frames"
else no "CRLF symbol map:"; diff "$T/want" "$T/got" | head -6; fi

echo "same: $((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
