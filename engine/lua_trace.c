/*
** lua_trace.c -- class heapscript.Trace: a userdata owning one hs_reader
** (one or more .etl files merged into one stream), and heapscript.open.
**
** trace:events{filters} hands out ONE heapscript.Event per loop, which
** shows whatever record the reader is on; the filters run in C, so a
** record Lua does not want costs no Lua call.  The reader has one
** position: starting a loop (or trace:count) rewinds it and makes any
** older loop on the same trace fail loudly instead of skipping records.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "evfilter.h"
#include "damlog.h"
#include "osfile.h"
#include "source.h"
#include "lua_run.h"
#include "lua_sandbox.h"
#include "stop.h"
#include "evcount.h"
#include "layoutcheck.h"

/* ------------------------------------------------------ the run's files

   Every file a Trace of this state opened by path, once per file (by
   hsi_file_id: a file changed since is another), with the damage any
   reader of it met and whether one went through every record.  Kept
   apart from the Traces, which the collector may free before the run
   ends, and anchored in the registry until the state closes:
   - the command line's trace needs no walk of its own at the end
     (settle) when other Traces read every record of its files, as
     `diff A B` reads each of its two traces alone;
   - a trace a script reads as one of its inputs (heapscript.input, a
     baseline) has its damage reported with the command line's.
   A reader's on_damage adds to its Trace's list and to its file's here
   (from the pass's prefetch thread too, while the Lua thread waits in
   the pass: nothing here grows meanwhile). */
typedef struct runfile {
  hsi_fileid id;
  int has_id;
  char *path;
  hsi_damlog dmg;            /* its reports as file 0 */
  int walked, input;
} runfile;

typedef struct Run { runfile *f; int n, cap; } Run;

typedef struct Trace {
  hsi_lua_evsrc src;         /* reader + current record, shown by Events */
  hsi_attrib *at;            /* the reader seen through attrib.h: ids of events without */
  unsigned gen;              /* bumped by every rewind; loops hold a copy */
  int nfiles;
  hsi_timebase tb;           /* see hsi_lua_evsrc */
  hsi_damlog dmg;            /* the damage every reader of the files met */
  char **paths;              /* npaths copies: damage names its file after close */
  int npaths;                /* nfiles, or a replay's files (hsi_lua_trace_take_damage) */
  int walked;                /* some reader of these files went through every record */
  Run *run;                  /* the run's files (above); rf[i]: file i's among them, -1 none */
  int *rf, nrf;
  hsi_lua_trace_hook hook;   /* a live trace: run before its first use */
  int in_hook;
  /* the memory layout checks an unfiltered trace:tally made on its way
     (hsi_lcheck_feed), so that trace:layout_checks needs no analysis
     after it; used only once lc_done (a tally stopped by an error left a
     part) */
  hsi_lcheck *lc;
  hsi_procmap *lcpm;
  int lc_done;
} Trace;

#define totrace(L, i) ((Trace *)luaL_checkudata(L, i, HSI_LUA_TRACE))

static Trace *checkopen(lua_State *L, int i) {
  Trace *t = totrace(L, i);
  if (t->hook) {
    hsi_lua_trace_hook h = t->hook;
    if (t->in_hook)
      luaL_error(L, "the live trace is whole only when the session stops: inside trace:every, "
                    "use the trace the callback is given");
    t->in_hook = 1;
    h(L, lua_absindex(L, i));                 /* may raise: in_hook stays, hook runs once */
    t->in_hook = 0;
    t->hook = NULL;
  }
  if (t->src.reader == NULL) luaL_error(L, "attempt to use a closed trace");
  return t;
}

hs_reader *hsi_lua_checkreader(lua_State *L, int idx) {
  return checkopen(L, idx)->src.reader;
}

/* ------------------------------------------------------ open and close */

/*
** Called by the reader, possibly from inside hs_reader_next: no Lua
** calls here (an error would unwind through the reader), only malloc.
** A rewound reader, and the pass's own reader of the same files, report
** the same damage again: kept once (damlog.h).
*/
static void on_damage(void *ud, const hs_damage *d) {
  Trace *t = (Trace *)ud;
  (void)hsi_damlog_add(&t->dmg, d);
  if (d->file >= 0 && d->file < t->nrf && t->rf[d->file] >= 0) {
    hs_damage one = *d;
    one.file = 0;
    (void)hsi_damlog_add(&t->run->f[t->rf[d->file]].dmg, &one);
  }
}

#define HSI_LUA_RUN "heapscript.Run"
static const char run_key = 'R';
static const char main_key = 'M';   /* the command line's trace (hsi_lua_trace_set_main) */

static int run_gc(lua_State *L) {
  Run *run = (Run *)luaL_checkudata(L, 1, HSI_LUA_RUN);
  int i;
  for (i = 0; i < run->n; i++) {
    free(run->f[i].path);
    hsi_damlog_free(&run->f[i].dmg);
  }
  free(run->f);
  memset(run, 0, sizeof *run);
  return 0;
}

static Run *get_run(lua_State *L) {
  Run *run;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &run_key) == LUA_TUSERDATA) {
    run = (Run *)lua_touserdata(L, -1);
    lua_pop(L, 1);
    return run;
  }
  lua_pop(L, 1);
  run = (Run *)lua_newuserdatauv(L, sizeof *run, 0);
  memset(run, 0, sizeof *run);
  luaL_setmetatable(L, HSI_LUA_RUN);    /* made by hsi_lua_open_trace */
  lua_rawsetp(L, LUA_REGISTRYINDEX, &run_key);
  return run;
}

