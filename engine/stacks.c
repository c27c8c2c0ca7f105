/*
** stacks.c -- StackWalk decoding, stack-to-event matching and stack
** interning (ETL-FORMAT.md §4 ext items, §6.4 StackWalk).
**
** Layouts (P = the record's pointer width):
**   op 32 Stack           u64 EventTimeStamp, u32 StackProcess, u32 StackThread, P frames
**   op 34/35/36 Key*      P StackKey, P frames          (create / delete / rundown)
**   op 37/38 StackKey*    u64 EventTimeStamp, u32 StackProcess, u32 StackThread, P StackKey
**   ext STACK_TRACE32/64  u64 MatchId, u32/u64 frames   (width from the item type)
**   ext STACK_KEY32/64    u64 MatchId, u32 key + pad / u64 key
** Frames are innermost first.
**
** Matching rules (§6.4): a part belongs to the target with the same
** timestamp and thread; targets without a thread match on timestamp and
** pid.  Parts are kept per target as a kernel part and a user part
** (op 32 by its innermost frame, 37 kernel, 38 user) and joined kernel
** first.  A key reference waits for the first definition of its key at or
** after it; the definition then resolves every waiting reference and is
** forgotten.  37 waits in the kernel table, 38 in the user table; a
** definition goes to the kernel table when its last (outermost) frame is a
** kernel address, as PerfView does, else to the user table.  STACK_KEY
** ext items wait in a third table that definitions of either kind resolve
** [I: never seen].  A target is delivered as soon as its stack has
** reached user space and no key of it is waiting (see stacks.h), else
** when it leaves the window.
**
** Memory: parts and final stacks are interned in two tables (arenas of
** u64 frames with a hash index), so repeated stacks cost one id; targets
** live in a slot array reused through a free list; nothing is allocated
** per event.
*/
#include <stdlib.h>
#include <string.h>
#include "heapscript.h"
#include "bytes.h"
#include "hash.h"
#include "stacks.h"

#define NONE 0xFFFFFFFFu

/* --------------------------------------------------------- interning */

typedef struct itab {
  uint64_t *frames;        /* arena */
  size_t nframes, capframes;
  size_t *off;             /* id -> first frame; off[id + 1] - off[id] = count */
  uint32_t *hash;          /* id -> hash */
  uint32_t n, cap;         /* ids 0..n-1; id 0 is the empty stack */
  uint32_t *tab;           /* open addressing over ids, 0 = empty */
  uint32_t tabcap;
} itab;

/* Two independent multiply chains, so the loop is not one long
   dependency chain: stacks are hashed once per event.  The steps are
   macros so that read_part can hash while it copies the frames. */
#define HASH_A0(n) (0x9E3779B97F4A7C15ull ^ (uint64_t)(n))
#define HASH_B0 0xC2B2AE3D27D4EB4Full
#define HASH_A(a, x) do { (a) = ((a) ^ (x)) * 0xFF51AFD7ED558CCDull; (a) ^= (a) >> 32; } while (0)
#define HASH_B(b, x) do { (b) = ((b) ^ (x)) * 0xC4CEB9FE1A85EC53ull; (b) ^= (b) >> 29; } while (0)

static uint32_t hash_end(uint64_t a, uint64_t b) {
  a ^= b * 0x9E3779B97F4A7C15ull;
  a ^= a >> 31;
  return (uint32_t)(a ^ a >> 32);
}

static uint32_t hash_frames(const uint64_t *f, size_t n) {
  uint64_t a = HASH_A0(n), b = HASH_B0;
  size_t i;
  for (i = 0; i + 1 < n; i += 2) { HASH_A(a, f[i]); HASH_B(b, f[i + 1]); }
  if (i < n) HASH_A(a, f[i]);
  return hash_end(a, b);
}

static int itab_init(itab *t) {
  memset(t, 0, sizeof *t);
  t->cap = 256;
  t->off = malloc((t->cap + 1) * sizeof *t->off);
  t->hash = malloc(t->cap * sizeof *t->hash);
  t->tabcap = 512;
  t->tab = calloc(t->tabcap, sizeof *t->tab);
  t->capframes = 4096;
  t->frames = malloc(t->capframes * sizeof *t->frames);
  if (!t->off || !t->hash || !t->tab || !t->frames) return -1;
  t->off[0] = 0; t->off[1] = 0; t->hash[0] = 0;
  t->n = 1;
  return 0;
}

static uint32_t itab_intern_h(itab *t, const uint64_t *f, size_t n, uint32_t h);

/* Id of f[0..n); NONE when out of memory.  f must not point into t. */
static uint32_t itab_intern(itab *t, const uint64_t *f, size_t n) {
  return n ? itab_intern_h(t, f, n, hash_frames(f, n)) : 0;
}

static void itab_free(itab *t) {
  free(t->frames); free(t->off); free(t->hash); free(t->tab);
}

static const uint64_t *itab_frames(const itab *t, uint32_t id, size_t *n) {
  if (id == 0 || id >= t->n) { *n = 0; return NULL; }
  *n = t->off[id + 1] - t->off[id];
  return t->frames + t->off[id];
}

static int itab_grow_tab(itab *t) {
  uint32_t nc = t->tabcap * 2, id, i;
  uint32_t *nt = calloc(nc, sizeof *nt);
  if (!nt) return -1;
  for (id = 1; id < t->n; id++) {
    for (i = t->hash[id] & (nc - 1); nt[i]; i = (i + 1) & (nc - 1)) {}
    nt[i] = id;
  }
  free(t->tab);
  t->tab = nt; t->tabcap = nc;
  return 0;
}

/* Id of f[0..n) whose hash_frames is h; NONE when out of memory.  f
   must not point into t. */
