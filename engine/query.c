/*
** query.c -- filters, window aggregates, grouping and outstanding-over-
** time over the record columns of a tracker (query.h, LIFETIMES.md).
**
** Everything is one pass over the selection, except what needs time
** order (peak, series): those take the alloc and free times of the
** records once, sort each list (LSD radix on the timestamp, stable) and
** sweep the two in step, frees before allocs at equal times, so that
** the value after a time is what "alloc <= t < free" says at t.
*/
#include <stdlib.h>
#include <string.h>
#include "hash.h"
#include "query.h"
#include "satmath.h"
#include "stop.h"

#define SIGN64 0x8000000000000000ULL

int hsi_query_class(int64_t a, int64_t f, int64_t t1, int64_t t2) {
  if (a > t2 || f < t1) return -1;
  return (a < t1 ? 2 : 0) + (f > t2 ? 1 : 0);
}

const char *hsi_class_name(int cls) {
  static const char *const names[] = {"AIFI", "AIFO", "AOFI", "AOFO"};
  return cls >= 0 && cls < HSI_NCLASS ? names[cls] : "?";
}

/* ---------------------------------------------------------------- filter */

void hsi_filter_init(hsi_filter *f, const hsi_life *lt) {
  memset(f, 0, sizeof *f);
  f->pid = HS_NOID;
  f->size_max = UINT64_MAX;
  hsi_life_span(lt, &f->t1, &f->t2);
}

struct fctx {
  const hsi_life *lt;
  const hsi_filter *f;
  uint32_t *insts;       /* sorted copy of f->insts */
  size_t ninsts;
  uint32_t last_inst;    /* one-entry cache of the instance test */
  int last_ok, have_last;
  int sized;             /* the size range excludes unknown sizes */
  int window_only;       /* nothing asked beyond kinds, window and classes */
};

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

static int sized(const hsi_filter *f) { return f->size_min > 0 || f->size_max != UINT64_MAX; }

/* Nothing asked beyond kinds, window and classes. */
static int window_only(const hsi_filter *f) {
  return !f->reasons && !f->flags_all && !f->flags_none && !f->has_heap && !f->has_tag
         && !sized(f) && !f->stacks && !f->insts && f->pid == HS_NOID;
}

static int fctx_init(struct fctx *c, const hsi_life *lt, const hsi_filter *f) {
  memset(c, 0, sizeof *c);
  c->lt = lt;
  c->f = f;
  c->sized = sized(f);
  c->window_only = window_only(f);
  if (f->insts) {
    c->insts = malloc((f->ninsts ? f->ninsts : 1) * sizeof *c->insts);
    if (!c->insts) return HS_ENOMEM;
    if (f->ninsts) memcpy(c->insts, f->insts, f->ninsts * sizeof *c->insts);
    c->ninsts = f->ninsts;
    qsort(c->insts, c->ninsts, sizeof *c->insts, cmp_u32);
  }
  return 0;
}

static int inst_ok(struct fctx *c, uint32_t inst) {
  int ok = 1;
  if (c->have_last && c->last_inst == inst) return c->last_ok;
  if (c->f->insts && !bsearch(&inst, c->insts, c->ninsts, sizeof inst, cmp_u32)) ok = 0;
  if (ok && c->f->pid != HS_NOID && hsi_life_pid(c->lt, inst) != c->f->pid) ok = 0;
  c->have_last = 1;
  c->last_inst = inst;
  c->last_ok = ok;
  return ok;
}

static int matches(struct fctx *c, const hsi_recs *R, uint32_t i) {
  const hsi_filter *f = c->f;
  int cls;
  if (f->kinds && !(f->kinds & (1u << R->kind[i]))) return 0;
  cls = hsi_query_class(R->ts_alloc[i], R->ts_free[i], f->t1, f->t2);
  if (cls < 0 || (f->classes && !(f->classes & (1u << cls)))) return 0;
  if (c->window_only) return 1;          /* most selections: the rest would only look */
  if (f->reasons && !(f->reasons & (1u << R->reason[i]))) return 0;
  if ((R->flags[i] & f->flags_all) != f->flags_all || (R->flags[i] & f->flags_none)) return 0;
  if (f->has_heap && (R->kind[i] != HSI_KIND_HEAP || R->key[i] != f->heap)) return 0;
  if (f->has_tag) {
    uint32_t m = f->tag_mask ? f->tag_mask : 0xFFFFFFFFu;
    if (R->kind[i] != HSI_KIND_POOL || (HSI_REC_TAG(R, i) & m) != (f->tag & m)) return 0;
  }
  if (c->sized) {
    if (R->flags[i] & HSI_RF_SIZE_UNKNOWN) return 0;
    if (R->size[i] < f->size_min || R->size[i] > f->size_max) return 0;
  }
  if (f->stacks) {
    uint32_t s = hsi_rec_stack(R, (uint32_t)i, f->stack_which);
    if (s >= f->nstacks || !((f->stacks[s >> 3] >> (s & 7)) & 1)) return 0;
  }
  if ((f->insts || f->pid != HS_NOID) && !inst_ok(c, R->inst[i])) return 0;
  return 1;
}

