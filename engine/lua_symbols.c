/*
** lua_symbols.c -- symbols in Lua: class heapscript.Symbols (a symbol
** map file, engine/symmap.h), heapscript.symbols(), trace:symbols(), and
** the setup of each analysis's symbol layer (engine/sym.h).
**
** The most recently loaded (or chosen) map is "the current one": it is
** kept in the registry under HSI_LUA_SYMBOLS_KEY, which also keeps it
** alive, and hsi_lua_symbols() hands it to the analysis.  A Symbols
** object has no close method on purpose: an analysis's symbol layer
** points at the current map for as long as it is current.
**
** The symbol path of a trace is, in order: trace:symbols{path = ...},
** the --symbol-path option of the command line (registry
** HSI_LUA_SYMBOL_PATH_KEY), the _NT_SYMBOL_PATH environment variable.
** The directories of the trace's files are always searched after it.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_run.h"
#include "lua_sandbox.h"
#include "analysis.h"
#include "symmap.h"

#define HSI_LUA_SYMBOLS "heapscript.Symbols"
#define HSI_LUA_SYMBOLS_KEY "heapscript.symbols"

typedef struct Symbols {
  hsi_symmap *sm;              /* NULL only while loading */
} Symbols;

#define tosymbols(L, i) ((Symbols *)luaL_checkudata(L, i, HSI_LUA_SYMBOLS))

void *hsi_lua_symbols(lua_State *L) {
  Symbols *s;
  lua_getfield(L, LUA_REGISTRYINDEX, HSI_LUA_SYMBOLS_KEY);
  s = (Symbols *)luaL_testudata(L, -1, HSI_LUA_SYMBOLS);
  lua_pop(L, 1);
  return s ? s->sm : NULL;
}

static void set_current(lua_State *L, int idx) {
  lua_pushvalue(L, idx);
  lua_setfield(L, LUA_REGISTRYINDEX, HSI_LUA_SYMBOLS_KEY);
}

/*
** heapscript.symbols(path) -> Symbols | nil, message: load a map and make
** it current.  heapscript.symbols(sym) makes a loaded one current again,
** heapscript.symbols(false) forgets the current one, and
** heapscript.symbols() returns it (nil if none).
*/
static int s_symbols(lua_State *L) {
  char err[HS_ERRLEN];
  const char *path;
  Symbols *s;
  if (lua_isnone(L, 1)) {
    lua_getfield(L, LUA_REGISTRYINDEX, HSI_LUA_SYMBOLS_KEY);
    return 1;
  }
  if (lua_isboolean(L, 1) && !lua_toboolean(L, 1)) {
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, HSI_LUA_SYMBOLS_KEY);
    return 0;
  }
  if (luaL_testudata(L, 1, HSI_LUA_SYMBOLS)) {
    set_current(L, 1);
    lua_settop(L, 1);
    return 1;
  }
  path = hsi_lua_checkpath(L, 1);
  s = (Symbols *)lua_newuserdatauv(L, sizeof *s, 1);
  s->sm = NULL;
  luaL_setmetatable(L, HSI_LUA_SYMBOLS);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);                 /* the path, for __tostring */
  if (hsi_symmap_load(&s->sm, path, err, sizeof err) < 0) {
    luaL_pushfail(L);
    lua_pushstring(L, err);
    return 2;
  }
  set_current(L, -1);
  return 1;
}

static hsi_symmap *checkmap(lua_State *L) {
  Symbols *s = tosymbols(L, 1);
  if (!s->sm) luaL_error(L, "heapscript.Symbols was not loaded");
  return s->sm;
}

/* sym:lookup(module, rva) -> name, offset | nil */
static int s_lookup(lua_State *L) {
  hsi_symmap *sm = checkmap(L);
  const char *module = luaL_checkstring(L, 2);
  lua_Integer rva = luaL_checkinteger(L, 3);
  const char *name;
  uint64_t off;
  if (!hsi_symmap_lookup(sm, module, (uint64_t)rva, &name, &off)) {
    luaL_pushfail(L);
    return 1;
  }
  lua_pushstring(L, name);
  lua_pushinteger(L, (lua_Integer)off);
  return 2;
}

