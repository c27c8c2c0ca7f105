/*
** attrib.h -- the process and thread of memory events whose header has
** none.  Kernel pool events, and heap or VirtualAlloc events written with
** a PERFINFO header, carry no pid/tid (ETL-FORMAT.md §3.3); the StackWalk
** record the kernel writes after such an event names them (StackProcess,
** StackThread, with the event's timestamp), as WPA uses them.
**
** The StackWalk follows its event, so an event without ids is held back,
** with everything read after it, until its StackWalk arrives (bounded
** look-ahead: HSI_ATTRIB_AHEAD events, HSI_ATTRIB_BYTES bytes); then the
** held events come out in their original order, the waiting one with the
** stack's ids.  Nothing is reordered, so every consumer (the analysis, the
** stack matcher, `dump`, trace:events) sees the stream it would see
** without this layer, plus the derived ids.  An event whose stack does not
** come within the look-ahead comes out without ids (counted).  When the
** events of one kind (hook) never get a stack (the trace has no stack
** walk for them), that kind stops waiting after HSI_ATTRIB_GIVEUP of them.
**
** Cost: an event with header ids, read while nothing is held, is passed
** through without a copy; held events are copied into one arena that is
** reused, so nothing is allocated per event.
*/
#ifndef HS_ATTRIB_H
#define HS_ATTRIB_H

#include "heapscript.h"

#define HSI_ATTRIB_AHEAD  1024        /* events held at most behind a waiting one */
#define HSI_ATTRIB_BYTES  (4u << 20)  /* bytes held at most */
#define HSI_ATTRIB_GIVEUP 16          /* unmatched waits of a kind, none matched: stop waiting */

/* Where an event's ids come from. */
enum { HSI_IDS_NONE = 0, HSI_IDS_HEADER, HSI_IDS_STACK };

typedef struct hsi_ids {
  uint32_t pid, tid;       /* HS_NOID when unknown */
  int how;                 /* HSI_IDS_* */
} hsi_ids;

typedef struct hsi_attrib_counts {
  uint64_t waited;         /* memory events without header ids held for their StackWalk */
  uint64_t from_stack;     /* ... that got the ids of their StackWalk */
  uint64_t no_stack;       /* memory events without header ids that got none (not waited
                              for, or no StackWalk within the look-ahead) */
  uint64_t ambiguous;      /* StackWalks naming a held event with ids as well as one without,
                              or several without (given the one on their CPU, of their process) */
  uint32_t held_max;       /* most events held at once */
} hsi_attrib_counts;

/* The event source: 1 and *ev, 0 at the end, negative HS_E* code. */
typedef int (*hsi_attrib_src)(void *ud, hs_event *ev);

typedef struct hsi_attrib hsi_attrib;

hsi_attrib *hsi_attrib_new(hsi_attrib_src src, void *ud);
void hsi_attrib_free(hsi_attrib *at);
/* The source was rewound: drop what is held, keep the counters' meaning
   (they restart from zero). */
void hsi_attrib_reset(hsi_attrib *at);
/*
** The next event, in the source's order, and its ids (header ids, or the
** StackWalk's for a memory event without them).  1, 0 at the end, or the
** source's negative code (after the events held before it came out).
** *ev stays valid until the next call, like the reader's own.
*/
int hsi_attrib_next(hsi_attrib *at, hs_event *ev, hsi_ids *ids);
const hsi_attrib_counts *hsi_attrib_counts_get(const hsi_attrib *at);

/* A source over an hs_reader (ud = the reader). */
int hsi_attrib_reader_src(void *ud, hs_event *ev);

#endif