/* Every record asked by kinds, window and classes alone (most selections):
   the room for all of them at once, and a loop without branches on what
   each record is. */
static int select_window(const hsi_recs *R, const hsi_filter *f, hsi_sel *out) {
  uint32_t kinds = f->kinds ? f->kinds : ~0u, classes = f->classes ? f->classes : ~0u;
  size_t i, k = out->n;
  if (R->n > out->cap) {
    uint32_t *p = realloc(out->idx, R->n * sizeof *p);
    if (!p) return HS_ENOMEM;
    out->idx = p;
    out->cap = R->n;
  }
  for (i = 0; i < R->n; i++) {
    int cls = hsi_query_class(R->ts_alloc[i], R->ts_free[i], f->t1, f->t2);
    if (hsi_stop_due(i)) return HSI_ESTOPPED;
    out->idx[k] = (uint32_t)i;
    k += (unsigned)(cls >= 0) & kinds >> (R->kind[i] & 31u) & classes >> (cls & 3);
  }
  out->n = k;
  return 0;
}

size_t hsi_query_every(const hsi_life *lt, const hsi_filter *f) {
  size_t n = 0;
  int k;
  if (!lt || !f || !window_only(f) || (f->classes & HSI_CLS_ALL) != (f->classes ? HSI_CLS_ALL : 0)
      || !hsi_life_holds(lt, f->t1, f->t2))
    return SIZE_MAX;
  for (k = 0; k < HSI_KIND_COUNT; k++)
    if (!f->kinds || (f->kinds & (1u << k))) n += hsi_life_kind_records(lt, k);
  return n;
}

/* Every record (the selection of all the kinds there are) is 0..n-1;
   else one look at each record's kind, without a branch. */
int hsi_query_every_fill(const hsi_life *lt, const hsi_filter *f, uint32_t *buf) {
  const hsi_recs *R = hsi_life_recs(lt);
  uint32_t kinds = f->kinds ? f->kinds : ~0u;
  size_t i, k = 0, n = hsi_query_every(lt, f);
  if (n == R->n) {
    for (i = 0; i < n; i++) {
      if (hsi_stop_due(i)) return HSI_ESTOPPED;
      buf[i] = (uint32_t)i;
    }
    return 0;
  }
  for (i = 0; k < n && i < R->n; i++) {   /* buf[k] is written before it is known to match */
    if (hsi_stop_due(i)) return HSI_ESTOPPED;
    buf[k] = (uint32_t)i;
    k += kinds >> (R->kind[i] & 31u) & 1u;
  }
  return 0;
}

int hsi_query_select_in(const hsi_life *lt, const hsi_filter *f, const uint32_t *in, size_t n,
                        hsi_sel *out) {
  const hsi_recs *R;
  struct fctx c;
  size_t i;
  if (!lt || !f || !out || (n && !in)) return HS_EARG;
  out->n = 0;
  if (f->kinds) {                      /* no record of the kinds asked for: none to look at */
    size_t have = 0;
    int k;
    for (k = 0; k < HSI_KIND_COUNT; k++)
      if (f->kinds & (1u << k)) have += hsi_life_kind_records(lt, k);
    if (!have) return 0;
  }
  if (in == NULL && (i = hsi_query_every(lt, f)) != SIZE_MAX) {
    if (i > out->cap) {
      uint32_t *p = realloc(out->idx, i * sizeof *p);
      if (!p) return HS_ENOMEM;
      out->idx = p;
      out->cap = i;
    }
    if (hsi_query_every_fill(lt, f, out->idx)) return HSI_ESTOPPED;
    out->n = i;
    return 0;
  }
  if (fctx_init(&c, lt, f)) return HS_ENOMEM;
  R = hsi_life_recs(lt);
  if (in == NULL) n = R->n;
  if (in == NULL && c.window_only) return select_window(R, f, out);   /* no instances to free */
  for (i = 0; i < n; i++) {
    uint32_t r = in ? in[i] : (uint32_t)i;
    if (hsi_stop_due(i)) { free(c.insts); return HSI_ESTOPPED; }
    if (r >= R->n || !matches(&c, R, r)) continue;
    if (out->n == out->cap) {
      size_t nc = out->cap ? out->cap * 2 : 256;
      uint32_t *p = realloc(out->idx, nc * sizeof *p);
      if (!p) { free(c.insts); return HS_ENOMEM; }
      out->idx = p;
      out->cap = nc;
    }
    out->idx[out->n++] = r;
  }
  free(c.insts);
  return 0;
}

int hsi_query_select(const hsi_life *lt, const hsi_filter *f, hsi_sel *out) {
  return hsi_query_select_in(lt, f, NULL, 0, out);
}

size_t hsi_query_select_buf(const hsi_life *lt, const hsi_filter *f, uint32_t *buf, size_t cap) {
  hsi_sel s;
  size_t n;
  memset(&s, 0, sizeof s);
  if (hsi_query_select(lt, f, &s)) return 0;
  n = s.n;
  if (n && cap) memcpy(buf, s.idx, (n < cap ? n : cap) * sizeof *buf);
  hsi_sel_free(&s);
  return n;
}

void hsi_sel_free(hsi_sel *s) {
  if (!s) return;
  free(s->idx);
  s->idx = NULL;
  s->n = s->cap = 0;
}

