#!/bin/sh
# test_symbols.sh -- PDBs found for a trace's images, from the command line:
# `heapscript symbols` (golden text and JSON on the example), a PDB found
# beside the trace, in a symbol store given by --symbol-path or
# _NT_SYMBOL_PATH (a URL said once and ignored), a PDB whose GUID or age does not
# match and a damaged PDB: each reported with the file (and offset), its
# image left unnamed, and the rest of the report made.  One PDB wanted at
# two ages is two identities; a renamed image is named by its original name;
# past 16 inline levels the innermost 15 and the function stay (llvm-symbolizer's).
HS=${HS_BIN:-./heapscript}
E=examples/memorytestapp.etl
T=$(mktemp -d "${TMPDIR:-/tmp}/hs-symbols.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fails=0
no() { echo "not ok: $*"; fails=$((fails + 1)); }
KEY=73530E7B1169D7AF4C4C44205044422E1

# golden: the example, its PDB beside it, the system DLLs named by the map
"$HS" symbols "$E" >"$T/out.txt" 2>"$T/err" || no "symbols exits 0"
cmp -s "$T/out.txt" tests/cli/golden/symbols-memorytestapp.txt || { no "symbols text differs from the golden file:"; diff tests/cli/golden/symbols-memorytestapp.txt "$T/out.txt"; }
"$HS" symbols --json "$E" >"$T/out.json" || no "symbols --json exits 0"
cmp -s "$T/out.json" tests/cli/golden/symbols-memorytestapp.json || { no "symbols --json differs from the golden file:"; diff tests/cli/golden/symbols-memorytestapp.json "$T/out.json"; }
[ -s "$T/err" ] && no "symbols wrote to stderr: $(cat "$T/err")"
awk 'length > 120 { exit 1 }' "$T/out.txt" || no "symbols lines fit a terminal (120 columns)"

# the leak report names InnerLoopOperation from the PDB, with file:line, text and JSON
"$HS" leaks "$E" >"$T/leaks.txt" 2>"$T/err" || no "leaks exits 0"
grep -qF 'MemoryTestApp.exe!InnerLoopOperation+0x1f [memorytestapp.c:53]' "$T/leaks.txt" || no "leaks text: InnerLoopOperation with file:line"
grep -qF 'MemoryTestApp.exe!RunInnerLoop [memorytestapp.c:111]' "$T/leaks.txt" || no "leaks text: the inline level"
grep -qF 'ntdll.dll!RtlAllocateHeap+0x3e' "$T/leaks.txt" || no "leaks text: ntdll from the map"
[ -s "$T/err" ] && no "leaks wrote to stderr: $(cat "$T/err")"
"$HS" leaks "$E" -- --json "$T/leaks.json" >/dev/null || no "leaks --json exits 0"
grep -qF '"MemoryTestApp.exe!InnerLoopOperation+0x1f [memorytestapp.c:53]"' "$T/leaks.json" || no "leaks JSON: the frame with file:line"
grep -qF '"headline": "MemoryTestApp.exe!InnerLoopOperation+0x1f [memorytestapp.c:53]"' "$T/leaks.json" || no "leaks JSON: the headline"

# a trace away from its PDB: missing, then found in a store by --symbol-path / _NT_SYMBOL_PATH
mkdir -p "$T/away" "$T/store/MemoryTestApp.pdb/$KEY" "$T/store2/Me/MemoryTestApp.pdb/$KEY"
cp "$E" examples/memorytestapp.sym "$T/away/"
cp examples/MemoryTestApp.pdb "$T/store/MemoryTestApp.pdb/$KEY/"
cp examples/MemoryTestApp.pdb "$T/store2/Me/MemoryTestApp.pdb/$KEY/"
: >"$T/store2/index2.txt"
"$HS" symbols "$T/away/memorytestapp.etl" | grep -q '^MemoryTestApp.exe .* missing$' || no "away from its PDB: missing"
"$HS" leaks "$T/away/memorytestapp.etl" 2>&1 | grep -qF 'MemoryTestApp.exe+0x14bf' || no "away from its PDB: module+RVA frames"
"$HS" symbols --symbol-path "srv*$T/store*https://msdl.microsoft.com/download/symbols" "$T/away/memorytestapp.etl" \
  >"$T/out" 2>"$T/err"
grep -qF "found $T/store/MemoryTestApp.pdb/$KEY/MemoryTestApp.pdb" "$T/out" || no "--symbol-path srv*STORE: found in the store: $(cat "$T/out")"
[ "$(grep -c 'https://msdl.microsoft.com/download/symbols ignored: there is no network' "$T/err")" = 1 ] || no "the URL is said once: $(cat "$T/err")"
# ... once a run, not once a trace: diff's two traces take the one path
_NT_SYMBOL_PATH="srv*$T/store*https://msdl.microsoft.com/download/symbols" "$HS" diff "$T/away/memorytestapp.etl" \
  examples/memorytestapp-newleak.etl >/dev/null 2>"$T/err"
[ "$(grep -c 'https://msdl.microsoft.com/download/symbols ignored: there is no network' "$T/err")" = 1 ] \
  || no "the URL is said once a run (diff of two traces): $(cat "$T/err")"
_NT_SYMBOL_PATH="cache*$T/store2" "$HS" symbols "$T/away/memorytestapp.etl" \
  | grep -qF "found $T/store2/Me/MemoryTestApp.pdb/$KEY/MemoryTestApp.pdb" || no "_NT_SYMBOL_PATH, a two-tier store (index2.txt)"
"$HS" --symbol-path "srv*$T/store" leaks "$T/away/memorytestapp.etl" 2>/dev/null \
  | grep -qF 'MemoryTestApp.exe!InnerLoopOperation+0x1f [memorytestapp.c:53]' || no "script mode --symbol-path names the frames"
_NT_SYMBOL_PATH="$T/nothing" "$HS" --symbol-path="srv*$T/store" leaks "$T/away/memorytestapp.etl" 2>/dev/null \
  | grep -qF 'InnerLoopOperation+0x1f' || no "--symbol-path=P wins over _NT_SYMBOL_PATH"
"$HS" leaks "$T/away/memorytestapp.etl" -- --symbol-path "srv*$T/store" 2>/dev/null \
  | grep -qF 'MemoryTestApp.exe!InnerLoopOperation+0x1f [memorytestapp.c:53]' || no "a bundled script's --symbol-path after --"
"$HS" --symbol-path 2>/dev/null; [ $? -eq 2 ] || no "--symbol-path without a value: exit 2"

# a damaged PDB beside the trace: one message with the file and offset; that image unnamed, the rest named
mkdir -p "$T/damaged"
cp "$E" examples/memorytestapp.sym "$T/damaged/"
head -c 6000 examples/MemoryTestApp.pdb >"$T/damaged/MemoryTestApp.pdb"
"$HS" symbols "$T/damaged/memorytestapp.etl" >"$T/out" || no "symbols with a damaged PDB exits 0"
grep -q "^MemoryTestApp.exe .* damaged: $T/damaged/MemoryTestApp.pdb: offset 0x" "$T/out" || no "symbols: damaged, with file and offset: $(cat "$T/out")"
"$HS" leaks "$T/damaged/memorytestapp.etl" >"$T/leaks.txt" 2>"$T/err" || no "leaks with a damaged PDB exits 0"
grep -qF '319 allocated and not freed' "$T/leaks.txt" || no "damaged PDB: the report is made"
grep -qF 'MemoryTestApp.exe+0x14bf' "$T/leaks.txt" || no "damaged PDB: its image stays unnamed"
grep -qF 'ntdll.dll!RtlAllocateHeap+0x3e' "$T/leaks.txt" || no "damaged PDB: the other images are named"
[ "$(grep -c "symbols: MemoryTestApp.exe: $T/damaged/MemoryTestApp.pdb: offset 0x" "$T/err")" = 1 ] \
  || no "damaged PDB: one message with file and offset: $(cat "$T/err")"
# ... the message SYMBOLS.md shows (for the directory dm/)
msg=$(grep "symbols: MemoryTestApp.exe: $T/damaged/" "$T/err" | sed "s|$T/damaged/|dm/|")
grep -qxF "$msg" docs/SYMBOLS.md || no "damaged PDB: docs/SYMBOLS.md shows the message as the program prints it: $msg"

# The image's PDB identity as the trace writes it (KernelTraceControl DbgID_RSDS,
# op 36), for the written traces below: dofile'd from beside each script
cat >"$T/rsds.lua" <<'LUA'
return function(w, o)     -- o: pid, tid, ts, base, guid ("8-4-4-4-12"), age, pdb
  local h = o.guid:gsub("-", "")
  local d4 = h:sub(17):gsub("%x%x", function(x) return string.char(tonumber(x, 16)) end)
  w:mof { provider = "b3e675d7-2554-4f18-830b-2762732560de", opcode = 36, version = 2, pid = o.pid, tid = o.tid,
          ts = o.ts, payload = string.pack("<I8I4I4I2I2", o.base, o.pid, tonumber(h:sub(1, 8), 16),
                                           tonumber(h:sub(9, 12), 16), tonumber(h:sub(13, 16), 16))
                               .. d4 .. string.pack("<I4z", o.age, o.pdb) }
end
LUA
# a PDB of that name with another GUID: not used, and the report says who wanted what
mkdir -p "$T/other"
cat >"$T/other.lua" <<'LUA'
local out, guid, age = arg[1], arg[2] or "11111111-2222-3333-4444-555555555555", tonumber(arg[3] or 1)
local rsds = dofile(arg[0]:gsub("[^/]*$", "") .. "rsds.lua")
local w = assert(heapscript.writer(out .. "/other.etl"))
local base = 0x7ff600000000
w:process { op = "dcstart", pid = 100, ppid = 4, ts = 10, name = "MemoryTestApp.exe" }
w:image { op = "dcstart", pid = 100, base = base, size = 0x6000, ts = 20, path = "C:\\app\\MemoryTestApp.exe" }
rsds(w, { pid = 100, tid = 104, ts = 20, base = base, guid = guid, age = age, pdb = "MemoryTestApp.pdb" })
w:heap { op = "alloc", pid = 100, tid = 104, ts = 100, heap = 0x10000, addr = 0x20000, size = 64,
         stack = { base + 0x14bf, base + 0x1105 } }
assert(w:close())
LUA
"$HS" "$T/other.lua" -- "$T/other" || no "writing the other-GUID trace"
cp examples/MemoryTestApp.pdb "$T/other/"
"$HS" symbols "$T/other/other.etl" >"$T/out"
grep -q "^MemoryTestApp.exe .*11111111222233334444555555555555.* mismatched GUID: $T/other/MemoryTestApp.pdb has GUID 73530e7b-1169-d7af-4c4c-44205044422e age 1$" "$T/out" \
  || no "symbols: mismatched GUID, what was wanted and what was found: $(cat "$T/out")"
"$HS" leaks "$T/other/other.etl" >"$T/leaks.txt" 2>"$T/err" || no "leaks with a mismatched PDB exits 0"
grep -qF 'MemoryTestApp.exe+0x14bf' "$T/leaks.txt" || no "mismatched PDB: not used"
grep -qF "symbols: MemoryTestApp.exe wants MemoryTestApp.pdb GUID 11111111-2222-3333-4444-555555555555 age 1; $T/other/MemoryTestApp.pdb does not match (it has GUID 73530e7b-1169-d7af-4c4c-44205044422e age 1): not used" "$T/err" \
  || no "mismatched PDB: the message: $(cat "$T/err")"
# the right GUID with another age: a mismatch too, and counted as one in the summary
mkdir -p "$T/age"
"$HS" "$T/other.lua" -- "$T/age" 73530e7b-1169-d7af-4c4c-44205044422e 2 || no "writing the other-age trace"
cp examples/MemoryTestApp.pdb "$T/age/"
"$HS" symbols "$T/age/other.etl" >"$T/out"
grep -q "^MemoryTestApp.exe .*73530E7B1169D7AF4C4C44205044422E2 .* mismatched age: $T/age/MemoryTestApp.pdb has GUID 73530e7b-1169-d7af-4c4c-44205044422e age 1$" "$T/out" \
  || no "symbols: mismatched age, what was wanted and what was found: $(cat "$T/out")"
[ "$(tail -1 "$T/out")" = "1 images: 0 with their PDB, 1 mismatched" ] || no "symbols: an age mismatch counted as mismatched: $(tail -1 "$T/out")"

# the map beside a trace named in upper case (.ETL): NAME.sym, as for .etl
mkdir -p "$T/upper"
cp "$E" "$T/upper/MEMORYTESTAPP.ETL"; cp examples/memorytestapp.sym "$T/upper/MEMORYTESTAPP.sym"
"$HS" symbols "$T/upper/MEMORYTESTAPP.ETL" >"$T/out"
[ "$(grep -c '; symbol map: ' "$T/out")" = 3 ] || no "symbols: the map beside MEMORYTESTAPP.ETL names 3 images: $(cat "$T/out")"

# a malformed map beside the trace: symbols says it is ignored, with the line, as leaks does
mkdir -p "$T/badmap"
cp "$E" "$T/badmap/"; printf 'MemoryTestApp.exe 1000 100 MapMain\nMemoryTestApp.exe zz 10 Bad\n' >"$T/badmap/memorytestapp.sym"
"$HS" symbols "$T/badmap/memorytestapp.etl" >"$T/out" 2>"$T/err" || no "symbols with a malformed map beside the trace exits 0"
"$HS" leaks "$T/badmap/memorytestapp.etl" >/dev/null 2>"$T/err2"
msg="heapscript: ignoring $T/badmap/memorytestapp.sym: $T/badmap/memorytestapp.sym:2: expected the RVA in hex after the module name, got 'zz'"
{ [ "$(cat "$T/err")" = "$msg" ] && [ "$(cat "$T/err2")" = "$msg" ]; } \
  || no "a malformed map beside the trace: symbols says so as leaks does: $(cat "$T/err") / $(cat "$T/err2")"
grep -q '^4 images: ' "$T/out" || no "a malformed map beside the trace: the report is made: $(tail -1 "$T/out")"

# one PDB at two ages in two processes: two image identities, each with its own answer;
# a renamed copy of ntdll named from the map by its ImageId's OriginalFileName
mkdir -p "$T/ids"
cat >"$T/ids.lua" <<'LUA'
local out = arg[1]
local rsds = dofile(arg[0]:gsub("[^/]*$", "") .. "rsds.lua")
local w = assert(heapscript.writer(out .. "/ids.etl"))
local ktc = "b3e675d7-2554-4f18-830b-2762732560de"
local app, dll = 0x7ff600000000, 0x7ff800000000
for _, p in ipairs { { 100, 1 }, { 200, 2 } } do
  local pid, age = p[1], p[2]
  w:process { op = "dcstart", pid = pid, ppid = 4, ts = pid, name = "MemoryTestApp.exe" }
  w:image { op = "dcstart", pid = pid, base = app, size = 0x6000, ts = pid + 1, path = "C:\\app\\MemoryTestApp.exe" }
  rsds(w, { pid = pid, tid = pid + 4, ts = pid + 1, base = app, guid = "73530e7b-1169-d7af-4c4c-44205044422e",
            age = age, pdb = "MemoryTestApp.pdb" })
end
w:image { op = "dcstart", pid = 100, base = dll, size = 0x200000, ts = 300, path = "C:\\app\\renamed.dll" }
w:mof { provider = ktc, opcode = 0, version = 2, pid = 100, tid = 104, ts = 300,
        payload = string.pack("<I8I8I4I4", dll, 0x200000, 100, 0) .. ("ntdll.dll\0"):gsub(".", "%0\0") }
w:heap { op = "alloc", pid = 100, tid = 104, ts = 400, heap = 0x10000, addr = 0x20000, size = 64,
         stack = { dll + 0x3a72e, app + 0x14bf } }
assert(w:close())
LUA
"$HS" "$T/ids.lua" -- "$T/ids" || no "writing the two-ages trace"
cp examples/MemoryTestApp.pdb "$T/ids/"; cp examples/memorytestapp.sym "$T/ids/ids.sym"
"$HS" symbols "$T/ids/ids.etl" >"$T/out"
{ grep -q "^MemoryTestApp.exe .*73530E7B1169D7AF4C4C44205044422E1  found $T/ids/MemoryTestApp.pdb$" "$T/out" &&
  grep -q "^MemoryTestApp.exe .*73530E7B1169D7AF4C4C44205044422E2  mismatched age: " "$T/out" &&
  [ "$(tail -1 "$T/out")" = "3 images: 1 with their PDB, 1 mismatched, 1 without a PDB identity" ]; } \
  || no "symbols: one PDB wanted at ages 1 and 2 is two identities: $(cat "$T/out")"
"$HS" leaks "$T/ids/ids.etl" >"$T/leaks.txt" 2>"$T/err" || no "leaks on the two-ages trace exits 0"
grep -qF 'renamed.dll!RtlAllocateHeap+0x3e' "$T/leaks.txt" || no "a renamed image named from the map by its OriginalFileName: $(cat "$T/leaks.txt")"

# more inline levels than a frame list keeps (HSI_SYM_MAXDEPTH, 16): the innermost 15
# and the function, named as llvm-symbolizer --inlining names them.  The PDB is made
# here (clang + lld-link): eighty always_inline levels around one call, more than the
# PDB reader's 64 (it kept the outermost 64: the innermost were lost).
PD=${HS_BUILD:-build/rel}/tests/pdbdump
lib=$(ls -d /usr/lib/gcc/x86_64-w64-mingw32/*-win32 2>/dev/null | head -n 1)
if command -v clang >/dev/null && command -v ld.lld >/dev/null && command -v llvm-symbolizer >/dev/null \
   && [ -n "$lib" ] && [ -x "$PD" ]; then
  D=$T/deep; mkdir -p "$D"
  { echo 'volatile int sink;'
    echo '__attribute__((noinline)) void leaf(int x) { sink = x; }'
    echo 'static inline __attribute__((always_inline)) void f0(int x) { leaf(x); sink = 0; }'
    for i in $(seq 1 79); do
      echo "static inline __attribute__((always_inline)) void f$i(int x) { sink = $i; f$((i - 1))(x); sink = $i; }"
    done
    echo 'int main(void) { f79(1); return 0; }'; } >"$D/deep.c"
  if clang --target=x86_64-w64-mingw32 -g -gcodeview -O2 -fuse-ld=lld -Wl,--pdb="$D/deep.pdb" -L"$lib" \
       -o "$D/deep.exe" "$D/deep.c" 2>"$T/cc.err"; then
    # the address with the most levels, and the oracle's names there (innermost first)
    "$PD" addrs "$D/deep.pdb" | sed 's/ .*//; s/^/0x/' | sort -u >"$D/addrs"
    rva=$(llvm-symbolizer --obj="$D/deep.exe" --relative-address --inlining --no-demangle --print-address <"$D/addrs" \
          | awk 'NF == 0 { print n, a; n = 0; next } /^0x/ { a = $0; next } { n++ }' | sort -n | tail -n 1 | cut -d' ' -f2)
    echo "$rva" | llvm-symbolizer --obj="$D/deep.exe" --relative-address --inlining --no-demangle \
      | awk 'NF > 0 && ++n % 2 == 1' >"$D/oracle"
    { head -n 15 "$D/oracle"; tail -n 1 "$D/oracle"; } >"$D/want"
    guid=$("$PD" info "$D/deep.pdb" | sed -n 's/^guid //p'); age=$("$PD" info "$D/deep.pdb" | sed -n 's/^age //p')
    cat >"$T/deep.lua" <<'LUA'
local out, guid, age, rva = arg[1], arg[2], tonumber(arg[3]), tonumber(arg[4])
if out:sub(-4) == ".etl" then                  -- read: the frames of the one allocation's stack
  local t <close> = assert(heapscript.open(out))
  for a in t:allocations { kind = "heap" }:each() do
    for _, f in ipairs(a.stack:frames()) do print((f:gsub("^deep%.exe!", ""):gsub("[+ ].*", ""))) end
  end
  return
end
local w = assert(heapscript.writer(out .. "/deep.etl"))
local rsds = dofile(arg[0]:gsub("[^/]*$", "") .. "rsds.lua")
local base = 0x140000000
w:process { op = "dcstart", pid = 100, ppid = 4, ts = 10, name = "deep.exe" }
w:image { op = "dcstart", pid = 100, base = base, size = 0x10000, ts = 20, path = "C:\\app\\deep.exe" }
rsds(w, { pid = 100, tid = 104, ts = 20, base = base, guid = guid, age = age, pdb = "deep.pdb" })
w:heap { op = "alloc", pid = 100, tid = 104, ts = 100, heap = 0x10000, addr = 0x20000, size = 64, stack = { base + rva } }
assert(w:close())
LUA
    "$HS" "$T/deep.lua" -- "$D" "$guid" "$age" "$rva" || no "writing the deep trace"
    "$HS" "$T/deep.lua" -- "$D/deep.etl" >"$D/ours" 2>&1 || no "reading the deep trace"
    [ "$(wc -l <"$D/oracle")" -gt 65 ] || no "deep.exe: llvm-symbolizer finds more than 65 levels at $rva: $(wc -l <"$D/oracle")"
    cmp -s "$D/want" "$D/ours" || { no "deep.exe at $rva: the innermost 15 levels and the function:"; diff "$D/want" "$D/ours" | head; }
  else
    no "clang failed: $(head -n 3 "$T/cc.err")"
  fi
elif [ "$CI" = true ]; then
  no "clang, lld, llvm-symbolizer or the mingw-w64 runtime missing and CI=true"
else
  echo "SKIP: inline levels past 16: no clang, lld, llvm-symbolizer or mingw-w64 runtime"
fi

# x86 (a real PDB of Microsoft's linker): a function only the publics name is undecorated as
# llvm-symbolizer does ("_memset" memset, "__CxxThrowException@8" _CxxThrowException); a
# procedure's own name is not, with or without lines ("__security_check_cookie", "_RTC_Initialize")
P=${HEAPSCRIPT_PDBS:-../shared/pdbs}
PD=${HS_BUILD:-build/rel}/tests/pdbdump
if [ -f "$P/getsentry_symbolic__crash.pdb" ] && [ -x "$PD" ] && command -v llvm-symbolizer >/dev/null; then
  mkdir -p "$T/x86"
  cp "$P/getsentry_symbolic__crash.exe" "$T/x86/crash.exe"; cp "$P/getsentry_symbolic__crash.pdb" "$T/x86/crash.pdb"
  # every public-only function, and the first byte of every procedure alone at its address (of
  # those folded to one, the first is named); RVA: the section's + the decimal offset pdbdump prints
  "$PD" orphans "$T/x86/crash.pdb" > "$T/x86/rvas"
  n=$(wc -l < "$T/x86/rvas")
  text=$(llvm-readobj --sections "$T/x86/crash.exe" | awk '/Name: .text/ { f = 1 } f && /VirtualAddress:/ { print $2; exit }')
  "$PD" functions "$T/x86/crash.pdb" | awk '$1 ~ /^0001:/ { n[$1]++ } END { for (k in n) if (n[k] == 1) print k }' > "$T/x86/once"
  "$PD" functions "$T/x86/crash.pdb" | awk -v t=$((text)) -v once="$T/x86/once" \
    'BEGIN { while ((getline l < once) > 0) u[l] = 1 } $1 in u { printf "%x\n", t + substr($1, 6) }' >> "$T/x86/rvas"
  cat >"$T/x86.lua" <<'LUA'
local dir = arg[1]
local rsds = dofile(arg[0]:gsub("[^/]*$", "") .. "rsds.lua")
local w = assert(heapscript.writer(dir .. "/x86.etl"))
w:process { op = "dcstart", pid = 100, ppid = 4, ts = 10, name = "crash.exe" }
w:image { op = "dcstart", pid = 100, base = 0x400000, size = 0x9000, ts = 11, path = "C:\\app\\crash.exe" }
rsds(w, { pid = 100, tid = 104, ts = 11, base = 0x400000, guid = "3249d99d-0c40-4931-8610-f4e4fb0b6936", age = 1,
          pdb = "C:\\projects\\crash.pdb" })
local i = 0
for rva in io.lines(dir .. "/rvas") do
  i = i + 1
  w:heap { op = "alloc", pid = 100, tid = 104, ts = 100 + 10 * i, heap = 0x10000, addr = 0x100000 + i * 16, size = i,
           stack = { 0x400000 + tonumber(rva, 16) } }
end
assert(w:close())
local t = assert(heapscript.open(dir .. "/x86.etl"))
local names = {}
for a in t:allocations():each() do
  local f = a.stack:frames()          -- inline levels first: the function is the last
  names[a.size] = (f[#f]:match("^crash%.exe!(.*)$") or "?"):gsub(" %[[^%]]*%]$", ""):gsub("%+0x%x+$", "")
end
for k = 1, i do print(names[k]) end
LUA
  if "$HS" "$T/x86.lua" -- "$T/x86" > "$T/x86/ours" 2>"$T/x86/err"; then
    # publics: as llvm-symbolizer undecorates them; procedures: their names as the PDB has them
    # (llvm-pdbutil's: test_pdb_oracle.sh; llvm-symbolizer's short names drop an underscore there)
    sed 's/^/0x/' "$T/x86/rvas" | head -n "$n" | llvm-symbolizer --obj="$T/x86/crash.exe" --relative-address --no-inlines \
      | awk 'NF == 0 { k = 0; next } { k++; if (k == 1) print }' > "$T/x86/want"
    "$PD" functions "$T/x86/crash.pdb" | awk -v once="$T/x86/once" \
      'BEGIN { while ((getline l < once) > 0) u[l] = 1 } $1 in u { $1 = ""; $2 = ""; sub(/^  /, ""); print }' >> "$T/x86/want"
    cmp -s "$T/x86/want" "$T/x86/ours" || { no "x86: function names differ:"; diff "$T/x86/want" "$T/x86/ours" | head; }
    grep -qx "__security_check_cookie" "$T/x86/ours" && grep -qx "_CxxThrowException" "$T/x86/ours" \
      || no "x86: a procedure named with its underscores, a stdcall public undecorated"
  else
    no "x86: writing or reading the trace: $(head -n 3 "$T/x86/err")"
  fi
elif [ "$CI" = true ]; then
  no "x86 PDB ($P), pdbdump or llvm-symbolizer missing and CI=true"
else
  echo "SKIP: x86 names: no $P/getsentry_symbolic__crash.pdb, pdbdump or llvm-symbolizer"
fi

# x86: a C function only the publics name, whose name is 600 characters long, is undecorated as a
# short one is (its "_" was kept past 511 characters)
if command -v clang >/dev/null && command -v lld-link >/dev/null && [ -x "$PD" ]; then
  X=$T/x86long; mkdir -p "$X"
  long=f_$(printf '%0600d' 0 | tr 0 a)
  echo "int __attribute__((noinline)) $long(int x) { return x * 3 + 1; }" >"$X/nodbg.c"
  echo "int $long(int); int entry(void) { return $long(4); }" >"$X/main.c"
  if clang --target=i686-pc-windows-msvc -O1 -c "$X/nodbg.c" -o "$X/nodbg.obj" 2>"$T/cc.err" \
     && clang --target=i686-pc-windows-msvc -g -gcodeview -O1 -c "$X/main.c" -o "$X/main.obj" 2>>"$T/cc.err" \
     && lld-link /nologo /debug /entry:entry /subsystem:console /nodefaultlib /out:"$X/x86long.exe" \
          /pdb:"$X/x86long.pdb" "$X/main.obj" "$X/nodbg.obj" 2>>"$T/cc.err"; then
    rva=$("$PD" publics "$X/x86long.pdb" | awk -v n="_$long" '$2 == n { split($1, a, ":"); print 4096 + a[2] }')
    guid=$("$PD" info "$X/x86long.pdb" | sed -n 's/^guid //p'); age=$("$PD" info "$X/x86long.pdb" | sed -n 's/^age //p')
    cat >"$T/x86long.lua" <<'LUA'
local dir, guid, age, rva = arg[1], arg[2], tonumber(arg[3]), tonumber(arg[4])
local rsds = dofile(arg[0]:gsub("[^/]*$", "") .. "rsds.lua")
local w = assert(heapscript.writer(dir .. "/x86long.etl", { pointer_size = 4 }))
w:process { op = "dcstart", pid = 100, ppid = 4, ts = 10, name = "x86long.exe" }
w:image { op = "dcstart", pid = 100, base = 0x400000, size = 0x4000, ts = 11, path = "C:\\app\\x86long.exe" }
rsds(w, { pid = 100, tid = 104, ts = 11, base = 0x400000, guid = guid, age = age, pdb = "x86long.pdb" })
w:heap { op = "alloc", pid = 100, tid = 104, ts = 100, heap = 0x10000, addr = 0x100000, size = 16, stack = { 0x400000 + rva + 2 } }
assert(w:close())
local t <close> = assert(heapscript.open(dir .. "/x86long.etl"))
for a in t:allocations():each() do print(a.stack:frame(1)) end
LUA
    if [ -n "$rva" ] && "$HS" "$T/x86long.lua" -- "$X" "$guid" "$age" "$rva" >"$X/out" 2>"$T/err"; then
      grep -qx "x86long.exe!$long+0x2" "$X/out" || no "x86: a 600-character public C name undecorated: $(head -c 300 "$X/out")"
    else
      no "x86long: no public _$long ($rva) or the trace failed: $(head -c 300 "$T/err")"
    fi
  else
    no "clang/lld-link x86long failed: $(head -n 3 "$T/cc.err")"
  fi
elif [ "$CI" = true ]; then
  no "clang, lld-link or pdbdump missing and CI=true"
else
  echo "SKIP: x86 long names: no clang, lld-link or pdbdump"
fi

# a PDB name that is not ASCII: UTF-8 as lld-link writes it, and Latin-1 (an ANSI code page) alike
# find prüf.pdb beside the trace
mkdir -p "$T/u8"
cp examples/MemoryTestApp.pdb "$T/u8/prüf.pdb"
cat >"$T/u8.lua" <<'LUA'
local dir, name = arg[1], arg[2]
local rsds = dofile(arg[0]:gsub("[^/]*$", "") .. "rsds.lua")
local w = assert(heapscript.writer(dir .. "/u8.etl"))
w:process { op = "dcstart", pid = 100, ppid = 4, ts = 10, name = "app.exe" }
w:image { op = "dcstart", pid = 100, base = 0x7FF600000000, size = 0x6000, ts = 11, path = "C:\\app\\MemoryTestApp.exe" }
rsds(w, { pid = 100, tid = 104, ts = 11, base = 0x7FF600000000, guid = "73530e7b-1169-d7af-4c4c-44205044422e", age = 1,
          pdb = name == "utf8" and "C:\\b\\pr\195\188f.pdb" or "C:\\b\\pr\252f.pdb" })
w:heap { op = "alloc", pid = 100, tid = 104, ts = 100, heap = 0x10000, addr = 0x100000, size = 16, stack = { 0x7FF6000014bf } }
assert(w:close())
LUA
for enc in utf8 latin1; do
  "$HS" "$T/u8.lua" -- "$T/u8" $enc 2>"$T/err" || no "writing the $enc trace: $(head -c 200 "$T/err")"
  "$HS" leaks "$T/u8/u8.etl" 2>&1 | grep -qF 'MemoryTestApp.exe!InnerLoopOperation+0x1f [memorytestapp.c:53]' \
    || no "a PDB name in $enc: prüf.pdb found: $("$HS" symbols "$T/u8/u8.etl" | head -3)"
done

# two images of one PDB identity under two names (a renamed copy; two DLLs of one PDB name without
# it): each frame is named by its own image's module, found by the PDB or by the map
mkdir -p "$T/twin"
cp examples/MemoryTestApp.pdb "$T/twin/"
cat >"$T/twin.lua" <<'LUA'
local dir = arg[1]
local rsds = dofile(arg[0]:gsub("[^/]*$", "") .. "rsds.lua")
local w = assert(heapscript.writer(dir .. "/twin.etl"))
local images = { { "MemoryTestApp.exe", 0x7FF600000000, "73530e7b-1169-d7af-4c4c-44205044422e", "MemoryTestApp.pdb" },
                 { "Renamed.exe", 0x7FF700000000, "73530e7b-1169-d7af-4c4c-44205044422e", "MemoryTestApp.pdb" },
                 { "first.dll", 0x7FF800000000, "11111111-2222-3333-4444-555555555555", "shared.pdb" },
                 { "second.dll", 0x7FF900000000, "11111111-2222-3333-4444-555555555555", "shared.pdb" } }
w:process { op = "dcstart", pid = 100, ppid = 4, ts = 10, name = "app.exe" }
for i, m in ipairs(images) do
  w:image { op = "dcstart", pid = 100, base = m[2], size = 0x6000, ts = 10 + i, path = "C:\\app\\" .. m[1] }
  rsds(w, { pid = 100, tid = 104, ts = 10 + i, base = m[2], guid = m[3], age = 1, pdb = m[4] })
end
for i, m in ipairs(images) do
  w:heap { op = "alloc", pid = 100, tid = 104, ts = 100 + 10 * i, heap = 0x10000, addr = 0x100000 + i * 16, size = i,
           stack = { m[2] + (i <= 2 and 0x14bf or 0x1010) } }
end
assert(w:close())
local t = assert(heapscript.open(dir .. "/twin.etl"))
heapscript.symbols(dir .. "/twin.sym")
for a in t:allocations():sorted("size"):each() do print(a.stack:frames()[#a.stack:frames()]) end
LUA
printf 'first.dll 1000 100 FirstFunc\nsecond.dll 1000 100 SecondFunc\n' > "$T/twin/twin.sym"
got=$("$HS" "$T/twin.lua" -- "$T/twin" 2>&1 | tr '\n' ';')
[ "$got" = "MemoryTestApp.exe!InnerLoopOperation+0x1f [memorytestapp.c:53];Renamed.exe!InnerLoopOperation+0x1f [memorytestapp.c:53];first.dll!FirstFunc+0x10;second.dll!SecondFunc+0x10;" ] \
  || no "images of one PDB identity under two names: each by its own: $got"

# a plug-in rebuilt and reloaded at its base (same name and size, no link timestamp or checksum, another
# PDB GUID): the same stack before and after is named from each load's own PDB, and is two groups
mkdir -p "$T/rebuilt"
cp examples/MemoryTestApp.pdb "$T/rebuilt/"
cat >"$T/rebuilt.lua" <<'LUA'
local dir = arg[1]
local rsds = dofile(arg[0]:gsub("[^/]*$", "") .. "rsds.lua")
local w = assert(heapscript.writer(dir .. "/rebuilt.etl"))
local base = 0x180000000
w:process { op = "dcstart", pid = 100, ppid = 4, ts = 10, name = "app.exe" }
for i, guid in ipairs { "73530e7b-1169-d7af-4c4c-44205044422e", "11111111-2222-3333-4444-555555555555" } do
  local ts = 100 * i
  w:image { op = "load", pid = 100, base = base, size = 0x6000, ts = ts, path = "C:\\app\\plugin.dll" }
  rsds(w, { pid = 100, tid = 104, ts = ts, base = base, guid = guid, age = 1, pdb = "MemoryTestApp.pdb" })
  w:heap { op = "alloc", pid = 100, tid = 104, ts = ts + 10, heap = 0x10000, addr = 0x100000 + i * 16, size = i,
           stack = { base + 0x14bf } }
  if i == 1 then w:image { op = "unload", pid = 100, base = base, size = 0x6000, ts = ts + 20, path = "C:\\app\\plugin.dll" } end
end
assert(w:close())
local t <close> = assert(heapscript.open(dir .. "/rebuilt.etl"))
for a in t:allocations():sorted("size"):each() do print(a.stack:frame(1)) end
print(#t:allocations():group("stack") .. " groups")
LUA
got=$("$HS" "$T/rebuilt.lua" -- "$T/rebuilt" 2>/dev/null | tr '\n' ';')
[ "$got" = "plugin.dll!InnerLoopOperation+0x1f [memorytestapp.c:53];plugin.dll+0x14bf;2 groups;" ] \
  || no "a rebuilt plug-in reloaded at its base: each load named from its own PDB: $got"

# "processes" counts the process instances that loaded an image, not its loads: a DLL loaded three
# times by one process and once by another is 2
mkdir -p "$T/reload"
cat >"$T/reload.lua" <<'LUA'
local dir = arg[1]
local rsds = dofile(arg[0]:gsub("[^/]*$", "") .. "rsds.lua")
local w = assert(heapscript.writer(dir .. "/reload.etl"))
local ts = 20
w:process { op = "dcstart", pid = 100, ppid = 4, ts = 10, name = "a.exe" }
w:process { op = "dcstart", pid = 200, ppid = 4, ts = 10, name = "b.exe" }
for i, pid in ipairs { 100, 100, 100, 200 } do
  local base = 0x180000000 + i * 0x1000000
  w:image { op = "load", pid = pid, base = base, size = 0x6000, ts = ts, path = "C:\\app\\plugin.dll" }
  rsds(w, { pid = pid, tid = pid + 4, ts = ts, base = base, guid = "73530e7b-1169-d7af-4c4c-44205044422e", age = 1,
            pdb = "MemoryTestApp.pdb" })
  if pid == 100 then w:image { op = "unload", pid = pid, base = base, size = 0x6000, ts = ts + 10, path = "C:\\app\\plugin.dll" } end
  ts = ts + 20
end
assert(w:close())
LUA
"$HS" "$T/reload.lua" -- "$T/reload" || no "writing the reload trace"
"$HS" symbols --json "$T/reload/reload.etl" | grep -q '"module": "plugin.dll", .*"processes": 2}' \
  || no "symbols --json: processes counts process instances: $("$HS" symbols --json "$T/reload/reload.etl")"
# more PDBs than the soft limit of open files (each found PDB stays open): heapscript raises its
# limit to the hard one, so 48 PDBs under a soft limit of 32 are all found and the report is written
mkdir -p "$T/fds"
cat >"$T/fds.lua" <<'LUA'
local dir = arg[1]
local rsds = dofile(arg[0]:gsub("[^/]*$", "") .. "rsds.lua")
local pdb = assert(io.open("examples/MemoryTestApp.pdb", "rb")):read("a")
local guid = "\x7b\x0e\x53\x73\x69\x11\xaf\xd7"
local at = assert(pdb:find(guid, 1, true), "the GUID in the PDB")
local w = assert(heapscript.writer(dir .. "/fds.etl"))
w:process { op = "dcstart", pid = 100, ppid = 4, ts = 10, name = "app.exe" }
for i = 0, 47 do
  local f = assert(io.open(("%s/m%02d.pdb"):format(dir, i), "wb"))
  f:write(pdb:sub(1, at - 1), string.pack("<I4", 0x10000000 + i), pdb:sub(at + 4))
  f:close()
  local base = 0x7FF000000000 + i * 0x100000
  w:image { op = "dcstart", pid = 100, base = base, size = 0x6000, ts = 20 + i, path = ("C:\\app\\mod%02d.dll"):format(i) }
  rsds(w, { pid = 100, tid = 104, ts = 20 + i, base = base, guid = ("%08x-1169-d7af-4c4c-44205044422e"):format(0x10000000 + i),
            age = 1, pdb = ("m%02d.pdb"):format(i) })
end
for i = 0, 47 do
  w:heap { op = "alloc", pid = 100, tid = 104, ts = 1000 + 10 * i, heap = 0x10000, addr = 0x100000 + i * 16, size = 16,
           stack = { 0x7FF000000000 + i * 0x100000 + 0x14bf } }
end
assert(w:close())
LUA
if "$HS" "$T/fds.lua" -- "$T/fds" 2>"$T/err"; then
  out=$(ulimit -Sn 32 2>/dev/null && "$HS" symbols "$T/fds/fds.etl" | tail -1)
  [ "$out" = "48 images: 48 with their PDB" ] || no "48 PDBs under a soft limit of 32 open files: $out"
  (ulimit -Sn 32 2>/dev/null && "$HS" leaks "$T/fds/fds.etl" -- --json "$T/fds/out.json" >/dev/null 2>"$T/err") \
    && [ -s "$T/fds/out.json" ] || no "leaks with 48 PDBs under a soft limit of 32: $(head -c 300 "$T/err")"
  # under a hard limit of 32 the rest cannot be opened: unreadable, not damaged
  out=$(ulimit -n 32 2>/dev/null && "$HS" symbols "$T/fds/fds.etl")
  case $(printf '%s\n' "$out" | tail -1) in
    "48 images: "*" with their PDB, "*" unreadable") ;;
    *) no "48 PDBs under a hard limit of 32 open files: $(printf '%s\n' "$out" | tail -1)" ;;
  esac
  printf '%s\n' "$out" | grep -q "unreadable: $T/fds/m47.pdb: cannot open: Too many open files" \
    || no "the PDB beyond the limit: $(printf '%s\n' "$out" | grep m47)"
else
  no "writing the trace of 48 PDBs: $(head -c 300 "$T/err")"
fi

# the store holds the wanted PDB at its GUID+age key, damaged; one of another GUID lies beside the
# trace: the damaged one is reported (it was hidden behind "mismatched GUID" for the other)
mkdir -p "$T/kd/store/MemoryTestApp.pdb/$KEY"
cp "$E" "$T/kd/"
head -c 20000 examples/MemoryTestApp.pdb >"$T/kd/store/MemoryTestApp.pdb/$KEY/MemoryTestApp.pdb"
cp "$T/fds/m00.pdb" "$T/kd/MemoryTestApp.pdb"
"$HS" symbols --symbol-path "srv*$T/kd/store" "$T/kd/memorytestapp.etl" >"$T/out" 2>&1
grep -q "^MemoryTestApp.exe .* damaged: $T/kd/store/MemoryTestApp.pdb/$KEY/MemoryTestApp.pdb: offset 0x" "$T/out" \
  || no "a damaged PDB at its store key, a mismatched one beside the trace: the damaged one said: $(grep MemoryTestApp "$T/out")"

# a store entry compressed (NAME.pd_ at the key, as symstore /compress writes it) is found and said to
# be expanded, not "missing"; a FIFO named NAME.pdb is not opened (it would block): unreadable
mkdir -p "$T/cab/store/MemoryTestApp.pdb/$KEY" "$T/fifo"
cp examples/MemoryTestApp.pdb "$T/cab/store/MemoryTestApp.pdb/$KEY/MemoryTestApp.pd_"
"$HS" symbols --symbol-path "srv*$T/cab/store" "$T/away/memorytestapp.etl" >"$T/out" 2>&1
grep -q "^MemoryTestApp.exe .* unreadable: $T/cab/store/MemoryTestApp.pdb/$KEY/MemoryTestApp.pd_: compressed, not read: expand it to MemoryTestApp.pdb$" "$T/out" \
  || no "a compressed store entry: said to be expanded: $(grep MemoryTestApp "$T/out")"
cp "$E" "$T/fifo/"
if mkfifo "$T/fifo/MemoryTestApp.pdb" 2>/dev/null; then
  timeout 20 "$HS" symbols "$T/fifo/memorytestapp.etl" >"$T/out" 2>&1
  grep -q "^MemoryTestApp.exe .* unreadable: $T/fifo/MemoryTestApp.pdb: not a regular file$" "$T/out" \
    || no "a FIFO named as the PDB: unreadable, not a regular file: $(grep MemoryTestApp "$T/out")"
fi
# a device as the map (/dev/zero) is no text: said at once, where 1 GiB was read first
if [ -c /dev/zero ]; then
  timeout 20 "$HS" symbols --symbols /dev/zero "$E" >"$T/out" 2>&1; rc=$?
  [ $rc -eq 2 ] && grep -q "^heapscript: /dev/zero: a NUL byte in its first [0-9]* bytes: not a text file$" "$T/out" \
    || no "symbols --symbols /dev/zero: exit 2 at once, not a text file (exit $rc): $(head -c 300 "$T/out")"
fi
# names from a trace are not the terminal's commands: an ESC, BEL or CR in a module's name is shown as ?
cat >"$T/ctrl.lua" <<'LUA'
local w = assert(heapscript.writer(arg[1]))
w:process { op = "dcstart", pid = 100, ppid = 4, ts = 10, name = "app.exe" }
w:image { op = "dcstart", pid = 100, base = 0x10000000, size = 0x10000, ts = 20, path = "\\D\\ctrl\27[31mred\7\r\n.dll" }
assert(w:close())
LUA
"$HS" "$T/ctrl.lua" -- "$T/ctrl.etl" || no "writing the trace of a module named with control characters"
"$HS" symbols "$T/ctrl.etl" >"$T/out" 2>&1
if grep -q "$(printf '\033')" "$T/out" || grep -q "$(printf '\a')" "$T/out" || ! grep -q '^ctrl?\[31mred???\.dll ' "$T/out"; then
  no "symbols: control characters of a module's name shown as ?: $(cat -v "$T/out")"
fi
# ... nor a FIFO named as the symbol map beside the trace: symbols and the scripts went on waiting for it
mkdir -p "$T/fifosym"
cp "$E" "$T/fifosym/"
if mkfifo "$T/fifosym/memorytestapp.sym" 2>/dev/null; then
  for c in symbols leaks; do
    timeout 20 "$HS" $c "$T/fifosym/memorytestapp.etl" >"$T/out" 2>&1; rc=$?
    [ $rc -eq 0 ] && grep -q "^heapscript: ignoring $T/fifosym/memorytestapp.sym: not a regular file$" "$T/out" \
      || no "$c: a FIFO as the map beside the trace is said and not opened (exit $rc): $(head -c 300 "$T/out")"
  done
fi

# a real trace: hundreds of images, every one on its own line within a terminal's width
C=${HEAPSCRIPT_CORPUS:-../shared/traces}/microsoft_perfview__net.4.5.2.x64.etl
if [ -f "$C" ]; then
  "$HS" symbols "$C" >"$T/out" || no "symbols on a real trace exits 0"
  awk 'length > 120 { exit 1 }' "$T/out" || no "a real trace's lines fit 120 columns"
  tail -1 "$T/out" | grep -q "^707 images: 0 with their PDB, 677 missing, 30 without a PDB identity$" \
    || no "a real trace: 707 image identities: $(tail -1 "$T/out")"
elif [ "$CI" = true ]; then
  no "corpus missing at $C and CI=true"
else
  echo "SKIP: symbols on a real trace: no corpus at $C"
fi

"$HS" symbols >/dev/null 2>&1; [ $? -eq 2 ] || no "symbols without a trace: exit 2"
"$HS" symbols --bogus "$E" >/dev/null 2>&1; [ $? -eq 2 ] || no "symbols: unknown option: exit 2"
# a directory given as the symbol map: said so, by symbols and by the scripts (was "reading DIR: I/O error")
d=$(mktemp -d)
for cmd in "symbols --symbols $d $E" "leaks $E --symbols $d"; do
  err=$("$HS" $cmd 2>&1 >/dev/null); rc=$?
  [ $rc -eq 2 ] && [ "$err" = "heapscript: $d: is a directory, not a symbol map" ] || no "$cmd: exit $rc: $err"
done
rmdir "$d"
# --symbols=MAP as --symbol-path=P: the map's names counted (it was an unknown option)
mkdir -p "$T/eqmap"; cp "$E" "$T/eqmap/"
"$HS" symbols --symbols="examples/memorytestapp.sym" "$T/eqmap/memorytestapp.etl" >"$T/out" 2>"$T/err" \
  && [ "$(grep -c '; symbol map: ' "$T/out")" = 3 ] || no "symbols --symbols=MAP: $(cat "$T/err" "$T/out")"
"$HS" symbols "$T/nonexistent.etl" >/dev/null 2>&1; [ $? -eq 2 ] || no "symbols: a missing trace: exit 2"
"$HS" symbols --help | grep -q "usage: heapscript symbols" || no "symbols --help"

[ "$fails" -eq 0 ] && echo "test_symbols: all passed"
[ "$fails" -eq 0 ]
