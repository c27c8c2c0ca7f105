/*
** lua_stack.c -- class heapscript.Stack: one interned call stack of an
** allocation analysis, as one process instance saw it.
**
** A Stack is a stack id (stacks.h) plus the process instance and time
** whose loaded images name its frames, through the symbol layer (sym.h):
** "module!Function+0xoff [file:line]" from a PDB or a symbol map, else
** "module+0xRVA".  An address in inlined code is one frame per level.
** The frame strings are made on first use and kept in the Stack's user
** value.  hsi_lua_stack_push hands out one object per (stack id, instance,
** era of the instance: procmap.h), kept in the caller's cache for as long as the analysis lives (like an
** interned string), so the frames of a stack are formatted once however
** many records, groups and loops ask for it.
**
** The layer belongs to the analysis; the current symbol map
** (heapscript.symbols, lua_symbols.c) is handed to it before each
** naming, and frames named under another map or path are named again.
*/
#include <string.h>

#include "lua_run.h"
#include "analysis.h"

typedef struct Stack {
  const hsi_analysis *a;       /* kept alive by user value 1 (its owner) */
  uint32_t id, inst;
  uint32_t era;                /* the instance's era at ts (hsi_procmap_era): 0, most */
  int64_t ts;                  /* when the frames are named (images loaded then) */
  size_t n;                    /* frames */
  uint32_t gen;                /* the symbol layer's generation the cached frames have */
} Stack;

/* User values of a Stack. */
enum { UV_OWNER = 1, UV_FRAMES, UV_COUNT_ = UV_FRAMES };

#define tostack(L, i) ((Stack *)luaL_checkudata(L, i, HSI_LUA_STACK))

/* Key, in the caller's cache table, of the table of Stack objects, and
   the key of one in it. */
static const char objects_key = 'S';
static lua_Integer stack_key(uint32_t id, uint32_t inst, uint32_t era) {
  return (lua_Integer)(((uint64_t)id << 32) | (era ? 0x80000000u | era : inst));
}

void hsi_lua_stack_push(lua_State *L, int owner, int cache, const struct hsi_analysis *a,
                        uint32_t id, uint32_t inst, int64_t ts) {
  uint32_t era = hsi_procmap_era(hsi_analysis_procmap(a), inst, ts);
  lua_Integer key = stack_key(id, inst, era);
  Stack *s;
  owner = lua_absindex(L, owner);
  cache = lua_absindex(L, cache);
  if (lua_rawgetp(L, cache, &objects_key) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, 0, 16);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, cache, &objects_key);
  }
  if (lua_rawgeti(L, -1, key) == LUA_TUSERDATA) {
    lua_remove(L, -2);
    return;
  }
  lua_pop(L, 1);
  s = (Stack *)lua_newuserdatauv(L, sizeof *s, UV_COUNT_);
  s->a = a;
  s->id = id;
  s->inst = inst;
  s->era = era;
  s->ts = ts;
  s->n = 0;
  s->gen = 0;
  hsi_stacks_frames(hsi_analysis_stacks(a), id, &s->n);
  luaL_setmetatable(L, HSI_LUA_STACK);
  lua_pushvalue(L, owner);
  lua_setiuservalue(L, -2, UV_OWNER);
  lua_pushvalue(L, -1);
  lua_rawseti(L, -3, key);
  lua_remove(L, -2);
}

/*
** Push a new table of the Stack's frames, innermost first, as made by
** each(): one entry per frame the symbol layer gives for each address
** (one per inline level).  each() pushes one value for frame f of addr.
*/
typedef void (*frame_fn)(lua_State *L, const hsi_symframe *f, uint64_t addr);

static void pushlist(lua_State *L, Stack *s, hsi_syms *sy, frame_fn each) {
  const uint64_t *addr;
  size_t n, i;
  lua_Integer k = 0;
  addr = hsi_stacks_frames(hsi_analysis_stacks(s->a), s->id, &n);
  lua_createtable(L, (int)n, 0);
  for (i = 0; i < n; i++) {
    hsi_symframe f[HSI_SYM_MAXDEPTH];
    int j, nf = hsi_syms_resolve(sy, s->inst, addr[i], s->ts, f, HSI_SYM_MAXDEPTH);
    for (j = 0; j < nf; j++) {
      each(L, &f[j], addr[i]);
      lua_rawseti(L, -2, ++k);
    }
  }
}

static void frame_text(lua_State *L, const hsi_symframe *f, uint64_t addr) {
  char buf[512];
  size_t len = hsi_symframe_format(f, buf, sizeof buf);
  (void)addr;
  if (len < sizeof buf) {
    lua_pushlstring(L, buf, len);
  } else {  /* a long name or path: format again into a buffer that fits */
    luaL_Buffer b;
    char *p = luaL_buffinitsize(L, &b, len + 1);
    hsi_symframe_format(f, p, len + 1);
    luaL_pushresultsize(&b, len);
  }
}

