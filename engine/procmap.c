/*
** procmap.c -- processes, threads and images over time (ETL-FORMAT.md
** §6.5 Process, §6.6 Thread, §6.7 Image, §6.8 KernelTraceControl).  The
** payloads are read by the decoders of process.c and image.c
** (kdecode.h); this file decides what each record means for the map.
**
** Everything lives in arrays owned by the map: instances and thread
** records in flat arrays chained per pid/tid (newest first), images in
** fixed-size chunks (so hsi_image pointers never move), strings in a
** chunked arena with a hash index.  Nothing is allocated per record
** except when an array doubles.
**
** Instance rule: records are fed in timestamp order, so the newest
** instance of a pid is almost always the one wanted.  Each instance has
** a `from` time -- its start, or just after the previous instance of the
** pid ended when the start is not known -- and the instance of (pid, ts)
** is the newest whose `from` <= ts, if it has not ended before ts.
*/
#include <stdlib.h>
#include <string.h>
#include "heapscript.h"
#include "bytes.h"
#include "procmap.h"
#include "kdecode.h"
#include "chunks.h"
#include "text.h"

/* ------------------------------------------------------------ strings */

typedef struct strtab {
  hsi_chunks text;          /* the strings' bytes */
  const char **str;        /* id -> text */
  uint32_t *len, *hash;    /* id -> length, hash */
  uint32_t n, cap;
  uint32_t *tab;           /* open addressing over ids; 0 = empty (id 0 is never indexed) */
  uint32_t tabcap;
} strtab;

static int str_init(strtab *t) {
  memset(t, 0, sizeof *t);
  t->cap = 64;
  t->str = malloc(t->cap * sizeof *t->str);
  t->len = malloc(t->cap * sizeof *t->len);
  t->hash = malloc(t->cap * sizeof *t->hash);
  t->tabcap = 128;
  t->tab = calloc(t->tabcap, sizeof *t->tab);
  if (!t->str || !t->len || !t->hash || !t->tab) return -1;
  t->str[0] = ""; t->len[0] = 0; t->hash[0] = 0;
  t->n = 1;
  return 0;
}

static void str_free(strtab *t) {
  hsi_chunks_free(&t->text);
  free(t->str); free(t->len); free(t->hash); free(t->tab);
}

static int str_grow_tab(strtab *t) {
  uint32_t nc = t->tabcap * 2, i, id;
  uint32_t *nt = calloc(nc, sizeof *nt);
  if (!nt) return -1;
  for (id = 1; id < t->n; id++) {
    i = t->hash[id] & (nc - 1);
    while (nt[i]) i = (i + 1) & (nc - 1);
    nt[i] = id;
  }
  free(t->tab);
  t->tab = nt; t->tabcap = nc;
  return 0;
}

/* Id of s[0..n), adding it if new; 0 for "" and on ENOMEM. */
static uint32_t str_intern(strtab *t, const char *s, size_t n) {
  uint32_t h, i, id;
  char *p;
  if (n == 0) return 0;
  if (n > 0xFFFFFFFEu) return 0;
  h = hsi_hash_bytes(s, n);
  for (i = h & (t->tabcap - 1); (id = t->tab[i]) != 0; i = (i + 1) & (t->tabcap - 1))
    if (t->hash[id] == h && t->len[id] == n && memcmp(t->str[id], s, n) == 0) return id;
  if (t->n == t->cap) {
    uint32_t nc = t->cap * 2;
    const char **ns = realloc((void *)t->str, nc * sizeof *ns);
    uint32_t *nl, *nh;
    if (!ns) return 0;
    t->str = ns;
    if (!(nl = realloc(t->len, nc * sizeof *nl))) return 0;
    t->len = nl;
    if (!(nh = realloc(t->hash, nc * sizeof *nh))) return 0;
    t->hash = nh;
    t->cap = nc;
  }
  if (!(p = hsi_chunks_alloc(&t->text, n + 1))) return 0;
  memcpy(p, s, n);
  p[n] = 0;
  id = t->n++;
  t->str[id] = p; t->len[id] = (uint32_t)n; t->hash[id] = h;
  t->tab[i] = id;
  if ((uint64_t)t->n * 2 > t->tabcap && str_grow_tab(t) != 0) { t->n--; return 0; }
  return id;
}

/* ----------------------------------------------------- u32 -> u32 map */

/* Keys are pids/tids; values are indices >= 1 (0 = empty slot).  Entries
   are only added or updated, never removed. */
typedef struct u32map {
  uint32_t *key, *val;
  uint32_t cap, n;
} u32map;

static uint32_t mix32(uint32_t x) {
  x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
  return x;
}

static uint32_t map_get(const u32map *m, uint32_t k) {
  uint32_t i;
  if (!m->cap) return 0;
  for (i = mix32(k) & (m->cap - 1); m->val[i]; i = (i + 1) & (m->cap - 1))
    if (m->key[i] == k) return m->val[i];
  return 0;
}

static int map_put(u32map *m, uint32_t k, uint32_t v) {
  uint32_t i;
  if ((uint64_t)(m->n + 1) * 2 > m->cap) {
    uint32_t nc = m->cap ? m->cap * 2 : 64, j;
    uint32_t *nk = calloc(nc, sizeof *nk), *nv = calloc(nc, sizeof *nv);
    if (!nk || !nv) { free(nk); free(nv); return -1; }
    for (j = 0; j < m->cap; j++) if (m->val[j]) {
      i = mix32(m->key[j]) & (nc - 1);
      while (nv[i]) i = (i + 1) & (nc - 1);
      nk[i] = m->key[j]; nv[i] = m->val[j];
    }
    free(m->key); free(m->val);
    m->key = nk; m->val = nv; m->cap = nc;
  }
  for (i = mix32(k) & (m->cap - 1); m->val[i]; i = (i + 1) & (m->cap - 1))
    if (m->key[i] == k) { m->val[i] = v; return 0; }
  m->key[i] = k; m->val[i] = v; m->n++;
  return 0;
}

/* ------------------------------------------------------------- types */

typedef struct proc {
  uint32_t pid, ppid, session, flags;
  int64_t start, end;      /* as reported: HSI_TS_BEFORE / HSI_TS_NEVER when unknown */
  int64_t from;            /* lookup start: start, or just after the previous instance */
  int64_t first_seen;      /* first time the instance was asked for (implied ones) */
  uint32_t name, cmdline;
  uint32_t prev;           /* older instance of the same pid, 0 = none */
  uint32_t *img;           /* image ids sorted by base */
  uint64_t *base;          /* base[i]: img[i]'s, searched without reaching the images */
  uint64_t *maxend;        /* maxend[i] = max(base + size) over img[0..i] */
  int64_t *ifrom;          /* ifrom[i]: when img[i] can first be live at its base (proc_add_image) */
  uint32_t nimg, capimg;
  int64_t *era;            /* when its eras after the first began, sorted (hsi_procmap_settle) */
  uint32_t nera, era0;     /* how many; the number of the second era (eras number 1, 2, ... map-wide) */
} proc;

