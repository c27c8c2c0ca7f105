/*
** lua_sandbox.c -- limits of a script run and the sandbox (lua_sandbox.h).
**
** Limits.  A CPU timer (ITIMER_PROF: the process's CPU time, as clock()
** measures it) fires at the --timeout deadline: it sets the stop flag of
** stop.h, so the engine's C loops end a long call too, and a count hook
** on the main thread and on the coroutine running (the sandbox's
** coroutine.resume keeps track of it).  The allocator counts the bytes of
** the state and refuses to pass the --memory cap.  Once a limit is broken
** it stays broken: the hook raises the limit's error at every
** instruction, so a pcall, a coroutine or an error handler cannot go on
** past it (as Redis bounds a script); the CLI prints the one message and
** exits with status 2.  No hook runs before that: a count hook makes the
** VM check every instruction, twice as slow.  A C function that never
** returns to Lua (a backtracking pattern match) is ended by the timer
** itself, GRACE_S of CPU time after the deadline, with _exit(2).
**
** Sandbox.  One environment (a "world": env, its own package.loaded, the
** directories it may read) per state, created on first use.  Its
** libraries are copies, so changing them changes nothing of the trusted
** scripts'; it has no io, debug, os but clock/time/date, no binary
** chunks, no C loaders, and require/loadfile/dofile read only below the
** allowed directories.  getmetatable does not hand out the metatables of
** strings and userdata (they are shared with the trusted scripts), and
** setmetatable refuses __gc: finalizers run with hooks off, out of reach
** of the time limit.
*/
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700       /* SA_RESTART, realpath */
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <lualib.h>
#include <lauxlib.h>

#include "embedded.h"
#include "lua_run.h"
#include "lua_sandbox.h"
#include "osfile.h"
#include "stop.h"

#define HOOK_EVERY 10000          /* without a timer: instructions between two looks at the clock */
#define GRACE_S 1.0               /* CPU seconds a C call gets after the deadline */
#define SANDBOX_MEMORY_MB 1024    /* the memory cap under the sandbox without --memory */
#define RESERVE ((size_t)1 << 20) /* room above a broken cap, to unwind and report */
#define WORLD "heapscript.sandbox" /* registry: the sandbox's world table */
#define SETUP "heapscript.sandbox.setup" /* registry: dirs, roots, protos */

#if defined(ITIMER_PROF) && !defined(_WIN32)
#define HAVE_TIMER 1
#else
#define HAVE_TIMER 0
#endif

enum { LIM_NONE, LIM_TIME, LIM_MEMORY };

static struct {
  double timeout_s;                   /* --timeout; 0: none */
  size_t cap;                         /* bytes; 0: none */
  int cap_given;                      /* --memory (else the sandbox's default, once it exists) */
  int sandbox;                        /* --sandbox */
  size_t used;                        /* bytes the state holds */
  volatile sig_atomic_t broken;       /* LIM_* */
  volatile sig_atomic_t stage;        /* timer: 0 armed for the deadline, 1 for the grace */
  double deadline;                    /* clock() seconds, without a timer */
  lua_State *L;                       /* the main thread */
  lua_State *volatile running;        /* the coroutine resumed last (tracked_resume), or NULL */
  char msg[640];                      /* "FILE:LINE: what" */
  char hard[160];                     /* what the timer writes before _exit */
  size_t hardlen;
} lim;

/* ------------------------------------------------------------- options */

const char hsi_lua_limits_help[] =
  "  --timeout S  stop the script after S seconds of CPU time, in Lua or in\n"
  "             a long C call (a pcall cannot catch it); exit status 2\n"
  "  --memory MB  cap the memory of the Lua state at MB MiB (default: none,\n"
  "             1024 once anything runs sandboxed); exit status 2\n"
  "  --sandbox  run every script and module that is not bundled (the SCRIPT\n"
  "             file, -I files, rule files) without io, os (but clock, time,\n"
  "             date), debug, binary chunks or C modules; require reads -I,\n"
  "             HEAPSCRIPT_PATH, the script's directory and the bundled files.\n"
  "             policy does so by default for a rule file inside the\n"
  "             repository being tested (docs/SCRIPTS.md, Sandbox)\n";

static int number_arg(int argc, char **argv, int i, double *v) {
  char *end = NULL;
  *v = i + 1 < argc ? strtod(argv[i + 1], &end) : 0;
  return i + 1 < argc && end != argv[i + 1] && *end == '\0' && *v > 0;
}

int hsi_lua_limits_option(int argc, char **argv, int i) {
  const char *a = argv[i];
  double v;
  if (strcmp(a, "--sandbox") == 0) {
    lim.sandbox = 1;
    return 1;
  }
  if (strcmp(a, "--timeout") == 0 || strcmp(a, "-t") == 0) {
    if (!number_arg(argc, argv, i, &v)) {
      fprintf(stderr, "heapscript: option --timeout needs a number of seconds\n");
      return -1;
    }
    lim.timeout_s = v;
    return 2;
  }
  if (strcmp(a, "--memory") == 0) {
    if (!number_arg(argc, argv, i, &v) || v > 1048576.0) {
      fprintf(stderr, "heapscript: option --memory needs a number of MiB (up to 1048576)\n");
      return -1;
    }
    lim.cap = (size_t)(v * 1048576.0);
    lim.cap_given = 1;
    return 2;
  }
  return 0;
}

/* ------------------------------------------------------------- limits */

