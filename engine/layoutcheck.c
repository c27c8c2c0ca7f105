/*
** layoutcheck.c -- per-layout counters that say when a trace's memory
** events do not fit the documented layouts (see layoutcheck.h).
**
** Why these checks: each one holds for every event a correct decoder sees
** and fails for most events of a misread layout.  A payload read 4 bytes
** off moves 8-byte fields by half: addresses lose their alignment, sizes
** take the high half of an address (far above 2^40), pool tags take
** address bytes (not printable).  A 32-bit payload read with 8-byte
** pointers is too short or merges two fields.  A newer version that
** appends fields is decoded correctly by the older row, but its length is
** not one the row explains, so it is reported too: its figures may still
** be right, and someone should confirm the new layout.
**
** Heap blocks are 16-byte aligned in 64-bit processes, 8 in 32-bit ones;
** a 32-bit process on 64-bit Windows is logged with 8-byte pointers, so an
** address below 4 GiB is only required to be 8-aligned.
*/
#include <stdlib.h>
#include <string.h>
#include "layoutcheck.h"
#include "thread.h"
#include "lifetime.h"
#include "memev.h"
#include "info.h"

#define NPID 16

typedef struct xrow {
  hsi_lcheck_row r;
  uint8_t len_ok[HSI_LCHECK_LENGTHS];
  uint32_t pid[NPID];           /* VirtualAlloc payload pids, checked at the end */
  uint64_t pidn[NPID];
  int npid;
  int kind;                     /* HSI_OP_* of the row */
  int memory;                   /* a memory event of the tables (else a hook sample() skips) */
} xrow;

/* Rows are found through a small direct-mapped cache of (key, index):
   a trace uses a handful of layouts, and alternating HeapAlloc/HeapFree
   must not cost a search each. */
#define NCACHE 64

struct hsi_lcheck {
  xrow *rows;
  size_t n, cap;
  uint32_t ckey[NCACHE], crow[NCACHE];  /* crow: index + 1, 0 = empty */
  int bad;
};

static uint32_t row_key(uint16_t hook, const hs_event *ev) {
  return (uint32_t)hook << 16 | (uint32_t)(ev->version & 0xFF) << 8 | ev->pointer_size;
}

static unsigned cache_slot(uint32_t key) { return (key ^ key >> 16 ^ key >> 9) & (NCACHE - 1); }

static const char *const check_names[HSI_LC_COUNT] = {
  "length", "short", "align", "size", "heap", "page", "tag", "pid"
};

const char *hsi_lcheck_name(int c) { return c >= 0 && c < HSI_LC_COUNT ? check_names[c] : "?"; }

/* Written by the pass's reading thread for every memory event: on lines of
   its own, as its rows (thread.h). */
hsi_lcheck *hsi_lcheck_new(void) { return (hsi_lcheck *)hsi_line_calloc(sizeof(hsi_lcheck)); }

void hsi_lcheck_free(hsi_lcheck *lc) {
  if (!lc) return;
  hsi_line_free(lc->rows);
  hsi_line_free(lc);
}

static int lifetime_kind(int k) {
  switch (k) {
  case HSI_OP_HEAP_CREATE: case HSI_OP_HEAP_ALLOC: case HSI_OP_HEAP_REALLOC: case HSI_OP_HEAP_FREE:
  case HSI_OP_HEAP_DESTROY: case HSI_OP_VALLOC: case HSI_OP_VFREE: case HSI_OP_VALLOC_RUNDOWN:
  case HSI_OP_POOL_ALLOC: case HSI_OP_POOL_FREE:
    return 1;
  default:
    return 0;
  }
}

static int record_kind(int k) {
  switch (k) {
  case HSI_OP_VALLOC: case HSI_OP_VFREE: case HSI_OP_VALLOC_RUNDOWN: return HSI_KIND_VIRTUAL;
  case HSI_OP_POOL_ALLOC: case HSI_OP_POOL_FREE: return HSI_KIND_POOL;
  default: return HSI_KIND_HEAP;
  }
}

