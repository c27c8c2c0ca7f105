/*
** prefetch.h -- read a trace on a second thread while the caller works
** on the events already read: the source (the reader and a stage of the
** caller's) reads, decodes and copies events into
** blocks, the consumer takes whole blocks.  Events come out exactly as
** the source gives them, in the same order; a block's events stay valid
** until the next hsi_prefetch_take call.
**
** Used by the analysis pass, whose per-event work and the decoding are of
** the same order of cost: on two cores they overlap.  Where threads are
** not available (or HEAPSCRIPT_THREADS=0), hsi_prefetch_open returns NULL
** and the caller reads directly.
*/
#ifndef HS_PREFETCH_H
#define HS_PREFETCH_H
#include "heapscript.h"

typedef struct hsi_prefetch hsi_prefetch;

/*
** src runs on the reading thread: it gives the next event (1, a view
** valid until its next call; 0 at the end; negative: an error code) and
** writes xsize bytes of its own about it into extra (the caller's stage:
** hs_reader_next itself, with xsize 0, for a plain read).  What src
** touches belongs to that thread until hsi_prefetch_close returns.  An
** event whose record src set to NULL (its extra says all its consumer
** reads of it) goes over as its extra alone: its place in the block's
** array of events is left as it was, not written.  One whose record is
** NULL and payload is not goes over as its extra and its payload's bytes:
** they are copied into the block, and the 8 bytes at offset xbytes of
** its extra (a uint64_t, written by src as the payload's address) are set
** to the copy's address, as (uint64_t)(uintptr_t); xbytes is (size_t)-1
** when src never does that.  NULL when no thread can be had.
*/
typedef int (*hsi_prefetch_src)(void *ud, hs_event *ev, void *extra);
hsi_prefetch *hsi_prefetch_open(hsi_prefetch_src src, void *ud, size_t xsize, size_t xbytes);
/* Will hsi_prefetch_open start a thread (threads allowed, HEAPSCRIPT_THREADS)? */
int hsi_prefetch_wanted(void);
/* While the consumer waits for a block, call fn(ud) instead of sleeping
   as long as it finds work (returns 1); it runs on the consumer's thread
   beside the reading one (the analysis: hsi_reader_help). */
void hsi_prefetch_on_idle(hsi_prefetch *pf, int (*fn)(void *ud), void *ud);
/* The events of the next block: n > 0 of them at *ev (an array, in the
   source's order) and, if extra is not NULL, src's bytes about them at
   *extra (n times xsize), valid until the next call, which gives the
   block back; 0 at the end; negative: src's error code. */
int hsi_prefetch_take(hsi_prefetch *pf, const hs_event **ev, void **extra);
/* Stop the thread (whatever it has not delivered is dropped) and free. */
void hsi_prefetch_close(hsi_prefetch *pf);

/*
** Where the two sides waited, for measuring a pass (bench_analysis prints
** them): the blocks the consumer took; how often the reading side found
** every block full (the consumer behind) and the consumer found none
** ready (the reading side behind); and what the consumer did then: calls
** of its idle function that found work, sleeps.
*/
typedef struct hsi_prefetch_counts {
  uint64_t blocks, full, empty, helped, slept;
} hsi_prefetch_counts;
/* The counts so far; from the consumer's thread, at any time. */
void hsi_prefetch_counts_get(hsi_prefetch *pf, hsi_prefetch_counts *c);
#endif