/* -------------------------------------------------------- time sweeping */

/* An alloc or free time: k is the timestamp with its sign bit flipped, so
   unsigned order is time order. */
struct tev { uint64_t k; uint32_t rec; };

static int cmp_tev(const void *a, const void *b) {
  uint64_t x = ((const struct tev *)a)->k, y = ((const struct tev *)b)->k;
  return x < y ? -1 : x > y;
}

static int64_t tev_ts(const struct tev *e) { return (int64_t)(e->k ^ SIGN64); }

/* Stable LSD radix sort, 16 bits a pass (8 below 65536 times, so that
   the counts of a group's few thousand times stay small); passes where
   every key has the same digit (the high bits of timestamps of one
   trace) are skipped. */
static int sort_tev(struct tev *a, size_t n) {
  struct tev *tmp, *src = a, *dst;
  size_t *cnt, i, nb;
  uint64_t diff = 0;
  int shift, sorted = 1, bits;
  /* Alloc times mostly come in record order already. */
  for (i = 1; i < n; i++) {
    if (a[i].k < a[i - 1].k) sorted = 0;
    diff |= a[i].k ^ a[0].k;
  }
  if (sorted) return 0;
  if (n < 512) { qsort(a, n, sizeof *a, cmp_tev); return 0; }
  bits = n < 65536 ? 8 : 16;
  nb = (size_t)1 << bits;
  tmp = malloc(n * sizeof *tmp);
  cnt = malloc(nb * sizeof *cnt);
  if (!tmp || !cnt) { free(tmp); free(cnt); return HS_ENOMEM; }
  dst = tmp;
  for (shift = 0; shift < 64; shift += bits) {
    size_t sum = 0;
    uint64_t mask = nb - 1;
    if (!((diff >> shift) & mask)) continue;   /* the same digit everywhere */
    memset(cnt, 0, nb * sizeof *cnt);
    for (i = 0; i < n; i++) cnt[(src[i].k >> shift) & mask]++;
    for (i = 0; i < nb; i++) { size_t c = cnt[i]; cnt[i] = sum; sum += c; }
    for (i = 0; i < n; i++) dst[cnt[(src[i].k >> shift) & mask]++] = src[i];
    { struct tev *t = src; src = dst; dst = t; }
  }
  if (src != a) memcpy(a, src, n * sizeof *a);
  free(tmp);
  free(cnt);
  return 0;
}

/* The alloc and free times of the in-trace, known-size records among
   sel (NULL: every record) that touch the window, sorted. */
struct times {
  struct tev *al, *fr;
  size_t na, nf;
};

/* Fill T's arrays (room for every record of sel) and sort them. */
static int times_fill(const hsi_recs *R, const hsi_sel *sel, int64_t t1, int64_t t2, struct times *T) {
  size_t i, n = sel ? sel->n : R->n;
  T->na = T->nf = 0;
  for (i = 0; i < n; i++) {
    uint32_t r = sel ? sel->idx[i] : (uint32_t)i;
    if (!hsi_rec_counts(R, r) || hsi_query_class(R->ts_alloc[r], R->ts_free[r], t1, t2) < 0) continue;
    T->al[T->na].k = (uint64_t)R->ts_alloc[r] ^ SIGN64;
    T->al[T->na++].rec = r;
    if (R->ts_free[r] != HSI_TS_NEVER) {
      T->fr[T->nf].k = (uint64_t)R->ts_free[r] ^ SIGN64;
      T->fr[T->nf++].rec = r;
    }
  }
  return sort_tev(T->al, T->na) || sort_tev(T->fr, T->nf) ? HS_ENOMEM : 0;
}

static int times_build(const hsi_recs *R, const hsi_sel *sel, int64_t t1, int64_t t2, struct times *T) {
  size_t n = sel ? sel->n : R->n;
  memset(T, 0, sizeof *T);
  T->al = malloc((n ? n : 1) * sizeof *T->al);
  T->fr = malloc((n ? n : 1) * sizeof *T->fr);
  if (!T->al || !T->fr || times_fill(R, sel, t1, t2, T)) {
    free(T->al);
    free(T->fr);
    memset(T, 0, sizeof *T);
    return HS_ENOMEM;
  }
  return 0;
}

static void times_free(struct times *T) {
  free(T->al);
  free(T->fr);
}

/* v + d, or - d, held within int64_t (satmath.h): sizes a damaged trace
   gives can add up past it (a real one's never do). */
static int64_t sat_add(int64_t v, uint64_t d) { return hsi_add_sat(v, d > INT64_MAX ? INT64_MAX : (int64_t)d); }
static int64_t sat_sub(int64_t v, uint64_t d) { return hsi_sub_sat(v, d > INT64_MAX ? INT64_MAX : (int64_t)d); }

/* Peak outstanding bytes of T's records over [t1, t2], and its time
   (t1 when it is the value at t1). */