/* The row of (hook, version, pointer size), added if new: the slow path,
   kept out of line so that the cached lookup stays a few instructions. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static xrow *row_find(hsi_lcheck *lc, const hs_event *ev, uint16_t hook, uint32_t key) {
  uint8_t ver = (uint8_t)(ev->version & 0xFF), ptr = ev->pointer_size;
  unsigned slot = cache_slot(key);
  size_t i;
  xrow *x;
  for (i = 0; i < lc->n; i++) {
    x = &lc->rows[i];
    if (x->r.hook == hook && x->r.version == ver && x->r.ptr == ptr) {
      lc->ckey[slot] = key; lc->crow[slot] = (uint32_t)i + 1;
      return x;
    }
  }
  if (lc->n == lc->cap) {
    size_t nc = lc->cap ? lc->cap * 2 : 8;
    xrow *p = (xrow *)hsi_line_grow(lc->rows, lc->n * sizeof *p, nc * sizeof *p);
    if (!p) return NULL;
    lc->rows = p;
    lc->cap = nc;
  }
  x = &lc->rows[lc->n];
  memset(x, 0, sizeof *x);
  x->r.hook = hook;
  x->r.version = ver;
  x->r.ptr = ptr;
  x->r.name = "?";
  x->r.row_version = -1;
  x->r.max_len = (size_t)-1;
  if (hsi_memev_row(ev, &x->r.name, &x->r.row_version, &x->kind, &x->r.min_len, &x->r.max_len)) {
    x->memory = 1;
    x->r.checked = lifetime_kind(x->kind);
  }
  lc->ckey[slot] = key; lc->crow[slot] = (uint32_t)++lc->n;
  return x;
}

static int printable_tag(uint32_t tag) {
  int i;
  tag &= 0x7FFFFFFFu;                 /* PROTECTED_POOL, set by old systems on the last character */
  for (i = 0; i < 4; i++) {
    unsigned ch = (tag >> (8 * i)) & 0xFF;
    if (ch < 0x20 || ch > 0x7E) return 0;
  }
  return 1;
}

static uint64_t heap_align(uint64_t addr, int ptr) {
  return ptr == 8 && addr > 0xFFFFFFFFu ? addr & 15 : addr & 7;
}

/* The checks an event's decoded fields fail, as bits 1 << HSI_LC_*. */
static unsigned field_checks(const hsi_memop *op, int ptr) {
  unsigned b = 0;
  switch (op->kind) {
  case HSI_OP_HEAP_REALLOC:
    if (heap_align(op->old_addr, ptr)) b |= 1u << HSI_LC_ALIGN;
    if (op->old_size >> 40) b |= 1u << HSI_LC_SIZE;
    /* fall through */
  case HSI_OP_HEAP_ALLOC: case HSI_OP_HEAP_FREE:
    if (heap_align(op->addr, ptr)) b |= 1u << HSI_LC_ALIGN;
    if (op->size >> 40) b |= 1u << HSI_LC_SIZE;
    /* fall through */
  case HSI_OP_HEAP_CREATE: case HSI_OP_HEAP_DESTROY:
    if (!op->heap) b |= 1u << HSI_LC_HEAP;
    break;
  case HSI_OP_VALLOC: case HSI_OP_VFREE: case HSI_OP_VALLOC_RUNDOWN:
    if ((op->addr | op->size) & 0xFFF) b |= 1u << HSI_LC_PAGE;
    break;
  case HSI_OP_POOL_ALLOC: case HSI_OP_POOL_FREE:
    if (!printable_tag(op->tag)) b |= 1u << HSI_LC_TAG;
    if (op->addr & 7) b |= 1u << HSI_LC_ALIGN;
    break;
  default:
    break;
  }
  return b;
}

static int explained(const hsi_lcheck_row *r, size_t len) {
  return len >= r->min_len && len <= r->max_len;
}

static inline xrow *lookup(hsi_lcheck *lc, const hs_event *ev, uint16_t hook) {
  uint32_t key = row_key(hook, ev);
  unsigned slot = cache_slot(key);
  if (lc->crow[slot] && lc->ckey[slot] == key) return &lc->rows[lc->crow[slot] - 1];
  return row_find(lc, ev, hook, key);
}

/* Count ev and its payload length in its row. */
static inline void count_length(xrow *x, uint32_t len) {
  hsi_lcheck_row *r = &x->r;
  int i;
  r->events++;
  if (r->nlen && r->len[0] == len) i = 0;            /* the usual case: one length */
  else for (i = 0; i < r->nlen && r->len[i] != len; i++) {}
  if (i < r->nlen) r->nlen_events[i]++;
  else if (r->nlen < HSI_LCHECK_LENGTHS) {
    r->len[i] = len;
    r->nlen_events[i] = 1;
    x->len_ok[i] = (uint8_t)explained(r, len);
    r->nlen++;
  } else {
    r->other_lengths++;
  }
  if (r->checked && (i < HSI_LCHECK_LENGTHS ? !x->len_ok[i] : !explained(r, len))) r->fail[HSI_LC_LENGTH]++;
}

