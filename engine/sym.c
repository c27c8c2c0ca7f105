/*
** sym.c -- the symbol layer (sym.h): image identities, the lazy PDB
** search, the per-identity address caches and the frame text.
**
** Memory.  Every string handed out (function and file names, module
** names, report texts) is copied once into a chunked arena (chunks.h) with
** a hash index, so it never moves and outlives the PDB or map it came from: a
** PDB can be closed, or a map collected, without leaving a dangling frame.
** Cached frames live in one flat array; an identity's cache is an
** open-addressing table from RVA to (first frame, count).  Nothing is
** allocated per lookup.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sym.h"
#include "chunks.h"
#include "symmap.h"
#include "pdb.h"
#include "text.h"
#include "hash.h"

/* ------------------------------------------------------------ strings */

typedef struct strs {
  hsi_chunks text;            /* the strings' bytes: they never move */
  const char **tab;          /* open addressing: interned pointers, NULL = empty */
  uint32_t *hash;
  size_t cap, n;
} strs;

static int str_grow(strs *t) {
  size_t nc = t->cap ? t->cap * 2 : 1024, i, j;
  const char **nt = (const char **)calloc(nc, sizeof *nt);
  uint32_t *nh = (uint32_t *)malloc(nc * sizeof *nh);
  if (!nt || !nh) { free((void *)nt); free(nh); return -1; }
  for (i = 0; i < t->cap; i++) if (t->tab[i]) {
    for (j = t->hash[i] & (nc - 1); nt[j]; j = (j + 1) & (nc - 1)) {}
    nt[j] = t->tab[i];
    nh[j] = t->hash[i];
  }
  free((void *)t->tab);
  free(t->hash);
  t->tab = nt;
  t->hash = nh;
  t->cap = nc;
  return 0;
}

/* The interned copy of s (NULL stays NULL); "" when out of memory. */
static const char *intern(strs *t, const char *s) {
  size_t n, i;
  uint32_t h;
  char *p;
  if (!s) return NULL;
  n = strlen(s);
  if ((t->n + 1) * 2 > t->cap && str_grow(t) != 0) return "";
  h = hsi_hash_bytes(s, n);
  for (i = h & (t->cap - 1); t->tab[i]; i = (i + 1) & (t->cap - 1))
    if (t->hash[i] == h && strcmp(t->tab[i], s) == 0) return t->tab[i];
  if (!(p = hsi_chunks_alloc(&t->text, n + 1))) return "";
  memcpy(p, s, n + 1);
  t->tab[i] = p;
  t->hash[i] = h;
  t->n++;
  return p;
}

static void strs_free(strs *t) {
  hsi_chunks_free(&t->text);
  free((void *)t->tab);
  free(t->hash);
}

/* ---------------------------------------------------------- identities */

typedef struct cframe {
  const char *name, *file;
  uint64_t off;
  uint32_t line;
  uint8_t kind;
} cframe;

typedef struct ident {
  const char *module;        /* interned */
  const char *orig;          /* ImageId OriginalFileName, or NULL */
  const char *pdb_name;      /* interned; "" when !has_id */
  hs_guid guid;
  uint32_t age, tds;
  uint64_t size;
  int has_id, searched, status;
  const char *path, *detail; /* interned report texts */
  hsi_pdb *pdb;
  /* address cache: rva -> frames[first .. first + count) */
  uint64_t *rva;
  uint32_t *first;           /* first frame + 1; 0 = empty slot */
  uint8_t *count;
  size_t cap, n;
} ident;

struct hsi_syms {
  const hsi_procmap *pm;
  const hsi_symmap *sm;
  char *path;                /* the symbol path as given */
  char **dirs;               /* hsi_syms_add_dir, in order */
  size_t ndirs;
  hsi_sympath sp;            /* path entries, then dirs */
  ident *ids;
  size_t nids, capids;
  uint32_t *idmap;           /* open-addressed index of ids by id_hash (ident + 1) */
  size_t idcap;
  uint32_t *img;             /* image id -> ident + 1 */
  size_t nimg;
  cframe *frames;
  size_t nframes, capframes;
  strs s;
  const char **said;         /* messages given */
  size_t nsaid, capsaid;
  void (*msg)(void *, const char *);
  void *msg_ud;
  uint32_t gen;
  hsi_sym_stats st;
  hsi_sym_image *rep;         /* the last report */
};

