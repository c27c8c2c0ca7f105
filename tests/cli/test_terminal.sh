#!/bin/sh
# test_terminal.sh -- output shaped to where it goes.  Into a file or a
# pipe: no progress line, no colour, no wrapping.  On a terminal (a pty
# made by `script`, if util-linux's `script` is installed): the progress
# line of the analysis on stderr, bold headings unless NO_COLOR is set,
# and every line of every bundled script's text within COLUMNS.
HS=${HS_BIN:-./heapscript}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0
no() { echo "not ok: $*"; fails=$((fails + 1)); }
ESC=$(printf '\033')
M=examples/memorytestapp.etl
N=examples/notmyfault.etl
printf 'local t = heapscript.terminal()\nprint(t.stdout, t.stderr, t.color, t.columns)\n' >"$T/term.lua"

# not a terminal: even with no delay, no progress and no escape sequence
HEAPSCRIPT_PROGRESS_DELAY=0 "$HS" leaks $M >"$T/out" 2>"$T/err"
[ ! -s "$T/err" ] || no "stderr not a terminal: expected nothing on it, got: $(head -c 200 "$T/err")"
grep -q "$ESC" "$T/out" && no "stdout not a terminal: an escape sequence in the text"
grep -q "allocated and not freed" "$T/out" || no "leaks text missing"
[ "$("$HS" "$T/term.lua" 2>&1 </dev/null)" = "false	false	false	80" ] || no "terminal() in a pipe: $("$HS" "$T/term.lua" 2>&1)"
# COLUMNS within 20..1000 is taken; outside, the default 80
for c in 19:80 20:20 1000:1000 1001:80; do
  r=$(COLUMNS=${c%:*} "$HS" "$T/term.lua" 2>&1 </dev/null)
  [ "$r" = "false	false	false	${c#*:}" ] || no "terminal() with COLUMNS=${c%:*}: '$r', expected columns ${c#*:}"
done
# heapscript's own help texts are written within 80 columns
for h in "--help" "info --help" "dump --help" "--frob"; do
  long=$("$HS" $h 2>&1 | awk 'length($0) > 80' | head -n 1)
  [ -z "$long" ] || no "heapscript $h: a line longer than 80 columns: $long"
done
# info's text too (a long path on its file: line excepted)
for f in $M $N tests/corpus/traces/*.etl; do
  long=$("$HS" info "$f" 2>&1 | awk 'length($0) > 80 && !/^file:/' | head -n 1)
  [ -z "$long" ] || no "info $f: a line longer than 80 columns: $long"
done
echo "ok: not a terminal: no progress, no colour"

if ! command -v script >/dev/null 2>&1; then
  echo "SKIP: no util-linux 'script' to make a pty: the terminal half is not run"
  [ "$fails" -eq 0 ]; exit
fi
# pty CMD: run CMD (a shell line) with stdin, stdout and stderr on a pty
pty() { script -q -c "$1" /dev/null </dev/null 2>&1; }

r=$(pty "COLUMNS=100 $HS $T/term.lua" | tr -d '\r')
[ "$r" = "true	true	true	100" ] || no "terminal() on a pty: '$r'"
r=$(pty "NO_COLOR=1 $HS $T/term.lua" | tr -d '\r')
case "$r" in "true	true	false	"*) ;; *) no "terminal() with NO_COLOR: '$r'";; esac
r=$(pty "NO_COLOR= $HS $T/term.lua" | tr -d '\r')
case "$r" in "true	true	true	"*) ;; *) no "terminal() with NO_COLOR empty (as unset): '$r'";; esac
r=$(pty "TERM=dumb $HS $T/term.lua" | tr -d '\r')
case "$r" in "true	true	false	"*) ;; *) no "terminal() with TERM=dumb: '$r'";; esac

pty "HEAPSCRIPT_PROGRESS_DELAY=0 $HS leaks $M" >"$T/pty"
grep -q "heapscript: analysing $M" "$T/pty" || no "no progress line on a terminal: $(head -c 300 "$T/pty")"
grep -q "${ESC}\[1m" "$T/pty" || no "no bold heading on a terminal"
pty "NO_COLOR=1 HEAPSCRIPT_PROGRESS_DELAY=0 $HS leaks $M" >"$T/pty"
grep -q "${ESC}\[1m" "$T/pty" && no "NO_COLOR: a bold heading all the same"
grep -q "allocated and not freed" "$T/pty" || no "NO_COLOR: the text is missing"
# stdout on the terminal, stderr into a file: no progress in the file
pty "HEAPSCRIPT_PROGRESS_DELAY=0 $HS leaks $M 2>$T/err2" >"$T/pty"
[ -f "$T/err2" ] && [ ! -s "$T/err2" ] || no "stderr redirected under a terminal: $(head -c 200 "$T/err2")"
grep -q "analysing" "$T/pty" && no "a progress line although stderr is a file"
echo "ok: terminal: progress line, bold headings, NO_COLOR honoured"

# a path longer than the terminal: each progress line within COLUMNS - 1, the
# path cut from the left (it wrapped, and each rewrite after \r left rows behind);
# TERM=dumb: spaces clear the line, never ESC [K
D=$T/a-directory-with-a-rather-long-name/another-directory-with-a-long-name/and-a-third-one-as-well
mkdir -p "$D" && cp $M "$D/trace.etl"
for term in xterm dumb; do
  pty "TERM=$term COLUMNS=80 HEAPSCRIPT_PROGRESS_DELAY=0 $HS leaks $D/trace.etl >/dev/null" >"$T/pty"
  tr '\r' '\n' <"$T/pty" | sed "s/${ESC}\[K//g" | grep "analysing" >"$T/lines"
  [ -s "$T/lines" ] || no "TERM=$term, a long path: no progress line: $(head -c 300 "$T/pty")"
  long=$(awk 'length($0) > 79' "$T/lines" | head -n 1)
  [ -z "$long" ] || no "TERM=$term, a long path on 80 columns: a progress line of ${#long} characters: $long"
  grep -q "^heapscript: analysing \.\.\..*/trace\.etl *[0-9]*%$" "$T/lines" || no "TERM=$term: the path not cut from the left: $(head -n 1 "$T/lines")"
  if [ $term = dumb ]; then grep -q "$ESC" "$T/pty" && no "TERM=dumb: an escape sequence on the terminal"
  else grep -q "${ESC}\[K" "$T/pty" || no "TERM=$term: the line not cleared with ESC [K"; fi
