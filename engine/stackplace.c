/*
** stackplace.c -- grouping keys that tell apart the programs behind one
** stack id (stackplace.h).
**
** Per stack id, the instance of its first record in the selection; a
** record of that id from the same instance has the id as its key, with
** no lookup.  From another instance: the id's key as well when none of
** its user frames lies where the trace's images disagree (worked out
** once per id); else the record finds its (id, instance) pair in a small
** table, or works out the pair's placement (the images holding each
** frame) and compares it with the id's placements so far.
*/
#include <stdlib.h>
#include <string.h>
#include "hash.h"
#include "stackplace.h"

typedef struct first {
  uint32_t inst1;        /* the first record's instance + 1; 0: the id not seen yet */
  uint32_t era1;         /* its era there (hsi_procmap_era) */
  uint32_t rec;          /* that record */
  uint32_t places;       /* its placements (index + 1 into the list), 0: none worked out */
  uint32_t nplaces;
  uint8_t apart;         /* 0 not asked; 1 no user frame where images disagree (one
                            placement); 2 some: each instance looked up */
} first;

typedef struct range { uint64_t lo, hi; } range;

typedef struct place {
  uint64_t sig;          /* the images of every frame, hashed */
  uint64_t key;
  uint32_t next;         /* the id's next placement + 1 */
} place;

typedef struct pairs {   /* (id << 32 | representative instance) -> key; 0 empty (ids start at 1) */
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
  range *amb;            /* user address ranges images disagree on, sorted, apart */
  size_t namb;
  int have_amb;
  uint32_t *rep;         /* per instance: the first instance of its images there (instance_marks) */
  uint32_t ninst;
  long split;            /* ids with a second placement */
} ctx;

/*
** The address ranges where the images of the trace disagree: the user
** images of every process, at every time, in clusters of overlapping
** ones; a cluster whose images are not all one image (the same base,
** size and identity: ntdll.dll in each process, a DLL loaded again) is
** a range whose addresses can be different code in different processes
** or at different times.  A stack with no user frame in one has the
** same placement in every process, with no lookup.  (A frame where one
** process has an image and another none is taken as the same code: the
** other's image events are missing, since its code ran there.)
*/
typedef struct ival { uint64_t lo, hi, sig; } ival;