static uint32_t itab_intern_h(itab *t, const uint64_t *f, size_t n, uint32_t h) {
  uint32_t i, id;
  if (n == 0) return 0;
  for (i = h & (t->tabcap - 1); (id = t->tab[i]) != 0; i = (i + 1) & (t->tabcap - 1))
    if (t->hash[id] == h && t->off[id + 1] - t->off[id] == n
        && memcmp(t->frames + t->off[id], f, n * sizeof *f) == 0)
      return id;
  if (t->n == t->cap) {
    uint32_t nc = t->cap * 2;
    size_t *no;
    uint32_t *nh;
    if (nc < t->cap) return NONE;
    if (!(no = realloc(t->off, ((size_t)nc + 1) * sizeof *no))) return NONE;
    t->off = no;
    if (!(nh = realloc(t->hash, (size_t)nc * sizeof *nh))) return NONE;
    t->hash = nh;
    t->cap = nc;
  }
  if (n > t->capframes - t->nframes) {
    size_t nc = t->capframes * 2;
    uint64_t *nf;
    while (nc - t->nframes < n) nc *= 2;
    if (!(nf = realloc(t->frames, nc * sizeof *nf))) return NONE;
    t->frames = nf; t->capframes = nc;
  }
  memcpy(t->frames + t->nframes, f, n * sizeof *f);
  t->nframes += n;
  id = t->n++;
  t->off[id + 1] = t->nframes;
  t->hash[id] = h;
  t->tab[i] = id;
  if ((uint64_t)t->n * 2 > t->tabcap && itab_grow_tab(t) != 0) {
    t->n--; t->nframes -= n; t->tab[i] = 0;
    return NONE;
  }
  return id;
}

/* ----------------------------------------------- u64 -> u32 map (keys) */

/* Pending key references: key -> first reference + 1.  Entries are
   removed when a definition resolves them (backward-shift deletion). */
typedef struct kmap {
  uint64_t *key;
  uint32_t *val;           /* 0 = empty */
  uint32_t cap, n;
} kmap;


static uint32_t kmap_get(const kmap *m, uint64_t k) {
  uint32_t i;
  if (!m->cap) return 0;
  for (i = (uint32_t)hsi_mix64(k) & (m->cap - 1); m->val[i]; i = (i + 1) & (m->cap - 1))
    if (m->key[i] == k) return m->val[i];
  return 0;
}

static int kmap_put(kmap *m, uint64_t k, uint32_t v) {
  uint32_t i;
  if ((uint64_t)(m->n + 1) * 2 > m->cap) {
    uint32_t nc = m->cap ? m->cap * 2 : 64, j;
    uint64_t *nk = calloc(nc, sizeof *nk);
    uint32_t *nv = calloc(nc, sizeof *nv);
    if (!nk || !nv) { free(nk); free(nv); return -1; }
    for (j = 0; j < m->cap; j++) if (m->val[j]) {
      for (i = (uint32_t)hsi_mix64(m->key[j]) & (nc - 1); nv[i]; i = (i + 1) & (nc - 1)) {}
      nk[i] = m->key[j]; nv[i] = m->val[j];
    }
    free(m->key); free(m->val);
    m->key = nk; m->val = nv; m->cap = nc;
  }
  for (i = (uint32_t)hsi_mix64(k) & (m->cap - 1); m->val[i]; i = (i + 1) & (m->cap - 1))
    if (m->key[i] == k) { m->val[i] = v; return 0; }
  m->key[i] = k; m->val[i] = v; m->n++;
  return 0;
}

static void kmap_del(kmap *m, uint64_t k) {
  uint32_t i, j, mask = m->cap - 1;
  if (!m->cap) return;
  for (i = (uint32_t)hsi_mix64(k) & mask; m->val[i]; i = (i + 1) & mask)
    if (m->key[i] == k) break;
  if (!m->val[i]) return;
  for (j = i;;) {
    uint32_t h;
    j = (j + 1) & mask;
    if (!m->val[j]) break;
    h = (uint32_t)hsi_mix64(m->key[j]) & mask;
    /* move j back to i unless its home lies cyclically in (i, j] */
    if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
      m->key[i] = m->key[j]; m->val[i] = m->val[j];
      i = j;
    }
  }
  m->val[i] = 0;
  m->n--;
}

/* ------------------------------------------------------------- state */

enum { S_FREE = 0, S_LIVE, S_RETIRED };
enum { K_KERNEL = 0, K_USER = 1, K_EXT = 2 };

typedef struct tslot {
  int64_t ts;
  uint64_t target;
  uint32_t pid, tid;
  uint32_t part[2];        /* part-table ids: [K_KERNEL], [K_USER] */
  uint32_t pending;        /* key references still waiting */
  uint32_t seq;            /* registration number */
  uint8_t state, orphan, nparts;
  uint8_t width;           /* frame width of the last part (kernel address test) */
  /* Targets of one (ts, tid) form a chain in registration order; the
     table holds its first, the head, which keeps what find_target asks
     of the chain (the k* fields below knext/kprev are the head's). */
  uint32_t knext, kprev;   /* NONE at the ends */
  uint32_t ktail, kcount;  /* the newest; how many */
  uint32_t kpids;          /* how many have a pid (a thread-less chain's filter) */
  uint32_t kpid;           /* the one pid they have (HS_NOID: none yet; KPID_MANY: several) */
  uint32_t kcur[2];        /* per kind: every target before it has that part */
} tslot;

typedef struct kref {
  uint32_t slot;           /* NONE: the reference matched no target */
  uint32_t next;           /* next reference of the same key + 1 */
  uint8_t kind;            /* part the definition fills */
} kref;

#define NMATCHID 64
#define KPID_MANY 0xFFFFFFFEu    /* no pid of Windows: they are multiples of 4 */

#define PCACHE 4096       /* recent parts by a cheap key (read_part) */

struct hsi_stacks {
  itab parts, final;
  struct { uint32_t id, key; } pcache[PCACHE];   /* part ids (0 = empty) by read_part's key */
  uint32_t *p2f;           /* part id -> final id of the same frames, 0 = not yet */
  uint32_t capp2f;
  tslot *slots;
  uint32_t nslots, capslots;
  uint32_t *freel;         /* free slot indices */
  uint32_t nfree;
  uint32_t *tab;           /* (ts, tid) -> its chain's head + 1, open addressing */
  uint32_t tabcap, nkeys, nlive;
  uint64_t *fifo;          /* seq << 32 | slot, in registration order (ring); entries of
                              slots completed early are stale and skipped */
  uint32_t fhead, fcount, fcap;
  kref *refs;
  uint32_t nrefs, caprefs, freeref;  /* freeref: free list head + 1 */
  kmap pend[3];            /* K_KERNEL, K_USER, K_EXT */
  struct { uint64_t id; uint32_t slot, seq; } mid[NMATCHID];
  uint32_t nmid;
  uint64_t *tmp;
  size_t captmp;
  int64_t now;
  int64_t window;
  uint32_t max_live, seq;
  /* The newest target, not yet in the slots (see hold_flush): the
     StackWalk that follows its event at once completes it without them. */
  struct { int on; int64_t ts; uint64_t target; uint32_t pid, tid, seq; } hold;
  int direct;              /* the hold is used (tests turn it off) */
  hsi_stack_fn fn;
  void *ud;
  hsi_part_fn pfn;              /* told of each part matched to a target (hsi_stacks_on_part) */
  void *pud;
  hsi_ets_fn efn;               /* a StackWalk's EventTimeStamp on the targets' clock (hsi_stacks_on_clock) */
  void *eud;
  hsi_stack_match *res;
  size_t nres, capres;
  int nomem;
  hsi_stack_counts c;
};

