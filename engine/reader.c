/* reader.c -- the hs_reader handle: dispatch to its source (source.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heapscript.h"
#include "source.h"
#include "satmath.h"
#include "osfile.h"
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

/* Do files a and b hold the same bytes (their sizes, their first and
   last MiB: a copy; two traces alike in their headers differ there)? */
static int same_bytes(const char *a, const char *b) {
  enum { PART = 1 << 20 };
  FILE *fa = hsi_fopen(a, "rb"), *fb = hsi_fopen(b, "rb");
  char *x = malloc(2 * (size_t)PART);
  int same = fa && fb && x;
  long sa = -1, sb = -1;
  int part;
  if (same) {
    same = fseek(fa, 0, SEEK_END) == 0 && fseek(fb, 0, SEEK_END) == 0 && (sa = ftell(fa)) == (sb = ftell(fb))
           && sa >= 0;
  }
  for (part = 0; same && part < 2; part++) {     /* the first MiB, then the last */
    long at = part == 0 || sa <= PART ? 0 : sa - PART;
    size_t n = (size_t)(sa - at < PART ? sa - at : PART);
    same = fseek(fa, at, SEEK_SET) == 0 && fseek(fb, at, SEEK_SET) == 0 && fread(x, 1, n, fa) == n
           && fread(x + PART, 1, n, fb) == n && memcmp(x, x + PART, n) == 0;
  }
  if (fa) fclose(fa);
  if (fb) fclose(fb);
  free(x);
  return same;
}

int hsi_reader_twice(const hs_reader *r, char *msg, size_t msglen) {
  int n = hs_reader_nfiles(r), i, k;
  for (i = 1; i < n; i++)
    for (k = 0; k < i; k++) {
      const hs_logfile *a = hs_reader_logfile(r, i), *b = hs_reader_logfile(r, k);
      const char *pa = hs_reader_path(r, i), *pb = hs_reader_path(r, k);
      if ((pa && pb && hsi_same_file(pa, pb))
          || (a && b && pa && pb && a->start_time == b->start_time && a->header_ts == b->header_ts
              && a->end_time == b->end_time && a->buffers_written == b->buffers_written
              && a->cpus == b->cpus && a->perf_freq == b->perf_freq && same_bytes(pa, pb))) {
        snprintf(msg, msglen, "%s: the same trace as %s, given twice", pa, pb);
        return 1;
      }
    }
  return 0;
}

int hsi_timebase_init(hsi_timebase *tb, const hs_reader *r) {
  tb->start0 = hsi_reader_start_ns(r, 0);
  return hsi_reader_clocks(r, &tb->clocks);
}

void hsi_timebase_free(hsi_timebase *tb) {
  free((void *)tb->clocks);
  tb->clocks = NULL;
}

int64_t hsi_timebase_ns(const hsi_timebase *tb, const hs_reader *r, const hs_event *ev) {
  const hs_logfile *lf = hs_reader_logfile(r, 0);
  /* saturated as the analysis' record times are (lua_alloc.c): a damaged time stays in range */
  return lf ? hsi_add_sat(hs_time_ns(lf, hsi_rebase_ts(r, tb->clocks, ev->file, ev->timestamp)), tb->start0) : 0;
}

int64_t hsi_reader_start_ns(const hs_reader *r, int file) {
  int i, n = hs_reader_nfiles(r);
  int64_t earliest = INT64_MAX;
  const hs_logfile *lf = hs_reader_logfile(r, file);
  for (i = 0; i < n; i++) {
    const hs_logfile *f = hs_reader_logfile(r, i);
    if (f && f->start_time > 0 && f->start_time < earliest) earliest = f->start_time;
  }
  return lf && lf->start_time > 0 && earliest != INT64_MAX ? (lf->start_time - earliest) * 100 : 0;
}
