/*
** lifetime.c -- heap blocks, committed VirtualAlloc ranges and pool
** entries as allocation records (LIFETIMES.md; layout in lifetime.h).
**
** The record store lives here, as columns owned by the tracker: query.c
** reads them through hsi_life_recs() and never writes them.
**
** Pairing of frees with allocs follows the idea of heaptrack's pointer
** map: keep as little as possible per live pointer.  Each heap of each
** process instance has one open-addressed table of 8-byte slots (32-bit
** hash, 32-bit record index); the address is not stored again but read
** back from the record column, and the hash makes a false comparison
** rare.  A table doubles before it is half full (probe runs stay short:
** every free looks its block up and shifts the run behind it back),
** deletion shifts entries back instead of leaving tombstones, and a
** table halves when it falls under 1/8 full, so it shrinks as blocks are
** freed.  One table per heap makes HeapDestroy a walk of that heap's
** table only.  Pool entries share one such table (kernel addresses,
** whatever the process).
**
** VirtualAlloc state per instance is three treaps of disjoint ranges
** keyed by start, in one node pool (a free list, no allocation per
** node): committed ranges (each a record), reservations, and pages known
** to be decommitted.  Every operation is O(log n + ranges touched).
**
** Why the choices listed in lifetime.h:
**  - Moving realloc: only lifetime events count as "heap records on the
**    thread" because the others (lock, subsegment, commit) describe the
**    heap's own bookkeeping and may be logged inside the same HeapReAlloc
**    call; letting them break the pattern would count the block twice.
**    Either order of Alloc and Free is accepted: both are inside one call
**    and the rule names the pair, not an order.
**  - An Alloc of a live address cannot happen in a sound trace: the Free
**    was lost (ETW drops events under load).  Ending the old record there
**    bounds the error to the time the two coexisted; keeping it would
**    report a leak that is not one.
**  - Double free vs before the trace: a Free of a block the trace saw
**    freed says nothing about memory allocated before the trace, so it
**    makes no record.  Remembering every freed address would grow with
**    events, so only a fixed cache of recent frees is kept; an older
**    double free is taken for a before-trace block.
**  - MEM_RELEASE reports the reserved size, not what was committed, so
**    for a region never seen it cannot say what it freed.  A decommit
**    names committed pages exactly; pages the trace knows were not
**    committed (reserved in the trace, or decommitted already) are not
**    before-trace memory.  After a release the range is free address
**    space, where no decommit can follow, so the tracker forgets it.
**  - Pool memory belongs to the kernel and outlives the process that
**    asked for it, so process end leaves pool entries alone.
*/
#include <stdlib.h>
#include <string.h>
#include "hash.h"
#include "lifetime.h"
#include "vmem.h"

#define RF_PENDING 0x80u        /* split while its alloc stack was unknown: see set_stack */
#define MAX_RECS   0xFFFFFFFEu  /* slots store rec + 1 in 32 bits */
#define DEAD_BITS  16           /* recent-free cache: 65536 slots, 256 KiB */
#define RESV_RUNDOWN 1u         /* reservation node from a rundown: commit state unknown */

/* ------------------------------------------------------------- vectors */

typedef struct vec32 { uint32_t *p; size_t n, cap; } vec32;
typedef struct vec64 { uint64_t *p; size_t n, cap; } vec64;

/* ------------------------------------------------------- live-block map */

typedef struct livemap { uint64_t *slot; uint32_t cap, n; } livemap;

struct hop { uint64_t heap, addr; uint32_t rec; uint8_t kind; };
struct thr { uint32_t tid, inst; uint8_t used, n; struct hop h[2]; };

/* A range in a treap; node 0 is nil. */
struct ivn { uint64_t s, e; uint32_t rec, l, r, pri; };

struct inst {
  uint32_t id, pid;
  uint32_t commit, resv, clear; /* treap roots */
  uint32_t heap_first, heap_last; /* its heaps (hh index + 1), oldest first, through next_inst */
  int exited;                   /* its process ended (hsi_life_exited): its blocks stay, it frees none */
};

/* The live blocks of one heap of one instance; its instance's next heap
   and the next heap of the same handle (hh index + 1, 0: none), so that a
   process end and a block's owner look at their own heaps only. */
struct hheap {
  uint64_t heap;
  uint32_t inst, next_inst, next_handle;
  livemap m;
};

struct hsi_life {
  hsi_recs r;
  size_t cap;
  int err;
  hsi_life_stats st;
  int64_t first_ts, last_ts, span_first, span_last;
  int have_ts, have_span;
  /* instances: array plus an open-addressed index (slot = index + 1) */
  struct inst *in;
  size_t nin, capin;
  uint32_t *imap, imap_cap;
  uint32_t last_id, last_ix;
  int have_last;
  /* heaps: array plus an open-addressed index on (instance, heap), and
     one on the handle alone (its newest heap; the others by next_handle) */
  struct hheap *hh;
  size_t nhh, caphh;
  uint32_t *hmap, hmap_cap, last_hh;
  uint32_t *hkmap, hkmap_cap, nhk;
  int have_last_hh;
  livemap pool;
  uint32_t *dead;               /* recent frees: record + 1, direct-mapped */
  struct thr *thr;              /* per-thread heap history, open-addressed by tid */
  uint32_t thr_cap, nthr;
  /* the last heap Free of no thread (no ids, no StackWalk) that ended a
     block, for the moving-realloc summary (heap_realloc); heap_ops counts
     heap memops, so that it is recognised only as one of the last few */
  struct { uint64_t heap, addr, at; uint32_t inst, rec; } nofree;
  uint64_t heap_ops;
  struct ivn *nodes;
  uint32_t nnodes, capnodes, freenode, rng;
  size_t live_vm;
  vec32 ended, work;
  vec64 ids, tri, gap, p1, p2, pend;
  uint32_t new_first, new_count;
  /* outstanding bytes per kind (and of all kinds, [HSI_KIND_COUNT]) as
     the events come, for hsi_life_peak */
  struct run { uint64_t v, peak; int64_t peak_ts; int have_peak; } run[HSI_KIND_COUNT + 1];
  size_t nkind[HSI_KIND_COUNT];
  int64_t tick;                 /* of the last move */
  unsigned allocd;              /* 1 << kind: an alloc in that tick */
};

static int v32_push(hsi_life *L, vec32 *v, uint32_t x) {
  if (v->n == v->cap) {
    size_t nc = v->cap ? v->cap * 2 : 64;
    uint32_t *p = realloc(v->p, nc * sizeof *p);
    if (!p) { L->err = HS_ENOMEM; return -1; }
    v->p = p; v->cap = nc;
  }
  v->p[v->n++] = x;
  return 0;
}

static int v64_push(hsi_life *L, vec64 *v, uint64_t x) {
  if (v->n == v->cap) {
    size_t nc = v->cap ? v->cap * 2 : 64;
    uint64_t *p = realloc(v->p, nc * sizeof *p);
    if (!p) { L->err = HS_ENOMEM; return -1; }
    v->p = p; v->cap = nc;
  }
  v->p[v->n++] = x;
  return 0;
}

static int v64_pair(hsi_life *L, vec64 *v, uint64_t a, uint64_t b) {
  return v64_push(L, v, a) || v64_push(L, v, b) ? -1 : 0;
}

/* ---------------------------------------------------------------- hashes */

/*
** The hashes of every memory operation: one multiply.  The high half of
** the product depends on every bit of the key (the low half of an aligned
** address would not), and folding the key's high bits in first spreads
** keys that differ only above bit 32.  hsi_mix64 serves the rare searches.
*/
static inline uint32_t mul_hash(uint64_t x) {
  return (uint32_t)(((x ^ x >> 32) * 0x9E3779B97F4A7C15ULL) >> 32);
}

static inline uint32_t addr_hash(uint64_t addr) { return mul_hash(addr); }

static inline uint32_t dead_slot(uint32_t h, uint32_t inst, uint64_t heap) {
  return (h ^ (inst * 2654435761u) ^ mul_hash(heap)) & ((1u << DEAD_BITS) - 1);
}

/* --------------------------------------------------------------- records */

