/*
** analysis.h -- one pass over a trace that builds everything the
** allocation questions need: processes and images (procmap.h), interned
** stacks matched to their events (stacks.h) and allocation lifetimes
** (lifetime.h), fed by the memory-event decoders (memev.h).
**
** The pass reads each event once: procmap first (so the process
** instance of a pid at that time is known), then the memory decoder and
** the tracker, registering the new records as stack targets, then the
** stack matcher.  Stacks arrive after their events; the matcher's
** callback attaches them to the records.
**
** Timestamps are the raw ticks of the files' common clock.  Several files
** merged into one reader must share it (xperf -merge requires that too);
** seconds are computed with the first file's logfile header.
*/
#ifndef HS_ANALYSIS_H
#define HS_ANALYSIS_H

#include "heapscript.h"
#include "procmap.h"
#include "stacks.h"
#include "lifetime.h"
#include "sym.h"
#include "prefetch.h"

typedef struct hsi_analysis hsi_analysis;

typedef struct hsi_analysis_counts {
  uint64_t events;            /* every event read */
  uint64_t memory_events;     /* heap / VirtualAlloc / pool / snapshot events decoded */
  uint64_t memory_damaged;    /* memory events too short for their layout (skipped) */
  uint64_t snapshot_chunks;   /* Heap-Snapshot chunks (counted, not decoded: blob format unknown) */
  uint64_t process_ends;
  uint64_t out_of_scope;      /* memory events left out by the scope */
  uint64_t ids_from_stack;    /* memory events without header ids given their StackWalk's (attrib.h) */
  uint64_t ids_missing;       /* memory events without header ids that got no StackWalk */
  uint64_t ids_from_block;    /* ... of them heap frees given the process of the one live block they free */
  uint64_t records_no_process; /* records whose process is unknown (no ids, no stack) */
  int64_t first_ts, last_ts;  /* the earliest and the latest event's time (valid when events) */
} hsi_analysis_counts;

/*
** What a script will ask about, declared before the pass (as sysdig
** chisels declare their fields): memory events outside it make no
** records, so memory grows with the allocations kept, not with all the
** allocations of the trace.  Zeroed = everything.  Arrays are read during
** the run only.
*/
typedef struct hsi_analysis_scope {
  uint32_t kinds;                /* 1u << HSI_KIND_*; 0 = every kind */
  const uint32_t *pids;          /* process ids; NULL = any */
  size_t npids;
  const char *const *names;      /* process image names, compared ignoring case; NULL = any */
  size_t nnames;
  /* Called every few thousand events with the current one, for a progress
     line (term.c); not part of the scope's meaning.  NULL = none. */
  void (*progress)(void *ud, const hs_event *ev);
  void *progress_ud;
} hsi_analysis_scope;

/* Read every event of r (from its start) and build the analysis of what
   scope covers (NULL: everything).  0, or a negative HS_E* code with a
   message in err (HSI_ESTOPPED when a time limit stopped it, stop.h). */
int hsi_analysis_run(hs_reader *r, const hsi_analysis_scope *scope, hsi_analysis **out,
                     char *err, size_t errlen);
void hsi_analysis_free(hsi_analysis *a);

hsi_procmap *hsi_analysis_procmap(const hsi_analysis *a);
hsi_stacks *hsi_analysis_stacks(const hsi_analysis *a);
hsi_life *hsi_analysis_life(const hsi_analysis *a);
/* The symbol layer over the procmap (sym.h): it opens nothing until asked. */
hsi_syms *hsi_analysis_syms(const hsi_analysis *a);
const hsi_analysis_counts *hsi_analysis_counts_get(const hsi_analysis *a);
int hsi_analysis_threaded(const hsi_analysis *a);   /* the pass read on a prefetch thread */
/* Where the pass's two threads waited for each other (prefetch.h); zeros
   when it ran on one. */
const hsi_prefetch_counts *hsi_analysis_ring(const hsi_analysis *a);
/* The layout checks of the memory events (layoutcheck.h), finished. */
const struct hsi_lcheck *hsi_analysis_layouts(const hsi_analysis *a);
/* The logfile header used for time conversion (the first file's). */
const hs_logfile *hsi_analysis_logfile(const hsi_analysis *a);

#endif