typedef struct thread {
  uint32_t tid, pid, name, prev;
  int64_t from, end;
} thread;

#define IMG_CHUNK 256

/* A KernelTraceControl record met before the image it describes: held
   while the trace is at its tick (the image comes at the same one, §6.8). */
typedef struct pending_id {
  int kind;                /* 0 ImageId, 36 DbgID_RSDS */
  int64_t ts;
  uint64_t base, size;
  uint32_t pid, tds, name, age;
  hs_guid guid;
} pending_id;

#define NPENDING 4096       /* at one tick; beyond, the oldest is dropped */

struct hsi_procmap {
  strtab strs;
  /* A rundown names the same image paths for process after process: each
     UTF-16 path is converted once (wstrs: its bytes, w2u: its UTF-8 id)
     and its module name found once (modof: path id -> module id). */
  strtab wstrs;
  uint32_t *w2u, nw2u;
  uint32_t *modof, nmodof;
  proc *procs;             /* [0] unused */
  uint32_t nprocs, capprocs;
  u32map pid_latest;
  thread *threads;         /* [0] unused */
  uint32_t nthreads, capthreads;
  u32map tid_latest;
  hsi_image **chunks;
  uint32_t nimages, capchunks;
  uint32_t last_img;       /* id + 1 of the image last fed, 0 = none */
  int64_t last_img_ts;
  pending_id *pending;
  int npending, cappending;
  char *scratch;
  size_t scap;
  hsi_procstats st;
  /* hsi_procmap_instance's last answer: pid's instance for ts in [lo, hi]
     while no process was added or changed since (gen) */
  uint32_t gen;
  struct { uint32_t pid, inst, gen; int64_t lo, hi; } last;
  int any_era;             /* some instance has a second era (hsi_procmap_settle) */
  uint32_t lost_end;       /* hsi_procmap_take_lost_end's answer */
};

static const hs_guid G_PROCESS = { 0x3d6fa8d0, 0xfe05, 0x11d0, { 0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c } };
static const hs_guid G_THREAD  = { 0x3d6fa8d1, 0xfe05, 0x11d0, { 0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c } };
static const hs_guid G_IMAGE   = { 0x2cb15d1d, 0x5fc1, 0x11d2, { 0xab, 0xe1, 0x00, 0xa0, 0xc9, 0x11, 0xf5, 0x18 } };
static const hs_guid G_KTC     = { 0xb3e675d7, 0x2554, 0x4f18, { 0x83, 0x0b, 0x27, 0x62, 0x73, 0x25, 0x60, 0xde } };

/* --------------------------------------------------------- lifecycle */

hsi_procmap *hsi_procmap_new(void) {
  hsi_procmap *pm = calloc(1, sizeof *pm);
  if (!pm) return NULL;
  pm->gen = 1;                             /* last.gen 0: nothing remembered */
  if (str_init(&pm->strs) != 0 || str_init(&pm->wstrs) != 0) { hsi_procmap_free(pm); return NULL; }
  /* index 0 of both arrays is "none" */
  pm->capprocs = 64;
  pm->capthreads = 256;
  pm->procs = malloc(pm->capprocs * sizeof *pm->procs);
  pm->threads = malloc(pm->capthreads * sizeof *pm->threads);
  if (!pm->procs || !pm->threads) { hsi_procmap_free(pm); return NULL; }
  memset(&pm->procs[0], 0, sizeof pm->procs[0]);
  memset(&pm->threads[0], 0, sizeof pm->threads[0]);
  pm->nprocs = 1;
  pm->nthreads = 1;
  return pm;
}

void hsi_procmap_free(hsi_procmap *pm) {
  uint32_t i;
  if (!pm) return;
  str_free(&pm->strs);
  str_free(&pm->wstrs);
  free(pm->w2u);
  free(pm->modof);
  for (i = 1; i < pm->nprocs; i++) {
    free(pm->procs[i].img); free(pm->procs[i].base); free(pm->procs[i].maxend); free(pm->procs[i].ifrom);
    free(pm->procs[i].era);
  }
  free(pm->procs);
  free(pm->pid_latest.key); free(pm->pid_latest.val);
  free(pm->threads);
  free(pm->tid_latest.key); free(pm->tid_latest.val);
  for (i = 0; i < (pm->nimages + IMG_CHUNK - 1) / IMG_CHUNK; i++) free(pm->chunks[i]);
  free(pm->chunks);
  free(pm->scratch);
  free(pm->pending);
  free(pm);
}

/* ----------------------------------------------------------- strings */

const char *hsi_procmap_str(const hsi_procmap *pm, uint32_t id) {
  return id < pm->strs.n ? pm->strs.str[id] : "";
}

uint32_t hsi_procmap_intern(hsi_procmap *pm, const char *s, size_t len) {
  return str_intern(&pm->strs, s, len);
}

static char *scratch(hsi_procmap *pm, size_t n) {
  if (n > pm->scap) {
    char *p = realloc(pm->scratch, n);
    if (!p) return NULL;
    pm->scratch = p; pm->scap = n;
  }
  return pm->scratch;
}

/* (*a)[k] = v, the array grown (zeros) to hold k; a cache: on ENOMEM it
   just does not remember. */
static void idmap_set(uint32_t **a, uint32_t *n, uint32_t k, uint32_t v) {
  if (k >= *n) {
    uint32_t nc = *n ? *n : 256, *na;
    while (nc <= k) nc *= 2;
    if (!(na = realloc(*a, (size_t)nc * sizeof *na))) return;
    memset(na + *n, 0, (size_t)(nc - *n) * sizeof *na);
    *a = na;
    *n = nc;
  }
  (*a)[k] = v;
}

/* UTF-16LE bytes -> interned UTF-8. */
static uint32_t intern_w(hsi_procmap *pm, const uint8_t *s, size_t nbytes) {
  size_t cap = nbytes / 2 * 3 + 1, n;
  uint32_t w, id;
  char *buf;
  if (!s || nbytes < 2) return 0;
  w = str_intern(&pm->wstrs, (const char *)s, nbytes);
  if (w && w < pm->nw2u && pm->w2u[w]) return pm->w2u[w];
  if (!(buf = scratch(pm, cap))) return 0;
  n = hs_utf16_to_utf8(s, nbytes, buf, cap);
  id = str_intern(&pm->strs, buf, n);
  if (w && id) idmap_set(&pm->w2u, &pm->nw2u, w, id);
  return id;
}