/*
** The running outstanding bytes give the peak of a kind over the whole
** trace without sorting the records' times afterwards (query.c's sweep
** over every record of a kind would).  The sweep applies, at each time,
** the frees before the allocs and looks after each alloc; so its peak is
** the largest value at the end of a time (tick) that has an alloc, the
** first such tick on a tie.  Only records that count in outstanding
** bytes move the values (not before-trace, size known); a piece split
** off a committed range was counted with the range.
*/
/* The tick ends: the kinds that had an alloc in it (bits of L->allocd)
   may have a new peak. */
static void run_peak(struct run *u, int64_t tick) {
  if (u->v > u->peak) { u->peak = u->v; u->peak_ts = tick; u->have_peak = 1; }
}

typedef char run_close_knows_three_kinds[HSI_KIND_COUNT == 3 ? 1 : -1];

static void run_close(hsi_life *L) {
  static const unsigned char low[1u << HSI_KIND_COUNT] = { 0, 0, 1, 0, 2, 0, 1, 0 };
  unsigned b = L->allocd & ((1u << HSI_KIND_COUNT) - 1);
  run_peak(&L->run[HSI_KIND_COUNT], L->tick);  /* every alloc sets its bit */
  for (; b; b &= b - 1) run_peak(&L->run[low[b]], L->tick);
  L->allocd = 0;
}

static inline void run_move(hsi_life *L, uint32_t i, int64_t ts, int alloc) {
  unsigned k = L->r.kind[i] < HSI_KIND_COUNT ? L->r.kind[i] : HSI_KIND_COUNT;
  uint64_t sz = L->r.size[i];
  if (ts != L->tick) {
    if (L->allocd) run_close(L);
    L->tick = ts;
  }
  if (alloc) {
    L->run[k].v += sz;
    L->run[HSI_KIND_COUNT].v += sz;
    L->allocd |= 1u << k | 1u << HSI_KIND_COUNT;
  } else {
    L->run[k].v -= sz;
    L->run[HSI_KIND_COUNT].v -= sz;
  }
}

/* The twelve columns, for growing, trimming and freeing them together. */
#define COLUMNS(X) X(kind) X(flags) X(reason) X(source) X(inst) X(key) \
                   X(addr) X(size) X(ts_alloc) X(ts_free) X(stk_alloc) X(stk_free)

/* Every column from `from` to `to` records, or none (-1): a column that
   cannot be resized puts those done back, so all keep one capacity. */
static int resize_recs(hsi_recs *r, size_t from, size_t to) {
  int done = 0, k = 0;
  void *q;
#define RESIZE(c) if (!(q = hsi_vgrow(r->c, from * sizeof *r->c, to * sizeof *r->c))) goto fail; \
                  r->c = q; done++;
  COLUMNS(RESIZE)
#undef RESIZE
  return 0;
fail:
#define BACK(c) if (k++ < done && (q = hsi_vgrow(r->c, to * sizeof *r->c, from * sizeof *r->c)) != NULL) r->c = q;
  COLUMNS(BACK)
#undef BACK
  return -1;
}

static int grow_recs(hsi_life *L) {
  size_t nc = L->cap ? L->cap + L->cap / 2 : 1024;
  if (L->cap >= MAX_RECS) { L->err = HS_ENOMEM; return -1; }
  if (nc > MAX_RECS) nc = MAX_RECS;
  if (resize_recs(&L->r, L->cap, nc)) { L->err = HS_ENOMEM; return -1; }
  L->cap = nc;
  return 0;
}

/* A record's size: a damaged event's past HSI_SIZE_MAX is taken as it. */
static inline uint64_t capped(uint64_t size) { return size < HSI_SIZE_MAX ? size : HSI_SIZE_MAX; }

static inline uint32_t newrec(hsi_life *L, int kind, uint32_t inst, uint64_t key, uint64_t addr,
                       uint64_t size, int64_t ts, unsigned flags, unsigned source) {
  hsi_recs *r = &L->r;
  size_t i = r->n;
  if (i == L->cap && grow_recs(L)) return HSI_NOREC;
  r->kind[i] = (uint8_t)kind;
  r->flags[i] = (uint8_t)flags;
  r->reason[i] = HSI_END_NONE;
  r->source[i] = (uint8_t)(source > 255 ? 255 : source);
  r->inst[i] = inst;
  r->key[i] = key;
  r->addr[i] = addr;
  r->size[i] = capped(size);
  r->ts_alloc[i] = ts;
  r->ts_free[i] = HSI_TS_NEVER;
  r->stk_alloc[i] = 0;
  r->stk_free[i] = 0;
  r->n++;
  if (kind >= 0 && kind < HSI_KIND_COUNT) L->nkind[kind]++;
  L->st.records++;
  if (flags & HSI_RF_BEFORE) L->st.before_records++;
  return (uint32_t)i;
}

/* A record this memop starts: its alloc event is the memop. */
static inline uint32_t startrec(hsi_life *L, int kind, uint32_t inst, uint64_t key, uint64_t addr,
                         uint64_t size, int64_t ts, unsigned flags, unsigned source) {
  uint32_t i = newrec(L, kind, inst, key, addr, size, ts, flags, source);
  if (i == HSI_NOREC) return i;
  if (hsi_rec_counts(&L->r, i)) run_move(L, i, ts, 1);
  if (!L->new_count) L->new_first = i;
  L->new_count++;
  return i;
}

static inline void endrec(hsi_life *L, uint32_t i, int64_t ts, int reason) {
  if (hsi_rec_counts(&L->r, i)) run_move(L, i, ts, 0);
  L->r.ts_free[i] = ts;
  L->r.reason[i] = (uint8_t)reason;
  v32_push(L, &L->ended, i);
}

/* A record allocated before the trace and ended by this memop. */
static uint32_t beforerec(hsi_life *L, int kind, uint32_t inst, uint64_t key, uint64_t addr,
                          uint64_t size, int known, int64_t ts, int reason) {
  unsigned fl = HSI_RF_BEFORE | (known ? 0u : HSI_RF_SIZE_UNKNOWN);
  uint32_t i = newrec(L, kind, inst, key, addr, known ? size : 0, HSI_TS_BEFORE, fl, 0);
  if (i != HSI_NOREC) endrec(L, i, ts, reason);
  return i;
}

/* --------------------------------------------------------- live-block map */

static int lm_resize(hsi_life *L, livemap *m, uint32_t ncap) {
  uint64_t *ns = calloc(ncap, sizeof *ns);
  uint32_t i, mask = ncap - 1;
  if (!ns) { L->err = HS_ENOMEM; return -1; }
  for (i = 0; i < m->cap; i++) {
    uint64_t s = m->slot[i];
    uint32_t j;
    if (!s) continue;
    for (j = (uint32_t)(s >> 32) & mask; ns[j]; j = (j + 1) & mask) {}
    ns[j] = s;
  }
  free(m->slot);
  m->slot = ns;
  m->cap = ncap;
  return 0;
}

/* The record live at addr, or HSI_NOREC; *pos its slot. */
static inline uint32_t lm_find(const hsi_life *L, const livemap *m, uint32_t h, uint64_t addr,
                        uint32_t *pos) {
  uint32_t mask, i;
  if (!m->cap) return HSI_NOREC;
  mask = m->cap - 1;
  for (i = h & mask;; i = (i + 1) & mask) {
    uint64_t s = m->slot[i];
    if (!s) return HSI_NOREC;
    if ((uint32_t)(s >> 32) == h) {
      uint32_t r = (uint32_t)s - 1;
      if (L->r.addr[r] == addr) { *pos = i; return r; }
    }
  }
}

static inline int lm_insert(hsi_life *L, livemap *m, uint32_t h, uint32_t rec) {
  uint32_t mask, i;
  if ((uint64_t)(m->n + 1) * 2 > (uint64_t)m->cap) {
    if (m->cap >= 0x80000000u) { L->err = HS_ENOMEM; return -1; }
    if (lm_resize(L, m, m->cap ? m->cap * 2 : 16)) return -1;
  }
  mask = m->cap - 1;
  for (i = h & mask; m->slot[i]; i = (i + 1) & mask) {}
  m->slot[i] = ((uint64_t)h << 32) | ((uint64_t)rec + 1);
  m->n++;
  return 0;
}

