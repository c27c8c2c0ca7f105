/*
** lua_alloc.c -- allocation lifetimes in Lua: trace:allocations{...}
** (class heapscript.Allocs, a selection of records), the record cursor
** heapscript.Alloc, trace:processes() and trace:memory_stats().
** docs/ALLOCATIONS.md is the user's side of this file.
**
** The records are the columns of the analysis (lifetime.h); Lua never
** gets a table per record.  A selection is an array of record indices in
** a userdata; counting, summing, grouping, sorting and time series run
** in C (query.h) over it.  Loops hand out one reused cursor whose fields
** read the columns.
**
** Ownership.  The analysis of a Trace is built on first use and held by
** an internal userdata (the "analysis box"), found through a registry
** table with weak keys indexed by the Trace: it lives as long as the
** Trace, or longer while a selection, cursor or Stack still refers to
** it (each holds the box in a user value).  It reads the trace's files
** through a reader of its own, so building it never moves the read
** position of a running trace:events() loop.
**
** Memory on error paths.  Everything this file allocates for a call is
** a userdata (index arrays, bitmaps, key arrays), or is malloc'd by the
** query functions into a "scratch" userdata whose __gc frees it; so a
** Lua error at any point (a script's predicate raising, out of memory)
** leaks nothing.  Selections hold their indices in a plain userdata,
** which also lets the garbage collector see their size.
**
** Times.  The API speaks seconds since the start of the trace, exactly
** as heapscript.Event's `time` does: (hs_time_ns of the first file's
** clock + that file's start offset) / 1e9.  Seconds given by a script
** are turned into ticks so that a window [t1, t2] holds exactly the
** records whose times, as the cursor shows them, are in [t1, t2].
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_run.h"
#include "lua_sandbox.h"
#include "analysis.h"
#include "layoutcheck.h"
#include "source.h"
#include "memev.h"
#include "query.h"
#include "satmath.h"
#include "stackplace.h"
#include "text.h"
#include "hash.h"
#include "term.h"

#define HSI_LUA_ALLOCS "heapscript.Allocs"
#define HSI_LUA_ALLOC  "heapscript.Alloc"
#define ANALYSIS_T     "heapscript.analysis"   /* internal: the analysis box */
#define SCRATCH_T      "heapscript.scratch"    /* internal: malloc'd query results */

#define SIGN64 0x8000000000000000ULL
#define EDGE_LO (INT64_MIN + 1)    /* window edges for "before everything" */
#define EDGE_HI (INT64_MAX - 1)    /* ... and "after everything" */

/* ------------------------------------------------------- the analysis box */

typedef struct Analysis {
  hsi_analysis *a;              /* NULL until built; freed by __gc */
  hsi_life *lt;
  const hsi_recs *R;
  hsi_procmap *pm;
  hs_logfile lf;                /* the first file's: the clock of every record */
  int64_t origin, freq;         /* the clock's zero and rate (as hs_time_ns) */
  int64_t off_ns;               /* the first file's start after the earliest file's */
  int64_t span1, span2;         /* the whole trace: first and last event */
  double max_s;                 /* seconds beyond +-max_s map to the window edges */
} Analysis;

/* User values of the box: the table hsi_lua_stack_push caches Stacks in,
   and the process names by instance (pushed once, read by rawgeti). */
enum { AV_CACHE = 1, AV_NAMES, AV_COUNT_ = AV_NAMES };

static const char analyses_key = 'A';   /* registry: Trace -> box (weak keys) */
static const char scopes_key = 'S';     /* registry: Trace -> scope table (weak keys) */

static int analysis_gc(lua_State *L) {
  Analysis *an = (Analysis *)luaL_checkudata(L, 1, ANALYSIS_T);
  hsi_analysis_free(an->a);
  an->a = NULL;
  return 0;
}

/* ns since the trace start, as heapscript.Event's `ns` for file 1. */
static int64_t ns_of(const Analysis *an, int64_t ts) {
  return hsi_add_sat(hs_time_ns(&an->lf, ts), an->off_ns);   /* a damaged time: held within int64_t */
}

/* Record r's lifetime in seconds, into *l: 0 when it has none (never
   freed, or allocated before the trace).  The record field and the
   lifetime filter both ask here. */
static int lifetime_of(const Analysis *an, uint32_t r, double *l) {
  const hsi_recs *R = an->R;
  if (R->ts_alloc[r] == HSI_TS_BEFORE || R->ts_free[r] == HSI_TS_NEVER) return 0;
  *l = (double)(ns_of(an, R->ts_free[r]) - ns_of(an, R->ts_alloc[r])) / 1e9;
  return 1;
}

static double seconds(const Analysis *an, int64_t ts) {
  if (ts <= EDGE_LO) return -HUGE_VAL;
  if (ts >= EDGE_HI) return HUGE_VAL;
  return (double)ns_of(an, ts) / 1e9;
}

/* The least integer N with N / 1e9 >= s (strict: > s), compared as doubles. */
static int64_t ns_bound(double s, int strict) {
  int64_t n = (int64_t)ceil(s * 1e9);
#define PASS(x) (strict ? (double)(x) / 1e9 > s : (double)(x) / 1e9 >= s)
  while (PASS(n - 1)) n--;
  while (!PASS(n)) n++;
#undef PASS
  return n;
}

/* The least tick t with ns_of(t) >= m: a guess, then a galloping search
   (ns_of is monotone; with a clock faster than 1 GHz many ticks share a ns). */
static int64_t tick_bound(const Analysis *an, int64_t m) {
  int64_t d = m - an->off_ns, lo, hi, step = 1;
  int64_t t = an->origin + d / 1000000000 * an->freq +
              (int64_t)((double)(d % 1000000000) * (double)an->freq / 1e9);
  if (ns_of(an, t) >= m) {
    hi = t;
    while (ns_of(an, hi - step) >= m) { hi -= step; step *= 2; }
    lo = hi - step;
  } else {
    lo = t;
    while (ns_of(an, lo + step) < m) { lo += step; step *= 2; }
    hi = lo + step;
  }
  while (hi - lo > 1) {  /* ns_of(lo) < m <= ns_of(hi) */
    int64_t mid = lo + (hi - lo) / 2;
    if (ns_of(an, mid) >= m) hi = mid; else lo = mid;
  }
  return hi;
}

/* First tick shown at s seconds or later (lo), last shown at s or earlier (hi). */
static int64_t tick_lo(const Analysis *an, double s) {
  if (s < -an->max_s) return EDGE_LO;
  if (s > an->max_s) return EDGE_HI;
  return tick_bound(an, ns_bound(s, 0));
}

static int64_t tick_hi(const Analysis *an, double s) {
  if (s < -an->max_s) return EDGE_LO;
  if (s > an->max_s) return EDGE_HI;
  return tick_bound(an, ns_bound(s, 1)) - 1;
}

/*
** Build the analysis of the Trace whose reader is r and push its box.
** The files are opened again: the Trace's own reader may be in the
** middle of a loop, and its Event views that reader's buffers.
*/
static void scope_of(lua_State *L, int tidx, hsi_analysis_scope *sc);

static Analysis *build(lua_State *L, hs_reader *r, int tidx) {
  char err[HS_ERRLEN];
  hsi_analysis_scope sc;
  int nfiles = hs_reader_nfiles(r), rc;
  const hs_logfile *lf0 = hs_reader_logfile(r, 0);
  hs_reader *own = NULL;
  hs_reader_opts ropts;
  hsi_term_progress prog;
  Analysis *an;
  uint32_t inst, ninst;
  double lim;
  if (nfiles < 1 || !lf0) luaL_error(L, "cannot analyse the trace: it has no files");
  hsi_lua_trace_once(L, r);
  scope_of(L, tidx, &sc);                                   /* pushes what owns its arrays */
  an = (Analysis *)lua_newuserdatauv(L, sizeof *an, AV_COUNT_);
  memset(an, 0, sizeof *an);
  luaL_setmetatable(L, ANALYSIS_T);
  err[0] = '\0';
  hsi_lua_trace_damage_opts(L, tidx, &ropts);   /* what this pass skips, the Trace reports */
  rc = hsi_reader_reopen(r, &own, &ropts, err, sizeof err);   /* files, or a live store's records */
  if (rc < 0 || !own) luaL_error(L, "cannot analyse the trace: %s", err[0] ? err : "cannot reopen its files");
  lua_pushfstring(L, "analysing %s%s", hs_reader_path(r, 0), nfiles > 1 ? " ..." : "");
  if (hsi_term_progress_init(&prog, own, lua_tostring(L, -1))) {
    sc.progress = hsi_term_progress_step;
    sc.progress_ud = &prog;
  }
  rc = hsi_analysis_run(own, &sc, &an->a, err, sizeof err);
  hsi_term_progress_done(&prog);
  lua_pop(L, 1);
  hs_reader_close(own);
  if (rc < 0) hsi_lua_limit_check(L);
  if (rc < 0) luaL_error(L, "cannot analyse the trace: %s", err);
  hsi_lua_trace_walked(L, tidx);
  lua_remove(L, -2);  /* the scope's arrays */

  an->lt = hsi_analysis_life(an->a);
  an->R = hsi_life_recs(an->lt);
  an->pm = hsi_analysis_procmap(an->a);
  hsi_lua_syms_setup(L, tidx, hsi_analysis_syms(an->a));
  an->lf = *hsi_analysis_logfile(an->a);
  an->freq = hs_time_freq(&an->lf);
  an->origin = an->lf.clock_type == 2 ? an->lf.start_time : an->lf.header_ts;  /* as timeconv.c */
  an->off_ns = hsi_reader_start_ns(r, 0);   /* the start offset of file 1, as Events have it */
  hsi_life_span(an->lt, &an->span1, &an->span2);
  /* keep every tick computed from seconds within +-2^62 */
  lim = (4.6e18 - fabs((double)an->origin) - fabs((double)an->off_ns) * (double)an->freq / 1e9) /
        (double)an->freq;
  an->max_s = lim < 1e9 ? (lim > 0 ? lim : 0) : 1e9;

  lua_newtable(L);
  lua_setiuservalue(L, -2, AV_CACHE);
  ninst = hsi_procmap_ninstances(an->pm);
  lua_createtable(L, (int)ninst, 0);
  for (inst = 1; inst <= ninst; inst++) {
    const char *name = hsi_procmap_name(an->pm, inst);
    if (name && *name) {
      lua_pushstring(L, name);
      lua_rawseti(L, -2, inst);
    }
  }
  lua_setiuservalue(L, -2, AV_NAMES);
  /* the collector cannot see the analysis's memory: tell it, so that an
     older analysis no one refers to any more is given back soon */
  lua_gc(L, LUA_GCSTEP, (int)(hsi_life_memory(an->lt) / 1024 < 1000000 ? hsi_life_memory(an->lt) / 1024 : 1000000));
  return an;
}

/* Push the analysis box of the Trace at tidx, building it on first use. */
static Analysis *analysis_of(lua_State *L, int tidx) {
  hs_reader *r = hsi_lua_checkreader(L, tidx);
  Analysis *an;
  tidx = lua_absindex(L, tidx);
  hsi_lua_weak_registry(L, &analyses_key);
  lua_pushvalue(L, tidx);
  if (lua_rawget(L, -2) == LUA_TUSERDATA) {
    lua_remove(L, -2);
    return (Analysis *)lua_touserdata(L, -1);
  }
  lua_pop(L, 1);
  an = build(L, r, tidx);
  lua_pushvalue(L, tidx);
  lua_pushvalue(L, -2);
  lua_rawset(L, -4);
  lua_remove(L, -2);
  return an;
}

struct hsi_analysis *hsi_lua_trace_analysis(lua_State *L, int tidx, int build) {
  tidx = lua_absindex(L, tidx);
  if (build) return analysis_of(L, tidx)->a;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &analyses_key) == LUA_TTABLE) {
    lua_pushvalue(L, tidx);
    lua_rawget(L, -2);
    lua_remove(L, -2);
  }
  if (!luaL_testudata(L, -1, ANALYSIS_T)) {
    lua_pop(L, 1);
    lua_pushnil(L);
    return NULL;
  }
  return ((Analysis *)lua_touserdata(L, -1))->a;
}

/* ------------------------------------------------------------- scope */

/* The scope trace:scope stored for the Trace at tidx, as the C struct;
   pushes one userdata that owns the arrays (pop it after the run). */
static void scope_of(lua_State *L, int tidx, hsi_analysis_scope *sc) {
  size_t np = 0, nn = 0, i;
  uint32_t *pids;
  const char **names;
  memset(sc, 0, sizeof *sc);
  tidx = lua_absindex(L, tidx);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &scopes_key) == LUA_TTABLE) {
    lua_pushvalue(L, tidx);
    lua_rawget(L, -2);
    lua_remove(L, -2);
  }
  if (!lua_istable(L, -1)) { lua_pop(L, 1); lua_newuserdatauv(L, 1, 1); return; }
  lua_getfield(L, -1, "kinds");
  sc->kinds = (uint32_t)lua_tointeger(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, -1, "pids");
  np = lua_istable(L, -1) ? (size_t)luaL_len(L, -1) : 0;
  lua_pop(L, 1);
  lua_getfield(L, -1, "names");
  nn = lua_istable(L, -1) ? (size_t)luaL_len(L, -1) : 0;
  lua_pop(L, 1);
  /* one block for both arrays; the scope table rides in its user value so
     the name strings stay alive */
  names = (const char **)lua_newuserdatauv(L, nn * sizeof *names + np * sizeof *pids + 1, 1);
  pids = (uint32_t *)(void *)(names + nn);               /* after the pointers: aligned */
  lua_pushvalue(L, -2);
  lua_setiuservalue(L, -2, 1);
  lua_remove(L, -2);                                       /* the scope table: now the box's */
  lua_getiuservalue(L, -1, 1);
  lua_getfield(L, -1, "pids");
  for (i = 0; i < np; i++) { lua_geti(L, -1, (lua_Integer)i + 1); pids[i] = (uint32_t)lua_tointeger(L, -1); lua_pop(L, 1); }
  lua_pop(L, 1);
  lua_getfield(L, -1, "names");
  for (i = 0; i < nn; i++) { lua_geti(L, -1, (lua_Integer)i + 1); names[i] = lua_tostring(L, -1); lua_pop(L, 1); }
  lua_pop(L, 2);
  if (np) { sc->pids = pids; sc->npids = np; }
  if (nn) { sc->names = names; sc->nnames = nn; }
}