done
echo "ok: the progress line of a long path fits the terminal"

# every line of every bundled script within COLUMNS (escapes and progress left out)
for cols in 60 80; do
  for s in leaks transient growth pool peak churn policy events; do
    for f in $M $N; do
      pty "COLUMNS=$cols $HS $s $f" | sed "s/${ESC}\[[0-9;]*[mK]//g; s/\r//g" >"$T/pty"
      long=$(awk -v c=$cols 'length($0) > c' "$T/pty" | grep -v '^ *[^ ]*$' | head -n 1)
      [ -z "$long" ] || no "$s $f: a line longer than $cols columns: $long"
      [ -s "$T/pty" ] || no "$s $f: no output on a pty"
    done
  done
done
# diff's table too: on 80 columns one line per row, narrower two lines per row
for cols in 60 80; do
  for new in examples/memorytestapp-newleak.etl "examples/memorytestapp-fixed.etl -- --all"; do
    pty "COLUMNS=$cols $HS diff $M $new" | sed "s/${ESC}\[[0-9;]*[mK]//g; s/\r//g" >"$T/pty"
    long=$(awk -v c=$cols 'length($0) > c' "$T/pty" | grep -v '^ *[^ ]*$' | head -n 1)
    [ -z "$long" ] || no "diff $M $new: a line longer than $cols columns: $long"
    grep -q "grew\|vanished" "$T/pty" || no "diff $M $new: no row on a pty: $(head -c 300 "$T/pty")"
  done
done
pty "COLUMNS=80 $HS diff $M examples/memorytestapp-newleak.etl" | sed "s/${ESC}\[[0-9;]*[mK]//g; s/\r//g" >"$T/pty"
grep -q "^  grew  *heap  *+6912 B  *12.5 KiB -> 19.2 KiB  *319 -> 391  *12.5 KiB -> 19.2 KiB$" "$T/pty" \
  || no "diff on 80 columns: the process row not one table row: $(grep -A1 grew "$T/pty")"
# into a pipe, even with COLUMNS=20, a row is one line of the table
COLUMNS=20 "$HS" diff $M examples/memorytestapp-newleak.etl >"$T/out" 2>&1
grep -q "^  grew  *heap  *+6912 B  *12.5 KiB -> 19.2 KiB  *319 -> 391  *12.5 KiB -> 19.2 KiB$" "$T/out" \
  || no "diff into a pipe: the process row not one line: $(cat "$T/out")"
