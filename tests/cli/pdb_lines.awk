# pdb_lines.awk -- the second oracle of tests/cli/test_pdb_oracle.sh, for
# the addresses where llvm-symbolizer 14's line is unreliable: the line of
# each address straight from the line table as `llvm-pdbutil dump -l`
# prints it (input).  Queries in file q ("RVA module section offset", from
# pdbdump locate); one answer a line, "file:line" or "??:0": among the
# blocks of the module that hold the address, the row at it (the first),
# else the last row before it, else the block's first row.
function hex(s,   i, c, v) { v = 0; s = toupper(s)
  for (i = 1; i <= length(s); i++) { c = index("0123456789ABCDEF", substr(s, i, 1)); v = v * 16 + c - 1 }
  return v }
BEGIN { while ((getline l < q) > 0) { n = split(l, a, " "); nq++; qm[nq] = a[2]; qs[nq] = a[3] + 0; qo[nq] = a[4] + 0 } }
/^Mod / { mod = $2 + 0; next }
/^[^ ]/ { file = $0; sub(/ \([^()]*\)$/, "", file); next }
/^  [0-9A-F][0-9A-F][0-9A-F][0-9A-F]:[0-9A-F]+-[0-9A-F]+, line\/addr entries/ {
  nb++; split($1, x, /[:,-]/); bmod[nb] = mod; bseg[nb] = hex(x[1]) + 0; bs[nb] = hex(x[2]); be[nb] = hex(x[3])
  bfile[nb] = file; bfirst[nb] = ne + 1; next }
/^ +[0-9]/ { for (i = 1; i <= NF; i++) { if ($i == "!") continue
    if (want_addr) { ne++; eaddr[ne] = hex($i); eline[ne] = cur; eb[ne] = nb; want_addr = 0 } else { cur = $i + 0; want_addr = 1 } }
  blast[nb] = ne }
END {
  for (k = 1; k <= nq; k++) {
    best = 0; exact = 0; lo = 0
    for (b = 1; b <= nb; b++) {
      if (bmod[b] != qm[k] || bseg[b] != qs[k] || qo[k] < bs[b] || qo[k] >= be[b]) continue
      for (e = bfirst[b]; e <= blast[b]; e++) {
        if (!lo || eaddr[e] < eaddr[lo]) lo = e
        if (eaddr[e] == qo[k] && !exact) exact = e
        if (eaddr[e] < qo[k] && (!best || eaddr[e] >= eaddr[best])) best = e
      }
    }
    e = exact ? exact : best ? best : lo
    if (e) print bfile[eb[e]] ":" eline[e]; else print "??:0"
  }
}
