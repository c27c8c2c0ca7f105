/* reader.c -- the hs_reader handle: dispatch to its source (source.h). */
#include <stdlib.h>
#include "heapscript.h"
#include "source.h"
#include "thread.h"

struct hs_reader {
  const hsi_source_ops *ops;
  void *impl;
  char err[HS_ERRLEN];
};

hs_reader *hsi_reader_wrap(const hsi_source_ops *ops, void *impl) {
  hs_reader *r = (hs_reader *)hsi_line_calloc(sizeof *r);   /* read for every event: thread.h */
  if (!r) return NULL;
  r->ops = ops;
  r->impl = impl;
  return r;
}

int hs_reader_next(hs_reader *r, hs_event *ev) { return r->ops->next(r->impl, ev); }
int hs_reader_rewind(hs_reader *r) { return r->ops->rewind(r->impl); }
int hs_reader_nfiles(const hs_reader *r) { return r->ops->nfiles(r->impl); }
const char *hs_reader_path(const hs_reader *r, int i) { return r->ops->path(r->impl, i); }
const hs_logfile *hs_reader_logfile(const hs_reader *r, int i) { return r->ops->logfile(r->impl, i); }
const hs_file_stats *hs_reader_stats(const hs_reader *r, int i) { return r->ops->stats(r->impl, i); }
const char *hs_reader_error(const hs_reader *r) { return r->err; }
int hsi_reader_reopen(hs_reader *r, hs_reader **out, const hs_reader_opts *o, char *err, size_t errlen) {
  return r->ops->reopen(r->impl, out, o, err, errlen);
}

void hsi_reader_beside(hs_reader *r, int n) {
  if (r->ops->beside) r->ops->beside(r->impl, n);
}

int hsi_reader_help(hs_reader *r) {
  return r->ops->help ? r->ops->help(r->impl) : 0;
}

int hsi_reader_workers(const hs_reader *r) {
  return r->ops->workers ? r->ops->workers(r->impl) : 0;
}

void hs_reader_close(hs_reader *r) {
  if (!r) return;
  r->ops->close(r->impl);
  hsi_line_free(r);
}

int hsi_reader_clocks(const hs_reader *r, const hs_logfile ***clocks) {
  int i, n = hs_reader_nfiles(r);
  const hs_logfile *first = hs_reader_logfile(r, 0);
  *clocks = NULL;
  for (i = 1; i < n; i++) {
    const hs_logfile *lf = hs_reader_logfile(r, i);
    if (hs_time_same_clock(lf, first)) continue;
    if (!*clocks && !(*clocks = (const hs_logfile **)calloc((size_t)n, sizeof **clocks))) return HS_ENOMEM;
    (*clocks)[i] = lf;
  }
  return 0;
}
