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
} hsi_source_ops;

/* A reader over impl; NULL when out of memory (impl is then the caller's). */
hs_reader *hsi_reader_wrap(const hsi_source_ops *ops, void *impl);
/* A second reader over what r reads, with its own options (o may be NULL:
   then without r's damage callback). */
int hsi_reader_reopen(hs_reader *r, hs_reader **out, const hs_reader_opts *o, char *err, size_t errlen);
#endif