static void check_fields(xrow *x, const hs_event *ev, int d, const hsi_memop *op);

/* Are this event's fields checked (the n-th event of its row)? */
static inline int sampled(const xrow *x) {
  return x->r.checked && (x->r.events <= HSI_LCHECK_FULL || x->r.events % HSI_LCHECK_EVERY == 0);
}

int hsi_lcheck_add(hsi_lcheck *lc, const hs_event *ev, int d, const hsi_memop *op) {
  xrow *x;
  if (d == 0 || op->kind == HSI_OP_SNAPSHOT || !op->hook) return 0;
  if (!(x = lookup(lc, ev, op->hook))) return HS_ENOMEM;
  count_length(x, ev->payload_len);
  if (sampled(x)) check_fields(x, ev, d, op);
  return 0;
}

int hsi_lcheck_sample(hsi_lcheck *lc, const hs_event *ev) {
  xrow *x;
  if (!(ev->flags & HS_EVF_KERNEL)) return 0;
  if (!(x = lookup(lc, ev, ev->hook))) return HS_ENOMEM;
  if (!x->memory) return 0;
  count_length(x, ev->payload_len);
  return sampled(x);
}

void hsi_lcheck_fields(hsi_lcheck *lc, const hs_event *ev, int d, const hsi_memop *op) {
  xrow *x;
  if (d == 0 || op->kind == HSI_OP_SNAPSHOT || !op->hook) return;
  if ((x = lookup(lc, ev, op->hook)) != NULL && x->r.checked) check_fields(x, ev, d, op);
}

static void check_fields(xrow *x, const hs_event *ev, int d, const hsi_memop *op) {
  hsi_lcheck_row *r = &x->r;
  unsigned b;
  int i;
  r->fields_checked++;
  if (d < 0) {
    r->fail[HSI_LC_SHORT]++;
    r->failed++;
    return;
  }
  b = field_checks(op, ev->pointer_size);
  if (b) {
    r->failed++;
    for (i = HSI_LC_SHORT; i < HSI_LC_COUNT; i++)
      if (b & (1u << i)) r->fail[i]++;
  }
  if (record_kind(x->kind) == HSI_KIND_VIRTUAL && op->pid != HS_NOID) {
    int k;
    for (k = 0; k < x->npid && x->pid[k] != op->pid; k++) {}
    if (k < x->npid) x->pidn[k]++;
    else if (k < NPID) { x->pid[k] = op->pid; x->pidn[k] = 1; x->npid++; }
  }
}

/* Did a Process record name pid (an implied instance does not count)? */
static int pid_known(const hsi_procmap *pm, uint32_t pid) {
  uint32_t i, n = hsi_procmap_ninstances(pm);
  for (i = 1; i <= n; i++)
    if (hsi_procmap_pid(pm, i) == pid && !(hsi_procmap_flags(pm, i) & HSI_PROC_IMPLIED)) return 1;
  return 0;
}

static int any_process(const hsi_procmap *pm) {
  uint32_t i, n = pm ? hsi_procmap_ninstances(pm) : 0;
  for (i = 1; i <= n; i++)
    if (!(hsi_procmap_flags(pm, i) & HSI_PROC_IMPLIED)) return 1;
  return 0;
}

int hsi_lcheck_finish(hsi_lcheck *lc, const hsi_procmap *pm) {
  size_t i;
  int k, procs = any_process(pm);
  lc->bad = 0;
  for (i = 0; i < lc->n; i++) {
    xrow *x = &lc->rows[i];
    hsi_lcheck_row *r = &x->r;
    uint64_t failed;
    r->fail[HSI_LC_PID] = 0;
    if (procs)
      for (k = 0; k < x->npid; k++)
        if (!pid_known(pm, x->pid[k])) r->fail[HSI_LC_PID] += x->pidn[k];
    failed = r->failed + r->fail[HSI_LC_PID];
    if (failed > r->fields_checked) failed = r->fields_checked;
    r->bad = r->checked && (r->fail[HSI_LC_LENGTH] > 0 || failed * 100 > r->fields_checked * HSI_LCHECK_PERCENT);
    lc->bad += r->bad;
  }
  return lc->bad;
}