static void sweep_peak(const hsi_recs *R, const struct times *T, int64_t t1, int64_t t2, hsi_agg *a) {
  /* Signed: within one time, a free may come before the alloc of its own
     record; the value checked after an alloc never exceeds the value
     after the whole time. */
  int64_t val = 0;
  size_t i = 0, j = 0;
  while (i < T->na && tev_ts(&T->al[i]) <= t1) val = sat_add(val, R->size[T->al[i++].rec]);
  while (j < T->nf && tev_ts(&T->fr[j]) <= t1) val = sat_sub(val, R->size[T->fr[j++].rec]);
  a->peak = (uint64_t)val;
  a->peak_ts = t1;
  for (;;) {
    int take_free;
    if (i < T->na && j < T->nf) take_free = T->fr[j].k <= T->al[i].k;
    else if (j < T->nf) take_free = 1;
    else if (i < T->na) take_free = 0;
    else break;
    if (take_free) {
      if (tev_ts(&T->fr[j]) > t2) break;
      val = sat_sub(val, R->size[T->fr[j++].rec]);
    } else {
      const struct tev *e = &T->al[i++];
      int64_t ts = tev_ts(e);
      if (ts > t2) break;
      val = sat_add(val, R->size[e->rec]);
      if (val > (int64_t)a->peak) { a->peak = (uint64_t)val; a->peak_ts = ts; }
    }
  }
}

/* -------------------------------------------------------------- grouping */

/* The peak of n records of the kinds in `kinds`, when they are every record
   of one kind (or of all) and [t1, t2] the whole trace (lifetime.h). */
static int whole_peak(const hsi_life *lt, size_t n, unsigned kinds, int64_t t1, int64_t t2, hsi_agg *a) {
  size_t nrecs;
  uint64_t peak;
  int64_t ts;
  int kind = -1;                       /* several kinds: every record of every kind */
  if (kinds && !(kinds & (kinds - 1))) for (kind = 0; !(kinds & (1u << kind)); kind++) {}
  if (!hsi_life_peak(lt, kind, t1, t2, &nrecs, &peak, &ts) || nrecs != n) return 0;
  a->peak = peak;
  a->peak_ts = ts;
  return 1;
}

/*
** The peak of each group, swept over its members alone: a group's values
** depend on its own records only, and sweeping one group at a time keeps
** its times few (sorted in cache) where one sweep over the selection
** would sort every time of it at once.  A group that is every record of
** a kind over the whole trace takes the peak the tracker kept.
*/
static int group_peaks(const hsi_life *lt, hsi_groups *out, int64_t t1, int64_t t2) {
  const hsi_recs *R = hsi_life_recs(lt);
  struct times T;
  size_t k, i, most = 1;
  int rc = 0;
  for (k = 0; k < out->n; k++)
    if (out->g[k].mlen > most) most = out->g[k].mlen;
  T.al = T.fr = NULL;
  for (k = 0; k < out->n && !rc; k++) {
    hsi_sel s;
    unsigned kinds = 0;
    int whole = 1;
    s.idx = out->members + out->g[k].moff;
    s.n = s.cap = out->g[k].mlen;
    for (i = 0; i < s.n; i++) {
      kinds |= 1u << (R->kind[s.idx[i]] & 31);
      if (i && s.idx[i] <= s.idx[i - 1]) whole = 0;
    }
    if (whole && whole_peak(lt, s.n, kinds, t1, t2, &out->g[k].agg)) continue;
    if (!T.al) {
      T.al = malloc(most * sizeof *T.al);
      T.fr = malloc(most * sizeof *T.fr);
    }
    if (!T.al || !T.fr || times_fill(R, &s, t1, t2, &T)) rc = HS_ENOMEM;
    else sweep_peak(R, &T, t1, t2, &out->g[k].agg);
  }
  times_free(&T);
  return rc;
}

int hsi_groups_peaks(const hsi_life *lt, hsi_groups *gs, int64_t t1, int64_t t2) {
  if (!lt || !gs || (gs->n && !gs->members)) return HS_EARG;
  return group_peaks(lt, gs, t1, t2);
}

static void agg_add(hsi_agg *a, const hsi_recs *R, uint32_t r, int cls) {
  int known = !(R->flags[r] & HSI_RF_SIZE_UNKNOWN);
  uint64_t sz = known ? R->size[r] : 0;
  a->count++;
  a->bytes += sz;
  a->cls_count[cls]++;
  a->cls_bytes[cls] += sz;
  if (!known) a->unknown_count++;
  if (R->flags[r] & HSI_RF_BEFORE) {
    a->before_count++;
    a->before_bytes += sz;
    if (cls == HSI_AOFI) a->before_aofi_bytes += sz;
    return;
  }
  if (cls == HSI_AOFI || cls == HSI_AOFO) { a->out_start += sz; a->out_start_count++; }
  if (cls == HSI_AIFO || cls == HSI_AOFO) { a->out_end += sz; a->out_end_count++; }
}

static void agg_finish(hsi_agg *a) {
  a->size = a->cls_bytes[HSI_AIFI] + a->cls_bytes[HSI_AIFO];
  a->transient = a->cls_bytes[HSI_AIFI];
  a->impacting = sat_sub(sat_add(0, a->cls_bytes[HSI_AIFO]), a->cls_bytes[HSI_AOFI]);
}