/* Backward-shift deletion keeps every probe chain unbroken without tombstones. */
static inline void lm_delete(hsi_life *L, livemap *m, uint32_t pos) {
  uint32_t mask = m->cap - 1, i = pos, j = pos;
  for (;;) {
    uint64_t s;
    uint32_t k;
    j = (j + 1) & mask;
    s = m->slot[j];
    if (!s) break;
    k = (uint32_t)(s >> 32) & mask;
    if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
      m->slot[i] = s;
      i = j;
    }
  }
  m->slot[i] = 0;
  m->n--;
  if (m->cap > 16 && (uint64_t)m->n * 8 < m->cap) {
    int e = L->err;
    if (lm_resize(L, m, m->cap / 2)) L->err = e;  /* not shrinking is no error */
  }
}

static void lm_free(livemap *m) {
  free(m->slot);
  m->slot = NULL;
  m->cap = m->n = 0;
}

/* ------------------------------------------------------------ instances */

/* The instance `id` (made when new): get_inst, past its last answer. */
static struct inst *get_inst_search(hsi_life *L, uint32_t id, uint32_t pid) {
  uint32_t mask, i;
  struct inst *I;
  if (L->imap_cap) {
    mask = L->imap_cap - 1;
    for (i = hsi_mix64(id) & mask; L->imap[i]; i = (i + 1) & mask)
      if (L->in[L->imap[i] - 1].id == id) {
        L->last_id = id; L->last_ix = L->imap[i] - 1; L->have_last = 1;
        I = &L->in[L->last_ix];
        goto found;
      }
  }
  if (L->nin == L->capin) {
    size_t nc = L->capin ? L->capin * 2 : 16;
    struct inst *p = realloc(L->in, nc * sizeof *p);
    if (!p) { L->err = HS_ENOMEM; return NULL; }
    L->in = p; L->capin = nc;
  }
  if ((L->nin + 1) * 2 > L->imap_cap) {
    uint32_t nc = L->imap_cap ? L->imap_cap * 2 : 64, k;
    uint32_t *nm = calloc(nc, sizeof *nm);
    if (!nm) { L->err = HS_ENOMEM; return NULL; }
    for (k = 0; k < L->nin; k++) {
      for (i = hsi_mix64(L->in[k].id) & (nc - 1); nm[i]; i = (i + 1) & (nc - 1)) {}
      nm[i] = k + 1;
    }
    free(L->imap);
    L->imap = nm; L->imap_cap = nc;
  }
  mask = L->imap_cap - 1;
  for (i = hsi_mix64(id) & mask; L->imap[i]; i = (i + 1) & mask) {}
  L->imap[i] = (uint32_t)L->nin + 1;
  I = &L->in[L->nin];
  memset(I, 0, sizeof *I);
  I->id = id;
  I->pid = HS_NOID;
  L->last_id = id; L->last_ix = (uint32_t)L->nin; L->have_last = 1;
  L->nin++;
found:
  if (I->pid == HS_NOID) I->pid = pid;
  return I;
}

/* Every memory operation asks, mostly for the instance asked for last:
   that answer inline, the search out of line. */
static inline struct inst *get_inst(hsi_life *L, uint32_t id, uint32_t pid) {
  if (L->have_last && L->last_id == id) {
    struct inst *I = &L->in[L->last_ix];
    if (I->pid == HS_NOID) I->pid = pid;
    return I;
  }
  return get_inst_search(L, id, pid);
}

static struct inst *find_inst(const hsi_life *L, uint32_t id) {
  uint32_t mask, i;
  if (!L->imap_cap) return NULL;
  mask = L->imap_cap - 1;
  for (i = hsi_mix64(id) & mask; L->imap[i]; i = (i + 1) & mask)
    if (L->in[L->imap[i] - 1].id == id) return &L->in[L->imap[i] - 1];
  return NULL;
}

/* The slot of handle `heap` in the handle index (its entry, or the empty
   slot where it goes); the index has room. */
static uint32_t hk_slot(const hsi_life *L, const uint32_t *map, uint32_t cap, uint64_t heap) {
  uint32_t mask = cap - 1, i;
  for (i = (uint32_t)hsi_mix64(heap) & mask; map[i] && L->hh[map[i] - 1].heap != heap; i = (i + 1) & mask) {}
  return i;
}

/* Index heap hh[k] under its handle: 0, or -1 out of memory. */
static int hk_add(hsi_life *L, uint32_t k) {
  uint32_t i;
  if ((L->nhk + 1) * 2 > L->hkmap_cap) {
    uint32_t nc = L->hkmap_cap ? L->hkmap_cap * 2 : 64, j;
    uint32_t *nm = calloc(nc, sizeof *nm);
    if (!nm) { L->err = HS_ENOMEM; return -1; }
    for (j = 0; j < L->hkmap_cap; j++)
      if (L->hkmap[j]) nm[hk_slot(L, nm, nc, L->hh[L->hkmap[j] - 1].heap)] = L->hkmap[j];
    free(L->hkmap);
    L->hkmap = nm; L->hkmap_cap = nc;
  }
  i = hk_slot(L, L->hkmap, L->hkmap_cap, L->hh[k].heap);
  if (L->hkmap[i]) L->hh[k].next_handle = L->hkmap[i];
  else L->nhk++;
  L->hkmap[i] = k + 1;
  return 0;
}

/* The live-block map of (instance I, heap), made when create is set and
   none: get_heap, past its last answer. */
static livemap *get_heap_search(hsi_life *L, struct inst *I, uint64_t heap, int create) {
  uint32_t mask, i, inst = I->id;
  struct hheap *H;
  uint64_t hk;
  hk = hsi_mix64(heap ^ ((uint64_t)inst << 32 | inst));
  if (L->hmap_cap) {
    mask = L->hmap_cap - 1;
    for (i = (uint32_t)hk & mask; L->hmap[i]; i = (i + 1) & mask) {
      H = &L->hh[L->hmap[i] - 1];
      if (H->heap == heap && H->inst == inst) {
        L->last_hh = L->hmap[i] - 1; L->have_last_hh = 1;
        return &H->m;
      }
    }
  }
  if (!create) return NULL;
  if (L->nhh == L->caphh) {
    size_t nc = L->caphh ? L->caphh * 2 : 16;
    struct hheap *p = realloc(L->hh, nc * sizeof *p);
    if (!p) { L->err = HS_ENOMEM; return NULL; }
    L->hh = p; L->caphh = nc;
  }
  if ((L->nhh + 1) * 2 > L->hmap_cap) {
    uint32_t nc = L->hmap_cap ? L->hmap_cap * 2 : 64, k;
    uint32_t *nm = calloc(nc, sizeof *nm);
    if (!nm) { L->err = HS_ENOMEM; return NULL; }
    for (k = 0; k < L->nhh; k++) {
      uint64_t kk = hsi_mix64(L->hh[k].heap ^ ((uint64_t)L->hh[k].inst << 32 | L->hh[k].inst));
      for (i = (uint32_t)kk & (nc - 1); nm[i]; i = (i + 1) & (nc - 1)) {}
      nm[i] = k + 1;
    }
    free(L->hmap);
    L->hmap = nm; L->hmap_cap = nc;
  }
  H = &L->hh[L->nhh];
  memset(H, 0, sizeof *H);
  H->heap = heap;
  H->inst = inst;
  if (hk_add(L, (uint32_t)L->nhh)) return NULL;
  mask = L->hmap_cap - 1;
  for (i = (uint32_t)hk & mask; L->hmap[i]; i = (i + 1) & mask) {}
  L->hmap[i] = (uint32_t)L->nhh + 1;
  if (I->heap_last) L->hh[I->heap_last - 1].next_inst = (uint32_t)L->nhh + 1;
  else I->heap_first = (uint32_t)L->nhh + 1;
  I->heap_last = (uint32_t)L->nhh + 1;
  L->last_hh = (uint32_t)L->nhh; L->have_last_hh = 1;
  L->nhh++;
  return &H->m;
}

