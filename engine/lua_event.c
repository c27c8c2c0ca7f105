/*
** lua_event.c -- class heapscript.Event: a view of the current record of
** an event source (a Trace being iterated).
**
** One Event userdata serves a whole loop: it holds a pointer to the
** source, not a copy of the record, so reading a field after the loop
** moved on shows the record the loop is on now (docs/API.md says so).
** Fields are read through __index, which tries the field names first
** and then the method table; an unknown name is an error, to catch
** typos in scripts.  Payload readers take 0-based byte offsets into the
** payload, read through the bounds-checked cursor of heapscript.h, and
** answer `nil, "out of range"` when the bytes are not there.
*/
#include <string.h>

#include "lua_run.h"
#include "source.h"

typedef struct Event {
  hsi_lua_evsrc *src;
} Event;

#define toevent(L) ((Event *)luaL_checkudata(L, 1, HSI_LUA_EVENT))

/* The record the event shows now; errors if there is none. */
static const hs_event *current(lua_State *L) {
  Event *e = toevent(L);
  if (e->src->reader == NULL)
    luaL_error(L, "attempt to use an event of a closed trace");
  if (!e->src->has_event)
    luaL_error(L, "event used outside its loop: the loop has ended, so there is no current record");
  return &e->src->ev;
}

void hsi_lua_event_push(lua_State *L, hsi_lua_evsrc *src, int owner) {
  Event *e;
  owner = lua_absindex(L, owner);
  e = (Event *)lua_newuserdatauv(L, sizeof *e, 1);
  e->src = src;
  lua_pushvalue(L, owner);
  lua_setiuservalue(L, -2, 1);
  luaL_setmetatable(L, HSI_LUA_EVENT);
}

int64_t hsi_lua_event_ns(const hsi_lua_evsrc *src, const hs_event *ev) {
  const hs_logfile *lf;
  if (src->tb) return hsi_timebase_ns(src->tb, src->reader, ev);
  lf = hs_reader_logfile(src->reader, ev->file);
  return lf ? hs_time_ns(lf, ev->timestamp) : 0;
}

static void pushguid(lua_State *L, const hs_guid *g) {
  char s[HS_GUID_STRLEN];
  hs_guid_format(g, s);
  lua_pushstring(L, s);
}

/*
** nil when the header carries no ids (PERFINFO: the reader says HS_NOID
** and leaves HS_EVF_HAS_IDS clear); else the raw u32, 0xFFFFFFFF too.
*/
static void pushid(lua_State *L, const hs_event *ev, uint32_t id) {
  if (!(ev->flags & HS_EVF_HAS_IDS)) lua_pushnil(L);
  else lua_pushinteger(L, (lua_Integer)id);
}

static void pushname(lua_State *L, const char *s) {
  if (s) lua_pushstring(L, s);
  else lua_pushnil(L);
}

/* ------------------------------------------------------------- fields */