/* ANSI bytes -> interned UTF-8: bytes that are valid UTF-8 as they are (a
   PDB name as lld-link and recent link.exe write it), else read as
   Latin-1 (§6.5: Latin-1 safe). */
static uint32_t intern_a(hsi_procmap *pm, const char *s, size_t n) {
  size_t i, k = 0;
  char *buf;
  if (!s || !n) return 0;
  for (i = 0; i + 8 <= n; i += 8) {       /* eight bytes at a time while all are ASCII */
    uint64_t w;
    memcpy(&w, s + i, 8);
    if (w & 0x8080808080808080ull) break;
  }
  for (; i < n && (s[i] & 0x80) == 0; i++) {}
  if (i == n) return str_intern(&pm->strs, s, n);
  {                                       /* valid UTF-8 (lld-link's PDB names): as it is */
    size_t j = i, step = 1;
    while (j < n && step) {
      step = (s[j] & 0x80) == 0 ? 1 : hsi_utf8_seq((const unsigned char *)s + j, n - j);
      j += step;
    }
    if (j == n && step) return str_intern(&pm->strs, s, n);
  }
  if (!(buf = scratch(pm, 2 * n))) return 0;
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x80) buf[k++] = (char)c;
    else { buf[k++] = (char)(0xC0 | c >> 6); buf[k++] = (char)(0x80 | (c & 0x3F)); }
  }
  return str_intern(&pm->strs, buf, k);
}

/* ------------------------------------------------------------ instances */

static proc *P(const hsi_procmap *pm, uint32_t inst) {
  return inst && inst < pm->nprocs ? &pm->procs[inst] : NULL;
}

/* Append an instance of pid; the caller links it into the pid chain. */
static uint32_t proc_add(hsi_procmap *pm, uint32_t pid) {
  proc *p;
  if (pm->nprocs == pm->capprocs) {
    uint32_t nc = pm->capprocs ? pm->capprocs * 2 : 64;
    proc *np = realloc(pm->procs, nc * sizeof *np);
    if (!np) return 0;
    pm->procs = np; pm->capprocs = nc;
  }
  p = &pm->procs[pm->nprocs];
  memset(p, 0, sizeof *p);
  pm->gen++;
  p->pid = pid;
  p->ppid = HS_NOID;
  p->start = HSI_TS_BEFORE;
  p->end = HSI_TS_NEVER;
  p->from = INT64_MIN;
  p->first_seen = HSI_TS_NEVER;
  return pm->nprocs++;
}

/* A new newest instance of pid, its lookup start just after the previous. */
static uint32_t proc_push(hsi_procmap *pm, uint32_t pid) {
  uint32_t prev = map_get(&pm->pid_latest, pid), id = proc_add(pm, pid);
  if (!id) return 0;
  if (map_put(&pm->pid_latest, pid, id) != 0) { pm->nprocs--; return 0; }
  pm->procs[id].prev = prev;
  if (prev && pm->procs[prev].end != HSI_TS_NEVER && pm->procs[prev].end != INT64_MAX)
    pm->procs[id].from = pm->procs[prev].end + 1;
  return id;
}

uint32_t hsi_procmap_find(const hsi_procmap *pm, uint32_t pid, int64_t ts) {
  uint32_t i;
  if (pid == HS_NOID) return HSI_NOINST;
  for (i = map_get(&pm->pid_latest, pid); i; i = pm->procs[i].prev)
    if (pm->procs[i].from <= ts) return ts <= pm->procs[i].end ? i : HSI_NOINST;
  return HSI_NOINST;
}

uint32_t hsi_procmap_instance(hsi_procmap *pm, uint32_t pid, int64_t ts) {
  uint32_t i, newer = 0, id;
  proc *p;
  if (pid == HS_NOID) return HSI_NOINST;
  if (pm->last.gen == pm->gen && pm->last.pid == pid && ts >= pm->last.lo && ts <= pm->last.hi)
    return pm->last.inst;                  /* a trace's memory events are mostly one process's */
  for (i = map_get(&pm->pid_latest, pid); i; newer = i, i = pm->procs[i].prev)
    if (pm->procs[i].from <= ts) break;
  if (i && ts <= pm->procs[i].end) {
    /* i answers until it ends or the next instance of pid begins */
    int64_t hi = pm->procs[i].end;
    if (newer && pm->procs[newer].from - 1 < hi) hi = pm->procs[newer].from - 1;
    pm->last.pid = pid;
    pm->last.inst = i;
    pm->last.gen = pm->gen;
    pm->last.lo = pm->procs[i].from;
    pm->last.hi = hi;
    return i;
  }
  /* Not known alive at ts: an instance implied by this use, placed in
     the chain between `i` (older, ended before ts) and `newer`. */
  if (!newer) {
    if (!(id = proc_push(pm, pid))) return HSI_NOINST;
  } else {
    if (!(id = proc_add(pm, pid))) return HSI_NOINST;
    pm->procs[newer].prev = id;
    pm->procs[id].prev = i;
    pm->procs[id].from = i ? pm->procs[i].end + 1 : INT64_MIN;
    pm->procs[id].end = pm->procs[newer].from - 1;
  }
  p = &pm->procs[id];
  p->flags |= HSI_PROC_IMPLIED;
  p->first_seen = ts;
  return id;
}

uint32_t hsi_procmap_ninstances(const hsi_procmap *pm) { return pm->nprocs - 1; }
uint32_t hsi_procmap_pid(const hsi_procmap *pm, uint32_t inst) { proc *p = P(pm, inst); return p ? p->pid : HS_NOID; }
uint32_t hsi_procmap_parent(const hsi_procmap *pm, uint32_t inst) { proc *p = P(pm, inst); return p ? p->ppid : HS_NOID; }
uint32_t hsi_procmap_name_id(const hsi_procmap *pm, uint32_t inst) { proc *p = P(pm, inst); return p ? p->name : 0; }
const char *hsi_procmap_name(const hsi_procmap *pm, uint32_t inst) { proc *p = P(pm, inst); return hsi_procmap_str(pm, p ? p->name : 0); }
const char *hsi_procmap_cmdline(const hsi_procmap *pm, uint32_t inst) { proc *p = P(pm, inst); return hsi_procmap_str(pm, p ? p->cmdline : 0); }
int64_t hsi_procmap_start(const hsi_procmap *pm, uint32_t inst) { proc *p = P(pm, inst); return p ? p->start : HSI_TS_BEFORE; }
int64_t hsi_procmap_end(const hsi_procmap *pm, uint32_t inst) { proc *p = P(pm, inst); return p ? p->end : HSI_TS_NEVER; }
uint32_t hsi_procmap_flags(const hsi_procmap *pm, uint32_t inst) { proc *p = P(pm, inst); return p ? p->flags : 0; }