static const hs_guid G_STACKWALK = { 0xdef2fe46, 0x7bd6, 0x4b80, { 0xbd, 0x94, 0xf5, 0x7f, 0xe2, 0x0d, 0x0c, 0xe3 } };

hsi_stacks *hsi_stacks_new(void) {
  hsi_stacks *st = calloc(1, sizeof *st);
  if (!st) return NULL;
  if (itab_init(&st->parts) != 0 || itab_init(&st->final) != 0) { hsi_stacks_free(st); return NULL; }
  st->window = HSI_STACKS_WINDOW;
  st->max_live = HSI_STACKS_MAX_LIVE;
  st->now = INT64_MIN;
  st->direct = 1;
  return st;
}

void hsi_stacks_free(hsi_stacks *st) {
  int k;
  if (!st) return;
  itab_free(&st->parts); itab_free(&st->final);
  free(st->p2f);
  free(st->slots); free(st->freel); free(st->tab); free(st->fifo); free(st->refs);
  for (k = 0; k < 3; k++) { free(st->pend[k].key); free(st->pend[k].val); }
  free(st->tmp); free(st->res);
  free(st);
}

uint32_t hsi_stacks_intern(hsi_stacks *st, const uint64_t *frames, size_t n) {
  uint32_t id = itab_intern(&st->final, frames, n);
  if (id == NONE) { st->nomem = 1; return 0; }
  return id;
}

const uint64_t *hsi_stacks_frames(const hsi_stacks *st, uint32_t id, size_t *n) {
  return itab_frames(&st->final, id, n);
}

uint32_t hsi_stacks_count(const hsi_stacks *st) { return st->final.n - 1; }
int hsi_stacks_nomem(const hsi_stacks *st) { return st->nomem; }
const hsi_stack_counts *hsi_stacks_counts(const hsi_stacks *st) { return &st->c; }

void hsi_stacks_on_match(hsi_stacks *st, hsi_stack_fn fn, void *ud) { st->fn = fn; st->ud = ud; }
void hsi_stacks_on_part(hsi_stacks *st, hsi_part_fn fn, void *ud) { st->pfn = fn; st->pud = ud; }
void hsi_stacks_on_clock(hsi_stacks *st, hsi_ets_fn fn, void *ud) { st->efn = fn; st->eud = ud; }

/* The EventTimeStamp of StackWalk ev (payload p, at least 8 bytes), on
   the clock its targets were registered on. */
static inline int64_t walk_ets(const hsi_stacks *st, const hs_event *ev, const uint8_t *p) {
  int64_t ets = (int64_t)rd64(p);
  return st->efn ? st->efn(st->eud, ev, ets) : ets;
}

/* A part (a StackWalk record or key reference) was matched to target. */
static inline void parted(const hsi_stacks *st, uint64_t target) {
  if (st->pfn) st->pfn(st->pud, target);
}

void hsi_stacks_set_window(hsi_stacks *st, int64_t window, uint32_t max_live) {
  st->window = window > 0 ? window : 0;
  st->max_live = max_live ? max_live : 1;
}

const hsi_stack_match *hsi_stacks_results(const hsi_stacks *st, size_t *n) {
  *n = st->nres;
  return st->res;
}

int hsi_addr_is_kernel(uint64_t addr, int ptr) {
  return ptr == 4 ? addr >= 0x80000000u : addr >= HSI_KERNEL_BASE;
}

static uint64_t *tmpbuf(hsi_stacks *st, size_t n) {
  if (n > st->captmp) {
    size_t nc = st->captmp ? st->captmp : 256;
    uint64_t *p;
    while (nc < n) nc *= 2;
    if (!(p = realloc(st->tmp, nc * sizeof *p))) { st->nomem = 1; return NULL; }
    st->tmp = p; st->captmp = nc;
  }
  return st->tmp;
}

/* ------------------------------------------------- the (ts, tid) table */

static uint32_t slot_hash(int64_t ts, uint32_t tid) {
  return (uint32_t)hsi_mix64((uint64_t)ts ^ ((uint64_t)tid << 40 | tid));
}

static int tab_grow(hsi_stacks *st) {
  uint32_t nc = st->tabcap ? st->tabcap * 2 : 1024, i, j;
  uint32_t *nt = calloc(nc, sizeof *nt);
  if (!nt) return -1;
  for (j = 0; j < st->tabcap; j++) if (st->tab[j]) {
    const tslot *s = &st->slots[st->tab[j] - 1];
    for (i = slot_hash(s->ts, s->tid) & (nc - 1); nt[i]; i = (i + 1) & (nc - 1)) {}
    nt[i] = st->tab[j];
  }
  free(st->tab);
  st->tab = nt; st->tabcap = nc;
  return 0;
}

/* The table's index of the chain of (ts, tid), or NONE. */
static uint32_t tab_find(const hsi_stacks *st, int64_t ts, uint32_t tid) {
  uint32_t mask = st->tabcap - 1, i;
  if (!st->tabcap) return NONE;
  for (i = slot_hash(ts, tid) & mask; st->tab[i]; i = (i + 1) & mask) {
    const tslot *s = &st->slots[st->tab[i] - 1];
    if (s->ts == ts && s->tid == tid) return i;
  }
  return NONE;
}

/* Take table entry i out (backward-shift deletion). */
static void tab_remove(hsi_stacks *st, uint32_t i) {
  uint32_t mask = st->tabcap - 1, j;
  for (j = i;;) {
    uint32_t h;
    const tslot *o;
    j = (j + 1) & mask;
    if (!st->tab[j]) break;
    o = &st->slots[st->tab[j] - 1];
    h = slot_hash(o->ts, o->tid) & mask;
    if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
      st->tab[i] = st->tab[j];
      i = j;
    }
  }
  st->tab[i] = 0;
  st->nkeys--;
}