static void hook(lua_State *L, lua_Debug *ar);
static void copy_table(lua_State *L, int from, const char *skip);
static char refused_at[256];   /* "FILE:LINE" of the Lua code whose memory request was refused */

/* Say what was broken, and where when known. */
static void compose(const char *src, int line) {
  char what[256];
  if (lim.broken == LIM_MEMORY && refused_at[0]) {   /* where the memory was asked for */
    src = refused_at;
    line = -1;
  }
  if (lim.broken == LIM_MEMORY)
    snprintf(what, sizeof what, "script exceeded the memory limit of %.0f MiB (%s)",
             (double)lim.cap / 1048576.0, lim.cap_given ? "--memory" : "the sandbox's default; see --memory");
  else
    snprintf(what, sizeof what, "script timed out after %g s of CPU time (--timeout)", lim.timeout_s);
  if (src && line < 0) snprintf(lim.msg, sizeof lim.msg, "%s: %s", src, what);
  else if (src && line > 0) snprintf(lim.msg, sizeof lim.msg, "%s:%d: %s", src, line, what);
  else snprintf(lim.msg, sizeof lim.msg, "%s", what);
}

/* From now on every instruction of L and of the main thread raises. */
static void stick(lua_State *L) {
  if (L) lua_sethook(L, hook, LUA_MASKCOUNT, 1);
  if (lim.L && L != lim.L) lua_sethook(lim.L, hook, LUA_MASKCOUNT, 1);
  if (lim.running && L != lim.running) lua_sethook(lim.running, hook, LUA_MASKCOUNT, 1);
}

static void break_limit(int kind) {
  if (lim.broken) return;
  lim.broken = kind;
  hsi_stop_request();
}

static void hook(lua_State *L, lua_Debug *ar) {
  if (!hsi_stop_requested) {
    if (HAVE_TIMER || lim.deadline <= 0 || (double)clock() / CLOCKS_PER_SEC < lim.deadline) return;
    break_limit(LIM_TIME);
  }
  if (!lim.broken) lim.broken = LIM_TIME;   /* the timer's flag */
  stick(L);
  if (!lim.msg[0]) {
    lua_getinfo(L, "Sl", ar);
    compose(ar->short_src, ar->currentline);
  }
  lua_pushstring(L, lim.msg);
  lua_error(L);
}

void hsi_lua_limit_check(lua_State *L) {
  lua_Debug ar;
  if (!hsi_stop_requested) return;
  if (!lim.broken) lim.broken = LIM_TIME;
  stick(L);
  if (!lim.msg[0]) {                       /* the Lua code that called into C */
    int level;
    ar.currentline = -1;
    for (level = 1; lua_getstack(L, level, &ar); level++)
      if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) break;
    compose(ar.currentline > 0 ? ar.short_src : NULL, ar.currentline);
  }
  lua_pushstring(L, lim.msg);
  lua_error(L);
}

const char *hsi_lua_limit_broken(void) {
  if (!lim.broken) return NULL;
  if (!lim.msg[0]) compose(NULL, 0);
  return lim.msg;
}

/*
** The allocator.  For its own blocks Lua answers a refusal with a full
** collection (even when the script stopped the collector) and asks again
** with the same request: refused again, the live data does not fit.  The
** buffers of the auxiliary library (string.rep, table.concat) do not ask
** again: a refusal not followed by the same request was final.  Either
** way the limit is broken, at the latest on the next request to grow.
*/
static struct { void *ptr; size_t osize, nsize; int on; } pending;

/* Where the main thread is in Lua code: reads its call chain, allocates nothing. */
static void note_where(void) {
  lua_Debug ar;
  int level;
  refused_at[0] = '\0';
  for (level = 0; lim.L && level < 32 && lua_getstack(lim.L, level, &ar); level++)
    if (lua_getinfo(lim.L, "Sl", &ar) && ar.currentline > 0) {
      snprintf(refused_at, sizeof refused_at, "%s:%d", ar.short_src, ar.currentline);
      return;
    }
}

static void *lalloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  size_t old = ptr ? osize : 0, cap;
  void *p;
  (void)ud;
  if (nsize == 0) {
    free(ptr);
    lim.used -= old;
    return NULL;
  }
  if (nsize > old && lim.cap) {
    int before = lim.broken, again = pending.on && pending.ptr == ptr && pending.osize == osize && pending.nsize == nsize;
    if (pending.on && !again) break_limit(LIM_MEMORY);
    pending.on = 0;
    cap = lim.cap + (lim.broken ? RESERVE : 0);
    if (nsize - old > cap || lim.used > cap - (nsize - old)) {
      if (again) break_limit(LIM_MEMORY);
      else if (!lim.broken) {
        note_where();
        pending.ptr = ptr;
        pending.osize = osize;
        pending.nsize = nsize;
        pending.on = 1;
      }
      if (!before && lim.broken) stick(NULL);
      return NULL;
    }
    if (!before && lim.broken) stick(NULL);
  }
  p = realloc(ptr, nsize);
  if (p) lim.used = lim.used - old + nsize;
  return p;
}

lua_State *hsi_lua_newstate(void) {
  lua_State *L = luaL_newstate();     /* its panic and warning functions */
  if (!L) return NULL;
  /* from here on every block goes through lalloc; count those already there */
  lim.used = (size_t)lua_gc(L, LUA_GCCOUNT, 0) * 1024 + (size_t)lua_gc(L, LUA_GCCOUNTB, 0);
  lua_setallocf(L, lalloc, NULL);
  return L;
}

