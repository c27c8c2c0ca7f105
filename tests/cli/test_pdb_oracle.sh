#!/bin/sh
# test_pdb_oracle.sh -- the PDB reader against LLVM's tools, which read the
# same files independently: for every function of every PDB, at its start,
# middle, last byte and every line-table address inside it, the frames
# (inline levels innermost first, then the function) with their names,
# files and lines must equal `llvm-symbolizer --inlining`'s; the public
# symbols must equal `llvm-pdbutil dump --publics`, the functions (address,
# size, name) its `dump --symbols`.
#
# PDBs: the real ones in ../shared/pdbs (with their executables), and ones
# built here with clang + lld from tests/pdb/app.c and app.cpp, for x64 and
# x86, and one of them rewritten with MSF blocks of 512, 1024 and 8192
# bytes, and stripped to its publics; and tests/pdb/inlfile.c, whose inline
# sites change file, compared at every byte.  Skips what it cannot run (no shared folder, no llvm, no clang or
# mingw runtime) and says so; under CI=true a skip is a failure.
#
# Known defects of llvm-symbolizer 14, where the comparison is narrowed
# (and counted in the output):
#  - where a function's line subsection has blocks of several files, or
#    shares its address with another one (folded code), its line depends on
#    how it sorted blocks starting together: there names are compared with
#    it, and lines with the line table as `llvm-pdbutil dump -l` prints it
#    (tests/cli/pdb_lines.awk);
#  - it crashes on inline sites whose inlinee is a cross-module id (high
#    bit set): then the outermost frame is compared without --inlining;
#  - inside a row of an inline site's line program it names the next
#    row's line (LLVM 15 reads the program): these comparisons run pdbdump
#    with HSI_PDB_LLVM14=1, which reads the annotations as LLVM 14 does,
#    and the lines heapscript gives (the program's) are compared with the
#    rows llvm-pdbutil decodes (tests/cli/pdb_inlines.awk) on the PDBs
#    made here, at every byte of every inline site.
B=${HS_BUILD:-build/rel}
PD=$B/tests/pdbdump; PM=$B/tests/pdbmangle
S=${HEAPSCRIPT_PDBS:-../shared/pdbs}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0; skips=0
no() { echo "not ok: $*"; fails=$((fails + 1)); }
skip() { echo "SKIP: $*"; skips=$((skips + 1)); }

[ -x "$PD" ] || { echo "$PD missing (make builds it)"; exit 1; }
export HSI_PDB_LLVM14=1

# program NAME EXE PDB: at every byte of every inline site (of one file),
# the innermost inline frame's line as the site's line program gives it
# from llvm-pdbutil's decoding of the annotations; prints how many bytes
# LLVM 14's reading would have named otherwise.
program() {
  name=$1; exe=$2; pdb=$3; d=$T/$name.prog
  mkdir -p "$d"
  text=$(llvm-readobj --sections "$exe" | awk '/Name: .text/ { f = 1 } f && /VirtualAddress:/ { print $2; exit }')
  llvm-pdbutil dump --symbols --il "$pdb" | awk -v text=$((text)) -f tests/cli/pdb_inlines.awk \
    | sort -k1,1 -k2,2nr | awk '$1 != last { print; last = $1 }' > "$d/want"
  [ -s "$d/want" ] || { no "$name: no inline site bytes from llvm-pdbutil"; return; }
  line2() { awk 'NF == 0 { k = 0; next } { k++; if (k == 2) { sub(/.*:/, ""); print } }'; }
  awk '{ print "0x" $1 }' "$d/want" | HSI_PDB_LLVM14=0 "$PD" lookup "$pdb" | line2 > "$d/ours"
  awk '{ print "0x" $1 }' "$d/want" | "$PD" lookup "$pdb" | line2 > "$d/llvm14"
  bad=$(paste -d' ' "$d/want" "$d/ours" | awk '$4 != $5' | wc -l)
  n14=$(paste -d' ' "$d/want" "$d/llvm14" | awk '$4 != $5' | wc -l)
  [ "$bad" -eq 0 ] || { no "$name: inline lines differ from the line program at $bad bytes:"; paste -d' ' "$d/want" "$d/ours" | awk '$4 != $5' | head -5; }
  echo "ok $name: $(wc -l < "$d/want") bytes of inline sites on their line program's rows ($n14 where LLVM 14 names the next row)"
}
if ! command -v llvm-symbolizer >/dev/null || ! command -v llvm-pdbutil >/dev/null \
   || ! command -v llvm-readobj >/dev/null; then
  [ "$CI" = true ] && { echo "llvm-symbolizer/llvm-pdbutil missing and CI=true"; exit 1; }
  echo "SKIP: llvm-symbolizer or llvm-pdbutil missing (Debian package llvm)"; exit 0