static inline livemap *get_heap(hsi_life *L, struct inst *I, uint64_t heap, int create) {
  if (L->have_last_hh && L->hh[L->last_hh].heap == heap && L->hh[L->last_hh].inst == I->id)
    return &L->hh[L->last_hh].m;
  return get_heap_search(L, I, heap, create);
}

/* End every block of a heap map (destroy, process end) and empty it. */
static size_t heap_end_all(hsi_life *L, livemap *m, int64_t ts, int reason) {
  uint32_t i;
  size_t n = 0;
  for (i = 0; i < m->cap; i++) {
    uint64_t s = m->slot[i];
    uint32_t r;
    if (!s) continue;
    r = (uint32_t)s - 1;
    endrec(L, r, ts, reason);
    L->dead[dead_slot((uint32_t)(s >> 32), L->r.inst[r], L->r.key[r])] = r + 1;
    n++;
  }
  lm_free(m);
  return n;
}

/* ------------------------------------------------------- thread history */

/* The history of thread tid (made when new); the table grows only when a
   thread is added, so a thread seen before costs its probe alone. */
static struct thr *get_thr(hsi_life *L, uint32_t tid, uint32_t inst) {
  uint32_t mask, i;
  struct thr *t;
  if (tid == HS_NOID) return NULL;
  if (L->thr_cap) {
    mask = L->thr_cap - 1;
    for (i = mul_hash(tid) & mask; L->thr[i].used; i = (i + 1) & mask)
      if (L->thr[i].tid == tid) {
        t = &L->thr[i];
        if (t->inst != inst) { t->inst = inst; t->n = 0; }  /* the tid was reused */
        return t;
      }
  }
  if ((L->nthr + 1) * 2 > L->thr_cap) {
    uint32_t nc = L->thr_cap ? L->thr_cap * 2 : 64, k;
    struct thr *nt = calloc(nc, sizeof *nt);
    if (!nt) { L->err = HS_ENOMEM; return NULL; }
    for (k = 0; k < L->thr_cap; k++) {
      if (!L->thr[k].used) continue;
      for (i = mul_hash(L->thr[k].tid) & (nc - 1); nt[i].used; i = (i + 1) & (nc - 1)) {}
      nt[i] = L->thr[k];
    }
    free(L->thr);
    L->thr = nt; L->thr_cap = nc;
  }
  mask = L->thr_cap - 1;
  for (i = mul_hash(tid) & mask; L->thr[i].used; i = (i + 1) & mask) {}
  t = &L->thr[i];
  t->used = 1; t->tid = tid; t->inst = inst; t->n = 0;
  L->nthr++;
  return t;
}

static void hist_push(struct thr *t, int kind, uint64_t heap, uint64_t addr, uint32_t rec) {
  if (!t) return;
  t->h[0] = t->h[1];
  t->h[1].kind = (uint8_t)kind;
  t->h[1].heap = heap;
  t->h[1].addr = addr;
  t->h[1].rec = rec;
  if (t->n < 2) t->n++;
}

/* ----------------------------------------------------------------- treaps */

static uint32_t newnode(hsi_life *L, uint64_t s, uint64_t e, uint32_t rec) {
  uint32_t n;
  struct ivn *N;
  if (L->freenode) {
    n = L->freenode;
    L->freenode = L->nodes[n].l;
  } else {
    if (L->nnodes == L->capnodes) {
      uint32_t nc = L->capnodes ? L->capnodes * 2 : 64;
      struct ivn *p = realloc(L->nodes, (size_t)nc * sizeof *p);
      if (!p) { L->err = HS_ENOMEM; return 0; }
      L->nodes = p; L->capnodes = nc;
      if (!L->nnodes) { memset(&p[0], 0, sizeof p[0]); L->nnodes = 1; }
    }
    n = L->nnodes++;
  }
  N = &L->nodes[n];
  N->s = s; N->e = e; N->rec = rec; N->l = N->r = 0;
  L->rng ^= L->rng << 13; L->rng ^= L->rng >> 17; L->rng ^= L->rng << 5;
  N->pri = L->rng;
  return n;
}

static void freenode(hsi_life *L, uint32_t n) {
  L->nodes[n].l = L->freenode;
  L->freenode = n;
}

/* a: starts < k; b: starts >= k. */
static void tsplit(struct ivn *N, uint32_t t, uint64_t k, uint32_t *a, uint32_t *b) {
  if (!t) { *a = *b = 0; return; }
  if (N[t].s < k) { tsplit(N, N[t].r, k, &N[t].r, b); *a = t; }
  else { tsplit(N, N[t].l, k, a, &N[t].l); *b = t; }
}

static uint32_t tmerge(struct ivn *N, uint32_t a, uint32_t b) {
  if (!a) return b;
  if (!b) return a;
  if (N[a].pri > N[b].pri) { N[a].r = tmerge(N, N[a].r, b); return a; }
  N[b].l = tmerge(N, a, N[b].l);
  return b;
}

static int tree_insert(hsi_life *L, uint32_t *root, uint64_t s, uint64_t e, uint32_t rec) {
  uint32_t n = newnode(L, s, e, rec), a, b;
  if (!n) return -1;
  tsplit(L->nodes, *root, s, &a, &b);
  *root = tmerge(L->nodes, tmerge(L->nodes, a, n), b);
  return 0;
}

static void tree_free(hsi_life *L, uint32_t t) {
  while (t) {
    uint32_t r = L->nodes[t].r;
    tree_free(L, L->nodes[t].l);
    freenode(L, t);
    t = r;
  }
}

static void tree_remove(hsi_life *L, uint32_t *root, uint64_t s) {
  uint32_t a, b, m, c;
  tsplit(L->nodes, *root, s, &a, &b);
  tsplit(L->nodes, b, s + 1, &m, &c);
  tree_free(L, m);
  *root = tmerge(L->nodes, a, c);
}

/* The node with the greatest start <= x, or 0. */
static uint32_t tree_le(const struct ivn *N, uint32_t t, uint64_t x) {
  uint32_t best = 0;
  while (t) {
    if (N[t].s <= x) { best = t; t = N[t].r; }
    else t = N[t].l;
  }
  return best;
}

/* Nodes overlapping [a, b), in order, appended to v.  Ranges are disjoint,
   so a left subtree ends before its root starts and a right one starts
   after its root ends. */
static void tree_collect(hsi_life *L, uint32_t t, uint64_t a, uint64_t b, vec64 *v) {
  while (t) {
    const struct ivn *n = &L->nodes[t];
    uint32_t r = n->r;
    int right = n->e < b;
    if (n->s > a) tree_collect(L, n->l, a, b, v);
    n = &L->nodes[t];
    if (n->s < b && n->e > a) v64_push(L, v, t);
    if (!right) break;
    t = r;
  }
}

/* Take [a, b) out of a tree of plain ranges (reservations, decommitted). */
static void range_cut(hsi_life *L, uint32_t *root, uint64_t a, uint64_t b) {
  size_t k;
  L->ids.n = 0;
  tree_collect(L, *root, a, b, &L->ids);
  L->tri.n = 0;
  for (k = 0; k < L->ids.n; k++) {
    const struct ivn *n = &L->nodes[L->ids.p[k]];
    v64_push(L, &L->tri, n->s); v64_push(L, &L->tri, n->e); v64_push(L, &L->tri, n->rec);
  }
  for (k = 0; k + 3 <= L->tri.n; k += 3) {
    uint64_t s = L->tri.p[k], e = L->tri.p[k + 1];
    uint32_t rec = (uint32_t)L->tri.p[k + 2];
    tree_remove(L, root, s);
    if (s < a) tree_insert(L, root, s, a, rec);
    if (e > b) tree_insert(L, root, b, e, rec);
  }
}

/* out = the ranges of `in` (pairs) not covered by the tree's nodes. */
static void subtract(hsi_life *L, uint32_t root, const vec64 *in, vec64 *out, int skip_rundown) {
  size_t k, j;
  out->n = 0;
  for (k = 0; k + 2 <= in->n; k += 2) {
    uint64_t ps = in->p[k], pe = in->p[k + 1], cur = ps;
    L->ids.n = 0;
    tree_collect(L, root, ps, pe, &L->ids);
    for (j = 0; j < L->ids.n; j++) {
      const struct ivn *n = &L->nodes[L->ids.p[j]];
      if (skip_rundown && n->rec == RESV_RUNDOWN) continue;
      if (n->s > cur) v64_pair(L, out, cur, n->s < pe ? n->s : pe);
      if (n->e > cur) cur = n->e;
    }
    if (cur < pe) v64_pair(L, out, cur, pe);
  }
}