/*
** Push the frame strings of the Stack at idx, made on first use by the
** analysis's symbol layer (sym.h).  They are made again when the layer
** forgot its frames (a new map or symbol path).
*/
static int pushframes(lua_State *L, int idx) {
  Stack *s = tostack(L, idx);
  hsi_syms *sy = hsi_analysis_syms(s->a);
  idx = lua_absindex(L, idx);
  hsi_lua_syms_prepare(L, sy);
  if (lua_getiuservalue(L, idx, UV_FRAMES) == LUA_TTABLE && s->gen == hsi_syms_generation(sy))
    return lua_gettop(L);
  lua_pop(L, 1);
  pushlist(L, s, sy, frame_text);
  s->gen = hsi_syms_generation(sy);
  lua_pushvalue(L, -1);
  lua_setiuservalue(L, idx, UV_FRAMES);
  return lua_gettop(L);
}

/*
** Push the function that tests one frame against the pattern at pat and
** return how many arguments besides the frame it takes before it:
** string.find(frame, pat) for a Lua pattern, pat:match(frame) for an
** LPeg pattern, pat(frame) for a function.
*/
static int matcher(lua_State *L, int pat) {
  switch (lua_type(L, pat)) {
  case LUA_TSTRING:
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_getfield(L, -1, "string");
    if (lua_type(L, -1) != LUA_TTABLE || lua_getfield(L, -1, "find") != LUA_TFUNCTION)
      luaL_error(L, "stack patterns need the string library (string.find)");
    lua_replace(L, -3);
    lua_pop(L, 1);
    return 0;
  case LUA_TFUNCTION:
    lua_pushvalue(L, pat);
    return 0;
  case LUA_TUSERDATA:
    if (luaL_testudata(L, pat, "lpeg-pattern")) {
      lua_getfield(L, pat, "match");
      return 1;
    }
    /* fall through */
  default:
    return luaL_error(L, "stack pattern: Lua pattern string, LPeg pattern or function expected, got %s",
                      luaL_typename(L, pat));
  }
}

