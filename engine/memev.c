/*
** memev.c -- the table-driven engine of the memory events: decode
** (hs_event -> hsi_memop), encode (hsi_memop -> payload bytes), the `dump`
** description and the tables' self-check.
**
** The layouts themselves are data, one table per provider in its own file
** (heap.c, valloc.c, pool.c, snapshot.c; row format in memev_tab.h), so
** that decoding, encoding and describing cannot disagree.  Every layout
** is documented only (ETL-FORMAT.md §6.1-6.3, §6.9): no trace we have
** contains these events.
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "heapscript.h"
#include "memop.h"
#include "memev.h"
#include "memev_tab.h"
#include "bytes.h"
#include "text.h"

/* ------------------------------------------------------------ the tables */

/* The providers, in the order hsi_memev_layout_at walks them. */
typedef hsi_memev_table provider;

static const provider *const providers[] = {
  &hsi_heap_table, &hsi_valloc_table, &hsi_pool_table, &hsi_snapshot_table,
};

/* Class GUIDs of the three kernel groups, for classic FULL/INSTANCE records
   (a relogger could write them so) [I]. */
static const struct { int group; hs_guid g; } class_guids[] = {
  { 0x10, { HSI_MEMEV_HEAP_D1, 0x6180, 0x4b88, { 0xa8, 0x25, 0x34, 0x6b, 0x75, 0xf2, 0xa2, 0x4a } } },
  { 0x02, { HSI_MEMEV_PAGEFAULT_D1, 0xfe05, 0x11d0, { 0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c } } },
  { 0x0E, { HSI_MEMEV_POOL_D1, 0x74fd, 0x4302, { 0x9d, 0xd0, 0x6e, 0x8f, 0x17, 0x95, 0xc0, 0xcf } } },
};

/* ------------------------------------------------------------- lookups */

static size_t fwidth(const field *f, int P) {
  switch (f->kind) {
  case K_PTR: case K_SIZE: return (size_t)P;
  case K_U32: return 4;
  case K_U16: return 2;
  default: return 1;
  }
}

static size_t foff(const field *f, int P) { return (size_t)f->np * (size_t)P + f->k; }

/* Bytes a payload must have: the required fields and the tail pad. */
static size_t min_len(const layout *L, int P) {
  size_t n = 0, e;
  unsigned i;
  if (L->flags & L_PROV) return 0;
  for (i = 0; i < L->nf; i++) {
    if (L->f[i].opt) continue;
    e = foff(&L->f[i], P) + fwidth(&L->f[i], P);
    if (e > n) n = e;
  }
  return n + (P == 8 ? L->pad8 : 0);
}

/* Bytes the encoder writes before any blob: every field and the tail pad. */
static size_t full_len(const layout *L, int P) {
  size_t n = 0, e;
  unsigned i;
  for (i = 0; i < L->nf; i++) {
    e = foff(&L->f[i], P) + fwidth(&L->f[i], P);
    if (e > n) n = e;
  }
  return n + (P == 8 ? L->pad8 : 0);
}

static const provider *provider_of(int group) {
  size_t i;
  for (i = 0; i < COUNT(providers); i++)
    if (providers[i]->group == group) return providers[i];
  return NULL;
}

/*
** The row for (type, version): the newest row whose version is <= the
** event's, since newer versions append fields and older decoders keep
** working [I, PerfView does the same]; an event older than every row
** gets the oldest row.
*/
static const layout *pick(const provider *pv, int type, int version) {
  const layout *first = NULL, *best = NULL;
  size_t i;
  for (i = 0; i < pv->n; i++) {
    const layout *L = &pv->tab[i];
    if (L->op != type) continue;
    if (!first) first = L;
    if (L->version <= version) best = L;
  }
  return best ? best : first;
}

static int newest(const provider *pv, int type) {
  int v = -1;
  size_t i;
  for (i = 0; i < pv->n; i++)
    if (pv->tab[i].op == type && pv->tab[i].version > v) v = pv->tab[i].version;
  return v;
}

static int is_classic(int ht) {
  return ht == HS_HT_FULL32 || ht == HS_HT_FULL64 || ht == HS_HT_INSTANCE32 || ht == HS_HT_INSTANCE64;
}