/* Add the ranges of `in` to the decommitted tree, merging with neighbours. */
static void clear_add(hsi_life *L, uint32_t *root, const vec64 *in) {
  size_t k, j;
  for (k = 0; k + 2 <= in->n; k += 2) {
    uint64_t s = in->p[k], e = in->p[k + 1];
    uint64_t lo = s ? s - 1 : 0, hi = e < UINT64_MAX ? e + 1 : e;
    L->ids.n = 0;
    tree_collect(L, *root, lo, hi, &L->ids);
    L->tri.n = 0;
    for (j = 0; j < L->ids.n; j++) {
      const struct ivn *n = &L->nodes[L->ids.p[j]];
      v64_push(L, &L->tri, n->s);
      if (n->s < s) s = n->s;
      if (n->e > e) e = n->e;
    }
    for (j = 0; j < L->tri.n; j++) tree_remove(L, root, L->tri.p[j]);
    tree_insert(L, root, s, e, 0);
  }
}

/* ------------------------------------------------------------ VirtualAlloc */

/* A piece of committed range `src` left outstanding by a split. */
static uint32_t clone_piece(hsi_life *L, uint32_t src, uint64_t s, uint64_t e) {
  hsi_recs *r = &L->r;
  uint32_t i = newrec(L, r->kind[src], r->inst[src], r->key[src], s, e - s, r->ts_alloc[src],
                      (r->flags[src] & HSI_RF_PUBLIC) | HSI_RF_SPLIT, r->source[src]);
  if (i == HSI_NOREC) return i;
  r->stk_alloc[i] = r->stk_alloc[src];
  if (!r->stk_alloc[i]) {  /* the stack may still come: pass it on then */
    r->flags[src] |= RF_PENDING;
    v64_push(L, &L->pend, ((uint64_t)src << 32) | i);
  }
  return i;
}

/*
** End the committed parts of [a, b) at ts.  A range sticking out of
** [a, b) is cut: the covered piece keeps the record index and ends, the
** parts outside become new records with the original commit time and
** stack.  With want_gaps, the uncommitted parts of [a, b) go to L->gap.
** Returns the number of records ended.
*/
static size_t uncommit(hsi_life *L, struct inst *I, uint64_t a, uint64_t b, int64_t ts,
                       int reason, int want_gaps) {
  size_t k, nend = 0;
  uint64_t cur = a;
  L->ids.n = 0;
  tree_collect(L, I->commit, a, b, &L->ids);
  L->tri.n = 0;
  for (k = 0; k < L->ids.n; k++) {
    const struct ivn *n = &L->nodes[L->ids.p[k]];
    v64_push(L, &L->tri, n->s); v64_push(L, &L->tri, n->e); v64_push(L, &L->tri, n->rec);
  }
  if (want_gaps) L->gap.n = 0;
  for (k = 0; k + 3 <= L->tri.n; k += 3) {
    uint64_t s = L->tri.p[k], e = L->tri.p[k + 1];
    uint32_t rec = (uint32_t)L->tri.p[k + 2];
    uint64_t cs = s > a ? s : a, ce = e < b ? e : b;
    if (want_gaps && s > cur) v64_pair(L, &L->gap, cur, s);
    if (e > cur) cur = e;
    tree_remove(L, &I->commit, s);
    L->live_vm--;
    if (s < a || e > b) L->st.vm_splits++;
    if (s < a) {
      uint32_t p = clone_piece(L, rec, s, a);
      if (p != HSI_NOREC && !tree_insert(L, &I->commit, s, a, p)) L->live_vm++;
    }
    if (e > b) {
      uint32_t p = clone_piece(L, rec, b, e);
      if (p != HSI_NOREC && !tree_insert(L, &I->commit, b, e, p)) L->live_vm++;
    }
    L->r.addr[rec] = cs;
    L->r.size[rec] = ce - cs;
    endrec(L, rec, ts, reason);
    nend++;
  }
  if (want_gaps && cur < b) v64_pair(L, &L->gap, cur, b);
  return nend;
}

static void vm_commit(hsi_life *L, struct inst *I, uint64_t a, uint64_t b, int64_t ts) {
  size_t k;
  uint64_t cur = a, dup = 0;
  L->ids.n = 0;
  tree_collect(L, I->commit, a, b, &L->ids);
  L->gap.n = 0;
  for (k = 0; k < L->ids.n; k++) {
    const struct ivn *n = &L->nodes[L->ids.p[k]];
    uint64_t cs = n->s > a ? n->s : a, ce = n->e < b ? n->e : b;
    if (n->s > cur) v64_pair(L, &L->gap, cur, n->s);
    dup += ce - cs;
    cur = n->e;
  }
  if (cur < b) v64_pair(L, &L->gap, cur, b);
  L->st.vm_commit_dup_bytes += dup;
  if (!L->gap.n) { L->st.vm_commit_dup++; return; }
  for (k = 0; k + 2 <= L->gap.n; k += 2) {
    uint64_t s = L->gap.p[k], e = L->gap.p[k + 1];
    uint32_t r = startrec(L, HSI_KIND_VIRTUAL, I->id, 0, s, e - s, ts, 0, 0);
    if (r == HSI_NOREC) return;
    if (!tree_insert(L, &I->commit, s, e, r)) L->live_vm++;
  }
}

static uint64_t range_end(uint64_t a, uint64_t size) {
  return a + size < a ? UINT64_MAX : a + size;
}

/* The reservation containing addr, or 0. */
static uint32_t resv_at(hsi_life *L, struct inst *I, uint64_t addr) {
  uint32_t n = tree_le(L->nodes, I->resv, addr);
  return n && L->nodes[n].e > addr ? n : 0;
}

static void vm_alloc(hsi_life *L, struct inst *I, const hsi_memop *op, int64_t ts) {
  uint64_t a = op->addr, b = range_end(op->addr, op->size);
  if (b <= a || !(op->flags & (HS_MEM_COMMIT | HS_MEM_RESERVE))) { L->st.ignored++; return; }
  if (op->flags & HS_MEM_RESERVE) {
    /* A new region over committed pages: their release was lost. */
    if (uncommit(L, I, a, b, ts, HSI_END_REUSED, 0)) L->st.vm_reserve_over_commit++;
    range_cut(L, &I->resv, a, b);
    range_cut(L, &I->clear, a, b);
    tree_insert(L, &I->resv, a, b, 0);
  }
  if (op->flags & HS_MEM_COMMIT) vm_commit(L, I, a, b, ts);
}

/*
** Pages of L->gap (what uncommit found uncommitted in the range) that the
** trace knows nothing about were committed before it: one before-trace
** record per piece, ended by this event.  Pages of a rundown region count
** as unknown for a decommit (their commit state is unknown) but not for a
** release (the trace saw the region; what it held is unknown, so nothing
** is claimed).  Returns the pieces made.
*/
static size_t vm_before(hsi_life *L, struct inst *I, int64_t ts, int reason, uint64_t *bytes) {
  size_t k;
  subtract(L, I->resv, &L->gap, &L->p1, reason == HSI_END_DECOMMIT);
  subtract(L, I->clear, &L->p1, &L->p2, 0);
  for (k = 0; k + 2 <= L->p2.n; k += 2) {
    uint64_t s = L->p2.p[k], e = L->p2.p[k + 1];
    beforerec(L, HSI_KIND_VIRTUAL, I->id, 0, s, e - s, 1, ts, reason);
    *bytes += e - s;
  }
  return L->p2.n / 2;
}