/* Take live slot si out of its chain (and the table when it was the
   chain's last). */
static void tab_del(hsi_stacks *st, uint32_t si) {
  tslot *s = &st->slots[si], *h;
  uint32_t i = tab_find(st, s->ts, s->tid), k;
  if (i == NONE) return;
  h = &st->slots[st->tab[i] - 1];
  st->nlive--;
  if (s->kprev == NONE) {                 /* the head: its next takes over */
    tslot *n;
    if (s->knext == NONE) { tab_remove(st, i); return; }
    n = &st->slots[s->knext];
    n->kprev = NONE;
    n->ktail = s->ktail;
    n->kcount = s->kcount - 1;
    n->kpids = s->kpids - (s->pid != HS_NOID);
    n->kpid = n->kpids ? s->kpid : HS_NOID;
    for (k = 0; k < 2; k++) n->kcur[k] = s->kcur[k] == si ? s->knext : s->kcur[k];
    st->tab[i] = s->knext + 1;
    return;
  }
  st->slots[s->kprev].knext = s->knext;
  if (s->knext != NONE) st->slots[s->knext].kprev = s->kprev;
  else h->ktail = s->kprev;
  h->kcount--;
  h->kpids -= s->pid != HS_NOID;
  if (!h->kpids) h->kpid = HS_NOID;
  for (k = 0; k < 2; k++) if (h->kcur[k] == si) h->kcur[k] = s->knext;
}

/*
** The live target for a part (ts, pid, tid) of kind `kind` (K_KERNEL or
** K_USER; K_EXT matches any): among targets with that timestamp and
** thread, the oldest that has no part of this kind yet, else the newest.
** Targets without a thread are tried next, on timestamp and pid.  A
** chain's cursor per kind makes the oldest without a part cost nothing
** however many targets share a (ts, tid): parts are only ever added, so
** a cursor moves forward.
*/
static uint32_t find_target(hsi_stacks *st, int64_t ts, uint32_t pid, uint32_t tid, int kind) {
  int pass;
  for (pass = 0; pass < 2; pass++) {
    uint32_t want = pass == 0 ? tid : HS_NOID, i, hi, si, pick = NONE, n = 0;
    tslot *h;
    if (pass == 0 && tid == HS_NOID) continue;
    if ((i = tab_find(st, ts, want)) == NONE) continue;
    h = &st->slots[hi = st->tab[i] - 1];
    /* (every target matches when none has a pid or all have this one) */
    if (pass == 0 || pid == HS_NOID || h->kpids == 0 || h->kpid == pid) {
      n = h->kcount;
      if (kind == K_EXT) pick = hi;
      else {
        for (si = h->kcur[kind]; si != NONE && st->slots[si].part[kind]; si = st->slots[si].knext) {}
        h->kcur[kind] = pick = si;
      }
      if (pick == NONE) pick = h->ktail;
    } else {
      /* a thread-less chain holding targets of other processes: walked */
      uint32_t newest = NONE;
      for (si = hi; si != NONE; si = st->slots[si].knext) {
        const tslot *s = &st->slots[si];
        st->c.walked++;
        if (s->pid != HS_NOID && s->pid != pid) continue;
        n++;
        newest = si;
        if (pick == NONE && (kind == K_EXT || !s->part[kind])) pick = si;
      }
      if (pick == NONE) pick = newest;
    }
    if (n) {
      if (n > 1) st->c.ambiguous++;
      if (pass == 1) st->c.matched_notid++;
      return pick;
    }
  }
  return NONE;
}

/* ------------------------------------------------------ target slots */

static int deliver(hsi_stacks *st, uint64_t target, uint32_t stack) {
  if (st->fn) { st->fn(st->ud, target, stack); return 0; }
  if (st->nres == st->capres) {
    size_t nc = st->capres ? st->capres * 2 : 1024;
    hsi_stack_match *nr = realloc(st->res, nc * sizeof *nr);
    if (!nr) { st->nomem = 1; return HS_ENOMEM; }
    st->res = nr; st->capres = nc;
  }
  st->res[st->nres].target = target;
  st->res[st->nres].stack = stack;
  st->nres++;
  return 0;
}

/* The final id of a stack of one part (the usual case), cached per part;
   NONE when out of memory. */
static uint32_t final_of(hsi_stacks *st, uint32_t part) {
  uint32_t id;
  if (part >= st->capp2f) {
    uint32_t nc = st->capp2f ? st->capp2f : 1024;
    uint32_t *np;
    while (nc <= part) nc *= 2;
    if ((np = realloc(st->p2f, (size_t)nc * sizeof *np)) != NULL) {
      memset(np + st->capp2f, 0, (size_t)(nc - st->capp2f) * sizeof *np);
      st->p2f = np; st->capp2f = nc;
    }
  }
  if (part < st->capp2f && st->p2f[part]) return st->p2f[part];
  {
    /* the part's frames go in as they lie (another table's arena, which
       this interning does not move) with the hash the part has: the same
       frames, the same hash_frames */
    size_t n;
    const uint64_t *f = itab_frames(&st->parts, part, &n);
    id = n ? itab_intern_h(&st->final, f, n, st->parts.hash[part]) : 0;
  }
  if (id != NONE && part < st->capp2f) st->p2f[part] = id;
  return id;
}

/* Join the parts of a slot (kernel first), intern, deliver, free the slot. */
static int finalize(hsi_stacks *st, uint32_t si) {
  tslot *s = &st->slots[si];
  int rc = 0;
  if (s->orphan) {
    st->c.orphaned++;
  } else if (s->part[K_KERNEL] || s->part[K_USER]) {
    uint32_t id;
    if (!s->part[K_KERNEL] || !s->part[K_USER]) {
      id = final_of(st, s->part[K_KERNEL] ? s->part[K_KERNEL] : s->part[K_USER]);
    } else {
      size_t nk, nu;
      const uint64_t *fk = itab_frames(&st->parts, s->part[K_KERNEL], &nk);
      const uint64_t *fu = itab_frames(&st->parts, s->part[K_USER], &nu);
      uint64_t *f = tmpbuf(st, nk + nu);
      if (!f) return HS_ENOMEM;
      memcpy(f, fk, nk * sizeof *f);
      memcpy(f + nk, fu, nu * sizeof *f);
      id = itab_intern(&st->final, f, nk + nu);
    }
    if (id == NONE) { st->nomem = 1; rc = HS_ENOMEM; }
    else {
      st->c.delivered++;
      if (s->nparts > 1) st->c.joined++;
      rc = deliver(st, s->target, id);
    }
  }
  s->state = S_FREE;
  st->freel[st->nfree++] = si;
  return rc;
}

