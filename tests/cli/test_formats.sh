#!/bin/sh
# test_formats.sh -- golden tests of the report files other tools read:
# --folded, --csv, --markdown and policy --junit on the example traces
# (tests/golden/cases.txt), and every JUnit file valid against
# tests/junit.xsd (xmllint, Debian's libxml2-utils).
#   sh tests/cli/test_formats.sh              compare
#   sh tests/cli/test_formats.sh --regenerate write tests/golden/ again (make golden)
HS=${HS_BIN:-./heapscript}
G=tests/golden
regen=0
[ "$1" = "--regenerate" ] && regen=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
have_xmllint=1
if ! command -v xmllint >/dev/null 2>&1; then
  have_xmllint=0
  if [ "$CI" = true ]; then echo "not ok - xmllint missing and CI=true (make deps installs libxml2-utils)"; fail=1
  else echo "SKIP JUnit schema validation: no xmllint (make deps installs libxml2-utils)"; fi
fi

# Is JUnit file $1 valid against tests/junit.xsd?  Says so (nothing
# without xmllint); 1 when not.
valid_junit() {
  [ $have_xmllint = 1 ] || return 0
  if xmllint --noout --schema tests/junit.xsd "$1" 2>"$tmp/xerr"; then echo "ok - ${1##*/} is valid JUnit XML"
  else echo "not ok - ${1##*/} is not valid against tests/junit.xsd: $(head -3 "$tmp/xerr")"; return 1; fi
}

grep -v '^#' $G/cases.txt | grep -v '^ *$' | while read -r name cmd; do
  case $name in
    *.folded) opt=--folded ;;
    *.csv) opt=--csv ;;
    *.md) opt=--markdown ;;
    *.xml) opt=--junit ;;
    *) echo "not ok - $name: unknown extension"; exit 1 ;;
  esac
  case " $cmd " in *" -- "*) sep="" ;; *) sep="--" ;; esac
  # shellcheck disable=SC2086
  $HS $cmd $sep $opt "$tmp/$name" >/dev/null 2>"$tmp/err"
  code=$?
  if [ $code -gt 1 ] || [ ! -f "$tmp/$name" ]; then
    echo "not ok - $name: '$cmd' exit $code: $(head -3 "$tmp/err")"; exit 1
  fi
  if [ $regen = 1 ]; then
    cp "$tmp/$name" "$G/$name"; echo "wrote $G/$name"
  elif cmp -s "$tmp/$name" "$G/$name"; then
    echo "ok - $name matches the golden file"
  else
    echo "not ok - $name differs from $G/$name (make golden writes it again):"
    diff -u "$G/$name" "$tmp/$name" | head -20
    exit 1
  fi
  if [ "${name##*.}" = xml ]; then valid_junit "$tmp/$name" || exit 1; fi
done || fail=1