/* ------------------------------------------------------------- scratch */

/* Results the query functions malloc, held where __gc can free them. */
typedef struct Scratch {
  hsi_sel sel;
  hsi_groups groups;
  hsi_series series;
} Scratch;

static int scratch_gc(lua_State *L) {
  Scratch *s = (Scratch *)luaL_checkudata(L, 1, SCRATCH_T);
  hsi_sel_free(&s->sel);
  hsi_groups_free(&s->groups);
  hsi_series_free(&s->series);
  return 0;
}

static Scratch *newscratch(lua_State *L) {
  Scratch *s = (Scratch *)lua_newuserdatauv(L, sizeof *s, 0);
  memset(s, 0, sizeof *s);
  luaL_setmetatable(L, SCRATCH_T);
  return s;
}

static void *newbuf(lua_State *L, size_t n, size_t size) {
  void *p = lua_newuserdatauv(L, n ? n * size : 1, 0);
  memset(p, 0, n ? n * size : 1);
  return p;
}

/* A query failed: for lack of memory, or stopped by a time limit (stop.h). */
static int nomem(lua_State *L) {
  hsi_lua_limit_check(L);
  return luaL_error(L, "not enough memory");
}

/* The keys to group the n records at idx by their stack (which), in a
   buffer pushed on the stack: the stack id, or apart for each other set
   of images behind the same addresses (stackplace.h).  NULL, and nil
   pushed, when every key is the stack id (the usual case: no buffer). */
static const uint64_t *stack_keys(lua_State *L, const Analysis *an, const uint32_t *idx, size_t n, int which) {
  const hsi_stacks *st = hsi_analysis_stacks(an->a);
  uint64_t *keys;
  long split = hsi_stack_keys(an->R, st, an->pm, idx, n, which, NULL);
  if (split < 0) nomem(L);
  if (split == 0) {
    lua_pushnil(L);
    return NULL;
  }
  keys = (uint64_t *)newbuf(L, n, sizeof *keys);
  if (hsi_stack_keys(an->R, st, an->pm, idx, n, which, keys) < 0) nomem(L);
  return keys;
}

/* ---------------------------------------------------------- selections */

typedef struct Allocs {
  const uint32_t *idx;          /* record indices, in the selection's order (user value 2) */
  size_t n;
  int64_t t1, t2;               /* its window, in ticks */
  Analysis *an;                 /* user value 1 */
} Allocs;

enum { SV_ANALYSIS = 1, SV_INDEX, SV_COUNT_ = SV_INDEX };

#define toallocs(L, i) ((Allocs *)luaL_checkudata(L, i, HSI_LUA_ALLOCS))

/* Push a selection over n indices at ptr, kept in the userdata at buf. */
static Allocs *newview(lua_State *L, int anidx, int buf, const uint32_t *ptr, size_t n,
                       int64_t t1, int64_t t2) {
  Allocs *A;
  anidx = lua_absindex(L, anidx);
  buf = lua_absindex(L, buf);
  A = (Allocs *)lua_newuserdatauv(L, sizeof *A, SV_COUNT_);
  A->idx = ptr;
  A->n = n;
  A->t1 = t1;
  A->t2 = t2;
  A->an = (Analysis *)lua_touserdata(L, anidx);
  luaL_setmetatable(L, HSI_LUA_ALLOCS);
  lua_pushvalue(L, anidx);
  lua_setiuservalue(L, -2, SV_ANALYSIS);
  lua_pushvalue(L, buf);
  lua_setiuservalue(L, -2, SV_INDEX);
  return A;
}

/* Push a selection with room for n indices; returns where to write them. */
static uint32_t *newallocs(lua_State *L, int anidx, size_t n, int64_t t1, int64_t t2) {
  uint32_t *buf;
  anidx = lua_absindex(L, anidx);
  buf = (uint32_t *)lua_newuserdatauv(L, (n ? n : 1) * sizeof *buf, 0);
  newview(L, anidx, -1, buf, n, t1, t2);
  lua_remove(L, -2);
  return buf;
}

static hsi_sel sel_of(const Allocs *A) {
  hsi_sel s;
  s.idx = (uint32_t *)A->idx;   /* the query functions only read it */
  s.n = s.cap = A->n;
  return s;
}

/* A's records in [t1, t2] grouped by their stack (which), a group per
   stack as one program has it (stack_keys, whose buffer is pushed); 0
   or hsi_query_group's error. */
static int group_stacks(lua_State *L, const Analysis *an, const Allocs *A, int64_t t1, int64_t t2, int which,
                        unsigned opts, hsi_groups *out) {
  hsi_sel s = sel_of(A);
  const uint64_t *keys = stack_keys(L, an, A->idx, A->n, which);
  int by = keys ? HSI_BY_KEY : which == HSI_STACK_FREE ? HSI_BY_FREE_STACK : HSI_BY_ALLOC_STACK;
  return hsi_query_group(an->lt, &s, t1, t2, by, keys, opts, out);
}

/* -------------------------------------------------------------- cursor */

typedef struct Cursor {
  const Analysis *an;           /* user value 1 */
  uint32_t rec;                 /* HSI_NOREC: no current record */
  size_t pos;                   /* next position, for each() */
  int64_t t1, t2;               /* default window of a:class() */
} Cursor;

enum { CV_ANALYSIS = 1, CV_NAMES, CV_CACHE, CV_COUNT_ = CV_CACHE };

#define tocursor(L, i) ((Cursor *)luaL_checkudata(L, i, HSI_LUA_ALLOC))

static Cursor *newcursor(lua_State *L, int anidx, int64_t t1, int64_t t2) {
  Cursor *c;
  anidx = lua_absindex(L, anidx);
  c = (Cursor *)lua_newuserdatauv(L, sizeof *c, CV_COUNT_);
  c->an = (const Analysis *)lua_touserdata(L, anidx);
  c->rec = HSI_NOREC;
  c->pos = 0;
  c->t1 = t1;
  c->t2 = t2;
  luaL_setmetatable(L, HSI_LUA_ALLOC);
  lua_pushvalue(L, anidx);
  lua_setiuservalue(L, -2, CV_ANALYSIS);
  lua_getiuservalue(L, anidx, AV_NAMES);
  lua_setiuservalue(L, -2, CV_NAMES);
  lua_getiuservalue(L, anidx, AV_CACHE);
  lua_setiuservalue(L, -2, CV_CACHE);
  return c;
}

/* Push the Stack `id` of record r (nil for 0); owner and cache at the given indexes. */
static void pushstack(lua_State *L, const Analysis *an, int owner, int cache, uint32_t r, int which) {
  const hsi_recs *R = an->R;
  uint32_t id = hsi_rec_stack(R, r, which);
  if (id == HSI_STACK_UNKNOWN) {
    lua_pushnil(L);
    return;
  }
  hsi_lua_stack_push(L, owner, cache, an->a, id, hsi_rec_stack_inst(R, r, which), hsi_rec_stack_ts(R, r, which));
}

static void pushtag(lua_State *L, uint32_t tag) {
  char s[5];
  hsi_pool_tag(tag, s);
  lua_pushstring(L, s);
}

/* The pid of an instance; HS_NOID for none (instance 0) or unknown. */
static uint32_t pid_of(const Analysis *an, uint32_t inst) {
  return inst ? hsi_procmap_pid(an->pm, inst) : HS_NOID;
}

static void pushpid(lua_State *L, const Analysis *an, uint32_t inst) {
  uint32_t pid = pid_of(an, inst);
  if (pid == HS_NOID) lua_pushnil(L);
  else lua_pushinteger(L, (lua_Integer)pid);
}

/* Push field k of the cursor's record; 0 if there is no such field. */
static int field(lua_State *L, Cursor *c, const char *k) {
  const Analysis *an = c->an;
  const hsi_recs *R = an->R;
  uint32_t r = c->rec;
  int kind;
  if (r == HSI_NOREC)
    return luaL_error(L, "heapscript.Alloc used outside its loop: there is no current record");
  kind = R->kind[r];
#define IS(s) (strcmp(k, s) == 0)
#define INT(v) (lua_pushinteger(L, (lua_Integer)(v)), 1)
#define BOOL(v) (lua_pushboolean(L, (v) != 0), 1)
#define NIL() (lua_pushnil(L), 1)
  switch (k[0]) {
  case 'a':
    if (IS("address")) return INT(R->addr[r]);
    if (IS("alloc_time")) return R->ts_alloc[r] == HSI_TS_BEFORE ? NIL() : (lua_pushnumber(L, seconds(an, R->ts_alloc[r])), 1);
    break;
  case 'b':
    if (IS("before_trace")) return BOOL(R->flags[r] & HSI_RF_BEFORE);
    break;
  case 'f':
    if (IS("free_time")) return R->ts_free[r] == HSI_TS_NEVER ? NIL() : (lua_pushnumber(L, seconds(an, R->ts_free[r])), 1);
    if (IS("free_stack")) {
      lua_getiuservalue(L, 1, CV_ANALYSIS);
      lua_getiuservalue(L, 1, CV_CACHE);
      pushstack(L, an, -2, -1, r, HSI_STACK_FREE);
      lua_replace(L, -3);
      lua_pop(L, 1);
      return 1;
    }
    break;
  case 'h':
    if (IS("heap")) return kind == HSI_KIND_HEAP ? INT(R->key[r]) : NIL();
    break;
  case 'i':
    if (IS("index")) return INT(r + 1);
    if (IS("instance")) return R->inst[r] ? INT(R->inst[r]) : NIL();
    break;
  case 'k':
    if (IS("kind")) return lua_pushstring(L, hsi_kind_name(kind)), 1;
    break;
  case 'l':
    if (IS("lifetime")) {
      double l;
      if (!lifetime_of(an, r, &l)) return NIL();
      lua_pushnumber(L, l);
      return 1;
    }
    break;
  case 'p':
    if (IS("pid")) return pushpid(L, an, R->inst[r]), 1;
    if (IS("process")) {
      lua_getiuservalue(L, 1, CV_NAMES);
      lua_rawgeti(L, -1, R->inst[r]);
      lua_remove(L, -2);
      return 1;
    }
    if (IS("pool_type")) {
      char s[HSI_POOLTYPE_STRLEN];
      if (kind != HSI_KIND_POOL) return NIL();
      return lua_pushstring(L, hsi_pool_type_str(HSI_REC_POOLTYPE(R, r), s, sizeof s)), 1;
    }
    break;
  case 'r':
    if (IS("reason")) return lua_pushstring(L, hsi_end_name(R->reason[r])), 1;
    if (IS("realloc")) return BOOL(R->flags[r] & HSI_RF_REALLOC);
    break;
  case 's':
    if (IS("size")) return (R->flags[r] & HSI_RF_SIZE_UNKNOWN) ? NIL() : INT(R->size[r]);
    if (IS("stack")) {
      lua_getiuservalue(L, 1, CV_ANALYSIS);
      lua_getiuservalue(L, 1, CV_CACHE);
      pushstack(L, an, -2, -1, r, HSI_STACK_ALLOC);
      lua_replace(L, -3);
      lua_pop(L, 1);
      return 1;
    }
    if (IS("size_unknown")) return BOOL(R->flags[r] & HSI_RF_SIZE_UNKNOWN);
    if (IS("split")) return BOOL(R->flags[r] & HSI_RF_SPLIT);
    if (IS("source")) {
      const char *s;
      if (kind != HSI_KIND_HEAP || R->source[r] == 0) return NIL();
      s = hsi_heap_source_name(R->source[r]);
      return s ? (lua_pushstring(L, s), 1) : INT(R->source[r]);
    }
    break;
  case 't':
    if (IS("tag")) return kind == HSI_KIND_POOL ? (pushtag(L, HSI_REC_TAG(R, r)), 1) : NIL();
    break;
  }
#undef IS
#undef INT
#undef BOOL
#undef NIL
  return 0;
}

/* __index(a, k): a field, else a method (upvalue 1), else an error. */
static int c_index(lua_State *L) {
  Cursor *c = tocursor(L, 1);
  const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : NULL;
  if (k && field(L, c, k)) return 1;
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
  if (k) return luaL_error(L, "heapscript.Alloc has no field or method '%s'", k);
  return luaL_error(L, "heapscript.Alloc fields are named by strings, not by a %s", luaL_typename(L, 2));
}

static int c_newindex(lua_State *L) {
  return luaL_error(L, "heapscript.Alloc is read-only (field '%s')", luaL_tolstring(L, 2, NULL));
}