fi

# Drops the column from llvm-symbolizer's "file:line:column" lines (every
# second line of a frame block); blocks end with an empty line.
nocol() { awk 'NF == 0 { n = 0; print; next } { n++; if (n % 2 == 0) sub(/:[0-9]+$/, ""); print }'; }
# Keeps only the name lines of each block.
names() { awk 'NF == 0 { n = 0; print; next } { n++; if (n % 2 == 1) print }'; }

# oracle NAME EXE PDB: everything above for one executable and its PDB.
oracle() {
  name=$1; exe=$2; pdb=$3; d=$T/$name
  mkdir -p "$d"
  # llvm-symbolizer finds the PDB under the RSDS record's base name next to the image
  rsds=$(llvm-readobj --coff-debug-directory "$exe" | sed -n 's/^ *PDBFileName: //p' | head -n 1)
  base=$(printf '%s' "$rsds" | sed 's/.*[\\/]//')
  [ -n "$base" ] || { no "$name: no RSDS record in $exe"; return; }
  cp "$exe" "$d/image" && cp "$pdb" "$d/$base" || { no "$name: copy failed"; return; }
  "$PD" addrs "$pdb" | sort -u > "$d/all" || { no "$name: pdbdump addrs failed"; return; }
  sed -n 's/^\([0-9a-f]*\) x$/0x\1/p' "$d/all" > "$d/exact"
  sed -n 's/^\([0-9a-f]*\) a$/0x\1/p' "$d/all" > "$d/ambig"
  nx=$(wc -l < "$d/exact"); na=$(wc -l < "$d/ambig")
  sym="llvm-symbolizer --obj=$d/image --relative-address --functions=short --no-demangle"
  how="with inline frames"
  if $sym --inlining < "$d/exact" > "$d/o1" 2>"$d/e1" && $sym --inlining < "$d/ambig" > "$d/o2" 2>>"$d/e1"; then
    nocol < "$d/o1" > "$d/oracle"; "$PD" lookup "$pdb" < "$d/exact" > "$d/ours"
    names < "$d/o2" > "$d/oracle2"; "$PD" lookup "$pdb" < "$d/ambig" | names > "$d/ours2"
  else
    how="outermost frame only: llvm-symbolizer --inlining crashed ($(grep -m1 -o 'NativeInlineSiteSymbol[a-zA-Z]*' "$d/e1"))"
    $sym --no-inlines < "$d/exact" | nocol > "$d/oracle"; "$PD" outerline "$pdb" < "$d/exact" > "$d/ours"
    $sym --no-inlines < "$d/ambig" | names > "$d/oracle2"; "$PD" outerline "$pdb" < "$d/ambig" | names > "$d/ours2"
  fi
  if ! cmp -s "$d/oracle" "$d/ours"; then
    no "$name: frames differ from llvm-symbolizer ($how):"; diff "$d/oracle" "$d/ours" | head -20
  fi
  if ! cmp -s "$d/oracle2" "$d/ours2"; then
    no "$name: names differ from llvm-symbolizer where lines are ambiguous:"; diff "$d/oracle2" "$d/ours2" | head -20
  fi
  # there, the lines against the line table that llvm-pdbutil prints
  if [ "$na" -gt 0 ]; then
    sed 's/^0x//' "$d/ambig" | "$PD" locate "$pdb" > "$d/loc"
    llvm-pdbutil dump -l "$pdb" | awk -v q="$d/loc" -f tests/cli/pdb_lines.awk > "$d/lt.llvm"
    "$PD" outerline "$pdb" < "$d/ambig" | awk 'NF == 0 { n = 0; next } { n++; if (n == 2) print }' > "$d/lt.ours"
    cmp -s "$d/lt.llvm" "$d/lt.ours" || { no "$name: lines differ from llvm-pdbutil's line table:"; diff "$d/lt.llvm" "$d/lt.ours" | head -10; }
  fi
  # functions that only a public symbol names (no procedure record)
  "$PD" orphans "$pdb" | sed 's/^/0x/' > "$d/orph"
  llvm-symbolizer --obj="$d/image" --relative-address --no-demangle --no-inlines < "$d/orph" | names | grep -v '^$' > "$d/oo"
  "$PD" outer "$pdb" < "$d/orph" > "$d/uo"
  cmp -s "$d/oo" "$d/uo" || { no "$name: public-only function names differ:"; diff "$d/oo" "$d/uo" | head -10; }
  # the publics
  np=0
  if llvm-pdbutil dump --publics "$pdb" > "$d/pub.raw" 2>&1 && ! grep -q "Error dumping" "$d/pub.raw"; then
    awk '/S_PUB32/ { s = $0; sub(/^[^`]*`/, "", s); sub(/`[^`]*$/, "", s); name = s }
         /flags = .*addr = / { print $NF, name }' "$d/pub.raw" | sort > "$d/pub.llvm"
    "$PD" publics "$pdb" | sort > "$d/pub.ours"
    np=$(wc -l < "$d/pub.ours")
    cmp -s "$d/pub.llvm" "$d/pub.ours" || { no "$name: publics differ from llvm-pdbutil:"; diff "$d/pub.llvm" "$d/pub.ours" | head -10; }
  fi
  # the functions: every top-level procedure's address, size and name
  llvm-pdbutil dump --symbols "$pdb" 2>/dev/null | awk '
    /S_[GL]PROC32(_ID)? \[/ { s = $0; sub(/^[^`]*`/, "", s); sub(/`[^`]*$/, "", s); name = s; want = 1; next }
    want && /parent = / { want = 0
      if ($0 ~ /parent = 0,/) { a = $0; sub(/.*addr = /, "", a); sub(/,.*/, "", a)
        z = $0; sub(/.*code size = /, "", z); sub(/,.*/, "", z); print a, z, name } }' | sort > "$d/fn.llvm"
  "$PD" functions "$pdb" | sort > "$d/fn.ours"
  cmp -s "$d/fn.llvm" "$d/fn.ours" || { no "$name: functions differ from llvm-pdbutil:"; diff "$d/fn.llvm" "$d/fn.ours" | head -10; }
  echo "ok $name: $(wc -l < "$d/fn.ours") functions, $nx addresses all frames, $na names (lines from llvm-pdbutil), $(wc -l < "$d/orph") public-only, $np publics; $how"
}

# ---- the shared PDBs, each with its executable
if [ -f "$S/MANIFEST.tsv" ]; then
  for pdb in "$S"/*.pdb; do
    b=${pdb%.pdb}; b=${b%.dll}; exe=
    for e in "$b.exe" "$b.dll" "$b.bin"; do [ -f "$e" ] && exe=$e && break; done
    n=$(basename "$b")
    case $n in
      *CppConsoleApp)  # /DEBUG:FASTLINK: no procedures; must open and answer without crashing
        "$PD" info "$pdb" > "$T/fl" || no "$n: does not open: $(cat "$T/fl")"
        grep -q '^functions 0$' "$T/fl" || no "$n: expected no procedures"
        echo "ok $n: opens, $(grep publics "$T/fl"), no procedures (FASTLINK)"; continue ;;
      *crash_with_srcsrv) exe=$S/getsentry_symbolic__crash.exe ;;
    esac
    [ -n "$exe" ] || { skip "$n: no executable"; continue; }
    oracle "$n" "$exe" "$pdb"
  done
  # the age an image's RSDS record carries is the DBI stream's
  for pair in getsentry_symbolic__crash_with_srcsrv.pdb:getsentry_symbolic__crash.exe \
              mstange_samply__softokn3.pdb:mstange_samply__softokn3.dll; do
    p=${pair%%:*}; e=${pair#*:}
    want=$(llvm-readobj --coff-debug-directory "$S/$e" | sed -n 's/^ *PDBAge: //p')
    got=$("$PD" info "$S/$p" | sed -n 's/^age //p')
    [ "$want" = "$got" ] || no "$p: identity age $got, the image's RSDS says $want"
  done
else
  if [ "$CI" = true ]; then no "PDBs not found in $S and CI=true"; else skip "no PDBs in $S (set HEAPSCRIPT_PDBS)"; fi
fi

# ---- PDBs made here with clang + lld (C and C++ with inlining, x64 and x86)
if command -v clang >/dev/null && command -v ld.lld >/dev/null; then
  for t in x86_64 i686; do
    lib=$(ls -d /usr/lib/gcc/$t-w64-mingw32/*-win32 2>/dev/null | head -n 1)
    if [ -z "$lib" ] || [ ! -d /usr/$t-w64-mingw32/lib ]; then
      if [ "$CI" = true ]; then no "mingw-w64 runtime for $t missing (make deps) and CI=true"; else skip "no mingw-w64 runtime for $t"; fi
      continue
    fi
    for s in c cpp; do
      x=; [ $s = cpp ] && x="-x c++ -fno-exceptions -fno-rtti"
      if ! clang $x --target=$t-w64-mingw32 -g -gcodeview -O2 -fuse-ld=lld -Wl,--pdb="$T/app-$t-$s.pdb" -L"$lib" \
           -o "$T/app-$t-$s.exe" tests/pdb/app.$s 2>"$T/cc.err"; then
        no "clang $t $s failed: $(head -n 3 "$T/cc.err")"; continue
      fi
      oracle "clang-$t-$s" "$T/app-$t-$s.exe" "$T/app-$t-$s.pdb"
      program "clang-$t-$s" "$T/app-$t-$s.exe" "$T/app-$t-$s.pdb"
      # inline frames must be there: the oracle check alone would pass without them
      grep -q '^mix$' "$T/clang-$t-$s/ours" 2>/dev/null || grep -q '^geo::' "$T/clang-$t-$s/ours" 2>/dev/null \
        || no "clang-$t-$s: no inline frame found"
      # a union's member, inlined (its class name read from LF_UNION)
      if [ $s = cpp ]; then
        grep -q '^Bits::low$' "$T/clang-$t-$s/ours" 2>/dev/null || no "clang-$t-$s: no inline frame Bits::low"
      fi
    done
  done
  # other MSF block sizes: the same streams rewritten by pdbmangle
  if [ -f "$T/app-x86_64-c.pdb" ]; then
    for bs in 512 1024 8192; do
      "$PM" repack $bs "$T/app-x86_64-c.pdb" "$T/app-$bs.pdb" || { no "pdbmangle repack $bs failed"; continue; }
      oracle "clang-x86_64-c-block$bs" "$T/app-x86_64-c.exe" "$T/app-$bs.pdb"
    done
    # stripped to publics (lld-link ignores /PDBSTRIPPED: pdbmangle drops the
    # module streams as it would): names from the publics, no lines
    d=$T/stripped; mkdir -p "$d"
    if "$PM" strip "$T/app-x86_64-c.pdb" "$d/app.pdb" >/dev/null; then
      cp "$T/app-x86_64-c.exe" "$d/image"; cp "$d/app.pdb" "$d/app-x86_64-c.pdb"
      sed 's/ .*//; s/^/0x/' "$T/clang-x86_64-c/all" > "$d/addrs"
      llvm-symbolizer --obj="$d/image" --relative-address --no-demangle --no-inlines < "$d/addrs" | nocol > "$d/oracle"
      "$PD" outerline "$d/app.pdb" < "$d/addrs" > "$d/ours"
      if cmp -s "$d/oracle" "$d/ours" && ! grep -q '^/' "$d/ours" && grep -q '^sum_hashes$' "$d/ours"; then
        echo "ok clang-x86_64-c stripped to publics: $(wc -l < "$d/addrs") addresses named from publics, no lines"
      else
        no "stripped PDB differs from llvm-symbolizer (or has lines):"; diff "$d/oracle" "$d/ours" | head -10
      fi
    else
      no "pdbmangle strip failed"
    fi
  fi
  # two calls on one line of an inlined function: their return addresses, inside a row
  # of the site's line program, are on that line (LLVM 14 names the next one)
  d=$T/inlline; mkdir -p "$d"
  if clang --target=x86_64-pc-windows-msvc -g -gcodeview -O2 -c tests/pdb/inlline.c -o "$d/inl.obj" 2>"$T/cc.err" \
     && lld-link /nologo /debug /entry:entry /subsystem:console /nodefaultlib /out:"$d/inl.exe" /pdb:"$d/inl.pdb" \
          "$d/inl.obj" 2>>"$T/cc.err"; then
    program inlline "$d/inl.exe" "$d/inl.pdb"
    [ "$n14" -gt 0 ] || no "inlline: LLVM 14's reading names no byte otherwise (the case is not met)"
    [ "$(awk '{ print $4 }' "$T/inlline.prog/want" | sort -u | wc -l)" -eq 2 ] || no "inlline: expected rows of two lines"
  else
    no "clang/lld-link inlline.c failed: $(head -n 3 "$T/cc.err")"
  fi
  # an inline site that changes file (its body includes inlfile.inc): at every byte
  # of every function, the frames as llvm-symbolizer --inlining gives them
  lib=$(ls -d /usr/lib/gcc/x86_64-w64-mingw32/*-win32 2>/dev/null | head -n 1)
  d=$T/inlfile; mkdir -p "$d"
  if [ -n "$lib" ] && clang --target=x86_64-w64-mingw32 -g -gcodeview -O2 -fuse-ld=lld -Wl,--pdb="$d/inlfile.pdb" \
       -L"$lib" -o "$d/inlfile.exe" tests/pdb/inlfile.c 2>"$T/cc.err"; then
    text=$(llvm-readobj --sections "$d/inlfile.exe" | sed -n 's/^ *VirtualAddress: //p' | head -n 1)
    "$PD" functions "$d/inlfile.pdb" | awk -v t=$((text)) '$1 ~ /^0001:/ { a = t + substr($1, 6); for (i = 0; i < $2; i++) printf "0x%x\n", a + i }' > "$d/every"
    llvm-symbolizer --obj="$d/inlfile.exe" --relative-address --inlining --functions=short --no-demangle < "$d/every" | nocol > "$d/oracle"
    "$PD" lookup "$d/inlfile.pdb" < "$d/every" > "$d/ours"
    if ! cmp -s "$d/oracle" "$d/ours"; then
      no "inlfile: frames differ from llvm-symbolizer:"; diff "$d/oracle" "$d/ours" | head -10
    elif ! grep -q 'inlfile\.inc:' "$d/ours"; then
      no "inlfile: no frame in inlfile.inc (the file change was not exercised)"
    else
      echo "ok inlfile: $(wc -l < "$d/every") bytes, $(grep -c 'inlfile\.inc:' "$d/ours") frames in inlfile.inc; with inline frames"
    fi
  elif [ -z "$lib" ]; then
    if [ "$CI" = true ]; then no "mingw-w64 runtime for x86_64 missing (make deps) and CI=true"; else skip "inlfile: no mingw-w64 runtime for x86_64"; fi
  else
    no "clang inlfile.c failed: $(head -n 3 "$T/cc.err")"
  fi
else
  if [ "$CI" = true ]; then no "clang/lld missing and CI=true"; else skip "clang or lld missing: no PDBs made here"; fi
fi

[ "$fails" -eq 0 ] || { echo "$fails failures"; exit 1; }
echo "all PDB oracle checks passed ($skips skipped)"