# a damaged trace: each report file says so before its figures (the run
# exits 1 for it): markdown a quoted note with the damage, the JUnit file
# a failed case "trace damage" that names it (and stays valid)
if [ $regen = 0 ]; then
  head -c $((0x60000 + 3000)) examples/notmyfault.etl >"$tmp/cut.etl"
  $HS leaks "$tmp/cut.etl" -- --markdown "$tmp/cut.md" >/dev/null 2>&1; code=$?
  if [ $code = 1 ] && grep -qF "> **Damaged trace**: 1 damaged part skipped; the figures leave out what it held" "$tmp/cut.md" \
     && grep -qF "> - $tmp/cut.etl: offset 0x60000 (buffer 6): expected a whole buffer" "$tmp/cut.md"; then
    echo "ok - markdown of a damaged trace: the damage before the figures"
  else echo "not ok - markdown of a damaged trace (exit $code): $(head -5 "$tmp/cut.md")"; fail=1; fi
  # every rule holds, but the trace is damaged: the run fails, and the pull-request summary says FAIL
  printf 'return { { name = "roomy", max_leaked_bytes = 2^40 } }\n' >"$tmp/roomy.lua"
  $HS policy "$tmp/cut.etl" -- --rules "$tmp/roomy.lua" --markdown "$tmp/cutp.md" >/dev/null 2>&1; code=$?
  if [ $code = 1 ] && grep -qF "**FAIL**: 1 rule, 0 broken, 0 warnings" "$tmp/cutp.md"; then
    echo "ok - policy markdown of a damaged trace whose rules hold: FAIL, as the run"
  else echo "not ok - policy markdown of a damaged trace (exit $code): $(grep -F '**' "$tmp/cutp.md")"; fail=1; fi
  $HS policy "$tmp/cut.etl" -- --junit "$tmp/cut.xml" >/dev/null 2>&1; code=$?
  if [ $code = 1 ] && grep -q '<testsuites name="heapscript policy" tests="8" failures="3"' "$tmp/cut.xml" \
     && grep -qF '<testcase classname="heapscript" name="trace damage">' "$tmp/cut.xml" \
     && grep -qF "$tmp/cut.etl: offset 0x60000 (buffer 6): expected a whole buffer" "$tmp/cut.xml"; then
    echo "ok - JUnit of a damaged trace: a failed case 'trace damage' naming it"
  else echo "not ok - JUnit of a damaged trace (exit $code): $(grep -n 'testsuites\|damage' "$tmp/cut.xml")"; fail=1; fi
  valid_junit "$tmp/cut.xml" || fail=1
fi

# names with XML's special characters (a process, a rule) are escaped in
# every attribute and text of the JUnit file, which stays valid
if [ $regen = 0 ]; then
  cat >"$tmp/mk.lua" <<'LUA'
