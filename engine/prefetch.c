/*
** prefetch.c -- the reader on a second thread (see prefetch.h).
**
** A ring of NBLOCK blocks.  The producer fills the next free block with
** events and copies of their record bytes (an event's pointers are moved
** into the copy), then publishes it; the consumer walks a published block
** and gives it back when it asks for the first event of the next one.
** Handing over whole blocks keeps the locking to one lock per thousand
** events, and the consumer walks a block's events as an array, with no
** call per event.  The ring is small (2 MB): its pages are faulted in
** once a pass, which a pass over a trace of tens of MB feels (4 MB
** blocks were 1,900 of the 5,900 page faults of `leaks` on a 43 MB
** trace).  The threads are behind the wrappers of thread.h.
*/
#include <stdlib.h>
#include <string.h>
#include "heapscript.h"
#include "prefetch.h"

#define NBLOCK 4
#define BLOCK_EVENTS 1024
#define BLOCK_BYTES (256u << 10) /* >= one record of the largest size (64 KiB) */

#include "thread.h"

typedef struct block {
  hs_event ev[BLOCK_EVENTS];
  uint8_t bytes[BLOCK_BYTES];
  uint8_t *x;             /* BLOCK_EVENTS extras of pf->xsize bytes */
  int n;                  /* events in it */
  int end;                /* the last block: after its events, rc */
  int rc;                 /* 0 at the end of the trace, or the source's error */
} block;

struct hsi_prefetch {
  /* what the producer reads for every event, set at open: on lines the
     consumer never writes (the struct starts a line, thread.h, and the
     state below starts another) */
  hsi_prefetch_src src;
  void *ud;
  size_t xsize;           /* bytes of the stage's extra per event */
  size_t xbytes;          /* where in it a payload copied alone is named (prefetch.h) */
  int xbytes_ok;          /* ... and that place is inside the extra */
  block *b;               /* NBLOCK blocks */
  char pad[HSI_LINE];
  hsi_mutex mx;
  hsi_cond filled, freed;
  int nfilled;            /* published and not yet given back */
  int stop;               /* the consumer is closing */
  int prod, cons;         /* next block to fill / to read */
  int held;               /* the consumer holds block cons */
  int done;               /* the consumer saw the end */
  int (*idle)(void *);    /* the consumer's work while it waits, or NULL */
  void *idle_ud;
  hsi_prefetch_counts n;  /* full: under the lock; the rest: the consumer's */
  hsi_thread th;
};

/* Wait until block pf->prod is free (given back, or never filled) and
   start it: the block, or NULL when the consumer is closing. */
static block *start_block(hsi_prefetch *pf) {
  block *b;
  int stop;
  hsi_mx_lock(&pf->mx);
  if (pf->nfilled == NBLOCK && !pf->stop) pf->n.full++;
  while (pf->nfilled == NBLOCK && !pf->stop) hsi_cv_wait(&pf->freed, &pf->mx);
  stop = pf->stop;
  hsi_mx_unlock(&pf->mx);
  if (stop) return NULL;
  b = &pf->b[pf->prod];
  b->n = 0;
  b->end = 0;
  return b;
}

/* Hand the block being filled over to the consumer. */
static void publish(hsi_prefetch *pf) {
  hsi_mx_lock(&pf->mx);
  pf->nfilled++;
  hsi_cv_signal(&pf->filled);
  hsi_mx_unlock(&pf->mx);
  pf->prod = (pf->prod + 1) % NBLOCK;
}

static HSI_THREAD_FN producer(void *arg) {
  hsi_prefetch *pf = (hsi_prefetch *)arg;
  hs_event one;           /* src's event, copied into the block when it has bytes */
  for (;;) {
    block *b = start_block(pf);
    size_t used = 0;
    int rc = 1;
    if (!b) return HSI_THREAD_RET;
    while (b->n < BLOCK_EVENTS) {
      uint8_t *x = b->x + (size_t)b->n * pf->xsize, *copy;
      const uint8_t *from;
      uint32_t len;
      if ((rc = pf->src(pf->ud, &one, x)) != 1) break;
      if (!one.record && (!one.payload || !pf->xbytes_ok)) {
        b->n++;                          /* its extra says all: its slot is not written */
        continue;
      }
      from = one.record ? one.record : one.payload;
      len = one.record ? one.record_len : one.payload_len;
      if (used + len > BLOCK_BYTES) {
        /* does not fit: it opens the next block (a record fits an empty
           one; the reader's view stays valid until src's next call) */
        block *nb;
        publish(pf);
        if (!(nb = start_block(pf))) return HSI_THREAD_RET;
        if (pf->xsize) memcpy(nb->x, x, pf->xsize);   /* blocks differ: no overlap */
        b = nb;
        used = 0;
      }
      copy = b->bytes + used;
      memcpy(copy, from, len);
      used += (len + 7u) & ~(size_t)7;
      if (!one.record) {                 /* the payload alone, named in the extra */
        uint64_t at = (uint64_t)(uintptr_t)copy;
        memcpy(b->x + (size_t)b->n * pf->xsize + pf->xbytes, &at, sizeof at);
        b->n++;
        continue;
      }
      if (one.payload) one.payload = copy + (one.payload - one.record);
      if (one.ext) one.ext = copy + (one.ext - one.record);
      one.record = copy;
      b->ev[b->n++] = one;
    }
    if (rc != 1) { b->end = 1; b->rc = rc; }
    publish(pf);
    if (rc != 1) return HSI_THREAD_RET;
  }
}

