/*
** fuzz_pdb.c -- libFuzzer target over the PDB reader: any bytes opened as
** a PDB, then everything a lookup can reach: the identity, the publics,
** every module's procedures and lines, and lookups at each function's
** start, inside it, at each section contribution and over a sweep of
** addresses.  `make fuzz` builds it with libFuzzer; `make test` replays
** tests/fuzz/pdb_corpus through it (under ASan/UBSan with SANITIZE=1).
*/
#include <stdint.h>
#include <stddef.h>
#include "heapscript.h"
#include "pdb_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void look(hsi_pdb *p, uint64_t rva) {
  hsi_pdb_frame f[16];
  int n = hsi_pdb_lookup(p, rva, f, 16), i;
  volatile size_t sink = 0;
  for (i = 0; i < n; i++) {           /* touch every string handed out */
    const char *s = f[i].name;
    while (*s) sink += (unsigned char)*s++;
    if ((s = f[i].file)) while (*s) sink += (unsigned char)*s++;
  }
  (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hsi_pdb *p;
  char err[HS_ERRLEN];
  hs_guid g;
  uint32_t age, i, n;
  hsi_pdb_sym s;
  if (hsi_pdb_open_mem(&p, data, size, "fuzz.pdb", err, sizeof err) != 0) return 0;
  hsi_pdb_identity(p, &g, &age);
  look(p, 0x1000);                     /* lazily, before anything is listed */
  n = hsi_pdb_public_count(p);
  for (i = 0; i < n && i < 4096; i++)
    if (hsi_pdb_public(p, i, &s) && s.rva != 0xFFFFFFFFu) look(p, s.rva);
  n = hsi_pdb_function_count(p);
  for (i = 0; i < n && i < 4096; i++)
    if (hsi_pdb_function(p, i, &s)) {
      look(p, s.rva);
      look(p, s.rva + s.size / 2);
      look(p, s.rva + s.size - 1);
    }
  for (i = 0; i < p->ncontribs && i < 4096; i++) look(p, p->contribs[i].rva);
  for (i = 0; i < 0x20000; i += 61) look(p, i);
  look(p, 0xFFFFFFFFu);
  look(p, 0x100000000ull);
  (void)hsi_pdb_error(p);
  hsi_pdb_close(p);
  return 0;
}
