/*
** chunks.h -- chunked bytes: allocations that never move and are
** all freed at once, for interned strings (procmap.c, sym.c).  Blocks of
** 64 KiB (a larger request gets a block of its own size); nothing is
** freed one by one.
*/
#ifndef HS_CHUNKS_H
#define HS_CHUNKS_H
#include <stddef.h>

typedef struct hsi_chunks {
  char **blocks;
  size_t nblocks, capblocks;
  size_t used, avail;        /* in the last block */
} hsi_chunks;

/* n bytes that stay at their address until hsi_chunks_free; NULL when out
   of memory.  A zeroed hsi_chunks is an empty one. */
char *hsi_chunks_alloc(hsi_chunks *a, size_t n);
void hsi_chunks_free(hsi_chunks *a);
#endif