/*
** Every event of a trace passes through classify, so kernel hooks of the
** three memory groups remember their row per (group, type, version):
** the tables are fixed, and a row is found once, not per event.
*/
#define CACHE_V 8
typedef struct plan plan;
static const plan *plan_of(const layout *L, int P);

/* A kernel hook of the memory groups at one version: its row (NULL: not
   a memory event) and the row's plans at P = 4 and 8. */
typedef struct kcell { const layout *L; const plan *pl[2]; uint8_t ready; } kcell;
static kcell kcells[3][256][CACHE_V];

/* The cell of (group slot, type, version), filled when first asked
   (hsi_memev_prepare fills them all before threads decode). */
static const kcell *cell_of(int gs, int g, int t, int v) {
  kcell *c = &kcells[gs][t][v];
  if (!c->ready) {
    c->L = pick(provider_of(g), t, v);
    c->pl[0] = c->L ? plan_of(c->L, 4) : NULL;
    c->pl[1] = c->L ? plan_of(c->L, 8) : NULL;
    c->ready = 1;
  }
  return c;
}

/* The row for an event, or NULL if it is not a memory event; *cell its
   kernel cell, or NULL when it has none.  Inlined into the decoder: it
   runs for every event of a trace. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline const layout *classify_k(const hs_event *ev, int *group, int *type, const kcell **cell) {
  const provider *pv;
  int g = -2, t = 0, v = 0;
  size_t i;
  *cell = NULL;
  if (ev->flags & HS_EVF_KERNEL) {
    int gs;
    g = ev->hook >> 8; t = ev->hook & 0xFF; v = ev->version & 0xFF;  /* PEBS/PMC bits, if left in */
    if ((gs = hsi_memev_group_slot(g)) < 0) return NULL;
    *group = g; *type = t;
    if (v < CACHE_V) {
      *cell = cell_of(gs, g, t, v);
      return (*cell)->L;
    }
  } else if (is_classic(ev->header_type)) {
    for (i = 0; i < COUNT(class_guids); i++)
      if (hs_guid_eq(&ev->provider, &class_guids[i].g)) g = class_guids[i].group;
    t = ev->opcode; v = ev->version & 0xFF;
  } else if (hs_guid_eq(&ev->provider, &hsi_heap_snapshot_guid)) {
    g = HSI_MEMEV_SNAPSHOT; t = ev->id; v = ev->version;
  }
  pv = provider_of(g);
  if (!pv) return NULL;
  *group = g; *type = t;
  return pick(pv, t, v);
}

static const layout *classify(const hs_event *ev, int *group, int *type) {
  const kcell *cell;
  return classify_k(ev, group, type, &cell);
}

/* ----------------------------------------------------- hsi_memop fields */

static uint64_t fetch(const hsi_memop *op, int dest) {
  switch (dest) {
  case M_HEAP: return op->heap;
  case M_ADDR: return op->addr;
  case M_SIZE: return op->size;
  case M_OLD_ADDR: return op->old_addr;
  case M_OLD_SIZE: return op->old_size;
  case M_FLAGS: return op->flags;
  case M_TAG: return op->tag;
  case M_POOLTYPE: return op->pool_type;
  case M_SESSION: return op->session;
  case M_SOURCE: return op->source;
  case M_PID: return op->pid;
  default: return 0;
  }
}

/* Read field f through the cursor; *present is 0 when an optional field
   lies past the end of the payload. */
static uint64_t read_field(const uint8_t *p, size_t len, int P, const field *f, int *present) {
  size_t off = foff(f, P), w = fwidth(f, P);
  *present = off + w <= len;              /* the only bounds check a field needs */
  return *present ? rdw(p + off, (unsigned)w) : 0;
}