static void vm_decommit(hsi_life *L, struct inst *I, uint64_t a, uint64_t b, int64_t ts) {
  size_t nend = uncommit(L, I, a, b, ts, HSI_END_DECOMMIT, 1);
  size_t nb = vm_before(L, I, ts, HSI_END_DECOMMIT, &L->st.vm_decommit_unknown_bytes);
  L->st.vm_decommit_unknown += nb;
  if (!nend && !nb) L->st.vm_decommit_nothing++;
  /* From now on these pages are known (in-trace reservations are known anyway). */
  L->gap.n = 0;
  v64_pair(L, &L->gap, a, b);
  subtract(L, I->resv, &L->gap, &L->p1, 1);
  clear_add(L, &I->clear, &L->p1);
}

static void vm_free(hsi_life *L, struct inst *I, const hsi_memop *op, int64_t ts) {
  uint32_t rn = resv_at(L, I, op->addr);
  uint64_t a = op->addr, b = range_end(op->addr, op->size);
  int release = (op->flags & HS_MEM_RELEASE) != 0;
  if (!release && !(op->flags & HS_MEM_DECOMMIT)) { L->st.ignored++; return; }
  if (!op->size) {  /* size 0: the whole reservation at that base */
    if (!rn) { L->st.vm_size0_unknown++; return; }
    if (release) a = L->nodes[rn].s;
    b = L->nodes[rn].e;
  } else if (release && rn) {  /* a release ends everything in its reservation */
    if (L->nodes[rn].s < a) a = L->nodes[rn].s;
    if (L->nodes[rn].e > b) b = L->nodes[rn].e;
  }
  if (b <= a) { L->st.ignored++; return; }
  if (!release) { vm_decommit(L, I, a, b, ts); return; }
  uncommit(L, I, a, b, ts, HSI_END_RELEASE, 1);
  /* Pages of a region the trace never saw reserved were committed before
     it (the event's size is all it says); inside an in-trace reservation
     every page is known, so nothing is made. */
  if (vm_before(L, I, ts, HSI_END_RELEASE, &L->st.vm_release_unknown_bytes)) L->st.vm_release_unknown++;
  range_cut(L, &I->resv, a, b);
  range_cut(L, &I->clear, a, b);
}

static void vm_rundown(hsi_life *L, struct inst *I, const hsi_memop *op) {
  uint64_t a = op->addr, b = range_end(op->addr, op->size);
  if (op->subop == 129 || b <= a) return;  /* DCEnd: the trace is over */
  L->ids.n = 0;
  tree_collect(L, I->resv, a, b, &L->ids);
  if (!L->ids.n) tree_insert(L, &I->resv, a, b, RESV_RUNDOWN);
}

/* ------------------------------------------------------------ heap, pool */

static void dead_put(hsi_life *L, uint32_t h, uint32_t inst, uint64_t heap, uint32_t rec) {
  L->dead[dead_slot(h, inst, heap)] = rec + 1;
}

/* Was (heap, addr) seen freed, and not allocated since? */
static int dead_hit(const hsi_life *L, uint32_t h, uint32_t inst, int kind, uint64_t heap,
                    uint64_t addr) {
  uint32_t s = L->dead[dead_slot(h, inst, heap)], r;
  if (!s) return 0;
  r = s - 1;
  return L->r.kind[r] == kind && L->r.addr[r] == addr && L->r.ts_free[r] != HSI_TS_NEVER &&
         (kind == HSI_KIND_POOL || (L->r.key[r] == heap && L->r.inst[r] == inst));
}

static uint32_t heap_start(hsi_life *L, struct inst *I, const hsi_memop *op, uint64_t addr,
                           uint64_t size, int64_t ts, unsigned flags) {
  uint32_t h = addr_hash(addr), pos, r;
  livemap *m = get_heap(L, I, op->heap, 1);
  if (!m) return HSI_NOREC;
  r = lm_find(L, m, h, addr, &pos);
  if (r != HSI_NOREC) {  /* the free of the old block was lost */
    L->st.heap_alloc_over_live++;
    lm_delete(L, m, pos);
    endrec(L, r, ts, HSI_END_REUSED);
  }
  r = startrec(L, HSI_KIND_HEAP, I->id, op->heap, addr, size, ts, flags, op->source);
  if (r != HSI_NOREC && lm_insert(L, m, h, r)) return HSI_NOREC;
  return r;
}

/*
** End the block at (heap, addr).  Returns its record, the before-trace
** record made for it, or HSI_NOREC for a double free.
*/
static uint32_t heap_end(hsi_life *L, struct inst *I, uint64_t heap, uint64_t addr, int64_t ts,
                         int reason, int size_known, uint64_t size) {
  uint32_t h = addr_hash(addr), pos, r = HSI_NOREC;
  livemap *m = get_heap(L, I, heap, 0);
  if (m) r = lm_find(L, m, h, addr, &pos);
  if (r != HSI_NOREC) {
    lm_delete(L, m, pos);
    endrec(L, r, ts, reason);
  } else if (dead_hit(L, h, I->id, HSI_KIND_HEAP, heap, addr)) {
    L->st.heap_double_free++;
    return HSI_NOREC;
  } else {
    if (reason == HSI_END_FREE) L->st.heap_free_unknown++;
    else L->st.heap_realloc_unknown++;
    r = beforerec(L, HSI_KIND_HEAP, I->id, heap, addr, size, size_known, ts, reason);
    if (r == HSI_NOREC) return r;
  }
  dead_put(L, h, I->id, heap, r);
  return r;
}

#define NOFREE_NEAR 8            /* heap memops within which a Free of no thread is a summary's */

/* A ReAlloc that sums up an Alloc(new) and a Free(old) just before it
   (records al and fr, or HSI_NOREC): counted once, as those two. */
static void realloc_summary(hsi_life *L, struct thr *t, const hsi_memop *op, uint32_t al, uint32_t fr) {
  L->st.heap_realloc_summary++;
  if (al != HSI_NOREC && al < L->r.n) L->r.flags[al] |= HSI_RF_REALLOC;
  if (fr != HSI_NOREC && fr < L->r.n) {
    L->r.reason[fr] = HSI_END_REALLOC;
    if (L->r.flags[fr] & HSI_RF_SIZE_UNKNOWN) {  /* the summary knows the old size */
      L->r.flags[fr] &= (uint8_t)~HSI_RF_SIZE_UNKNOWN;
      L->r.size[fr] = capped(op->old_size);
    }
  }
  hist_push(t, HSI_OP_HEAP_REALLOC, op->heap, op->addr, HSI_NOREC);
}

static void heap_realloc(hsi_life *L, struct inst *I, struct thr *t, const hsi_memop *op,
                         int64_t ts) {
  uint32_t r;
  if (t && t->n == 2 && op->addr != op->old_addr) {
    const struct hop *al = NULL, *fr = NULL;
    int k;
    for (k = 0; k < 2; k++) {
      const struct hop *x = &t->h[k];
      if (x->heap != op->heap) continue;
      if (x->kind == HSI_OP_HEAP_ALLOC && x->addr == op->addr) al = x;
      if (x->kind == HSI_OP_HEAP_FREE && x->addr == op->old_addr) fr = x;
    }
    if (al && fr) {  /* Alloc(new) + Free(old) + this summary: count it once */
      realloc_summary(L, t, op, al->rec, fr->rec);
      return;
    }
  }
  /* The same when the Free had no thread (no ids and no StackWalk: frees
     are often not stack-walked) and ended the old block a few heap events
     ago, and this thread's last heap event is the Alloc of the new one. */
  if (t && t->n >= 1 && op->addr != op->old_addr && L->nofree.rec != HSI_NOREC
      && t->h[1].kind == HSI_OP_HEAP_ALLOC && t->h[1].heap == op->heap && t->h[1].addr == op->addr
      && L->nofree.inst == I->id && L->nofree.heap == op->heap && L->nofree.addr == op->old_addr
      && L->heap_ops - L->nofree.at <= NOFREE_NEAR) {
    realloc_summary(L, t, op, t->h[1].rec, L->nofree.rec);
    L->nofree.rec = HSI_NOREC;
    return;
  }
  if (!op->addr) { L->st.ignored++; hist_push(t, HSI_OP_HEAP_REALLOC, op->heap, 0, HSI_NOREC); return; }
  L->st.heap_realloc_lone++;
  if (op->addr == op->old_addr) L->st.heap_realloc_inplace++;
  if (op->old_addr) heap_end(L, I, op->heap, op->old_addr, ts, HSI_END_REALLOC, 1, op->old_size);
  r = heap_start(L, I, op, op->addr, op->size, ts, HSI_RF_REALLOC);
  hist_push(t, HSI_OP_HEAP_REALLOC, op->heap, op->addr, r);
}