#if HAVE_TIMER
static struct sigaction old_prof;

static void arm(double s) {
  struct itimerval it;
  memset(&it, 0, sizeof it);
  it.it_value.tv_sec = (time_t)s;
  it.it_value.tv_usec = (suseconds_t)((s - (double)(time_t)s) * 1e6);
  if (it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0) it.it_value.tv_usec = 1;
  setitimer(ITIMER_PROF, &it, NULL);
}

/* Only flags and async-signal-safe calls: it may run on any thread. */
static void on_timer(int sig) {
  (void)sig;
  if (lim.stage == 0) {
    lim.stage = 1;
    if (!lim.broken) lim.broken = LIM_TIME;
    hsi_stop_requested = 1;
    stick(NULL);             /* as lua.c does on Ctrl-C: the reader thread blocks signals */
    arm(GRACE_S);
  } else {
    ssize_t n = write(2, lim.hard, lim.hardlen);
    (void)n;
    _exit(2);
  }
}
#endif

static void timer_start(void) {
  if (lim.timeout_s <= 0) return;
  lim.deadline = (double)clock() / CLOCKS_PER_SEC + lim.timeout_s;
#if HAVE_TIMER
  {
    struct sigaction sa;
    snprintf(lim.hard, sizeof lim.hard, "heapscript: script timed out after %g s of CPU time (--timeout) "
             "and did not stop within %g s (a C function or coroutine out of reach); ended\n",
             lim.timeout_s, GRACE_S);
    lim.hardlen = strlen(lim.hard);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_timer;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, &old_prof);
    lim.stage = 0;
    arm(lim.timeout_s);
  }
#endif
}

static void timer_stop(void) {
  if (lim.timeout_s <= 0) return;
#if HAVE_TIMER
  {
    struct itimerval it;
    memset(&it, 0, sizeof it);
    setitimer(ITIMER_PROF, &it, NULL);
    sigaction(SIGPROF, &old_prof, NULL);
  }
#endif
}

int hsi_lua_limits_pcall(lua_State *L, int narg, int nres, int msgh) {
  int st;
  lim.L = L;
  if (!HAVE_TIMER && lim.timeout_s > 0) lua_sethook(L, hook, LUA_MASKCOUNT, HOOK_EVERY);
  timer_start();
  st = lua_pcall(L, narg, nres, msgh);
  timer_stop();
  if (st != LUA_OK && pending.on) break_limit(LIM_MEMORY);   /* a final refusal ended the script */
  return st;
}

/* coroutine.resume that keeps track of the coroutine running, so that a
   broken limit reaches it (upvalue: the original resume). */
static int tracked_resume(lua_State *L) {
  lua_State *co = lua_tothread(L, 1), *prev = lim.running;
  int n = lua_gettop(L), st;
  luaL_argexpected(L, co != NULL, 1, "coroutine");
  hsi_lua_limit_check(L);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lim.running = co;
  st = lua_pcall(L, n, LUA_MULTRET, 0);
  lim.running = prev;
  hsi_lua_limit_check(L);
  if (st != LUA_OK) return lua_error(L);
  return lua_gettop(L);
}

/* debug.sethook for the trusted scripts under a limit: a hook the limit
   set cannot be taken away (upvalue: the original sethook). */
static int guarded_sethook(lua_State *L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 0);
  hsi_lua_limit_check(L);   /* the limit broke during the call: its hook again, and the error */
  return 0;
}

/* coroutine.wrap over tracked_resume, with the errors of the original. */
static const char wrap_code[] =
  "local create, resume, pack, unpack, error = ...\n"
  "return function(f)\n"
  "  local co = create(f)\n"
  "  return function(...)\n"
  "    local r = pack(resume(co, ...))\n"
  "    if r[1] then return unpack(r, 2, r.n) end\n"
  "    error(r[2], 2)\n"
  "  end\n"
  "end\n";

/* Push a copy of the coroutine table at idx with the tracking resume and wrap. */
static void push_tracked_coroutine(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  copy_table(L, idx, NULL);
  lua_getfield(L, idx, "resume");
  lua_pushcclosure(L, tracked_resume, 1);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "resume");
  if (luaL_loadbufferx(L, wrap_code, sizeof wrap_code - 1, "=coroutine.wrap", "t") != LUA_OK) lua_error(L);
  lua_insert(L, -2);
  lua_getfield(L, idx, "create");
  lua_insert(L, -2);
  lua_getglobal(L, "table");
  lua_getfield(L, -1, "pack");
  lua_getfield(L, -2, "unpack");
  lua_remove(L, -3);
  lua_getglobal(L, "error");
  lua_call(L, 5, 1);
  lua_setfield(L, -2, "wrap");
}

/* ---------------------------------------------------------- the world */

static int is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Push the real path of `path` (symbolic links and .. resolved); 0 if it does not exist. */
static int push_real(lua_State *L, const char *path) {
  char *r = hsi_realpath(path);
  if (!r) return 0;
  lua_pushstring(L, r);
  free(r);
  return 1;
}

void hsi_lua_push_dir(lua_State *L, const char *path) {
  const char *s = strrchr(path, '/'), *b = strrchr(path, '\\');
  if (b && (!s || b > s)) s = b;              /* Windows: either separator */
  if (!s) lua_pushliteral(L, ".");
  else if (s == path) lua_pushlstring(L, path, 1);
  else lua_pushlstring(L, path, (size_t)(s - path));
}