/*
** A live target whose stack reached user space and waits for no key is
** complete: parts come kernel first, then user (§6.4 rule 4), so nothing
** can follow.  Delivering it now keeps the live set small.
*/
static int kern(uint64_t a, int w) { return a >= HSI_KERNEL_BASE || (w == 4 && a >= 0x80000000u); }

static int maybe_complete(hsi_stacks *st, uint32_t si) {
  tslot *s = &st->slots[si];
  if (s->pending || s->state != S_LIVE) return 0;
  if (!s->part[K_USER]) {
    size_t n;
    const uint64_t *f = itab_frames(&st->parts, s->part[K_KERNEL], &n);
    if (!n || kern(f[n - 1], s->width)) return 0;     /* kernel part only: a user part may come */
  }
  tab_del(st, si);
  return finalize(st, si);
}

static int retire(hsi_stacks *st, uint32_t si) {
  tab_del(st, si);
  st->slots[si].state = S_RETIRED;
  return st->slots[si].pending ? 0 : finalize(st, si);
}

/* Retire targets that left the window as of time `now`. */
static inline int advance(hsi_stacks *st, int64_t now) {
  int rc = 0;
  if (now > st->now) st->now = now;
  while (st->fcount) {
    uint64_t e = st->fifo[st->fhead];
    uint32_t si = (uint32_t)e;
    const tslot *s = &st->slots[si];
    int stale = s->state != S_LIVE || s->seq != (uint32_t)(e >> 32);
    if (!stale && st->nlive <= st->max_live
        && !(st->now > s->ts && (uint64_t)st->now - (uint64_t)s->ts > (uint64_t)st->window))
      break;
    st->fhead = (st->fhead + 1) & (st->fcap - 1);
    st->fcount--;
    if (!stale && retire(st, si) != 0) rc = HS_ENOMEM;
  }
  return rc;
}

/* A live slot for a target registered as number seq, in the (ts, tid)
   table and at the end of the queue: 0 or HS_ENOMEM. */
static int slot_add(hsi_stacks *st, int64_t ts, uint32_t pid, uint32_t tid, uint64_t target, uint32_t seq) {
  uint32_t si, i, mask, k;
  tslot *s;
  if (st->nfree == 0) {
    uint32_t nc = st->capslots ? st->capslots * 2 : 1024;
    tslot *ns;
    uint32_t *nf;
    if (nc < st->capslots) return HS_ENOMEM;
    if (!(ns = realloc(st->slots, (size_t)nc * sizeof *ns))) return HS_ENOMEM;
    st->slots = ns;
    if (!(nf = realloc(st->freel, (size_t)nc * sizeof *nf))) return HS_ENOMEM;
    st->freel = nf;
    for (k = nc; k > st->capslots; k--) {
      st->slots[k - 1].state = S_FREE;
      st->freel[st->nfree++] = k - 1;
    }
    st->capslots = nc;
  }
  if ((uint64_t)(st->nkeys + 1) * 2 > st->tabcap && tab_grow(st) != 0) return HS_ENOMEM;
  if (st->fcount == st->fcap) {
    /* full: drop stale entries when they are most of it, else grow */
    uint32_t nc = st->fcap ? st->fcap * 2 : 1024, j = 0;
    uint64_t *nf;
    if (st->fcap && st->nlive < st->fcap / 4) nc = st->fcap;
    if (!(nf = malloc((size_t)nc * sizeof *nf))) return HS_ENOMEM;
    for (k = 0; k < st->fcount; k++) {
      uint64_t e = st->fifo[(st->fhead + k) & (st->fcap - 1)];
      const tslot *o = &st->slots[(uint32_t)e];
      if (o->state == S_LIVE && o->seq == (uint32_t)(e >> 32)) nf[j++] = e;
    }
    free(st->fifo);
    st->fifo = nf; st->fcap = nc; st->fhead = 0; st->fcount = j;
  }
  si = st->freel[--st->nfree];
  s = &st->slots[si];
  memset(s, 0, sizeof *s);
  s->ts = ts; s->pid = pid; s->tid = tid; s->target = target;
  s->seq = seq;
  s->state = S_LIVE;
  s->knext = s->kprev = NONE;
  if ((i = tab_find(st, ts, tid)) != NONE) {      /* the end of its chain */
    tslot *h = &st->slots[st->tab[i] - 1];
    s->kprev = h->ktail;
    st->slots[h->ktail].knext = si;
    h->ktail = si;
    h->kcount++;
    h->kpids += pid != HS_NOID;
    if (pid != HS_NOID) h->kpid = h->kpid == HS_NOID || h->kpid == pid ? pid : KPID_MANY;
    for (k = 0; k < 2; k++) if (h->kcur[k] == NONE) h->kcur[k] = si;
  } else {                                        /* a chain of its own */
    mask = st->tabcap - 1;
    for (i = slot_hash(ts, tid) & mask; st->tab[i]; i = (i + 1) & mask) {}
    st->tab[i] = si + 1;
    st->nkeys++;
    s->ktail = si;
    s->kcount = 1;
    s->kpids = pid != HS_NOID;
    s->kpid = pid;
    s->kcur[0] = s->kcur[1] = si;
  }
  st->nlive++;
  st->fifo[(st->fhead + st->fcount) & (st->fcap - 1)] = (uint64_t)s->seq << 32 | si;
  st->fcount++;
  return 0;
}

/*
** The held target: the newest one, counted live (nlive) but kept out of
** the slots, the table and the queue until anything but the StackWalk of
** its own event comes (hold_flush puts it where it would have been; being
** the newest, it goes at the end of the queue).  Nothing can tell the
** difference: it is the newest, so advance could not have retired it
** before older ones, and a part finds it only when no slot has its
** (timestamp, thread).  Most stacks (one whole op 32 record right after
** its event) then cost no slot, no table entry and no queue entry.
*/
static int hold_flush(hsi_stacks *st) {
  if (!st->hold.on) return 0;
  st->hold.on = 0;
  st->nlive--;                            /* slot_add counts it again */
  return slot_add(st, st->hold.ts, st->hold.pid, st->hold.tid, st->hold.target, st->hold.seq);
}

