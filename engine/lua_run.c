/*
** lua_run.c -- script mode of the CLI, the `heapscript` module, and the
** search path for scripts and modules.
**
**   heapscript [-I DIR]... SCRIPT [TRACE...] [-- ARG...]
**
** SCRIPT is a file, or the name of a bundled script.  Names (of scripts
** and of `require`d modules alike) are looked up in each -I DIR, then in
** each directory of HEAPSCRIPT_PATH, then among the files embedded at
** build time (engine/embedded.h) -- so a team can override any bundled
** file by putting its own copy first on the path.
**
** Everything runs inside one protected call (as lua.c does); the script
** itself runs under a second one whose message handler adds a traceback,
** so a failing script prints "heapscript: FILE:LINE: message" and the
** stack.  Ctrl-C sets a hook that raises an error at the next Lua
** instruction, so an interrupted script also says where it was.
*/
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lualib.h>
#include <lua-lpeg.h>

#include "cliargs.h"
#include "embedded.h"
#include "lua_run.h"
#include "text.h"
#include "lua_sandbox.h"
#include "lua_live.h"
#include "osfile.h"

#define PROG "heapscript"

/* Exit codes besides the script's own. */
#define EXIT_SCRIPT 1            /* the script failed or returned false */
#define EXIT_USAGE 2             /* bad command line, missing script or trace */

void hsi_lua_usage(FILE *to) {
  fprintf(to,
    "usage: " PROG " [-I DIR]... [--timeout S] [--memory MB] [--sandbox]\n"
    "                  [--symbol-path P] SCRIPT [TRACE...] [ARG...] [-- ARG...]\n"
    "\n"
    "Runs the Lua 5.4 script SCRIPT over the ETW traces TRACE... (several\n"
    "files are merged into one time-ordered trace).  Options after the traces\n"
    "go to the script: `" PROG " leaks t.etl --top 10`.  The first word that\n"
    "starts with '-' (not '-' alone) ends the traces; the word after an\n"
    "option is its value, never a trace; a later word naming an existing\n"
    "file is a trace.  -I DIR, --timeout S, --memory MB, --sandbox and\n"
    "--symbol-path P are heapscript's wherever they are: the script never\n"
    "sees them.  Everything after `--` goes to the script: use it for the\n"
    "unusual cases (an argument that names an existing file, or a script\n"
    "option of one of those names).  In the script:\n"
    "  trace      the opened traces (heapscript.Trace), nil if none given\n"
    "  arg        the ARGs, arg[0] = SCRIPT; also passed as ...\n"
    "  heapscript the module (also require \"heapscript\"); require \"lpeg\" works\n"
    "\n"
    "SCRIPT is a file, or the name of a bundled script (\"leaks\" or\n"
    "\"leaks.lua\").  Names, and modules for require (\"rules.default\" is\n"
    "rules/default.lua), are looked up in each -I DIR, then in each\n"
    "directory of HEAPSCRIPT_PATH (separated by ';', or by ':' if there is\n"
    "no ';'), then among the bundled scripts/ and rules/ files.\n"
    "\n"
    "options:\n"
    "  -I DIR     search DIR first (may be repeated)\n"
    "%s"
    "  --symbol-path P  where the PDBs of the trace's images are: _NT_SYMBOL_PATH\n"
    "             syntax (DIR;srv*STORE;cache*DIR); default $_NT_SYMBOL_PATH; the\n"
    "             trace's directory is always searched too (docs/SYMBOLS.md)\n"
    "  --list     list the bundled scripts and rule files\n"
    "  --replay TRACE  run over TRACE played as a live session (real-time\n"
    "             callbacks; --speed N times its pace, N > 0; --fast at once)\n"
    "  --live --pid N | --exe NAME.exe  (Windows) a live heap session;\n"
    "             --duration S stops it; Ctrl-C stops it and the script's\n"
    "             final part runs.  trace:every(S, fn) runs fn(now, info)\n"
    "             every S s of trace time with the events so far\n"
    "  --help     this text\n"
    "\n"
    "exit status: the integer the script returns; 1 if it returns false or\n"
    "raises an error; 0 otherwise; 2 if the command line is wrong, SCRIPT\n"
    "cannot be found (or is a trace, or a bundled module such as report),\n"
    "a TRACE cannot be opened or a limit (--timeout, --memory) is broken.\n"
    "os.exit(n) works.\n"
    "Documentation: docs/API.md; the sandbox: docs/SCRIPTS.md.\n", hsi_lua_limits_help);
}