# heapscript symbols: within the terminal, the status whole on the lines under its image
for cols in 60 80; do
  pty "COLUMNS=$cols $HS symbols $M" | sed "s/\r//g" >"$T/pty"
  long=$(awk -v c=$cols 'length($0) > c' "$T/pty" | head -n 1)
  [ -z "$long" ] || no "symbols $M: a line longer than $cols columns: $long"
  grep -q "^    found examples/MemoryTestApp.pdb$" "$T/pty" || no "symbols on $cols columns: no status line: $(cat "$T/pty")"
  grep -q "^ntdll.dll  *ntdll.pdb  *1EB9FACB04EA273BB4BA52C8D4BE6B0D1$" "$T/pty" || no "symbols on $cols columns: no ntdll row"
done
pty "COLUMNS=200 $HS symbols $M" | sed "s/\r//g" | cmp -s - tests/cli/golden/symbols-memorytestapp.txt \
  || no "symbols on 200 columns: not the one-line table of tests/cli/golden/symbols-memorytestapp.txt"
# symbols: keys of ages past 0xF (up to 40 digits) and a summary of every status fit too; the
# summary's pieces joined again are the one line written into a pipe
mkdir -p "$T/wide"
cp examples/MemoryTestApp.pdb "$T/wide/"; cp examples/MemoryTestApp.pdb "$T/wide/short.pdb"
head -c 6000 examples/MemoryTestApp.pdb >"$T/wide/dmg.pdb"
cat >"$T/wide.lua" <<'LUA'
local w = assert(heapscript.writer(arg[1]))
local G = "73530e7b-1169-d7af-4c4c-44205044422e"
local images = { { "Microsoft.VisualStudio.Diagnostics.Something.dll", G, 0x12345678, "Microsoft.VisualStudio.Diagnostics.Something.pdb" },
                 { "MemoryTestApp.exe", G, 0xABCDEF01, "MemoryTestApp.pdb" },
                 { "short.dll", "11111111-2222-3333-4444-555555555555", 1, "short.pdb" },
                 { "noid.dll" }, { "dmg.dll", G, 1, "dmg.pdb" } }
w:process { op = "dcstart", pid = 100, ppid = 4, ts = 10, name = "app.exe" }
for i, m in ipairs(images) do
  local base = 0x7FF000000000 + i * 0x100000
  w:image { op = "dcstart", pid = 100, base = base, size = 0x6000, ts = 10 + i, path = "C:\\app\\" .. m[1] }
  if m[2] then
    local h = m[2]:gsub("-", "")
    w:mof { provider = "b3e675d7-2554-4f18-830b-2762732560de", opcode = 36, version = 2, pid = 100, tid = 104, ts = 10 + i,
            payload = string.pack("<I8I4I4I2I2", base, 100, tonumber(h:sub(1, 8), 16), tonumber(h:sub(9, 12), 16),
                                  tonumber(h:sub(13, 16), 16))
                      .. h:sub(17):gsub("%x%x", function(x) return string.char(tonumber(x, 16)) end)
                      .. string.pack("<I4z", m[3], m[4]) }
  end
end
assert(w:close())
LUA
"$HS" "$T/wide.lua" -- "$T/wide/wide.etl" || no "writing the trace of wide keys"
"$HS" symbols "$T/wide/wide.etl" >"$T/out" 2>/dev/null
sum="5 images: 0 with their PDB, 1 missing, 2 mismatched, 1 damaged, 1 without a PDB identity"
[ "$(tail -n 1 "$T/out")" = "$sum" ] || no "symbols into a pipe: the summary one line: $(tail -n 1 "$T/out")"
for cols in 60 80; do
  pty "COLUMNS=$cols $HS symbols $T/wide/wide.etl" | sed "s/\r//g" >"$T/pty"
  long=$(awk -v c=$cols 'length($0) > c' "$T/pty" | head -n 1)
  [ -z "$long" ] || no "symbols with wide keys on $cols columns: a line longer: $long"
  grep -q "^Micros.* 73530E7B1169D7AF4C4C44205044422E12345678$" "$T/pty" || no "symbols on $cols columns: the key of age 0x12345678 whole"
  [ "$(sed -n '/^5 images:/,$p' "$T/pty" | sed 's/^ *//' | tr '\n' ' ' | sed 's/ $//')" = "$sum" ] \
    || no "symbols on $cols columns: the summary wrapped: $(sed -n '/^5 images:/,$p' "$T/pty")"