local w = assert(heapscript.writer(arg[1]))
w:process{op = "dcstart", pid = 1000, ts = 10, name = [[a&b<"c'>.exe]]}
w:heap{op = "alloc", pid = 1000, tid = 1004, ts = 100, heap = 0x5000, addr = 0x20000, size = 100}
assert(w:close())
LUA
  printf '%s\n' "return { { name = [[leaks <&> \"q\"]], select = { kind = \"heap\" }, per = \"process\", max_leaked_bytes = 10 } }" >"$tmp/xr.lua"
  $HS "$tmp/mk.lua" -- "$tmp/xml.etl" >/dev/null 2>&1
  $HS policy "$tmp/xml.etl" -- --rules "$tmp/xr.lua" --junit "$tmp/xml.xml" >/dev/null 2>&1; code=$?
  if [ $code = 1 ] && grep -qF 'name="leaks &lt;&amp;&gt; &quot;q&quot;"' "$tmp/xml.xml" \
     && grep -qF '<failure message="a&amp;b&lt;&quot;c&apos;&gt;.exe (1000): leaked_bytes = 100, limit 10"' "$tmp/xml.xml"; then
    echo "ok - JUnit: a rule's and a process's special characters escaped"
  else echo "not ok - JUnit with special characters (exit $code): $(grep -n 'testcase\|failure' "$tmp/xml.xml")"; fail=1; fi
  valid_junit "$tmp/xml.xml" || fail=1
fi

# names that are not UTF-8 (a symbol map's bytes, a trace's file name): U+FFFD in the JUnit and
# JSON files, which stay readable (a CI refuses a JUnit file that is not UTF-8 whole)
if [ $regen = 0 ]; then
  cat >"$tmp/mk8.lua" <<'LUA'
local w = assert(heapscript.writer(arg[1]))
w:process{op = "dcstart", pid = 1000, ts = 10, name = "app.exe"}
w:image{op = "dcstart", pid = 1000, base = 0x7ff800000000, size = 0x10000, ts = 20, path = "\\Device\\X\\app.exe"}
w:heap{op = "alloc", pid = 1000, tid = 1004, ts = 100, heap = 0x5000, addr = 0x20000, size = 100,
       stack = {0x7ff800001010}}
assert(w:close())
local f = assert(io.open(arg[1]:gsub("%.etl$", ".sym"), "wb"))
f:write("app.exe 1000 100 Bad\255\254Name\n")
f:close()
LUA
  cat >"$tmp/utf8.lua" <<'LUA'
for _, p in ipairs(arg) do
  local s = assert(io.open(p, "rb")):read("a")
  print(p, utf8.len(s) and "utf8" or "not-utf8", s:find("Bad\239\191\189\239\191\189Name", 1, true) and "fffd" or "no-fffd")
end
LUA
  printf 'return { { name = "leaks", select = { kind = "heap" }, per = "stack", max_leaked_bytes = 10 } }\n' >"$tmp/u8r.lua"
  $HS "$tmp/mk8.lua" -- "$tmp/u8.etl" >/dev/null 2>&1
  $HS policy "$tmp/u8.etl" -- --rules "$tmp/u8r.lua" --junit "$tmp/u8.xml" --json "$tmp/u8.json" >/dev/null 2>&1; code=$?
  got=$($HS "$tmp/utf8.lua" -- "$tmp/u8.xml" "$tmp/u8.json" 2>&1 | awk '{ print $2, $3 }' | tr '\n' ' ')
  if [ $code = 1 ] && [ "$got" = "utf8 fffd utf8 fffd " ]; then
    echo "ok - JUnit and JSON: a name that is not UTF-8 written with U+FFFD"
  else echo "not ok - a name that is not UTF-8 (exit $code): $got"; fail=1; fi
  valid_junit "$tmp/u8.xml" || fail=1
  # ... and such a run against its own stored baseline: no stack is new (the baseline's keys have U+FFFD)
  $HS leaks "$tmp/u8.etl" -- --json "$tmp/u8base.json" >/dev/null 2>&1
  printf 'return { { name = "nothing-new", per = "stack", no_new_leaks = true } }\n' >"$tmp/u8n.lua"
  $HS policy "$tmp/u8.etl" -- --rules "$tmp/u8n.lua" --baseline "$tmp/u8base.json" >"$tmp/u8n.out" 2>&1; code=$?
  if [ $code = 0 ] && grep -q "^PASS  nothing-new" "$tmp/u8n.out"; then
    echo "ok - a run against its own JSON baseline, a frame name not UTF-8: nothing new"
  else echo "not ok - a run against its own JSON baseline, a frame name not UTF-8 (exit $code): $(head -3 "$tmp/u8n.out")"; fail=1; fi
fi

# names that are UTF-8 but not XML 1.0 characters: U+FFFE and U+FFFF (and a surrogate, which is
# not UTF-8) as U+FFFD in the JUnit file, which stays valid
if [ $regen = 0 ]; then
  cp "$tmp/u8.etl" "$tmp/nc.etl"
  printf 'app.exe 1000 100 Non\357\277\277char\357\277\276x\355\240\200s\n' >"$tmp/nc.sym"
  $HS policy "$tmp/nc.etl" -- --rules "$tmp/u8r.lua" --junit "$tmp/nc.xml" >/dev/null 2>&1; code=$?
  if [ $code = 1 ] && grep -qF "$(printf 'Non\357\277\275char\357\277\275x\357\277\275')" "$tmp/nc.xml"; then
    echo "ok - JUnit: U+FFFE and U+FFFF in a name written as U+FFFD"
  else echo "not ok - JUnit: U+FFFE and U+FFFF in a name (exit $code): $(grep -a failure "$tmp/nc.xml")"; fail=1; fi
  valid_junit "$tmp/nc.xml" || fail=1
fi

# the schema itself rejects what it should
if [ $have_xmllint = 1 ] && [ $regen = 0 ]; then
  printf '<testsuites><testsuite name="s"><testcase name="a"><failure message="m"/><bogus/></testcase></testsuite></testsuites>\n' >"$tmp/bad.xml"
  if xmllint --noout --schema tests/junit.xsd "$tmp/bad.xml" 2>/dev/null; then
    echo "not ok - the schema accepts a testcase without classname and with an unknown element"; fail=1
  else echo "ok - the schema rejects a malformed report"; fi
fi
exit $fail
