/*
** prefetch.h -- read a trace on a second thread while the caller works
** on the events already read: the reader decodes and copies events into
** blocks, the consumer takes whole blocks.  Events come out exactly as
** hs_reader_next gives them, in the same order; each one stays valid until
** the next hsi_prefetch_next call, like the reader's own.
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

/* Start reading r (from where it is) on a thread; NULL if that cannot be
   done, and then r is untouched. */
hsi_prefetch *hsi_prefetch_open(hs_reader *r);
/* 1 and *ev, 0 at the end, negative: the reader's error code. */
int hsi_prefetch_next(hsi_prefetch *pf, hs_event *ev);
/*
** The same with a stage of the caller's on the reading thread: src gives
** the next event (1, a view valid until its next call; 0 at the end;
** negative: an error code) and writes xsize bytes of its own about it
** into extra; hsi_prefetch_next_x hands out the event and points *extra at
** those bytes (valid until the next call).  src runs on the other thread:
** what it touches belongs to it until hsi_prefetch_close returns.
*/
typedef int (*hsi_prefetch_src)(void *ud, hs_event *ev, void *extra);
hsi_prefetch *hsi_prefetch_open_src(hsi_prefetch_src src, void *ud, size_t xsize);
int hsi_prefetch_next_x(hsi_prefetch *pf, hs_event *ev, void **extra);
/* The same without copying the event out: *ev points into the block,
   valid until the next call. */
int hsi_prefetch_view_x(hsi_prefetch *pf, const hs_event **ev, void **extra);
/* Stop the thread (whatever it has not delivered is dropped) and free. */
void hsi_prefetch_close(hsi_prefetch *pf);
#endif