/* Is the real path `r` at or below the real directory `d`? */
static int below(const char *r, const char *d) {
  size_t n = strlen(d);
  if (strncmp(r, d, n) != 0) return 0;
  return r[n] == '/' || r[n] == '\0' || (n > 0 && d[n - 1] == '/');
}

/* Index of the list `list` holding a directory that path lies below, pushing it; 0 if none. */
static int find_below(lua_State *L, int list, const char *path) {
  lua_Integer i, n;
  list = lua_absindex(L, list);
  n = luaL_len(L, list);
  if (!push_real(L, path)) return 0;
  for (i = 1; i <= n; i++) {
    lua_rawgeti(L, list, i);
    if (below(lua_tostring(L, -2), lua_tostring(L, -1))) {
      lua_remove(L, -2);
      return 1;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return 0;
}

/* Add the real path of directory dir to the list at idx (once). */
static void add_dir(lua_State *L, int list, const char *dir) {
  lua_Integer i, n;
  list = lua_absindex(L, list);
  n = luaL_len(L, list);
  if (!push_real(L, dir)) return;
  for (i = 1; i <= n; i++) {
    int same;
    lua_rawgeti(L, list, i);
    same = lua_rawequal(L, -1, -2);
    lua_pop(L, 1);
    if (same) { lua_pop(L, 1); return; }
  }
  lua_rawseti(L, list, n + 1);
}

/* The git work tree around the directory dir (a parent with a .git entry): push it, or 0. */
static int push_worktree(lua_State *L, const char *dir) {
  struct stat st;
  char *r = hsi_realpath(dir), *p;
  if (!r) return 0;
  for (;;) {
    size_t n = strlen(r);
    char *probe = (char *)malloc(n + 6);
    int found;
    if (!probe) break;
    memcpy(probe, r, n);
    {
      const char *tail = n && r[n - 1] == '/' ? ".git" : "/.git";   /* a root ("/") ends in '/' */
      memcpy(probe + n, tail, strlen(tail) + 1);
    }
    found = stat(probe, &st) == 0;
    free(probe);
    if (found) {
      lua_pushstring(L, r);
      free(r);
      return 1;
    }
    p = strrchr(r, '/');
    if (!p || p == r) break;
    *p = '\0';
  }
  free(r);
  return 0;
}

static void push_setup(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, SETUP);
}

static void copy_table(lua_State *L, int from, const char *skip) {
  from = lua_absindex(L, from);
  lua_newtable(L);
  lua_pushnil(L);
  while (lua_next(L, from)) {
    if (skip && lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), skip) == 0) {
      lua_pop(L, 1);
      continue;
    }
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -4);
  }
}

/* What the sandbox leaves out, by table: a clear error instead of nil. */
static int denied(lua_State *L) {
  const char *k = lua_tostring(L, 2);
  if (k && lua_type(L, 2) == LUA_TSTRING) {
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(2)) != LUA_TNIL)
      return luaL_error(L, "%s%s is not available in the sandbox (see Sandbox in docs/SCRIPTS.md)",
                        lua_tostring(L, lua_upvalueindex(1)), k);
  }
  return 0;
}

static void set_denied(lua_State *L, int t, const char *prefix, const char *const *names) {
  t = lua_absindex(L, t);
  lua_createtable(L, 0, 2);
  lua_pushstring(L, prefix);
  lua_newtable(L);
  for (; *names; names++) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, *names);
  }
  lua_pushcclosure(L, denied, 2);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, t);
}

/* The globals' __index: trace and arg of the run, clear errors for what is left out. */
static int env_index(lua_State *L) {
  const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "";
  if (strcmp(k, "trace") == 0) {
    lua_getglobal(L, "trace");          /* a userdata: its metatable is out of reach */
    return 1;
  }
  if (strcmp(k, "arg") == 0) {
    if (lua_getglobal(L, "arg") == LUA_TTABLE) {
      copy_table(L, -1, NULL);
      lua_pushvalue(L, -1);
      lua_setfield(L, 1, "arg");
    }
    return 1;
  }
  lua_settop(L, 2);
  return denied(L);
}

static int world(lua_State *L);

/* getmetatable: tables as usual; the shared metatables of strings and userdata, never. */
static int sb_getmetatable(lua_State *L) {
  int t = lua_type(L, 1);
  luaL_checkany(L, 1);
  if (t == LUA_TSTRING || t == LUA_TUSERDATA || t == LUA_TLIGHTUSERDATA)
    return luaL_error(L, "getmetatable: the metatable of a %s is not available in the sandbox "
                         "(it is shared with the trusted scripts)", lua_typename(L, t));
  if (t != LUA_TTABLE || !lua_getmetatable(L, 1)) {
    lua_pushnil(L);
    return 1;
  }
  luaL_getmetafield(L, 1, "__metatable");   /* pushes it when there is one */
  return 1;
}