/*
** A row compiled for one pointer width: where each field that goes into
** hsi_memop sits and how wide it is, and the row's lengths, worked out
** once instead of per event (every memory event of a trace is decoded).
*/
#define PLAN_FIELDS 16
typedef struct pfield { uint16_t off, doff; uint8_t w, dw; uint64_t mask; } pfield;
typedef struct pmove { uint16_t off, doff; } pmove;
enum { MV_8TO8, MV_4TO8, MV_4TO4, MV_KINDS };
struct plan {
  uint8_t ready, usable;      /* usable: the row fits the plan */
  uint16_t minlen, fulllen;
  uint16_t whole;             /* a payload this long holds every field */
  uint8_t nf;
  /* off, w: in the payload; doff, dw: in hsi_memop (doff PLAN_PID: the
     payload's pid); mask: the low w bytes; f in the row's order.  For a
     payload that holds every field, the same fields as moves by width
     (payload to hsi_memop), each kind in the row's order, unless a field
     moves no such way (odd: 1 or 2 bytes wide); the pid apart, as pid_at:
     its index in f + 1 (the last if several), 0 for none. */
  pfield f[PLAN_FIELDS];
  pmove mv[MV_KINDS][PLAN_FIELDS];
  uint8_t nmv[MV_KINDS];
  uint8_t odd, pid_at;
  hsi_memop tmpl;             /* what every event of the row starts from */
};
#define PLAN_PID 0xFFFF

static plan plans[4][64][2];

/* Where each M_* destination lives in hsi_memop, and its width. */
static const struct { uint16_t off; uint8_t w; } dests[M_LAST] = {
  [M_HEAP] = { offsetof(hsi_memop, heap), 8 },
  [M_ADDR] = { offsetof(hsi_memop, addr), 8 },
  [M_SIZE] = { offsetof(hsi_memop, size), 8 },
  [M_OLD_ADDR] = { offsetof(hsi_memop, old_addr), 8 },
  [M_OLD_SIZE] = { offsetof(hsi_memop, old_size), 8 },
  [M_FLAGS] = { offsetof(hsi_memop, flags), 4 },
  [M_TAG] = { offsetof(hsi_memop, tag), 4 },
  [M_POOLTYPE] = { offsetof(hsi_memop, pool_type), 4 },
  [M_SESSION] = { offsetof(hsi_memop, session), 4 },
  [M_SOURCE] = { offsetof(hsi_memop, source), 4 },
};

static const plan *plan_of(const layout *L, int P) {
  size_t pi, ri, i;
  int w = P == 8, g;
  plan *pl;
  for (pi = 0; pi < COUNT(providers); pi++)
    if (L >= providers[pi]->tab && L < providers[pi]->tab + providers[pi]->n) break;
  if (pi == COUNT(providers) || pi >= 4) return NULL;
  ri = (size_t)(L - providers[pi]->tab);
  if (ri >= 64) return NULL;
  pl = &plans[pi][ri][w];
  if (!pl->ready) {
    pl->usable = L->nf <= PLAN_FIELDS && min_len(L, P) <= 0xFFFF && full_len(L, P) <= 0xFFFF;
    pl->minlen = (uint16_t)min_len(L, P);
    pl->fulllen = (uint16_t)full_len(L, P);
    pl->nf = pl->pid_at = pl->odd = 0;
    memset(pl->nmv, 0, sizeof pl->nmv);
    pl->whole = 0;
    for (i = 0; pl->usable && i < L->nf; i++) {
      const field *f = &L->f[i];
      pfield *x = &pl->f[pl->nf];
      if (f->dest == M_NONE) continue;            /* shown by describe only */
      x->off = (uint16_t)foff(f, P);
      x->w = (uint8_t)fwidth(f, P);
      x->mask = fwidth(f, P) >= 8 ? ~0ull : (1ull << (8 * fwidth(f, P))) - 1;
      x->doff = f->dest == M_PID ? PLAN_PID : dests[f->dest].off;
      x->dw = f->dest == M_PID ? 4 : dests[f->dest].w;
      if (x->off + x->w > pl->whole) pl->whole = (uint16_t)(x->off + x->w);
      if (f->dest == M_PID) {
        pl->pid_at = (uint8_t)(pl->nf + 1);
      } else {
        int k = x->w == 8 && x->dw == 8 ? MV_8TO8 : x->w == 4 && x->dw == 8 ? MV_4TO8
              : x->w == 4 && x->dw == 4 ? MV_4TO4 : -1;
        if (k < 0) pl->odd = 1;
        else {
          pl->mv[k][pl->nmv[k]].off = x->off;
          pl->mv[k][pl->nmv[k]++].doff = x->doff;
        }
      }
      pl->nf++;
    }
    /* The decoder's start (hsi_memev_decode sets ts and the ids): the
       row's op is the event's type, its provider's group the hook's. */
    memset(&pl->tmpl, 0, sizeof pl->tmpl);
    pl->tmpl.kind = L->kind;
    pl->tmpl.subop = L->op;
    g = providers[pi]->group;
    pl->tmpl.hook = g >= 0 ? (uint16_t)(g << 8 | L->op) : 0;
    pl->tmpl.pointer_size = (uint8_t)P;
    pl->tmpl.pid = pl->tmpl.tid = HS_NOID;
    pl->ready = 1;
  }
  return pl->usable ? pl : NULL;
}