/* The run's entry for path (added when new), or -1 when memory ran out. */
static int run_file(Run *run, const char *path) {
  hsi_fileid id;
  int has = hsi_file_id(path, &id) == 0, i;
  runfile *e;
  for (i = 0; has && i < run->n; i++)
    if (run->f[i].has_id && hsi_fileid_eq(&run->f[i].id, &id)) return i;
  if (run->n == run->cap) {
    int cap = run->cap ? run->cap * 2 : 8;
    runfile *nf = (runfile *)realloc(run->f, (size_t)cap * sizeof *nf);
    if (!nf) return -1;
    run->f = nf;
    run->cap = cap;
  }
  e = &run->f[run->n];
  memset(e, 0, sizeof *e);
  if (!(e->path = (char *)malloc(strlen(path) + 1))) return -1;
  strcpy(e->path, path);
  e->id = id;
  e->has_id = has;
  return run->n++;
}

/* Trace t (of paths, before its reader opens: the damage indexing finds
   goes to the files too) among the run's files; -1 without memory. */
static int join_run(lua_State *L, Trace *t, const char *const *paths, int npaths) {
  int i;
  t->run = get_run(L);
  if (!(t->rf = (int *)malloc((size_t)npaths * sizeof *t->rf))) return -1;
  for (i = 0; i < npaths; i++)
    if ((t->rf[i] = run_file(t->run, paths[i])) < 0) return -1;
  t->nrf = npaths;
  return 0;
}

/* Some reader of t went through every record of its files. */
static void mark_walked(Trace *t) {
  int i;
  t->walked = 1;
  for (i = 0; i < t->nrf; i++) t->run->f[t->rf[i]].walked = 1;
}

/* Close the reader; with `all`, free the damage list too (kept after
   close so that trace:damage() still answers). */
static void release(Trace *t, int all) {
  size_t i;
  if (t->src.reader) hs_reader_close(t->src.reader);
  t->src.reader = NULL;
  hsi_attrib_free(t->at);
  t->at = NULL;
  t->src.has_event = 0;
  t->src.tb = NULL;
  hsi_timebase_free(&t->tb);
  hsi_lcheck_free(t->lc);
  hsi_procmap_free(t->lcpm);
  t->lc = NULL;
  t->lcpm = NULL;
  t->lc_done = 0;
  if (!all) return;
  for (i = 0; t->paths && i < (size_t)t->npaths; i++) free(t->paths[i]);
  free(t->paths);
  t->paths = NULL;
  t->npaths = 0;
  hsi_damlog_free(&t->dmg);
  free(t->rf);
  t->rf = NULL;
  t->nrf = 0;
}

/* The times of the trace's events on one clock from one origin, the
   earliest file's start, as the analysis has them (source.h). */
static int file_origins(Trace *t) {
  if (hsi_timebase_init(&t->tb, t->src.reader) != 0) return HS_ENOMEM;
  t->src.tb = &t->tb;
  return 0;
}

/* t->paths: copies of the n paths path(i) gives. */
static int copy_paths_of(Trace *t, int n, const char *(*path)(const void *, int), const void *ud) {
  int i;
  if (n < 1) return 0;
  t->paths = (char **)calloc((size_t)n, sizeof *t->paths);
  if (!t->paths) return HS_ENOMEM;
  t->npaths = n;
  for (i = 0; i < n; i++) {
    const char *p = path(ud, i);
    size_t len = strlen(p ? p : "");
    if (!(t->paths[i] = (char *)malloc(len + 1))) return HS_ENOMEM;
    memcpy(t->paths[i], p ? p : "", len + 1);
  }
  return 0;
}

static const char *reader_path(const void *r, int i) { return hs_reader_path((const hs_reader *)r, i); }
static const char *list_path(const void *l, int i) { return ((const char *const *)l)[i]; }

static int copy_paths(Trace *t) { return copy_paths_of(t, t->nfiles, reader_path, t->src.reader); }

/* The traces this state has open, weak keys: heapscript.writer asks it
   (hsi_lua_trace_named) before it creates a file. */
static const char open_traces;

int hsi_lua_trace_named(lua_State *L, const char *path) {
  int found = 0;
  hsi_lua_weak_registry(L, &open_traces);
  lua_pushnil(L);
  while (!found && lua_next(L, -2)) {
    Trace *t = (Trace *)luaL_testudata(L, -2, HSI_LUA_TRACE);
    int i;
    lua_pop(L, 1);
    for (i = 0; t && t->src.reader && t->paths && i < t->nfiles && !found; i++)   /* closed: no longer read */
      if (hsi_same_file(path, t->paths[i])) {
        lua_pushstring(L, t->paths[i]);  /* a copy: the Trace may be collected once it is let go */
        lua_replace(L, -3);              /* over the table; the key is dropped below */
        found = 1;
      }
  }
  lua_pop(L, 1);                         /* the table, or the key left over the path */
  return found;
}