static int c_tostring(lua_State *L) {
  Cursor *c = tocursor(L, 1);
  const hsi_recs *R = c->an->R;
  uint32_t r = c->rec;
  char addr[32];
  if (r == HSI_NOREC) {
    lua_pushliteral(L, "heapscript.Alloc (no current record)");
    return 1;
  }
  snprintf(addr, sizeof addr, "0x%llx", (unsigned long long)R->addr[r]);
  if (R->flags[r] & HSI_RF_SIZE_UNKNOWN)
    lua_pushfstring(L, "heapscript.Alloc (#%I %s, size unknown, at %s)", (lua_Integer)r + 1,
                    hsi_kind_name(R->kind[r]), addr);
  else
    lua_pushfstring(L, "heapscript.Alloc (#%I %s, %I bytes at %s)", (lua_Integer)r + 1,
                    hsi_kind_name(R->kind[r]), (lua_Integer)R->size[r], addr);
  return 1;
}

/* ------------------------------------------------------ argument reading */

#define argfail hsi_lua_argerrorf

static double checkseconds(lua_State *L, int v, int arg, const char *what) {
  int isnum;
  lua_Number x = lua_tonumberx(L, v, &isnum);
  if (!isnum) argfail(L, arg, "%s: seconds expected, got %s", what, luaL_typename(L, v));
  if (x != x) argfail(L, arg, "%s: %s is not a time", what, "NaN");
  return (double)x;
}

/*
** A window at v: {t1, t2} in seconds (also {from=, to=}), either may be
** nil; t1 and t2 are in/out (their defaults, in ticks).
*/
static void getwindow(lua_State *L, const Analysis *an, int v, int arg, int64_t *t1, int64_t *t2) {
  v = lua_absindex(L, v);
  if (lua_isnoneornil(L, v)) return;
  if (lua_type(L, v) != LUA_TTABLE)
    argfail(L, arg, "window: {t1, t2} (seconds) expected, got %s", luaL_typename(L, v), NULL);
  if (lua_geti(L, v, 1) == LUA_TNIL) { lua_pop(L, 1); lua_getfield(L, v, "from"); }
  if (lua_geti(L, v, 2) == LUA_TNIL) { lua_pop(L, 1); lua_getfield(L, v, "to"); }
  if (!lua_isnil(L, -2) && !lua_isnil(L, -1) &&
      checkseconds(L, -2, arg, "window start") > checkseconds(L, -1, arg, "window end"))
    argfail(L, arg, "window: the start is after the end", NULL, NULL);
  /* a window between two ticks comes out as t2 = t1 - 1: only records
     alive across it are in it (AOFO), which is what it means */
  if (!lua_isnil(L, -2)) *t1 = tick_lo(an, checkseconds(L, -2, arg, "window start"));
  if (!lua_isnil(L, -1)) *t2 = tick_hi(an, checkseconds(L, -1, arg, "window end"));
  /* one end given past the other's default ({100, nil} on a 7 s trace):
     the window is that moment, as {100, 100} (it was 100..7, reversed) */
  if (lua_isnil(L, -1) && !lua_isnil(L, -2) && *t2 < *t1) *t2 = *t1;
  if (lua_isnil(L, -2) && !lua_isnil(L, -1) && *t1 > *t2) *t1 = *t2;
  lua_pop(L, 2);
}

/* An integer at v, or an argument error naming the filter. */
static lua_Integer checkint(lua_State *L, int v, int arg, const char *key) {
  int isint;
  lua_Integer x = lua_tointegerx(L, v, &isint);
  if (!isint) argfail(L, arg, "filter '%s': integer expected, got %s", key, luaL_typename(L, v));
  return x;
}

/* Push the two ends of a range filter at v: {min, max}, {min =, max =}
   (either may be nil), or one value for both. */
static void push_range(lua_State *L, int v) {
  v = lua_absindex(L, v);
  if (lua_type(L, v) != LUA_TTABLE) {
    lua_pushvalue(L, v);
    lua_pushvalue(L, v);
    return;
  }
  if (lua_geti(L, v, 1) == LUA_TNIL) { lua_pop(L, 1); lua_getfield(L, v, "min"); }
  if (lua_geti(L, v, 2) == LUA_TNIL) { lua_pop(L, 1); lua_getfield(L, v, "max"); }
}

typedef const char *(*namefn)(int);

/* The mask of the names at v (a string or a list of them) among name(0..n-1). */
static uint32_t namemask(lua_State *L, int v, int arg, const char *key, namefn name, int n,
                         const char *known) {
  uint32_t m = 0;
  lua_Integer i, len = 1;
  int list = lua_type(L, v) == LUA_TTABLE;
  if (list) {
    len = luaL_len(L, v);
    if (len == 0) argfail(L, arg, "filter '%s': empty list", key, NULL);
  }
  for (i = 1; i <= len; i++) {
    const char *s;
    int j;
    if (list) lua_geti(L, v, i);
    else lua_pushvalue(L, v);
    if (lua_type(L, -1) != LUA_TSTRING)
      argfail(L, arg, "filter '%s': name expected, got %s", key, luaL_typename(L, -1));
    if (hsi_lua_has_nul(L, -1)) argfail(L, arg, "filter '%s': a name with a NUL byte in it", key, NULL);
    s = lua_tostring(L, -1);
    for (j = 0; j < n; j++)
      if (hsi_strieq(name(j), s)) break;
    if (j == n)
      luaL_argerror(L, arg, lua_pushfstring(L, "filter '%s': unknown %s '%s' (known: %s)", key, key, s, known));
    m |= 1u << j;
    lua_pop(L, 1);
  }
  return m;
}

/* -------------------------------------------------------------- filters */

#define FILTER_KEYS "kind, pid, process, instance, heap, tag, size, lifetime, window, class, stack, " \
                    "free_stack, reason, before_trace, outstanding, realloc, size_unknown"
#define KINDS   "heap, virtual, pool"
#define CLASSES "AIFI, AIFO, AOFI, AOFO"
#define REASONS "free, realloc, destroy, process_end, decommit, release, reused, none"

typedef struct Query {
  hsi_filter f;
  uint32_t reasons;             /* being built: all bits = any */
  int stack, free_stack;        /* a pattern was given (read again from the table) */
  int life;                     /* a lifetime range was given: [life_lo, life_hi] seconds */
  double life_lo, life_hi;
  int empty;                    /* the filters exclude everything */
} Query;