static int prepared;

void hsi_memev_prepare(void) {
  size_t pi, ri;
  int gs, t, v;
  static const int groups[3] = { 0x10, 0x02, 0x0E };
  if (prepared) return;
  for (pi = 0; pi < COUNT(providers) && pi < 4; pi++)
    for (ri = 0; ri < providers[pi]->n && ri < 64; ri++) {
      plan_of(&providers[pi]->tab[ri], 4);
      plan_of(&providers[pi]->tab[ri], 8);
    }
  for (gs = 0; gs < 3; gs++)
    for (t = 0; t < 256; t++)
      for (v = 0; v < CACHE_V; v++) (void)cell_of(gs, groups[gs], t, v);
  prepared = 1;
}

/* -------------------------------------------------------------- decode */

/* Decode with the row's plan for the event's pointer size: 1, or -1 when
   the payload is too short for the row or the size is neither 4 nor 8. */
static int run_plan(const plan *pl, const layout *L, const hs_event *ev, hsi_memop *op) {
  const uint8_t *p = ev->payload;
  uint32_t len = ev->payload_len, ppid = HS_NOID;
  int have_ppid = 0;
  unsigned i;
  *op = pl->tmpl;
  op->ts = ev->timestamp;
  if (ev->flags & HS_EVF_HAS_IDS) { op->pid = ev->pid; op->tid = ev->tid; }
  if (ev->pointer_size != pl->tmpl.pointer_size) { op->pointer_size = ev->pointer_size; return -1; }
  if (len < pl->minlen || (!p && len)) return -1;
  if (len >= pl->whole && !pl->odd) {
    /* the usual case: every field there, moved by width without a bound
       to check */
    const pmove *m;
    for (i = 0, m = pl->mv[MV_8TO8]; i < pl->nmv[MV_8TO8]; i++) {
      uint64_t v = rd64(p + m[i].off);
      memcpy((char *)op + m[i].doff, &v, 8);
    }
    for (i = 0, m = pl->mv[MV_4TO8]; i < pl->nmv[MV_4TO8]; i++) {
      uint64_t v = rd32(p + m[i].off);
      memcpy((char *)op + m[i].doff, &v, 8);
    }
    for (i = 0, m = pl->mv[MV_4TO4]; i < pl->nmv[MV_4TO4]; i++) {
      uint32_t v = rd32(p + m[i].off);
      memcpy((char *)op + m[i].doff, &v, 4);
    }
    if (pl->pid_at) {
      const pfield *f = &pl->f[pl->pid_at - 1];
      ppid = (uint32_t)rdw(p + f->off, f->w);
      have_ppid = 1;
    }
  } else {
    for (i = 0; i < pl->nf; i++) {
      uint32_t off = pl->f[i].off, w = pl->f[i].w;
      uint64_t v;
      if (off + 8 <= len) v = rd64(p + off) & pl->f[i].mask;   /* most fields: one load */
      else if (off + w > len) continue;    /* an optional field past the end */
      else v = rdw(p + off, w);
      if (pl->f[i].dw == 8) memcpy((char *)op + pl->f[i].doff, &v, 8);
      else if (pl->f[i].doff != PLAN_PID) { uint32_t v32 = (uint32_t)v; memcpy((char *)op + pl->f[i].doff, &v32, 4); }
      else { ppid = (uint32_t)v; have_ppid = 1; }
    }
  }
  if ((L->flags & L_BLOB) && op->size > (size_t)len - (size_t)pl->fulllen) return -1;
  if (have_ppid && (L->pid == PID_PAYLOAD || (L->pid == PID_HDR_ELSE_PAYLOAD && op->pid == HS_NOID)))
    op->pid = ppid;
  return 1;
}