/* ------------------------------------------------------ Process records */

static void proc_fill(hsi_procmap *pm, proc *p, const hsi_process_info *o) {
  uint32_t id;
  p->ppid = o->ppid;
  p->session = o->session;
  if (o->flags & 2) p->flags |= HSI_PROC_WOW64;
  if ((id = intern_a(pm, o->name, o->namelen)) != 0) p->name = id;
  if ((id = intern_w(pm, o->cmd, o->cmdlen)) != 0) p->cmdline = id;
}

/* The newest instance of pid if it has not ended, else 0. */
static uint32_t proc_live(hsi_procmap *pm, uint32_t pid) {
  uint32_t i = map_get(&pm->pid_latest, pid);
  return i && pm->procs[i].end == HSI_TS_NEVER ? i : 0;
}

static int feed_process(hsi_procmap *pm, const hs_event *ev, int op, int version) {
  hsi_process_info d;
  uint32_t id;
  proc *p;
  int64_t ts = ev->timestamp;
  int rc;
  pm->gen++;                               /* instances may start, end or move */
  pm->st.process_records++;
  if ((rc = hsi_decode_process(ev, version, &d)) < 0) return 0;
  if (rc) pm->st.width_fallback++;
  pm->st.process_decoded++;
  switch (op) {
    case 1:                               /* Start */
      id = proc_live(pm, d.pid);
      if (id && (pm->procs[id].flags & HSI_PROC_IMPLIED) && !(pm->procs[id].flags & HSI_PROC_RUNDOWN)
          && pm->procs[id].first_seen >= ts) {
        /* asked for at or after this start (timestamp ties): it is this process */
        p = &pm->procs[id];
        p->flags &= ~HSI_PROC_IMPLIED;
      } else {
        if (id) { pm->procs[id].end = ts - 1; pm->lost_end = id; }   /* its End was lost */
        if (!(id = proc_push(pm, d.pid))) return HS_ENOMEM;
        p = &pm->procs[id];
      }
      p->start = p->from = ts;
      p->flags |= HSI_PROC_STARTED;
      break;
    case 2:                               /* End */
      id = hsi_procmap_find(pm, d.pid, ts);
      if (id && pm->procs[id].end == ts && (pm->procs[id].flags & HSI_PROC_ENDED)) {
        /* an End at the very tick this instance ended (two sessions' copies
           of one End, merged): the same End again, not an instance that
           would start after it ends */
        pm->st.process_end_repeated++;
        return 1;
      }
      if (!id || pm->procs[id].end != HSI_TS_NEVER) {
        if (!(id = proc_push(pm, d.pid))) return HS_ENOMEM;
      }
      p = &pm->procs[id];
      p->end = ts;
      p->flags |= HSI_PROC_ENDED;
      break;
    case 39:                              /* Defunct: exited, object still around */
      id = map_get(&pm->pid_latest, d.pid);
      if (!id && !(id = proc_push(pm, d.pid))) return HS_ENOMEM;
      p = &pm->procs[id];
      if (p->end == HSI_TS_NEVER) p->end = ts;
      p->flags |= HSI_PROC_DEFUNCT;
      break;
    default:                              /* DCStart, DCEnd: alive at ts */
      id = proc_live(pm, d.pid);
      if (!id && !(id = proc_push(pm, d.pid))) return HS_ENOMEM;
      p = &pm->procs[id];
      p->flags |= HSI_PROC_RUNDOWN;
      break;
  }
  proc_fill(pm, p, &d);
  return 1;
}

/* ------------------------------------------------------- Thread records */

static uint32_t thread_push(hsi_procmap *pm, uint32_t tid, uint32_t pid) {
  uint32_t prev = map_get(&pm->tid_latest, tid), id;
  thread *t;
  if (pm->nthreads == pm->capthreads) {
    uint32_t nc = pm->capthreads ? pm->capthreads * 2 : 256;
    thread *nt = realloc(pm->threads, nc * sizeof *nt);
    if (!nt) return 0;
    pm->threads = nt; pm->capthreads = nc;
  }
  id = pm->nthreads;
  if (map_put(&pm->tid_latest, tid, id) != 0) return 0;
  pm->nthreads++;
  t = &pm->threads[id];
  t->tid = tid; t->pid = pid; t->name = 0; t->prev = prev;
  t->from = prev && pm->threads[prev].end != HSI_TS_NEVER ? pm->threads[prev].end + 1 : INT64_MIN;
  t->end = HSI_TS_NEVER;
  return id;
}

static uint32_t thread_find(const hsi_procmap *pm, uint32_t tid, int64_t ts) {
  uint32_t i;
  for (i = map_get(&pm->tid_latest, tid); i; i = pm->threads[i].prev)
    if (pm->threads[i].from <= ts) return ts <= pm->threads[i].end ? i : 0;
  return 0;
}

static int feed_thread(hsi_procmap *pm, const hs_event *ev, int op, int version) {
  hsi_thread_info o;
  uint32_t id;
  int64_t ts = ev->timestamp;
  int rc;
  pm->st.thread_records++;
  if ((rc = hsi_decode_thread(ev, op, version, &o)) < 0) return 0;
  if (rc) pm->st.width_fallback++;
  pm->st.thread_decoded++;
  id = thread_find(pm, o.tid, ts);
  if (id && pm->threads[id].pid != o.pid) {
    /* tid reused by another process without an End we saw */
    pm->threads[id].end = ts - 1;
    id = 0;
  }
  switch (op) {
    case 1:                                   /* Start */
      if (id && pm->threads[id].end == HSI_TS_NEVER) pm->threads[id].end = ts - 1;
      if (!(id = thread_push(pm, o.tid, o.pid))) return HS_ENOMEM;
      pm->threads[id].from = ts;
      break;
    case 2:                                   /* End */
      if (!id && !(id = thread_push(pm, o.tid, o.pid))) return HS_ENOMEM;
      pm->threads[id].end = ts;
      break;
    default:                                  /* DCStart, DCEnd, SetName */
      if (!id && !(id = thread_push(pm, o.tid, o.pid))) return HS_ENOMEM;
      break;
  }
  if (o.namelen) {
    uint32_t n = intern_w(pm, o.name, o.namelen);
    if (n) pm->threads[id].name = n;
  }
  return 1;
}

