#!/bin/sh
# test_html.sh -- the --html report of every bundled script on the example
# traces, opened in headless Chromium: the page loads with no console
# message at all (errors, CSP violations, failed loads), its own script ran
# and counted what it drew (a self-check written into the DOM, read back
# with --dump-dom; it also sorts the findings as a click on Count does,
# checks the order and puts the rows back), the page opens in the order
# of the report, the charts, marks and findings are there with their
# content, the page names nothing outside itself, and a screenshot is taken
# for a person to look at ($HS_BUILD/html/*.png).
# Without chromium it says SKIP, and fails when CI=true.
HS=${HS_BIN:-./heapscript}
B=${HS_BUILD:-build/rel}
out=$B/html
mkdir -p "$out"
fail=0
ok() { echo "ok - $1"; }
bad() { echo "not ok - $1"; fail=1; }

if ! command -v chromium >/dev/null 2>&1; then
  if [ "$CI" = true ]; then echo "not ok - chromium missing and CI=true (make deps installs it)"; exit 1; fi
  echo "SKIP test_html: no chromium (make deps installs it)"; exit 0
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT

# browse PAGE NAME [WIDTH]: the DOM after the scripts ran in a window
# WIDTH px wide (1280) in $out/NAME.dom, the browser's log in
# $out/NAME.log, a screenshot in $out/NAME.png
browse() {
  set -- "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")" "$2" "${3:-1280}"
  flags="--headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking
    --disable-component-update --disable-sync --user-data-dir=$profile"
  # shellcheck disable=SC2086
  chromium $flags --window-size="$3,2000" --enable-logging=stderr --v=0 --dump-dom "file://$1" >"$out/$2.dom" 2>"$out/$2.log"
  # shellcheck disable=SC2086
  chromium $flags --screenshot="$out/$2.png" --window-size="$3,2000" "file://$1" >/dev/null 2>&1
}

# page NAME SELFCHECK-PATTERN CONTENT... : checks one page ($width px wide,
# 1280 unless set; the file is $out/${file:-NAME}.html)
page() {
  name=$1; want=$2; shift 2
  f=$out/${file:-$name}.html
  browse "$f" "$name" "${width:-1280}"
  if grep -q ":CONSOLE" "$out/$name.log"; then bad "$name: console messages: $(grep ':CONSOLE' "$out/$name.log" | head -3)"
  else ok "$name: no console message"; fi
  check=$(grep -o 'selfcheck [^<]*' "$out/$name.dom" | head -1)
  if echo "$check" | grep -Eq "$want"; then ok "$name: $check"; else bad "$name: self-check '$check', expected /$want/"; fi
  for c in "$@"; do
    if grep -qF -- "$c" "$out/$name.dom"; then ok "$name: shows '$c'"; else bad "$name: does not show '$c'"; fi
  done
  if grep -Eqi '(https?:|//[a-z]|<script[^>]*src|<link[^>]*stylesheet|<img |@import|url\()' "$f"; then
    bad "$name: names something outside the page: $(grep -Eoi '(https?:[^"]*|<script[^>]*src[^>]*>|@import|url\([^)]*\))' "$f" | head -2)"
  else ok "$name: self-contained"; fi
  size=$(wc -c <"$out/$name.png" 2>/dev/null || echo 0)
  if [ "$size" -gt 20000 ]; then ok "$name: screenshot $out/$name.png ($size bytes)"; else bad "$name: no screenshot ($size bytes)"; fi
}

M=examples/memorytestapp.etl
N=examples/notmyfault.etl
$HS leaks $M -- --html "$out/leaks-memorytestapp.html" >/dev/null || bad "leaks --html"
page leaks-memorytestapp "^selfcheck ok charts=2 findings=3 marks=0 boxes=[1-9]" \
  "heap — MemoryTestApp.exe (5812): peak 34.0 KiB at 18.540 s" \
  "virtual — MemoryTestApp.exe (5812): peak 30.00 MiB at 11.050 s" \
  "MemoryTestApp.exe!InnerLoopOperation+0x1f" "12.5 KiB" "MemoryTestApp.exe!StepUpMemory"
$HS transient $M -- --html "$out/transient-memorytestapp.html" >/dev/null || bad "transient --html"
page transient-memorytestapp "^selfcheck ok charts=2 findings=1 marks=10 " \
  "transient spike at 1.550 s: MemoryTestApp.exe!ManipulateTemporaryBuffer+0x23" \
  "transient spike at 18.650 s" "100.00 MiB"
$HS growth $M -- --html "$out/growth-memorytestapp.html" >/dev/null || bad "growth --html"
page growth-memorytestapp "^selfcheck ok charts=2 findings=3 marks=1 " \
  "step at 10.000 s: MemoryTestApp.exe!StepUpMemory+0x23" "steady growth"
$HS pool $N -- --html "$out/pool-notmyfault.html" >/dev/null || bad "pool --html"
page pool-notmyfault "^selfcheck ok charts=2 findings=[1-9]" \
  "pool — NotMyFault64.exe (6140): peak 20.00 MiB" "myfault.sys!MyfaultLeakPool+0x3b" "pool tag 'Leak'"