int hsi_stacks_want(hsi_stacks *st, int64_t ts, uint32_t pid, uint32_t tid, uint64_t target) {
  st->c.targets++;
  if (hold_flush(st) != 0) return HS_ENOMEM;
  if (st->direct) {
    st->hold.on = 1;
    st->hold.ts = ts; st->hold.pid = pid; st->hold.tid = tid; st->hold.target = target;
    st->hold.seq = ++st->seq;
    st->nlive++;
  } else if (slot_add(st, ts, pid, tid, target, ++st->seq) != 0) return HS_ENOMEM;
  return advance(st, ts);
}

static uint32_t read_part(hsi_stacks *st, const uint8_t *p, size_t n, int w, const uint64_t **first);

/* Is a slot live for (ts, tid)? */
static int tab_has(const hsi_stacks *st, int64_t ts, uint32_t tid) { return tab_find(st, ts, tid) != NONE; }

/*
** The held target's own op 32 record (kernel, no ext items), when it
** completes the stack at once: 1 if it was taken here, 0 if the general
** path must see it (then the hold is flushed), HS_ENOMEM.  The same
** counts and the same delivery as stack_part + maybe_complete + finalize
** on a slot.
*/
static int hold_take(hsi_stacks *st, const hs_event *ev) {
  const uint8_t *p = ev->payload;
  size_t len = ev->payload_len, n;
  int w = ev->pointer_size == 4 ? 4 : 8;
  uint64_t inner, outer;
  uint32_t part, id;
  if (len < 16 || walk_ets(st, ev, p) != st->hold.ts || rd32(p + 12) != st->hold.tid
      || st->hold.tid == HS_NOID || (st->nlive > 1 && tab_has(st, st->hold.ts, st->hold.tid)))
    return 0;
  n = (len - 16) / (size_t)w;
  if (!n) return 0;                        /* empty: nothing to add, the target stays */
  inner = rdw(p + 16, (unsigned)w);
  outer = rdw(p + 16 + (size_t)w * (n - 1), (unsigned)w);
  /* a kernel part that ends in the kernel waits for its user part */
  if (hsi_addr_is_kernel(inner, w) && kern(outer, w)) return 0;
  if ((part = read_part(st, p + 16, n, w, NULL)) == NONE) return HS_ENOMEM;
  st->c.op32++;
  st->c.matched++;
  parted(st, st->hold.target);
  st->hold.on = 0;
  st->nlive--;
  if ((id = final_of(st, part)) == NONE) { st->nomem = 1; return HS_ENOMEM; }
  st->c.delivered++;
  return deliver(st, st->hold.target, id) != 0 ? HS_ENOMEM : 1;
}

void hsi_stacks_set_direct(hsi_stacks *st, int on) {
  if (!on && hold_flush(st) != 0) st->nomem = 1;
  st->direct = on != 0;
}

/* Append part `pid` (part-table id) to slot si's kind. */
static int add_part(hsi_stacks *st, uint32_t si, int kind, uint32_t part) {
  tslot *s = &st->slots[si];
  if (!part) return 0;
  s->nparts++;
  if (!s->part[kind]) { s->part[kind] = part; return 0; }
  {
    size_t na, nb;
    const uint64_t *fa = itab_frames(&st->parts, s->part[kind], &na);
    const uint64_t *fb = itab_frames(&st->parts, part, &nb);
    uint64_t *f = tmpbuf(st, na + nb);
    uint32_t id;
    if (!f) return HS_ENOMEM;
    memcpy(f, fa, na * sizeof *f);
    memcpy(f + na, fb, nb * sizeof *f);
    if ((id = itab_intern(&st->parts, f, na + nb)) == NONE) { st->nomem = 1; return HS_ENOMEM; }
    s->part[kind] = id;
  }
  return 0;
}

/*
** Most stacks come again (an allocation site in a loop), so recent parts
** are remembered by a cheap key, the count and the first, middle and last
** frames: a stack seen before costs a comparison of its frames, not a
** copy, a hash and a lookup.  Another stack with the same key takes the
** full way; either way the part id is the one interning gives.  The slot
** keeps 32 more bits of the key, so that a slot held by another stack
** (most of them, on a trace whose stacks are all distinct) is told apart
** without reading that stack's frames from memory.
*/
static uint64_t pcache_key(const uint8_t *p, size_t n, int w) {
  uint64_t a = rdw(p, (unsigned)w), m = rdw(p + (size_t)w * (n / 2), (unsigned)w);
  uint64_t z = rdw(p + (size_t)w * (n - 1), (unsigned)w);
  return (a ^ m * 0x9E3779B97F4A7C15ull ^ z * 0xC2B2AE3D27D4EB4Full ^ n) * 0xFF51AFD7ED558CCDull;
}

static int same_frames(const uint64_t *f, const uint8_t *p, size_t n, int w) {
  size_t i;
  if (w == 8) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return memcmp(f, p, n * 8) == 0;      /* the payload's order is the host's */
#else
    for (i = 0; i < n; i++) if (f[i] != rd64(p + 8 * i)) return 0;
#endif
  } else {
    for (i = 0; i < n; i++) if (f[i] != rd32(p + 4 * i)) return 0;
  }
  return 1;
}

/* Frames of width w at p[0..n) interned as a part (through the scratch
   buffer); *first, when asked, the part's frames. */