done
# symbols: module and PDB names not ASCII are cut between characters and their columns counted in
# characters (a cut split 'ü' into a lone byte, and a column of such names was short by a blank per
# byte past the first of each); into a pipe as on 60 and 80 columns
cat >"$T/utf.lua" <<'LUA'
local w = assert(heapscript.writer(arg[1]))
w:process { op = "dcstart", pid = 100, ppid = 4, ts = 10, name = "app.exe" }
for i, m in ipairs { "ÜberprüfungsmodulÄÖÜäöüß.dll", "Ωμέγα.dll", "plain.dll" } do
  local base, h = 0x7FF000000000 + i * 0x100000, "73530e7b1169d7af4c4c44205044422e"
  w:image { op = "dcstart", pid = 100, base = base, size = 0x6000, ts = 10 + i, path = "C:\\app\\" .. m }
  w:mof { provider = "b3e675d7-2554-4f18-830b-2762732560de", opcode = 36, version = 2, pid = 100, tid = 104, ts = 10 + i,
          payload = string.pack("<I8I4I4I2I2", base, 100, tonumber(h:sub(1, 8), 16), tonumber(h:sub(9, 12), 16),
                                tonumber(h:sub(13, 16), 16))
                    .. h:sub(17):gsub("%x%x", function(x) return string.char(tonumber(x, 16)) end)
                    .. string.pack("<I4z", 1, (m:gsub("dll$", "pdb"))) }
end
assert(w:close())
LUA
"$HS" "$T/utf.lua" -- "$T/utf.etl" || no "writing the trace of non-ASCII names"
for cols in 0 60 80; do
  if [ $cols = 0 ]; then "$HS" symbols "$T/utf.etl" >"$T/pty"; else pty "COLUMNS=$cols $HS symbols $T/utf.etl" | sed "s/\r//g" >"$T/pty"; fi
  iconv -f UTF-8 -t UTF-8 "$T/pty" >/dev/null 2>&1 || no "symbols of non-ASCII names on $cols columns: a name cut inside a character"
  LC_ALL=C sed 's/[\x80-\xbf]//g' "$T/pty" >"$T/chars"          # one byte a character
  long=$(awk -v c=$cols 'c > 0 && length($0) > c' "$T/chars" | head -n 1)
  [ -z "$long" ] || no "symbols of non-ASCII names on $cols columns: a line longer: $long"
  at=$(awk '{ k = index($0, "73530E7B") } k { print k }' "$T/chars" | sort -u | tr '\n' ' ')
  [ "$(echo $at | wc -w)" = 1 ] || no "symbols of non-ASCII names on $cols columns: the keys not in one column (characters $at): $(cat "$T/pty")"
  grep -q "^Überprüf.*~  Überprüf.*~  " "$T/pty" || no "symbols on $cols columns: the long name cut with '~': $(cat "$T/pty")"
done
# heapscript dump: on a terminal each event's line cut at spaces to the width, the rest
# under the header type; the pieces joined again are the line it writes into a pipe
for cols in 60 80; do
  for f in "$M --limit 300" "$N --provider Pool --limit 50"; do
    pty "COLUMNS=$cols $HS dump $f" | sed "s/\r//g" >"$T/pty"
    long=$(awk -v c=$cols 'length($0) > c' "$T/pty" | head -n 1)
    [ -z "$long" ] || no "dump $f: a line longer than $cols columns: $long"
    awk '/^               [^ ]/ { sub(/^ +/, ""); l = l " " $0; next } { if (NR > 1) print l; l = $0 } END { print l }' \
      "$T/pty" | tr -s ' ' >"$T/joined"
    "$HS" dump $f | tr -s ' ' | cmp -s - "$T/joined" || no "dump $f on $cols columns: not the piped lines, cut: $(head -n 4 "$T/pty")"
  done
done
# a status wrapped where it has no blank (a PDB's path of non-ASCII names) is cut between two UTF-8
# characters, never inside one: on 60 and 62 columns the cut split an 'Å'
D="$T/$(printf 'Å%.0s' $(seq 1 45))"
mkdir -p "$D" && cp examples/MemoryTestApp.pdb "$D/"
for cols in 60 61 62 63; do
  pty "COLUMNS=$cols $HS symbols $M --symbol-path '$D'" | sed "s/\r//g" >"$T/pty"
  grep -q "found $T" "$T/pty" || no "symbols with the PDB under $D: not found there: $(head -n 4 "$T/pty")"
  iconv -f UTF-8 -t UTF-8 "$T/pty" >/dev/null 2>&1 || no "symbols on $cols columns: a line cut inside a UTF-8 character"
done
for s in leaks transient growth pool peak churn policy events; do
  pty "COLUMNS=80 $HS $s --help" | sed "s/\r//g" >"$T/pty"
  long=$(awk 'length($0) > 80' "$T/pty" | head -n 1)
  [ -z "$long" ] || no "$s --help: a line longer than 80 columns on a terminal: $long"
done
echo "ok: every bundled script's text (diff's and symbols' tables and dump's lines too) and help fit 60 and 80 columns (a single word longer than the width excepted)"
[ "$fails" -eq 0 ]
