/*
** prefetch.h -- work on a second thread that runs ahead of the caller:
** the producer writes items (bytes of its own layout) into blocks, the
** consumer takes them in the same order.  Handing over whole blocks keeps
** the locking to one lock per thousands of items, and an item is only the
** bytes the consumer needs: what crosses between the cores is what costs.
**
** Used by the analysis pass: the reading, attribution and decoding on the
** producer, the records on the consumer (analysis.c).  Where threads are
** not available (or HEAPSCRIPT_THREADS=0), hsi_prefetch_start returns NULL
** and the caller does both itself.
*/
#ifndef HS_PREFETCH_H
#define HS_PREFETCH_H
#include <stddef.h>

typedef struct hsi_prefetch hsi_prefetch;

/* The largest item: an event of 64 KiB with room for what goes with it. */
#define HSI_PREFETCH_MAX (80u * 1024u)

/*
** fill runs on the producer's thread, again and again: it puts the items
** of one or more events with hsi_prefetch_put and returns 1 while more
** follow, 0 at the end, a negative error code on failure (the consumer
** gets it after the items put before it).  What it touches belongs to
** that thread until hsi_prefetch_close returns.
*/
typedef int (*hsi_prefetch_fill)(void *ud, hsi_prefetch *pf);
hsi_prefetch *hsi_prefetch_start(hsi_prefetch_fill fill, void *ud);
/* Producer: room for an item of size bytes (<= HSI_PREFETCH_MAX), 8-byte
   aligned, to be written before the next put; NULL when the consumer is
   closing (fill then returns, with any code). */
void *hsi_prefetch_put(hsi_prefetch *pf, size_t size);
/* Consumer: the next item and its size (valid until the next take), or
   NULL at the end, with *rc 0 or fill's error code. */
const void *hsi_prefetch_take(hsi_prefetch *pf, size_t *size, int *rc);
/* Stop the thread (whatever it has not delivered is dropped) and free. */
void hsi_prefetch_close(hsi_prefetch *pf);
#endif