static void message(const char *msg) {
  fflush(stdout);
  fprintf(stderr, PROG ": %s\n", msg);
  fflush(stderr);
}

/* ---------------------------------------------------------- the module */

void hsi_lua_register(lua_State *L, const char *name, lua_CFunction open) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  luaL_getsubtable(L, -1, "heapscript");
  lua_remove(L, -2);
  lua_pushcfunction(L, open);
  lua_pushvalue(L, -2);
  lua_call(L, 1, 1);
  if (name && !lua_isnil(L, -1)) lua_setfield(L, -2, name);
  else lua_pop(L, 1);
  lua_pop(L, 1);
}

void hsi_lua_weak_registry(lua_State *L, const void *key) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, key) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_newtable(L);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, key);
}

int hsi_lua_open_module(lua_State *L) {
  /* the table is put in package.loaded first, so openers find it there */
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  luaL_getsubtable(L, -1, "heapscript");
  lua_pushliteral(L, HS_VERSION);
  lua_setfield(L, -2, "version");
#define HSI_LUA_RUN_OPENER(name, fn) hsi_lua_register(L, name, fn);
  HSI_LUA_CLASSES(HSI_LUA_RUN_OPENER)
#undef HSI_LUA_RUN_OPENER
  return 1;
}

/* --------------------------------------------------------- search path */

static int is_file(const char *path) { return hsi_is_file(path); }  /* UTF-8 path */

static const struct hsi_embedded *embedded_find(const char *name) {
  const struct hsi_embedded *e;
  for (e = hsi_embedded; e->name; e++)
    if (strcmp(e->name, name) == 0) return e;
  return NULL;
}

const struct hsi_embedded *hsi_lua_bundled(lua_State *L, const char *rel) {
  const struct hsi_embedded *e;
  lua_pushfstring(L, "scripts/%s", rel);
  e = embedded_find(lua_tostring(L, -1));
  lua_pop(L, 1);
  return e ? e : embedded_find(rel);
}

/*
** Load the file `rel` ("leaks.lua", "rules/default.lua"): from the
** directories in the table at `dirs` (if dirs != 0), then, if `bundled`,
** from the embedded "scripts/REL" or "REL".  Returns LUA_OK with the
** chunk and its place (file path, or "scripts/x.lua") pushed;
** LUA_ERRFILE with a message listing every place tried when there is
** none ("\n\tno file 'x'..."); another status with the load error when
** the file is there but does not load.
*/
static int loaded_bundled;   /* search_load's last find was a bundled file */

static int search_load(lua_State *L, int dirs, const char *rel, int bundled) {
  luaL_Buffer tried;
  const struct hsi_embedded *e = NULL;
  lua_Integer i, n = 0;
  int st;
  loaded_bundled = 0;
  if (dirs) {
    dirs = lua_absindex(L, dirs);
    n = luaL_len(L, dirs);
  }
  luaL_buffinit(L, &tried);  /* stays below everything else pushed */
  for (i = 1; i <= n; i++) {
    const char *dir, *path;
    size_t dl;
    lua_geti(L, dirs, i);
    dir = lua_tolstring(L, -1, &dl);
    if (dl > 0 && (dir[dl - 1] == '/' || dir[dl - 1] == '\\'))
      path = lua_pushfstring(L, "%s%s", dir, rel);
    else
      path = lua_pushfstring(L, "%s/%s", dir, rel);
    lua_remove(L, -2);
    if (is_file(path)) {
      st = luaL_loadfilex(L, path, hsi_lua_load_mode());
      if (st == LUA_OK) hsi_lua_sandbox_file(L, path);   /* under --sandbox */
      lua_insert(L, -2);  /* chunk (or message), path */
      if (st != LUA_OK) lua_pop(L, 1);
      lua_remove(L, -2 - (st == LUA_OK));  /* the buffer's slot */
      return st;
    }
    lua_pushfstring(L, "\n\tno file '%s'", path);
    lua_remove(L, -2);
    luaL_addvalue(&tried);
  }
  if (bundled) e = hsi_lua_bundled(L, rel);
  if (e) {
    loaded_bundled = 1;
    lua_pushfstring(L, "@%s", e->name);
    st = luaL_loadbufferx(L, (const char *)e->data, e->len, lua_tostring(L, -1), "t");
    lua_remove(L, -2);
    if (st == LUA_OK) lua_pushstring(L, e->name);
    lua_remove(L, -2 - (st == LUA_OK));
    return st;
  }
  if (bundled) {
    lua_pushfstring(L, "\n\tno bundled 'scripts/%s' or '%s'", rel, rel);
    luaL_addvalue(&tried);
  }
  luaL_pushresult(&tried);
  return LUA_ERRFILE;
}

