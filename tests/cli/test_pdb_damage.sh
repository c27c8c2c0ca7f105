#!/bin/sh
# test_pdb_damage.sh -- damaged copies of real PDBs (made here by
# pdbmangle, never committed): truncated, the stream directory's count or
# block corrupted, a block index past the end, a stream larger than the
# file, a symbol record running past its module.  Each must give one
# message naming the file, the byte offset pdbmangle changed and what was
# expected; the damage met lazily (a symbol record) must leave the other
# modules resolving.  Never a crash (run under SANITIZE=1 too).
B=${HS_BUILD:-build/rel}
PD=$B/tests/pdbdump; PM=$B/tests/pdbmangle
S=${HEAPSCRIPT_PDBS:-../shared/pdbs}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0
no() { echo "not ok: $*"; fails=$((fails + 1)); }

set --
# block sizes 4096 (MSVC 2013, x64) and 1024 (MSVC 2008, x86), lld-link's output
for f in google_syzygy__test_types_x64.dll.pdb google_syzygy__test_dll.pdb mstange_samply__WriteArgument.pdb; do
  [ -f "$S/$f" ] && set -- "$@" "$S/$f"
done
# and the committed clang-made seed (block size 512), always there
set -- "$@" tests/fuzz/pdb_corpus/clang-x64-512.pdb
if [ $# -eq 1 ]; then
  if [ "$CI" = true ]; then echo "PDBs not found in $S and CI=true"; exit 1; fi
  echo "SKIP: no PDBs in $S: only the committed seed is damaged"
fi

for pdb in "$@"; do
  n=$(basename "$pdb" .pdb)
  "$PD" info "$pdb" > "$T/good" || { no "$n: the undamaged file does not open"; continue; }
  good=$(sed -n 's/^functions //p' "$T/good")
  for k in truncate dirstreams dirblock block size; do
    off=$("$PM" $k "$pdb" "$T/$k.pdb") || { no "$n $k: pdbmangle failed"; continue; }
    "$PD" info "$T/$k.pdb" > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq 1 ] || no "$n $k: exit $rc, expected 1 (does not open)"
    # the truncation is seen at the superblock's block count (0x28)
    [ $k = truncate ] && off=0x28
    grep -q "^$T/$k.pdb: offset $off: .*expected" "$T/err" \
      || no "$n $k: expected a message naming the file, offset $off and what was expected: $(cat "$T/err")"
    printf 'ok %s %s: %s\n' "$n" $k "$(sed "s|$T/||" "$T/err")"
  done
  # a symbol record running past its module: opens, says so once, the rest resolves
  off=$("$PM" symlen "$pdb" "$T/symlen.pdb") || { no "$n symlen: pdbmangle failed"; continue; }
  "$PD" info "$T/symlen.pdb" > "$T/out" 2> "$T/err" || no "$n symlen: does not open: $(cat "$T/err")"
  grep -q "^damage $T/symlen.pdb: offset $off: .*expected a symbol record" "$T/out" \
    || no "$n symlen: expected the damage at offset $off reported: $(grep damage "$T/out")"
  got=$(sed -n 's/^functions //p' "$T/out")
  [ -n "$got" ] && [ "$got" -lt "$good" ] && { [ "$good" -lt 8 ] || [ "$got" -gt 0 ]; } \
    || no "$n symlen: $got functions, expected fewer than $good but the other modules' still there"
  "$PD" addrs "$pdb" | sed 's/ .*//' > "$T/addrs"
  "$PD" lookup "$T/symlen.pdb" < "$T/addrs" > /dev/null || no "$n symlen: lookups failed"
  printf 'ok %s symlen: %s of %s functions left; %s\n' "$n" "$got" "$good" "$(sed -n "s|^damage $T/||p" "$T/out")"
done

# not a PDB at all, and an empty file
printf 'Microsoft C/C++ program database 2.00\r\n\032JG\0\0' > "$T/old.pdb"
"$PD" info "$T/old.pdb" 2> "$T/err" && no "a PDB 2.0 header opened"
grep -q "offset 0x0: expected the MSF 7.00 signature" "$T/err" || no "PDB 2.0: $(cat "$T/err")"
: > "$T/empty.pdb"
"$PD" info "$T/empty.pdb" 2> "$T/err" && no "an empty file opened"
grep -q "offset 0x0: expected" "$T/err" || no "empty: $(cat "$T/err")"

[ "$fails" -eq 0 ] || { echo "$fails failures"; exit 1; }
echo "all PDB damage checks passed"