size_t hsi_lcheck_count(const hsi_lcheck *lc) { return lc->n; }

const hsi_lcheck_row *hsi_lcheck_row_at(const hsi_lcheck *lc, size_t i) {
  return i < lc->n ? &lc->rows[i].r : NULL;
}

int hsi_lcheck_bad(const hsi_lcheck *lc) { return lc->bad; }

unsigned hsi_lcheck_bad_kinds(const hsi_lcheck *lc) {
  unsigned m = 0;
  size_t i;
  for (i = 0; i < lc->n; i++)
    if (lc->rows[i].r.bad) m |= 1u << record_kind(lc->rows[i].kind);
  return m;
}

/* ------------------------------------------------------------- text */

typedef struct sbuf { char *p; size_t cap, n; } sbuf;

static void put(sbuf *b, const char *s) {
  size_t k = strlen(s);
  if (b->cap && b->n < b->cap - 1) {
    size_t room = b->cap - 1 - b->n, w = k < room ? k : room;
    memcpy(b->p + b->n, s, w);
    b->p[b->n + w] = 0;
  }
  b->n += k;
}

static void putu(sbuf *b, unsigned long long v) {
  char t[24];
  snprintf(t, sizeof t, "%llu", v);
  put(b, t);
}

char *hsi_lcheck_lengths(const hsi_lcheck_row *r, char *out, size_t cap) {
  sbuf b;
  int i;
  b.p = out; b.cap = cap; b.n = 0;
  if (cap) out[0] = 0;
  for (i = 0; i < r->nlen; i++) {
    if (i) put(&b, ", ");
    putu(&b, r->len[i]);
    put(&b, " (");
    putu(&b, r->nlen_events[i]);
    put(&b, ")");
  }
  if (r->other_lengths) { put(&b, ", others ("); putu(&b, r->other_lengths); put(&b, ")"); }
  return out;
}

static void put_explains(sbuf *b, const hsi_lcheck_row *r) {
  putu(b, r->min_len);
  if (r->max_len == (size_t)-1) put(b, " or more");
  else if (r->max_len != r->min_len) { put(b, ".."); putu(b, r->max_len); }
}

static void put_failed(sbuf *b, const hsi_lcheck_row *r) {
  int i, any = 0;
  for (i = 0; i < HSI_LC_COUNT; i++) {
    if (!r->fail[i]) continue;
    put(b, any ? ", " : "");
    put(b, check_names[i]);
    put(b, " ");
    putu(b, r->fail[i]);
    any = 1;
  }
  if (!any) put(b, "none");
  put(b, " of ");
  putu(b, r->events);
  put(b, " events");
  if (r->fields_checked < r->events) {
    put(b, " (fields of ");
    putu(b, r->fields_checked);
    put(b, " checked)");
  }
}

size_t hsi_lcheck_warning(const hsi_lcheck_row *r, char *out, size_t cap) {
  sbuf b;
  char t[256];
  static const char *const kinds[] = { "heap", "virtual", "pool" };
  int k = (r->hook >> 8) == 0x02 ? HSI_KIND_VIRTUAL : (r->hook >> 8) == 0x0E ? HSI_KIND_POOL : HSI_KIND_HEAP;
  b.p = out; b.cap = cap; b.n = 0;
  if (cap) out[0] = 0;
  snprintf(t, sizeof t, "layout does not fit: %s v%u (hook 0x%04x, %u-byte pointers): payload lengths ",
           r->name, r->version, r->hook, r->ptr);
  put(&b, t);
  put(&b, hsi_lcheck_lengths(r, t, sizeof t));
  snprintf(t, sizeof t, "; the v%d row explains ", r->row_version);
  put(&b, t);
  put_explains(&b, r);
  put(&b, "; checks failed: ");
  put_failed(&b, r);
  put(&b, "; ");
  put(&b, kinds[k]);
  put(&b, " figures are doubtful");
  return b.n;
}