int hsi_lua_stack_match(lua_State *L, int idx, int pat) {
  int frames, fn, pre, found = 0;
  lua_Integer i, n;
  idx = lua_absindex(L, idx);
  pat = lua_absindex(L, pat);
  frames = pushframes(L, idx);
  pre = matcher(L, pat);
  fn = lua_gettop(L);
  n = (lua_Integer)lua_rawlen(L, frames);
  for (i = 1; i <= n && !found; i++) {
    lua_pushvalue(L, fn);
    if (pre) lua_pushvalue(L, pat);
    lua_rawgeti(L, frames, i);
    if (lua_type(L, pat) == LUA_TSTRING) {
      lua_pushvalue(L, pat);
      int st = lua_pcall(L, 2, 1, 0);
      if (st == LUA_ERRRUN)                  /* a malformed pattern: said where the script asked */
        luaL_error(L, "stack pattern '%s': %s", lua_tostring(L, pat), lua_tostring(L, -1));
      else if (st != LUA_OK)
        lua_error(L);                        /* out of memory, a limit: as they came */
    } else {
      lua_call(L, 1 + pre, 1);
    }
    found = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  lua_settop(L, frames - 1);
  return found;
}

/* -------------------------------------------------------------- methods */

/* s:frames() -> {frame, ...}: a new table each call (the cache stays private) */
static int s_frames(lua_State *L) {
  int t = pushframes(L, 1);
  lua_Integer i, n = (lua_Integer)lua_rawlen(L, t);
  lua_createtable(L, (int)n, 0);
  for (i = 1; i <= n; i++) {
    lua_rawgeti(L, t, i);
    lua_rawseti(L, -2, i);
  }
  return 1;
}

/* s:frame(i) -> frame string | nil (i from 1, innermost; negative from the outermost) */
static int s_frame(lua_State *L) {
  lua_Integer i = (tostack(L, 1), luaL_checkinteger(L, 2));
  int t = pushframes(L, 1);
  lua_Integer n = (lua_Integer)lua_rawlen(L, t);
  if (i < 0) i += n + 1;
  if (i < 1 || i > n) {
    lua_pushnil(L);
    return 1;
  }
  lua_rawgeti(L, t, i);
  return 1;
}

/*
** The frames root first, each written by fmt (as hsi_symframe_flame),
** joined by ';'; inline levels left out when `inlines` is 0.  Written into
** out (cap bytes); returns the whole text's length, as snprintf: the text
** is whole when that is under cap, else it was cut, and is asked again
** with room for it.  Made in C: a report of 100,000 stacks would
** otherwise make and match a Lua string per frame.
*/
typedef size_t (*frame_fmt)(const hsi_symframe *f, char *out, size_t cap);

static size_t joined(const Stack *s, hsi_syms *sy, frame_fmt fmt, int inlines, char *out,
                     size_t cap) {
  const uint64_t *addr;
  size_t n, i, len = 0;
  int first = 1;
  addr = hsi_stacks_frames(hsi_analysis_stacks(s->a), s->id, &n);
  for (i = n; i-- > 0;) {
    hsi_symframe f[HSI_SYM_MAXDEPTH];
    int j = hsi_syms_resolve(sy, s->inst, addr[i], s->ts, f, HSI_SYM_MAXDEPTH);
    while (j-- > 0) {
      char one[256];
      size_t k;
      if (!inlines && f[j].kind == HSI_SYMF_INLINE) continue;
      if (!first) {
        if (len < cap) out[len] = ';';
        len++;
      }
      first = 0;
      if (len < cap && cap - len >= sizeof one) k = fmt(&f[j], out + len, cap - len);
      else {                               /* near the end: whole frames only */
        k = fmt(&f[j], one, sizeof one);
        if (k < sizeof one && len < cap) memcpy(out + len, one, k < cap - len ? k : cap - len);
      }
      len += k;
    }
  }
  return len;
}

static int pushjoined(lua_State *L, frame_fmt fmt, int inlines) {
  Stack *s = tostack(L, 1);
  hsi_syms *sy = hsi_analysis_syms(s->a);
  char buf[4096];
  size_t len;
  hsi_lua_syms_prepare(L, sy);
  len = joined(s, sy, fmt, inlines, buf, sizeof buf);
  if (len < sizeof buf) lua_pushlstring(L, buf, len);
  else {                                 /* a deep stack: again, with room for it */
    luaL_Buffer b;
    char *p = luaL_buffinitsize(L, &b, len + 1);
    joined(s, sy, fmt, inlines, p, len + 1);
    luaL_pushresultsize(&b, len);
  }
  return 1;
}

size_t hsi_lua_stack_flame(lua_State *L, int idx, char *out, size_t cap) {
  Stack *s = tostack(L, idx);
  return joined(s, hsi_analysis_syms(s->a), hsi_symframe_flame, 1, out, cap);
}

size_t hsi_lua_stack_keytext(lua_State *L, int cache, const struct hsi_analysis *a, uint32_t id,
                             uint32_t inst, int64_t ts, char *out, size_t cap) {
  Stack s;
  memset(&s, 0, sizeof s);
  s.a = a;
  s.id = id;
  s.inst = inst;
  s.ts = ts;
  /* a Stack made already names its frames at its own time */
  if (lua_rawgetp(L, cache, &objects_key) == LUA_TTABLE) {
    lua_Integer key = stack_key(id, inst, hsi_procmap_era(hsi_analysis_procmap(a), inst, ts));
    if (lua_rawgeti(L, -1, key) == LUA_TUSERDATA) s.ts = ((const Stack *)lua_touserdata(L, -1))->ts;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return joined(&s, hsi_analysis_syms(a), hsi_symframe_key, 0, out, cap);
}

/* s:flame() -> string: the frames root first, as flame graphs name them
   (hsi_symframe_flame): a line of the folded format without its count. */
static int s_flame(lua_State *L) { return pushjoined(L, hsi_symframe_flame, 1); }

/* s:key() -> string: the stack's stable key (hsi_symframe_key), root
   first, inline levels left out: baseline.stack_key of a Stack. */
static int s_key(lua_State *L) {
  pushjoined(L, hsi_symframe_key, 0);
  if (lua_rawlen(L, -1) == 0) lua_pushliteral(L, "(empty stack)");
  return 1;
}

/* s:addresses() -> {address, ...}: the raw frame addresses, innermost first */
static int s_addresses(lua_State *L) {
  Stack *s = tostack(L, 1);
  size_t n, i;
  const uint64_t *addr = hsi_stacks_frames(hsi_analysis_stacks(s->a), s->id, &n);
  lua_createtable(L, (int)n, 0);
  for (i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)addr[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* One frame of s:details() as a table. */
static void frame_fields(lua_State *L, const hsi_symframe *f, uint64_t addr) {
  lua_createtable(L, 0, 7);
  lua_pushinteger(L, (lua_Integer)addr);
  lua_setfield(L, -2, "address");
  if (f->kind != HSI_SYMF_ADDR) {
    lua_pushstring(L, f->module);
    lua_setfield(L, -2, "module");
  }
  if (f->name) {
    lua_pushstring(L, f->name);
    lua_setfield(L, -2, "name");
  }
  if (f->kind == HSI_SYMF_FUNC || f->kind == HSI_SYMF_RVA) {
    lua_pushinteger(L, (lua_Integer)f->off);
    lua_setfield(L, -2, f->kind == HSI_SYMF_FUNC ? "offset" : "rva");
  }
  if (f->file) {
    lua_pushstring(L, f->file);
    lua_setfield(L, -2, "file");
  }
  if (f->line) {
    lua_pushinteger(L, (lua_Integer)f->line);
    lua_setfield(L, -2, "line");
  }
  lua_pushboolean(L, f->kind == HSI_SYMF_INLINE);
  lua_setfield(L, -2, "inline");
}

/*
** s:details() -> {{address=, module=, name=, offset=, file=, line=, inline=}, ...}:
** the frames as fields, one per frame of s:frames() (an address in inlined
** code gives one per level), with the source file as the PDB records it.
*/
static int s_details(lua_State *L) {
  Stack *s = tostack(L, 1);
  hsi_syms *sy = hsi_analysis_syms(s->a);
  hsi_lua_syms_prepare(L, sy);
  pushlist(L, s, sy, frame_fields);
  return 1;
}

/* s:matches(pattern) -> boolean: does any frame match? */
static int s_matches(lua_State *L) {
  tostack(L, 1);
  luaL_argexpected(L, lua_type(L, 2) == LUA_TSTRING || lua_type(L, 2) == LUA_TFUNCTION ||
                   luaL_testudata(L, 2, "lpeg-pattern") != NULL, 2, "pattern");
  lua_pushboolean(L, hsi_lua_stack_match(L, 1, 2));
  return 1;
}

/* s:contains(text) -> boolean: does any frame contain text (plain, no pattern)? */
static int s_contains(lua_State *L) {
  const char *text = (tostack(L, 1), luaL_checkstring(L, 2));
  int t = pushframes(L, 1), found = 0;
  lua_Integer i, n = (lua_Integer)lua_rawlen(L, t);
  for (i = 1; i <= n && !found; i++) {
    lua_rawgeti(L, t, i);
    found = strstr(lua_tostring(L, -1), text) != NULL;
    lua_pop(L, 1);
  }
  lua_pushboolean(L, found);
  return 1;
}

static int s_len(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)tostack(L, 1)->n);
  return 1;
}

/* tostring(s): the frames, one per line */
static int s_tostring(lua_State *L) {
  int t = pushframes(L, 1);
  lua_Integer i, n = (lua_Integer)lua_rawlen(L, t);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (i = 1; i <= n; i++) {
    if (i > 1) luaL_addchar(&b, '\n');
    lua_rawgeti(L, t, i);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  return 1;
}

/* Two Stack objects are equal when they name the same frames the same way. */
static int s_eq(lua_State *L) {
  Stack *a = tostack(L, 1), *b = tostack(L, 2);
  lua_pushboolean(L, a->a == b->a && a->id == b->id && a->inst == b->inst && a->era == b->era);
  return 1;
}

/* __index(s, k): the fields id and instance, else a method (upvalue 1). */
static int s_index(lua_State *L) {
  Stack *s = tostack(L, 1);
  const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : NULL;
  if (k && strcmp(k, "id") == 0) {
    lua_pushinteger(L, (lua_Integer)s->id);
    return 1;
  }
  if (k && strcmp(k, "instance") == 0) {
    lua_pushinteger(L, (lua_Integer)s->inst);
    return 1;
  }
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
  return luaL_error(L, "heapscript.Stack has no field or method '%s'", luaL_tolstring(L, 2, NULL));
}

static int s_newindex(lua_State *L) {
  return luaL_error(L, "heapscript.Stack is read-only (field '%s')", luaL_tolstring(L, 2, NULL));
}

static const luaL_Reg methods[] = {
  {"frames", s_frames},
  {"flame", s_flame},
  {"key", s_key},
  {"frame", s_frame},
  {"addresses", s_addresses},
  {"details", s_details},
  {"matches", s_matches},
  {"contains", s_contains},
  {NULL, NULL}
};

static const luaL_Reg metameth[] = {
  {"__index", NULL},  /* placeholder: a closure over the method table */
  {"__newindex", s_newindex},
  {"__len", s_len},
  {"__eq", s_eq},
  {"__tostring", s_tostring},
  {NULL, NULL}
};

/* The opener (lua_run.h): the metatable; returns the methods. */
int hsi_lua_open_stack(lua_State *L) {
  luaL_newmetatable(L, HSI_LUA_STACK);
  luaL_setfuncs(L, metameth, 0);
  luaL_newlib(L, methods);
  lua_pushvalue(L, -1);
  lua_pushcclosure(L, s_index, 1);
  lua_setfield(L, -3, "__index");
  return 1;
}