hsi_syms *hsi_syms_new(const hsi_procmap *pm) {
  hsi_syms *sy = (hsi_syms *)calloc(1, sizeof *sy);
  if (!sy) return NULL;
  sy->pm = pm;
  sy->gen = 1;
  return sy;
}

static void forget(hsi_syms *sy, int pdbs) {
  size_t i;
  for (i = 0; i < sy->nids; i++) {
    ident *d = &sy->ids[i];
    if (d->cap) memset(d->first, 0, d->cap * sizeof *d->first);
    d->n = 0;
    if (pdbs) {
      hsi_pdb_close(d->pdb);
      d->pdb = NULL;
      d->searched = 0;
      d->status = 0;
      d->path = d->detail = NULL;
    }
  }
  sy->nframes = 0;
  sy->gen++;
}

void hsi_syms_free(hsi_syms *sy) {
  size_t i;
  if (!sy) return;
  free(sy->idmap);
  for (i = 0; i < sy->nids; i++) {
    hsi_pdb_close(sy->ids[i].pdb);
    free(sy->ids[i].rva);
    free(sy->ids[i].first);
    free(sy->ids[i].count);
  }
  for (i = 0; i < sy->ndirs; i++) free(sy->dirs[i]);
  free(sy->dirs);
  free(sy->path);
  hsi_sympath_free(&sy->sp);
  free(sy->ids);
  free(sy->img);
  free(sy->frames);
  free((void *)sy->said);
  free(sy->rep);
  strs_free(&sy->s);
  free(sy);
}

void hsi_syms_on_message(hsi_syms *sy, void (*fn)(void *, const char *), void *ud) {
  sy->msg = fn;
  sy->msg_ud = ud;
}

/* Say msg once (messages are interned, so equal texts are one pointer). */
static void say(hsi_syms *sy, const char *text) {
  const char *m;
  size_t i;
  if (!sy->msg) return;
  m = intern(&sy->s, text);
  for (i = 0; i < sy->nsaid; i++) if (sy->said[i] == m) return;
  if (sy->nsaid == sy->capsaid) {
    size_t cap = sy->capsaid ? sy->capsaid * 2 : 16;
    const char **p = (const char **)realloc((void *)sy->said, cap * sizeof *p);
    if (!p) return;
    sy->said = p;
    sy->capsaid = cap;
  }
  sy->said[sy->nsaid++] = m;
  sy->msg(sy->msg_ud, m);
}

/*
** The URLs said, for the whole run: a URL of the symbol path is said
** once, however many traces take that path (diff's two, a script's
** several), where say() is once a trace.  Their hashes, each slot
** claimed with a compare-and-swap so that two threads never both say
** one; past NURLS distinct URLs, one may be said again.
*/
#define NURLS 32
static uint64_t urls_said[NURLS];