static uint64_t group_key(const hsi_life *lt, const hsi_recs *R, uint32_t r, size_t pos, int by,
                          const uint64_t *keys, int cls) {
  switch (by) {
  case HSI_BY_INSTANCE: return R->inst[r] ? R->inst[r] : HSI_NOKEY;    /* no process: last, as heaps */
  case HSI_BY_PID: {
    uint32_t pid = hsi_life_pid(lt, R->inst[r]);
    return pid == HS_NOID ? HSI_NOKEY : pid;
  }
  case HSI_BY_HEAP: return R->kind[r] == HSI_KIND_HEAP ? R->key[r] : HSI_NOKEY;
  case HSI_BY_TAG: return R->kind[r] == HSI_KIND_POOL ? HSI_REC_TAG(R, r) : HSI_NOKEY;
  case HSI_BY_ALLOC_STACK: return R->stk_alloc[r];
  case HSI_BY_FREE_STACK: return R->stk_free[r];
  case HSI_BY_SIZE: return R->flags[r] & HSI_RF_SIZE_UNKNOWN ? HSI_NOKEY : R->size[r];
  case HSI_BY_KIND: return R->kind[r];
  case HSI_BY_REASON: return R->reason[r];
  case HSI_BY_CLASS: return (uint64_t)cls;
  case HSI_BY_KEY: return keys[pos];
  default: return 0;
  }
}

int hsi_query_group(const hsi_life *lt, const hsi_sel *sel, int64_t t1, int64_t t2, int by,
                    const uint64_t *keys, unsigned opts, hsi_groups *out) {
  const hsi_recs *R;
  size_t i, n, cap = 0, hcap = 0;
  uint32_t *gidx = NULL, *hash = NULL, last_g = UINT32_MAX;
  uint64_t last_key = 0;
  int rc = HS_ENOMEM;
  if (!lt || !out || by < 0 || by >= HSI_BY_COUNT || (by == HSI_BY_KEY && !keys)) return HS_EARG;
  memset(out, 0, sizeof *out);
  R = hsi_life_recs(lt);
  n = sel ? sel->n : R->n;
  gidx = malloc((n ? n : 1) * sizeof *gidx);
  if (!gidx) goto done;
  for (i = 0; i < n; i++) {
    uint32_t r = sel ? sel->idx[i] : (uint32_t)i, g, h;
    int cls = hsi_query_class(R->ts_alloc[r], R->ts_free[r], t1, t2);
    uint64_t key;
    if (hsi_stop_due(i)) { rc = HSI_ESTOPPED; goto done; }
    if (cls < 0) { gidx[i] = UINT32_MAX; continue; }
    key = group_key(lt, R, r, i, by, keys, cls);
    if (last_g != UINT32_MAX && key == last_key) {
      g = last_g;
    } else {
      if ((out->n + 1) * 2 > hcap) {  /* grow and rebuild the key index */
        size_t nc = hcap ? hcap * 2 : 64, k;
        uint32_t *nh = calloc(nc, sizeof *nh);
        if (!nh) goto done;
        for (k = 0; k < out->n; k++) {
          for (h = (uint32_t)(hsi_mix64(out->g[k].key) & (nc - 1)); nh[h]; h = (uint32_t)((h + 1) & (nc - 1))) {}
          nh[h] = (uint32_t)k + 1;
        }
        free(hash);
        hash = nh;
        hcap = nc;
      }
      for (h = (uint32_t)(hsi_mix64(key) & (hcap - 1)); hash[h]; h = (uint32_t)((h + 1) & (hcap - 1)))
        if (out->g[hash[h] - 1].key == key) break;
      if (hash[h]) {
        g = hash[h] - 1;
      } else {
        if (out->n == cap) {
          size_t nc = cap ? cap * 2 : 16;
          hsi_group *p = realloc(out->g, nc * sizeof *p);
          if (!p) goto done;
          out->g = p;
          cap = nc;
        }
        g = (uint32_t)out->n++;
        memset(&out->g[g], 0, sizeof out->g[g]);
        out->g[g].key = key;
        out->g[g].first = r;
        hash[h] = g + 1;
      }
      last_g = g;
      last_key = key;
    }
    gidx[i] = g;
    agg_add(&out->g[g].agg, R, r, cls);
  }
  for (i = 0; i < out->n; i++) {
    agg_finish(&out->g[i].agg);
    out->g[i].agg.peak_ts = t1;
  }
  if (opts & (HSI_GRP_MEMBERS | HSI_AGG_PEAK)) {
    size_t off = 0;
    for (i = 0; i < out->n; i++) {
      out->g[i].moff = off;
      off += (size_t)out->g[i].agg.count;
      out->g[i].mlen = 0;
    }
    out->members = malloc((off ? off : 1) * sizeof *out->members);
    if (!out->members) goto done;
    out->nmembers = off;
    for (i = 0; i < n; i++) {
      hsi_group *gr;
      if (gidx[i] == UINT32_MAX) continue;
      gr = &out->g[gidx[i]];
      out->members[gr->moff + gr->mlen++] = sel ? sel->idx[i] : (uint32_t)i;
    }
    if ((opts & HSI_AGG_PEAK) && group_peaks(lt, out, t1, t2)) goto done;
    if (!(opts & HSI_GRP_MEMBERS)) {       /* asked for the peaks only */
      free(out->members);
      out->members = NULL;
      out->nmembers = 0;
      for (i = 0; i < out->n; i++) out->g[i].moff = out->g[i].mlen = 0;
    }
  }
  rc = 0;
done:
  free(gidx);
  free(hash);
  if (rc) hsi_groups_free(out);
  return rc;
}