/* setmetatable(t, mt): as usual, but no __gc (finalizers run with hooks off). */
static int sb_setmetatable(lua_State *L) {
  int t = lua_type(L, 2);
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_argexpected(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table");
  if (t == LUA_TTABLE) {
    lua_pushliteral(L, "__gc");
    if (lua_rawget(L, 2) != LUA_TNIL)
      return luaL_error(L, "setmetatable: __gc metamethods are not allowed in the sandbox "
                           "(finalizers run out of reach of the time limit)");
    lua_pop(L, 1);
  }
  if (luaL_getmetafield(L, 1, "__metatable") != LUA_TNIL)
    return luaL_error(L, "cannot change a protected metatable");
  lua_settop(L, 2);
  lua_setmetatable(L, 1);
  return 1;
}

static int check_mode(lua_State *L, int arg, const char *fn) {
  const char *mode = luaL_optstring(L, arg, "t");
  if (strchr(mode, 'b'))
    return luaL_error(L, "%s: binary chunks are not allowed in the sandbox (mode \"%s\")", fn, mode);
  return 0;
}

/* Make the chunk at idx run in env at envidx (or the world's when 0). */
static void set_env(lua_State *L, int idx, int envidx) {
  idx = lua_absindex(L, idx);
  if (envidx) lua_pushvalue(L, envidx);
  else {
    world(L);
    lua_getfield(L, -1, "env");
    lua_remove(L, -2);
  }
  if (!lua_setupvalue(L, idx, 1)) lua_pop(L, 1);
}

/*
** Load the file path as text into the sandbox: pushes the chunk and
** returns 1, or pushes nil and a message and returns 2.  `restricted`
** (a call from sandboxed code): the file must lie below an allowed
** directory; otherwise (the trusted side chose it) its directory becomes
** allowed.
*/
static int load_file(lua_State *L, const char *path, int restricted, int envidx) {
  world(L);
  lua_getfield(L, -1, "allowed");
  lua_remove(L, -2);
  if (restricted) {
    if (!find_below(L, lua_gettop(L), path)) {
      lua_pop(L, 1);
      lua_pushnil(L);
      lua_pushfstring(L, "cannot read '%s': the sandbox reads only below -I, HEAPSCRIPT_PATH "
                         "and the directories of the rule files and scripts it runs", path);
      return 2;
    }
    lua_pop(L, 1);
  } else {
    hsi_lua_push_dir(L, path);
    add_dir(L, -2, lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (luaL_loadfilex(L, path, "t") != LUA_OK) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  set_env(L, -1, envidx);
  return 1;
}

static int loadfile_common(lua_State *L, int restricted) {
  const char *path = luaL_checkstring(L, 1);
  check_mode(L, 2, "loadfile");
  return load_file(L, path, restricted, lua_isnone(L, 3) ? 0 : 3);
}

static int dofile_common(lua_State *L, int restricted) {
  const char *path = luaL_checkstring(L, 1);
  lua_settop(L, 1);
  if (load_file(L, path, restricted, 0) != 1) return lua_error(L);
  lua_call(L, 0, LUA_MULTRET);
  return lua_gettop(L) - 1;
}

static int sb_loadfile(lua_State *L) { return loadfile_common(L, 1); }
static int sb_dofile(lua_State *L) { return dofile_common(L, 1); }
static int trusted_loadfile(lua_State *L) { return loadfile_common(L, 0); }
static int trusted_dofile(lua_State *L) { return dofile_common(L, 0); }

/* load(chunk [, name [, mode [, env]]]) as text; env defaults to the
   sandbox's (upvalue 2: 1 for the sandbox, 0 for the trusted side). */
static int text_load(lua_State *L) {
  int n = lua_gettop(L), sandboxed = (int)lua_tointeger(L, lua_upvalueindex(2));
  check_mode(L, 3, "load");
  lua_settop(L, 4);
  lua_pushvalue(L, lua_upvalueindex(1));    /* the original load */
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_pushliteral(L, "t");
  if (n >= 4) lua_pushvalue(L, 4);
  else if (sandboxed) {
    world(L);
    lua_getfield(L, -1, "env");
    lua_remove(L, -2);
  }
  lua_call(L, n >= 4 || sandboxed ? 4 : 3, 2);
  if (lua_isnil(L, -2)) return 2;                   /* nil, message */
  lua_pop(L, 1);
  return 1;
}

/*
** Find module `name` for the sandbox: below the allowed directories, then
** bundled.  Pushes the chunk (in the sandbox) and its place, or raises.
*/
static void find_module(lua_State *L, const char *name) {
  luaL_Buffer tried;
  const struct hsi_embedded *e;
  const char *rel, *s;
  lua_Integer i, n;
  int allowed, top = lua_gettop(L);
  for (s = name; *s; s++)
    if (!(*s == '.' || *s == '_' || *s == '-' || (*s >= '0' && *s <= '9') || ((*s | 32) >= 'a' && (*s | 32) <= 'z')))
      luaL_error(L, "module '%s' not found: a module name is letters, digits, '_', '-' and '.'", name);
  rel = luaL_gsub(L, name, ".", "/");
  rel = lua_pushfstring(L, "%s.lua", rel);               /* top + 2 */
  world(L);
  lua_getfield(L, -1, "allowed");
  lua_remove(L, -2);
  allowed = lua_gettop(L);
  luaL_buffinit(L, &tried);
  n = luaL_len(L, allowed);
  for (i = 1; i <= n; i++) {
    const char *path;
    lua_rawgeti(L, allowed, i);
    path = lua_pushfstring(L, "%s/%s", lua_tostring(L, -1), rel);
    lua_remove(L, -2);
    if (is_file(path) && find_below(L, allowed, path)) {
      lua_pop(L, 1);                                     /* the directory: path stays, the place */
      if (luaL_loadfilex(L, path, "t") != LUA_OK)
        luaL_error(L, "error loading module '%s':\n\t%s", name, lua_tostring(L, -1));
      goto found;
    }
    lua_pushfstring(L, "\n\tno file '%s'", path);
    lua_remove(L, -2);
    luaL_addvalue(&tried);
  }
  if ((e = hsi_lua_bundled(L, rel)) != NULL) {
    lua_pushfstring(L, "@%s", e->name);
    if (luaL_loadbufferx(L, (const char *)e->data, e->len, lua_tostring(L, -1), "t") != LUA_OK)
      luaL_error(L, "error loading module '%s':\n\t%s", name, lua_tostring(L, -1));
    lua_remove(L, -2);
    lua_pushstring(L, e->name);
    lua_insert(L, -2);
    goto found;
  }
  lua_pushfstring(L, "\n\tno bundled 'scripts/%s' or '%s'", rel, rel);
  luaL_addvalue(&tried);
  luaL_pushresult(&tried);
  luaL_error(L, "module '%s' not found in the sandbox:%s", name, lua_tostring(L, -1));
found:                                     /* place, chunk */
  set_env(L, -1, 0);
  lua_insert(L, -2);                       /* chunk, place */
  lua_rotate(L, top + 1, 2);
  lua_settop(L, top + 2);
}

static int sb_require(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  lua_settop(L, 1);
  world(L);
  lua_getfield(L, 2, "loaded");                          /* 3 */
  if (lua_getfield(L, 3, name) != LUA_TNIL) return 1;
  lua_pop(L, 1);
  find_module(L, name);                                  /* 4 chunk, 5 place */
  lua_pushvalue(L, 4);
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 5);
  lua_call(L, 2, 1);                                     /* 6 result */
  if (!lua_isnil(L, -1)) lua_setfield(L, 3, name);
  else lua_pop(L, 1);
  if (lua_getfield(L, 3, name) == LUA_TNIL) {
    lua_pushboolean(L, 1);
    lua_copy(L, -1, -2);
    lua_setfield(L, 3, name);
  }
  lua_pushvalue(L, 5);
  return 2;
}

static const char *const base_names[] = {
  "assert", "error", "ipairs", "next", "pairs", "pcall", "print", "rawequal", "rawget", "rawlen",
  "rawset", "select", "tonumber", "tostring", "type", "xpcall", "collectgarbage", "_VERSION", NULL
};
static const char *const copied_libs[] = { "string", "table", "math", "utf8", "coroutine", NULL };
static const char *const module_names[] = { "version", "Trace", "Event", "Stack", "Allocs", "Symbols", NULL };
static const char *const env_denied[] = { "io", "debug", NULL };
static const char *const os_denied[] = {
  "execute", "exit", "getenv", "remove", "rename", "tmpname", "setlocale", NULL };
static const char *const package_denied[] = {
  "loadlib", "searchpath", "searchers", "preload", "path", "cpath", NULL };
static const char *const string_denied[] = { "dump", NULL };

/* The sandbox's view of the heapscript module: the classes' method
   tables (copies), no open, writer or symbols (they name files). */
static void push_module_view(lua_State *L) {
  const char *const *k;
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_getfield(L, -1, "heapscript");
  lua_remove(L, -2);
  lua_newtable(L);
  for (k = module_names; *k; k++) {
    if (lua_getfield(L, -2, *k) == LUA_TTABLE) copy_table(L, -1, NULL), lua_remove(L, -2);
    lua_setfield(L, -2, *k);
  }
  lua_remove(L, -2);
}

/* Push the world, creating it on first use. */
static int world(lua_State *L) {
  const char *const *k;
  int w, env, loaded, protos;
  if (lua_getfield(L, LUA_REGISTRYINDEX, WORLD) == LUA_TTABLE) return 1;
  lua_pop(L, 1);
  if (!lim.cap) lim.cap = (size_t)SANDBOX_MEMORY_MB << 20;   /* sandboxed code exists: cap by default */
  lua_newtable(L);
  w = lua_gettop(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, WORLD);
  push_setup(L);
  lua_getfield(L, -1, "protos");
  protos = lua_gettop(L);

  lua_newtable(L);                          /* allowed: real paths of -I and HEAPSCRIPT_PATH */
  lua_getfield(L, protos - 1, "dirs");
  {
    lua_Integer i, n = luaL_len(L, -1);
    for (i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, i);
      add_dir(L, -3, lua_tostring(L, -1));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  lua_setfield(L, w, "allowed");

  lua_newtable(L);
  loaded = lua_gettop(L);
  lua_pushvalue(L, loaded);
  lua_setfield(L, w, "loaded");
  lua_newtable(L);
  env = lua_gettop(L);
  lua_pushvalue(L, env);
  lua_setfield(L, w, "env");

  for (k = base_names; *k; k++) {
    lua_getfield(L, protos, *k);
    lua_setfield(L, env, *k);
  }
  for (k = copied_libs; *k; k++) {
    lua_getfield(L, protos, *k);
    copy_table(L, -1, strcmp(*k, "string") == 0 ? "dump" : NULL);
    lua_remove(L, -2);
    if (strcmp(*k, "string") == 0) set_denied(L, -1, "string.", string_denied);
    lua_pushvalue(L, -1);
    lua_setfield(L, loaded, *k);
    lua_setfield(L, env, *k);
  }
  lua_createtable(L, 0, 3);                 /* os: the clock and dates only */
  lua_getfield(L, protos, "os");
  lua_getfield(L, -1, "clock");
  lua_setfield(L, -3, "clock");
  lua_getfield(L, -1, "time");
  lua_setfield(L, -3, "time");
  lua_getfield(L, -1, "date");
  lua_setfield(L, -3, "date");
  lua_pop(L, 1);
  set_denied(L, -1, "os.", os_denied);
  lua_pushvalue(L, -1);
  lua_setfield(L, loaded, "os");
  lua_setfield(L, env, "os");
  lua_createtable(L, 0, 2);                 /* package: its own loaded */
  lua_pushvalue(L, loaded);
  lua_setfield(L, -2, "loaded");
  lua_pushliteral(L, LUA_DIRSEP "\n;\n?\n!\n-\n");
  lua_setfield(L, -2, "config");
  set_denied(L, -1, "package.", package_denied);
  lua_pushvalue(L, -1);
  lua_setfield(L, loaded, "package");
  lua_setfield(L, env, "package");
  push_module_view(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, loaded, "heapscript");
  lua_setfield(L, env, "heapscript");
  lua_getfield(L, protos, "lpeg");
  if (lua_istable(L, -1)) {
    copy_table(L, -1, NULL);
    lua_setfield(L, loaded, "lpeg");
  }
  lua_pop(L, 1);

  lua_pushcfunction(L, sb_getmetatable);
  lua_setfield(L, env, "getmetatable");
  lua_pushcfunction(L, sb_setmetatable);
  lua_setfield(L, env, "setmetatable");
  lua_pushcfunction(L, sb_loadfile);
  lua_setfield(L, env, "loadfile");
  lua_pushcfunction(L, sb_dofile);
  lua_setfield(L, env, "dofile");
  lua_pushcfunction(L, sb_require);
  lua_setfield(L, env, "require");
  lua_getfield(L, protos, "load");
  lua_pushinteger(L, 1);
  lua_pushcclosure(L, text_load, 2);
  lua_setfield(L, env, "load");
  lua_pushvalue(L, env);
  lua_setfield(L, env, "_G");
  lua_pushvalue(L, env);
  lua_setfield(L, loaded, "_G");
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "");
  lua_newtable(L);
  for (k = env_denied; *k; k++) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, *k);
  }
  lua_pushcclosure(L, env_index, 2);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, env);

  /* string methods ("x"):rep() go through the strings' shared metatable:
     its __index becomes a table that hides dump and falls back to the
     trusted `string` (which keeps dump, and its additions keep working) */
  lua_pushliteral(L, "");
  if (lua_getmetatable(L, -1)) {
    lua_createtable(L, 0, 1);
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "dump");
    lua_createtable(L, 0, 1);
    lua_getfield(L, protos, "string");
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, -2);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  lua_settop(L, w);
  return 1;
}