/*
** Mark in `set` the instances whose name is the string at v: equal
** (ignoring ASCII case), or matching it as a Lua pattern over the whole
** name.  `find` is the index of string.find.
*/
static void match_process(lua_State *L, const Analysis *an, int v, int arg, int find, uint8_t *set) {
  uint32_t i, n = hsi_procmap_ninstances(an->pm);
  const char *s;
  size_t len, pct = 0;
  int pat;
  luaL_Buffer b;
  if (lua_type(L, v) != LUA_TSTRING)
    argfail(L, arg, "filter 'process': name or pattern expected, got %s", luaL_typename(L, v), NULL);
  if (hsi_lua_has_nul(L, v)) argfail(L, arg, "filter 'process': a name with a NUL byte in it", NULL, NULL);
  s = lua_tolstring(L, v, &len);
  /* anchor the pattern at both ends, unless it already is */
  luaL_buffinit(L, &b);
  if (s[0] != '^') luaL_addchar(&b, '^');
  luaL_addlstring(&b, s, len);
  while (len > 1 + pct && s[len - 2 - pct] == '%') pct++;
  if (len == 0 || s[len - 1] != '$' || pct % 2 == 1) luaL_addchar(&b, '$');
  luaL_pushresult(&b);
  pat = lua_gettop(L);
  for (i = 1; i <= n; i++) {
    const char *name = hsi_procmap_name(an->pm, i);
    if (!name || !*name) continue;
    if (hsi_strieq(name, s)) { set[i] = 1; continue; }
    lua_pushvalue(L, find);
    lua_pushstring(L, name);
    lua_pushvalue(L, pat);
    switch (lua_pcall(L, 2, 1, 0)) {
    case LUA_OK: break;
    case LUA_ERRRUN:                         /* a malformed pattern: said at the script's line */
      argfail(L, arg, "filter 'process': %s", lua_tostring(L, -1), NULL);
      break;
    default: lua_error(L);                   /* out of memory, a limit: as they came */
    }
    if (!lua_isnil(L, -1)) set[i] = 1;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

/*
** Read the filter table at ftab into q, over the default window
** [t1, t2].  Pushes three values the filter points into (instance
** masks and list), which the caller pops when done with q.
*/
static void parse_query(lua_State *L, const Analysis *an, int ftab, int arg, int64_t t1, int64_t t2,
                        Query *q) {
  uint32_t ninst = hsi_procmap_ninstances(an->pm), i;
  uint8_t *mask, *set;
  int have_inst = 0, find = 0;
  ftab = lua_absindex(L, ftab);
  memset(q, 0, sizeof *q);
  hsi_filter_init(&q->f, an->lt);
  q->f.t1 = t1;
  q->f.t2 = t2;
  q->reasons = (1u << HSI_END_COUNT) - 1;
  mask = (uint8_t *)newbuf(L, ninst + 1, 1);
  set = (uint8_t *)newbuf(L, ninst + 1, 1);
  memset(mask, 1, ninst + 1);
  if (lua_isnoneornil(L, ftab)) {
    lua_pushnil(L);
    return;
  }
  if (lua_type(L, ftab) != LUA_TTABLE)
    argfail(L, arg, "filters: table expected, got %s", luaL_typename(L, ftab), NULL);
  lua_pushnil(L);
  while (lua_next(L, ftab)) {
    int v = lua_gettop(L), instf = 0;
    const char *k;
    if (lua_type(L, -2) != LUA_TSTRING)
      argfail(L, arg, "filters are named (kind=, pid=, ...), got a %s key", luaL_typename(L, -2), NULL);
    k = lua_tostring(L, -2);
    memset(set, 0, ninst + 1);
    if (strcmp(k, "kind") == 0) {
      q->f.kinds = namemask(L, v, arg, k, hsi_kind_name, HSI_KIND_COUNT, KINDS);
    } else if (strcmp(k, "class") == 0) {
      q->f.classes = namemask(L, v, arg, k, hsi_class_name, HSI_NCLASS, CLASSES);
    } else if (strcmp(k, "reason") == 0) {
      q->reasons &= namemask(L, v, arg, k, hsi_end_name, HSI_END_COUNT, REASONS);
    } else if (strcmp(k, "pid") == 0 || strcmp(k, "instance") == 0) {
      int bypid = k[0] == 'p';
      lua_Integer j, len = lua_type(L, v) == LUA_TTABLE ? luaL_len(L, v) : 1;
      if (lua_type(L, v) == LUA_TTABLE && len == 0) argfail(L, arg, "filter '%s': empty list", k, NULL);
      for (j = 1; j <= len; j++) {
        lua_Integer x;
        if (lua_type(L, v) == LUA_TTABLE) lua_geti(L, v, j);
        else lua_pushvalue(L, v);
        x = checkint(L, -1, arg, k);
        lua_pop(L, 1);
        for (i = 1; i <= ninst; i++)
          if (bypid ? (lua_Integer)hsi_procmap_pid(an->pm, i) == x : (lua_Integer)i == x) set[i] = 1;
      }
      instf = 1;
    } else if (strcmp(k, "process") == 0) {
      if (!find) {
        lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
        lua_getfield(L, -1, "string");
        if (lua_type(L, -1) != LUA_TTABLE || lua_getfield(L, -1, "find") != LUA_TFUNCTION)
          luaL_error(L, "filter 'process' needs the string library (string.find)");
        /* keep string.find below the key, in the slot lua_next does not use */
        lua_replace(L, -3);
        lua_pop(L, 1);
        lua_insert(L, v - 1);
        find = v - 1;
        v++;
      }
      if (lua_type(L, v) == LUA_TTABLE) {
        lua_Integer j, len = luaL_len(L, v);
        if (len == 0) argfail(L, arg, "filter '%s': empty list", k, NULL);
        for (j = 1; j <= len; j++) {
          lua_geti(L, v, j);
          match_process(L, an, lua_gettop(L), arg, find, set);
          lua_pop(L, 1);
        }
      } else {
        match_process(L, an, v, arg, find, set);
      }
      instf = 1;
    } else if (strcmp(k, "heap") == 0) {
      q->f.has_heap = 1;
      q->f.heap = (uint64_t)checkint(L, v, arg, k);
    } else if (strcmp(k, "tag") == 0) {
      size_t len;
      const char *s;
      if (lua_type(L, v) == LUA_TNUMBER) {
        lua_Integer x = checkint(L, v, arg, k);
        if (x < 0 || x > 0xFFFFFFFF) argfail(L, arg, "filter 'tag': a tag is a 32-bit value", NULL, NULL);
        q->f.tag = (uint32_t)x;
      } else {
        if (lua_type(L, v) != LUA_TSTRING)
          argfail(L, arg, "filter 'tag': 4-character pool tag expected, got %s", luaL_typename(L, v), NULL);
        s = lua_tolstring(L, v, &len);
        if (len != 4)
          luaL_argerror(L, arg, lua_pushfstring(L, "filter 'tag': a pool tag has 4 characters, '%s' has %d "
                                                   "(pad with spaces: 'Ab  ')", s, (int)len));
        q->f.tag = (uint32_t)(uint8_t)s[0] | (uint32_t)(uint8_t)s[1] << 8 |
                   (uint32_t)(uint8_t)s[2] << 16 | (uint32_t)(uint8_t)s[3] << 24;
      }
      q->f.has_tag = 1;
    } else if (strcmp(k, "size") == 0) {
      lua_Integer lo = 0, hi = LUA_MAXINTEGER;
      push_range(L, v);
      if (!lua_isnil(L, -2)) lo = checkint(L, -2, arg, k);
      if (!lua_isnil(L, -1)) hi = checkint(L, -1, arg, k);
      lua_pop(L, 2);
      if (lo < 0 || hi < 0) argfail(L, arg, "filter 'size': sizes are not negative", NULL, NULL);
      q->f.size_min = (uint64_t)lo;
      q->f.size_max = hi == LUA_MAXINTEGER ? UINT64_MAX : (uint64_t)hi;
      if (lo > hi) q->empty = 1;
    } else if (strcmp(k, "lifetime") == 0) {
      q->life = 1;
      q->life_lo = 0;
      q->life_hi = HUGE_VAL;
      push_range(L, v);
      if (!lua_isnil(L, -2)) q->life_lo = checkseconds(L, -2, arg, "filter 'lifetime'");
      if (!lua_isnil(L, -1)) q->life_hi = checkseconds(L, -1, arg, "filter 'lifetime'");
      lua_pop(L, 2);
      if (q->life_lo < 0 || q->life_hi < 0)
        argfail(L, arg, "filter 'lifetime': lifetimes are not negative", NULL, NULL);
      if (q->life_lo > q->life_hi) q->empty = 1;
    } else if (strcmp(k, "window") == 0) {
      getwindow(L, an, v, arg, &q->f.t1, &q->f.t2);
    } else if (strcmp(k, "stack") == 0 || strcmp(k, "free_stack") == 0) {
      if (lua_type(L, v) != LUA_TSTRING && lua_type(L, v) != LUA_TFUNCTION && !luaL_testudata(L, v, "lpeg-pattern"))
        argfail(L, arg, "filter '%s': Lua pattern, LPeg pattern or function expected, got %s", k,
                luaL_typename(L, v));
      if (k[0] == 's') q->stack = 1; else q->free_stack = 1;
    } else if (strcmp(k, "before_trace") == 0 || strcmp(k, "realloc") == 0 ||
               strcmp(k, "size_unknown") == 0 || strcmp(k, "outstanding") == 0) {
      uint32_t flag = k[0] == 'b' ? HSI_RF_BEFORE : k[0] == 'r' ? HSI_RF_REALLOC : HSI_RF_SIZE_UNKNOWN;
      if (!lua_isboolean(L, v))
        argfail(L, arg, "filter '%s': boolean expected, got %s", k, luaL_typename(L, v));
      if (k[0] == 'o') q->reasons &= lua_toboolean(L, v) ? 1u << HSI_END_NONE : ~(1u << HSI_END_NONE);
      else if (lua_toboolean(L, v)) q->f.flags_all |= flag;
      else q->f.flags_none |= flag;
    } else {
      luaL_argerror(L, arg, lua_pushfstring(L, "unknown filter '%s' (known: " FILTER_KEYS ")", k));
    }
    if (instf) {
      for (i = 0; i <= ninst; i++) mask[i] &= set[i];
      have_inst = 1;
    }
    lua_settop(L, v - 1);
  }
  if (find) lua_remove(L, find);
  if (q->reasons == 0) q->empty = 1;
  else if (q->reasons != (1u << HSI_END_COUNT) - 1) q->f.reasons = q->reasons;
  if (have_inst) {
    uint32_t m = 0, *insts;
    mask[0] = 0;
    for (i = 1; i <= ninst; i++) m += mask[i];
    insts = (uint32_t *)newbuf(L, m, sizeof *insts);
    for (i = 1, m = 0; i <= ninst; i++)
      if (mask[i]) insts[m++] = i;
    q->f.insts = insts;
    q->f.ninsts = m;
    if (m == 0) q->empty = 1;
  } else {
    lua_pushnil(L);
  }
}

/*
** Keep, among idx[0..*n), the records whose stack (`which`) matches the
** pattern in field `key` of the filter table.  The pattern runs once per
** distinct stack id, on the frames as the first record with that stack
** names them (once more for each other program whose images are behind
** the same addresses: stackplace.h); records then pass or fail by a
** table lookup in C.
*/
/* Does the pattern at pat match the frames of record r's stack? 1 yes, 2 no. */
static int stack_verdict(lua_State *L, const Analysis *an, int anidx, int cache, uint32_t r, int which, int pat) {
  int v;
  pushstack(L, an, anidx, cache, r, which);
  v = hsi_lua_stack_match(L, -1, pat) ? 1 : 2;
  lua_pop(L, 1);
  return v;
}

static void stack_filter(lua_State *L, int anidx, int ftab, const char *key, int which,
                         uint32_t *idx, size_t *n) {
  const Analysis *an = (const Analysis *)lua_touserdata(L, anidx);
  const hsi_recs *R = an->R;
  uint32_t nst = hsi_stacks_count(hsi_analysis_stacks(an->a));
  uint8_t *verdict;             /* per stack id: 0 not tried, 1 matches, 2 does not */
  const uint64_t *keys;
  size_t i, m = 0;
  int pat, cache, other;
  lua_getfield(L, ftab, key);
  pat = lua_gettop(L);
  lua_getiuservalue(L, anidx, AV_CACHE);
  cache = lua_gettop(L);
  verdict = (uint8_t *)newbuf(L, (size_t)nst + 1, 1);
  keys = stack_keys(L, an, idx, *n, which);
  lua_newtable(L);              /* the verdicts of other programs' frames at the same addresses */
  other = lua_gettop(L);
  for (i = 0; i < *n; i++) {
    uint32_t r = idx[i], s = keys ? hsi_stack_key_id(keys[i]) : hsi_rec_stack(R, r, which);
    int v;
    if (s == HSI_STACK_UNKNOWN || s > nst) continue;
    if (!keys || keys[i] == s) {
      if (!verdict[s]) verdict[s] = (uint8_t)stack_verdict(L, an, anidx, cache, r, which, pat);
      v = verdict[s];
    } else if (lua_rawgeti(L, other, (lua_Integer)keys[i]) == LUA_TNIL) {
      lua_pop(L, 1);
      v = stack_verdict(L, an, anidx, cache, r, which, pat);
      lua_pushinteger(L, v);
      lua_rawseti(L, other, (lua_Integer)keys[i]);
    } else {
      v = (int)lua_tointeger(L, -1);
      lua_pop(L, 1);
    }
    if (v == 1) idx[m++] = r;
  }
  *n = m;
  lua_settop(L, pat - 1);
}

/* Keep, of the n records at idx, those whose lifetime (the record field
   `lifetime`) is in [lo, hi] seconds: freed, and allocated in the trace. */
static void life_filter(const Analysis *an, double lo, double hi, uint32_t *idx, size_t *n) {
  size_t i, m = 0;
  double l;
  for (i = 0; i < *n; i++)
    if (lifetime_of(an, idx[i], &l) && l >= lo && l <= hi) idx[m++] = idx[i];
  *n = m;
}

/*
** Select with the filter table at ftab (argument `arg`), within `base`
** (NULL: every record) and its window; push the new heapscript.Allocs.
*/
static void run_query(lua_State *L, int anidx, const Allocs *base, int ftab, int arg) {
  const Analysis *an = (const Analysis *)lua_touserdata(L, anidx);
  int top = lua_gettop(L);
  Query q;
  Scratch *sc;
  uint32_t *idx, *out;
  size_t n;
  anidx = lua_absindex(L, anidx);
  ftab = lua_absindex(L, ftab);
  parse_query(L, an, ftab, arg, base ? base->t1 : an->span1, base ? base->t2 : an->span2, &q);
  /* every record of some kinds (trace:allocations{kind = ...}): straight
     into the selection, no scratch to copy from */
  if (!base && !q.empty && !q.life && !q.stack && !q.free_stack
      && (n = hsi_query_every(an->lt, &q.f)) != SIZE_MAX) {
    if (hsi_query_every_fill(an->lt, &q.f, newallocs(L, anidx, n, q.f.t1, q.f.t2))) nomem(L);
    lua_replace(L, top + 1);
    lua_settop(L, top + 1);
    return;
  }
  sc = newscratch(L);
  /* a filter of a selection looks at its records only, in its order */
  if (!q.empty && (base ? hsi_query_select_in(an->lt, &q.f, base->idx, base->n, &sc->sel)
                        : hsi_query_select(an->lt, &q.f, &sc->sel)))
    nomem(L);
  idx = sc->sel.idx;
  n = q.empty ? 0 : sc->sel.n;
  if (q.life && n) life_filter(an, q.life_lo, q.life_hi, idx, &n);
  if (q.stack && n) stack_filter(L, anidx, ftab, "stack", HSI_STACK_ALLOC, idx, &n);
  if (q.free_stack && n) stack_filter(L, anidx, ftab, "free_stack", HSI_STACK_FREE, idx, &n);
  out = newallocs(L, anidx, n, q.f.t1, q.f.t2);
  if (n) memcpy(out, idx, n * sizeof *out);
  hsi_sel_free(&sc->sel);
  lua_replace(L, top + 1);
  lua_settop(L, top + 1);
}

/* ------------------------------------------------------------- results */

#define SETI(name, v) (lua_pushinteger(L, (lua_Integer)(v)), lua_setfield(L, -2, name))
#define SETN(name, v) (lua_pushnumber(L, (lua_Number)(v)), lua_setfield(L, -2, name))

/* The fields of an aggregate's table (summary and group fields), as bits:
   A:group's `fields` option keeps some of them. */
static const char *const aggnames[] = {
  "count", "bytes", "size", "impacting", "transient", "AIFI", "AIFO", "AOFI", "AOFO",
  "unknown_size", "before_trace", "before_bytes", "outstanding_start", "outstanding_start_count",
  "outstanding_end", "outstanding_end_count", "peak", "peak_time", "allocs", NULL
};
enum {
  AF_CLASS = 5,                                  /* AIFI..AOFO: AF_CLASS + HSI_AIFI.. */
  AF_PEAK = 16, AF_PEAK_TIME, AF_ALLOCS, AF_N,
  AF_ALL = (1 << AF_N) - 1
};

/* Push the table of an aggregate with the fields of `mask` (AF_ALL: all
   but allocs, which the caller adds). */
static void pushagg(lua_State *L, const Analysis *an, const hsi_agg *g, unsigned mask) {
  const uint64_t v[] = { g->count, g->bytes, g->size, g->impacting, g->transient, 0, 0, 0, 0,
                         g->unknown_count, g->before_count, g->before_bytes, g->out_start,
                         g->out_start_count, g->out_end, g->out_end_count, g->peak };
  int f, n = 0;
  for (f = 0; f < AF_N; f++) n += (mask >> f) & 1;
  lua_createtable(L, 0, n + 1);
  for (f = 0; f <= AF_PEAK; f++) {
    if (!(mask & (1u << f))) continue;
    if (f >= AF_CLASS && f < AF_CLASS + HSI_NCLASS) {
      lua_createtable(L, 0, 2);
      SETI("count", g->cls_count[f - AF_CLASS]);
      SETI("bytes", g->cls_bytes[f - AF_CLASS]);
    } else {
      lua_pushinteger(L, (lua_Integer)v[f]);
    }
    lua_setfield(L, -2, aggnames[f]);
  }
  if (mask & (1u << AF_PEAK_TIME)) SETN("peak_time", seconds(an, g->peak_ts));
}

/* The selection's window, or the one given at argument `arg`. */
static void window_arg(lua_State *L, const Allocs *A, int arg, int64_t *t1, int64_t *t2) {
  *t1 = A->t1;
  *t2 = A->t2;
  getwindow(L, A->an, arg, arg, t1, t2);
}

/* #A, A:count() */
static int a_count(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)toallocs(L, 1)->n);
  return 1;
}

/* A:window() -> t1, t2 (seconds) */
static int a_window(lua_State *L) {
  Allocs *A = toallocs(L, 1);
  lua_pushnumber(L, seconds(A->an, A->t1));
  lua_pushnumber(L, seconds(A->an, A->t2));
  return 2;
}

/* The selection at 1 aggregated over the window at 2 (default its own). */
static Allocs *agg_arg(lua_State *L, hsi_agg *g, int64_t *t1, int64_t *t2) {
  Allocs *A = toallocs(L, 1);
  hsi_sel s = sel_of(A);
  window_arg(L, A, 2, t1, t2);
  if (hsi_query_agg(A->an->lt, &s, *t1, *t2, HSI_AGG_PEAK, g)) nomem(L);
  return A;
}

/* A:summary([window]) -> table */
static int a_summary(lua_State *L) {
  hsi_agg g;
  int64_t t1, t2;
  Allocs *A = agg_arg(L, &g, &t1, &t2);
  pushagg(L, A->an, &g, AF_ALL);
  lua_createtable(L, 2, 0);
  lua_pushnumber(L, seconds(A->an, t1));
  lua_rawseti(L, -2, 1);
  lua_pushnumber(L, seconds(A->an, t2));
  lua_rawseti(L, -2, 2);
  lua_setfield(L, -2, "window");
  return 1;
}

/* A:peak([window]) -> bytes, time */
static int a_peak(lua_State *L) {
  hsi_agg g;
  int64_t t1, t2;
  Allocs *A = agg_arg(L, &g, &t1, &t2);
  lua_pushinteger(L, (lua_Integer)g.peak);
  lua_pushnumber(L, seconds(A->an, g.peak_ts));
  return 2;
}

/* A:outstanding([t]) -> bytes, count (at the end of the window by default) */
static int a_outstanding(lua_State *L) {
  Allocs *A = toallocs(L, 1);
  hsi_sel s = sel_of(A);
  uint64_t bytes, count;
  int64_t t = A->t2;
  if (!lua_isnoneornil(L, 2)) t = tick_hi(A->an, checkseconds(L, 2, 2, "time"));
  hsi_query_outstanding(A->an->lt, &s, t, &bytes, &count);
  lua_pushinteger(L, (lua_Integer)bytes);
  lua_pushinteger(L, (lua_Integer)count);
  return 2;
}