static void free_blocks(hsi_prefetch *pf) {
  int k;
  for (k = 0; pf->b && k < NBLOCK; k++) free(pf->b[k].x);
  free(pf->b);
}

int hsi_prefetch_wanted(void) { return hsi_threads_allowed(1) != 0; }

hsi_prefetch *hsi_prefetch_open(hsi_prefetch_src src, void *ud, size_t xsize, size_t xbytes) {
  hsi_prefetch *pf;
  int k;
  if (!hsi_prefetch_wanted()) return NULL;
  pf = (hsi_prefetch *)hsi_line_calloc(sizeof *pf);
  if (!pf) return NULL;
  pf->b = (block *)calloc(NBLOCK, sizeof(block));
  if (!pf->b) { hsi_line_free(pf); return NULL; }
  for (k = 0; k < NBLOCK; k++)
    if (!(pf->b[k].x = (uint8_t *)malloc(xsize ? BLOCK_EVENTS * xsize : 1))) { free_blocks(pf); hsi_line_free(pf); return NULL; }
  pf->src = src;
  pf->ud = ud;
  pf->xsize = xsize;
  pf->xbytes = xbytes;
  pf->xbytes_ok = xbytes <= xsize && xsize - xbytes >= sizeof(uint64_t);
  hsi_mx_init(&pf->mx);
  hsi_cv_init(&pf->filled);
  hsi_cv_init(&pf->freed);
  if (hsi_th_start(&pf->th, producer, pf) != 0) {
    hsi_cv_free(&pf->filled); hsi_cv_free(&pf->freed); hsi_mx_free(&pf->mx);
    free_blocks(pf);
    hsi_line_free(pf);
    return NULL;
  }
  return pf;
}

void hsi_prefetch_on_idle(hsi_prefetch *pf, int (*fn)(void *ud), void *ud) {
  pf->idle = fn;
  pf->idle_ud = ud;
}

int hsi_prefetch_take(hsi_prefetch *pf, const hs_event **ev, void **extra) {
  block *b;
  if (pf->held) {                            /* give the block taken last back */
    b = &pf->b[pf->cons];
    pf->held = 0;
    if (b->end) { pf->done = 1; return b->rc < 0 ? b->rc : 0; }
    hsi_mx_lock(&pf->mx);
    pf->nfilled--;
    hsi_cv_signal(&pf->freed);
    hsi_mx_unlock(&pf->mx);
    pf->cons = (pf->cons + 1) % NBLOCK;
  }
  if (pf->done) return 0;
  hsi_mx_lock(&pf->mx);
  if (pf->nfilled == 0) pf->n.empty++;
  while (pf->nfilled == 0) {
    if (pf->idle) {                          /* help the reading side rather than sleep */
      int did;
      hsi_mx_unlock(&pf->mx);
      did = pf->idle(pf->idle_ud);
      pf->n.helped += did != 0;
      hsi_mx_lock(&pf->mx);
      if (did || pf->nfilled) continue;      /* a block may have come meanwhile */
    }
    pf->n.slept++;
    hsi_cv_wait(&pf->filled, &pf->mx);
  }
  hsi_mx_unlock(&pf->mx);
  b = &pf->b[pf->cons];
  if (b->n == 0 && b->end) { pf->done = 1; return b->rc < 0 ? b->rc : 0; }
  pf->n.blocks++;
  pf->held = 1;
  *ev = b->ev;
  if (extra) *extra = b->x;
  return b->n;
}

void hsi_prefetch_counts_get(hsi_prefetch *pf, hsi_prefetch_counts *c) {
  hsi_mx_lock(&pf->mx);
  *c = pf->n;
  hsi_mx_unlock(&pf->mx);
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
  hsi_line_free(pf);
}