/* ---------------------------------------------- heapscript.sandbox */

/* sandbox.loadfile(path) -> chunk | nil, message: the rule file of a trusted script */
static int api_loadfile(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  return load_file(L, path, 0, 0);
}

/* sandbox.inside(path) -> root | nil: the repository being tested that holds path
   (the file itself, or the directory it is named in) */
static int api_inside(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  push_setup(L);
  lua_getfield(L, -1, "roots");
  if (find_below(L, lua_gettop(L), path)) return 1;
  /* a symbolic link inside the repository to a file outside: its directory decides */
  hsi_lua_push_dir(L, path);
  if (!find_below(L, lua_gettop(L) - 1, lua_tostring(L, -1))) lua_pushnil(L);
  return 1;
}

/* sandbox.find(name) -> path | nil: the file of module name on -I and HEAPSCRIPT_PATH */
static int api_find(lua_State *L) {
  const char *name = luaL_checkstring(L, 1), *rel;
  lua_Integer i, n;
  rel = luaL_gsub(L, name, ".", "/");
  rel = lua_pushfstring(L, "%s.lua", rel);
  push_setup(L);
  lua_getfield(L, -1, "dirs");
  n = luaL_len(L, -1);
  for (i = 1; i <= n; i++) {
    const char *path;
    lua_rawgeti(L, -1, i);
    path = lua_pushfstring(L, "%s/%s", lua_tostring(L, -1), rel);
    if (is_file(path)) return 1;
    lua_pop(L, 2);
  }
  lua_pushnil(L);
  return 1;
}