int hsi_lua_trace_open(lua_State *L, const char *const *paths, int npaths) {
  char err[HS_ERRLEN];
  hs_reader_opts opts;
  Trace *t;
  int rc;
  (void)get_run(L);   /* made before any Trace: the state's close finalizes it after them */
  t = (Trace *)lua_newuserdatauv(L, sizeof *t, 0);
  memset(t, 0, sizeof *t);
  luaL_setmetatable(L, HSI_LUA_TRACE);
  memset(&opts, 0, sizeof opts);
  opts.on_damage = on_damage;
  opts.ud = t;
  err[0] = '\0';
  if (join_run(L, t, paths, npaths) < 0) {
    release(t, 1);
    lua_pop(L, 1);
    lua_pushstring(L, "not enough memory");
    return HS_ENOMEM;
  }
  rc = hs_reader_open(&t->src.reader, paths, npaths, &opts, err, sizeof err);
  if (rc >= 0 && t->src.reader == NULL) rc = HS_EARG;
  if (rc >= 0) {
    t->nfiles = hs_reader_nfiles(t->src.reader);
    rc = file_origins(t);
    if (rc >= 0) rc = copy_paths(t);
    if (rc < 0) strcpy(err, "not enough memory");
  }
  if (rc >= 0) {
    hsi_lua_weak_registry(L, &open_traces);
    lua_pushvalue(L, -2);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
    lua_pop(L, 1);
  }
  if (rc < 0) {
    release(t, 1);  /* closes the reader if file_origins failed */
    lua_pop(L, 1);
    lua_pushstring(L, err[0] ? err : "cannot open trace");
    return rc;
  }
  return 0;
}

int hsi_lua_trace_push(lua_State *L, hs_reader *r) {
  Trace *t = (Trace *)lua_newuserdatauv(L, sizeof *t, 0);
  memset(t, 0, sizeof *t);
  luaL_setmetatable(L, HSI_LUA_TRACE);
  t->src.reader = r;
  t->nfiles = hs_reader_nfiles(r);
  if (file_origins(t) < 0) luaL_error(L, "not enough memory");
  return 0;
}

void hsi_lua_trace_set_hook(lua_State *L, int idx, hsi_lua_trace_hook h) {
  totrace(L, idx)->hook = h;
}

int hsi_lua_trace_is_live(lua_State *L, int idx) {
  Trace *t = (Trace *)luaL_testudata(L, idx, HSI_LUA_TRACE);
  return t && t->hook && !t->in_hook;
}

void hsi_lua_trace_set_reader(lua_State *L, int idx, hs_reader *r) {
  Trace *t = totrace(L, idx);
  release(t, 0);
  t->src.reader = r;
  t->gen++;
  t->nfiles = hs_reader_nfiles(r);
  if (file_origins(t) < 0) luaL_error(L, "not enough memory");
}

/* heapscript.open(path [, path...]) -> trace | nil, message */
static int t_open(lua_State *L) {
  int n = lua_gettop(L), i;
  const char **paths;
  luaL_argcheck(L, n > 0, 1, "at least one path expected");
  paths = (const char **)lua_newuserdatauv(L, (size_t)n * sizeof *paths, 0);
  for (i = 0; i < n; i++) paths[i] = hsi_lua_checkpath(L, i + 1);
  if (hsi_lua_trace_open(L, paths, n) < 0) {
    luaL_pushfail(L);
    lua_insert(L, -2);
    return 2;
  }
  return 1;
}

static int t_close(lua_State *L) {
  release(totrace(L, 1), 0);
  lua_pushboolean(L, 1);
  return 1;
}

static int t_gc(lua_State *L) {
  release(totrace(L, 1), 1);
  return 0;
}

static int t_closemeta(lua_State *L) {
  release(totrace(L, 1), 0);
  return 0;
}

static int t_tostring(lua_State *L) {
  Trace *t = totrace(L, 1);
  if (t->src.reader == NULL)
    lua_pushliteral(L, "heapscript.Trace (closed)");
  else if (t->nfiles == 1)
    lua_pushfstring(L, "heapscript.Trace (%s)", hs_reader_path(t->src.reader, 0));
  else
    lua_pushfstring(L, "heapscript.Trace (%s and %d more)",
                    hs_reader_path(t->src.reader, 0), t->nfiles - 1);
  return 1;
}

/* ------------------------------------------------------- file details */

/* Optional 1-based file index at argument i -> 0-based. */
static int fileindex(lua_State *L, Trace *t, int i) {
  lua_Integer f = luaL_optinteger(L, i, 1);
  luaL_argcheck(L, f >= 1 && f <= t->nfiles, i, "no such file in the trace");
  return (int)f - 1;
}

#define SETI(name, v) (lua_pushinteger(L, (lua_Integer)(v)), lua_setfield(L, -2, name))