static uint32_t read_part(hsi_stacks *st, const uint8_t *p, size_t n, int w, const uint64_t **first) {
  uint64_t *f;
  uint64_t a = HASH_A0(n), b = HASH_B0;
  size_t i;
  uint32_t id, slot = 0, key = 0;
  if (n) {
    uint64_t h = pcache_key(p, n, w);
    slot = (uint32_t)(h >> 40) & (PCACHE - 1);
    key = (uint32_t)h;
    if ((id = st->pcache[slot].id) != 0 && st->pcache[slot].key == key) {
      size_t m;
      const uint64_t *g = itab_frames(&st->parts, id, &m);
      if (m == n && same_frames(g, p, n, w)) {
        if (first) *first = g;
        return id;
      }
    }
  }
  if (!(f = tmpbuf(st, n ? n : 1))) return NONE;
  /* copy and hash in one pass, the width decided once */
  if (w == 8)
    for (i = 0; i + 1 < n; i += 2) {
      f[i] = rd64(p + 8 * i); f[i + 1] = rd64(p + 8 * i + 8);
      HASH_A(a, f[i]); HASH_B(b, f[i + 1]);
    }
  else
    for (i = 0; i + 1 < n; i += 2) {
      f[i] = rd32(p + 4 * i); f[i + 1] = rd32(p + 4 * i + 4);
      HASH_A(a, f[i]); HASH_B(b, f[i + 1]);
    }
  if (i < n) { f[i] = rdw(p + (size_t)w * i, (unsigned)w); HASH_A(a, f[i]); }
  if (first) *first = f;
  id = itab_intern_h(&st->parts, f, n, hash_end(a, b));
  if (id == NONE) st->nomem = 1;
  else if (n) { st->pcache[slot].id = id; st->pcache[slot].key = key; }
  return id;
}

/* A whole-frames part (op 32, ext STACK_TRACE) for (ts, pid, tid). */
static int stack_part(hsi_stacks *st, int64_t ts, uint32_t pid, uint32_t tid,
                      const uint8_t *p, size_t n, int w, uint32_t si) {
  uint32_t part;
  int kind;
  if (!n) return 0;                       /* empty stack: nothing to add */
  kind = hsi_addr_is_kernel(rdw(p, (unsigned)w), w) ? K_KERNEL : K_USER;
  if (si == NONE) si = find_target(st, ts, pid, tid, kind);
  /* A part no target wants is not interned: stacks of events nobody
     tracks (or a scope that keeps nothing) cost no hashing. */
  if (si == NONE) { st->c.unmatched++; return 0; }
  if ((part = read_part(st, p, n, w, NULL)) == NONE) return HS_ENOMEM;
  st->c.matched++;
  parted(st, st->slots[si].target);
  if (add_part(st, si, kind, part) != 0) return HS_ENOMEM;
  st->slots[si].width = (uint8_t)w;
  return maybe_complete(st, si);
}

/* A key reference: the part arrives with the key's next definition. */
static int key_ref(hsi_stacks *st, int table, int kind, uint64_t key, uint32_t si) {
  kref *r;
  uint32_t ri;
  if (st->freeref) {
    ri = st->freeref - 1;
    st->freeref = st->refs[ri].next;
  } else {
    if (st->nrefs == st->caprefs) {
      uint32_t nc = st->caprefs ? st->caprefs * 2 : 256;
      kref *nr = realloc(st->refs, (size_t)nc * sizeof *nr);
      if (!nr) return HS_ENOMEM;
      st->refs = nr; st->caprefs = nc;
    }
    ri = st->nrefs++;
  }
  r = &st->refs[ri];
  r->slot = si;
  r->kind = (uint8_t)kind;
  r->next = kmap_get(&st->pend[table], key);
  if (kmap_put(&st->pend[table], key, ri + 1) != 0) return HS_ENOMEM;
  if (si != NONE) st->slots[si].pending++;
  return 0;
}

/* A key definition: resolve what waits for it in `table`. */
static int resolve(hsi_stacks *st, int table, uint64_t key, uint32_t part, int w) {
  uint32_t ri = kmap_get(&st->pend[table], key), n = 0;
  int rc = 0;
  if (!ri) return 0;
  kmap_del(&st->pend[table], key);
  while (ri) {
    kref *r = &st->refs[ri - 1];
    uint32_t next = r->next;
    n++;
    st->c.key_resolved++;
    if (r->slot != NONE) {
      tslot *s = &st->slots[r->slot];
      if (add_part(st, r->slot, r->kind, part) != 0) rc = HS_ENOMEM;
      s->width = (uint8_t)w;
      if (--s->pending == 0) {
        if (s->state == S_RETIRED) { if (finalize(st, r->slot) != 0) rc = HS_ENOMEM; }
        else if (maybe_complete(st, r->slot) != 0) rc = HS_ENOMEM;
      }
    }
    r->next = st->freeref;
    st->freeref = ri;
    ri = next;
  }
  return rc ? rc : (int)n;
}

static int key_def(hsi_stacks *st, const uint8_t *p, size_t len, int w) {
  uint64_t key;
  const uint64_t *f = NULL;
  uint32_t part;
  size_t n;
  int table, r1, r2;
  if (len < (size_t)w) { st->c.damaged++; return 0; }
  st->c.key_defs++;
  key = rdw(p, (unsigned)w);
  n = (len - (size_t)w) / (size_t)w;
  if ((part = read_part(st, p + w, n, w, &f)) == NONE) return HS_ENOMEM;
  table = n && hsi_addr_is_kernel(f[n - 1], w) ? K_KERNEL : K_USER;
  r1 = resolve(st, table, key, part, w);
  r2 = resolve(st, K_EXT, key, part, w);
  if (r1 < 0 || r2 < 0) return HS_ENOMEM;
  if (r1 + r2 == 0) st->c.key_defs_unused++;
  return 0;
}

/* ------------------------------------------------------------------ feed */

static int feed_stackwalk(hsi_stacks *st, const hs_event *ev, int op) {
  const uint8_t *p = ev->payload;
  size_t len = ev->payload_len;
  int w = ev->pointer_size == 4 ? 4 : 8;
  switch (op) {
    case 32: {
      int64_t ets;
      if (len < 16) { st->c.damaged++; return 1; }
      st->c.op32++;
      ets = walk_ets(st, ev, p);
      if (stack_part(st, ets, rd32(p + 8), rd32(p + 12), p + 16, (len - 16) / (size_t)w, w, NONE) != 0)
        return HS_ENOMEM;
      return 1;
    }
    case 37: case 38: {
      int kind = op == 37 ? K_KERNEL : K_USER;
      uint32_t si;
      uint64_t key;
      if (len < 16 + (size_t)w) { st->c.damaged++; return 1; }
      st->c.key_refs++;
      key = rdw(p + 16, (unsigned)w);
      si = find_target(st, walk_ets(st, ev, p), rd32(p + 8), rd32(p + 12), kind);
      if (si == NONE) st->c.unmatched++;
      else { st->c.matched++; parted(st, st->slots[si].target); }
      return key_ref(st, kind, kind, key, si) != 0 ? HS_ENOMEM : 1;
    }
    case 34: case 35: case 36:
      return key_def(st, p, len, w) != 0 ? HS_ENOMEM : 1;
    default:
      return 0;
  }
}