uint32_t hsi_procmap_tid_pid(const hsi_procmap *pm, uint32_t tid, int64_t ts) {
  uint32_t id;
  if (tid == HS_NOID) return HS_NOID;
  id = thread_find(pm, tid, ts);
  return id ? pm->threads[id].pid : HS_NOID;
}

const char *hsi_procmap_thread_name(const hsi_procmap *pm, uint32_t tid, int64_t ts) {
  uint32_t id = tid == HS_NOID ? 0 : thread_find(pm, tid, ts);
  return hsi_procmap_str(pm, id ? pm->threads[id].name : 0);
}

/* ------------------------------------------------------------- images */

static hsi_image *IMG(const hsi_procmap *pm, uint32_t id) {
  return &pm->chunks[id / IMG_CHUNK][id % IMG_CHUNK];
}

uint32_t hsi_procmap_nimages(const hsi_procmap *pm) { return pm->nimages; }
const hsi_image *hsi_procmap_image(const hsi_procmap *pm, uint32_t id) {
  return id < pm->nimages ? IMG(pm, id) : NULL;
}

static hsi_image *image_new(hsi_procmap *pm) {
  uint32_t id = pm->nimages;
  hsi_image *im;
  if (id % IMG_CHUNK == 0) {
    uint32_t ci = id / IMG_CHUNK;
    if (ci == pm->capchunks) {
      uint32_t nc = pm->capchunks ? pm->capchunks * 2 : 16;
      hsi_image **nch = realloc(pm->chunks, nc * sizeof *nch);
      if (!nch) return NULL;
      pm->chunks = nch; pm->capchunks = nc;
    }
    if (!(pm->chunks[ci] = malloc(IMG_CHUNK * sizeof(hsi_image)))) return NULL;
  }
  pm->nimages++;
  im = IMG(pm, id);
  memset(im, 0, sizeof *im);
  im->id = id;
  im->loaded = HSI_TS_BEFORE;
  im->unloaded = HSI_TS_NEVER;
  return im;
}

