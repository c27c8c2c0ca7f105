#!/bin/sh
# test_script_limits.sh -- a runaway script is stopped by --timeout even
# when it catches errors with pcall (exit status 2); many script arguments do not
# overflow the Lua stack; usage errors exit 2.
HS=${HS_BIN:-./heapscript}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0
no() { echo "not ok: $*"; fails=$((fails + 1)); }

cat >"$T/loop.lua" <<'LUA'
while true do
  local ok = pcall(function() local n = 0; while true do n = n + 1 end end)
  io.write(ok and "" or "caught ")
end
LUA
out=$("$HS" --timeout 0.3 "$T/loop.lua" 2>&1); rc=$?
[ "$rc" -eq 2 ] || no "timeout: exit $rc, expected 2"
echo "$out" | grep -q "timed out after 0.3 s" || no "timeout message: $out"
echo "$out" | grep -q "loop.lua:[0-9]" || no "timeout names the script line: $out"

"$HS" --timeout x "$T/loop.lua" >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || no "--timeout x: exit $rc, expected 2"
echo 'return 0' >"$T/quick.lua"
for v in 0 -1; do
  out=$("$HS" --timeout "$v" "$T/quick.lua" 2>&1); rc=$?
  [ "$rc" -eq 2 ] && echo "$out" | grep -q "option --timeout needs a number" || no "--timeout $v: exit $rc, expected 2: $out"
done
out=$("$HS" --memory 1048577 "$T/quick.lua" 2>&1); rc=$?
[ "$rc" -eq 2 ] && echo "$out" | grep -q "option --memory needs a number of MiB (up to 1048576)" || no "--memory 1048577: exit $rc, expected 2: $out"

echo 'return #arg == 3000 and 0 or 1' >"$T/args.lua"
"$HS" "$T/args.lua" -- $(seq 3000) >/dev/null 2>&1; rc=$?
[ "$rc" -eq 0 ] || no "3000 script arguments: exit $rc"

echo 'return 7' >"$T/seven.lua"
"$HS" --timeout 5 "$T/seven.lua"; rc=$?
[ "$rc" -eq 7 ] || no "a quick script under --timeout keeps its exit code: $rc"
[ "$fails" -eq 0 ] && echo "ok: script limits"
[ "$fails" -eq 0 ]