/*
** package.searchers entries.  Upvalue 1: the list of directories (user
** searcher) or false (bundled searcher).  The user directories come
** right after package.preload, then the bundled files, then Lua's own
** package.path and package.cpath: a module of the system's Lua tree
** (a json.lua of some Debian package) does not replace a bundled one;
** -I and HEAPSCRIPT_PATH do.
*/
static int searcher(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  const char *rel;
  int st, user = lua_toboolean(L, lua_upvalueindex(1));
  rel = luaL_gsub(L, name, ".", "/");
  rel = lua_pushfstring(L, "%s.lua", rel);
  st = search_load(L, user ? lua_upvalueindex(1) : 0, rel, !user);
  if (st == LUA_OK) return 2;  /* loader, and its place as require's 2nd value */
  if (st == LUA_ERRFILE) {
    const char *tried = lua_tostring(L, -1);
    if (tried[0] == '\0') return 0;
    lua_pushstring(L, tried + 2);  /* require adds the first "\n\t" itself */
    return 1;
  }
  return luaL_error(L, "error loading module '%s':\n\t%s", name, lua_tostring(L, -1));
}

/* Push the directory list: -I dirs, then HEAPSCRIPT_PATH. */
static void push_dirs(lua_State *L, char **idirs, int nidirs) {
  const char *env = getenv("HEAPSCRIPT_PATH");
  int i, n = 0;
  lua_createtable(L, nidirs + 4, 0);
  for (i = 0; i < nidirs; i++) {
    lua_pushstring(L, idirs[i]);
    lua_rawseti(L, -2, ++n);
  }
  if (env && *env) {
    /* ':' would cut Windows drive letters, so ';' wins when present */
    char sep = strchr(env, ';') ? ';' : ':';
    const char *p = env;
    while (*p) {
      const char *q = strchr(p, sep);
      size_t len = q ? (size_t)(q - p) : strlen(p);
      if (len > 0) {
        lua_pushlstring(L, p, len);
        lua_rawseti(L, -2, ++n);
      }
      p += len + (q != NULL);
    }
  }
}

/*
** Lua's own default package.path and cpath end in the working directory
** ("./?.lua", "./?.so"; ".\\?.lua" on Windows), which comes before the
** bundled files: a json.lua or rules/default.lua lying in a CI checkout
** would replace heapscript's own modules and rules, outside the sandbox.
** Those entries go; a path the user set (LUA_PATH, LUA_CPATH) is theirs.
*/
static void drop_cwd_entries(lua_State *L, const char *field, const char *env1, const char *env2) {
  const char *p, *e;
  luaL_Buffer b;
  int n = 0;
  if (getenv(env1) || getenv(env2)) return;
  lua_getfield(L, -1, field);
  p = lua_tostring(L, -1);
  if (!p) { lua_pop(L, 1); return; }
  luaL_buffinit(L, &b);
  for (; *p; p = *e ? e + 1 : e) {
    size_t len;
    for (e = p; *e && *e != ';'; e++) {}
    len = (size_t)(e - p);
    if (len >= 2 && p[0] == '.' && (p[1] == '/' || p[1] == '\\')) continue;
    if (n++) luaL_addchar(&b, ';');
    luaL_addlstring(&b, p, len);
  }
  luaL_pushresult(&b);
  lua_setfield(L, -3, field);
  lua_pop(L, 1);
}