/* trace:header([i]) -> table of the logfile header of file i */
static int t_header(lua_State *L) {
  Trace *t = checkopen(L, 1);
  int f = fileindex(L, t, 2), i;
  const hs_logfile *lf = hs_reader_logfile(t->src.reader, f);
  if (!lf) return luaL_error(L, "no logfile header for file %d", f + 1);
  lua_createtable(L, 0, 28);
  lua_pushstring(L, lf->logger_name);
  lua_setfield(L, -2, "logger_name");
  lua_pushstring(L, lf->log_file_name);
  lua_setfield(L, -2, "log_file_name");
  SETI("os_build", lf->os_build);
  SETI("pointer_size", lf->pointer_size);
  SETI("cpus", lf->cpus);
  SETI("buffers_written", lf->buffers_written);
  SETI("buffer_size", lf->buffer_size);
  lua_pushboolean(L, (lf->log_file_mode & HS_LOGMODE_COMPRESSED) != 0);
  lua_setfield(L, -2, "compressed");
  SETI("clock_type", lf->clock_type);
  SETI("perf_freq", lf->perf_freq);
  SETI("start_time", lf->start_time);
  SETI("end_time", lf->end_time);
  SETI("boot_time", lf->boot_time);
  SETI("events_lost", lf->events_lost);
  SETI("buffers_lost", lf->buffers_lost);
  SETI("log_file_mode", lf->log_file_mode);
  SETI("timer_resolution", lf->timer_resolution);
  SETI("max_file_size", lf->max_file_size);
  SETI("start_buffers", lf->start_buffers);
  SETI("cpu_mhz", lf->cpu_mhz);
  SETI("tz_bias", lf->tz_bias);
  SETI("header_ts", lf->header_ts);
  SETI("header_version", lf->header_version);
  SETI("compression", lf->compression);
  lua_createtable(L, 4, 0);
  for (i = 0; i < 4; i++) {
    lua_pushinteger(L, lf->version[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "version");
  lua_pushstring(L, hs_reader_path(t->src.reader, f));
  lua_setfield(L, -2, "path");
  return 1;
}

/* trace:files() -> {path, ...} */
static int t_files(lua_State *L) {
  Trace *t = checkopen(L, 1);
  int i;
  lua_createtable(L, t->nfiles, 0);
  for (i = 0; i < t->nfiles; i++) {
    lua_pushstring(L, hs_reader_path(t->src.reader, i));
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* trace:same_file(path) -> the trace's file that path names (itself or
   a link to it), or nil: a script's output must not overwrite its trace */
static int t_same_file(lua_State *L) {
  Trace *t = checkopen(L, 1);
  const char *p = hsi_lua_checkpath(L, 2);
  int i;
  for (i = 0; t->paths && i < t->nfiles; i++)
    if (hsi_same_file(p, t->paths[i])) { lua_pushstring(L, t->paths[i]); return 1; }
  lua_pushnil(L);
  return 1;
}

/* heapscript.same_file(a, b) -> boolean: a and b name one file (a link, another spelling) */
static int t_same_file_any(lua_State *L) {
  lua_pushboolean(L, hsi_same_file(hsi_lua_checkpath(L, 1), hsi_lua_checkpath(L, 2)));
  return 1;
}

/* heapscript.path_kind(path) -> "file", "directory", "other" (a FIFO, a
   device: opening it may wait for ever) or nil (nothing there) */
static int t_path_kind(lua_State *L) {
  switch (hsi_path_kind(hsi_lua_checkpath(L, 1))) {
    case HSI_PATH_FILE: lua_pushliteral(L, "file"); break;
    case HSI_PATH_DIR: lua_pushliteral(L, "directory"); break;
    case HSI_PATH_OTHER: lua_pushliteral(L, "other"); break;
    default: lua_pushnil(L); break;
  }
  return 1;
}

/* trace:stats([i]) -> table of the counters of file i */
static int t_stats(lua_State *L) {
  Trace *t = checkopen(L, 1);
  int f = fileindex(L, t, 2);
  const hs_file_stats *s = hs_reader_stats(t->src.reader, f);
  if (!s) return luaL_error(L, "no statistics for file %d", f + 1);
  lua_createtable(L, 0, 10);
  SETI("file_size", s->file_size);
  SETI("buffers", s->buffers);
  SETI("buffers_compressed", s->buffers_compressed);
  SETI("buffers_damaged", s->buffers_damaged);
  SETI("buffers_lost_flag", s->buffers_lost_flag);
  SETI("records", s->records);
  SETI("records_damaged", s->records_damaged);
  SETI("records_duplicate", s->records_duplicate);
  SETI("bytes_trailing", s->bytes_trailing);
  if (s->first_damage_pos != UINT64_MAX) SETI("first_damage_pos", s->first_damage_pos);
  return 1;
}

static void settle(Trace *t);

/* One damage report as a table: {file=, path=, offset=, pos=, buffer=, what=}
   (file only when given: its index in a trace, from 1). */
static void push_damage(lua_State *L, const hsi_damage_rec *d, int file, const char *path) {
  lua_createtable(L, 0, 6);
  if (file > 0) SETI("file", file);
  lua_pushstring(L, path ? path : "");
  lua_setfield(L, -2, "path");
  SETI("offset", d->pos);
  SETI("pos", d->pos);
  SETI("buffer", d->buffer);
  lua_pushstring(L, d->what);
  lua_setfield(L, -2, "what");
}

/* trace:damage() -> {{file=, path=, offset=, pos=, buffer=, what=}, ...}, total reports.
   Every damage of the files: what nothing read yet is walked first. */
static int t_damage(lua_State *L) {
  Trace *t = totrace(L, 1);
  size_t i;
  settle(t);
  lua_createtable(L, (int)t->dmg.n, 0);
  for (i = 0; i < t->dmg.n; i++) {
    const hsi_damage_rec *d = &t->dmg.e[i];
    push_damage(L, d, d->file + 1, t->paths ? t->paths[d->file] : "");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_pushinteger(L, (lua_Integer)t->dmg.total);
  return 2;
}

/*
** Damage met by readers other than the Trace's own (the analysis pass
** opens the files again) is kept in the same list, so that
** trace:damage() and the CLI's report see every skip whatever read it.
** The reader may call this from its prefetch thread; the Trace is not
** touched by anyone else while the pass runs.
*/
void hsi_lua_trace_damage_opts(lua_State *L, int idx, hs_reader_opts *o) {
  memset(o, 0, sizeof *o);
  o->on_damage = on_damage;
  o->ud = checkopen(L, idx);
}

void hsi_lua_trace_walked(lua_State *L, int idx) {
  mark_walked(totrace(L, idx));
}

const hsi_lcheck *hsi_lua_trace_layouts(lua_State *L, int idx) {
  Trace *t = totrace(L, idx);
  return t->lc_done ? t->lc : NULL;
}

/* When other Traces went through every record of each of t's files,
   their damage is t's (each kept whole: none past HSI_DAMLOG_MAX): 1. */
static int settle_from_run(Trace *t) {
  int i;
  if (t->nrf != t->nfiles || t->nrf == 0) return 0;
  for (i = 0; i < t->nrf; i++) {
    const runfile *e = &t->run->f[t->rf[i]];
    if (!e->walked || e->dmg.unlisted) return 0;
  }
  for (i = 0; i < t->nrf; i++) hsi_damlog_add_all(&t->dmg, &t->run->f[t->rf[i]].dmg, i);
  t->walked = 1;
  return 1;
}

/*
** Damage inside a buffer (a record, a compressed stream) is met only by
** reading it: when nothing read every record, a plain walk of a reader
** of its own finds it, so that a script that asked little still cannot
** hide the damage of its trace.
*/
static void settle(Trace *t) {
  hs_reader_opts o;
  hs_reader *r = NULL;
  hs_event ev;
  if (t->walked || !t->paths || settle_from_run(t)) return;
  memset(&o, 0, sizeof o);
  o.on_damage = on_damage;
  o.ud = t;
  if (hs_reader_open(&r, (const char *const *)t->paths, t->nfiles, &o, NULL, 0) < 0 || !r) return;
  while (hs_reader_next(r, &ev) == 1) {}
  hs_reader_close(r);
  mark_walked(t);
}

void hsi_lua_trace_take_damage(lua_State *L, int idx, hsi_damlog *log, const char *const *paths, int npaths) {
  Trace *t = totrace(L, idx);
  if (log->n && !t->paths && copy_paths_of(t, npaths, list_path, paths) < 0) {
    hsi_damlog_free(log);
    luaL_error(L, "not enough memory");
  }
  if (t->paths) hsi_damlog_add_all(&t->dmg, log, -1);
  t->dmg.total += log->total - log->n;       /* the repeats and those not kept */
  t->dmg.unlisted += log->unlisted;
  t->walked = 1;                             /* the producer read what there was: no walk of the files */
  hsi_damlog_free(log);
}

void hsi_lua_trace_set_main(lua_State *L, int idx) {
  lua_pushvalue(L, idx);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &main_key);
}

/* The command line's Trace (pushed), or NULL (nil pushed). */
static Trace *main_trace(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &main_key);
  return (Trace *)luaL_testudata(L, -1, HSI_LUA_TRACE);
}

/* Is run file k one of t's? */
static int has_file(const Trace *t, int k) {
  int i;
  for (i = 0; t && i < t->nrf; i++) if (t->rf[i] == k) return 1;
  return 0;
}

/* The run's inputs besides the command line's trace m, one by one: the
   run file after k (start at -1), or -1. */
static int next_input(lua_State *L, const Trace *m, int k) {
  Run *run = get_run(L);
  for (k++; k < run->n; k++) if (run->f[k].input && !has_file(m, k)) return k;
  return -1;
}

size_t hsi_lua_trace_report_damage(lua_State *L, FILE *to, int walk) {
  Trace *t = main_trace(L);
  size_t n = 0;
  int k;
  if (t && walk) settle(t);
  if (t) n = hsi_damlog_print(to, &t->dmg, (const char *const *)t->paths);
  for (k = next_input(L, t, -1); k >= 0; k = next_input(L, t, k)) {
    runfile *e = &get_run(L)->f[k];
    n += hsi_damlog_print(to, &e->dmg, (const char *const *)&e->path);
  }
  lua_pop(L, 1);
  return n;
}

/* heapscript.input(trace) -> trace: one of the run's inputs, its damage
   reported with the command line's trace's. */
static int t_input(lua_State *L) {
  Trace *t = totrace(L, 1);
  int i;
  for (i = 0; i < t->nrf; i++) t->run->f[t->rf[i]].input = 1;
  lua_settop(L, 1);
  return 1;
}

/* heapscript.damage() -> {{path=, offset=, pos=, buffer=, what=}, ...}, total:
   the run's damage as it is reported at its end: the command line's
   trace's (settled first, as trace:damage) and its inputs'. */
static int t_run_damage(lua_State *L) {
  Trace *m = main_trace(L);
  lua_Integer n = 0;
  uint64_t total = 0;
  size_t i;
  int k;
  if (m) settle(m);
  lua_newtable(L);
  for (i = 0; m && i < m->dmg.n; i++) {
    push_damage(L, &m->dmg.e[i], 0, m->paths ? m->paths[m->dmg.e[i].file] : "");
    lua_rawseti(L, -2, ++n);
  }
  if (m) total += m->dmg.total;
  for (k = next_input(L, m, -1); k >= 0; k = next_input(L, m, k)) {
    const runfile *e = &get_run(L)->f[k];
    for (i = 0; i < e->dmg.n; i++) {
      push_damage(L, &e->dmg.e[i], 0, e->path);
      lua_rawseti(L, -2, ++n);
    }
    total += e->dmg.total;
  }
  lua_pushinteger(L, (lua_Integer)total);
  return 2;
}

/* ------------------------------------------------------------- filters */

/* The event filter is evfilter.c's, shared with `heapscript dump`; a
   loop adds its own count and the trace generation it started in. */
typedef struct Filter {
  hsi_evfilter ef;
  lua_Integer seen;          /* records delivered so far */
  unsigned gen;              /* the trace's gen when the loop started */
} Filter;

/* A bad filter: "bad argument #n to 'events' (...)", as the allocation
   filters' errors are; filter_arg is the argument parse_filter reads. */
static int filter_arg;

#define ferr(L, ...) hsi_lua_argerrorf((L), filter_arg, __VA_ARGS__)

/* Calls add(L, f, idx_of_value, key) for a value or each element of a list. */
typedef void (*adder)(lua_State *L, Filter *f, int v, const char *key);

static void each(lua_State *L, Filter *f, int v, const char *key, adder add) {
  if (lua_type(L, v) == LUA_TTABLE) {
    lua_Integer i, n = luaL_len(L, v);
    if (n == 0) ferr(L, "filter '%s': empty list", key);
    for (i = 1; i <= n; i++) {
      lua_geti(L, v, i);
      add(L, f, lua_gettop(L), key);
      lua_pop(L, 1);
    }
  } else {
    add(L, f, v, key);
  }
}

static void add_int(hsi_evset *s, lua_State *L, int v, const char *key, lua_Integer max) {
  int isnum;
  lua_Integer x = lua_tointegerx(L, v, &isnum);
  if (!isnum) ferr(L, "filter '%s': integer expected, got %s", key, luaL_typename(L, v));
  if (x < 0 || x > max) ferr(L, "filter '%s': %I out of range", key, x);
  if (hsi_evfilter_add(s, x, max)) ferr(L, "filter '%s': more than %d values", key, HSI_EF_MAXSET);
}

static void add_opcode(lua_State *L, Filter *f, int v, const char *k) { add_int(&f->ef.opcode, L, v, k, 0xFF); }
static void add_id(lua_State *L, Filter *f, int v, const char *k) { add_int(&f->ef.id, L, v, k, 0xFFFF); }
static void add_pid(lua_State *L, Filter *f, int v, const char *k) { add_int(&f->ef.pid, L, v, k, 0xFFFFFFFF); }
static void add_tid(lua_State *L, Filter *f, int v, const char *k) { add_int(&f->ef.tid, L, v, k, 0xFFFFFFFF); }
static void add_ns(lua_State *L, Filter *f, int v, const char *k) {
  int isnum;
  lua_Integer x = lua_tointegerx(L, v, &isnum);
  if (!isnum) ferr(L, "filter '%s': integer expected (ev.ns), got %s", k, luaL_typename(L, v));
  if (hsi_evfilter_add_ns(&f->ef, (int64_t)x)) ferr(L, "filter '%s': more than %d values", k, HSI_EF_MAXSET);
}

static void add_ht(lua_State *L, Filter *f, int v, const char *k) {
  if (lua_type(L, v) == LUA_TSTRING) {
    const char *s = lua_tostring(L, v);
    if (hsi_lua_has_nul(L, v)) ferr(L, "filter '%s': a name with a NUL byte in it", k);
    if (hsi_evfilter_header_type(&f->ef, s))
      ferr(L, f->ef.ht.n == HSI_EF_MAXSET ? "filter '%s': more than 32 values"
                                                : "filter '%s': unknown header type '%s'", k, s);
  } else {
    add_int(&f->ef.ht, L, v, k, 0xFF);
  }
}

/* A GUID string matches by GUID; anything else by provider name (copied:
   the script may change its filter table during the loop). */
static void add_provider(lua_State *L, Filter *f, int v, const char *k) {
  const char *s;
  if (lua_type(L, v) != LUA_TSTRING)
    ferr(L, "filter '%s': string expected, got %s", k, luaL_typename(L, v));
  if (hsi_lua_has_nul(L, v)) ferr(L, "filter '%s': a name with a NUL byte in it", k);
  s = lua_tostring(L, v);
  if (f->ef.nprov == HSI_EF_MAXSET) ferr(L, "filter '%s': more than %d values", k, HSI_EF_MAXSET);
  if (hsi_evfilter_provider(&f->ef, s))
    ferr(L, "filter '%s': '%s' is neither a GUID nor a provider name", k, s);
}

static int64_t seconds_ns(lua_State *L, int v, const char *k, int up) {
  int isnum;
  lua_Number x = lua_tonumberx(L, v, &isnum);
  if (!isnum) ferr(L, "filter '%s': number of seconds expected, got %s", k, luaL_typename(L, v));
  if (x != x) ferr(L, "filter '%s': NaN is not a time", k);
  x = up ? ceil(x * 1e9) : floor(x * 1e9);
  /* far past or future (1e300, inf): every record is after, or before */
  return x <= -9.2e18 ? INT64_MIN : x >= 9.2e18 ? INT64_MAX : (int64_t)x;
}

/* Read the filter table at idx (may be none/nil) into f. */
static void parse_filter(lua_State *L, int idx, Filter *f) {
  filter_arg = idx;
  memset(f, 0, sizeof *f);
  hsi_evfilter_init(&f->ef);
  if (lua_isnoneornil(L, idx)) return;
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int v = lua_gettop(L);
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    if (!k) ferr(L, "filters are named (provider=, opcode=, ...), got a %s key",
                       luaL_typename(L, -2));
    if (strcmp(k, "provider") == 0) each(L, f, v, k, add_provider);
    else if (strcmp(k, "opcode") == 0) each(L, f, v, k, add_opcode);
    else if (strcmp(k, "id") == 0) each(L, f, v, k, add_id);
    else if (strcmp(k, "pid") == 0) each(L, f, v, k, add_pid);
    else if (strcmp(k, "tid") == 0) each(L, f, v, k, add_tid);
    else if (strcmp(k, "header_type") == 0) each(L, f, v, k, add_ht);
    else if (strcmp(k, "ns") == 0) each(L, f, v, k, add_ns);
    else if (strcmp(k, "from") == 0) { f->ef.from_ns = seconds_ns(L, v, k, 1); f->ef.from_set = 1; }
    else if (strcmp(k, "to") == 0) { f->ef.to_ns = seconds_ns(L, v, k, 0); f->ef.to_set = 1; }
    else if (strcmp(k, "kernel") == 0) {
      if (!lua_isboolean(L, v)) ferr(L, "filter 'kernel': boolean expected, got %s", luaL_typename(L, v));
      f->ef.kernel = lua_toboolean(L, v);
    } else if (strcmp(k, "limit") == 0) {
      int isnum;
      f->ef.limit = lua_tointegerx(L, v, &isnum);
      if (!isnum || f->ef.limit < 0) ferr(L, "filter 'limit': non-negative integer expected");
    } else {
      ferr(L, "unknown filter '%s' (known: provider, opcode, id, pid, tid, "
                    "header_type, from, to, ns, kernel, limit)", k);
    }
    lua_pop(L, 1);
  }
}

static int match(Filter *f, const hsi_lua_evsrc *src, const hs_event *ev) {
  return hsi_evfilter_match(&f->ef, ev, &src->ids,
                            hsi_evfilter_timed(&f->ef) ? hsi_lua_event_ns(src, ev) : 0);
}

/*
** Move to the next record that passes f: 1 found, 0 at the end (or the
** limit).  Reader errors become Lua errors with the reader's message.
*/
static unsigned reads;   /* events read, for the time limit's stop request (stop.h) */

static int advance(lua_State *L, Trace *t, Filter *f) {
  int rc;
  if (f->ef.limit >= 0 && f->seen >= f->ef.limit) {
    t->src.has_event = 0;
    return 0;
  }
  for (;;) {
    if (hsi_stop_due(++reads)) hsi_lua_limit_check(L);   /* trace:count() is one long C call */
    rc = hsi_attrib_next(t->at, &t->src.ev, &t->src.ids);
    if (rc <= 0) break;
    if (match(f, &t->src, &t->src.ev)) {
      t->src.has_event = 1;
      f->seen++;
      return 1;
    }
  }
  t->src.has_event = 0;
  if (rc < 0) return luaL_error(L, "%s", hs_reader_error(t->src.reader));
  mark_walked(t);
  return 0;
}

void hsi_lua_trace_once(lua_State *L, const hs_reader *r) {
  char msg[HS_ERRLEN];
  int cli;
  Trace *m;
  if (!hsi_reader_twice(r, msg, sizeof msg)) return;
  m = main_trace(L);
  cli = m && m->src.reader == r;          /* the command line's fault, or the script's */
  lua_pop(L, 1);
  lua_pushfstring(L, "%s: its events would count twice", msg);
  if (cli) hsi_lua_usage_error(L, lua_tostring(L, -1));
  luaL_where(L, 1);
  lua_insert(L, -2);
  lua_concat(L, 2);
  lua_error(L);
}

static void rewind_trace(lua_State *L, Trace *t, Filter *f) {
  hsi_lua_trace_once(L, t->src.reader);
  t->src.has_event = 0;
  t->gen++;
  f->gen = t->gen;
  if (!t->at && !(t->at = hsi_attrib_new(hsi_attrib_reader_src, t->src.reader)))
    luaL_error(L, "out of memory");
  hsi_attrib_reset(t->at);
  if (hs_reader_rewind(t->src.reader) < 0)
    luaL_error(L, "%s", hs_reader_error(t->src.reader));
}

/* The step function: upvalues trace, filter, event. */
static int events_step(lua_State *L) {
  Trace *t = (Trace *)lua_touserdata(L, lua_upvalueindex(1));
  Filter *f = (Filter *)lua_touserdata(L, lua_upvalueindex(2));
  if (t->src.reader == NULL) return luaL_error(L, "trace closed during trace:events() loop");
  if (f->gen != t->gen)
    return luaL_error(L, "trace:events() loop used after a newer trace:events() or "
                         "trace:count() rewound the same trace");
  if (!advance(L, t, f)) return 0;
  lua_pushvalue(L, lua_upvalueindex(3));
  return 1;
}

/* trace:events([filters]) -> iterator yielding one reused heapscript.Event */
static int t_events(lua_State *L) {
  Trace *t = checkopen(L, 1);
  Filter *f;
  lua_settop(L, 2);
  f = (Filter *)lua_newuserdatauv(L, sizeof *f, 0);       /* 3 */
  parse_filter(L, 2, f);
  rewind_trace(L, t, f);
  lua_pushvalue(L, 1);                                     /* upvalue 1 */
  lua_pushvalue(L, 3);                                     /* upvalue 2 */
  hsi_lua_event_push(L, &t->src, 1);                       /* upvalue 3 */
  lua_pushcclosure(L, events_step, 3);
  return 1;
}

/* trace:count([filters]) -> number of records that pass the filters */
static int t_count(lua_State *L) {
  Trace *t = checkopen(L, 1);
  Filter *f;
  lua_Integer n = 0;
  lua_settop(L, 2);
  f = (Filter *)lua_newuserdatauv(L, sizeof *f, 0);
  parse_filter(L, 2, f);
  rewind_trace(L, t, f);
  while (advance(L, t, f)) n++;
  lua_pushinteger(L, n);
  return 1;
}

/* trace:tally([filters]) -> rows, total: the records that pass, counted
   by provider, id and opcode in C (evcount.h, the table of `info`'s
   figures), as `events` shows them (a loop over trace:events() in Lua
   takes 10 times as long).  rows in the order each key was first met:
   { provider = GUID, provider_name =, id =, opcode =, name =, count = }. */
#define HSI_LUA_TALLY "heapscript.tally"

static int tally_gc(lua_State *L) {
  hsi_evcount_free((hsi_evcount *)luaL_checkudata(L, 1, HSI_LUA_TALLY));
  return 0;
}

static int t_tally(lua_State *L) {
  Trace *t = checkopen(L, 1);
  Filter *f;
  hsi_evcount *c;
  lua_Integer total = 0;
  size_t i;
  int feed;
  lua_settop(L, 2);
  f = (Filter *)lua_newuserdatauv(L, sizeof *f, 0);
  parse_filter(L, 2, f);
  /* a userdata, so that an error in the loop (the reader's, a time limit)
     still frees the table */
  c = (hsi_evcount *)lua_newuserdatauv(L, sizeof *c, 0);
  memset(c, 0, sizeof *c);
  luaL_setmetatable(L, HSI_LUA_TALLY);
  /* every event: the layout checks come on the way, as `info` makes them
     (anew: a tally an error stopped left a part) */
  if ((feed = !t->lc_done && hsi_evfilter_all(&f->ef)) != 0) {
    hsi_lcheck_free(t->lc);
    hsi_procmap_free(t->lcpm);
    t->lc = hsi_lcheck_new();
    t->lcpm = hsi_procmap_new();
    if (!t->lc || !t->lcpm) return luaL_error(L, "not enough memory");
  }
  rewind_trace(L, t, f);
  while (advance(L, t, f)) {
    if (hsi_evcount_add(c, &t->src.ev, 0)) return luaL_error(L, "not enough memory");
    if (feed && hsi_lcheck_feed(t->lc, t->lcpm, &t->src.ev)) return luaL_error(L, "not enough memory");
    total++;
  }
  if (feed) {
    hsi_lcheck_finish(t->lc, t->lcpm);
    t->lc_done = 1;
  }
  lua_createtable(L, (int)c->n, 0);
  for (i = 0; i < c->n; i++) {
    const hsi_evrow *k = &c->rows[i];
    char g[HS_GUID_STRLEN];
    const char *s;
    lua_createtable(L, 0, 6);
    hs_guid_format(&k->provider, g);
    lua_pushstring(L, g);
    lua_setfield(L, -2, "provider");
    if ((s = hs_provider_name(&k->provider))) { lua_pushstring(L, s); lua_setfield(L, -2, "provider_name"); }
    lua_pushinteger(L, k->id);
    lua_setfield(L, -2, "id");
    lua_pushinteger(L, k->opcode);
    lua_setfield(L, -2, "opcode");
    if ((s = hs_event_name(&k->provider, k->opcode))) { lua_pushstring(L, s); lua_setfield(L, -2, "name"); }
    lua_pushinteger(L, (lua_Integer)k->count);
    lua_setfield(L, -2, "count");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_pushinteger(L, total);
  return 2;
}

static const luaL_Reg methods[] = {
  {"header", t_header},
  {"files", t_files},
  {"same_file", t_same_file},
  {"stats", t_stats},
  {"damage", t_damage},
  {"events", t_events},
  {"count", t_count},
  {"tally", t_tally},
  {"close", t_close},
  {NULL, NULL}
};

static const luaL_Reg metameth[] = {
  {"__index", NULL},  /* placeholder: the method table */
  {"__gc", t_gc},
  {"__close", t_closemeta},
  {"__tostring", t_tostring},
  {NULL, NULL}
};

/* The opener (lua_run.h): heapscript.open, the metatable, the methods. */
int hsi_lua_open_trace(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_pushcfunction(L, t_open);
  lua_setfield(L, 1, "open");
  lua_pushcfunction(L, t_input);
  lua_setfield(L, 1, "input");
  lua_pushcfunction(L, t_run_damage);
  lua_setfield(L, 1, "damage");
  lua_pushcfunction(L, t_same_file_any);
  lua_setfield(L, 1, "same_file");
  lua_pushcfunction(L, t_path_kind);
  lua_setfield(L, 1, "path_kind");
  luaL_newmetatable(L, HSI_LUA_TALLY);   /* trace:tally's table, freed by the collector */
  lua_pushcfunction(L, tally_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  luaL_newmetatable(L, HSI_LUA_RUN);     /* the run's files (get_run) */
  lua_pushcfunction(L, run_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  luaL_newmetatable(L, HSI_LUA_TRACE);
  luaL_setfuncs(L, metameth, 0);
  luaL_newlib(L, methods);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__index");
  return 1;
}