/* sym:modules() -> {{name=, symbols=}, ...} in file order */
static int s_modules(lua_State *L) {
  hsi_symmap *sm = checkmap(L);
  size_t i, n = hsi_symmap_nmodules(sm), k;
  lua_createtable(L, (int)n, 0);
  for (i = 0; i < n; i++) {
    const char *name = hsi_symmap_module(sm, i, &k);
    lua_createtable(L, 0, 2);
    lua_pushstring(L, name);
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, (lua_Integer)k);
    lua_setfield(L, -2, "symbols");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

static int s_len(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)hsi_symmap_count(checkmap(L)));
  return 1;
}

static int s_gc(lua_State *L) {
  Symbols *s = tosymbols(L, 1);
  hsi_symmap_free(s->sm);
  s->sm = NULL;
  return 0;
}

static int s_tostring(lua_State *L) {
  Symbols *s = tosymbols(L, 1);
  lua_getiuservalue(L, 1, 1);
  lua_pushfstring(L, "heapscript.Symbols (%s: %d symbols in %d modules)", lua_tostring(L, -1),
                  (int)hsi_symmap_count(s->sm), (int)hsi_symmap_nmodules(s->sm));
  return 1;
}

static const luaL_Reg methods[] = {
  {"lookup", s_lookup},
  {"modules", s_modules},
  {NULL, NULL}
};

static const luaL_Reg metameth[] = {
  {"__index", NULL},  /* placeholder: the method table */
  {"__len", s_len},
  {"__gc", s_gc},
  {"__tostring", s_tostring},
  {NULL, NULL}
};

/* ------------------------------------------------ the symbol layer */

static const char paths_key = 'P';   /* registry: Trace -> its symbol path (weak keys) */

static void to_stderr(void *ud, const char *msg) {
  (void)ud;
  fflush(stdout);
  fprintf(stderr, "heapscript: %s\n", msg);
  fflush(stderr);
}

void hsi_lua_syms_prepare(lua_State *L, hsi_syms *sy) {
  hsi_syms_set_map(sy, (const hsi_symmap *)hsi_lua_symbols(L));
}

void hsi_lua_syms_setup(lua_State *L, int tidx, hsi_syms *sy) {
  hs_reader *r = hsi_lua_checkreader(L, tidx);
  const char *path = NULL;
  int i, top = lua_gettop(L);
  tidx = lua_absindex(L, tidx);
  hsi_syms_on_message(sy, to_stderr, NULL);
  for (i = 0; i < hs_reader_nfiles(r); i++) {
    const char *f = hs_reader_path(r, i), *p, *slash = NULL;
    for (p = f; *p; p++) if (*p == '/' || *p == '\\') slash = p;
    if (!slash) lua_pushliteral(L, ".");
    else if (slash == f) lua_pushlstring(L, f, 1);
    else lua_pushlstring(L, f, (size_t)(slash - f));
    if (hsi_syms_add_dir(sy, lua_tostring(L, -1)) < 0) luaL_error(L, "not enough memory");
    lua_pop(L, 1);
  }
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &paths_key) == LUA_TTABLE) {
    lua_pushvalue(L, tidx);
    lua_rawget(L, -2);
    if (lua_type(L, -1) == LUA_TSTRING) path = lua_tostring(L, -1);
  }
  if (!path && lua_getfield(L, LUA_REGISTRYINDEX, HSI_LUA_SYMBOL_PATH_KEY) == LUA_TSTRING)
    path = lua_tostring(L, -1);
  if (!path) path = getenv("_NT_SYMBOL_PATH");
  if (hsi_syms_set_path(sy, path) < 0) luaL_error(L, "not enough memory");
  lua_settop(L, top);
}

#define SETS(k, v) (lua_pushstring(L, v), lua_setfield(L, -2, k))
#define SETI(k, v) (lua_pushinteger(L, (lua_Integer)(v)), lua_setfield(L, -2, k))

