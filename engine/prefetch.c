/*
** prefetch.c -- items from a second thread (see prefetch.h).
**
** A ring of NBLOCK blocks of bytes.  The producer owns the block after
** the published ones and appends items to it, each behind an 8-byte size
** word; when the next item does not fit, the block is published and the
** producer waits for a free one.  The consumer walks a published block
** item by item and gives it back when it asks for the item after its
** last.  The threads are behind the wrappers of thread.h.
*/
#include <stdlib.h>
#include <string.h>
#include "heapscript.h"
#include "prefetch.h"
#include "thread.h"

#define NBLOCK 4
#define BLOCK_BYTES (256u * 1024u)   /* > HSI_PREFETCH_MAX + its size word */

typedef struct block {
  uint8_t *bytes;
  size_t used;            /* bytes of items, size words included */
  int end;                /* the last block: after its items, rc */
  int rc;                 /* 0 at the end, or fill's error */
} block;

struct hsi_prefetch {
  hsi_prefetch_fill fill;
  void *ud;
  block b[NBLOCK];
  hsi_mutex mx;
  hsi_cond filled, freed;
  int nfilled;            /* published and not yet given back */
  int stop;               /* the consumer is closing */
  int prod;               /* the producer's block (after the published ones) */
  int halted;             /* producer: put saw stop */
  int cons;               /* the consumer's block */
  int taking;             /* consumer: block cons is published and being read */
  size_t pos;             /* consumer: next item in it */
  int done, rc;           /* consumer: the end was seen, and its code */
  hsi_thread th;
};

/* Producer: publish its block and, unless it was the last, wait for the
   next one; 0, or -1 when the consumer is closing (then no block is the
   producer's). */
static int publish(hsi_prefetch *pf, int last) {
  int stop;
  hsi_mx_lock(&pf->mx);
  pf->nfilled++;
  hsi_cv_signal(&pf->filled);
  while (!last && pf->nfilled == NBLOCK && !pf->stop) hsi_cv_wait(&pf->freed, &pf->mx);
  stop = pf->stop;
  hsi_mx_unlock(&pf->mx);
  if (last) return 0;
  if (stop) return -1;
  pf->prod = (pf->prod + 1) % NBLOCK;
  pf->b[pf->prod].used = 0;
  pf->b[pf->prod].end = 0;
  return 0;
}

void *hsi_prefetch_put(hsi_prefetch *pf, size_t size) {
  block *b = &pf->b[pf->prod];
  uint8_t *p;
  size = (size + 7u) & ~(size_t)7;
  if (pf->halted || size > HSI_PREFETCH_MAX) return NULL;
  if (b->used + 8 + size > BLOCK_BYTES) {
    if (publish(pf, 0) != 0) { pf->halted = 1; return NULL; }
    b = &pf->b[pf->prod];
  }
  p = b->bytes + b->used;
  memcpy(p, &(uint32_t){ (uint32_t)size }, 4);
  b->used += 8 + size;
  return p + 8;
}

static HSI_THREAD_FN producer(void *arg) {
  hsi_prefetch *pf = (hsi_prefetch *)arg;
  int rc;
  while ((rc = pf->fill(pf->ud, pf)) == 1 && !pf->halted) {}
  if (pf->halted) return HSI_THREAD_RET;
  pf->b[pf->prod].end = 1;
  pf->b[pf->prod].rc = rc;
  publish(pf, 1);
  return HSI_THREAD_RET;
}

static void free_blocks(hsi_prefetch *pf) {
  int k;
  for (k = 0; k < NBLOCK; k++) free(pf->b[k].bytes);
  free(pf);
}

hsi_prefetch *hsi_prefetch_start(hsi_prefetch_fill fill, void *ud) {
  hsi_prefetch *pf;
  int k;
  if (hsi_threads_allowed(1) == 0) return NULL;
  if (!(pf = (hsi_prefetch *)calloc(1, sizeof *pf))) return NULL;
  for (k = 0; k < NBLOCK; k++)
    if (!(pf->b[k].bytes = (uint8_t *)malloc(BLOCK_BYTES))) { free_blocks(pf); return NULL; }
  pf->fill = fill;
  pf->ud = ud;
  hsi_mx_init(&pf->mx);
  hsi_cv_init(&pf->filled);
  hsi_cv_init(&pf->freed);
  if (hsi_th_start(&pf->th, producer, pf) != 0) {
    hsi_cv_free(&pf->filled); hsi_cv_free(&pf->freed); hsi_mx_free(&pf->mx);
    free_blocks(pf);
    return NULL;
  }
  return pf;
}

const void *hsi_prefetch_take(hsi_prefetch *pf, size_t *size, int *rc) {
  for (;;) {
    block *b;
    if (pf->done) { *rc = pf->rc; *size = 0; return NULL; }
    if (!pf->taking) {                       /* the next published block */
      hsi_mx_lock(&pf->mx);
      while (pf->nfilled == 0) hsi_cv_wait(&pf->filled, &pf->mx);
      hsi_mx_unlock(&pf->mx);
      pf->taking = 1;
      pf->pos = 0;
    }
    b = &pf->b[pf->cons];
    if (pf->pos < b->used) {
      const uint8_t *p = b->bytes + pf->pos;
      uint32_t n;
      memcpy(&n, p, 4);
      pf->pos += 8 + n;
      *size = n;
      return p + 8;
    }
    if (b->end) { pf->done = 1; pf->rc = b->rc < 0 ? b->rc : 0; continue; }
    hsi_mx_lock(&pf->mx);                    /* give it back */
    pf->nfilled--;
    hsi_cv_signal(&pf->freed);
    hsi_mx_unlock(&pf->mx);
    pf->cons = (pf->cons + 1) % NBLOCK;
    pf->taking = 0;
  }
}

void hsi_prefetch_close(hsi_prefetch *pf) {
  if (!pf) return;
  hsi_mx_lock(&pf->mx);
  pf->stop = 1;
  hsi_cv_signal(&pf->freed);
  hsi_mx_unlock(&pf->mx);
  hsi_th_join(pf->th);
  hsi_cv_free(&pf->filled); hsi_cv_free(&pf->freed); hsi_mx_free(&pf->mx);
  free_blocks(pf);
}
