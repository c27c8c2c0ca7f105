/*
** pdbdump.c -- a test tool over the PDB reader (engine/pdb*.c), so that
** tests/cli/test_pdb_oracle.sh can diff it against llvm-pdbutil and
** llvm-symbolizer.  Not part of heapscript.
**
**   pdbdump info PDB        GUID, ages, counts, the first damage met
**   pdbdump publics PDB     "seg:off name", offsets in decimal as llvm-pdbutil prints them
**   pdbdump functions PDB   "seg:off size name", as llvm-pdbutil prints them
**   pdbdump addrs PDB       "RVA x|a" to test: each function's start,
**                           middle, last byte and every line row inside it
**   pdbdump orphans PDB     RVAs of function publics no procedure covers
**   pdbdump lookup PDB      RVAs (hex) on stdin -> frames in llvm-symbolizer's
**                           default output style (name, then file:line)
**   pdbdump outer PDB       RVAs on stdin -> only the outermost frame's name
**   pdbdump outerline PDB   RVAs on stdin -> only the outermost frame
**   pdbdump locate PDB      RVAs on stdin -> "RVA module section offset"
** Exit status 1 when the PDB does not open.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pdb_int.h"

/* mode 0: every frame; 1: the outermost frame's name; 2: the outermost frame */
static int print_frames(hsi_pdb *p, unsigned long long rva, int mode) {
  hsi_pdb_frame f[32];
  int n = hsi_pdb_lookup(p, rva, f, 32), i;
  if (mode == 1) { printf("%s\n", n > 0 && f[n - 1].name[0] ? f[n - 1].name : "??"); return 0; }
  if (n == 0) { printf("??\n??:0\n\n"); return 0; }
  for (i = mode == 2 ? n - 1 : 0; i < n; i++) {
    printf("%s\n", f[i].name[0] ? f[i].name : "??");
    if (f[i].file && f[i].line) printf("%s:%u\n", f[i].file, f[i].line);
    else if (f[i].file) printf("%s:0\n", f[i].file);
    else printf("??:0\n");
  }
  printf("\n");
  return 0;
}

int main(int argc, char **argv) {
  hsi_pdb *p;
  char err[HS_ERRLEN], line[256];
  uint32_t i;
  hsi_pdb_sym s;
  const char *cmd;
  if (argc < 3) { fprintf(stderr, "usage: pdbdump info|publics|functions|addrs|orphans|lookup|outer|outerline|locate PDB\n"); return 2; }
  cmd = argv[1];
  /* HSI_PDB_LLVM14=1: inline frames' lines as llvm-symbolizer 14 reads them (pdb.h) */
  if (getenv("HSI_PDB_LLVM14") && !strcmp(getenv("HSI_PDB_LLVM14"), "1")) hsi_pdb_lines_llvm14(1);
  if (hsi_pdb_open(&p, argv[2], err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); return 1; }
  if (!strcmp(cmd, "info")) {
    hs_guid g;
    uint32_t age, ia, da;
    char gs[HS_GUID_STRLEN];
    hsi_pdb_identity(p, &g, &age);
    hsi_pdb_ages(p, &ia, &da);
    hs_guid_format(&g, gs);
    printf("guid %s\nage %u\ninfo_age %u\ndbi_age %u\n", gs, age, ia, da);
    printf("publics %u\nfunctions %u\n", hsi_pdb_public_count(p), hsi_pdb_function_count(p));
    printf("damage %s\n", hsi_pdb_error(p)[0] ? hsi_pdb_error(p) : "none");
  } else if (!strcmp(cmd, "publics")) {
    for (i = 0; hsi_pdb_public(p, i, &s); i++) printf("%04u:%04u %s\n", s.segment, s.offset, s.name);
  } else if (!strcmp(cmd, "functions")) {
    for (i = 0; hsi_pdb_function(p, i, &s); i++) printf("%04u:%04u %u %s\n", s.segment, s.offset, s.size, s.name);
  } else if (!strcmp(cmd, "addrs")) {
    /* "RVA x" where the line table is plain, "RVA a" inside a function whose
       line subsection has blocks of several files or shares its address
       with another one (folded code): llvm-symbolizer 14's line there
       depends on how it sorted blocks that start together. */
    for (i = 0; hsi_pdb_function(p, i, &s); i++) {
      int mi = hsi_pdb_module_at(p, s.rva);
      uint32_t k, ends = 0, prev = 0xFFFFFFFFu;
      char c;
      if (s.size == 0) continue;
      if (mi >= 0) {       /* blocks ending where the first block after the start ends */
        uint32_t first_end = 0;
        for (k = 0; k < p->mods[mi].nlines; k++) {
          const pdb_line *l = &p->mods[mi].lines[k];
          if (l->line != PDB_LINE_END || l->rva <= s.rva) continue;
          if (!ends) first_end = l->rva;
          if (l->rva != first_end) break;
          ends++;
        }
      }
      c = ends > 1 ? 'a' : 'x';
      printf("%x %c\n%x %c\n%x %c\n", s.rva, c, s.rva + s.size / 2, c, s.rva + s.size - 1, c);
      if (mi < 0) continue;
      for (k = 0; k < p->mods[mi].nlines; k++) {
        uint32_t r = p->mods[mi].lines[k].rva;
        if (r > s.rva && r < s.rva + s.size && r != prev) printf("%x %c\n%x %c\n", r, c, r - 1, c);
        prev = r;
      }
    }
  } else if (!strcmp(cmd, "orphans")) {
    for (i = 0; hsi_pdb_public(p, i, &s); i++) {
      int mi;
      if (s.rva == 0xFFFFFFFFu || !(s.flags & 2)) continue;     /* functions only */
      mi = hsi_pdb_module_at(p, s.rva);
      if (mi >= 0 && hsi_pdb_load_module(p, (uint32_t)mi) && hsi_pdb_proc_at(&p->mods[mi], s.rva)) continue;
      printf("%x\n", s.rva);
    }
  } else if (!strcmp(cmd, "locate")) {
    /* RVAs on stdin -> "RVA module section offset" (module -1: none) */
    while (fgets(line, sizeof line, stdin)) {
      uint32_t r = (uint32_t)strtoul(line, NULL, 16), k, best = 0;
      for (k = 0; k < p->nsec; k++)
        if (p->sec_rva[k] <= r && (!best || p->sec_rva[k] >= p->sec_rva[best - 1])) best = k + 1;
      printf("%x %d %u %u\n", r, hsi_pdb_module_at(p, r), best, best ? r - p->sec_rva[best - 1] : r);
    }
  } else if (!strcmp(cmd, "lookup") || !strcmp(cmd, "outer") || !strcmp(cmd, "outerline")) {
    int mode = !strcmp(cmd, "lookup") ? 0 : !strcmp(cmd, "outer") ? 1 : 2;
    while (fgets(line, sizeof line, stdin)) print_frames(p, strtoull(line, NULL, 16), mode);
  } else {
    fprintf(stderr, "pdbdump: unknown command %s\n", cmd);
    hsi_pdb_close(p);
    return 2;
  }
  hsi_pdb_close(p);
  return 0;
}
