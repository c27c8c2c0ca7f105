# pdb_inlines.awk -- the line of every byte of every inline site, from
# `llvm-pdbutil dump --symbols --il` (pdbutil's own decoding of the
# binary annotations, not ours): a site's annotations are a line program
# whose "code" entries start a row at that offset with the line as the
# entries before it left it; "code end" ends the range.  Prints
# "RVA INLINEE LINE" for each byte of each range, RVA from the
# procedure's start (S_GPROC32/S_LPROC32 "addr = 0001:OFF", plus the
# section's virtual address, -v text=).  Inlinee base lines come from
# the "Inlinee Lines" table, which pdbutil prints after the symbols; sites
# nested in sites print their own bytes too (the innermost wins: sort
# by depth is the caller's).  Sites that change file are skipped (-v
# nofile=1 counts them).
/\| S_[GL]PROC32 / { proc = 1; next }
proc && /addr = 0001:/ { match($0, /addr = 0001:[0-9]+/); base = text + substr($0, RSTART + 12, RLENGTH - 12); proc = 0; next }
/\| S_INLINESITE \[/ { insite = 1; depth++; n++; code = 0; line = 0; rowline = 0; rows = 0; file[n] = 0; d[n] = depth; next }
/\| S_INLINESITE_END/ { depth--; insite = 0; next }
/\| S_/ { insite = 0 }
insite && /inlinee = 0x/ { match($0, /inlinee = 0x[0-9A-Fa-f]+/); who[n] = tolower(substr($0, RSTART + 10, RLENGTH - 10)); next }
insite && / file / { file[n] = 1 }
insite && /^ +[0-9A-F]+ +(code|line)/ {
  s = $0; sub(/^ +[0-9A-F]+ +/, "", s)
  if (s ~ /^code end /) { split(s, f, " "); e = hex(f[3]); for (a = code; rows && a < e; a++) byte(n, a); code = e; rows = 0; next }
  if (s ~ /line -?[0-9]+ /) { t = s; sub(/.*line /, "", t); sub(/ .*/, "", t); line = t + 0 }
  if (s ~ /^code /) {
    split(s, f, " "); c = hex(f[2])
    for (a = code; rows && a < c; a++) byte(n, a)
    code = c; rows = 1; rowline = line
  }
  next
}
function byte(k, a) { if (!file[k]) { out[k, a] = rowline; at[k, a] = base + a } }
/Inlinee Lines/ { lines = 1 }
lines && /^ +0x[0-9A-Fa-f]+ \| +[0-9]+ \|/ { split($0, f, "|"); gsub(/ /, "", f[1]); gsub(/ /, "", f[2]); bl[tolower(f[1])] = f[2] + 0 }
END {
  for (key in out) { split(key, kk, SUBSEP); k = kk[1]; w = who[k]; if (w in bl) printf "%x %d %s %d\n", at[key], d[k], w, bl[w] + out[key] }
}
function hex(x,   i, v, c) {
  sub(/^0x/, "", x); v = 0
  for (i = 1; i <= length(x); i++) { c = index("0123456789abcdef", tolower(substr(x, i, 1))) - 1; v = v * 16 + c }
  return v
}
