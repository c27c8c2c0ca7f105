/*
** stackplace.c -- grouping keys that tell apart the programs behind one
** stack id (stackplace.h).
**
** Per stack id, the instance of its first record in the selection; a
** record of that id from the same instance has the id as its key, with
** no lookup.  A record from another instance finds its (id, instance)
** pair in a small table, or works out the pair's placement (the images
** holding each frame) and compares it with the id's placements so far.
*/
#include <stdlib.h>
#include <string.h>
#include "hash.h"
#include "stackplace.h"

typedef struct first {
  uint32_t inst1;        /* the first record's instance + 1; 0: the id not seen yet */
  uint32_t rec;          /* that record */
  uint32_t places;       /* its placements (index + 1 into the list), 0: none worked out */
  uint32_t nplaces;
} first;

typedef struct place {
  uint64_t sig;          /* the images of every frame, hashed */
  uint64_t key;
  uint32_t next;         /* the id's next placement + 1 */
} place;

typedef struct pairs {   /* (id << 32 | instance) -> key; 0 empty (ids start at 1) */
  uint64_t *k, *v;
  size_t n, cap;
} pairs;

typedef struct ctx {
  const hsi_recs *R;
  const hsi_stacks *st;
  const hsi_procmap *pm;
  int which;
  first *by_id;
  place *pl;
  size_t npl, cappl;
  pairs pr;
} ctx;

/* An image as the frames' names depend on it: its file name, size,
   checksum and link timestamp (the same DLL in two processes is one). */
static uint64_t image_sig(const hsi_image *im) {
  if (!im) return 0;
  return hsi_mix64((uint64_t)im->module << 32 ^ im->size) ^
         ((uint64_t)im->checksum << 32 | im->time_date_stamp);
}

/* The images of a stack's user-space frames in inst at ts, hashed.  A
   kernel frame is named from the system process's images whatever the
   process (procmap.h), so it cannot tell two processes apart: a stack
   all in the kernel (a driver's pool allocations in every process) is
   one placement without a lookup. */
static uint64_t placement(const ctx *c, uint32_t id, uint32_t inst, int64_t ts) {
  size_t n, i;
  const uint64_t *f = hsi_stacks_frames(c->st, id, &n);
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (i = 0; i < n; i++)
    if (f[i] < HSI_KERNEL_BASE) h = hsi_mix64(h ^ image_sig(hsi_procmap_image_at(c->pm, inst, f[i], ts)));
  return h;
}

static int64_t ts_of(const ctx *c, uint32_t r) {
  return c->which == HSI_STACK_FREE ? c->R->ts_free[r] : c->R->ts_alloc[r];
}

/* The slot of key k: its own or the empty one where it goes. */
static size_t pair_slot(const pairs *p, uint64_t k) {
  size_t i = (size_t)hsi_mix64(k) & (p->cap - 1);
  while (p->k[i] && p->k[i] != k) i = (i + 1) & (p->cap - 1);
  return i;
}

static int pair_put(pairs *p, uint64_t k, uint64_t v) {
  size_t i;
  if ((p->n + 1) * 2 > p->cap) {
    pairs q;
    q.cap = p->cap ? p->cap * 2 : 64;
    q.n = p->n;
    q.k = calloc(q.cap, sizeof *q.k);
    q.v = calloc(q.cap, sizeof *q.v);
    if (!q.k || !q.v) { free(q.k); free(q.v); return -1; }
    for (i = 0; i < p->cap; i++)
      if (p->k[i]) {
        size_t j = pair_slot(&q, p->k[i]);
        q.k[j] = p->k[i];
        q.v[j] = p->v[i];
      }
    free(p->k); free(p->v);
    *p = q;
  }
  i = pair_slot(p, k);
  if (!p->k[i]) p->n++;
  p->k[i] = k;
  p->v[i] = v;
  return 0;
}

/* Add a placement of id; its key is the id for the first, then id + k * 2^32. */
static int add_place(ctx *c, first *f, uint32_t id, uint64_t sig, uint64_t *key) {
  place *p;
  if (c->npl == c->cappl) {
    size_t nc = c->cappl ? c->cappl * 2 : 16;
    place *np = realloc(c->pl, nc * sizeof *np);
    if (!np) return -1;
    c->pl = np;
    c->cappl = nc;
  }
  p = &c->pl[c->npl];
  p->sig = sig;
  p->key = (uint64_t)id + ((uint64_t)f->nplaces << 32);
  p->next = f->places;
  f->places = (uint32_t)++c->npl;
  f->nplaces++;
  *key = p->key;
  return 0;
}

/* The key of record r, whose stack id has a first record in another instance. */
static int other_instance(ctx *c, uint32_t id, uint32_t inst, uint32_t r, uint64_t *key) {
  first *f = &c->by_id[id];
  uint64_t pk = (uint64_t)id << 32 | inst, sig;
  uint32_t i;
  size_t slot;
  if (c->pr.cap && c->pr.k[slot = pair_slot(&c->pr, pk)] == pk) {
    *key = c->pr.v[slot];
    return 0;
  }
  if (!f->places && add_place(c, f, id, placement(c, id, f->inst1 - 1, ts_of(c, f->rec)), key) != 0)
    return -1;
  sig = placement(c, id, inst, ts_of(c, r));
  for (i = f->places; i; i = c->pl[i - 1].next)
    if (c->pl[i - 1].sig == sig) break;
  if (i) *key = c->pl[i - 1].key;
  else if (add_place(c, f, id, sig, key) != 0) return -1;
  return pair_put(&c->pr, pk, *key);
}

long hsi_stack_keys(const hsi_recs *R, const hsi_stacks *st, const hsi_procmap *pm,
                    const uint32_t *idx, size_t n, int which, uint64_t *keys) {
  ctx c;
  uint32_t nst = hsi_stacks_count(st), *col = which == HSI_STACK_FREE ? R->stk_free : R->stk_alloc;
  size_t i;
  long split = 0;
  int rc = 0;
  memset(&c, 0, sizeof c);
  c.R = R; c.st = st; c.pm = pm; c.which = which;
  if (n && !(c.by_id = calloc((size_t)nst + 1, sizeof *c.by_id))) return -1;
  for (i = 0; i < n && rc == 0; i++) {
    uint32_t r = idx[i], id = col[r], inst = R->inst[r];
    uint64_t k = id;
    first *f;
    if (id != HSI_STACK_UNKNOWN && id <= nst) {
      f = &c.by_id[id];
      if (!f->inst1) { f->inst1 = inst + 1; f->rec = r; }
      if (f->inst1 != inst + 1 && (rc = other_instance(&c, id, inst, r, &k)) == 0 && !keys && k != id) {
        split = 1;                       /* only asked whether: yes */
        break;
      }
    }
    if (keys) keys[i] = k;
  }
  for (i = 0; i <= nst && c.by_id && rc == 0 && keys; i++) split += c.by_id[i].nplaces > 1;
  free(c.by_id); free(c.pl); free(c.pr.k); free(c.pr.v);
  return rc ? -1 : split;
}
