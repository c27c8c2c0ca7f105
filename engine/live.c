/*
** live.c -- the live store and the reader over it (see live.h).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "live.h"
#include "source.h"
#include "thread.h"

#define CHUNK (4u << 20)           /* record bytes per chunk (> HSI_EVREC_MAX) */
#define SLOT_HDR 8u                /* per record: u16 cpu, u16 0, u32 length */

struct hsi_live {
  hsi_mutex mx;
  hsi_cond cv;                       /* signalled on every append and at the end */
  int refs;
  hs_logfile lf;
  char *name;
  uint8_t **chunks;                /* record bytes, never moved */
  size_t nchunks, capchunks, used; /* used: bytes of the last chunk */
  const uint8_t **recs;            /* record slots in arrival order */
  int64_t *ts;                     /* their timestamps */
  uint64_t nrecs, caprecs;
  hsi_live_counts c;
  int stop;                        /* the consumer asked to stop */
  char reason[128];
  uint8_t scratch[HSI_EVREC_MAX];  /* the producer's record, before the copy */
};

hsi_live *hsi_live_new(const hs_logfile *lf, const char *name) {
  hsi_live *s = (hsi_live *)calloc(1, sizeof *s);
  if (!s) return NULL;
  if (!(s->name = (char *)malloc(strlen(name) + 1))) { free(s); return NULL; }
  strcpy(s->name, name);
  s->lf = *lf;
  s->refs = 1;
  hsi_mx_init(&s->mx);
  hsi_cv_init(&s->cv);
  return s;
}

static void ref(hsi_live *s) { hsi_mx_lock(&s->mx); s->refs++; hsi_mx_unlock(&s->mx); }

void hsi_live_unref(hsi_live *s) {
  size_t i;
  int last;
  if (!s) return;
  hsi_mx_lock(&s->mx);
  last = --s->refs == 0;
  hsi_mx_unlock(&s->mx);
  if (!last) return;
  for (i = 0; i < s->nchunks; i++) free(s->chunks[i]);
  free(s->chunks); free(s->recs); free(s->ts); free(s->name);
  hsi_cv_free(&s->cv); hsi_mx_free(&s->mx);
  free(s);
}

/* Room for one slot of len bytes; NULL when out of memory.  Under the lock. */
static uint8_t *slot(hsi_live *s, uint32_t len) {
  size_t need = (SLOT_HDR + len + 7u) & ~(size_t)7u;
  if (s->nrecs == s->caprecs) {
    uint64_t cap = s->caprecs ? s->caprecs * 2 : 4096;
    const uint8_t **nr = (const uint8_t **)realloc((void *)s->recs, (size_t)cap * sizeof *nr);
    int64_t *nt;
    if (!nr) return NULL;
    s->recs = nr;
    if (!(nt = (int64_t *)realloc(s->ts, (size_t)cap * sizeof *nt))) return NULL;
    s->ts = nt;
    s->caprecs = cap;
  }
  if (!s->nchunks || s->used + need > CHUNK) {
    uint8_t *ch;
    if (s->nchunks == s->capchunks) {
      size_t cap = s->capchunks ? s->capchunks * 2 : 16;
      uint8_t **nc = (uint8_t **)realloc(s->chunks, cap * sizeof *nc);
      if (!nc) return NULL;
      s->chunks = nc; s->capchunks = cap;
    }
    if (!(ch = (uint8_t *)malloc(CHUNK))) return NULL;
    s->chunks[s->nchunks++] = ch;
    s->used = 0;
  }
  s->used += need;
  return s->chunks[s->nchunks - 1] + s->used - need;
}

void hsi_live_event(hsi_live *s, const hsi_evrec *e) {
  uint32_t len = hsi_evrec_to_record(e, s->scratch);   /* the scratch is the producer's only */
  int lost = hsi_evrec_lost_kind(e);
  uint8_t *p;
  hsi_mx_lock(&s->mx);
  if (lost == 32) s->c.lost_events++;
  else if (lost == 33) s->c.lost_buffers++;
  if (!len || !(p = slot(s, len))) { s->c.dropped++; hsi_mx_unlock(&s->mx); return; }
  p[0] = e->processor_number; p[1] = 0; p[2] = p[3] = 0;
  memcpy(p + 4, &len, 4);
  memcpy(p + SLOT_HDR, s->scratch, len);
  s->ts[s->nrecs] = e->timestamp;
  s->recs[s->nrecs++] = p;
  s->c.events++;
  s->c.bytes += len;
  s->c.last_ts = e->timestamp;
  hsi_cv_broadcast(&s->cv);
  hsi_mx_unlock(&s->mx);
}

void hsi_live_add_lost(hsi_live *s, uint64_t events, uint64_t buffers) {
  hsi_mx_lock(&s->mx);
  s->c.lost_events += events;
  s->c.lost_buffers += buffers;
  hsi_mx_unlock(&s->mx);
}