/* First index in p->img whose image base is > addr. */
static uint32_t upper(const proc *p, uint64_t addr) {
  uint32_t lo = 0, hi = p->nimg;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (p->base[mid] <= addr) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/*
** The images of one base lie in the order they came, and each came when
** the one before it there had ended (feed_image).  An image known from
** rundown alone has no load time, yet it was not there while the one
** before it was: ifrom[] is when each can first be live, so it never
** decreases along a base's images and search() finds the one live at a
** time by bisection, however often a base was reused.
*/
static int proc_add_image(hsi_procmap *pm, proc *p, const hsi_image *im) {
  uint32_t pos, i;
  uint64_t e;
  int64_t from = im->loaded;
  if (p->nimg == p->capimg) {
    uint32_t nc = p->capimg ? p->capimg * 2 : 32;
    uint32_t *ni = realloc(p->img, nc * sizeof *ni);
    uint64_t *nm, *nb;
    int64_t *nf;
    if (!ni) return -1;
    p->img = ni;
    if (!(nb = realloc(p->base, nc * sizeof *nb))) return -1;
    p->base = nb;
    if (!(nm = realloc(p->maxend, nc * sizeof *nm))) return -1;
    p->maxend = nm;
    if (!(nf = realloc(p->ifrom, nc * sizeof *nf))) return -1;
    p->ifrom = nf;
    p->capimg = nc;
  }
  pos = upper(p, im->base);
  if (pos && p->base[pos - 1] == im->base) {
    const hsi_image *prev = IMG(pm, p->img[pos - 1]);
    if (prev->unloaded != HSI_TS_NEVER && prev->unloaded + 1 > from) from = prev->unloaded + 1;
    if (p->ifrom[pos - 1] > from) from = p->ifrom[pos - 1];
  }
  memmove(p->img + pos + 1, p->img + pos, (p->nimg - pos) * sizeof *p->img);
  memmove(p->base + pos + 1, p->base + pos, (p->nimg - pos) * sizeof *p->base);
  memmove(p->maxend + pos + 1, p->maxend + pos, (p->nimg - pos) * sizeof *p->maxend);
  memmove(p->ifrom + pos + 1, p->ifrom + pos, (p->nimg - pos) * sizeof *p->ifrom);
  p->img[pos] = im->id;
  p->base[pos] = im->base;
  p->ifrom[pos] = from;
  p->nimg++;
  /* maxend[i], the furthest end of img[0..i], was that of the images
     before; the new one raises it up to the first that already reaches
     further (the values never decrease) */
  e = hsi_image_end(im);
  p->maxend[pos] = pos && p->maxend[pos - 1] > e ? p->maxend[pos - 1] : e;
  for (i = pos + 1; i < p->nimg && p->maxend[i] < e; i++) p->maxend[i] = e;
  return 0;
}

static int live_at(const hsi_image *im, int64_t ts) {
  return im->loaded <= ts && ts <= im->unloaded;
}

/* The image of instance p loaded at `base` and live at ts.  The images
   of one base are in the order they came, and each ended the one live
   there before it (feed_image), so the newest loaded by ts is the only
   one that can be live then: the search stops there. */
static hsi_image *image_at_base(const hsi_procmap *pm, const proc *p, uint64_t base, int64_t ts) {
  uint32_t i = upper(p, base);
  while (i > 0) {
    hsi_image *im = IMG(pm, p->img[--i]);
    if (im->base != base) break;
    if (live_at(im, ts)) return im;
    if (im->loaded <= ts) break;
  }
  return NULL;
}

/* The image of p holding addr at ts: down the bases at or below addr
   while an image there may reach it, at each base the last image that
   can be live by ts (ifrom[], bisected) and no other. */
static const hsi_image *search(const hsi_procmap *pm, const proc *p, uint64_t addr, int64_t ts) {
  uint32_t i = upper(p, addr);
  while (i > 0 && p->maxend[i - 1] > addr) {
    uint32_t s = i - 1, lo, hi;
    const hsi_image *im;
    if (s && p->base[s - 1] == p->base[s]) s = upper(p, p->base[s] - 1);   /* the base's first */
    for (lo = s, hi = i; lo < hi;) {           /* the first of the base's images not live by ts */
      uint32_t mid = lo + (hi - lo) / 2;
      if (p->ifrom[mid] <= ts) lo = mid + 1; else hi = mid;
    }
    if (lo > s) {
      im = IMG(pm, p->img[lo - 1]);
      if (addr - im->base < im->size && live_at(im, ts)) return im;
    }
    i = s;
  }
  return NULL;
}

const hsi_image *hsi_procmap_image_at(const hsi_procmap *pm, uint32_t inst, uint64_t addr, int64_t ts) {
  const proc *p = P(pm, inst);
  const hsi_image *im = NULL;
  static const uint32_t sys[2] = { 0, 4 };
  int k, searched = 0;
  if (p && addr < HSI_KERNEL_BASE && p->nimg) {
    if ((im = search(pm, p, addr, ts)) != NULL) return im;
    searched = 1;
  }
  for (k = 0; k < 2; k++) {
    uint32_t s = hsi_procmap_find(pm, sys[k], ts);
    if (!s) s = map_get(&pm->pid_latest, sys[k]);   /* the system outlives every record */
    /* the system process itself: its kernel frames were not searched above */
    if (s && !(s == inst && searched) && pm->procs[s].nimg && (im = search(pm, &pm->procs[s], addr, ts)) != NULL)
      return im;
  }
  return NULL;
}

/* ---------------------------------------------------------------- eras */

static int by_time(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* An image of a cluster (eras below): when it came, and what it is. */
typedef struct eimg { int64_t loaded; uint64_t sig; } eimg;

static int by_load(const void *a, const void *b) {
  const eimg *x = (const eimg *)a, *y = (const eimg *)b;
  return (x->loaded > y->loaded) - (x->loaded < y->loaded);
}

/* Add t to p's era starts (unsorted; *cap their room). */
static int era_add(proc *p, uint32_t *cap, int64_t t) {
  if (p->nera == *cap) {
    uint32_t nc = *cap ? *cap * 2 : 4;
    int64_t *ne = realloc(p->era, nc * sizeof *ne);
    if (!ne) return HS_ENOMEM;
    p->era = ne;
    *cap = nc;
  }
  p->era[p->nera++] = t;
  return 0;
}

/*
** p's era starts.  Its user images in clusters of overlapping ones (by
** base, as p->img lies); in each, in the order they were loaded, an
** image is a start when an image of another identity was loaded there
** before it (and its load is known: two known from rundown alone are no
** change the trace saw).  Linear in the images but for the sorts: an
** image reloaded ten thousand times is ten thousand images of a cluster.
*/
static int proc_eras(hsi_procmap *pm, proc *p) {
  uint32_t a = 0, b, cap = 0, capc = 0, n, i;
  eimg *c = NULL;
  int rc = 0;
  free(p->era);
  p->era = NULL;
  p->nera = 0;
  while (a < p->nimg && rc == 0) {
    const hsi_image *x = IMG(pm, p->img[a]);
    uint64_t end;
    if (x->base >= HSI_KERNEL_BASE || !x->size) { a++; continue; }
    end = hsi_image_end(x);
    for (b = a, n = 0; b < p->nimg && p->base[b] < end; b++) {
      const hsi_image *y = IMG(pm, p->img[b]);
      if (y->base >= HSI_KERNEL_BASE || !y->size) continue;
      if (hsi_image_end(y) > end) end = hsi_image_end(y);
      if (n == capc) {
        uint32_t nc = capc ? capc * 2 : 16;
        eimg *nw = realloc(c, nc * sizeof *nw);
        if (!nw) { rc = HS_ENOMEM; break; }
        c = nw;
        capc = nc;
      }
      c[n].loaded = y->loaded;
      c[n++].sig = hsi_image_sig(y);
    }
    a = b;
    if (rc || n < 2) continue;
    qsort(c, n, sizeof *c, by_load);
    {
      uint64_t first = c[0].sig;
      int two = 0;                        /* two identities came before */
      for (i = 1; i < n && rc == 0; i++) {
        if ((two || c[i].sig != first) && c[i].loaded != HSI_TS_BEFORE) rc = era_add(p, &cap, c[i].loaded);
        if (c[i].sig != first) two = 1;
      }
    }
  }
  free(c);
  if (rc) return rc;
  if (p->nera > 1) {
    qsort(p->era, p->nera, sizeof *p->era, by_time);
    for (i = 1, n = 1; i < p->nera; i++)
      if (p->era[i] != p->era[n - 1]) p->era[n++] = p->era[i];
    p->nera = n;
  }
  return 0;
}

/*
** Identities (hsi_image_sig).  The images in order of file name, base
** and size, and in each run of one (name, base, size) by PDB identity
** (DbgID_RSDS: GUID and age).  Where a run knows one PDB identity, an
** image lacking one (its DbgID lost) has it; where it knows several (a
** plug-in rebuilt and reloaded at its base, name and size unchanged),
** each is another image, and so is one lacking any.  In each part of
** one PDB identity the checksums and the timestamps known, and where it
** knows one alone, it is the image's that lacks it: a timestamp is not
** given across PDB identities.
*/
typedef struct idkey { uint32_t module, id, age, pdb; uint64_t base, size; hs_guid guid; } idkey;

static int by_pdb(const idkey *x, const idkey *y) {
  if (x->pdb != y->pdb) return x->pdb < y->pdb ? -1 : 1;
  if (x->age != y->age) return x->age < y->age ? -1 : 1;
  return memcmp(&x->guid, &y->guid, sizeof x->guid);
}

static int by_file(const void *a, const void *b) {
  const idkey *x = (const idkey *)a, *y = (const idkey *)b;
  int c;
  if (x->module != y->module) return x->module < y->module ? -1 : 1;
  if (x->base != y->base) return x->base < y->base ? -1 : 1;
  if (x->size != y->size) return x->size < y->size ? -1 : 1;
  if ((c = by_pdb(x, y)) != 0) return c;
  return (x->id > y->id) - (x->id < y->id);
}

/* The one non-zero value of f over the run (0: none, or several). */
static uint32_t only_known(const hsi_procmap *pm, const idkey *k, uint32_t n, int tds) {
  uint32_t i, v = 0;
  for (i = 0; i < n; i++) {
    const hsi_image *im = IMG(pm, k[i].id);
    uint32_t x = tds ? im->time_date_stamp : im->checksum;
    if (!x) continue;
    if (v && x != v) return 0;
    v = x;
  }
  return v;
}

/* The identity of the images k[0..n) of one (name, base, size, PDB identity). */
static void identity(hsi_procmap *pm, const idkey *k, uint32_t n, const idkey *pdb) {
  uint32_t ck = only_known(pm, k, n, 0), tds = only_known(pm, k, n, 1), m;
  uint64_t h = 0;
  if (pdb->pdb) {
    uint64_t g[2];
    memcpy(g, &pdb->guid, sizeof g);
    h = hsi_mix64(hsi_mix64(g[0] ^ pdb->age) ^ g[1]);
  }
  for (m = 0; m < n; m++) {
    hsi_image *im = IMG(pm, k[m].id);
    uint32_t c = im->checksum ? im->checksum : ck, t = im->time_date_stamp ? im->time_date_stamp : tds;
    im->sig = hsi_mix64(hsi_mix64((uint64_t)im->module << 32 ^ im->size) ^ im->base) ^ ((uint64_t)c << 32 | t) ^ h;
  }
}

static int identities(hsi_procmap *pm) {
  uint32_t i, j, a, b;
  idkey *k;
  if (!pm->nimages) return 0;
  if (!(k = calloc(pm->nimages, sizeof *k))) return HS_ENOMEM;
  for (i = 0; i < pm->nimages; i++) {
    const hsi_image *im = IMG(pm, i);
    k[i].module = im->module; k[i].base = im->base; k[i].size = im->size; k[i].id = i;
    if (im->flags & HSI_IMG_PDB) { k[i].pdb = 1; k[i].guid = im->pdb_guid; k[i].age = im->pdb_age; }
  }
  qsort(k, pm->nimages, sizeof *k, by_file);
  for (i = 0; i < pm->nimages; i = j) {
    for (j = i + 1; j < pm->nimages && k[j].module == k[i].module && k[j].base == k[i].base
                    && k[j].size == k[i].size; j++) {}
    for (a = i; a < j && !k[a].pdb; a++) {}          /* k[i..a): no PDB identity */
    if (a < j && by_pdb(&k[a], &k[j - 1]) == 0) {     /* one PDB identity: the run is one */
      identity(pm, k + i, j - i, &k[a]);
      continue;
    }
    if (a > i) identity(pm, k + i, a - i, &k[i]);
    for (; a < j; a = b) {
      for (b = a + 1; b < j && by_pdb(&k[a], &k[b]) == 0; b++) {}
      identity(pm, k + a, b - a, &k[a]);
    }
  }
  free(k);
  return 0;
}

int hsi_procmap_settle(hsi_procmap *pm) {
  uint32_t i, next = 1;
  pm->any_era = 0;
  if (identities(pm) != 0) return HS_ENOMEM;
  for (i = 1; i < pm->nprocs; i++) {
    proc *p = &pm->procs[i];
    if (proc_eras(pm, p) != 0) return HS_ENOMEM;
    p->era0 = next;
    next += p->nera;
    if (p->nera) pm->any_era = 1;
  }
  return 0;
}

uint32_t hsi_procmap_era(const hsi_procmap *pm, uint32_t inst, int64_t ts) {
  const proc *p;
  uint32_t lo = 0, hi;
  if (!pm->any_era || !(p = P(pm, inst)) || !p->nera) return 0;
  hi = p->nera;
  while (lo < hi) {                       /* how many eras began by ts */
    uint32_t mid = lo + (hi - lo) / 2;
    if (p->era[mid] <= ts) lo = mid + 1; else hi = mid;
  }
  return lo ? p->era0 + lo - 1 : 0;
}

int hsi_procmap_has_eras(const hsi_procmap *pm) { return pm->any_era; }

/* Basename of a UTF-8 path, extension kept. */
static uint32_t module_of(hsi_procmap *pm, uint32_t path) {
  const char *s, *b, *q;
  uint32_t m;
  if (path < pm->nmodof && pm->modof[path]) return pm->modof[path];
  s = b = hsi_procmap_str(pm, path);
  if ((q = strrchr(s, '\\')) != NULL) b = q + 1;
  if ((q = strrchr(b, '/')) != NULL) b = q + 1;
  m = str_intern(&pm->strs, b, strlen(b));
  if (m) idmap_set(&pm->modof, &pm->nmodof, path, m);
  return m;
}

static void attach_pending(hsi_procmap *pm, hsi_image *im, uint32_t pid, int64_t ts);

static int feed_image(hsi_procmap *pm, const hs_event *ev, int op, int version) {
  hsi_image_info o;
  hsi_image *im;
  uint32_t inst;
  proc *p;
  int64_t ts = ev->timestamp;
  int rc;
  pm->st.image_records++;
  if ((rc = hsi_decode_image(ev, version, &o)) < 0) return 0;
  if (rc) pm->st.width_fallback++;
  if (o.pid == HS_NOID) o.pid = ev->pid;
  /* no process to put it in (the payload's pid is 0xFFFFFFFF, the header
     has none): not decoded, as a record too short is not */
  if (o.pid == HS_NOID) return 0;
  pm->st.image_decoded++;
  if (!(inst = hsi_procmap_instance(pm, o.pid, ts))) return HS_ENOMEM;
  p = &pm->procs[inst];
  im = image_at_base(pm, p, o.base, ts);
  /* A Load at a base still in use, or a rundown naming another size there:
     the old image went away unseen.  Same Load twice (merged files): one. */
  if (im && (op == 10 ? im->loaded != ts : im->size != o.size)) {
    im->unloaded = ts - 1;
    im = NULL;
  }
  if (!im) {
    if (!(im = image_new(pm))) return HS_ENOMEM;
    im->base = o.base;
    im->size = o.size;
    im->instance = inst;
    if (op == 10) im->loaded = ts;
    else im->flags |= HSI_IMG_RUNDOWN;
    if (proc_add_image(pm, p, im) != 0) return HS_ENOMEM;
    if (op == 2) pm->st.unload_unknown++;
  }
  im->checksum = o.checksum ? o.checksum : im->checksum;
  im->time_date_stamp = o.tds ? o.tds : im->time_date_stamp;
  if (o.namelen) {
    uint32_t path = intern_w(pm, o.name, o.namelen);
    if (path && path != im->path) { im->path = path; im->module = module_of(pm, path); }
  }
  if (op == 2) im->unloaded = ts;
  pm->last_img = im->id + 1;
  pm->last_img_ts = ts;
  attach_pending(pm, im, o.pid, ts);
  return 1;
}

/* ------------------------------------------ KernelTraceControl records */

static void apply_id(hsi_procmap *pm, hsi_image *im, const pending_id *d) {
  if (d->kind == 0) {
    if (d->tds && !im->time_date_stamp) im->time_date_stamp = d->tds;
    if (d->name) {
      im->orig_name = d->name;
      if (!im->module) im->module = d->name;
    }
    im->flags |= HSI_IMG_IMAGEID;
    pm->st.imageid_attached++;
  } else {
    im->pdb_guid = d->guid;
    im->pdb_age = d->age;
    im->pdb_name = d->name;
    im->flags |= HSI_IMG_PDB;
    pm->st.dbgid_attached++;
  }
}

/* The image a KernelTraceControl record describes: the Image record just
   fed with the same base and timestamp (the relogger writes them side by
   side, §6.8) when it is of the named process (or none is named: two
   processes' images at one base and tick are not the other's), else the
   live image at that base in the named process, else in the system
   process. */
static hsi_image *id_target(hsi_procmap *pm, uint64_t base, uint32_t pid, int64_t ts) {
  uint32_t inst;
  hsi_image *im;
  if (pm->last_img && pm->last_img_ts == ts) {
    im = IMG(pm, pm->last_img - 1);
    if (im->base == base && (pid == 0 || hsi_procmap_pid(pm, im->instance) == pid)) return im;
  }
  if (pid != 0 && (inst = hsi_procmap_find(pm, pid, ts)) != 0
      && (im = image_at_base(pm, &pm->procs[inst], base, ts)) != NULL)
    return im;
  if ((inst = hsi_procmap_find(pm, 0, ts)) != 0 && (im = image_at_base(pm, &pm->procs[inst], base, ts)) != NULL)
    return im;
  return NULL;
}

static void attach_pending(hsi_procmap *pm, hsi_image *im, uint32_t pid, int64_t ts) {
  int i, k = 0;
  for (i = 0; i < pm->npending; i++) {
    pending_id *d = &pm->pending[i];
    if (d->ts == ts && d->base == im->base && (d->pid == 0 || d->pid == pid)) apply_id(pm, im, d);
    else if (d->ts >= ts) pm->pending[k++] = *d;   /* older ones will find nothing now */
  }
  pm->npending = k;
}

static int feed_ktc(hsi_procmap *pm, const hs_event *ev, int op) {
  hsi_ktc_info o;
  pending_id d;
  hsi_image *im;
  int rc;
  if (op == 0) pm->st.imageid_records++; else pm->st.dbgid_records++;
  if ((rc = hsi_decode_ktc(ev, op, &o)) < 0) return 0;
  if (rc) pm->st.width_fallback++;
  memset(&d, 0, sizeof d);
  d.kind = op;
  d.ts = ev->timestamp;
  d.base = o.base;
  d.size = o.size;
  d.pid = o.pid;
  d.tds = o.tds;
  d.age = o.age;
  d.guid = o.guid;
  d.name = op == 0 ? intern_w(pm, o.wname, o.namelen) : intern_a(pm, o.aname, o.namelen);
  if ((im = id_target(pm, o.base, o.pid, ev->timestamp)) != NULL) {
    apply_id(pm, im, &d);
  } else {
    int i, k = 0;
    for (i = 0; i < pm->npending; i++)       /* an older tick's will find nothing now */
      if (pm->pending[i].ts >= d.ts) pm->pending[k++] = pm->pending[i];
    pm->npending = k;
    if (pm->npending == pm->cappending) {
      int cap = pm->cappending ? pm->cappending * 2 : 16;
      pending_id *np = cap <= NPENDING ? (pending_id *)realloc(pm->pending, (size_t)cap * sizeof *np) : NULL;
      if (np) {
        pm->pending = np;
        pm->cappending = cap;
      } else if (pm->npending == 0) {
        return 1;                            /* no room at all: it is not kept */
      } else {                               /* full: the oldest goes */
        memmove(pm->pending, pm->pending + 1, (size_t)(pm->npending - 1) * sizeof *pm->pending);
        pm->npending--;
      }
    }
    pm->pending[pm->npending++] = d;
  }
  return 1;
}

/* ---------------------------------------------------------------- feed */

/* An event that may be a process, thread or image record: out of line,
   so that the test every other event gets stays a few instructions. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static int feed_event(hsi_procmap *pm, const hs_event *ev) {
  int op, version;
  const hs_guid *g = &ev->provider;
  if (ev->flags & HS_EVF_KERNEL) {
    int group = ev->hook >> 8;
    op = ev->hook & 0xFF;
    version = ev->version & 0xFF;          /* high bits: PEBS/PMC (§3.3) */
    switch (group) {
      case 0x03:
        if (op == 10) return feed_image(pm, ev, 10, version);
        if ((op >= 1 && op <= 4) || op == 39) return feed_process(pm, ev, op, version);
        return 0;
      case 0x05:
        if ((op >= 1 && op <= 4) || op == 72) return feed_thread(pm, ev, op, version);
        return 0;
      case 0x14:
        if ((op >= 2 && op <= 4) || op == 10) return feed_image(pm, ev, op, version);
        return 0;
      default:
        return 0;
    }
  }
  op = ev->opcode;
  version = ev->version;
  if (hs_guid_eq(g, &G_KTC)) return op == 0 || op == 36 ? feed_ktc(pm, ev, op) : 0;
  /* classic (MOF) records of the kernel classes, e.g. written by a relogger */
  if (hs_guid_eq(g, &G_PROCESS)) return (op >= 1 && op <= 4) || op == 39 ? feed_process(pm, ev, op, version) : 0;
  if (hs_guid_eq(g, &G_THREAD)) return (op >= 1 && op <= 4) || op == 72 ? feed_thread(pm, ev, op, version) : 0;
  if (hs_guid_eq(g, &G_IMAGE)) return (op >= 2 && op <= 4) || op == 10 ? feed_image(pm, ev, op, version) : 0;
  return 0;
}

int hsi_procmap_wants_provider(const hs_guid *g) {
  return hs_guid_eq(g, &G_KTC) || hs_guid_eq(g, &G_PROCESS) || hs_guid_eq(g, &G_THREAD)
         || hs_guid_eq(g, &G_IMAGE);
}

int hsi_procmap_feed(hsi_procmap *pm, const hs_event *ev) {
  if ((ev->flags & HS_EVF_KERNEL) && !hsi_procmap_wants(ev)) return 0;   /* heap, stacks, ...: most events */
  return feed_event(pm, ev);
}

uint32_t hsi_procmap_take_lost_end(hsi_procmap *pm) {
  uint32_t id = pm->lost_end;
  pm->lost_end = 0;
  return id;
}

const hsi_procstats *hsi_procmap_stats(const hsi_procmap *pm) { return &pm->st; }
