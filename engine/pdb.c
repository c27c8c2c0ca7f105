/* pdb.c -- placeholder while the reader is built: opens nothing. */
#include <stdio.h>
#include <string.h>
#include "pdb.h"

int hsi_pdb_open(hsi_pdb **p, const char *path, char *err, size_t errlen) {
  *p = NULL;
  snprintf(err, errlen, "%s: PDB reading not built yet", path);
  return HS_EUNSUP;
}
int hsi_pdb_open_mem(hsi_pdb **p, const void *data, size_t len, const char *name, char *err, size_t errlen) {
  return hsi_pdb_open(p, name, err, errlen);
}
void hsi_pdb_close(hsi_pdb *p) { (void)p; }
void hsi_pdb_identity(const hsi_pdb *p, hs_guid *guid, uint32_t *age) {
  memset(guid, 0, sizeof *guid);
  *age = 0;
}
int hsi_pdb_lookup(hsi_pdb *p, uint64_t rva, hsi_pdb_frame *out, int cap) { return 0; }
const char *hsi_pdb_error(const hsi_pdb *p) { return ""; }