/* A:series{points=, window=, peaks=} -> {time={}, bytes={}, count={}} */
static int a_series(lua_State *L) {
  Allocs *A = toallocs(L, 1);
  hsi_sel s = sel_of(A);
  lua_Integer points = 100;
  int64_t t1 = A->t1, t2 = A->t2;
  int peaks = 0, rc;
  Scratch *sc;
  size_t i;
  lua_settop(L, 2);
  if (!lua_isnil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, 2)) {
      const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "?";
      if (strcmp(k, "points") == 0) {
        int isint;
        points = lua_tointegerx(L, -1, &isint);
        if (!isint || points < 0 || points > 10000000)
          argfail(L, 2, "option 'points': integer 0..10000000 expected", NULL, NULL);
      } else if (strcmp(k, "window") == 0) {
        getwindow(L, A->an, -1, 2, &t1, &t2);
      } else if (strcmp(k, "peaks") == 0) {
        peaks = lua_toboolean(L, -1);
      } else {
        argfail(L, 2, "unknown option '%s' (known: points, window, peaks)", k, NULL);
      }
      lua_pop(L, 1);
    }
  }
  /* an end beyond every time (a window of -inf or 1e300 s) is the trace's:
     points spread over all time would each be -inf, inf or NaN */
  if (t1 <= EDGE_LO) t1 = A->an->span1;
  if (t2 >= EDGE_HI) t2 = A->an->span2;
  if (t1 >= EDGE_HI) t1 = A->an->span2;   /* (both ends past it: {1e300, 1e301}) */
  if (t2 <= EDGE_LO) t2 = A->an->span1;
  if (t2 < t1) t2 = t1;   /* a window between two ticks: one point */
  if (peaks && points == 0) argfail(L, 2, "option 'peaks': needs points of 1 or more (the columns)", NULL, NULL);
  sc = newscratch(L);
  rc = peaks ? hsi_query_series_peaks(A->an->lt, &s, t1, t2, (size_t)points, &sc->series)
             : hsi_query_series(A->an->lt, &s, t1, t2, (size_t)points, &sc->series);
  if (rc) return nomem(L);            /* or a time limit (hsi_lua_limit_check) */
  lua_createtable(L, 0, 3);
  lua_createtable(L, (int)sc->series.n, 0);
  for (i = 0; i < sc->series.n; i++) {
    lua_pushnumber(L, seconds(A->an, sc->series.t[i]));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "time");
  lua_createtable(L, (int)sc->series.n, 0);
  for (i = 0; i < sc->series.n; i++) {
    lua_pushinteger(L, (lua_Integer)sc->series.bytes[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "bytes");
  lua_createtable(L, (int)sc->series.n, 0);
  for (i = 0; i < sc->series.n; i++) {
    lua_pushinteger(L, (lua_Integer)sc->series.count[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "count");
  hsi_series_free(&sc->series);
  return 1;
}

/* A:filter{...} -> sub-selection */
static int a_filter(lua_State *L) {
  Allocs *A = toallocs(L, 1);
  lua_settop(L, 2);
  lua_getiuservalue(L, 1, SV_ANALYSIS);
  run_query(L, 3, A, 2, 2);
  return 1;
}

/* A:where(fn) -> sub-selection of the records for which fn(cursor) is truthy */
static int a_where(lua_State *L) {
  Allocs *A = toallocs(L, 1), *B;
  Cursor *c;
  uint32_t *out;
  size_t i, m = 0;
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_settop(L, 2);
  lua_getiuservalue(L, 1, SV_ANALYSIS);                     /* 3 */
  out = newallocs(L, 3, A->n, A->t1, A->t2);                /* 4 */
  B = (Allocs *)lua_touserdata(L, 4);
  c = newcursor(L, 3, A->t1, A->t2);                        /* 5 */
  lua_toclose(L, 5);           /* an error in fn leaves it without a record too */
  for (i = 0; i < A->n; i++) {
    c->rec = A->idx[i];
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 5);
    lua_call(L, 1, 1);
    if (lua_toboolean(L, -1)) out[m++] = A->idx[i];
    lua_pop(L, 1);
  }
  lua_closeslot(L, 5);
  if (m < A->n / 2) {  /* do not keep a large array for a few records */
    uint32_t *small = newallocs(L, 3, m, A->t1, A->t2);
    if (m) memcpy(small, out, m * sizeof *out);
    return 1;
  }
  B->n = m;
  lua_settop(L, 4);
  return 1;
}

/* Sort keys of record fields, as unsigned numbers in ascending order. */
static const char *const sortfields[] = {
  "size", "alloc_time", "free_time", "lifetime", "address", "index", "pid", "instance",
  "heap", "tag", "kind", "reason", NULL
};

static uint64_t sortkey(const Analysis *an, uint32_t r, int field) {
  const hsi_recs *R = an->R;
  switch (field) {
  case 0: return (R->flags[r] & HSI_RF_SIZE_UNKNOWN) ? 0 : R->size[r] + 1;   /* unknown first */
  case 1: return (uint64_t)R->ts_alloc[r] ^ SIGN64;
  case 2: return (uint64_t)R->ts_free[r] ^ SIGN64;
  case 3:
    if (R->ts_alloc[r] == HSI_TS_BEFORE || R->ts_free[r] == HSI_TS_NEVER) return UINT64_MAX;
    return (uint64_t)(R->ts_free[r] - R->ts_alloc[r]);
  case 4: return R->addr[r];
  case 5: return r;
  case 6: {  /* without a pid (no instance, or one whose pid is unknown): last, as a.pid is nil */
    uint32_t pid = pid_of(an, R->inst[r]);
    return pid == HS_NOID ? UINT64_MAX : pid;
  }
  case 7: return R->inst[r] ? R->inst[r] : UINT64_MAX;
  case 8: return R->kind[r] == HSI_KIND_HEAP ? R->key[r] : UINT64_MAX;
  case 9: {  /* alphabetical: the first character is the low byte */
    uint32_t t = HSI_REC_TAG(R, r);
    if (R->kind[r] != HSI_KIND_POOL) return UINT64_MAX;
    return (uint64_t)((t & 0xFFu) << 24 | (t & 0xFF00u) << 8 | (t >> 8 & 0xFF00u) | t >> 24);
  }
  case 10: return R->kind[r];
  default: return R->reason[r];
  }
}

struct skey { uint64_t k; uint32_t rec; };

static int cmp_skey(const void *a, const void *b) {
  const struct skey *x = (const struct skey *)a, *y = (const struct skey *)b;
  if (x->k != y->k) return x->k < y->k ? -1 : 1;
  return x->rec < y->rec ? -1 : x->rec > y->rec;
}

static int skey_less(const struct skey *x, const struct skey *y) {
  return x->k < y->k || (x->k == y->k && x->rec < y->rec);
}

/*
** The `limit` smallest of keys[0..n) into keys[0..limit), in order: a
** max-heap of the best so far, so top(10) of a million records is one
** pass, not a sort.
*/
static void smallest(struct skey *keys, size_t n, size_t limit) {
  size_t i, h = 0;
  for (i = 0; i < n; i++) {
    struct skey x = keys[i];
    size_t j;
    if (h < limit) {                      /* sift up */
      for (j = h++; j > 0 && skey_less(&keys[(j - 1) / 2], &x); j = (j - 1) / 2) keys[j] = keys[(j - 1) / 2];
      keys[j] = x;
    } else if (skey_less(&x, &keys[0])) { /* replace the worst, sift down */
      for (j = 0;;) {
        size_t c = 2 * j + 1;
        if (c >= h) break;
        if (c + 1 < h && skey_less(&keys[c], &keys[c + 1])) c++;
        if (!skey_less(&x, &keys[c])) break;
        keys[j] = keys[c];
        j = c;
      }
      keys[j] = x;
    }
  }
  qsort(keys, h, sizeof *keys, cmp_skey);
}

/* Push A sorted by the field at argument farg; at most `limit` records. */
static void sorted(lua_State *L, Allocs *A, int farg, const char *def, int desc, size_t limit) {
  const char *name = luaL_optstring(L, farg, def);
  int field;
  struct skey *keys;
  uint32_t *out;
  size_t i, n = A->n;
  for (field = 0; sortfields[field]; field++)
    if (strcmp(sortfields[field], name) == 0) break;
  if (!sortfields[field])
    argfail(L, farg, "unknown record field '%s' to sort by (known: size, alloc_time, free_time, "
                     "lifetime, address, index, pid, instance, heap, tag, kind, reason)", name, NULL);
  lua_getiuservalue(L, 1, SV_ANALYSIS);
  keys = (struct skey *)newbuf(L, n, sizeof *keys);
  for (i = 0; i < n; i++) {
    uint64_t k = sortkey(A->an, A->idx[i], field);
    keys[i].k = desc ? ~k : k;   /* ties stay in index order either way */
    keys[i].rec = A->idx[i];
  }
  if (limit < n / 4) {
    smallest(keys, n, limit);
    n = limit;
  } else {
    qsort(keys, n, sizeof *keys, cmp_skey);
    if (limit < n) n = limit;
  }
  out = newallocs(L, -2, n, A->t1, A->t2);
  for (i = 0; i < n; i++) out[i] = keys[i].rec;
}

/* A:sorted(field [, desc]) -> selection in that order */
static int a_sorted(lua_State *L) {
  Allocs *A = toallocs(L, 1);
  luaL_checkstring(L, 2);
  sorted(L, A, 2, NULL, lua_toboolean(L, 3), SIZE_MAX);
  return 1;
}

/* A:top(n [, field]) -> the n records with the largest field (default size) */
static int a_top(lua_State *L) {
  Allocs *A = toallocs(L, 1);
  lua_Integer n = luaL_checkinteger(L, 2);
  luaL_argcheck(L, n >= 0, 2, "count must not be negative");
  sorted(L, A, 3, "size", 1, (size_t)n);
  return 1;
}

/* The step of A:each(): upvalues the selection and the cursor. */
static int each_step(lua_State *L) {
  Allocs *A = (Allocs *)lua_touserdata(L, lua_upvalueindex(1));
  Cursor *c = (Cursor *)lua_touserdata(L, lua_upvalueindex(2));
  if (c->pos >= A->n) {
    c->rec = HSI_NOREC;
    return 0;
  }
  c->rec = A->idx[c->pos++];
  lua_pushvalue(L, lua_upvalueindex(2));
  return 1;
}

/* A:each() -> iterator yielding one reused heapscript.Alloc */
static int a_each(lua_State *L) {
  Allocs *A = toallocs(L, 1);
  lua_settop(L, 1);
  lua_getiuservalue(L, 1, SV_ANALYSIS);
  lua_pushvalue(L, 1);
  newcursor(L, 2, A->t1, A->t2);
  lua_pushcclosure(L, each_step, 2);
  return 1;
}

/* ------------------------------------------------------- folded stacks */

/* One line of A:folded(): a stack as one program has it (its key,
   stackplace.h) and its bytes, then its text. */
typedef struct fline {
  uint64_t key;
  uint32_t rec;                 /* its first record */
  uint64_t bytes;
  size_t off;                   /* its text in the arena */
} fline;

/* The slot of a stack key in a_folded's table of lines (line + 1, 0
   empty; cap a power of two, never full): its line's, or the empty one
   where it goes. */
static size_t fline_slot(const fline *ln, const uint32_t *tab, size_t cap, uint64_t key) {
  size_t i = (size_t)hsi_mix64(key) & (cap - 1);
  while (tab[i] && ln[tab[i] - 1].key != key) i = (i + 1) & (cap - 1);
  return i;
}

/* The buffer at stack index `at` (*cap bytes) with room for `more` bytes
   past `used`: a larger one in its place, `used` bytes copied, when it
   has not. */
static void *room(lua_State *L, int at, void *buf, size_t *cap, size_t used, size_t more) {
  size_t nc;
  void *nb;
  if (*cap - used >= more) return buf;
  if (more > (SIZE_MAX - used) / 2) luaL_error(L, "not enough memory");
  nc = (used + more) * 2;
  nb = lua_newuserdatauv(L, nc, 0);
  if (used) memcpy(nb, buf, used);
  lua_replace(L, at);
  *cap = nc;
  return nb;
}

/*
** A:folded(prefix) -> texts, bytes: the records' bytes by allocation
** stack as the folded format's lines without their counts, "prefix;" and
** the stack's s:flame() (root first), "prefix;(no stack)" for records
** without one; one line per distinct text, sorted bytewise
** (heapscript.sort's order), bytes[i] the sum of its records' sizes.
** Records of unknown or zero size are left out.  The flame view and
** --folded of the report files (report_formats.lua) in one pass in C;
** each Stack named is made (and cached) as `a.stack` of its first record
** would make it, so its frames are named as they would be there.
*/
static int a_folded(lua_State *L) {
  Allocs *A = toallocs(L, 1);
  size_t plen, i, j, n = 0, used = 0, cap, lcap, m;
  const char *prefix = luaL_checklstring(L, 2, &plen);
  const Analysis *an = A->an;
  const hsi_recs *R = an->R;
  uint32_t nst = hsi_stacks_count(hsi_analysis_stacks(an->a)), nostack = 0, *tab;
  size_t tcap = 1024;
  fline *ln;
  const uint64_t *keys;         /* each record's stack key (stackplace.h); NULL: the ids */
  hsi_lua_key *tx;              /* the lines' texts, at = the line */
  char *arena;
  static const char none[] = "(no stack)";
  lua_settop(L, 2);
  lua_getiuservalue(L, 1, SV_ANALYSIS);                     /* 3 */
  lua_getiuservalue(L, 3, AV_CACHE);                        /* 4 */
  tab = (uint32_t *)newbuf(L, tcap, sizeof *tab);          /* 5: stack key -> line + 1 */
  lcap = 64 * sizeof *ln;                                   /* lines: as many as stacks, not records */
  ln = (fline *)newbuf(L, lcap, 1);                         /* 6 */
  keys = stack_keys(L, an, A->idx, A->n, HSI_STACK_ALLOC);  /* 7 */
  /* the bytes of each stack as one program has it, lines in their first record's order */
  for (i = 0; i < A->n; i++) {
    uint32_t r = A->idx[i], id = R->stk_alloc[r], *at;
    uint64_t key = keys ? keys[i] : id;
    if ((R->flags[r] & HSI_RF_SIZE_UNKNOWN) || R->size[r] == 0) continue;
    if (id == HSI_STACK_UNKNOWN || id > nst) at = &nostack;
    else {
      if ((n + 1) * 2 > tcap) {              /* grow the table: every line of a stack again */
        size_t k, ncap = tcap * 2;
        uint32_t *nt = (uint32_t *)newbuf(L, ncap, sizeof *nt);
        for (k = 0; k < n; k++)
          if (k + 1 != nostack)
            nt[fline_slot(ln, nt, ncap, ln[k].key)] = (uint32_t)k + 1;
        lua_replace(L, 5);
        tab = nt; tcap = ncap;
      }
      at = &tab[fline_slot(ln, tab, tcap, key)];
    }
    if (!*at) {
      ln = (fline *)room(L, 6, ln, &lcap, n * sizeof *ln, sizeof *ln);
      memset(&ln[n], 0, sizeof *ln);
      ln[n].rec = r;
      ln[n].key = key;
      *at = (uint32_t)++n;
    }
    ln[*at - 1].bytes += R->size[r];
  }
  tx = (hsi_lua_key *)newbuf(L, n, sizeof *tx);             /* 8 */
  /* their texts */
  cap = 4096;
  arena = (char *)newbuf(L, cap, 1);                        /* 9 */
  hsi_lua_syms_prepare(L, hsi_analysis_syms(an->a));
  for (i = 0; i < n; i++) {
    uint32_t r = ln[i].rec, id = R->stk_alloc[r];
    size_t len = 0;
    arena = (char *)room(L, 9, arena, &cap, used, plen + 1 + 4096);
    if (id != HSI_STACK_UNKNOWN && id <= nst) {
      pushstack(L, an, 3, 4, r, HSI_STACK_ALLOC);           /* 10 */
      len = hsi_lua_stack_flame(L, 10, arena + used + plen + 1, cap - used - plen - 1);
      if (len >= cap - used - plen - 1) {                    /* a deep stack: again, with room */
        arena = (char *)room(L, 9, arena, &cap, used, plen + 1 + len + 1);
        hsi_lua_stack_flame(L, 10, arena + used + plen + 1, len + 1);
      }
      lua_pop(L, 1);
    }
    if (len == 0) {
      memcpy(arena + used + plen + 1, none, sizeof none - 1);
      len = sizeof none - 1;
    }
    memcpy(arena + used, prefix, plen);   /* last: a larger arena keeps only `used` bytes */
    arena[used + plen] = ';';
    ln[i].off = used;
    tx[i].len = plen + 1 + len;
    tx[i].at = i;
    used += tx[i].len;
  }
  for (i = 0; i < n; i++) tx[i].s = arena + ln[i].off;
  qsort(tx, n, sizeof *tx, hsi_lua_keycmp);
  /* one line per text, its lines' bytes summed */
  lua_createtable(L, (int)(n < INT_MAX ? n : INT_MAX), 0);
  lua_createtable(L, (int)(n < INT_MAX ? n : INT_MAX), 0);
  for (i = 0, m = 0; i < n; i = j) {
    uint64_t bytes = 0;
    size_t end = hsi_lua_keyrun(tx, i, n);
    for (j = i; j < end; j++) bytes += ln[tx[j].at].bytes;
    lua_pushlstring(L, tx[i].s, tx[i].len);
    lua_rawseti(L, -3, (lua_Integer)++m);
    lua_pushinteger(L, (lua_Integer)bytes);
    lua_rawseti(L, -2, (lua_Integer)m);
  }
  return 2;
}

/*
** A:stack_figures([window [, stacks]]) -> keys, entries [, stacks]: the
** leaked figures per allocation stack that baseline.lua compares, in one
** pass in C: the groups of A:group("stack", {window = window}) that keep
** something (AIFO) or free what was allocated before the window
** (impacting ~= 0), named by their stable key (the Stack's s:key(),
** "(no stack)" for records without one), the groups of one key summed.
** keys sorted bytewise (heapscript.sort's order); entries[i] =
** {count =, bytes =, impacting =} of keys[i] (count and bytes AIFO); with
** `stacks` true, stacks[i] the Stack of the first of its groups, as `g.stack`
** would be (false for "(no stack)").
*/
static int a_stack_figures(lua_State *L) {
  Allocs *A = toallocs(L, 1);
  const Analysis *an = A->an;
  const hsi_recs *R = an->R;
  int64_t t1 = A->t1, t2 = A->t2;
  int want = lua_toboolean(L, 3);
  size_t i, j, n = 0, used = 0, cap = 4096, m = 0, *off;
  hsi_lua_key *tx;
  char *arena;
  Scratch *sc;
  static const char none[] = "(no stack)", empty[] = "(empty stack)";
  lua_settop(L, 3);
  luaL_checkstack(L, 24, "stack_figures");               /* its buffers, lists, and a Stack made */
  if (!lua_isnil(L, 2)) getwindow(L, an, 2, 2, &t1, &t2);
  lua_getiuservalue(L, 1, SV_ANALYSIS);                     /* 4 */
  lua_getiuservalue(L, 4, AV_CACHE);                        /* 5 */
  sc = newscratch(L);                                       /* 6 */
  if (group_stacks(L, an, A, t1, t2, HSI_STACK_ALLOC, 0, &sc->groups)) return nomem(L);   /* 7: keys */
  tx = (hsi_lua_key *)newbuf(L, sc->groups.n, sizeof *tx);  /* 8 */
  off = (size_t *)newbuf(L, sc->groups.n, sizeof *off);     /* 9 */
  arena = (char *)newbuf(L, cap, 1);                        /* 10 */
  hsi_lua_syms_prepare(L, hsi_analysis_syms(an->a));
  for (i = 0; i < sc->groups.n; i++) {
    const hsi_group *g = &sc->groups.g[i];
    uint32_t r = g->first, id = R->stk_alloc[r];
    size_t len = 0;
    if (g->agg.cls_count[HSI_AIFO] == 0 && g->agg.impacting == 0) continue;
    arena = (char *)room(L, 10, arena, &cap, used, 4096);
    if (id != HSI_STACK_UNKNOWN) {
      len = hsi_lua_stack_keytext(L, 5, an->a, id, hsi_rec_stack_inst(R, r, HSI_STACK_ALLOC), R->ts_alloc[r],
                                  arena + used, cap - used);
      if (len >= cap - used) {                             /* a deep stack: again, with room */
        arena = (char *)room(L, 10, arena, &cap, used, len + 1);
        hsi_lua_stack_keytext(L, 5, an->a, id, hsi_rec_stack_inst(R, r, HSI_STACK_ALLOC), R->ts_alloc[r],
                              arena + used, len + 1);
      }
      if (len == 0) {
        memcpy(arena + used, empty, sizeof empty - 1);
        len = sizeof empty - 1;
      }
    } else {
      memcpy(arena + used, none, sizeof none - 1);
      len = sizeof none - 1;
    }
    off[n] = used;
    tx[n].len = len;
    tx[n++].at = i;
    used += len;
  }
  for (i = 0; i < n; i++) tx[i].s = arena + off[i];
  qsort(tx, n, sizeof *tx, hsi_lua_keycmp);       /* equal keys: their groups' order */
  lua_createtable(L, (int)(n < INT_MAX ? n : INT_MAX), 0);  /* keys */
  lua_createtable(L, (int)(n < INT_MAX ? n : INT_MAX), 0);  /* entries */
  if (want) lua_createtable(L, (int)(n < INT_MAX ? n : INT_MAX), 0);
  for (i = 0; i < n; i = j) {
    uint64_t count = 0, bytes = 0;
    int64_t impacting = 0;
    size_t end = hsi_lua_keyrun(tx, i, n);
    const hsi_group *g0 = &sc->groups.g[tx[i].at];
    for (j = i; j < end; j++) {
      const hsi_agg *a = &sc->groups.g[tx[j].at].agg;
      count += a->cls_count[HSI_AIFO];
      bytes += a->cls_bytes[HSI_AIFO];
      impacting += a->impacting;
    }
    m++;
    lua_pushlstring(L, tx[i].s, tx[i].len);
    lua_rawseti(L, want ? -4 : -3, (lua_Integer)m);
    lua_createtable(L, 0, 6);          /* room for the fields baseline.collect adds */
    SETI("count", count);
    SETI("bytes", bytes);
    SETI("impacting", impacting);
    lua_rawseti(L, want ? -3 : -2, (lua_Integer)m);
    if (want) {
      if (R->stk_alloc[g0->first] == HSI_STACK_UNKNOWN) lua_pushboolean(L, 0);
      else pushstack(L, an, 4, 5, g0->first, HSI_STACK_ALLOC);
      lua_rawseti(L, -2, (lua_Integer)m);
    }
  }
  hsi_groups_free(&sc->groups);
  return want ? 3 : 2;
}

/* ------------------------------------------------------------ grouping */

static const char *const bynames[] = {
  "stack", "free_stack", "process", "pid", "heap", "tag", "size", "kind", "reason", "class", NULL
};
static const int bycodes[] = {
  HSI_BY_ALLOC_STACK, HSI_BY_FREE_STACK, HSI_BY_INSTANCE, HSI_BY_PID, HSI_BY_HEAP, HSI_BY_TAG,
  HSI_BY_SIZE, HSI_BY_KIND, HSI_BY_REASON, HSI_BY_CLASS
};

/* Names scripts may sort groups by besides hsi_agg_field_name's. */
static int sortfield(const char *s) {
  static const struct { const char *alias; int field; } aliases[] = {
    {"peak_time", HSI_F_PEAK_TS}, {"outstanding_start", HSI_F_OUT_START},
    {"outstanding_end", HSI_F_OUT_END}, {"unknown_size", HSI_F_UNKNOWN_COUNT},
    {"before_trace", HSI_F_BEFORE_COUNT}
  };
  size_t i;
  for (i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcmp(s, aliases[i].alias) == 0) return aliases[i].field;
  return hsi_agg_field_find(s);
}

/* Push the key of group g (and set the by-specific fields of the group table below it). */
static void groupkey(lua_State *L, const Analysis *an, int anidx, int cache, int values, int by,
                     const hsi_group *g) {
  const hsi_recs *R = an->R;
  uint32_t r = g->first;
  int keyed = g->key != HSI_NOKEY;
  switch (by) {
  case HSI_BY_ALLOC_STACK: case HSI_BY_FREE_STACK:
    pushstack(L, an, anidx, cache, r, by == HSI_BY_FREE_STACK ? HSI_STACK_FREE : HSI_STACK_ALLOC);
    lua_setfield(L, -2, "stack");
    lua_pushinteger(L, (lua_Integer)g->key);
    break;
  case HSI_BY_INSTANCE: case HSI_BY_PID:
    lua_getiuservalue(L, anidx, AV_NAMES);
    lua_rawgeti(L, -1, R->inst[r]);
    lua_setfield(L, -3, "process");
    lua_pop(L, 1);
    pushpid(L, an, R->inst[r]);
    lua_setfield(L, -2, "pid");
    if (by == HSI_BY_INSTANCE) {
      if (R->inst[r]) {
        lua_pushinteger(L, (lua_Integer)R->inst[r]);
        lua_setfield(L, -2, "instance");
      }
      if (R->inst[r]) lua_pushinteger(L, (lua_Integer)R->inst[r]); else lua_pushnil(L);
    } else {
      pushpid(L, an, R->inst[r]);
    }
    break;
  case HSI_BY_TAG:
    if (keyed) {
      pushtag(L, (uint32_t)g->key);
      lua_pushvalue(L, -1);
      lua_setfield(L, -3, "tag");
    } else {
      lua_pushnil(L);
    }
    break;
  case HSI_BY_HEAP: case HSI_BY_SIZE:
    if (keyed) lua_pushinteger(L, (lua_Integer)g->key); else lua_pushnil(L);
    break;
  case HSI_BY_KIND: lua_pushstring(L, hsi_kind_name((int)g->key)); break;
  case HSI_BY_REASON: lua_pushstring(L, hsi_end_name((int)g->key)); break;
  case HSI_BY_CLASS: lua_pushstring(L, hsi_class_name((int)g->key)); break;
  default: lua_rawgeti(L, values, (lua_Integer)g->key); break;   /* HSI_BY_KEY */
  }
}

/* The bits of A:group's `fields` option (a list of aggnames) at idx. */
static unsigned fieldmask(lua_State *L, int idx) {
  unsigned mask = 0;
  lua_Integer i, n;
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) != LUA_TTABLE)
    argfail(L, 3, "option 'fields': a list of field names expected", NULL, NULL);
  n = (lua_Integer)lua_rawlen(L, idx);
  for (i = 1; i <= n; i++) {
    const char *f = (lua_rawgeti(L, idx, i), lua_tostring(L, -1));
    int k;
    for (k = 0; f && aggnames[k]; k++)
      if (strcmp(aggnames[k], f) == 0) break;
    if (!f || lua_type(L, -1) != LUA_TSTRING || !aggnames[k]) {
      luaL_Buffer b;                    /* the names known, from the list itself */
      const char *bad = luaL_tolstring(L, -1, NULL);
      luaL_buffinit(L, &b);
      for (k = 0; aggnames[k]; k++) {
        if (k) luaL_addstring(&b, ", ");
        luaL_addstring(&b, aggnames[k]);
      }
      luaL_pushresult(&b);
      argfail(L, 3, "option 'fields': unknown field '%s' (known: %s)", bad, lua_tostring(L, -1));
    }
    mask |= 1u << k;
    lua_pop(L, 1);
  }
  return mask;
}