/* sandbox.roots() -> {dir, ...}: the repository being tested */
static int api_roots(lua_State *L) {
  push_setup(L);
  lua_getfield(L, -1, "roots");
  copy_table(L, -1, NULL);
  return 1;
}

static int open_api(lua_State *L) {
  lua_createtable(L, 0, 6);
  lua_pushboolean(L, lim.sandbox);
  lua_setfield(L, -2, "enabled");
  lua_pushcfunction(L, api_loadfile);
  lua_setfield(L, -2, "loadfile");
  lua_pushcfunction(L, sb_require);
  lua_setfield(L, -2, "require");
  lua_pushcfunction(L, api_inside);
  lua_setfield(L, -2, "inside");
  lua_pushcfunction(L, api_find);
  lua_setfield(L, -2, "find");
  lua_pushcfunction(L, api_roots);
  lua_setfield(L, -2, "roots");
  return 1;
}

/* ------------------------------------------------------------ set-up */

const char *hsi_lua_load_mode(void) { return lim.sandbox ? "t" : NULL; }

/* The io library as the trusted side has it, which sandboxed code can
   neither reach nor fake. */
static int env_is_trusted(lua_State *L, int env) {
  int ok;
  env = lua_absindex(L, env);
  if (!lua_istable(L, env)) return 0;
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_getfield(L, -1, "io");
  lua_pushliteral(L, "io");
  lua_rawget(L, env);
  ok = lua_istable(L, -2) && lua_rawequal(L, -1, -2);
  lua_pop(L, 3);
  return ok;
}