/* Push field k of the current record; 0 if there is no such field. */
static int field(lua_State *L, const char *k) {
  const hs_event *ev;
  Event *e = toevent(L);
  const hs_logfile *lf;
  if (e->src->reader == NULL || !e->src->has_event) {
    current(L);  /* raises the right error */
    return 0;
  }
  ev = &e->src->ev;
#define IS(s) (strcmp(k, s) == 0)
#define INT(v) (lua_pushinteger(L, (lua_Integer)(v)), 1)
  switch (k[0]) {
  case 'b':
    if (IS("buffer")) return INT(ev->buffer);
    if (IS("buffer_pos")) return INT(ev->buffer_pos);
    break;
  case 'c':
    if (IS("cpu")) return INT(ev->cpu);
    if (IS("channel")) return INT(ev->channel);
    break;
  case 'd':
    if (IS("date")) {
      char s[40];
      lf = hs_reader_logfile(e->src->reader, ev->file);
      if (!lf) return lua_pushnil(L), 1;
      lua_pushstring(L, hs_filetime_format(hs_time_filetime(lf, ev->timestamp), s, sizeof s));
      return 1;
    }
    break;
  case 'e':
    if (IS("ext_len")) return INT(ev->ext_len);
    break;
  case 'f':
    if (IS("file")) return INT(ev->file + 1);
    if (IS("filetime")) {
      lf = hs_reader_logfile(e->src->reader, ev->file);
      if (!lf) return lua_pushnil(L), 1;
      return INT(hs_time_filetime(lf, ev->timestamp));
    }
    if (IS("flags")) return INT(ev->flags);
    break;
  case 'h':
    if (IS("header_type")) return pushname(L, hs_header_type_name(ev->header_type)), 1;
    if (IS("hook")) return INT(ev->hook);
    if (IS("header_flags")) return INT(ev->header_flags);
    break;
  case 'i':
    if (IS("id")) return INT(ev->id);
    break;
  case 'k':
    if (IS("keyword")) return INT(ev->keyword);
    if (IS("kernel")) return lua_pushboolean(L, (ev->flags & HS_EVF_KERNEL) != 0), 1;
    break;
  case 'l':
    if (IS("level")) return INT(ev->level);
    break;
  case 'n':
    if (IS("name")) return pushname(L, hs_event_name(&ev->provider, ev->opcode)), 1;
    if (IS("ns")) return INT(hsi_lua_event_ns(e->src, ev));
    break;
  case 'o':
    if (IS("opcode")) return INT(ev->opcode);
    if (IS("offset")) return INT(ev->offset);
    break;
  case 'p':
    if (IS("pid")) return pushid(L, ev, ev->pid), 1;
    if (IS("provider")) return pushguid(L, &ev->provider), 1;
    if (IS("provider_name")) return pushname(L, hs_provider_name(&ev->provider)), 1;
    if (IS("payload_len")) return INT(ev->payload_len);
    if (IS("pointer_size")) return INT(ev->pointer_size);
    break;
  case 'r':
    if (IS("record_len")) return INT(ev->record_len);
    break;
  case 't':
    if (IS("tid")) return pushid(L, ev, ev->tid), 1;
    if (IS("time")) return lua_pushnumber(L, (lua_Number)hsi_lua_event_ns(e->src, ev) / 1e9), 1;
    if (IS("timestamp")) return INT(ev->timestamp);
    if (IS("task")) return INT(ev->task);
    break;
  case 's':
    /* ids taken from the StackWalk of an event whose header has none */
    if (IS("stack_pid") || IS("stack_tid")) {
      if (e->src->ids.how != HSI_IDS_STACK) return lua_pushnil(L), 1;
      return INT(k[6] == 'p' ? e->src->ids.pid : e->src->ids.tid);
    }
    break;
  case 'v':
    if (IS("version")) return INT(ev->version);
    break;
  }
#undef IS
#undef INT
  return 0;
}

/* __index(ev, k): a field, else a method (upvalue 1), else an error. */
static int ev_index(lua_State *L) {
  const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : NULL;
  if (k && field(L, k)) return 1;
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
  if (k) return luaL_error(L, "heapscript.Event has no field or method '%s'", k);
  return luaL_error(L, "heapscript.Event fields are named by strings, not by a %s",
                    luaL_typename(L, 2));
}

static int ev_newindex(lua_State *L) {
  return luaL_error(L, "heapscript.Event is read-only (field '%s')",
                    luaL_tolstring(L, 2, NULL));
}

static int ev_tostring(lua_State *L) {
  Event *e = toevent(L);
  const hs_event *ev = &e->src->ev;
  const char *name;
  char g[HS_GUID_STRLEN];
  if (e->src->reader == NULL) {
    lua_pushliteral(L, "heapscript.Event (closed trace)");
    return 1;
  }
  if (!e->src->has_event) {
    lua_pushliteral(L, "heapscript.Event (no current record)");
    return 1;
  }
  name = hs_provider_name(&ev->provider);
  if (!name) {
    hs_guid_format(&ev->provider, g);
    name = g;
  }
  lua_pushfstring(L, "heapscript.Event (%s opcode %d id %d, file %d buffer %d offset %d)",
                  name, (int)ev->opcode, (int)ev->id, (int)ev->file + 1,
                  (int)ev->buffer, (int)ev->offset);
  return 1;
}

/* ----------------------------------------------------- payload readers */

static int out_of_range(lua_State *L) {
  luaL_pushfail(L);
  lua_pushliteral(L, "out of range");
  return 2;
}

/*
** Start a cursor at byte `off` (argument 2) of the payload.  A negative
** offset is misuse; an offset past the end leaves the cursor bad.
*/
static const hs_event *at(lua_State *L, hs_cursor *c) {
  const hs_event *ev = current(L);
  lua_Integer off = luaL_checkinteger(L, 2);
  luaL_argcheck(L, off >= 0, 2, "negative offset");
  hs_cur_init(c, ev->payload, ev->payload_len, ev->pointer_size);
  if ((lua_Unsigned)off > ev->payload_len) c->bad = 1;
  else hs_cur_skip(c, (size_t)off);
  return ev;
}