static void heap_destroy(hsi_life *L, struct inst *I, uint64_t heap, int64_t ts) {
  livemap *m = get_heap(L, I, heap, 0);
  if (m) L->st.heap_destroyed += heap_end_all(L, m, ts, HSI_END_DESTROY);
}

static void pool_alloc(hsi_life *L, uint32_t inst, const hsi_memop *op, int64_t ts) {
  uint32_t h = addr_hash(op->addr), pos, r;
  if (!op->addr) { L->st.ignored++; return; }
  r = lm_find(L, &L->pool, h, op->addr, &pos);
  if (r != HSI_NOREC) {
    L->st.pool_alloc_over_live++;
    lm_delete(L, &L->pool, pos);
    endrec(L, r, ts, HSI_END_REUSED);
  }
  r = startrec(L, HSI_KIND_POOL, inst, op->tag | ((uint64_t)op->pool_type << 32), op->addr,
               op->size, ts, 0, 0);
  if (r != HSI_NOREC) lm_insert(L, &L->pool, h, r);
}

static void pool_free(hsi_life *L, uint32_t inst, const hsi_memop *op, int64_t ts) {
  uint32_t h = addr_hash(op->addr), pos, r;
  if (!op->addr) { L->st.ignored++; return; }
  r = lm_find(L, &L->pool, h, op->addr, &pos);
  if (r != HSI_NOREC) {
    lm_delete(L, &L->pool, pos);
    endrec(L, r, ts, HSI_END_FREE);
  } else if (dead_hit(L, h, 0, HSI_KIND_POOL, 0, op->addr)) {
    L->st.pool_double_free++;
    return;
  } else {
    L->st.pool_free_unknown++;
    r = beforerec(L, HSI_KIND_POOL, inst, op->tag | ((uint64_t)op->pool_type << 32), op->addr,
                  op->size, op->size != 0, ts, HSI_END_FREE);
    if (r == HSI_NOREC) return;
  }
  dead_put(L, h, 0, 0, r);
}

/* ------------------------------------------------------------------ API */

hsi_life *hsi_life_new(void) {
  hsi_life *L = calloc(1, sizeof *L);
  if (!L) return NULL;
  L->dead = calloc((size_t)1 << DEAD_BITS, sizeof *L->dead);
  if (!L->dead) { free(L); return NULL; }
  L->rng = 0x2545F491u;
  L->nofree.rec = HSI_NOREC;
  return L;
}

void hsi_life_free(hsi_life *L) {
  size_t i;
  if (!L) return;
#define FREECOL(c) hsi_vfree(L->r.c, L->cap * sizeof *L->r.c);
  COLUMNS(FREECOL)
#undef FREECOL
  for (i = 0; i < L->nhh; i++) lm_free(&L->hh[i].m);
  free(L->hh); free(L->hmap); free(L->hkmap);
  free(L->in); free(L->imap);
  lm_free(&L->pool);
  free(L->dead); free(L->thr); free(L->nodes);
  free(L->ended.p); free(L->work.p);
  free(L->ids.p); free(L->tri.p); free(L->gap.p); free(L->p1.p); free(L->p2.p); free(L->pend.p);
  free(L);
}

static int64_t take_ts(hsi_life *L, int64_t ts) {
  if (!L->have_ts) { L->have_ts = 1; L->first_ts = L->last_ts = ts; }
  else if (ts < L->last_ts) { L->st.out_of_order++; ts = L->last_ts; }
  else L->last_ts = ts;
  return ts;
}

static void fill_res(hsi_life *L, hsi_life_res *res) {
  if (!res) return;
  res->first = L->new_count ? L->new_first : (uint32_t)L->r.n;
  res->count = L->new_count;
  res->ended = L->ended.p;
  res->nended = L->ended.n;
}

int hsi_life_feed(hsi_life *L, const hsi_memop *op, uint32_t instance, hsi_life_res *res) {
  struct inst *I = NULL;
  struct thr *t = NULL;
  int64_t ts;
  uint32_t r;
  if (res) memset(res, 0, sizeof *res);
  if (!L || !op) return HS_EARG;
  if (L->err) return L->err;
  L->ended.n = 0;
  L->new_count = 0;
  ts = take_ts(L, op->ts);
  L->st.ops[op->kind > 0 && op->kind < HSI_OP_KINDS ? op->kind : 0]++;
  switch (op->kind) {
  case HSI_OP_HEAP_CREATE: case HSI_OP_HEAP_ALLOC: case HSI_OP_HEAP_REALLOC:
  case HSI_OP_HEAP_FREE: case HSI_OP_HEAP_DESTROY:
    if (!(I = get_inst(L, instance, op->pid))) break;
    t = get_thr(L, op->tid, instance);
    if (L->err) break;
    L->heap_ops++;
    switch (op->kind) {
    case HSI_OP_HEAP_CREATE:
      hist_push(t, op->kind, op->heap, 0, HSI_NOREC);
      break;
    case HSI_OP_HEAP_ALLOC:
      if (!op->addr) { L->st.ignored++; r = HSI_NOREC; }
      else r = heap_start(L, I, op, op->addr, op->size, ts, 0);
      hist_push(t, op->kind, op->heap, op->addr, r);
      break;
    case HSI_OP_HEAP_FREE:
      if (!op->addr) { L->st.ignored++; r = HSI_NOREC; }
      else r = heap_end(L, I, op->heap, op->addr, ts, HSI_END_FREE, 0, 0);
      hist_push(t, op->kind, op->heap, op->addr, r);
      if (!t && r != HSI_NOREC) {              /* of no thread: heap_realloc may want it */
        L->nofree.heap = op->heap; L->nofree.addr = op->addr; L->nofree.at = L->heap_ops;
        L->nofree.inst = I->id; L->nofree.rec = r;
      }
      break;
    case HSI_OP_HEAP_REALLOC:
      heap_realloc(L, I, t, op, ts);
      break;
    default:
      heap_destroy(L, I, op->heap, ts);
      hist_push(t, op->kind, op->heap, 0, HSI_NOREC);
      break;
    }
    break;
  case HSI_OP_VALLOC: case HSI_OP_VFREE: case HSI_OP_VALLOC_RUNDOWN:
    if (!(I = get_inst(L, instance, op->pid))) break;
    if (op->kind == HSI_OP_VALLOC) vm_alloc(L, I, op, ts);
    else if (op->kind == HSI_OP_VFREE) vm_free(L, I, op, ts);
    else vm_rundown(L, I, op);
    break;
  case HSI_OP_POOL_ALLOC: case HSI_OP_POOL_FREE:
    if (!get_inst(L, instance, op->pid)) break;
    if (op->kind == HSI_OP_POOL_ALLOC) pool_alloc(L, instance, op, ts);
    else pool_free(L, instance, op, ts);
    break;
  default:  /* HEAP_OTHER, SNAPSHOT, NONE: counted only */
    break;
  }
  fill_res(L, res);
  return L->err;
}

int hsi_life_process_end(hsi_life *L, uint32_t instance, int64_t ts, hsi_life_res *res) {
  struct inst *I;
  size_t k, before;
  if (res) memset(res, 0, sizeof *res);
  if (!L) return HS_EARG;
  if (L->err) return L->err;
  L->ended.n = 0;
  L->new_count = 0;
  ts = take_ts(L, ts);
  L->st.process_ends++;
  I = find_inst(L, instance);
  if (I) {
    uint32_t h;
    for (h = I->heap_first; h; h = L->hh[h - 1].next_inst)
      heap_end_all(L, &L->hh[h - 1].m, ts, HSI_END_PROCESS_END);
    before = L->ended.n;
    L->ids.n = 0;
    tree_collect(L, I->commit, 0, UINT64_MAX, &L->ids);
    for (k = 0; k < L->ids.n; k++) endrec(L, L->nodes[L->ids.p[k]].rec, ts, HSI_END_PROCESS_END);
    L->live_vm -= L->ended.n - before;
    tree_free(L, I->commit); tree_free(L, I->resv); tree_free(L, I->clear);
    I->commit = I->resv = I->clear = 0;
    L->st.process_end_ended += L->ended.n;
  }
  fill_res(L, res);
  return L->err;
}