int hsi_lua_sandbox_caller(lua_State *L) {
  lua_Debug ar;
  int level, up, trusted = 0;
  if (!lim.sandbox) {
    int world_made = lua_getfield(L, LUA_REGISTRYINDEX, WORLD) == LUA_TTABLE;
    lua_pop(L, 1);
    if (!world_made) return 0;
  }
  for (level = 1; lua_getstack(L, level, &ar); level++) {
    const char *name;
    if (!lua_getinfo(L, "Sf", &ar)) break;
    if (*ar.what == 'C') { lua_pop(L, 1); continue; }
    for (up = 1; (name = lua_getupvalue(L, -1, up)) != NULL; up++) {
      if (strcmp(name, "_ENV") == 0) { trusted = env_is_trusted(L, -1); lua_pop(L, 1); break; }
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
    break;                                  /* the nearest Lua function decides */
  }
  return !trusted;
}

void hsi_lua_sandbox_file(lua_State *L, const char *path) {
  if (!lim.sandbox) return;
  world(L);
  lua_getfield(L, -1, "allowed");
  hsi_lua_push_dir(L, path);
  add_dir(L, -2, lua_tostring(L, -1));
  lua_pop(L, 3);
  set_env(L, -1, 0);
}

void hsi_lua_sandbox_setup(lua_State *L, int dirs, char **traces, int ntraces) {
  const char *const *k;
  char *cwd;
  int setup, i;
  dirs = lua_absindex(L, dirs);
  lua_newtable(L);
  setup = lua_gettop(L);
  lua_pushvalue(L, dirs);
  lua_setfield(L, setup, "dirs");

  /* the repository being tested: the work tree of the current directory
     (the directory itself outside git), and the work trees of the traces */
  lua_newtable(L);
  cwd = getcwd(NULL, 0);
  if (cwd && !push_worktree(L, cwd)) push_real(L, cwd);
  free(cwd);
  if (lua_isstring(L, -1)) lua_rawseti(L, -2, 1);
  for (i = 0; i < ntraces; i++) {
    hsi_lua_push_dir(L, traces[i]);
    if (push_worktree(L, lua_tostring(L, -1))) {
      add_dir(L, -3, lua_tostring(L, -1));
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  lua_setfield(L, setup, "roots");

  /* the libraries as they are before any script ran: the sandbox copies these */
  lua_newtable(L);
  for (k = base_names; *k; k++) {
    lua_getglobal(L, *k);
    lua_setfield(L, -2, *k);
  }
  for (k = copied_libs; *k; k++) {
    lua_getglobal(L, *k);
    lua_setfield(L, -2, *k);
  }
  lua_getglobal(L, "coroutine");
  push_tracked_coroutine(L, -1);
  if (lim.timeout_s > 0 || lim.cap || lim.sandbox) {   /* the trusted scripts' too */
    lua_getfield(L, -1, "resume");
    lua_setfield(L, -3, "resume");
    lua_getfield(L, -1, "wrap");
    lua_setfield(L, -3, "wrap");
    if (lua_getglobal(L, "debug") == LUA_TTABLE) {
      lua_getfield(L, -1, "sethook");
      lua_pushcclosure(L, guarded_sethook, 1);
      lua_setfield(L, -2, "sethook");
    }
    lua_pop(L, 1);
  }
  lua_setfield(L, -3, "coroutine");
  lua_pop(L, 1);
  lua_getglobal(L, "os");
  lua_setfield(L, -2, "os");
  lua_getglobal(L, "load");
  lua_setfield(L, -2, "load");
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  if (lua_getfield(L, -1, "lpeg") == LUA_TFUNCTION) {
    lua_call(L, 0, 1);                       /* as require "lpeg" would */
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "lpeg");
    lua_pop(L, 1);
  }
  lua_remove(L, -2);
  lua_setfield(L, -2, "lpeg");
  lua_setfield(L, setup, "protos");
  lua_pushvalue(L, setup);
  lua_setfield(L, LUA_REGISTRYINDEX, SETUP);
  lua_pop(L, 1);

  hsi_lua_register(L, "sandbox", open_api);

  if (!lim.sandbox) return;
  /* --sandbox: nothing but the bundled files has the trusted powers */
  if (!lim.cap) lim.cap = (size_t)SANDBOX_MEMORY_MB << 20;
  lua_getglobal(L, "package");
  lua_createtable(L, 1, 0);                  /* searchers: preload only; lua_run.c adds its own */
  lua_getfield(L, -2, "searchers");
  lua_rawgeti(L, -1, 1);
  lua_rawseti(L, -3, 1);
  lua_pop(L, 1);
  lua_setfield(L, -2, "searchers");
  lua_pushnil(L);
  lua_setfield(L, -2, "loadlib");
  lua_pushliteral(L, "");
  lua_setfield(L, -2, "path");
  lua_pushliteral(L, "");
  lua_setfield(L, -2, "cpath");
  lua_pop(L, 1);
  lua_pushcfunction(L, trusted_loadfile);
  lua_setglobal(L, "loadfile");
  lua_pushcfunction(L, trusted_dofile);
  lua_setglobal(L, "dofile");
  lua_getglobal(L, "load");
  lua_pushinteger(L, 0);
  lua_pushcclosure(L, text_load, 2);
  lua_setglobal(L, "load");
}
