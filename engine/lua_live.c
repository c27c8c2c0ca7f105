/*
** lua_live.c -- a script over a live session (--live on Windows, or
** --replay FILE anywhere): the global `trace`, trace:every, trace:session.
**
** The session's events gather in a live store (live.h).  The script runs
** at once; its `trace` is whole only when the session stops, so the
** first use of it (trace:allocations(), a loop, a count...) waits for
** the stop, and while it waits the callbacks given to trace:every run,
** each with a trace of the events so far.  A script that never uses
** `trace` waits after its main chunk.  The session stops on Ctrl-C,
** --duration, the end of the target (of the replayed file), or an error;
** it is always stopped before the program exits, errors and os.exit
** included.
**
** Interval times are trace time: every(10, f) runs f when the first event
** stamped 10 s after the session start arrives, with the events before
** it, so a replay at any speed gives the same callbacks as a live run.
*/
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_live.h"
#include "replay.h"
#include "damlog.h"
#include "thread.h"
#ifdef _WIN32
#include "win_live.h"
#endif

#define LIVE_KEY "heapscript.live"
#define EVERY_KEY "heapscript.live.every"
#define POLL_MS 200                /* how often a wait looks at Ctrl-C and --duration */

typedef struct Live {
  hsi_live *s;
  hsi_live_producer prod;
  int running;                     /* producer started and not yet closed */
  int replay;
  double duration_ms, t0_ms;
  int64_t origin, freq;            /* ticks of the session start, ticks per second */
  int reported;
  hsi_damlog dmg;                  /* a replay's: what its reader skipped in the files */
  const char *const *paths;        /* the replayed files (the command line's) */
  int npaths;
} Live;

static volatile sig_atomic_t interrupted;
static Live *active;               /* for atexit: os.exit() must not leak a session */

static void on_sigint(int sig) {
  interrupted = 1;
  signal(sig, SIG_DFL);            /* a second Ctrl-C ends the program at once */
}

static void stop(Live *lv, const char *why) {
  hsi_live_counts c;
  if (lv->running) {
    hsi_live_request_stop(lv->s, why);
    if (lv->replay) hsi_replay_join((hsi_replay *)lv->prod.impl, &lv->dmg);
    lv->prod.close(lv->prod.impl);
    lv->running = 0;
    if (active == lv) active = NULL;
  }
  if (lv->s && !lv->reported) {
    lv->reported = 1;
    hsi_live_counts_get(lv->s, &c);
    fflush(stdout);
    fprintf(stderr, "heapscript: %s stopped: %s; %llu events, %llu lost events, %llu lost buffers%s\n",
            lv->replay ? "replay" : "live session",
            c.finished && hsi_live_reason(lv->s)[0] ? hsi_live_reason(lv->s) : why,
            (unsigned long long)c.events, (unsigned long long)c.lost_events,
            (unsigned long long)c.lost_buffers,
            c.dropped ? " (some events could not be kept)" : "");
    fflush(stderr);
  }
}

static void at_exit(void) { if (active) stop(active, "program exit"); }

static int live_gc(lua_State *L) {
  Live *lv = (Live *)lua_touserdata(L, 1);
  stop(lv, "the script ended");
  hsi_damlog_free(&lv->dmg);
  hsi_live_unref(lv->s);
  lv->s = NULL;
  return 0;
}

static Live *getlive(lua_State *L) {
  Live *lv;
  lua_getfield(L, LUA_REGISTRYINDEX, LIVE_KEY);
  lv = (Live *)lua_touserdata(L, -1);
  lua_pop(L, 1);
  return lv;
}

/* A table of the session's counts, for callbacks and trace:session(). */
static void push_counts(lua_State *L, Live *lv) {
  hsi_live_counts c;
  hsi_live_counts_get(lv->s, &c);
  lua_createtable(L, 0, 8);
  lua_pushinteger(L, (lua_Integer)c.events); lua_setfield(L, -2, "events");
  lua_pushinteger(L, (lua_Integer)c.lost_events); lua_setfield(L, -2, "lost_events");
  lua_pushinteger(L, (lua_Integer)c.lost_buffers); lua_setfield(L, -2, "lost_buffers");
  lua_pushinteger(L, (lua_Integer)c.dropped); lua_setfield(L, -2, "dropped");
  lua_pushboolean(L, c.finished); lua_setfield(L, -2, "stopped");
  lua_pushstring(L, hsi_live_reason(lv->s)); lua_setfield(L, -2, "reason");
  lua_pushstring(L, lv->replay ? "replay" : "live"); lua_setfield(L, -2, "mode");
}