void hsi_groups_free(hsi_groups *gs) {
  if (!gs) return;
  free(gs->g);
  free(gs->members);
  memset(gs, 0, sizeof *gs);
}

/*
** One aggregate over the selection, without the grouping's index per
** record and member list: the selection itself is the one group's
** members.  Its peak is the tracker's when the selection is every record
** of a kind over the whole trace (whole_peak), else swept.
*/
int hsi_query_agg(const hsi_life *lt, const hsi_sel *sel, int64_t t1, int64_t t2,
                  unsigned opts, hsi_agg *out) {
  const hsi_recs *R;
  size_t i, n;
  unsigned kinds = 0;
  int whole = 1;
  uint32_t prev = 0;
  if (!lt || !out) return HS_EARG;
  memset(out, 0, sizeof *out);
  R = hsi_life_recs(lt);
  n = sel ? sel->n : R->n;
  for (i = 0; i < n; i++) {
    uint32_t r = sel ? sel->idx[i] : (uint32_t)i;
    int cls = hsi_query_class(R->ts_alloc[r], R->ts_free[r], t1, t2);
    if (hsi_stop_due(i)) return HSI_ESTOPPED;
    if (cls < 0) continue;
    if (out->count && r <= prev) whole = 0;
    prev = r;
    kinds |= 1u << (R->kind[r] & 31);
    agg_add(out, R, r, cls);
  }
  agg_finish(out);
  out->peak_ts = t1;
  if ((opts & HSI_AGG_PEAK) && out->count && !(whole && whole_peak(lt, (size_t)out->count, kinds, t1, t2, out))) {
    struct times T;
    if (times_build(R, sel, t1, t2, &T)) return HS_ENOMEM;
    sweep_peak(R, &T, t1, t2, out);
    times_free(&T);
  }
  return 0;
}

void hsi_query_outstanding(const hsi_life *lt, const hsi_sel *sel, int64_t t,
                           uint64_t *bytes, uint64_t *count) {
  const hsi_recs *R = hsi_life_recs(lt);
  size_t i, n = sel ? sel->n : R->n;
  uint64_t b = 0, c = 0;
  for (i = 0; i < n; i++) {
    uint32_t r = sel ? sel->idx[i] : (uint32_t)i;
    if (!hsi_rec_counts(R, r) || R->ts_alloc[r] > t || R->ts_free[r] <= t) continue;
    b += R->size[r];
    c++;
  }
  if (bytes) *bytes = b;
  if (count) *count = c;
}

/* ---------------------------------------------------------------- fields */

static const char *const field_names[HSI_F_COUNT_] = {
  "key", "count", "bytes", "size", "impacting", "transient", "peak",
  "aifi_count", "aifo_count", "aofi_count", "aofo_count",
  "aifi_bytes", "aifo_bytes", "aofi_bytes", "aofo_bytes",
  "unknown_count", "before_count", "out_start", "out_end", "peak_ts"
};

const char *hsi_agg_field_name(int field) {
  return field >= 0 && field < HSI_F_COUNT_ ? field_names[field] : NULL;
}

int hsi_agg_field_find(const char *name) {
  int i;
  for (i = 0; name && i < HSI_F_COUNT_; i++)
    if (strcmp(name, field_names[i]) == 0) return i;
  return -1;
}

static int64_t clamp64(uint64_t v) { return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v; }

int64_t hsi_agg_field(const hsi_agg *a, int field) {
  switch (field) {
  case HSI_F_COUNT: return clamp64(a->count);
  case HSI_F_BYTES: return clamp64(a->bytes);
  case HSI_F_SIZE: return clamp64(a->size);
  case HSI_F_IMPACTING: return a->impacting;
  case HSI_F_TRANSIENT: return clamp64(a->transient);
  case HSI_F_PEAK: return clamp64(a->peak);
  case HSI_F_AIFI_COUNT: case HSI_F_AIFO_COUNT: case HSI_F_AOFI_COUNT: case HSI_F_AOFO_COUNT:
    return clamp64(a->cls_count[field - HSI_F_AIFI_COUNT]);
  case HSI_F_AIFI_BYTES: case HSI_F_AIFO_BYTES: case HSI_F_AOFI_BYTES: case HSI_F_AOFO_BYTES:
    return clamp64(a->cls_bytes[field - HSI_F_AIFI_BYTES]);
  case HSI_F_UNKNOWN_COUNT: return clamp64(a->unknown_count);
  case HSI_F_BEFORE_COUNT: return clamp64(a->before_count);
  case HSI_F_OUT_START: return clamp64(a->out_start);
  case HSI_F_OUT_END: return clamp64(a->out_end);
  case HSI_F_PEAK_TS: return a->peak_ts;
  default: return 0;
  }
}

struct sortitem { int64_t v; uint64_t tie; size_t i; };