int hsi_memev_decode(const hs_event *ev, hsi_memop *op) {
  const layout *L;
  const plan *pl;
  const kcell *cell;
  int group = 0, type = 0, w = ev->pointer_size == 8;
  L = classify_k(ev, &group, &type, &cell);
  if (!L) return 0;
  pl = cell ? cell->pl[w] : plan_of(L, w ? 8 : 4);
  if (!pl) {                             /* every row has its plans (hsi_memev_selfcheck) */
    memset(op, 0, sizeof *op);
    op->kind = L->kind;
    return -1;
  }
  return run_plan(pl, L, ev, op);
}

int hsi_memev_row(const hs_event *ev, const char **name, int *version, int *kind,
                  size_t *lo, size_t *hi) {
  int group = 0, type = 0, P = ev->pointer_size == 4 ? 4 : 8;
  const layout *L = classify(ev, &group, &type);
  if (!L) return 0;
  *name = L->name;
  *version = L->version;
  *kind = L->kind;
  *lo = min_len(L, P);
  *hi = (L->flags & (L_BLOB | L_PROV)) || L->nf == 0 ? (size_t)-1 : full_len(L, P);
  return 1;
}

/* -------------------------------------------------------------- encode */

static int kind_group(int kind) {
  switch (kind) {
  case HSI_OP_HEAP_CREATE: case HSI_OP_HEAP_ALLOC: case HSI_OP_HEAP_REALLOC:
  case HSI_OP_HEAP_FREE: case HSI_OP_HEAP_DESTROY: case HSI_OP_HEAP_OTHER: return 0x10;
  case HSI_OP_VALLOC: case HSI_OP_VFREE: case HSI_OP_VALLOC_RUNDOWN: return 0x02;
  case HSI_OP_POOL_ALLOC: case HSI_OP_POOL_FREE: return 0x0E;
  case HSI_OP_SNAPSHOT: return HSI_MEMEV_SNAPSHOT;
  default: return -2;
  }
}

static int kind_type(const hsi_memop *op) {
  int session = (op->pool_type & 0x20) != 0;
  switch (op->kind) {
  case HSI_OP_HEAP_CREATE: return 32;
  case HSI_OP_HEAP_ALLOC: return 33;
  case HSI_OP_HEAP_REALLOC: return 34;
  case HSI_OP_HEAP_DESTROY: return 35;
  case HSI_OP_HEAP_FREE: return 36;
  case HSI_OP_HEAP_OTHER: return op->subop;
  case HSI_OP_VALLOC: return 98;
  case HSI_OP_VFREE: return 99;
  case HSI_OP_VALLOC_RUNDOWN: return 128;
  case HSI_OP_POOL_ALLOC: return session ? 33 : 32;
  case HSI_OP_POOL_FREE: return session ? 35 : 34;
  case HSI_OP_SNAPSHOT: return op->subop > 0 ? op->subop : 100;
  default: return -1;
  }
}

long hsi_memev_encode(const hsi_memop *op, int opcode_hint, int version, int ptr,
                      uint8_t *out, size_t cap, int *group, int *type) {
  const provider *pv;
  const layout *L;
  int g, t;
  size_t len, blob = 0;
  unsigned i;
  if (group) *group = -1;
  if (type) *type = -1;
  if (!op || (ptr != 4 && ptr != 8)) return HS_EARG;
  g = kind_group(op->kind);
  t = kind_type(op);
  if (op->hook && op->kind != HSI_OP_SNAPSHOT) { g = op->hook >> 8; t = op->hook & 0xFF; }
  if (opcode_hint > 0) t = opcode_hint;
  pv = provider_of(g);
  if (!pv || t <= 0) return HS_EARG;
  L = pick(pv, t, version > 0 ? version : newest(pv, t));
  if (!L || L->kind != op->kind) return HS_EARG;
  len = full_len(L, ptr);
  if (L->flags & L_BLOB) {
    if (op->size > 0xFFFF) return HS_EARG;    /* an event is at most 64 KiB (§1.9) */
    blob = (size_t)op->size;
  }
  if (out && cap >= len + blob) {
    memset(out, 0, len + blob);
    for (i = 0; i < L->nf; i++) {
      const field *f = &L->f[i];
      uint8_t *p = out + foff(f, ptr);
      uint64_t v = fetch(op, f->dest);
      switch (fwidth(f, ptr)) {
      case 8: wr64(p, v); break;
      case 4: wr32(p, (uint32_t)v); break;
      case 2: wr16(p, (uint16_t)v); break;
      default: p[0] = (uint8_t)v; break;
      }
    }
  }
  if (group) *group = g;
  if (type) *type = t;
  return (long)(len + blob);
}