/*
** trace:symbols{path = P} -> trace: the symbol path of this trace (false:
** back to --symbol-path / _NT_SYMBOL_PATH).  Nothing is searched yet.
** trace:symbols() -> {{module=, pdb={name=, guid=, age=}, status=, path=,
** detail=, damage=, map_symbols=, processes=}, ...}: every image identity
** of the trace, its PDB searched for now (this opens PDBs).
*/
static int t_symbols(lua_State *L) {
  hsi_analysis *a;
  hsi_syms *sy;
  const hsi_sym_image *rep;
  long n, i;
  hsi_lua_checkreader(L, 1);
  if (lua_istable(L, 2)) {
    lua_settop(L, 2);
    lua_pushnil(L);
    while (lua_next(L, 2)) {
      if (lua_type(L, -2) != LUA_TSTRING || strcmp(lua_tostring(L, -2), "path") != 0)
        return luaL_error(L, "trace:symbols: unknown option '%s' (known: path)", luaL_tolstring(L, -2, NULL));
      lua_pop(L, 1);
    }
    lua_getfield(L, 2, "path");                              /* 3 */
    if (!lua_isstring(L, 3) && !(lua_isboolean(L, 3) && !lua_toboolean(L, 3)) && !lua_isnil(L, 3))
      return luaL_error(L, "trace:symbols: path: a symbol path string or false expected, got %s", luaL_typename(L, 3));
    if (lua_isstring(L, 3) && hsi_lua_has_nul(L, 3))
      return luaL_error(L, "trace:symbols: path: a symbol path with a NUL byte in it");
    /* a path names directories to open files in: not the sandbox's to choose */
    if (lua_isstring(L, 3) && hsi_lua_sandbox_caller(L))
      return luaL_error(L, "trace:symbols: path: not available in the sandbox (it reads only below -I, "
                           "HEAPSCRIPT_PATH and its scripts' directories); give --symbol-path on the command line");
    hsi_lua_weak_registry(L, &paths_key);
    lua_pushvalue(L, 1);
    if (lua_isstring(L, 3)) lua_pushvalue(L, 3); else lua_pushnil(L);
    lua_rawset(L, -3);
    if ((a = hsi_lua_trace_analysis(L, 1, 0)) != NULL) hsi_lua_syms_setup(L, 1, hsi_analysis_syms(a));
    lua_settop(L, 1);
    return 1;
  }
  if (!lua_isnoneornil(L, 2)) return luaL_typeerror(L, 2, "table of options or nothing");
  lua_settop(L, 1);
  a = hsi_lua_trace_analysis(L, 1, 1);                       /* 2: keeps a alive */
  sy = hsi_analysis_syms(a);
  hsi_lua_syms_prepare(L, sy);
  if ((n = hsi_syms_report(sy, &rep)) < 0) return luaL_error(L, "not enough memory");
  lua_createtable(L, (int)n, 0);
  for (i = 0; i < n; i++) {
    const hsi_sym_image *r = &rep[i];
    lua_createtable(L, 0, 10);
    SETS("module", r->module);
    if (r->has_id) {
      char g[HS_GUID_STRLEN], key[HSI_SYMKEY_LEN];
      hs_guid_format(&r->guid, g);
      hsi_sym_key(&r->guid, r->age, key);
      lua_createtable(L, 0, 4);
      SETS("name", r->pdb_name);
      SETS("guid", g);
      SETI("age", r->age);
      SETS("key", key);
      lua_setfield(L, -2, "pdb");
    }
    SETS("status", hsi_sym_status_name(r->status));
    if (*r->path) SETS("path", r->path);
    if (*r->detail) SETS("detail", r->detail);
    if (*r->damage) SETS("damage", r->damage);
    SETI("map_symbols", r->map_symbols);
    SETI("processes", r->processes);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static const luaL_Reg trace_methods[] = {
  {"symbols", t_symbols},
  {NULL, NULL}
};

/* The opener (lua_run.h): heapscript.symbols, trace:symbols, the metatable, the methods. */
int hsi_lua_open_symbols(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  if (lua_getfield(L, 1, "Trace") != LUA_TTABLE)
    return luaL_error(L, "heapscript.Trace must be registered before heapscript.Symbols");
  luaL_setfuncs(L, trace_methods, 0);
  lua_pop(L, 1);
  lua_pushcfunction(L, s_symbols);
  lua_setfield(L, 1, "symbols");
  luaL_newmetatable(L, HSI_LUA_SYMBOLS);
  luaL_setfuncs(L, metameth, 0);
  luaL_newlib(L, methods);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__index");
  return 1;
}