/* A:group(by [, {window=, sort=, desc=, top=, fields=}]) -> {group, ...} */
static int a_group(lua_State *L) {
  Allocs *A = toallocs(L, 1);
  const Analysis *an = A->an;
  hsi_sel s = sel_of(A);
  int by, field = -1, desc = -1, anidx, values = 0, cache, later, peaks;
  unsigned opts, mask = AF_ALL;
  size_t top = SIZE_MAX, i, total = 0, off = 0;
  int64_t t1 = A->t1, t2 = A->t2;
  Scratch *sc;
  uint32_t *members;
  lua_settop(L, 3);
  if (lua_type(L, 2) == LUA_TFUNCTION) {
    by = HSI_BY_KEY;
  } else {
    const char *name = lua_tostring(L, 2);
    for (by = 0; name && bynames[by]; by++)
      if (strcmp(bynames[by], name) == 0) break;
    if (!name || !bynames[by])
      argfail(L, 2, "group by: unknown key '%s' (known: stack, free_stack, process, pid, heap, tag, "
                    "size, kind, reason, class, or a function)", luaL_tolstring(L, 2, NULL), NULL);
    by = bycodes[by];
  }
  if (!lua_isnil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, 3)) {
      const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "?";
      if (strcmp(k, "window") == 0) {
        getwindow(L, an, -1, 3, &t1, &t2);
      } else if (strcmp(k, "sort") == 0) {
        const char *f = lua_tostring(L, -1);
        if (lua_type(L, -1) != LUA_TSTRING || (field = sortfield(f)) < 0)
          argfail(L, 3, "option 'sort': unknown field '%s' (known: impacting, bytes, count, size, "
                        "transient, peak, peak_time, key, aifi_count, aifo_bytes, ...)",
                  luaL_tolstring(L, -1, NULL), NULL);
      } else if (strcmp(k, "desc") == 0) {
        desc = lua_toboolean(L, -1);
      } else if (strcmp(k, "top") == 0) {
        int isint;
        lua_Integer n = lua_tointegerx(L, -1, &isint);
        if (!isint || n < 0) argfail(L, 3, "option 'top': non-negative integer expected", NULL, NULL);
        top = (size_t)n;
      } else if (strcmp(k, "fields") == 0) {
        mask = fieldmask(L, -1);
      } else {
        argfail(L, 3, "unknown option '%s' (known: window, sort, desc, top, fields)", k, NULL);
      }
      lua_settop(L, 4);
    }
  }
  lua_settop(L, 3);
  if (field < 0 && top != SIZE_MAX) field = HSI_F_IMPACTING;
  /* Peaks cost a sweep of each group's times: when they do not decide
     which groups are kept, only the kept ones get them, and none when
     no field shows them.  Members are listed for `allocs` and for that
     later sweep. */
  peaks = field == HSI_F_PEAK || field == HSI_F_PEAK_TS;
  later = !peaks && (mask & (1u << AF_PEAK | 1u << AF_PEAK_TIME)) && top != SIZE_MAX;
  peaks = peaks || ((mask & (1u << AF_PEAK | 1u << AF_PEAK_TIME)) && !later);
  opts = (mask & 1u << AF_ALLOCS || later ? HSI_GRP_MEMBERS : 0u) | (peaks ? HSI_AGG_PEAK : 0u);
  lua_getiuservalue(L, 1, SV_ANALYSIS);                     /* 4 */
  anidx = 4;
  lua_getiuservalue(L, anidx, AV_CACHE);                    /* 5 */
  cache = 5;
  sc = newscratch(L);                                       /* 6 */
  if (by == HSI_BY_KEY) {
    /* one call per record in the window; keys interned to small integers */
    Cursor *c = newcursor(L, anidx, t1, t2);                /* 7 */
    uint64_t *keys;
    uint32_t *recs;
    hsi_sel sub;
    lua_Integer nvals = 0;
    size_t m = 0;
    lua_toclose(L, 7);         /* an error in the key function leaves it without a record too */
    keys = (uint64_t *)newbuf(L, A->n, sizeof *keys);                /* 8 */
    recs = (uint32_t *)newbuf(L, A->n, sizeof *recs);                /* 9 */
    lua_newtable(L);                                        /* 10: value -> id */
    lua_newtable(L);                                        /* 11: id -> value */
    values = 11;
    for (i = 0; i < A->n; i++) {
      uint32_t r = A->idx[i];
      if (hsi_query_class(an->R->ts_alloc[r], an->R->ts_free[r], t1, t2) < 0) continue;
      c->rec = r;
      lua_pushvalue(L, 2);
      lua_pushvalue(L, 7);
      lua_call(L, 1, 1);
      if (lua_isnil(L, -1)) { lua_pop(L, 1); continue; }
      if (lua_type(L, -1) == LUA_TNUMBER && lua_tonumber(L, -1) != lua_tonumber(L, -1))
        argfail(L, 2, "group by a function: it returned NaN, which no group can be keyed by", NULL, NULL);
      lua_pushvalue(L, -1);
      if (lua_rawget(L, 10) == LUA_TNIL) {
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        lua_pushinteger(L, ++nvals);
        lua_rawset(L, 10);
        lua_pushvalue(L, -1);
        lua_rawseti(L, values, nvals);
        lua_pushinteger(L, nvals);
      }
      keys[m] = (uint64_t)lua_tointeger(L, -1);
      recs[m++] = r;
      lua_pop(L, 2);
    }
    lua_closeslot(L, 7);
    sub.idx = recs;
    sub.n = sub.cap = m;
    if (hsi_query_group(an->lt, &sub, t1, t2, HSI_BY_KEY, keys, opts, &sc->groups))
      return nomem(L);
  } else if (by == HSI_BY_ALLOC_STACK || by == HSI_BY_FREE_STACK) {
    if (group_stacks(L, an, A, t1, t2, by == HSI_BY_FREE_STACK ? HSI_STACK_FREE : HSI_STACK_ALLOC, opts, &sc->groups))
      return nomem(L);
  } else if (hsi_query_group(an->lt, &s, t1, t2, by, NULL, opts, &sc->groups)) {
    return nomem(L);
  }
  if (desc < 0) desc = field != HSI_F_KEY;   /* largest first, but keys in ascending order */
  if (field < 0) hsi_groups_top(&sc->groups, top);
  else if (hsi_groups_sort_top(&sc->groups, field, desc, top)) return nomem(L);
  if (later && hsi_groups_peaks(an->lt, &sc->groups, t1, t2)) return nomem(L);
  for (i = 0; i < sc->groups.n; i++) total += sc->groups.g[i].mlen;
  members = (uint32_t *)newbuf(L, total, sizeof *members);
  lua_createtable(L, (int)sc->groups.n, 0);
  for (i = 0; i < sc->groups.n; i++) {
    const hsi_group *g = &sc->groups.g[i];
    if (g->mlen) memcpy(members + off, sc->groups.members + g->moff, g->mlen * sizeof *members);
    pushagg(L, an, &g->agg, mask);
    groupkey(L, an, anidx, cache, values, by, g);
    lua_setfield(L, -2, "key");
    if (mask & 1u << AF_ALLOCS) {
      newview(L, anidx, -3, members + off, g->mlen, t1, t2);
      lua_setfield(L, -2, "allocs");
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
    off += g->mlen;
  }
  hsi_groups_free(&sc->groups);
  return 1;
}