void hsi_live_finish(hsi_live *s, const char *reason) {
  hsi_mx_lock(&s->mx);
  if (!s->c.finished && !s->reason[0]) snprintf(s->reason, sizeof s->reason, "%s", reason);
  s->c.finished = 1;
  hsi_cv_broadcast(&s->cv);
  hsi_mx_unlock(&s->mx);
}

int hsi_live_stopping(hsi_live *s) {
  int v;
  hsi_mx_lock(&s->mx); v = s->stop; hsi_mx_unlock(&s->mx);
  return v;
}

void hsi_live_request_stop(hsi_live *s, const char *reason) {
  hsi_mx_lock(&s->mx);
  if (!s->stop && !s->c.finished) snprintf(s->reason, sizeof s->reason, "%s", reason);
  s->stop = 1;
  hsi_mx_unlock(&s->mx);
}

int hsi_live_wait(hsi_live *s, int64_t until_ts, int timeout_ms, uint64_t *n) {
  double end = hsi_now_ms() + timeout_ms;
  uint64_t seen = 0;
  int rc;
  hsi_mx_lock(&s->mx);
  for (;;) {
    for (; seen < s->nrecs; seen++)
      if (s->ts[seen] >= until_ts) { *n = seen; rc = 1; goto out; }
    if (s->c.finished) { *n = s->nrecs; rc = 0; goto out; }
    if (timeout_ms >= 0) {
      double left = end - hsi_now_ms();
      if (left <= 0) { *n = s->nrecs; rc = 2; goto out; }
      hsi_cv_timedwait(&s->cv, &s->mx, left > 200 ? 200 : (int)left + 1);
    } else {
      hsi_cv_timedwait(&s->cv, &s->mx, 200);
    }
  }
out:
  hsi_mx_unlock(&s->mx);
  return rc;
}

void hsi_live_counts_get(hsi_live *s, hsi_live_counts *c) {
  hsi_mx_lock(&s->mx); *c = s->c; hsi_mx_unlock(&s->mx);
}

const char *hsi_live_reason(hsi_live *s) { return s->reason; }
const hs_logfile *hsi_live_logfile(hsi_live *s) { return &s->lf; }

/* ------------------------------------------------------ the reader */

typedef struct lreader {
  hsi_live *s;
  uint64_t limit, pos;
  hs_file_stats st;
} lreader;

static int lr_next(void *impl, hs_event *ev) {
  lreader *r = (lreader *)impl;
  const uint8_t *p;
  uint32_t len;
  for (;;) {
    if (r->pos >= r->limit) return 0;
    hsi_mx_lock(&r->s->mx);
    p = r->s->recs[r->pos];
    hsi_mx_unlock(&r->s->mx);
    memcpy(&len, p + 4, 4);
    r->pos++;
    if (hsi_evrec_decode(p + SLOT_HDR, len, ev)) break;
    r->st.records_damaged++;          /* the adapter wrote it: cannot happen, but never silent */
  }
  ev->cpu = p[0];
  ev->file = 0;
  ev->buffer = 0;
  ev->offset = (uint32_t)(r->pos - 1);
  ev->buffer_pos = 0;
  r->st.records++;
  return 1;
}

static int lr_rewind(void *impl) {
  lreader *r = (lreader *)impl;
  r->pos = 0;
  r->st.records = 0;
  return 0;
}

static void lr_close(void *impl) {
  lreader *r = (lreader *)impl;
  hsi_live_unref(r->s);
  free(r);
}

static int lr_nfiles(const void *impl) { (void)impl; return 1; }
static const char *lr_path(const void *impl, int i) { return i == 0 ? ((const lreader *)impl)->s->name : NULL; }
static const hs_logfile *lr_logfile(const void *impl, int i) { return i == 0 ? &((const lreader *)impl)->s->lf : NULL; }
static const hs_file_stats *lr_stats(const void *impl, int i) { return i == 0 ? &((const lreader *)impl)->st : NULL; }

static int lr_reopen(void *impl, hs_reader **out, const hs_reader_opts *o, char *err, size_t errlen) {
  const lreader *r = (const lreader *)impl;
  (void)o;                       /* a live store's records were checked as they came */
  int rc = hsi_live_reader(r->s, r->limit, out);
  if (rc) snprintf(err, errlen, "out of memory");
  return rc;
}

static const hsi_source_ops live_ops = {
  lr_next, lr_rewind, lr_close, lr_nfiles, lr_path, lr_logfile, lr_stats, lr_reopen, NULL, NULL, NULL
};

int hsi_live_reader(hsi_live *s, uint64_t n, hs_reader **out) {
  lreader *r = (lreader *)calloc(1, sizeof *r);
  *out = NULL;
  if (!r) return HS_ENOMEM;
  hsi_mx_lock(&s->mx);
  r->limit = n < s->nrecs ? n : s->nrecs;
  hsi_mx_unlock(&s->mx);
  r->s = s;
  r->st.first_damage_pos = UINT64_MAX;
  ref(s);
  if (!(*out = hsi_reader_wrap(&live_ops, r))) { lr_close(r); return HS_ENOMEM; }
  return 0;
}