/* Run the callbacks due at `due` with a trace of the first n records. */
static void run_due(lua_State *L, Live *lv, int64_t due, uint64_t n) {
  int every, i, len;
  lua_getfield(L, LUA_REGISTRYINDEX, EVERY_KEY);
  every = lua_gettop(L);
  len = (int)luaL_len(L, every);
  for (i = 1; i <= len; i++) {
    hs_reader *r;
    lua_Integer next, step;
    lua_geti(L, every, i);
    lua_getfield(L, -1, "next"); next = lua_tointeger(L, -1); lua_pop(L, 1);
    lua_getfield(L, -1, "step"); step = lua_tointeger(L, -1); lua_pop(L, 1);
    if (next != due) { lua_pop(L, 1); continue; }
    lua_pushinteger(L, next + step);
    lua_setfield(L, -2, "next");
    lua_getfield(L, -1, "fn");
    if (hsi_live_reader(lv->s, n, &r) < 0) luaL_error(L, "not enough memory");
    hsi_lua_trace_push(L, r);
    push_counts(L, lv);
    lua_pushnumber(L, (double)(due - lv->origin) / (double)lv->freq);
    lua_setfield(L, -2, "time");
    lua_pushinteger(L, (lua_Integer)n);
    lua_setfield(L, -2, "events");
    lua_call(L, 2, 0);              /* an error here stops the session (live_gc) */
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

/* The earliest due time of the callbacks, or INT64_MAX. */
static int64_t next_due(lua_State *L) {
  int64_t due = INT64_MAX;
  int i, len;
  lua_getfield(L, LUA_REGISTRYINDEX, EVERY_KEY);
  len = (int)luaL_len(L, -1);
  for (i = 1; i <= len; i++) {
    lua_geti(L, -1, i);
    lua_getfield(L, -1, "next");
    if (lua_tointeger(L, -1) < due) due = lua_tointeger(L, -1);
    lua_pop(L, 2);
  }
  lua_pop(L, 1);
  return due;
}

/* The hook of the live trace: wait for the stop, running the callbacks. */
static void settle(lua_State *L, int idx) {
  Live *lv = getlive(L);
  hs_reader *r;
  void (*old)(int);
  uint64_t n;
  if (!lv || !lv->s) luaL_error(L, "no live session");
  interrupted = 0;
  old = signal(SIGINT, on_sigint);
  for (;;) {
    int64_t due = next_due(L);
    int rc = hsi_live_wait(lv->s, due, POLL_MS, &n);
    if (interrupted) { hsi_live_request_stop(lv->s, "interrupted"); interrupted = 0; }
    if (lv->duration_ms > 0 && hsi_now_ms() - lv->t0_ms >= lv->duration_ms)
      hsi_live_request_stop(lv->s, "--duration reached");
    if (rc == 1) run_due(L, lv, due, n);
    else if (rc == 0) break;
  }
  signal(SIGINT, old == SIG_ERR ? SIG_DFL : old);
  stop(lv, "session ended");
  if (hsi_live_reader(lv->s, UINT64_MAX, &r) < 0) luaL_error(L, "not enough memory");
  hsi_lua_trace_set_reader(L, idx, r);
  /* a replayed file's damage is the trace's, as a file's read any other
     way: on stderr at the end, exit status 1, in the reports */
  if (lv->replay) hsi_lua_trace_take_damage(L, idx, &lv->dmg, lv->paths, lv->npaths);
}

/* trace:every(seconds, fn(now, info)) */
static int l_every(lua_State *L) {
  Live *lv = getlive(L);
  double sec = luaL_checknumber(L, 2);
  lua_Integer step;
  luaL_checktype(L, 3, LUA_TFUNCTION);
  if (!hsi_lua_trace_is_live(L, 1) || !lv)
    return luaL_error(L, "trace:every needs a live session (--live, or --replay TRACE) that has not stopped yet, "
                         "outside its callbacks");
  /* (a callback a tick would be hundreds of millions over a replay) */
  luaL_argcheck(L, sec >= 0.001 && sec <= 1e7, 2, "seconds from 0.001 to 1e7 expected");
  step = (lua_Integer)(sec * (double)lv->freq);
  if (step < 1) step = 1;
  lua_getfield(L, LUA_REGISTRYINDEX, EVERY_KEY);
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, step); lua_setfield(L, -2, "step");
  lua_pushinteger(L, (lua_Integer)lv->origin + step); lua_setfield(L, -2, "next");
  lua_pushvalue(L, 3); lua_setfield(L, -2, "fn");
  lua_rawseti(L, -2, (lua_Integer)luaL_len(L, -2) + 1);
  return 0;
}

/* trace:session() -> {events, lost_events, lost_buffers, dropped, stopped, reason, mode} | nil */
static int l_session(lua_State *L) {
  Live *lv = getlive(L);
  hsi_lua_checkreader(L, 1);                /* a closed trace raises, as its other methods do */
  if (!lv || !lv->s) { lua_pushnil(L); return 1; }
  push_counts(L, lv);
  return 1;
}

int hsi_lua_open_live(lua_State *L) {
  lua_getfield(L, 1, "Trace");
  if (lua_istable(L, -1)) {
    lua_pushcfunction(L, l_every); lua_setfield(L, -2, "every");
    lua_pushcfunction(L, l_session); lua_setfield(L, -2, "session");
  }
  lua_pop(L, 1);
  return 0;
}

/* ------------------------------------------------------------- the CLI */

static int replay_start(void *impl) { return hsi_replay_start((hsi_replay *)impl); }
static void replay_close(void *impl) { hsi_replay_close((hsi_replay *)impl); }

int hsi_lua_live_open(lua_State *L, const hsi_live_opts *o) {
  char err[HS_ERRLEN];
  Live *lv;
  hs_reader *r;
  const hs_logfile *lf;
  int rc;
  err[0] = '\0';
  lv = (Live *)lua_newuserdatauv(L, sizeof *lv, 0);
  memset(lv, 0, sizeof *lv);
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, live_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, LIVE_KEY);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, EVERY_KEY);
  lv->replay = o->replay;
  lv->paths = o->paths;
  lv->npaths = o->npaths;
  if (o->replay) {
    hsi_replay *p;
    rc = hsi_replay_open(&p, o->paths, o->npaths, o->speed, &lv->s, err, sizeof err);
    if (rc == 0) { lv->prod.impl = p; lv->prod.start = replay_start; lv->prod.close = replay_close; }
  } else {
#ifdef _WIN32
    rc = hsi_win_live_open(o, &lv->s, &lv->prod, err, sizeof err);
#else
    snprintf(err, sizeof err, "--live needs Windows (ETW real-time sessions); "
             "--replay TRACE runs the same pipeline over a recorded trace");
    rc = HS_EUNSUP;
#endif
  }
  if (rc < 0) { lua_pushstring(L, err[0] ? err : "cannot start the session"); return rc; }
  lf = hsi_live_logfile(lv->s);
  lv->freq = hs_time_freq(lf);
  if (lv->freq <= 0) lv->freq = 10000000;
  lv->origin = lf->clock_type == 2 ? lf->start_time : lf->header_ts;    /* as timeconv.c */
  lv->duration_ms = o->duration * 1000.0;
  lv->t0_ms = hsi_now_ms();
  if ((rc = lv->prod.start(lv->prod.impl)) < 0) {
    lv->prod.close(lv->prod.impl);
    lua_pushstring(L, "cannot start the session's thread");
    return rc;
  }
  lv->running = 1;
  if (!active) { active = lv; atexit(at_exit); }
  if (hsi_live_reader(lv->s, 0, &r) < 0) { lua_pushstring(L, "not enough memory"); return HS_ENOMEM; }
  hsi_lua_trace_push(L, r);
  hsi_lua_trace_set_hook(L, -1, settle);
  return 0;
}

int hsi_lua_live_wait(lua_State *L) {
  lua_getglobal(L, "trace");
  if (hsi_lua_trace_is_live(L, -1)) hsi_lua_checkreader(L, -1);
  lua_pop(L, 1);
  return 0;
}

void hsi_lua_live_shutdown(lua_State *L, const char *why) {
  Live *lv = getlive(L);
  if (lv && lv->s) stop(lv, why);
}