static int a_tostring(lua_State *L) {
  Allocs *A = toallocs(L, 1);
  lua_pushfstring(L, "heapscript.Allocs (%I records)", (lua_Integer)A->n);
  return 1;
}

/* ------------------------------------------------- Trace methods */

/* trace:allocations([filters]) -> heapscript.Allocs */
static int t_allocations(lua_State *L) {
  lua_settop(L, 2);
  analysis_of(L, 1);                                        /* 3 */
  run_query(L, 3, NULL, 2, 2);
  return 1;
}

/*
** trace:scope{kind=, pid=, process=} -> trace: what the scripts of this
** trace will ask about, declared before the analysis is built (the first
** trace:allocations, processes, images or memory_stats).  Memory events
** outside it make no records, so memory grows with the allocations kept.
*/
static int t_scope(lua_State *L) {
  hsi_lua_checkreader(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &analyses_key) == LUA_TTABLE) {
    lua_pushvalue(L, 1);
    if (lua_rawget(L, -2) != LUA_TNIL)
      luaL_error(L, "trace:scope comes before the first trace:allocations, processes, images or memory_stats");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  lua_createtable(L, 0, 3);                                 /* 3: the stored scope */
  lua_pushnil(L);
  while (lua_next(L, 2)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "?";
    int v = lua_gettop(L);
    if (strcmp(k, "kind") == 0) {
      lua_pushinteger(L, namemask(L, v, 2, k, hsi_kind_name, HSI_KIND_COUNT, KINDS));
      lua_setfield(L, 3, "kinds");
    } else if (strcmp(k, "pid") == 0 || strcmp(k, "process") == 0) {
      int list = lua_istable(L, v), pid = k[1] == 'i';
      lua_Integer i, n = list ? luaL_len(L, v) : 1;
      lua_createtable(L, (int)n, 0);
      for (i = 1; i <= n; i++) {
        if (list) lua_geti(L, v, i); else lua_pushvalue(L, v);
        if (pid) lua_pushinteger(L, checkint(L, -1, 2, k));
        else if (lua_type(L, -1) == LUA_TSTRING) lua_pushvalue(L, -1);
        else argfail(L, 2, "scope '%s': process name expected, got %s", k, luaL_typename(L, -1));
        lua_rawseti(L, -3, i);
        lua_pop(L, 1);
      }
      lua_setfield(L, 3, pid ? "pids" : "names");
    } else {
      argfail(L, 2, "unknown scope '%s' (known: kind, pid, process)", k, NULL);
    }
    lua_pop(L, 1);
  }
  hsi_lua_weak_registry(L, &scopes_key);
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 3);
  lua_rawset(L, -3);
  lua_settop(L, 1);
  return 1;
}

/* trace:processes() -> {{pid=, name=, cmdline=, start=, ["end"]=, instance=, parent=}, ...} */
static int t_processes(lua_State *L) {
  Analysis *an;
  uint32_t i, n;
  lua_settop(L, 1);
  an = analysis_of(L, 1);
  n = hsi_procmap_ninstances(an->pm);
  lua_createtable(L, (int)n, 0);
  for (i = 1; i <= n; i++) {
    const char *s;
    int64_t t;
    uint32_t parent = hsi_procmap_parent(an->pm, i);
    lua_createtable(L, 0, 8);
    SETI("instance", i);
    pushpid(L, an, i);
    lua_setfield(L, -2, "pid");
    if (parent != HS_NOID) SETI("parent", parent);
    if ((s = hsi_procmap_name(an->pm, i)) && *s) { lua_pushstring(L, s); lua_setfield(L, -2, "name"); }
    if ((s = hsi_procmap_cmdline(an->pm, i)) && *s) { lua_pushstring(L, s); lua_setfield(L, -2, "cmdline"); }
    if ((t = hsi_procmap_start(an->pm, i)) != HSI_TS_BEFORE) SETN("start", seconds(an, t));
    if ((t = hsi_procmap_end(an->pm, i)) != HSI_TS_NEVER) SETN("end", seconds(an, t));
    lua_rawseti(L, -2, i);
  }
  return 1;
}

/*
** trace:images([pid]) -> {{pid=, instance=, module=, path=, base=, size=, loaded=, unloaded=,
** checksum=, timestamp=, pdb={guid=, age=, name=}}, ...}: every image the trace loaded or
** listed in rundown, with the PDB identity a symbol server needs where the
** trace has it (KernelTraceControl DbgID_RSDS).
*/
static int t_images(lua_State *L) {
  Analysis *an;
  uint32_t i, n, k = 0;
  lua_Integer want = luaL_optinteger(L, 2, -1);
  lua_settop(L, 2);
  an = analysis_of(L, 1);
  n = hsi_procmap_nimages(an->pm);
  lua_createtable(L, (int)n, 0);
  for (i = 0; i < n; i++) {
    const hsi_image *im = hsi_procmap_image(an->pm, i);
    uint32_t pid = hsi_procmap_pid(an->pm, im->instance);
    if (want >= 0 && (lua_Integer)pid != want) continue;
    lua_createtable(L, 0, 12);
    SETI("instance", im->instance);
    SETI("pid", pid);
    lua_pushstring(L, hsi_procmap_str(an->pm, im->module)); lua_setfield(L, -2, "module");
    lua_pushstring(L, hsi_procmap_str(an->pm, im->path)); lua_setfield(L, -2, "path");
    SETI("base", (lua_Integer)im->base);
    SETI("size", (lua_Integer)im->size);
    if (im->loaded != HSI_TS_BEFORE) SETN("loaded", seconds(an, im->loaded));
    if (im->unloaded != HSI_TS_NEVER) SETN("unloaded", seconds(an, im->unloaded));
    SETI("checksum", im->checksum);
    SETI("timestamp", im->time_date_stamp);
    if (im->flags & HSI_IMG_PDB) {
      char g[HS_GUID_STRLEN];
      hs_guid_format(&im->pdb_guid, g);
      lua_createtable(L, 0, 3);
      lua_pushstring(L, g); lua_setfield(L, -2, "guid");
      SETI("age", im->pdb_age);
      lua_pushstring(L, hsi_procmap_str(an->pm, im->pdb_name)); lua_setfield(L, -2, "name");
      lua_setfield(L, -2, "pdb");
    }
    lua_rawseti(L, -2, (lua_Integer)++k);
  }
  return 1;
}