$HS leaks $N -- --html "$out/leaks-notmyfault.html" >/dev/null || bad "leaks notmyfault --html"
page leaks-notmyfault "^selfcheck ok charts=2 findings=1 " "20.00 MiB" "myfault.sys!MyfaultLeakPool"
$HS policy examples/memorytestapp-newleak.etl -- --baseline $M --html "$out/policy-newleak.html" >/dev/null
[ $? -eq 1 ] || bad "policy --baseline on the new leak exits 1"
page policy-newleak "^selfcheck ok charts=2 findings=0 " "no-new-leak-stack" "FAIL" "MemoryTestApp.exe!CacheRecord+0x3c"
$HS diff $M examples/memorytestapp-fixed.etl -- --html "$out/diff-fixed.html" >/dev/null || bad "diff --html"
page diff-fixed "^selfcheck ok charts=2 " "vanished" "MemoryTestApp.exe!InnerLoopOperation+0x1f"
$HS peak $M -- --html "$out/peak-memorytestapp.html" >/dev/null || bad "peak --html"
$HS peak $M -- --at 10.5 --html "$out/peak-at-memorytestapp.html" >/dev/null || bad "peak --at --html"
page peak-at-memorytestapp "^selfcheck ok charts=2 findings=[1-9]" "Bytes live at 10.500 s by stack" "live at the time"
page peak-memorytestapp "^selfcheck ok charts=2 findings=8 " \
  "heap — MemoryTestApp.exe (5812): peak 34.0 KiB at 18.540 s" "MemoryTestApp.exe!CopyWorkItem+0x1f" "7072 B" \
  "Bytes live at the peak by stack"
$HS churn $M -- --html "$out/churn-memorytestapp.html" >/dev/null || bad "churn --html"
page churn-memorytestapp "^selfcheck ok charts=1 findings=5 " \
  "MemoryTestApp.exe!ParseRecord+0x27" "allocation churn" "597.5 KiB" "Bytes allocated by stack"
$HS events $M -- --html "$out/events-memorytestapp.html" >/dev/null || bad "events --html"
# events: its own table of counts (the columns of its text and CSV), no
# findings of stacks and no icicle
page events-memorytestapp "^selfcheck ok charts=2 findings=13 marks=0 boxes=0 " "Counts (13)" \
  '<th class="n" data-sort="count">Count</th>' '<th class="n" data-sort="id">Id</th>' '<th>Event</th>' \
  '<td class="n" data-v="5000">5000</td><td>Heap</td><td class="n" data-v="0">0</td><td class="n" data-v="33">33</td><td>HeapAlloc</td>'
if grep -Eq 'Heap 0/33|class="flame"|id="flame"' "$out/events-memorytestapp.dom"; then
  bad "events-memorytestapp: rows as findings, or an icicle"
else ok "events-memorytestapp: no findings of stacks, no icicle"; fi

# the page opens in the report's order (the text's #1 first), whatever
# its self-check sorted: one 1 MiB block above a hundred of 10 B.  Its
# module's name is 150 characters long: at 1280 px the page still fits the
# window with every figure of the table in sight (hidden=0), at 420 px the
# page fits and the table scrolls in its own box.
cat >"$out/order.lua" <<'EOF'
local w = assert(heapscript.writer(arg[1]))
w:process{op = "dcstart", pid = 10, ts = 1, name = "o.exe"}
w:image{op = "dcstart", pid = 10, base = 0x7ff700000000, size = 0x10000, ts = 2, path = "o_" .. ("RuntimeClassImpl<RuntimeClassFlags<2>,1,0,0,IVectorView<StorageFile>>"):rep(2) .. ".dll"}
w:heap{op = "alloc", pid = 10, tid = 11, ts = 100, heap = 1, addr = 0x100000, size = 1048576, stack = {0x7ff700001000}}
for i = 1, 100 do
  w:heap{op = "alloc", pid = 10, tid = 11, ts = 100 + i * 1000, heap = 1, addr = 0x200000 + i * 16, size = 10,
         stack = {0x7ff700002000}}
end
assert(w:close())
EOF
$HS "$out/order.lua" -- "$out/order.etl" >/dev/null || bad "order.lua writes its trace"
$HS leaks "$out/order.etl" -- --html "$out/leaks-order.html" >/dev/null || bad "leaks order --html"
page leaks-order "^selfcheck ok charts=1 findings=2 .* hidden=0$" "1.00 MiB"
width=420 file=leaks-order page leaks-order-420 "^selfcheck ok charts=1 findings=2 " "1.00 MiB"
if grep -q 'name="viewport" content="width=device-width' "$out/leaks-order.html"; then ok "leaks-order: a viewport for phones"
else bad "leaks-order: no viewport meta"; fi
rows=$(grep -o '<tr id="f[0-9]*"' "$out/leaks-order.dom" | tr -dc 'f0-9')
if [ "$rows" = "f1f2" ]; then ok "leaks-order: rows in the report's order after load"
else bad "leaks-order: rows after load '$rows', expected f1f2 (the 1 MiB block first)"; fi
if grep -Eq '<th[^>]*class="[^"]*(asc|desc)' "$out/leaks-order.dom"; then bad "leaks-order: a column marked sorted on load"
else ok "leaks-order: no column marked sorted on load"; fi

# a damaged trace: the page says so at its top, with the damage
head -c $((0x60000 + 3000)) $N >"$out/cut.etl"
$HS leaks "$out/cut.etl" -- --html "$out/leaks-cut.html" >/dev/null 2>&1
[ $? -eq 1 ] || bad "leaks on a damaged trace exits 1"
page leaks-cut "^selfcheck ok charts=[1-9] findings=[1-9]" "Damaged trace" \
  "1 damaged part skipped; the figures leave out what it held" "cut.etl: offset 0x60000 (buffer 6): expected a whole buffer"

[ $fail -eq 0 ] && echo "test_html: all passed (screenshots in $out)"
exit $fail