void hsi_life_set_stack_inst(hsi_life *L, uint32_t rec, int which, uint32_t inst) {
  uint64_t *k;
  if (!L || rec >= L->r.n || L->r.kind[rec] != HSI_KIND_VIRTUAL || inst == L->r.inst[rec]) return;
  k = &L->r.key[rec];
  if (which == HSI_STACK_FREE) *k = (*k & 0xFFFFFFFFu) | (uint64_t)inst << 32;
  else *k = (*k & ~(uint64_t)0xFFFFFFFFu) | inst;
}

int hsi_life_set_stack(hsi_life *L, uint32_t rec, int which, uint32_t id) {
  size_t k, j;
  if (!L || rec >= L->r.n || (which != HSI_STACK_ALLOC && which != HSI_STACK_FREE)) return HS_EARG;
  if (which == HSI_STACK_FREE) { L->r.stk_free[rec] = id; return 0; }
  L->r.stk_alloc[rec] = id;
  if (!(L->r.flags[rec] & RF_PENDING)) return 0;
  /* Pieces split off before the stack came, and pieces of those pieces. */
  L->work.n = 0;
  if (v32_push(L, &L->work, rec)) return HS_ENOMEM;
  while (L->work.n) {
    uint32_t src = L->work.p[--L->work.n];
    L->r.flags[src] &= (uint8_t)~RF_PENDING;
    for (k = j = 0; k < L->pend.n; k++) {
      uint64_t e = L->pend.p[k];
      if ((uint32_t)(e >> 32) != src) { L->pend.p[j++] = e; continue; }
      L->r.stk_alloc[(uint32_t)e] = id;
      if (L->r.flags[(uint32_t)e] & RF_PENDING) v32_push(L, &L->work, (uint32_t)e);
    }
    L->pend.n = j;
  }
  return 0;
}

const hsi_recs *hsi_life_recs(const hsi_life *L) { return &L->r; }
const hsi_life_stats *hsi_life_stats_get(const hsi_life *L) { return &L->st; }

void hsi_life_span(const hsi_life *L, int64_t *first, int64_t *last) {
  if (L->have_span) { *first = L->span_first; *last = L->span_last; }
  else if (L->have_ts) { *first = L->first_ts; *last = L->last_ts; }
  else { *first = 0; *last = 0; }
}

size_t hsi_life_kind_records(const hsi_life *L, int kind) {
  return kind >= 0 && kind < HSI_KIND_COUNT ? L->nkind[kind] : 0;
}

int hsi_life_holds(const hsi_life *L, int64_t t1, int64_t t2) {
  return !L->have_ts || (t1 <= L->first_ts && t2 >= L->last_ts);
}

int hsi_life_peak(const hsi_life *L, int kind, int64_t t1, int64_t t2, size_t *nrecs,
                  uint64_t *peak, int64_t *peak_ts) {
  const struct run *u;
  size_t k;
  if (kind < 0) {
    kind = HSI_KIND_COUNT;
    for (*nrecs = 0, k = 0; k < HSI_KIND_COUNT; k++) *nrecs += L->nkind[k];
  } else if (kind < HSI_KIND_COUNT) {
    *nrecs = L->nkind[kind];
  } else {
    return 0;
  }
  /* the values start at 0 before the first event fed and take in every
     event up to the last: a window must hold them all */
  if (!hsi_life_holds(L, t1, t2)) return 0;
  u = &L->run[kind];
  *peak = u->peak;
  *peak_ts = u->have_peak ? u->peak_ts : t1;
  if ((L->allocd & (1u << kind)) && u->v > u->peak) { *peak = u->v; *peak_ts = L->tick; }  /* the last tick */
  return 1;
}

void hsi_life_set_span(hsi_life *L, int64_t first, int64_t last) {
  L->span_first = first;
  L->span_last = last;
  L->have_span = 1;
}

/* An instance that exited frees nothing: its heaps leave their handles'
   chains (hsi_life_heap_owner walks them for every free without ids;
   with the heaps of every process that ever ran, a trace of many short
   processes of one program, which get one process heap address, made it
   quadratic), but for a chain's head, whose slot stays. */
void hsi_life_exited(hsi_life *L, uint32_t instance) {
  struct inst *I = (struct inst *)find_inst(L, instance);
  uint32_t k;
  if (!I || I->exited) return;
  I->exited = 1;
  for (k = I->heap_first; k && L->hkmap_cap; k = L->hh[k - 1].next_inst) {
    uint32_t *at = &L->hkmap[hk_slot(L, L->hkmap, L->hkmap_cap, L->hh[k - 1].heap)];
    if (*at == k) {                      /* the head: its next takes the slot, if any */
      if (L->hh[k - 1].next_handle) *at = L->hh[k - 1].next_handle;
      continue;
    }
    while (*at && *at != k) at = &L->hh[*at - 1].next_handle;
    if (*at == k) *at = L->hh[k - 1].next_handle;
  }
}

/* The one live process instance whose heap `heap` holds addr, 0 when none
   or several: a probe per live instance's heap of that handle. */
uint32_t hsi_life_heap_owner(hsi_life *L, uint64_t heap, uint64_t addr) {
  uint32_t h = addr_hash(addr), pos, owner = 0, k;
  int found = 0;
  if (!L->hkmap_cap) return 0;
  for (k = L->hkmap[hk_slot(L, L->hkmap, L->hkmap_cap, heap)]; k; k = L->hh[k - 1].next_handle) {
    const struct inst *I;
    L->st.heap_owner_heaps++;
    if (!L->hh[k - 1].m.n || lm_find(L, &L->hh[k - 1].m, h, addr, &pos) == HSI_NOREC) continue;
    if ((I = find_inst(L, L->hh[k - 1].inst)) != NULL && I->exited) continue;   /* the dead free nothing */
    if (found++) return 0;
    owner = L->hh[k - 1].inst;
  }
  return owner;
}

uint32_t hsi_life_pid(const hsi_life *L, uint32_t instance) {
  const struct inst *I = find_inst(L, instance);
  return I ? I->pid : HS_NOID;
}

size_t hsi_life_live(const hsi_life *L) {
  size_t n = L->pool.n + L->live_vm, i;
  for (i = 0; i < L->nhh; i++) n += L->hh[i].m.n;
  return n;
}

size_t hsi_life_memory(const hsi_life *L) {
  size_t m = sizeof *L + L->cap * 56, i;
  m += L->capin * sizeof *L->in + L->imap_cap * sizeof *L->imap;
  m += L->caphh * sizeof *L->hh + (L->hmap_cap + L->hkmap_cap) * sizeof *L->hmap;
  for (i = 0; i < L->nhh; i++) m += (size_t)L->hh[i].m.cap * 8;
  m += (size_t)L->pool.cap * 8 + ((size_t)1 << DEAD_BITS) * sizeof *L->dead;
  m += (size_t)L->thr_cap * sizeof *L->thr + (size_t)L->capnodes * sizeof *L->nodes;
  m += (L->ended.cap + L->work.cap) * 4;
  m += (L->ids.cap + L->tri.cap + L->gap.cap + L->p1.cap + L->p2.cap + L->pend.cap) * 8;
  return m;
}

void hsi_life_trim(hsi_life *L) {
  size_t nc = L->r.n ? L->r.n : 1;
  if (L->err || nc >= L->cap) return;
  if (resize_recs(&L->r, L->cap, nc) == 0) L->cap = nc;   /* else all keep the larger size */
}

const char *hsi_kind_name(int kind) {
  static const char *const names[] = {"heap", "virtual", "pool"};
  return kind >= 0 && kind < HSI_KIND_COUNT ? names[kind] : "?";
}

const char *hsi_end_name(int reason) {
  static const char *const names[] = {"none", "free", "realloc", "destroy", "process_end",
                                      "decommit", "release", "reused"};
  return reason >= 0 && reason < HSI_END_COUNT ? names[reason] : "?";
}
