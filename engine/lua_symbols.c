/*
** lua_symbols.c -- class heapscript.Symbols: a symbol map file
** (engine/symmap.h) loaded for naming stack frames, and
** heapscript.symbols().
**
** The most recently loaded (or chosen) map is "the current one": it is
** kept in the registry under HSI_LUA_SYMBOLS_KEY, which also keeps it
** alive, and hsi_lua_symbols() hands it to the analysis.  A Symbols
** object has no close method on purpose: an analysis may hold its map
** as a procmap resolver for as long as the object lives.
*/
#include <string.h>

#include "lua_run.h"
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
  path = luaL_checkstring(L, 1);
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

/* The opener (lua_run.h): heapscript.symbols, the metatable, the methods. */
int hsi_lua_open_symbols(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_pushcfunction(L, s_symbols);
  lua_setfield(L, 1, "symbols");
  luaL_newmetatable(L, HSI_LUA_SYMBOLS);
  luaL_setfuncs(L, metameth, 0);
  luaL_newlib(L, methods);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__index");
  return 1;
}
