/* chunks.c -- the chunked bytes of chunks.h. */
#include <stdlib.h>
#include <string.h>
#include "chunks.h"

#define BLOCK 65536

char *hsi_chunks_alloc(hsi_chunks *a, size_t n) {
  char *p;
  if (n > a->avail) {
    size_t bs = n > BLOCK ? n : BLOCK;
    if (a->nblocks == a->capblocks) {
      size_t nc = a->capblocks ? 2 * a->capblocks : 16;
      char **nb = (char **)realloc(a->blocks, nc * sizeof *nb);
      if (!nb) return NULL;
      a->blocks = nb;
      a->capblocks = nc;
    }
    if (!(p = (char *)malloc(bs))) return NULL;
    a->blocks[a->nblocks++] = p;
    a->used = 0;
    a->avail = bs;
  }
  p = a->blocks[a->nblocks - 1] + a->used;
  a->used += n;
  a->avail -= n;
  return p;
}

void hsi_chunks_free(hsi_chunks *a) {
  size_t i;
  for (i = 0; i < a->nblocks; i++) free(a->blocks[i]);
  free(a->blocks);
  memset(a, 0, sizeof *a);
}