/*
** trace:layout_checks() -> {{event=, hook=, version=, pointer_size=, kind=, events=,
** lengths={[len]=events}, other_lengths=, row_version=, min_len=, max_len=,
** checked=, failed={[check]=events}, fits=, warning=}, ...}: one row per
** memory layout the trace used (layoutcheck.h).  The analysis's, or, when
** none was made yet, those an unfiltered trace:tally made on its way
** (the same rows: both see every event; a walk that only counts, as the
** `events` script, then needs no analysis).
*/
static int t_layout_checks(lua_State *L) {
  static const char *const kinds[] = { "heap", "virtual", "pool" };
  const hsi_lcheck *lc;
  const struct hsi_analysis *a;
  size_t i, n = 0;
  int k;
  lua_settop(L, 1);
  hsi_lua_checkreader(L, 1);               /* an open trace */
  if ((a = hsi_lua_trace_analysis(L, 1, 0)) != NULL) lc = hsi_analysis_layouts(a);
  else if ((lc = hsi_lua_trace_layouts(L, 1)) == NULL) lc = hsi_analysis_layouts(analysis_of(L, 1)->a);
  lua_createtable(L, (int)hsi_lcheck_count(lc), 0);
  for (i = 0; i < hsi_lcheck_count(lc); i++) {
    const hsi_lcheck_row *r = hsi_lcheck_row_at(lc, i);
    int g = r->hook >> 8;
    if (r->events == 0) continue;          /* a hook looked up and not a memory event's */
    lua_createtable(L, 0, 16);
    lua_pushstring(L, r->name); lua_setfield(L, -2, "event");
    lua_pushstring(L, kinds[g == 0x02 ? HSI_KIND_VIRTUAL : g == 0x0E ? HSI_KIND_POOL : HSI_KIND_HEAP]);
    lua_setfield(L, -2, "kind");
    SETI("hook", r->hook);
    SETI("version", r->version);
    SETI("pointer_size", r->ptr);
    SETI("events", r->events);
    lua_createtable(L, 0, r->nlen);
    for (k = 0; k < r->nlen; k++) { lua_pushinteger(L, (lua_Integer)r->nlen_events[k]); lua_rawseti(L, -2, r->len[k]); }
    lua_setfield(L, -2, "lengths");
    SETI("other_lengths", r->other_lengths);
    SETI("row_version", r->row_version);
    SETI("min_len", r->min_len);
    if (r->max_len != (size_t)-1) SETI("max_len", r->max_len);
    lua_pushboolean(L, r->checked); lua_setfield(L, -2, "checked");
    lua_createtable(L, 0, 2);
    for (k = 0; k < HSI_LC_COUNT; k++)
      if (r->fail[k]) { lua_pushinteger(L, (lua_Integer)r->fail[k]); lua_setfield(L, -2, hsi_lcheck_name(k)); }
    lua_setfield(L, -2, "failed");
    lua_pushboolean(L, !r->bad); lua_setfield(L, -2, "fits");
    if (r->bad) {
      char line[1024];
      hsi_lcheck_warning(r, line, sizeof line);
      lua_pushstring(L, line);
      lua_setfield(L, -2, "warning");
    }
    lua_rawseti(L, -2, (lua_Integer)++n);
  }
  return 1;
}

/* trace:memory_stats() -> the counters of the analysis */
static int t_memory_stats(lua_State *L) {
  static const char *const opnames[HSI_OP_KINDS] = {
    "none", "heap_create", "heap_alloc", "heap_realloc", "heap_free", "heap_destroy",
    "heap_other", "valloc", "vfree", "valloc_rundown", "pool_alloc", "pool_free", "snapshot"
  };
  Analysis *an;
  const hsi_analysis_counts *ac;
  const hsi_life_stats *ls;
  const hsi_stack_counts *sc;
  const hsi_procstats *ps;
  int i;
  lua_settop(L, 1);
  an = analysis_of(L, 1);
  ac = hsi_analysis_counts_get(an->a);
  ls = hsi_life_stats_get(an->lt);
  sc = hsi_stacks_counts(hsi_analysis_stacks(an->a));
  ps = hsi_procmap_stats(an->pm);
  lua_createtable(L, 0, 16);
  SETI("events", ac->events);
  SETI("memory_events", ac->memory_events);
  SETI("memory_damaged", ac->memory_damaged);
  SETI("snapshot_chunks", ac->snapshot_chunks);
  SETI("process_ends", ac->process_ends);
  SETI("out_of_scope", ac->out_of_scope);
  SETI("ids_from_stack", ac->ids_from_stack);
  SETI("ids_missing", ac->ids_missing);
  SETI("ids_from_block", ac->ids_from_block);
  SETI("records_no_process", ac->records_no_process);
  SETI("layouts_misfit", hsi_lcheck_bad(hsi_analysis_layouts(an->a)));
  if (ac->events) {
    SETN("first_time", seconds(an, ac->first_ts));
    SETN("last_time", seconds(an, ac->last_ts));
  }
  SETI("records", an->R->n);
  SETI("live_at_end", hsi_life_live(an->lt));
  SETI("memory", hsi_life_memory(an->lt));

  lua_createtable(L, 0, 32);
  lua_createtable(L, 0, HSI_OP_KINDS);
  for (i = 0; i < HSI_OP_KINDS; i++) SETI(opnames[i], ls->ops[i]);
  lua_setfield(L, -2, "ops");
  SETI("records", ls->records);
  SETI("before_records", ls->before_records);
  SETI("ignored", ls->ignored);
  SETI("out_of_order", ls->out_of_order);
  SETI("heap_free_unknown", ls->heap_free_unknown);
  SETI("heap_realloc_unknown", ls->heap_realloc_unknown);
  SETI("heap_double_free", ls->heap_double_free);
  SETI("heap_realloc_summary", ls->heap_realloc_summary);
  SETI("heap_realloc_lone", ls->heap_realloc_lone);
  SETI("heap_realloc_inplace", ls->heap_realloc_inplace);
  SETI("heap_alloc_over_live", ls->heap_alloc_over_live);
  SETI("heap_destroyed", ls->heap_destroyed);
  SETI("vm_commit_dup", ls->vm_commit_dup);
  SETI("vm_commit_dup_bytes", ls->vm_commit_dup_bytes);
  SETI("vm_splits", ls->vm_splits);
  SETI("vm_decommit_unknown", ls->vm_decommit_unknown);
  SETI("vm_decommit_unknown_bytes", ls->vm_decommit_unknown_bytes);
  SETI("vm_decommit_nothing", ls->vm_decommit_nothing);
  SETI("vm_release_unknown", ls->vm_release_unknown);
  SETI("vm_release_unknown_bytes", ls->vm_release_unknown_bytes);
  SETI("vm_size0_unknown", ls->vm_size0_unknown);
  SETI("vm_reserve_over_commit", ls->vm_reserve_over_commit);
  SETI("pool_free_unknown", ls->pool_free_unknown);
  SETI("pool_double_free", ls->pool_double_free);
  SETI("pool_alloc_over_live", ls->pool_alloc_over_live);
  SETI("process_ends", ls->process_ends);
  SETI("process_end_ended", ls->process_end_ended);
  lua_setfield(L, -2, "lifetimes");

  lua_createtable(L, 0, 18);
  SETI("distinct", hsi_stacks_count(hsi_analysis_stacks(an->a)));
  SETI("targets", sc->targets);
  SETI("delivered", sc->delivered);
  SETI("joined", sc->joined);
  SETI("orphaned", sc->orphaned);
  SETI("op32", sc->op32);
  SETI("key_refs", sc->key_refs);
  SETI("key_defs", sc->key_defs);
  SETI("ext_stacks", sc->ext_stacks);
  SETI("ext_keys", sc->ext_keys);
  SETI("matched", sc->matched);
  SETI("matched_notid", sc->matched_notid);
  SETI("unmatched", sc->unmatched);
  SETI("ambiguous", sc->ambiguous);
  SETI("key_resolved", sc->key_resolved);
  SETI("key_orphaned", sc->key_orphaned);
  SETI("key_defs_unused", sc->key_defs_unused);
  SETI("damaged", sc->damaged);
  lua_setfield(L, -2, "stacks");

  lua_createtable(L, 0, 15);
  SETI("instances", hsi_procmap_ninstances(an->pm));
  SETI("images", hsi_procmap_nimages(an->pm));
  SETI("process_records", ps->process_records);
  SETI("process_decoded", ps->process_decoded);
  SETI("process_end_repeated", ps->process_end_repeated);
  SETI("thread_records", ps->thread_records);
  SETI("thread_decoded", ps->thread_decoded);
  SETI("image_records", ps->image_records);
  SETI("image_decoded", ps->image_decoded);
  SETI("imageid_records", ps->imageid_records);
  SETI("imageid_attached", ps->imageid_attached);
  SETI("dbgid_records", ps->dbgid_records);
  SETI("dbgid_attached", ps->dbgid_attached);
  SETI("width_fallback", ps->width_fallback);
  SETI("unload_unknown", ps->unload_unknown);
  lua_setfield(L, -2, "procmap");

  {
    const hsi_sym_stats *ss = hsi_syms_stats(hsi_analysis_syms(an->a));
    lua_createtable(L, 0, 8);
    SETI("lookups", ss->lookups);
    SETI("addresses", ss->addresses);
    SETI("pdb_searches", ss->pdb_searches);
    SETI("pdb_opened", ss->pdb_opened);
    SETI("files_tried", ss->files_tried);
    SETI("from_pdb", ss->from_pdb);
    SETI("from_map", ss->from_map);
    SETI("unnamed", ss->unnamed);
    lua_setfield(L, -2, "symbols");
  }
  return 1;
}

/* ------------------------------------------------------------- opener */

static const luaL_Reg allocs_methods[] = {
  {"count", a_count},
  {"window", a_window},
  {"summary", a_summary},
  {"peak", a_peak},
  {"outstanding", a_outstanding},
  {"series", a_series},
  {"group", a_group},
  {"where", a_where},
  {"filter", a_filter},
  {"sorted", a_sorted},
  {"top", a_top},
  {"each", a_each},
  {"folded", a_folded},
  {"stack_figures", a_stack_figures},
  {NULL, NULL}
};

static const luaL_Reg allocs_meta[] = {
  {"__index", NULL},  /* placeholder: the method table */
  {"__len", a_count},
  {"__tostring", a_tostring},
  {NULL, NULL}
};

/* a:class([t1, t2]) -> "AIFI" | "AIFO" | "AOFI" | "AOFO" | nil */
static int c_class(lua_State *L) {
  Cursor *c = tocursor(L, 1);
  const hsi_recs *R = c->an->R;
  int64_t t1 = c->t1, t2 = c->t2;
  int cls;
  if (c->rec == HSI_NOREC)
    return luaL_error(L, "heapscript.Alloc used outside its loop: there is no current record");
  if (!lua_isnoneornil(L, 2)) t1 = tick_lo(c->an, checkseconds(L, 2, 2, "window start"));
  if (!lua_isnoneornil(L, 3)) t2 = tick_hi(c->an, checkseconds(L, 3, 3, "window end"));
  cls = hsi_query_class(R->ts_alloc[c->rec], R->ts_free[c->rec], t1, t2);
  if (cls < 0) lua_pushnil(L);
  else lua_pushstring(L, hsi_class_name(cls));
  return 1;
}

static const luaL_Reg cursor_methods[] = {
  {"class", c_class},
  {NULL, NULL}
};

/* Closed when the C loop that moved it ends, by an error too: no record. */
static int c_close(lua_State *L) {
  tocursor(L, 1)->rec = HSI_NOREC;
  return 0;
}

static const luaL_Reg cursor_meta[] = {
  {"__index", NULL},  /* placeholder: a closure over the method table */
  {"__close", c_close},
  {"__newindex", c_newindex},
  {"__tostring", c_tostring},
  {NULL, NULL}
};

static const luaL_Reg trace_methods[] = {
  {"allocations", t_allocations},
  {"scope", t_scope},
  {"processes", t_processes},
  {"images", t_images},
  {"memory_stats", t_memory_stats},
  {"layout_checks", t_layout_checks},
  {NULL, NULL}
};

/*
** The opener (lua_run.h): the internal metatables, heapscript.Alloc (the
** cursor's methods), the Trace methods; returns the Allocs methods.
** Runs after the Trace opener, whose method table it extends.
*/
int hsi_lua_open_alloc(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_newmetatable(L, ANALYSIS_T);
  lua_pushcfunction(L, analysis_gc);
  lua_setfield(L, -2, "__gc");
  luaL_newmetatable(L, SCRATCH_T);
  lua_pushcfunction(L, scratch_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 2);

  luaL_newmetatable(L, HSI_LUA_ALLOC);
  luaL_setfuncs(L, cursor_meta, 0);
  luaL_newlib(L, cursor_methods);
  lua_pushvalue(L, -1);
  lua_pushcclosure(L, c_index, 1);
  lua_setfield(L, -3, "__index");
  lua_setfield(L, 1, "Alloc");
  lua_pop(L, 1);

  if (lua_getfield(L, 1, "Trace") != LUA_TTABLE)
    return luaL_error(L, "heapscript.Trace must be registered before heapscript.Allocs");
  luaL_setfuncs(L, trace_methods, 0);
  lua_pop(L, 1);

  luaL_newmetatable(L, HSI_LUA_ALLOCS);
  luaL_setfuncs(L, allocs_meta, 0);
  luaL_newlib(L, allocs_methods);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__index");
  return 1;
}
