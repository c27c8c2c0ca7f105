/*
** source.h -- what stands behind an hs_reader.  The public API is one
** handle; a source (ETL files today, a live real-time session on Windows
** later) fills in these operations and delivers events one at a time in
** the same hs_event model, so nothing above the reader changes.
*/
#ifndef HS_SOURCE_H
#define HS_SOURCE_H
#include "heapscript.h"

typedef struct hsi_source_ops {
  int (*next)(void *impl, hs_event *ev);            /* 1, 0 at the end, negative on a fatal error */
  int (*rewind)(void *impl);                        /* HS_EUNSUP for a live session */
  void (*close)(void *impl);
  int (*nfiles)(const void *impl);
  const char *(*path)(const void *impl, int i);
  const hs_logfile *(*logfile)(const void *impl, int i);
  const hs_file_stats *(*stats)(const void *impl, int i);
  /* A second, independent reader over the same events (the files opened
     again, with the options o, which may be NULL; the same records of a
     live store): 0 or a negative HS_E*. */
  int (*reopen)(void *impl, hs_reader **out, const hs_reader_opts *o, char *err, size_t errlen);
  /* The caller runs n threads of its own beside the walk from the next
     rewind on (hsi_auto_workers); NULL for a source without workers. */
  void (*beside)(void *impl, int n);
  int (*workers)(const void *impl);   /* chosen at the last rewind, started by the walk's first
                                         step after it; NULL: none */
  /* From another thread, while the walk runs (the caller's thread beside
     it, when idle): decode ahead one piece of what the walk will want, as
     a worker would; 1 if it did, 0 if there was nothing to do.  NULL: no
     help wanted. */
  int (*help)(void *impl);
} hsi_source_ops;

/* A reader over impl; NULL when out of memory (impl is then the caller's). */
hs_reader *hsi_reader_wrap(const hsi_source_ops *ops, void *impl);
/* A second reader over what r reads, with its own options (o may be NULL:
   then without r's damage callback). */
int hsi_reader_reopen(hs_reader *r, hs_reader **out, const hs_reader_opts *o, char *err, size_t errlen);
/* The caller will keep n threads busy beside the walk (0: none), from the
   next rewind on: the source starts that many fewer decoding workers. */
void hsi_reader_beside(hs_reader *r, int n);
/* Decoding workers the last rewind chose (0: the walk decodes alone);
   they start with the walk's first step, not at the rewind. */
int hsi_reader_workers(const hs_reader *r);
/* Help the walk from a thread beside it (see help above): 1 or 0. */
int hsi_reader_help(hs_reader *r);

/*
** Files whose clock is not the first file's (hs_time_same_clock: the
** reader merges them on FILETIME) keep raw ticks of their own clock in
** their events.  Whoever counts every time on one clock (the analysis,
** merge) takes the first file's and moves such an event's time there
** through its FILETIME (hsi_rebase; hsi_rebase_ts for a time in a
** payload, such as the event a StackWalk names).  *clocks: per file, its
** clock, or NULL when it is the first file's; *clocks NULL when every
** file's is (0, or HS_ENOMEM).
*/
int hsi_reader_clocks(const hs_reader *r, const hs_logfile ***clocks);

/* Are two of r's files one trace (one path twice, or a copy: the same
   header and bytes)?  1 with "SECOND: the same trace as FIRST, given
   twice" in msg (n bytes), else 0.  Read as one, its events would count
   twice. */
int hsi_reader_twice(const hs_reader *r, char *msg, size_t n);

/* File `file`'s start in ns after the earliest file's (0 when a start is
   not known), so that the times of several files share one origin: an
   event's time is hs_time_ns on its file's clock plus this. */
int64_t hsi_reader_start_ns(const hs_reader *r, int file);
static inline int64_t hsi_rebase_ts(const hs_reader *r, const hs_logfile *const *clocks, int file, int64_t ts) {
  if (clocks && file >= 0 && file < hs_reader_nfiles(r) && clocks[file])
    ts = hs_time_from_filetime(hs_reader_logfile(r, 0), hs_time_filetime(clocks[file], ts));
  return ts;
}
static inline void hsi_rebase(const hs_reader *r, const hs_logfile *const *clocks, hs_event *ev) {
  ev->timestamp = hsi_rebase_ts(r, clocks, ev->file, ev->timestamp);
}

/*
** Every event's time in ns on one clock, the first file's, as the
** analysis counts it (its records' times equal their events' to the
** last bit): an event of a file of the same clock by its ticks, one of
** another clock through its FILETIME (hsi_rebase), then from the first
** file's start plus that start's offset from the earliest file's
** (hsi_reader_start_ns).  Each file's own StartTime would put a file of
** the same clock off by the microseconds its StartTime and header
** stamp disagree.
*/
typedef struct hsi_timebase {
  const hs_logfile **clocks;  /* hsi_reader_clocks */
  int64_t start0;             /* hsi_reader_start_ns of the first file */
} hsi_timebase;
int hsi_timebase_init(hsi_timebase *tb, const hs_reader *r);   /* 0 or HS_ENOMEM */
void hsi_timebase_free(hsi_timebase *tb);
int64_t hsi_timebase_ns(const hsi_timebase *tb, const hs_reader *r, const hs_event *ev);
#endif