static int by_lo(const void *a, const void *b) {
  const ival *x = (const ival *)a, *y = (const ival *)b;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int ambiguous_ranges(ctx *c) {
  uint32_t n = hsi_procmap_nimages(c->pm), i, m = 0;
  ival *iv;
  size_t k, cap = 0;
  c->have_amb = 1;
  if (!n) return 0;
  if (!(iv = malloc((size_t)n * sizeof *iv))) return -1;
  for (i = 0; i < n; i++) {
    const hsi_image *im = hsi_procmap_image(c->pm, i);
    if (!im || im->base >= HSI_KERNEL_BASE || !im->size) continue;
    iv[m].lo = im->base;
    iv[m].hi = hsi_image_end(im);
    iv[m++].sig = hsi_image_sig(im);
  }
  qsort(iv, m, sizeof *iv, by_lo);
  for (k = 0; k < m;) {
    size_t j = k + 1;
    uint64_t hi = iv[k].hi;
    int one = 1;
    for (; j < m && iv[j].lo < hi; j++) {
      one = one && iv[j].lo == iv[k].lo && iv[j].hi == iv[k].hi && iv[j].sig == iv[k].sig;
      if (iv[j].hi > hi) hi = iv[j].hi;
    }
    if (!one) {
      if (c->namb == cap) {
        size_t nc = cap ? cap * 2 : 16;
        range *nr = realloc(c->amb, nc * sizeof *nr);
        if (!nr) { free(iv); return -1; }
        c->amb = nr; cap = nc;
      }
      c->amb[c->namb].lo = iv[k].lo;
      c->amb[c->namb++].hi = hi;
    }
    k = j;
  }
  free(iv);
  return 0;
}

/* The range of c->amb holding a, or -1. */
static long amb_index(const ctx *c, uint64_t a) {
  size_t lo = 0, hi = c->namb;
  while (lo < hi) {                      /* the first range ending after a */
    size_t mid = lo + (hi - lo) / 2;
    if (c->amb[mid].hi <= a) lo = mid + 1; else hi = mid;
  }
  return lo < c->namb && c->amb[lo].lo <= a ? (long)lo : -1;
}

static int in_ambiguous(const ctx *c, uint64_t a) { return amb_index(c, a) >= 0; }

/*
** Per process instance, the images it had in those ranges, hashed into
** a mark (0: none), or ODD when two images of it shared one range over
** the trace (replaced at a base).  Instances of one mark have one image,
** or none, at every address where the trace's images disagree, so they
** name every frame alike: each instance's representative is the first
** instance of its mark (itself when ODD), and the same program in many
** processes is one placement, looked up once.
*/
#define ODD UINT64_MAX
typedef struct imark { uint32_t inst, r; uint64_t sig; } imark;

static int by_inst(const void *a, const void *b) {
  const imark *x = (const imark *)a, *y = (const imark *)b;
  if (x->inst != y->inst) return x->inst < y->inst ? -1 : 1;
  if (x->r != y->r) return x->r < y->r ? -1 : 1;
  return (x->sig > y->sig) - (x->sig < y->sig);
}

static int by_sig_inst(const void *a, const void *b) {      /* imark as (mark, instance) */
  const imark *x = (const imark *)a, *y = (const imark *)b;
  if (x->sig != y->sig) return x->sig < y->sig ? -1 : 1;
  return (x->inst > y->inst) - (x->inst < y->inst);
}

static int instance_marks(ctx *c) {
  uint32_t n = hsi_procmap_nimages(c->pm), i, m = 0;
  uint64_t *mark;
  imark *im;
  c->ninst = hsi_procmap_ninstances(c->pm);
  if (!(c->rep = malloc(((size_t)c->ninst + 1) * sizeof *c->rep))) return -1;
  for (i = 0; i <= c->ninst; i++) c->rep[i] = i;
  if (!c->namb || !n) return 0;
  mark = calloc((size_t)c->ninst + 1, sizeof *mark);
  im = malloc(((size_t)n > (size_t)c->ninst + 1 ? (size_t)n : (size_t)c->ninst + 1) * sizeof *im);
  if (!mark || !im) { free(mark); free(im); return -1; }
  for (i = 0; i < n; i++) {
    const hsi_image *g = hsi_procmap_image(c->pm, i);
    long r = g && g->base < HSI_KERNEL_BASE && g->size && g->instance <= c->ninst ? amb_index(c, g->base) : -1;
    if (r < 0) continue;
    im[m].inst = g->instance;
    im[m].r = (uint32_t)r;
    im[m++].sig = hsi_image_sig(g);
  }
  qsort(im, m, sizeof *im, by_inst);
  for (i = 0; i < m; i++) {
    uint64_t *k = &mark[im[i].inst];
    if (*k == ODD) continue;
    if (i && im[i - 1].inst == im[i].inst && im[i - 1].r == im[i].r) {
      if (im[i - 1].sig != im[i].sig) *k = ODD;  /* the same image again is no change */
      continue;
    }
    *k = hsi_mix64(*k ^ hsi_mix64((uint64_t)im[i].r + 1) ^ im[i].sig);
    if (*k == ODD || *k == 0) *k = 1;
  }
  for (i = 0, m = 0; i <= c->ninst; i++)    /* the instances by mark: the first of each is the rest's */
    if (mark[i] != ODD) { im[m].inst = i; im[m++].sig = mark[i]; }
  qsort(im, m, sizeof *im, by_sig_inst);
  for (i = 1; i < m; i++)
    if (im[i].sig == im[i - 1].sig) c->rep[im[i].inst] = c->rep[im[i - 1].inst];
  free(mark);
  free(im);
  return 0;
}

/* Whether a stack has a user frame where the images disagree. */
static int frames_apart(const ctx *c, uint32_t id) {
  size_t n, i;
  const uint64_t *f = hsi_stacks_frames(c->st, id, &n);
  for (i = 0; i < n; i++)
    if (f[i] < HSI_KERNEL_BASE && in_ambiguous(c, f[i])) return 1;
  return 0;
}

/* The images of a stack's frames in inst at ts, hashed: of the frames
   where the trace's images disagree, since every other frame is the
   same code in every process (one image there, or none; a kernel frame
   is named from the system process's images whatever the process), so
   a stack through one odd process's DLL looks up that DLL's frames
   alone. */
static uint64_t placement(const ctx *c, uint32_t id, uint32_t inst, int64_t ts) {
  size_t n, i;
  const uint64_t *f = hsi_stacks_frames(c->st, id, &n);
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (i = 0; i < n; i++)
    if (f[i] < HSI_KERNEL_BASE && in_ambiguous(c, f[i]))
      h = hsi_mix64(h ^ hsi_image_sig(hsi_procmap_image_at(c->pm, inst, f[i], ts)));
  return h;
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
  if (++f->nplaces == 2) c->split++;
  *key = p->key;
  return 0;
}

/* Who looks a stack up for records of inst in era: the first instance
   of inst's mark, or for a later era (an instance whose images changed
   meaning, whose mark is ODD) the era itself, numbered past the
   instances. */
static uint32_t looker(const ctx *c, uint32_t inst, uint32_t era) {
  if (era) return c->ninst + era;
  return inst <= c->ninst ? c->rep[inst] : inst;
}

/* The key of record r (of inst, in era), whose stack id has a first
   record in another instance or era. */
static int other_instance(ctx *c, uint32_t id, uint32_t inst, uint32_t era, uint32_t r, uint64_t *key) {
  first *f = &c->by_id[id];
  uint64_t pk, sig;
  uint32_t i, ri;
  size_t slot;
  if (!f->apart) {
    if (!c->have_amb && (ambiguous_ranges(c) != 0 || instance_marks(c) != 0)) return -1;
    f->apart = (uint8_t)(frames_apart(c, id) ? 2 : 1);
  }
  if (f->apart == 1) { *key = id; return 0; }
  ri = looker(c, inst, era);
  if (ri == looker(c, f->inst1 - 1, f->era1)) { *key = id; return 0; }
  pk = (uint64_t)id << 32 | ri;             /* the pair of the id and its looker */
  if (c->pr.cap && c->pr.k[slot = pair_slot(&c->pr, pk)] == pk) {
    *key = c->pr.v[slot];
    return 0;
  }
  if (!f->places) {                         /* the first instance's placement, at its first record */
    sig = placement(c, id, f->inst1 - 1, hsi_rec_stack_ts(c->R, f->rec, c->which));
    if (add_place(c, f, id, sig, key) != 0) return -1;
  }
  sig = placement(c, id, inst, hsi_rec_stack_ts(c->R, r, c->which));
  for (i = f->places; i; i = c->pl[i - 1].next)
    if (c->pl[i - 1].sig == sig) break;
  if (i) *key = c->pl[i - 1].key;
  else if (add_place(c, f, id, sig, key) != 0) return -1;
  return pair_put(&c->pr, pk, *key);
}

long hsi_stack_keys(const hsi_recs *R, const hsi_stacks *st, const hsi_procmap *pm,
                    const uint32_t *idx, size_t n, int which, uint64_t *keys) {
  ctx c;
  uint32_t nst = hsi_stacks_count(st);
  size_t i;
  int rc = 0, eras = hsi_procmap_has_eras(pm);
  memset(&c, 0, sizeof c);
  c.R = R; c.st = st; c.pm = pm; c.which = which;
  if (n && !(c.by_id = calloc((size_t)nst + 1, sizeof *c.by_id))) return -1;
  for (i = 0; i < n && rc == 0 && (keys || !c.split); i++) {   /* only asked whether: the first */
    uint32_t r = idx[i], id = hsi_rec_stack(R, r, which), inst = hsi_rec_stack_inst(R, r, which);
    uint64_t k = id;
    if (id != HSI_STACK_UNKNOWN && id <= nst) {
      first *f = &c.by_id[id];
      uint32_t era = eras ? hsi_procmap_era(pm, inst, hsi_rec_stack_ts(R, r, which)) : 0;
      if (!f->inst1) { f->inst1 = inst + 1; f->era1 = era; f->rec = r; }
      if ((f->inst1 != inst + 1 || f->era1 != era) && f->apart != 1) rc = other_instance(&c, id, inst, era, r, &k);
    }
    if (keys) keys[i] = k;
  }
  free(c.by_id); free(c.pl); free(c.pr.k); free(c.pr.v); free(c.amb); free(c.rep);
  return rc ? -1 : keys ? c.split : c.split > 0;
}