static int cmp_item(const void *pa, const void *pb) {
  const struct sortitem *a = pa, *b = pb;
  if (a->v != b->v) return a->v < b->v ? -1 : 1;
  if (a->tie != b->tie) return a->tie < b->tie ? -1 : 1;
  return a->i < b->i ? -1 : a->i > b->i;
}

/* h[0..n) a heap of the first items so far, the last of them (by
   cmp_item) on top: the item at slot k moved down to its place. */
static void sift_down(struct sortitem *h, size_t n, size_t k) {
  for (;;) {
    size_t c = 2 * k + 1;
    struct sortitem t;
    if (c >= n) return;
    if (c + 1 < n && cmp_item(&h[c + 1], &h[c]) > 0) c++;
    if (cmp_item(&h[c], &h[k]) <= 0) return;
    t = h[k]; h[k] = h[c]; h[c] = t;
    k = c;
  }
}

int hsi_groups_sort_top(hsi_groups *gs, int field, int descending, size_t keep) {
  struct sortitem *it;
  hsi_group *ng;
  size_t i, n;
  if (!gs || field < 0 || field >= HSI_F_COUNT_) return HS_EARG;
  if (keep > gs->n) keep = gs->n;
  if (gs->n < 2 || keep == 0) { gs->n = keep; return 0; }
  it = malloc(gs->n * sizeof *it);
  ng = malloc(keep * sizeof *ng);
  if (!it || !ng) { free(it); free(ng); return HS_ENOMEM; }
  for (i = 0; i < gs->n; i++) {
    it[i].i = i;
    if (field == HSI_F_KEY) {
      it[i].v = 0;
      it[i].tie = descending ? ~gs->g[i].key : gs->g[i].key;
    } else {
      int64_t v = hsi_agg_field(&gs->g[i].agg, field);
      it[i].v = descending ? (v == INT64_MIN ? INT64_MAX : -v) : v;
      it[i].tie = gs->g[i].key;
    }
  }
  if (keep < gs->n / 4) {
    /* a few of many (the top ten of 100,000 stacks): the `keep` first by a
       heap, then only they sorted.  The order is total (the index breaks
       every tie), so these are the first `keep` of the whole sort. */
    for (i = keep / 2; i-- > 0;) sift_down(it, keep, i);
    for (i = keep; i < gs->n; i++)
      if (cmp_item(&it[i], &it[0]) < 0) { it[0] = it[i]; sift_down(it, keep, 0); }
    n = keep;
  } else {
    n = gs->n;
  }
  qsort(it, n, sizeof *it, cmp_item);
  for (i = 0; i < keep; i++) ng[i] = gs->g[it[i].i];
  free(gs->g);
  gs->g = ng;
  gs->n = keep;
  free(it);
  return 0;
}

int hsi_groups_sort(hsi_groups *gs, int field, int descending) {
  return hsi_groups_sort_top(gs, field, descending, gs ? gs->n : 0);
}

void hsi_groups_top(hsi_groups *gs, size_t n) {
  if (gs && n < gs->n) gs->n = n;
}

/* ---------------------------------------------------------------- series */

static int series_push(hsi_series *s, size_t *cap, int64_t t, uint64_t b, uint64_t c) {
  if (s->n == *cap) {
    size_t nc = *cap ? *cap * 2 : 64;
    int64_t *pt = realloc(s->t, nc * sizeof *pt);
    uint64_t *pb, *pc;
    if (!pt) return HS_ENOMEM;
    s->t = pt;
    pb = realloc(s->bytes, nc * sizeof *pb);
    if (!pb) return HS_ENOMEM;
    s->bytes = pb;
    pc = realloc(s->count, nc * sizeof *pc);
    if (!pc) return HS_ENOMEM;
    s->count = pc;
    *cap = nc;
  }
  s->t[s->n] = t;
  s->bytes[s->n] = b;
  s->count[s->n] = c;
  s->n++;
  return 0;
}

/* The outstanding bytes and count of a selection as time goes, over its
   sorted alloc and free times: both series below walk it. */
typedef struct level {
  const hsi_recs *R;
  struct times T;
  size_t i, j;                  /* the next alloc and free */
  uint64_t v, c;                /* bytes and count after what was applied */
} level;

/* Allocs then frees up to t: the values after t are exact either way. */
static void level_until(level *w, int64_t t) {
  while (w->i < w->T.na && tev_ts(&w->T.al[w->i]) <= t) { w->v += w->R->size[w->T.al[w->i].rec]; w->c++; w->i++; }
  while (w->j < w->T.nf && tev_ts(&w->T.fr[w->j]) <= t) { w->v -= w->R->size[w->T.fr[w->j].rec]; w->c--; w->j++; }
}

/* The time of the next change, if there is one by t2: 1 with *t, else 0. */
static int level_next(const level *w, int64_t t2, int64_t *t) {
  int64_t ta = w->i < w->T.na ? tev_ts(&w->T.al[w->i]) : INT64_MAX;
  int64_t tf = w->j < w->T.nf ? tev_ts(&w->T.fr[w->j]) : INT64_MAX;
  if (w->i >= w->T.na && w->j >= w->T.nf) return 0;
  *t = ta < tf ? ta : tf;
  return *t <= t2;
}