static int url_first(const char *url) {
  uint64_t h = 0xcbf29ce484222325ull;
  int i;
  for (; *url; url++) h = (h ^ (unsigned char)*url) * 0x100000001b3ull;   /* FNV-1a */
  h |= 1;                                                                 /* 0: a free slot */
  for (i = 0; i < NURLS; i++) {
    uint64_t cur = __atomic_load_n(&urls_said[i], __ATOMIC_ACQUIRE);
    if (cur == 0 && __atomic_compare_exchange_n(&urls_said[i], &cur, h, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      return 1;
    if (cur == h) return 0;
  }
  return 1;
}

static void say_urls(hsi_syms *sy) {
  size_t i;
  char m[1200];
  if (!sy->msg) return;                   /* not said: a later trace's messages will say it */
  for (i = 0; i < sy->sp.n; i++)
    if (sy->sp.e[i].kind == HSI_SP_URL && url_first(sy->sp.e[i].path)) {
      snprintf(m, sizeof m, "symbols: %s ignored: there is no network here and heapscript never "
               "downloads; PDBs are read from local directories and stores only", sy->sp.e[i].path);
      say(sy, m);
    }
}

static int rebuild_path(hsi_syms *sy) {
  size_t i;
  int rc;
  hsi_sympath_free(&sy->sp);
  if ((rc = hsi_sympath_parse(&sy->sp, sy->path)) < 0) return rc;
  for (i = 0; i < sy->ndirs; i++)
    if ((rc = hsi_sympath_add(&sy->sp, HSI_SP_DIR, sy->dirs[i], strlen(sy->dirs[i]))) < 0) return rc;
  say_urls(sy);
  forget(sy, 1);
  return 0;
}

int hsi_syms_set_path(hsi_syms *sy, const char *path) {
  char *p = NULL;
  if (path && *path) {
    size_t n = strlen(path);
    if (!(p = (char *)malloc(n + 1))) return HS_ENOMEM;
    memcpy(p, path, n + 1);
  }
  free(sy->path);
  sy->path = p;
  return rebuild_path(sy);
}

int hsi_syms_add_dir(hsi_syms *sy, const char *dir) {
  size_t n = strlen(dir), i;
  char *p, **d;
  for (i = 0; i < sy->ndirs; i++) if (strcmp(sy->dirs[i], dir) == 0) return 0;
  if (!(d = (char **)realloc(sy->dirs, (sy->ndirs + 1) * sizeof *d))) return HS_ENOMEM;
  sy->dirs = d;
  if (!(p = (char *)malloc(n + 1))) return HS_ENOMEM;
  memcpy(p, dir, n + 1);
  sy->dirs[sy->ndirs++] = p;
  return rebuild_path(sy);
}

void hsi_syms_set_map(hsi_syms *sy, const hsi_symmap *sm) {
  if (sm == sy->sm) return;
  sy->sm = sm;
  forget(sy, 0);
}

uint32_t hsi_syms_generation(const hsi_syms *sy) { return sy->gen; }
const hsi_sym_stats *hsi_syms_stats(const hsi_syms *sy) { return &sy->st; }

/* What tells two images' PDBs apart: their GUID, age and PDB file name
   (any case), or without a PDB identity their module name (any case),
   TimeDateStamp and size.  id_hash hashes that (names lowercased). */
static uint32_t id_hash(int has_id, const hs_guid *g, uint32_t age, const char *name, uint32_t tds,
                        uint64_t size) {
  uint64_t h = has_id ? hsi_mix64(g->d1 ^ (uint64_t)g->d2 << 32 ^ (uint64_t)g->d3 << 48) ^ age
                      : hsi_mix64(tds ^ size << 32) ^ size;
  for (; *name; name++) {
    unsigned char c = (unsigned char)*name;
    h = (h ^ (c >= 'A' && c <= 'Z' ? c + 32 : c)) * 0x100000001B3ull;
  }
  if (has_id) { uint64_t d4; memcpy(&d4, g->d4, 8); h ^= hsi_mix64(d4); }
  return (uint32_t)hsi_mix64(h);
}

static uint32_t ident_hash(const ident *d) {
  return id_hash(d->has_id, &d->guid, d->age, d->has_id ? hsi_sym_basename(d->pdb_name) : d->module, d->tds,
                 d->size);
}

/* Index ids[k]; 0, or -1 out of memory. */
static int idmap_add(hsi_syms *sy, size_t k) {
  size_t i, mask;
  if ((sy->nids + 1) * 2 > sy->idcap) {
    size_t nc = sy->idcap ? sy->idcap * 2 : 64, j;
    uint32_t *nm = (uint32_t *)calloc(nc, sizeof *nm);
    if (!nm) return -1;
    for (j = 0; j < sy->nids; j++) {
      for (i = ident_hash(&sy->ids[j]) & (nc - 1); nm[i]; i = (i + 1) & (nc - 1)) {}
      nm[i] = (uint32_t)j + 1;
    }
    free(sy->idmap);
    sy->idmap = nm;
    sy->idcap = nc;
  }
  mask = sy->idcap - 1;
  for (i = ident_hash(&sy->ids[k]) & mask; sy->idmap[i]; i = (i + 1) & mask) {}
  sy->idmap[i] = (uint32_t)k + 1;
  return 0;
}

static int same_ident(const ident *d, int has_id, const hsi_image *im, const char *module, const char *pdb) {
  if (d->has_id != has_id) return 0;
  /* the module too: a renamed copy of an image (one PDB) names its frames by its own name */
  return has_id ? hs_guid_eq(&d->guid, &im->pdb_guid) && d->age == im->pdb_age &&
                  hsi_strieq(hsi_sym_basename(d->pdb_name), hsi_sym_basename(pdb)) && hsi_strieq(d->module, module)
                : hsi_strieq(d->module, module) && d->tds == im->time_date_stamp && d->size == im->size;
}

/* The identity of image im: found or added; NULL when out of memory. */
static ident *ident_of(hsi_syms *sy, const hsi_image *im) {
  const hsi_procmap *pm = sy->pm;
  const char *module, *pdb;
  int has_id;
  size_t i;
  ident *d;
  if (im->id < sy->nimg && sy->img[im->id]) return &sy->ids[sy->img[im->id] - 1];   /* known: all but an image's first lookup */
  module = hsi_procmap_str(pm, im->module);
  has_id = (im->flags & HSI_IMG_PDB) && im->pdb_name;
  pdb = has_id ? hsi_procmap_str(pm, im->pdb_name) : "";
  if (im->id >= sy->nimg) {
    size_t cap = sy->nimg ? sy->nimg : 64;
    uint32_t *p;
    while (cap <= im->id) cap *= 2;
    if (!(p = (uint32_t *)realloc(sy->img, cap * sizeof *p))) return NULL;
    memset(p + sy->nimg, 0, (cap - sy->nimg) * sizeof *p);
    sy->img = p;
    sy->nimg = cap;
  }
  i = sy->nids;
  if (sy->idcap) {                        /* the index holds every identity (none yet: no index) */
    size_t mask = sy->idcap - 1, j;
    for (j = id_hash(has_id, &im->pdb_guid, im->pdb_age, has_id ? hsi_sym_basename(pdb) : module,
                     im->time_date_stamp, im->size) & mask; sy->idmap[j]; j = (j + 1) & mask)
      if (same_ident(&sy->ids[sy->idmap[j] - 1], has_id, im, module, pdb)) { i = sy->idmap[j] - 1; break; }
  }
  if (i == sy->nids) {
    if (sy->nids == sy->capids) {
      size_t cap = sy->capids ? sy->capids * 2 : 32;
      ident *p = (ident *)realloc(sy->ids, cap * sizeof *p);
      if (!p) return NULL;
      sy->ids = p;
      sy->capids = cap;
    }
    d = &sy->ids[sy->nids];
    memset(d, 0, sizeof *d);
    d->module = intern(&sy->s, module);
    d->orig = im->orig_name ? intern(&sy->s, hsi_procmap_str(pm, im->orig_name)) : NULL;
    d->pdb_name = intern(&sy->s, pdb);
    d->has_id = has_id;
    d->guid = im->pdb_guid;
    d->age = im->pdb_age;
    d->tds = im->time_date_stamp;
    d->size = im->size;
    if (idmap_add(sy, sy->nids) != 0) return NULL;
    sy->nids++;
  }
  sy->img[im->id] = (uint32_t)i + 1;
  return &sy->ids[i];
}

/* Look for the PDB of d, once. */
static void search(hsi_syms *sy, ident *d) {
  hsi_pdb_search *r;
  char gs[HS_GUID_STRLEN], m[3000];
  if (d->searched) return;
  d->searched = 1;
  if (!d->has_id) { d->status = HSI_PDB_NOID; d->path = d->detail = ""; return; }
  if (!(r = (hsi_pdb_search *)malloc(sizeof *r))) { d->status = HSI_PDB_MISSING; d->path = d->detail = ""; return; }
  sy->st.pdb_searches++;
  hsi_pdb_find(&sy->sp, d->pdb_name, &d->guid, d->age, r);
  sy->st.files_tried += r->tried;
  d->status = r->status;
  d->pdb = r->pdb;
  d->path = intern(&sy->s, r->path);
  d->detail = intern(&sy->s, r->detail);
  if (d->pdb) sy->st.pdb_opened++;
  hs_guid_format(&d->guid, gs);
  if (r->status == HSI_PDB_BADGUID || r->status == HSI_PDB_BADAGE) {
    snprintf(m, sizeof m, "symbols: %s wants %s GUID %s age %lu; %s does not match (%s): not used",
             d->module, hsi_sym_basename(d->pdb_name), gs, (unsigned long)d->age, r->path, r->detail);
    say(sy, m);
  } else if (r->status == HSI_PDB_DAMAGED || r->status == HSI_PDB_UNREADABLE) {
    snprintf(m, sizeof m, "symbols: %s: %s; its frames stay unnamed", d->module, r->detail);
    say(sy, m);
  }
  free(r);
}

static int cache_grow(ident *d) {
  size_t nc = d->cap ? d->cap * 2 : 64, i, j;
  uint64_t *nr = (uint64_t *)malloc(nc * sizeof *nr);
  uint32_t *nf = (uint32_t *)calloc(nc, sizeof *nf);
  uint8_t *nn = (uint8_t *)malloc(nc);
  if (!nr || !nf || !nn) { free(nr); free(nf); free(nn); return -1; }
  for (i = 0; i < d->cap; i++) if (d->first[i]) {
    for (j = (size_t)(d->rva[i] * 0x9E3779B97F4A7C15ull >> 40) & (nc - 1); nf[j]; j = (j + 1) & (nc - 1)) {}
    nr[j] = d->rva[i];
    nf[j] = d->first[i];
    nn[j] = d->count[i];
  }
  free(d->rva); free(d->first); free(d->count);
  d->rva = nr; d->first = nf; d->count = nn; d->cap = nc;
  return 0;
}

/* Slot of rva in d's cache (empty if absent); SIZE_MAX when no table. */
static size_t cache_slot(const ident *d, uint64_t rva) {
  size_t i;
  if (!d->cap) return (size_t)-1;
  for (i = (size_t)(rva * 0x9E3779B97F4A7C15ull >> 40) & (d->cap - 1); d->first[i]; i = (i + 1) & (d->cap - 1))
    if (d->rva[i] == rva) return i;
  return i;
}

static int push_frame(hsi_syms *sy, const cframe *f) {
  if (sy->nframes == sy->capframes) {
    size_t cap = sy->capframes ? sy->capframes * 2 : 1024;
    cframe *p = (cframe *)realloc(sy->frames, cap * sizeof *p);
    if (!p) return -1;
    sy->frames = p;
    sy->capframes = cap;
  }
  sy->frames[sy->nframes++] = *f;
  return 0;
}

/* Resolve rva of d into new frames at the end of sy->frames; their count. */
/*
** An x86 C function known only from the publics has the name the linker
** saw: "_f" (cdecl), "_f@8" (stdcall), "@f@8" (fastcall); llvm-symbolizer
** and the debuggers show "f".  A procedure's name is the function's own
** ("__security_check_cookie" is one) and is not touched; C++ names
** ("?f@@YAXXZ") neither.
*/
static const char *undecorate_x86(const char *name, char *buf, size_t cap) {
  size_t n;
  const char *at;
  if ((name[0] != '_' && name[0] != '@') || !name[1]) return name;
  at = strrchr(name + 1, '@');
  n = at ? (size_t)(at - (name + 1)) : strlen(name + 1);
  if (at) {                                /* "@N": N digits to the end */
    const char *q = at + 1;
    if (!*q) at = NULL;
    for (; at && *q; q++) if (*q < '0' || *q > '9') at = NULL;
    if (!at) n = strlen(name + 1);
  }
  if (name[0] == '@' && !at) return name;  /* not fastcall's shape */
  if (!n || n >= cap) return name;
  memcpy(buf, name + 1, n);
  buf[n] = '\0';
  return buf;
}

static int resolve_new(hsi_syms *sy, ident *d, uint64_t rva) {
  char plain[512];
  hsi_pdb_frame pf[64];
  cframe f;
  int n = 0, i;
  size_t start = sy->nframes;
  sy->st.addresses++;
  if (d->has_id && !d->searched) search(sy, d);
  if (d->pdb && rva <= 0xFFFFFFFFu && (n = hsi_pdb_lookup(d->pdb, rva, pf, 64)) > 0) {
    const char *err = hsi_pdb_error(d->pdb);
    if (n > 64) n = 64;
    int x86 = hsi_pdb_machine(d->pdb) == 0x14c;
    for (i = 0; i < n; i++) {
      int last = i == n - 1;
      const char *name = pf[i].name;
      /* keep the innermost levels and always the function itself */
      if (!last && i >= HSI_SYM_MAXDEPTH - 1) continue;
      memset(&f, 0, sizeof f);
      f.kind = (uint8_t)(last ? HSI_SYMF_FUNC : HSI_SYMF_INLINE);
      char *big = NULL;                  /* a name longer than plain */
      if (x86 && last && name && pf[i].from_public) {
        size_t need = strlen(name) + 1;
        if (need > sizeof plain && (big = (char *)malloc(need)) != NULL) name = undecorate_x86(name, big, need);
        else name = undecorate_x86(name, plain, sizeof plain);
      }
      if (name && *name) {
        f.name = intern(&sy->s, name);
        f.off = last && rva >= pf[i].start_rva ? rva - pf[i].start_rva : 0;
      } else if (last) {                 /* a line but no function: module+0xRVA [file:line] */
        f.kind = HSI_SYMF_RVA;
        f.off = rva;
      } else {
        f.name = intern(&sy->s, "?");
      }
      free(big);
      f.file = pf[i].file ? intern(&sy->s, pf[i].file) : NULL;
      f.line = pf[i].line;
      if (push_frame(sy, &f) != 0) { sy->nframes = start; return -1; }
    }
    if (err && *err) {
      char m[HS_ERRLEN + 64];
      snprintf(m, sizeof m, "symbols: %s: %s; frames there may stay unnamed", d->module, err);
      say(sy, m);
    }
    sy->st.from_pdb++;
    return (int)(sy->nframes - start);
  }
  memset(&f, 0, sizeof f);
  if (sy->sm) {
    const char *name = NULL;
    uint64_t off = 0;
    if (hsi_symmap_lookup(sy->sm, d->module, rva, &name, &off) ||
        (d->orig && hsi_symmap_lookup(sy->sm, d->orig, rva, &name, &off))) {
      f.kind = HSI_SYMF_FUNC;
      f.name = intern(&sy->s, name);
      f.off = off;
      if (push_frame(sy, &f) != 0) return -1;
      sy->st.from_map++;
      return 1;
    }
  }
  f.kind = HSI_SYMF_RVA;
  f.off = rva;
  if (push_frame(sy, &f) != 0) return -1;
  sy->st.unnamed++;
  return 1;
}

int hsi_syms_resolve(hsi_syms *sy, uint32_t inst, uint64_t addr, int64_t ts, hsi_symframe *out, int cap) {
  const hsi_image *im;
  const char *module;
  ident *d;
  uint64_t rva;
  size_t slot, first = 0;
  int n = 0, i;
  if (cap < 1) return 0;
  sy->st.lookups++;
  im = hsi_procmap_image_at(sy->pm, inst, addr, ts);
  module = im ? hsi_procmap_str(sy->pm, im->module) : "";
  memset(out, 0, sizeof *out);
  if (!im || !*module) {
    out->kind = HSI_SYMF_ADDR;
    out->module = "";
    out->off = addr;
    return 1;
  }
  rva = addr - im->base;
  if (!(d = ident_of(sy, im))) goto unnamed;
  /* an image with no PDB (looked for, or nothing to look for by) and no
     map names every address by its RVA: no lookup, nothing to cache */
  if ((!d->has_id || d->searched) && !d->pdb && !sy->sm) goto unnamed;
  slot = cache_slot(d, rva);
  if (slot != (size_t)-1 && d->first[slot]) {
    first = d->first[slot] - 1;
    n = d->count[slot];
  } else {
    size_t start = sy->nframes;
    if ((d->n + 1) * 2 > d->cap && cache_grow(d) != 0) goto unnamed;
    if ((n = resolve_new(sy, d, rva)) < 0) goto unnamed;
    slot = cache_slot(d, rva);
    d->rva[slot] = rva;
    d->first[slot] = (uint32_t)start + 1;
    d->count[slot] = (uint8_t)n;
    d->n++;
    first = start;
  }
  if (n > cap) {                         /* keep the function, drop inner levels */
    first += (size_t)(n - cap);
    n = cap;
  }
  for (i = 0; i < n; i++) {
    const cframe *f = &sy->frames[first + (size_t)i];
    out[i].kind = f->kind;
    out[i].module = d->module;
    out[i].name = f->name;
    out[i].file = f->file;
    out[i].line = f->line;
    out[i].off = f->off;
  }
  return n;
unnamed:
  out->kind = HSI_SYMF_RVA;
  out->module = module;
  out->off = rva;
  return 1;
}

/* ------------------------------------------------------------- text */

static void put(char *out, size_t cap, size_t *n, const char *s, size_t len) {
  if (*n < cap) {
    size_t room = cap - 1 - *n, k = len < room ? len : room;
    memcpy(out + *n, s, k);
  }
  *n += len;
}

static void put_hex(char *out, size_t cap, size_t *n, uint64_t v) {
  char b[24], *p = hsi_utoa(v, 1, b + sizeof b);
  *--p = 'x';
  *--p = '0';
  put(out, cap, n, p, (size_t)(b + sizeof b - p));
}

/* How format_one writes a frame: as text, as flame graphs name it, or as
   its stable key (hsi_symframe_key). */
enum { AS_TEXT, AS_FLAME, AS_KEY };

static size_t format_one(const hsi_symframe *f, char *out, size_t cap, size_t n, int as) {
  size_t mod = n;
  if (f->kind == HSI_SYMF_ADDR) {
    if (as == AS_KEY) put(out, cap, &n, "?", 1);
    else put_hex(out, cap, &n, f->off);
    return n;
  }
  put(out, cap, &n, f->module, strlen(f->module));
  if (as == AS_KEY)                  /* the module lower-cased, as Lua's string.lower */
    for (; mod < n && mod < cap; mod++)
      if (out[mod] >= 'A' && out[mod] <= 'Z') out[mod] = (char)(out[mod] - 'A' + 'a');
  if (f->kind == HSI_SYMF_RVA || !f->name) {
    put(out, cap, &n, "+", 1);
    put_hex(out, cap, &n, f->off);
  } else {
    put(out, cap, &n, "!", 1);
    put(out, cap, &n, f->name, strlen(f->name));
    if (f->kind == HSI_SYMF_FUNC && f->off && as == AS_TEXT) {
      put(out, cap, &n, "+", 1);
      put_hex(out, cap, &n, f->off);
    }
  }
  if (f->file && *f->file && as == AS_TEXT) {
    /* the file's base name: the full path as recorded makes lines too
       wide for a terminal (s:details() and hsi_symframe keep it) */
    const char *file = hsi_sym_basename(f->file);
    char ln[16];
    put(out, cap, &n, " [", 2);
    put(out, cap, &n, file, strlen(file));
    if (f->line) {
      snprintf(ln, sizeof ln, ":%lu", (unsigned long)f->line);
      put(out, cap, &n, ln, strlen(ln));
    }
    put(out, cap, &n, "]", 1);
  }
  return n;
}

/* One frame written as `as` says, NUL-terminated within cap. */
static size_t format_whole(const hsi_symframe *f, char *out, size_t cap, int as) {
  size_t n = format_one(f, out, cap, 0, as);
  if (cap) out[n < cap ? n : cap - 1] = '\0';
  return n;
}

size_t hsi_symframe_format(const hsi_symframe *f, char *out, size_t cap) {
  return format_whole(f, out, cap, AS_TEXT);
}

size_t hsi_symframe_flame(const hsi_symframe *f, char *out, size_t cap) {
  size_t n = format_whole(f, out, cap, AS_FLAME), i;
  for (i = 0; i < n && i < cap; i++)
    if (out[i] == ';') out[i] = ':';
  return n;
}

size_t hsi_symframe_key(const hsi_symframe *f, char *out, size_t cap) {
  return format_whole(f, out, cap, AS_KEY);
}

size_t hsi_syms_format(hsi_syms *sy, uint32_t inst, uint64_t addr, int64_t ts, char *out, size_t cap) {
  hsi_symframe f[HSI_SYM_MAXDEPTH];
  int k = hsi_syms_resolve(sy, inst, addr, ts, f, HSI_SYM_MAXDEPTH), i;
  size_t n = 0;
  for (i = 0; i < k; i++) {
    if (i) put(out, cap, &n, "\n", 1);
    n = format_one(&f[i], out, cap, n, AS_TEXT);
  }
  if (cap) out[n < cap ? n : cap - 1] = '\0';
  return n;
}

/* ------------------------------------------------------------- report */

const char *hsi_sym_status_name(int status) {
  switch (status) {
    case HSI_PDB_FOUND: return "found";
    case HSI_PDB_BADAGE: return "mismatched age";
    case HSI_PDB_BADGUID: return "mismatched GUID";
    case HSI_PDB_DAMAGED: return "damaged";
    case HSI_PDB_UNREADABLE: return "unreadable";
    case HSI_PDB_MISSING: return "missing";
    case HSI_PDB_NOID: return "no PDB identity in the trace";
    default: return "not searched";
  }
}

static int by_pair(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The process instances that loaded each identity, into procs[nids]: an
   image loaded three times by one process is one. */
static int count_processes(hsi_syms *sy, uint32_t *procs) {
  uint32_t i, n = hsi_procmap_nimages(sy->pm);
  size_t m = 0, j;
  uint64_t *pair = (uint64_t *)malloc((n ? n : 1) * sizeof *pair);   /* ident << 32 | instance */
  if (!pair) return HS_ENOMEM;
  for (i = 0; i < n; i++) {
    const hsi_image *im = hsi_procmap_image(sy->pm, i);
    if (im->id < sy->nimg && sy->img[im->id]) pair[m++] = (uint64_t)(sy->img[im->id] - 1) << 32 | im->instance;
  }
  qsort(pair, m, sizeof *pair, by_pair);
  for (j = 0; j < m; j++) if (j == 0 || pair[j] != pair[j - 1]) procs[pair[j] >> 32]++;
  free(pair);
  return 0;
}

long hsi_syms_report(hsi_syms *sy, const hsi_sym_image **out) {
  uint32_t i, n = hsi_procmap_nimages(sy->pm), *procs;
  hsi_sym_image *rep;
  unsigned char *seen;
  size_t k = 0;
  for (i = 0; i < n; i++) {
    const hsi_image *im = hsi_procmap_image(sy->pm, i);
    if (!*hsi_procmap_str(sy->pm, im->module)) continue;
    if (!ident_of(sy, im)) return HS_ENOMEM;
  }
  if (!(rep = (hsi_sym_image *)realloc(sy->rep, (sy->nids ? sy->nids : 1) * sizeof *rep))) return HS_ENOMEM;
  sy->rep = rep;
  if (!(procs = (uint32_t *)calloc(sy->nids ? sy->nids : 1, sizeof *procs))) return HS_ENOMEM;
  if (count_processes(sy, procs) != 0 || !(seen = (unsigned char *)calloc(sy->nids ? sy->nids : 1, 1))) {
    free(procs);
    return HS_ENOMEM;
  }
  /* in the order of the images' first appearance in the trace */
  for (i = 0; i < n; i++) {
    const hsi_image *im = hsi_procmap_image(sy->pm, i);
    ident *d;
    hsi_sym_image *r;
    size_t di;
    if (im->id >= sy->nimg || !sy->img[im->id]) continue;
    di = sy->img[im->id] - 1;
    if (seen[di]) continue;
    seen[di] = 1;
    d = &sy->ids[di];
    r = &rep[k++];
    search(sy, d);
    memset(r, 0, sizeof *r);
    r->module = d->module;
    r->pdb_name = d->pdb_name;
    r->guid = d->guid;
    r->age = d->age;
    r->has_id = d->has_id;
    r->status = d->status;
    r->path = d->path ? d->path : "";
    r->detail = d->detail ? d->detail : "";
    r->damage = d->pdb ? intern(&sy->s, hsi_pdb_error(d->pdb)) : "";
    r->map_symbols = sy->sm ? hsi_symmap_module_symbols(sy->sm, d->module) : 0;
    if (!r->map_symbols && sy->sm && d->orig) r->map_symbols = hsi_symmap_module_symbols(sy->sm, d->orig);
    r->processes = procs[di];
  }
  free(seen);
  free(procs);
  *out = rep;
  return (long)k;
}