#define READER(fname, type, read) \
  static int fname(lua_State *L) { \
    hs_cursor c; \
    type v; \
    at(L, &c); \
    v = (type)read(&c); \
    if (c.bad) return out_of_range(L); \
    lua_pushinteger(L, (lua_Integer)v); \
    return 1; \
  }

READER(ev_u8, uint8_t, hs_cur_u8)
READER(ev_u16, uint16_t, hs_cur_u16)
READER(ev_u32, uint32_t, hs_cur_u32)
READER(ev_u64, uint64_t, hs_cur_u64)
READER(ev_i8, int8_t, hs_cur_u8)
READER(ev_i16, int16_t, hs_cur_u16)
READER(ev_i32, int32_t, hs_cur_u32)
READER(ev_i64, int64_t, hs_cur_u64)
READER(ev_ptr, uint64_t, hs_cur_ptr)

static int ev_guid(lua_State *L) {
  hs_cursor c;
  hs_guid g;
  at(L, &c);
  g = hs_cur_guid(&c);
  if (c.bad) return out_of_range(L);
  pushguid(L, &g);
  return 1;
}

/*
** The optional byte count (argument 3) of the string readers: -1 when
** absent; the cursor goes bad when the bytes are not all there.
*/
static lua_Integer counted(lua_State *L, hs_cursor *c) {
  lua_Integer n = luaL_optinteger(L, 3, -1);
  if (lua_isnoneornil(L, 3)) return -1;
  luaL_argcheck(L, n >= 0, 3, "negative length");
  if (c->bad || (lua_Unsigned)n > c->len - c->pos) c->bad = 1;
  return n;
}

/* ev:ansi(off [, n]) -> string, nextoff (8-bit text, bytes as they are) */
static int ev_ansi(lua_State *L) {
  hs_cursor c;
  const char *s = NULL;
  size_t len;
  lua_Integer n;
  at(L, &c);
  n = counted(L, &c);
  if (c.bad || (n < 0 && c.pos >= c.len)) return out_of_range(L);
  if (n >= 0) {
    s = (const char *)c.p + c.pos;
    len = (size_t)n;
    hs_cur_skip(&c, len);
  } else {
    len = hs_cur_cstr(&c, &s);
  }
  if (c.bad) return out_of_range(L);
  lua_pushlstring(L, s, len);
  lua_pushinteger(L, (lua_Integer)c.pos);
  return 2;
}

/* ev:utf16(off [, nbytes]) -> UTF-8 string, nextoff */
static int ev_utf16(lua_State *L) {
  hs_cursor c;
  const uint8_t *s = NULL;
  size_t nb, cap, w;
  lua_Integer n;
  luaL_Buffer b;
  char *out;
  at(L, &c);
  n = counted(L, &c);
  if (c.bad || (n < 0 && c.pos >= c.len)) return out_of_range(L);
  if (n >= 0) {
    s = c.p + c.pos;
    nb = (size_t)n;
    hs_cur_skip(&c, nb);
  } else {
    nb = hs_cur_wstr(&c, &s);
  }
  if (c.bad) return out_of_range(L);
  /* a UTF-16 unit becomes at most 3 UTF-8 bytes (a pair 4 for 2 units);
     an odd last byte at most one U+FFFD */
  cap = (nb + 1) / 2 * 3 + 1;
  out = luaL_buffinitsize(L, &b, cap);
  w = hs_utf16_to_utf8(s, nb, out, cap);
  luaL_pushresultsize(&b, w);
  lua_pushinteger(L, (lua_Integer)c.pos);
  return 2;
}

/* ev:sid(off) -> "S-1-...", nextoff; false, nextoff when no SID is there */
static int ev_sid(lua_State *L) {
  hs_cursor c;
  const uint8_t *s = NULL;
  size_t n, w;
  char buf[256];
  at(L, &c);
  if (c.bad || c.pos >= c.len) return out_of_range(L);
  n = hs_cur_sid(&c, &s);
  if (c.bad) return out_of_range(L);
  w = hs_sid_format(s, n, buf, sizeof buf);
  if (w == 0) lua_pushboolean(L, 0);
  else lua_pushlstring(L, buf, w);
  lua_pushinteger(L, (lua_Integer)c.pos);
  return 2;
}