/* --------------------------------------------------------------- names */

int hsi_memev_version(int group, int type) {
  const provider *pv = provider_of(group);
  return pv ? newest(pv, type) : -1;
}

const char *hsi_memev_name(int group, int type) {
  const provider *pv = provider_of(group);
  size_t i;
  if (!pv) return NULL;
  for (i = 0; i < pv->n; i++)
    if (pv->tab[i].op == type) return pv->tab[i].name;
  return NULL;
}

int hsi_memev_layout_at(size_t i, int *group, int *type, int *version) {
  size_t p;
  for (p = 0; p < COUNT(providers); p++) {
    if (i < providers[p]->n) {
      if (group) *group = providers[p]->group;
      if (type) *type = providers[p]->tab[i].op;
      if (version) *version = providers[p]->tab[i].version;
      return 1;
    }
    i -= providers[p]->n;
  }
  return 0;
}

/* ------------------------------------------------------------ describe */

typedef struct sbuf { char *p; size_t cap, n; } sbuf;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void put(sbuf *b, const char *fmt, ...) {
  va_list ap;
  int w;
  if (b->cap == 0 || b->n >= b->cap - 1) return;
  va_start(ap, fmt);
  w = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
  va_end(ap);
  if (w < 0) { b->p[b->n] = 0; return; }
  b->n += (size_t)w;
  if (b->n > b->cap - 1) b->n = b->cap - 1;
}

/* The text of s, as put(b, "%s", s) writes it. */
static void put_str(sbuf *b, const char *s) {
  while (*s && b->cap && b->n < b->cap - 1) b->p[b->n++] = *s++;
  if (b->cap) b->p[b->n] = 0;
}

/* v in hex ("0x%llx") or decimal ("%llu"), as put writes them: dump
   describes every memory event, one field at a time. */
static void put_u64(sbuf *b, uint64_t v, int hex) {
  char t[24], *p;
  t[sizeof t - 1] = 0;
  p = hsi_utoa(v, hex, t + sizeof t - 1);
  if (hex) { *--p = 'x'; *--p = '0'; }
  put_str(b, p);
}

static void put_field(sbuf *b, const field *f, uint64_t v) {
  char tmp[HSI_MEMFLAGS_STRLEN];
  const char *s;
  if (b->n) put_str(b, " ");
  put_str(b, f->name);
  put_str(b, "=");
  switch (f->show) {
  case S_HEX: put_u64(b, v, 1); break;
  case S_SOURCE: case S_CALLER:
    s = f->show == S_SOURCE ? hsi_heap_source_name((uint32_t)v) : hsi_heap_caller_name((uint32_t)v);
    if (s) put_str(b, s); else put_u64(b, v, 0);
    break;
  case S_MEMFLAGS: put_str(b, hsi_mem_flags_str((uint32_t)v, tmp, sizeof tmp)); break;
  case S_TAG: hsi_pool_tag((uint32_t)v, tmp); put(b, "'%s'", tmp); break;
  case S_POOLTYPE: put_str(b, hsi_pool_type_str((uint32_t)v, tmp, sizeof tmp)); break;
  default: put_u64(b, v, 0); break;
  }
}