void hsi_lcheck_text(const hsi_lcheck *lc, FILE *o) {
  size_t i;
  char t[256], e[64], f[256];
  sbuf b;
  if (!lc->n) {     /* nothing for the analyses: most often not recorded, which is worth saying */
    fprintf(o, "memory events: none (to record them: see Recording a trace, README)\n");
    return;
  }
  fprintf(o, "memory layouts (events, payload lengths seen, what the table's row explains):\n");
  for (i = 0; i < lc->n; i++) {
    const hsi_lcheck_row *r = &lc->rows[i].r;
    int c, any = 0;
    b.p = e; b.cap = sizeof e; b.n = 0; e[0] = 0;
    if (r->row_version >= 0) put_explains(&b, r); else put(&b, "-");
    b.p = f; b.cap = sizeof f; b.n = 0; f[0] = 0;
    for (c = 0; c < HSI_LC_COUNT; c++)
      if (r->fail[c]) {
        put(&b, any ? ", " : ": ");
        put(&b, check_names[c]);
        put(&b, " ");
        putu(&b, r->fail[c]);
        any = 1;
      }
    fprintf(o, "  %-14s v%-2u P%u %8llu  lengths %s  (row v%d: %s)  %s%s\n", r->name, r->version, r->ptr,
            (unsigned long long)r->events, hsi_lcheck_lengths(r, t, sizeof t), r->row_version, e,
            !r->checked ? "not checked" : r->bad ? "DOES NOT FIT" : "fits", f);
  }
}

void hsi_lcheck_json(const hsi_lcheck *lc, FILE *o) {
  size_t i;
  int k, c, first;
  fprintf(o, "[");
  for (i = 0; i < lc->n; i++) {
    const hsi_lcheck_row *r = &lc->rows[i].r;
    fprintf(o, "%s\n    {\"event\": ", i ? "," : "");
    hsi_json_str(o, r->name);
    fprintf(o, ", \"hook\": %u, \"version\": %u, \"pointer_size\": %u, \"events\": %llu, \"lengths\": {",
            r->hook, r->version, r->ptr, (unsigned long long)r->events);
    for (k = 0; k < r->nlen; k++)
      fprintf(o, "%s\"%u\": %llu", k ? ", " : "", r->len[k], (unsigned long long)r->nlen_events[k]);
    fprintf(o, "}, \"other_lengths\": %llu, \"row_version\": %d, \"min_len\": %llu, \"max_len\": ",
            (unsigned long long)r->other_lengths, r->row_version, (unsigned long long)r->min_len);
    if (r->max_len == (size_t)-1) fprintf(o, "null"); else fprintf(o, "%llu", (unsigned long long)r->max_len);
    fprintf(o, ", \"checked\": %s, \"failed\": {", r->checked ? "true" : "false");
    for (c = 0, first = 1; c < HSI_LC_COUNT; c++)
      if (r->fail[c]) {
        fprintf(o, "%s\"%s\": %llu", first ? "" : ", ", check_names[c], (unsigned long long)r->fail[c]);
        first = 0;
      }
    fprintf(o, "}, \"fits\": %s}", r->bad ? "false" : "true");
  }
  fprintf(o, "%s]", lc->n ? "\n  " : "");
}

/* Memory events (kernel groups heap, PageFault, pool; classic records of
   their classes) go through the checks; Process records feed the process
   map for the pid check.  Everything else costs one test. */
int hsi_lcheck_feed(hsi_lcheck *lc, hsi_procmap *pm, const hs_event *ev) {
  hsi_memop op;
  int d;
  if (ev->flags & HS_EVF_KERNEL) {
    if ((ev->hook >> 8) == 0x03) return hsi_procmap_feed(pm, ev) < 0 ? HS_ENOMEM : 0;
  } else if (ev->header_type != HS_HT_FULL32 && ev->header_type != HS_HT_FULL64
             && ev->header_type != HS_HT_INSTANCE32 && ev->header_type != HS_HT_INSTANCE64) {
    return 0;
  }
  if (!hsi_memev_maybe(ev)) return 0;   /* another kernel group, or another provider's record */
  if (ev->flags & HS_EVF_KERNEL) {      /* lengths of all, fields of a sample */
    if ((d = hsi_lcheck_sample(lc, ev)) <= 0) return d;
    hsi_lcheck_fields(lc, ev, hsi_memev_decode(ev, &op), &op);
    return 0;
  }
  d = hsi_memev_decode(ev, &op);
  return d ? hsi_lcheck_add(lc, ev, d, &op) : 0;
}