static int level_open(level *w, const hsi_life *lt, const hsi_sel *sel, int64_t t1, int64_t t2) {
  memset(w, 0, sizeof *w);
  w->R = hsi_life_recs(lt);
  return times_build(w->R, sel, t1, t2, &w->T) ? HS_ENOMEM : 0;
}

int hsi_query_series(const hsi_life *lt, const hsi_sel *sel, int64_t t1, int64_t t2,
                     size_t npoints, hsi_series *out) {
  level w;
  size_t cap = 0, p;
  int rc = 0;
  if (!lt || !out || t2 < t1) return HS_EARG;
  memset(out, 0, sizeof *out);
  if (level_open(&w, lt, sel, t1, t2)) return HS_ENOMEM;
  if (npoints) {
    uint64_t d = (uint64_t)t2 - (uint64_t)t1;
    for (p = 0; p < npoints && !rc; p++) {
      int64_t t;
      if (npoints == 1) t = t2;
      else {
        uint64_t q = d / (npoints - 1), r = d % (npoints - 1);
        t = (int64_t)((uint64_t)t1 + q * p + r * p / (npoints - 1));
      }
      level_until(&w, t);
      rc = hsi_stop_due(p + 1) ? HSI_ESTOPPED : series_push(out, &cap, t, w.v, w.c);
    }
  } else {
    int64_t t;
    level_until(&w, t1);
    rc = series_push(out, &cap, t1, w.v, w.c);
    for (p = 1; !rc && level_next(&w, t2, &t); p++) {
      if (hsi_stop_due(p)) { rc = HSI_ESTOPPED; break; }
      level_until(&w, t);
      if (w.v != out->bytes[out->n - 1] || w.c != out->count[out->n - 1]) rc = series_push(out, &cap, t, w.v, w.c);
    }
  }
  times_free(&w.T);
  if (rc) hsi_series_free(out);
  return rc;
}

/*
** Columns: every change of the window (as npoints 0 gives them, the value
** at t1 first) folded into ncols equal columns as it comes, without the
** list of changes: each column's highest values and its last, then each
** column's point the higher of its highest and the level carried in from
** the columns before (a column with no change holds that level).
*/
int hsi_query_series_peaks(const hsi_life *lt, const hsi_sel *sel, int64_t t1, int64_t t2,
                           size_t ncols, hsi_series *out) {
  level w;
  size_t c, p;
  uint64_t *lastb = NULL, *lastn = NULL, lvb = 0, lvn = 0;
  uint8_t *seen = NULL;
  double d = (double)t2 - (double)t1;
  int64_t t;
  int rc = 0;
  if (!lt || !out || t2 < t1 || ncols == 0) return HS_EARG;
  memset(out, 0, sizeof *out);
  if (level_open(&w, lt, sel, t1, t2)) return HS_ENOMEM;
  out->t = (int64_t *)malloc(ncols * sizeof *out->t);
  out->bytes = (uint64_t *)calloc(ncols, sizeof *out->bytes);
  out->count = (uint64_t *)calloc(ncols, sizeof *out->count);
  lastb = (uint64_t *)malloc(ncols * sizeof *lastb);
  lastn = (uint64_t *)malloc(ncols * sizeof *lastn);
  seen = (uint8_t *)calloc(ncols, 1);
  if (!out->t || !out->bytes || !out->count || !lastb || !lastn || !seen) rc = HS_ENOMEM;
#define FOLD(t) do { \
    double x_ = d > 0 ? ((double)(t) - (double)t1) / d * (double)ncols : 0; \
    c = x_ <= 0 ? 0 : x_ >= (double)(ncols - 1) ? ncols - 1 : (size_t)x_; \
    if (!seen[c] || w.v > out->bytes[c]) out->bytes[c] = w.v; \
    if (!seen[c] || w.c > out->count[c]) out->count[c] = w.c; \
    seen[c] = 1; lastb[c] = w.v; lastn[c] = w.c; \
  } while (0)
  if (!rc) {
    level_until(&w, t1);
    FOLD(t1);
    for (p = 1; level_next(&w, t2, &t); p++) {
      if (hsi_stop_due(p)) { rc = HSI_ESTOPPED; break; }
      level_until(&w, t);
      FOLD(t);
    }
  }
#undef FOLD
  for (c = 0; !rc && c < ncols; c++) {
    double tc = (double)t1 + d * ((double)c + 0.5) / (double)ncols;   /* held within int64_t */
    out->t[c] = tc >= 9223372036854775807.0 ? INT64_MAX : tc <= -9223372036854775807.0 ? INT64_MIN : (int64_t)tc;
    if (!seen[c]) { out->bytes[c] = lvb; out->count[c] = lvn; continue; }
    if (lvb > out->bytes[c]) out->bytes[c] = lvb;
    if (lvn > out->count[c]) out->count[c] = lvn;
    lvb = lastb[c];
    lvn = lastn[c];
  }
  out->n = ncols;
  free(lastb);
  free(lastn);
  free(seen);
  times_free(&w.T);
  if (rc) hsi_series_free(out);
  return rc;
}

void hsi_series_free(hsi_series *s) {
  if (!s) return;
  free(s->t);
  free(s->bytes);
  free(s->count);
  memset(s, 0, sizeof *s);
}