size_t hsi_memev_describe(const hs_event *ev, char *out, size_t cap) {
  sbuf b;
  const layout *L;
  hsi_memop op;
  int group = 0, type = 0, P = ev->pointer_size, present, rc;
  size_t need, have = ev->payload_len, end = 0;
  unsigned i;
  b.p = out; b.cap = cap; b.n = 0;
  if (cap) out[0] = 0;
  L = classify(ev, &group, &type);
  if (!L) return 0;
  rc = hsi_memev_decode(ev, &op);   /* one verdict on damage for dump and the tracker */
  if (P != 4 && P != 8) { put(&b, "damaged: pointer size %d", P); return b.n; }
  if (rc < 0) {
    need = min_len(L, P);
    if ((L->flags & L_BLOB) && have >= need) need += (size_t)op.size;
    put(&b, "damaged: payload %lu bytes, %s v%d needs %lu at P=%d", (unsigned long)have,
        L->name, L->version, (unsigned long)need, P);
    return b.n;
  }
  if (L->nf == 0) { put(&b, "layout unknown, payload %lu bytes", (unsigned long)have); return b.n; }
  for (i = 0; i < L->nf; i++) {
    const field *f = &L->f[i];
    uint64_t v = read_field(ev->payload, have, P, f, &present);
    if (!present) continue;
    put_field(&b, f, v);
    end = foff(f, P) + fwidth(f, P);
    if ((L->flags & L_BLOB) && f->dest == M_SIZE) end += (size_t)v;
  }
  if (P == 8 && end) end += L->pad8;
  if (have > end) put(&b, "%s+%lu bytes", b.n ? " " : "", (unsigned long)(have - end));
  if (L->flags & L_PROV) put(&b, "%s(provisional layout)", b.n ? " " : "");
  return b.n;
}

/* ----------------------------------------------------------- selfcheck */

int hsi_memev_selfcheck(char *err, size_t errlen) {
  size_t p, i, j;
  int P;
#define FAIL(...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)
  for (p = 0; p < COUNT(providers); p++) {
    const provider *pv = providers[p];
    for (i = 0; i < pv->n; i++) {
      const layout *L = &pv->tab[i];
      if (!L->name || (L->nf && !L->f)) FAIL("group %d op %d: no name or fields", pv->group, L->op);
      if (kind_group(L->kind) != pv->group && L->kind != HSI_OP_HEAP_OTHER)
        FAIL("%s: kind %d does not belong to group %d", L->name, L->kind, pv->group);
      if (i > 0) {
        const layout *Q = &pv->tab[i - 1];
        if (Q->op > L->op || (Q->op == L->op && Q->version >= L->version))
          FAIL("%s v%d: rows not sorted by opcode and version", L->name, L->version);
        if (Q->op == L->op && (Q->kind != L->kind || strcmp(Q->name, L->name) != 0))
          FAIL("%s v%d: kind or name differs between versions", L->name, L->version);
      }
      for (P = 4; P <= 8; P += 4) {
        size_t at = 0;
        int seen_opt = 0;
        for (j = 0; j < L->nf; j++) {
          const field *f = &L->f[j];
          size_t k;
          if (f->kind < K_PTR || f->kind > K_U8 || f->dest >= M_LAST)
            FAIL("%s v%d field %s: bad kind or destination", L->name, L->version, f->name);
          if (foff(f, P) != at)   /* packed: each field starts where the last ended */
            FAIL("%s v%d field %s: offset %lu at P=%d, expected %lu", L->name, L->version, f->name,
                 (unsigned long)foff(f, P), P, (unsigned long)at);
          at += fwidth(f, P);
          if (f->opt) seen_opt = 1;
          else if (seen_opt) FAIL("%s v%d field %s: required after optional", L->name, L->version, f->name);
          for (k = 0; k < j; k++)
            if (f->dest != M_NONE && L->f[k].dest == f->dest)
              FAIL("%s v%d field %s: destination used twice", L->name, L->version, f->name);
        }
        if ((L->flags & L_BLOB) && (L->pad8 || seen_opt))
          FAIL("%s: a blob must follow the fields directly", L->name);
        if (p >= 4 || i >= 64 || !plan_of(L, P))
          FAIL("%s v%d: no decoding plan at P=%d (at most %d fields, 64 rows)", L->name, L->version, P,
               PLAN_FIELDS);
      }
    }
  }
#undef FAIL
  if (err && errlen) err[0] = 0;
  return 0;
}