/* ev:bytes(off [, n]) -> string (n defaults to the rest of the payload) */
static int ev_bytes(lua_State *L) {
  hs_cursor c;
  lua_Integer n;
  at(L, &c);
  if (c.bad) return out_of_range(L);
  n = counted(L, &c);
  if (c.bad) return out_of_range(L);
  if (n < 0) n = (lua_Integer)(c.len - c.pos);
  lua_pushlstring(L, (const char *)c.p + c.pos, (size_t)n);
  return 1;
}

/* ------------------------------------------------- extended data items */

static const char *const ext_names[] = {
  NULL, "RELATED_ACTIVITYID", "SID", "TS_ID", "INSTANCE_INFO", "STACK_TRACE32",
  "STACK_TRACE64", "PEBS_INDEX", "PMC_COUNTERS", "PSM_KEY", "EVENT_KEY",
  "EVENT_SCHEMA_TL", "PROV_TRAITS", "PROCESS_START_KEY", "CONTROL_GUID",
  "QPC_DELTA", "CONTAINER_ID", "STACK_KEY32", "STACK_KEY64"
};

/* ev:ext() -> {{type=, size=, name=}, ...} [, "damaged"] */
static int ev_ext(lua_State *L) {
  const hs_event *ev = current(L);
  uint32_t pos = 0;
  hs_ext_item it;
  int r, i = 0;
  lua_newtable(L);
  if (!(ev->flags & HS_EVF_EXT)) return 1;
  while ((r = hs_event_ext_next(ev, &pos, &it)) == 1) {
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, it.type);
    lua_setfield(L, -2, "type");
    lua_pushinteger(L, it.size);
    lua_setfield(L, -2, "size");
    if (it.type < sizeof ext_names / sizeof ext_names[0] && ext_names[it.type]) {
      lua_pushstring(L, ext_names[it.type]);
      lua_setfield(L, -2, "name");
    }
    lua_rawseti(L, -2, ++i);
  }
  if (r < 0) {
    lua_pushliteral(L, "damaged");
    return 2;
  }
  return 1;
}

/* ev:stack() -> {frame, ...}, match_id; nil when the record carries none */
static int ev_stack(lua_State *L) {
  const hs_event *ev = current(L);
  uint64_t *frames, match = 0;
  size_t max, n, i;
  if (!(ev->flags & HS_EVF_EXT) || ev->ext_len < 8) {
    lua_pushnil(L);
    return 1;
  }
  /* frames are at least 4 bytes each in the items, so this bounds them;
     scratch as a userdata so an error here leaks nothing */
  max = ev->ext_len / 4 + 1;
  frames = (uint64_t *)lua_newuserdatauv(L, max * sizeof *frames, 0);
  n = hs_event_ext_stack(ev, frames, max, &match);
  if (n > max) n = max;
  if (n == 0) {
    lua_pushnil(L);
    return 1;
  }
  lua_createtable(L, (int)n, 0);
  for (i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)frames[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_pushinteger(L, (lua_Integer)match);
  return 2;
}

static const luaL_Reg methods[] = {
  {"u8", ev_u8}, {"u16", ev_u16}, {"u32", ev_u32}, {"u64", ev_u64},
  {"i8", ev_i8}, {"i16", ev_i16}, {"i32", ev_i32}, {"i64", ev_i64},
  {"ptr", ev_ptr}, {"guid", ev_guid}, {"ansi", ev_ansi}, {"utf16", ev_utf16},
  {"sid", ev_sid}, {"bytes", ev_bytes}, {"ext", ev_ext}, {"stack", ev_stack},
  {NULL, NULL}
};

static const luaL_Reg metameth[] = {
  {"__index", NULL},  /* placeholder: a closure over the method table */
  {"__newindex", ev_newindex},
  {"__tostring", ev_tostring},
  {NULL, NULL}
};

/* The opener (lua_run.h): registers the metatable, returns the methods. */
int hsi_lua_open_event(lua_State *L) {
  luaL_newmetatable(L, HSI_LUA_EVENT);
  luaL_setfuncs(L, metameth, 0);
  luaL_newlib(L, methods);
  lua_pushvalue(L, -1);
  lua_pushcclosure(L, ev_index, 1);
  lua_setfield(L, -3, "__index");
  return 1;
}