static void install_searchers(lua_State *L, int dirs) {
  dirs = lua_absindex(L, dirs);
  lua_getglobal(L, "package");
  drop_cwd_entries(L, "path", "LUA_PATH_5_4", "LUA_PATH");
  drop_cwd_entries(L, "cpath", "LUA_CPATH_5_4", "LUA_CPATH");
  lua_getfield(L, -1, "searchers");
  lua_getglobal(L, "table");
  lua_getfield(L, -1, "insert");
  lua_remove(L, -2);
  lua_pushvalue(L, -1);
  lua_pushvalue(L, -3);
  lua_pushinteger(L, 2);
  lua_pushvalue(L, dirs);
  lua_pushcclosure(L, searcher, 1);
  lua_call(L, 3, 0);           /* table.insert(searchers, 2, user) */
  lua_pushvalue(L, -2);
  lua_pushinteger(L, 3);
  lua_pushboolean(L, 0);
  lua_pushcclosure(L, searcher, 1);
  lua_call(L, 3, 0);           /* table.insert(searchers, 3, bundled) */
  lua_pop(L, 2);
}

/* ------------------------------------------------------------ running */

static lua_State *globalL = NULL;

static void lstop(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted!");
}

static void laction(int i) {
  signal(i, SIG_DFL);  /* a second Ctrl-C kills the process */
  lua_sethook(globalL, lstop, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

#define USAGE_ERROR "heapscript.UsageError"

static int usage_tostring(lua_State *L) {
  luaL_checkudata(L, 1, USAGE_ERROR);
  lua_getiuservalue(L, 1, 1);
  return 1;
}

int hsi_lua_usage_error(lua_State *L, const char *msg) {
  lua_pushstring(L, msg);
  lua_newuserdatauv(L, 0, 1);
  if (luaL_newmetatable(L, USAGE_ERROR)) {
    lua_pushcfunction(L, usage_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_setmetatable(L, -2);
  lua_rotate(L, -2, 1);
  lua_setiuservalue(L, -2, 1);
  return lua_error(L);
}

const char *hsi_lua_checkpath(lua_State *L, int arg) {
  size_t len;
  const char *p = luaL_checklstring(L, arg, &len);
  if (strlen(p) != len) luaL_argerror(L, arg, "a file name with a NUL byte in it");
  return p;
}

int hsi_lua_has_nul(lua_State *L, int idx) {
  size_t len;
  const char *s = lua_tolstring(L, idx, &len);
  return s && strlen(s) != len;
}

int hsi_lua_argerrorf(lua_State *L, int arg, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  return luaL_argerror(L, arg, lua_tostring(L, -1));
}

/* The message of a usage error (hsi_lua_usage_error) at idx, else NULL. */
static const char *usage_message(lua_State *L, int idx) {
  const char *m;
  if (!luaL_testudata(L, idx, USAGE_ERROR)) return NULL;
  lua_getiuservalue(L, idx, 1);
  m = lua_tostring(L, -1);
  lua_pop(L, 1);          /* the string stays: the userdata holds it */
  return m;
}

static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL && usage_message(L, 1)) return 1;   /* as it is: docall knows it */
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
      return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

static int usage_raised;   /* docall's last error was a usage error */

/* Call the function below narg arguments; on error print it and return 1. */
static int docall(lua_State *L, int narg, int nres) {
  int st, base = lua_gettop(L) - narg;
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);
  globalL = L;
  signal(SIGINT, laction);
  st = hsi_lua_limits_pcall(L, narg, nres, base);  /* --timeout, --memory */
  signal(SIGINT, SIG_DFL);
  lua_remove(L, base);
  usage_raised = 0;
  if (st != LUA_OK) {
    /* a broken limit is its one message, whatever the script made of the error */
    const char *limit = hsi_lua_limit_broken(), *usage = usage_message(L, -1);
    usage_raised = usage != NULL;
    message(limit ? limit : usage ? usage : lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  return st;
}

/*
** Damage the traces of the command line had, and the traces the script
** read as its inputs (heapscript.input; lua_trace.c keeps what every
** reader of them skipped): printed on stderr after the script, one line
** a report as `info` prints them, and exit status 1 in place of 0 -- a
** report read from a damaged trace must not look like a sound one.  A
** script's own failure status stays as it is.  The command line's Trace
** is kept in the registry (hsi_lua_trace_set_main), so a script that
** reassigns `trace` changes nothing.
*/
static int damage_status(lua_State *L, int code, int walk) {
  size_t n;
  fflush(stdout);
  n = hsi_lua_trace_report_damage(L, stderr, walk);
  fflush(stderr);
  return n > 0 && code == 0 ? EXIT_SCRIPT : code;
}

int hsi_out_status(int code) {
  int e = fflush(stdout) != 0 ? errno : 0;
  if (!e && !ferror(stdout)) return code;
  fprintf(stderr, "heapscript: cannot write the output (standard output): %s\n", e ? strerror(e) : "a write failed");
  return EXIT_USAGE;
}

/* os.exit as Lua's, but the damage is reported first (see above) and the
   output checked; what was not read is not walked (an exit is often
   --help or a usage error). */
static int os_exit(lua_State *L) {
  int code;
  if (lua_isboolean(L, 1)) code = lua_toboolean(L, 1) ? EXIT_SUCCESS : EXIT_FAILURE;
  else code = (int)luaL_optinteger(L, 1, EXIT_SUCCESS);
  code = hsi_out_status(damage_status(L, code, 0));
  if (lua_toboolean(L, 2)) lua_close(L);
  exit(code);
  return 0;
}

typedef struct cli {
  int argc;
  char **argv;
  char **idirs;         /* -I values (pointers into argv) */
  int nidirs;
  int script;           /* argv index of SCRIPT */
  char **traces;        /* the traces (pointers into argv), cliargs.h's rule */
  int ntraces;
  char **sargs;         /* the script's arguments, in order */
  int nsargs;
  const char *sympath;  /* --symbol-path, or NULL */
  int code;             /* the exit code */
  int live;             /* --live or --replay: the trace is a session */
  hsi_live_opts lo;
  const char **replays; /* --replay values */
  int bundled;          /* SCRIPT is one of the bundled files */
} cli;

/* A trace that would not open is a JSON file (a report of leaks --json,
   given where diff and policy take traces): say where it goes. */
static void json_hint(const cli *c) {
  int i;
  for (i = 0; i < c->ntraces; i++) {
    FILE *f = hsi_fopen(c->traces[i], "rb");
    int ch = ' ';
    if (!f) continue;
    while (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') ch = getc(f);
    fclose(f);
    if (ch == '{')
      fprintf(stderr, PROG ": %s holds JSON, not a trace: a report taken as a baseline goes after "
                      "--baseline (heapscript diff NEW.etl --baseline %s)\n", c->traces[i], c->traces[i]);
  }
}

static void set_arg(lua_State *L, const cli *c) {
  int i;
  lua_createtable(L, c->nsargs, c->script + 1);
  for (i = 0; i < c->script; i++) {      /* program and options: negative */
    lua_pushstring(L, c->argv[i]);
    lua_rawseti(L, -2, i - c->script);
  }
  lua_pushstring(L, c->argv[c->script]);
  lua_rawseti(L, -2, 0);
  for (i = 0; i < c->nsargs; i++) {
    lua_pushstring(L, c->sargs[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setglobal(L, "arg");
}

static int pmain(lua_State *L) {
  cli *c = (cli *)lua_touserdata(L, 1);
  const char *name = c->argv[c->script];
  int st, dirs, i, named = is_file(name);   /* a file, else a name on the search path */
  size_t len = strlen(name);

  c->code = EXIT_SCRIPT;
  luaL_checkversion(L);
  luaL_openlibs(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_lpeg);
  lua_setfield(L, -2, "lpeg");
  lua_pushcfunction(L, hsi_lua_open_module);
  lua_setfield(L, -2, "heapscript");
  lua_pop(L, 1);
  luaL_requiref(L, "heapscript", hsi_lua_open_module, 1);
  lua_pop(L, 1);

  if (c->sympath) {
    lua_pushstring(L, c->sympath);
    lua_setfield(L, LUA_REGISTRYINDEX, HSI_LUA_SYMBOL_PATH_KEY);
  }
  push_dirs(L, c->idirs, c->nidirs);
  dirs = lua_gettop(L);
  if (named) {              /* then the script's own directory, as the sandbox reads it */
    hsi_lua_push_dir(L, name);
    lua_rawseti(L, dirs, (lua_Integer)luaL_len(L, dirs) + 1);
  }
  hsi_lua_sandbox_setup(L, dirs, c->traces, c->ntraces);
  install_searchers(L, dirs);

  /* the script: a file, else a name on the search path; `heapscript t.etl`
     left the script out: said before Lua reads the trace as source (a
     syntax error at its line 1 said nothing useful) */
  if (named && len > 4 && hsi_strieq(name + len - 4, ".etl")) {
    fprintf(stderr, PROG ": %s is a trace, not a script: name a script first (heapscript leaks %s; "
                    "heapscript --list names the bundled ones)\n", name, name);
    c->code = EXIT_USAGE;
    return 0;
  }
  if (named) {
    st = luaL_loadfilex(L, name, hsi_lua_load_mode());
    if (st == LUA_OK) hsi_lua_sandbox_file(L, name);   /* under --sandbox */
  } else {
    size_t n = strlen(name);
    const char *rel = name;
    if (n < 4 || strcmp(name + n - 4, ".lua") != 0)
      rel = lua_pushfstring(L, "%s.lua", name);
    st = search_load(L, dirs, rel, 1);
    if (st == LUA_OK) c->bundled = loaded_bundled;
    if (st == LUA_ERRFILE) {
      message(lua_pushfstring(L, "cannot find script '%s':\n\tno file '%s'%s",
                              name, name, lua_tostring(L, -1)));
      c->code = EXIT_USAGE;
      return 0;
    }
    if (st == LUA_OK) lua_pop(L, 1);
  }
  if (st != LUA_OK) {
    message(lua_tostring(L, -1));
    return 0;
  }
  /* chunk on top */

  if (c->live) {
    if (hsi_lua_live_open(L, &c->lo) < 0) {
      message(lua_tostring(L, -1));
      c->code = EXIT_USAGE;
      return 0;
    }
  } else if (c->ntraces > 0) {
    if (hsi_lua_trace_open(L, (const char *const *)c->traces, c->ntraces) < 0) {
      message(lua_tostring(L, -1));
      json_hint(c);
      c->code = EXIT_USAGE;
      return 0;
    }
  } else {
    lua_pushnil(L);
  }
  hsi_lua_trace_set_main(L, -1);
  lua_setglobal(L, "trace");
  set_arg(L, c);
  lua_getglobal(L, "os");
  lua_pushcfunction(L, os_exit);
  lua_setfield(L, -2, "exit");
  lua_pop(L, 1);

  luaL_checkstack(L, c->nsargs + 3, "too many arguments to the script");
  for (i = 0; i < c->nsargs; i++) lua_pushstring(L, c->sargs[i]);
  if (docall(L, c->nsargs, 1) != LUA_OK) {
    c->code = hsi_lua_limit_broken() || usage_raised ? EXIT_USAGE : damage_status(L, c->code, 1);
    return 0;
  }
  if (c->live) {                  /* a script that never used `trace` waits now */
    lua_pushcfunction(L, hsi_lua_live_wait);
    if (docall(L, 0, 0) != LUA_OK) return 0;
  }
  if (c->bundled && lua_type(L, -1) == LUA_TTABLE) {   /* a bundled module run as a script */
    fprintf(stderr, PROG ": %s is a module for scripts (require \"%s\"), not a script to run; "
                    "heapscript --list names the bundled files\n", name, name);
    c->code = EXIT_USAGE;
    return 0;
  }
  if (lua_type(L, -1) == LUA_TNUMBER && lua_isinteger(L, -1))
    c->code = (int)lua_tointeger(L, -1);
  else if (lua_type(L, -1) == LUA_TBOOLEAN && !lua_toboolean(L, -1))
    c->code = EXIT_SCRIPT;
  else
    c->code = 0;
  c->code = damage_status(L, c->code, 1);
  return 0;
}


/* One live-session option at argv[*i]: 1 taken, 0 not one, -1 bad. */
static int live_option(cli *c, int argc, char **argv, int *i) {
  const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
  char *end = NULL;
  if (strcmp(a, "--fast") == 0) { c->lo.speed = 0; return 1; }
  if (strcmp(a, "--live") == 0) { c->live = 1; c->lo.replay = 0; return 1; }
  if (strcmp(a, "--replay") && strcmp(a, "--speed") && strcmp(a, "--pid") &&
      strcmp(a, "--exe") && strcmp(a, "--duration")) return 0;
  if (!v) { fprintf(stderr, PROG ": option %s needs a value\n", a); return -1; }
  (*i)++;
  if (strcmp(a, "--replay") == 0) {
    c->live = 1; c->lo.replay = 1;
    c->replays[c->lo.npaths++] = v;
    return 1;
  }
  if (strcmp(a, "--exe") == 0) { c->lo.exe = v; return 1; }
  if (strcmp(a, "--pid") == 0) {
    c->lo.pid = strtol(v, &end, 10);
    if (end != v && !*end && c->lo.pid > 0) return 1;
  } else {
    double d = strtod(v, &end);
    /* --speed 0 would be --fast (replay.h: 0 is no pacing), which a
       speed of nothing does not say: a speed is above 0 */
    if (end != v && !*end && (a[2] == 's' ? d > 0 : d >= 0) && d < 1e9) {
      if (a[2] == 's') c->lo.speed = d; else c->lo.duration = d;
      return 1;
    }
    if (a[2] == 's') {
      fprintf(stderr, PROG ": option --speed: bad value '%s': expected N times the trace's pace, above 0 and "
              "below 1e+09 (--fast: at once)\n", v);
      return -1;
    }
  }
  fprintf(stderr, PROG ": option %s: bad value '%s'\n", a, v);
  return -1;
}

static void list_bundled(void) {
  const struct hsi_embedded *e;
  for (e = hsi_embedded; e->name; e++)
    printf("%s\n", e->name);
}

/* heapscript's own options that may also follow the traces: the words one takes. */
static int own_words(const char *w) {
  if (strcmp(w, "-I") == 0 || strcmp(w, "--timeout") == 0 || strcmp(w, "--memory") == 0) return 2;
  if (strcmp(w, "--sandbox") == 0 || strncmp(w, "--symbol-path=", 14) == 0) return 1;
  if (strcmp(w, "--symbol-path") == 0) return 2;
  return strncmp(w, "-I", 2) == 0 ? 1 : 0;
}

/* -I DIR, -IDIR, and the limits (--timeout S, --memory MB, --sandbox:
   lua_sandbox.h) at argv[*i]: 0 done (*i on its last word), EXIT_USAGE
   with a message, -1 when argv[*i] is not one of them. */
static int own_option(cli *c, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  int k;
  if (strcmp(a, "-I") == 0) {
    if (*i + 1 >= argc) {
      message("option -I needs a directory");
      return EXIT_USAGE;
    }
    c->idirs[c->nidirs++] = argv[++*i];
  } else if (strncmp(a, "-I", 2) == 0) {
    c->idirs[c->nidirs++] = argv[*i] + 2;
  } else if (strncmp(a, "--symbol-path=", 14) == 0) {
    c->sympath = a + 14;
  } else if (strcmp(a, "--symbol-path") == 0) {
    if (*i + 1 >= argc) {
      message("option --symbol-path needs a symbol path (DIR;srv*STORE;...)");
      return EXIT_USAGE;
    }
    c->sympath = argv[++*i];
  } else if ((k = hsi_lua_limits_option(argc, argv, *i)) != 0) {
    if (k < 0) return EXIT_USAGE;
    *i += k - 1;
  } else {
    return -1;
  }
  return 0;
}

/* The words after SCRIPT: traces, the script's arguments, and heapscript's
   own options wherever they are (cliargs.h).  0, or an exit status. */
static int split_words(cli *c, int argc, char **argv) {
  int first = c->script + 1, n = argc - first, i, rc;
  unsigned char *kind = (unsigned char *)malloc((size_t)(n > 0 ? n : 1));
  if (!kind) { message("not enough memory"); return EXIT_SCRIPT; }
  hsi_cli_classify(n, argv + first, is_file, own_words, kind);
  for (i = 0; i < n; i++) {
    if (kind[i] == HSI_ARG_TRACE) c->traces[c->ntraces++] = argv[first + i];
    else if (kind[i] == HSI_ARG_SCRIPT) c->sargs[c->nsargs++] = argv[first + i];
    else if (kind[i] == HSI_ARG_OWN) {
      int at = first + i;
      if ((rc = own_option(c, argc, argv, &at)) != 0) { free(kind); return rc; }
      i = at - first;
    }
  }
  free(kind);
  return 0;
}

int hsi_lua_cli(int argc, char **argv) {
  cli c;
  lua_State *L;
  const char *valued = NULL;   /* the option that took the last word as its value */
  int i, st, rc;

  memset(&c, 0, sizeof c);
  c.argc = argc;
  c.argv = argv;
  c.idirs = (char **)malloc(sizeof *c.idirs * (size_t)(argc > 0 ? argc : 1) * 3);
  c.replays = (const char **)malloc(sizeof *c.replays * (size_t)(argc > 0 ? argc : 1));
  c.lo.speed = 1;
  if (!c.idirs || !c.replays) {
    free(c.idirs); free(c.replays);
    message("not enough memory");
    return EXIT_SCRIPT;
  }
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    valued = NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      hsi_lua_usage(stdout);
      free(c.idirs); free(c.replays);
      return 0;
    } else if (strcmp(a, "--list") == 0) {
      list_bundled();
      free(c.idirs); free(c.replays);
      return 0;
    } else if ((rc = own_option(&c, argc, argv, &i)) >= 0) {
      if (rc) { free(c.idirs); free(c.replays); return rc; }
      if (argv[i] != a) valued = a;
    } else if ((st = live_option(&c, argc, argv, &i)) != 0) {
      if (st < 0) { free(c.idirs); free(c.replays); return EXIT_USAGE; }
      if (argv[i] != a) valued = a;
    } else if (a[0] == '-' && a[1] != '\0') {
      fprintf(stderr, PROG ": unknown option '%s'\n", a);
      hsi_lua_usage(stderr);
      free(c.idirs); free(c.replays);
      return EXIT_USAGE;
    } else {
      break;
    }
  }
  if (i >= argc) {
    /* `heapscript -I DIR`, or `--symbol-path leaks`: the script went as the value */
    if (valued) fprintf(stderr, PROG ": no script given: %s took %s as its value\n", valued, argv[argc - 1]);
    else message("no script given");
    hsi_lua_usage(stderr);
    free(c.idirs); free(c.replays);
    return EXIT_USAGE;
  }
  c.script = i;
  /* one allocation, three lists of at most argc words: -I dirs, traces, script args */
  c.traces = c.idirs + argc;
  c.sargs = c.traces + argc;
  if ((rc = split_words(&c, argc, argv)) != 0) { free(c.idirs); free(c.replays); return rc; }
  c.lo.paths = c.replays;
  if (c.live && c.ntraces > 0) {
    fprintf(stderr, PROG ": with --live or --replay the session is the trace: no TRACE after SCRIPT\n");
    free(c.idirs); free(c.replays);
    return EXIT_USAGE;
  }

  L = hsi_lua_newstate();
  if (L == NULL) {
    message("cannot create Lua state: not enough memory");
    free(c.idirs); free(c.replays);
    return EXIT_SCRIPT;
  }
  lua_pushcfunction(L, pmain);
  lua_pushlightuserdata(L, &c);
  st = lua_pcall(L, 1, 0, 0);
  if (st != LUA_OK) {
    message(lua_tostring(L, -1));
    c.code = EXIT_SCRIPT;
  }
  if (c.live) hsi_lua_live_shutdown(L, c.code == EXIT_SCRIPT ? "script error" : "the script ended");
  lua_close(L);
  free(c.idirs); free(c.replays);
  return c.code;
}