/* Remember which target a non-zero MatchId belongs to, so that the other
   half of a split stack (§4) can join it. */
static uint32_t matchid_slot(hsi_stacks *st, uint64_t id, uint32_t si) {
  uint32_t k;
  for (k = 0; k < st->nmid && k < NMATCHID; k++)
    if (st->mid[k].id == id) {
      uint32_t s = st->mid[k].slot;
      if (st->slots[s].state != S_FREE && st->slots[s].seq == st->mid[k].seq) return s;
      break;
    }
  if (si != NONE) {
    k = st->nmid++ % NMATCHID;
    st->mid[k].id = id; st->mid[k].slot = si; st->mid[k].seq = st->slots[si].seq;
  }
  return si;
}

static int feed_ext(hsi_stacks *st, const hs_event *ev) {
  uint32_t pos = 0, si = NONE;
  int found = 0, looked = 0, r;
  hs_ext_item it;
  while ((r = hs_event_ext_next(ev, &pos, &it)) == 1) {
    int w;
    uint64_t mid;
    if (it.type == HS_EXT_STACK_TRACE32 || it.type == HS_EXT_STACK_TRACE64) {
      w = it.type == HS_EXT_STACK_TRACE64 ? 8 : 4;
      found = 1;
      st->c.ext_stacks++;
      if (it.size < 8) { st->c.damaged++; continue; }
      if (!looked) { si = find_target(st, ev->timestamp, ev->pid, ev->tid, K_EXT); looked = 1; }
      mid = rd64(it.data);
      {
        uint32_t tsi = mid ? matchid_slot(st, mid, si) : si;
        if (tsi == NONE) { st->c.unmatched++; continue; }
        if (stack_part(st, ev->timestamp, ev->pid, ev->tid, it.data + 8,
                       (it.size - 8u) / (unsigned)w, w, tsi) != 0)
          return HS_ENOMEM;
      }
    } else if (it.type == HS_EXT_STACK_KEY32 || it.type == HS_EXT_STACK_KEY64) {
      uint64_t key;
      w = it.type == HS_EXT_STACK_KEY64 ? 8 : 4;
      found = 1;
      st->c.ext_keys++;
      if (it.size < 8 + w) { st->c.damaged++; continue; }
      if (!looked) { si = find_target(st, ev->timestamp, ev->pid, ev->tid, K_EXT); looked = 1; }
      st->c.key_refs++;
      mid = rd64(it.data);
      key = rdw(it.data + 8, (unsigned)w);
      {
        uint32_t tsi = mid ? matchid_slot(st, mid, si) : si;
        if (tsi == NONE) st->c.unmatched++;
        else { st->c.matched++; parted(st, st->slots[tsi].target); }
        /* the part's kind is not known until the definition: user unless
           the definition's innermost frame is kernel -- approximated as user */
        if (key_ref(st, K_EXT, K_USER, key, tsi) != 0) return HS_ENOMEM;
      }
    }
  }
  if (r < 0) st->c.damaged++;
  return found;
}

int hsi_stacks_walk_provider(const hs_guid *g) { return hs_guid_eq(g, &G_STACKWALK); }

int hsi_stacks_feed(hsi_stacks *st, const hs_event *ev) {
  int rc = 0;
  int walk = hsi_stacks_walk(ev);
  /* Events that bring no stack leave the hold alone (its own event first
     of all; a held target has no part, so leaving the window would only
     free it). */
  if (st->hold.on && (walk || (ev->flags & HS_EVF_EXT))) {
    /* Its own StackWalk, inside the window, may complete it.  Anything
       else sees it in the slots, where it would have been. */
    int64_t now = ev->timestamp > st->now ? ev->timestamp : st->now;
    int inside = !(now > st->hold.ts && (uint64_t)now - (uint64_t)st->hold.ts > (uint64_t)st->window);
    int take = inside && (ev->flags & (HS_EVF_KERNEL | HS_EVF_EXT)) == HS_EVF_KERNEL && ev->hook == 0x1820;
    if (!take && hold_flush(st) != 0) return HS_ENOMEM;
    if (advance(st, ev->timestamp) != 0) return HS_ENOMEM;
    if (take) {
      int r = hold_take(st, ev);
      if (r != 0) return r;
      if (hold_flush(st) != 0) return HS_ENOMEM;
    }
  } else if (advance(st, ev->timestamp) != 0) return HS_ENOMEM;
  if (walk) {
    int op = (ev->flags & HS_EVF_KERNEL) ? (ev->hook & 0xFF) : ev->opcode;
    rc = feed_stackwalk(st, ev, op);
  }
  if (rc >= 0 && (ev->flags & HS_EVF_EXT)) {
    int r = feed_ext(st, ev);
    if (r < 0) return r;
    if (r) rc = 1;
  }
  return rc;
}

int hsi_stacks_advance(hsi_stacks *st, int64_t ts) { return advance(st, ts); }

int hsi_stacks_finish(hsi_stacks *st) {
  int rc = 0, k;
  uint32_t i;
  if (hold_flush(st) != 0) return HS_ENOMEM;
  /* every reference still waiting is an orphan; its target stays unknown */
  for (k = 0; k < 3; k++) {
    kmap *m = &st->pend[k];
    for (i = 0; i < m->cap; i++) {
      uint32_t ri = m->val[i];
      while (ri) {
        kref *r = &st->refs[ri - 1];
        st->c.key_orphaned++;
        if (r->slot != NONE) {
          st->slots[r->slot].orphan = 1;
          st->slots[r->slot].pending--;
        }
        ri = r->next;
      }
      m->val[i] = 0;
    }
    m->n = 0;
  }
  st->nrefs = 0;
  st->freeref = 0;
  /* live targets in registration order, then the retired ones */
  while (st->fcount) {
    uint64_t e = st->fifo[st->fhead];
    uint32_t si = (uint32_t)e;
    st->fhead = (st->fhead + 1) & (st->fcap - 1);
    st->fcount--;
    if (st->slots[si].state == S_LIVE && st->slots[si].seq == (uint32_t)(e >> 32)
        && retire(st, si) != 0) rc = HS_ENOMEM;
  }
  for (i = 0; i < st->capslots; i++)
    if (st->slots[i].state == S_RETIRED && finalize(st, i) != 0) rc = HS_ENOMEM;
  return rc;
}
