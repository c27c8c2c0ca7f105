/*
** lua_writer.c -- class heapscript.Writer: scripts write real-format
** .etl files through engine/writer.h, and heap, VirtualAlloc and pool
** events through the same layout tables the decoders read
** (hsi_memev_encode), so a synthetic trace can never disagree with the
** reader about a payload.
**
**   local w = assert(heapscript.writer(path, {cpus = 4, compress = "xpress"}))
**   w:process{op = "dcstart", pid = 1000, ts = 10, name = "app.exe"}
**   w:heap{op = "alloc", pid = 1000, tid = 1004, ts = 500, heap = 0x10000,
**          addr = 0x20000, size = 40, stack = {0x7ff800011234, 0x7ff700002000}}
**   assert(w:close())
**
** heapscript.writer(path [, opts]) -> writer | nil, message.  opts are the
** hsi_writer_opts fields (writer.h): pointer_size, buffer_size, cpus,
** os_build, clock_type (1-3 or "qpc", "system", "cycles"), perf_freq,
** cpu_mhz, start_time, start_ticks, old_layout, compress ("xpress",
** "lznt1", "xpress_huff"), log_file_mode, logger_id, logger_name,
** log_file_name, events_lost, buffers_lost, buffer_flags, group_masks,
** os_major, os_minor, timer_resolution, time_zone, boot_time, end_time.  Methods:
**   w:process{op, pid, ppid, ts, name, cmdline}    op start|end|dcstart|dcend
**   w:thread{op, pid, tid, ts, start}
**   w:image{op, pid, base, size, ts, path}         op load|unload|dcstart|dcend
**   w:kernel{header, group, opcode, version, pid, tid, ts, payload}
**   w:event{provider, id, version, opcode, level, task, keyword, pid, tid,
**           ts, payload, stack, stack_type, ext}   EVENT_HEADER
**   w:mof{provider, opcode, version, pid, tid, ts, payload}
**   w:stack{ts, event_ts, pid, tid, frames}        StackWalk op 32
**   w:heap{op, pid, tid, ts, heap, addr, size, old_addr, old_size, source,
**          flags, stack}                           op create|alloc|realloc|free|destroy
**   w:virtual{op, pid, tid, ts, addr, size, flags, stack}   op alloc|free
**   w:pool{op, pid, tid, ts, tag, type, size, entry, session, stack}
**   w:stats(), w:close()
** Every record method also takes cpu (default 0), and the ones with a
** choice of width ptr (4 or 8, default the trace's); the memory events
** header, version and opcode overrides and stack_cpu, stack_delay,
** stack_ptr.  Unlike the reading classes this file needs engine
** internals (the writer and the memory-event encoder), which are not
** public API.
**
** Every record method takes one table of named fields; an unknown name is
** an error (a typo must not silently write a zero).  Timestamps are
** integer ticks of the trace clock and must not decrease within one CPU.
** Misuse (a missing or mistyped field, a record the writer rejects)
** raises an error; an I/O error returns nil, message and sticks: every
** later record returns it too.
**
** Stacks of memory events are written as real kernel loggers write them:
** a StackWalk op-32 record stamped a few ticks after its event, on
** another CPU's buffer (stack_cpu, default cpu + 1 modulo the CPU count;
** stack_delay, default 3 ticks -- moved later if that CPU already has a
** later record).  Such a record counts against its CPU's timestamp order
** like any other: write events in time order and leave a few ticks
** between them, or place the stacks yourself with w:stack.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_run.h"
#include "memev.h"
#include "writer.h"

#define HSI_LUA_WRITER "heapscript.Writer"

/* Ticks between an event and its StackWalk record unless told otherwise. */
#define STACK_DELAY 3

typedef struct Writer {
  hsi_writer *w;             /* NULL once closed */
  int ptr;                   /* the trace's pointer size */
  uint32_t cpus;
  int64_t *last;             /* per CPU: latest timestamp written there */
  uint8_t *used;             /* per CPU: a record was written there */
  uint64_t *frames;          /* scratch for stack frames; owned here so an
                                error while reading them leaks nothing */
  size_t capframes;
  lua_Integer records, stacks;
  char fatal[HS_ERRLEN];     /* the first I/O or memory error, "" if none */
} Writer;

#define towriter(L) ((Writer *)luaL_checkudata(L, 1, HSI_LUA_WRITER))

static Writer *checkopen(lua_State *L) {
  Writer *W = towriter(L);
  if (W->w == NULL) luaL_error(L, "attempt to use a closed writer");
  return W;
}

/* Close the file and free everything; 0 or the writer's error code. */
static int release(Writer *W) {
  int rc = 0;
  if (W->w) rc = hsi_writer_close(W->w);
  W->w = NULL;
  free(W->last);
  free(W->used);
  free(W->frames);
  W->last = NULL;
  W->used = NULL;
  W->frames = NULL;
  W->capframes = 0;
  return rc;
}

/* ------------------------------------------------------------ fields */

/*
** The field helpers read the table at stack index t; their errors always
** name argument 2, the table the script passed (an item of a list inside
** it is reported by its field name).
*/

/*
** Reject field names the method does not know.  The names are checked
** against a set table built once per list and kept in the registry under
** the list's address: one hash lookup per field, no string compares.
*/
static void checkkeys(lua_State *L, int t, const char *const *keys) {
  int set, i;
  luaL_checktype(L, t, LUA_TTABLE);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, keys) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    for (i = 0; keys[i]; i++) {
      lua_pushboolean(L, 1);
      lua_setfield(L, -2, keys[i]);
    }
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, keys);
  }
  set = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, t)) {
    lua_pushvalue(L, -2);
    if (lua_rawget(L, set) == LUA_TNIL) {
      luaL_Buffer b;
      if (lua_type(L, -3) != LUA_TSTRING)
        luaL_argerror(L, 2, lua_pushfstring(L, "fields are named, got a %s key", luaL_typename(L, -3)));
      luaL_buffinit(L, &b);
      lua_pushfstring(L, "unknown field '%s' (known:", lua_tostring(L, -4));
      luaL_addvalue(&b);
      for (i = 0; keys[i]; i++) {
        luaL_addchar(&b, ' ');
        luaL_addstring(&b, keys[i]);
      }
      luaL_addchar(&b, ')');
      luaL_pushresult(&b);
      luaL_argerror(L, 2, lua_tostring(L, -1));
    }
    lua_pop(L, 2);
  }
  lua_pop(L, 1);
}

static int fielderr(lua_State *L, int t, const char *k, const char *what) {
  (void)t;
  return luaL_argerror(L, 2, lua_pushfstring(L, "field '%s': %s", k, what));
}

/* The integer at stack index v, named k in messages, in [min, max] when min <= max. */
static lua_Integer checkint(lua_State *L, int v, const char *k, lua_Integer min, lua_Integer max) {
  int isnum;
  lua_Integer x = lua_tointegerx(L, v, &isnum);
  if (!isnum)
    fielderr(L, 0, k, lua_pushfstring(L, "integer expected, got %s", luaL_typename(L, v)));
  if (min <= max && (x < min || x > max))
    fielderr(L, 0, k, lua_pushfstring(L, "%I out of range %I..%I", x, min, max));
  return x;
}

/* t[k] without metamethods, pushed; its type.  Every field is read so:
   no __index runs while a record's fields are read, so the strings taken
   from the table stay the table's until the writer has copied them. */
static int rawfield(lua_State *L, int t, const char *k) {
  t = lua_absindex(L, t);
  lua_pushstring(L, k);
  return lua_rawget(L, t);
}

/*
** Integer field k of the table at t: def when absent (an error when req),
** checked against [min, max] when min <= max.
*/
static lua_Integer ifield(lua_State *L, int t, const char *k, lua_Integer min, lua_Integer max,
                          lua_Integer def, int req) {
  lua_Integer v;
  if (rawfield(L, t, k) == LUA_TNIL) {
    lua_pop(L, 1);
    if (req) fielderr(L, t, k, "missing");
    return def;
  }
  v = checkint(L, -1, k, min, max);
  lua_pop(L, 1);
  return v;
}

#define U32 0, 0xFFFFFFFF
#define U16 0, 0xFFFF
#define U8 0, 0xFF
#define ANY 1, 0                     /* any lua_Integer: addresses, u64 */

static uint32_t u32field(lua_State *L, int t, const char *k, lua_Integer def, int req) {
  return (uint32_t)ifield(L, t, k, U32, def, req);
}

/* String field, NULL when absent (an error when req); valid while the table holds it. */
static const char *sfield(lua_State *L, int t, const char *k, size_t *len, int req) {
  const char *s;
  int ty = rawfield(L, t, k);
  if (ty == LUA_TNIL) {
    lua_pop(L, 1);
    if (req) fielderr(L, t, k, "missing");
    if (len) *len = 0;
    return NULL;
  }
  if (ty != LUA_TSTRING)
    fielderr(L, t, k, lua_pushfstring(L, "string expected, got %s", luaL_typename(L, -1)));
  s = lua_tolstring(L, -1, len);
  lua_pop(L, 1);                   /* the table still refers to the string (rawfield) */
  return s;
}

static int bfield(lua_State *L, int t, const char *k) {
  int ty = rawfield(L, t, k), v;
  if (ty != LUA_TNIL && ty != LUA_TBOOLEAN)
    fielderr(L, t, k, lua_pushfstring(L, "boolean expected, got %s", luaL_typename(L, -1)));
  v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

/*
** A named choice: names[i] gives values[i]; an integer is taken as is
** when ints is set.  def when absent (an error when req).
*/
static int choice(lua_State *L, int t, const char *k, const char *const *names, const int *values,
                  int ints, int def, int req) {
  int ty = rawfield(L, t, k), i;
  if (ty == LUA_TNIL) {
    lua_pop(L, 1);
    if (req) fielderr(L, t, k, "missing");
    return def;
  }
  if (ty == LUA_TSTRING) {
    const char *s = lua_tostring(L, -1);
    for (i = 0; names[i]; i++)
      if (strcmp(names[i], s) == 0) {
        lua_pop(L, 1);
        return values[i];
      }
  } else if (ints && lua_isinteger(L, -1)) {
    lua_Integer v = lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (v < 0 || v > 0x7FFFFFFF) fielderr(L, t, k, "out of range");
    return (int)v;
  }
  {
    luaL_Buffer b;
    const char *got = luaL_tolstring(L, -1, NULL);   /* stays below the buffer */
    luaL_buffinit(L, &b);
    lua_pushfstring(L, "'%s' is not one of", got);
    luaL_addvalue(&b);
    for (i = 0; names[i]; i++) {
      lua_pushfstring(L, " \"%s\"", names[i]);
      luaL_addvalue(&b);
    }
    if (ints) luaL_addstring(&b, " or an integer");
    luaL_pushresult(&b);
    fielderr(L, t, k, lua_tostring(L, -1));
  }
  return def;
}

/* Header type by name ("SYSTEM64", "EVENT_HEADER32", ...) or number; def if absent. */
static int hfield(lua_State *L, int t, const char *k, int def) {
  int ty = rawfield(L, t, k), i;
  if (ty == LUA_TNIL) {
    lua_pop(L, 1);
    return def;
  }
  if (ty == LUA_TSTRING) {
    const char *s = lua_tostring(L, -1);
    for (i = 0; i < 256; i++) {
      const char *name = hs_header_type_name(i);
      if (name && strcmp(name, s) == 0) {
        lua_pop(L, 1);
        return i;
      }
    }
    fielderr(L, t, k, lua_pushfstring(L, "unknown header type '%s'", s));
  }
  lua_pop(L, 1);
  return (int)ifield(L, t, k, U8, 0, 1);
}

static hs_guid gfield(lua_State *L, int t, const char *k) {
  hs_guid g;
  const char *s = sfield(L, t, k, NULL, 1);
  if (hs_guid_parse(s, &g) != 0)
    fielderr(L, t, k, lua_pushfstring(L, "'%s' is not a GUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)", s));
  return g;
}

/* Frames of the list at field k into W->frames; their number (0 if absent). */
static size_t frames(lua_State *L, Writer *W, int t, const char *k) {
  lua_Integer n, i;
  int ty = rawfield(L, t, k);
  if (ty == LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  if (ty != LUA_TTABLE) fielderr(L, t, k, lua_pushfstring(L, "list of frame addresses expected, got %s",
                                                            luaL_typename(L, -1)));
  n = luaL_len(L, -1);
  if (n < 0 || n > 0xFFFF) fielderr(L, t, k, "too many frames");
  if ((size_t)n > W->capframes) {
    size_t cap = W->capframes ? W->capframes : 64;
    uint64_t *p;
    while (cap < (size_t)n) cap *= 2;
    if (!(p = (uint64_t *)realloc(W->frames, cap * sizeof *p))) luaL_error(L, "not enough memory");
    W->frames = p;
    W->capframes = cap;
  }
  for (i = 1; i <= n; i++) {
    int isnum;
    lua_Integer v;
    lua_geti(L, -1, i);
    v = lua_tointegerx(L, -1, &isnum);
    if (!isnum) fielderr(L, t, k, lua_pushfstring(L, "frame %I is %s, not an integer", i, luaL_typename(L, -1)));
    W->frames[i - 1] = (uint64_t)v;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return (size_t)n;
}

/* ------------------------------------------------------------ results */

/* A writer call failed: an error for misuse, nil + message for I/O. */
static int failed(lua_State *L, Writer *W, int rc) {
  if (rc == HS_EARG) return luaL_argerror(L, 2, hsi_writer_error(W->w));
  if (!W->fatal[0]) snprintf(W->fatal, sizeof W->fatal, "%s", hsi_writer_error(W->w));
  luaL_pushfail(L);
  lua_pushstring(L, W->fatal);
  return 2;
}

static void wrote(Writer *W, int cpu, int64_t ts) {
  W->records++;
  if (!W->used[cpu] || ts > W->last[cpu]) W->last[cpu] = ts;
  W->used[cpu] = 1;
}

/* After a writer call: true, or what failed() says. */
static int result(lua_State *L, Writer *W, int rc, int cpu, int64_t ts) {
  if (rc < 0) return failed(L, W, rc);
  wrote(W, cpu, ts);
  lua_pushboolean(L, 1);
  return 1;
}

static int cpufield(lua_State *L, Writer *W, int t, const char *k, lua_Integer def) {
  lua_Integer c = ifield(L, t, k, 0, (lua_Integer)W->cpus - 1, def, 0);
  return (int)c;
}

static int ptrfield(lua_State *L, Writer *W, int t, const char *k) {
  lua_Integer p = ifield(L, t, k, ANY, W->ptr, 0);
  if (p != 4 && p != 8) fielderr(L, t, k, "4 or 8 expected");
  return (int)p;
}

/* ------------------------------------------------------- open and close */

static const char *const open_keys[] = {
  "pointer_size", "buffer_size", "cpus", "os_build", "clock_type", "perf_freq", "cpu_mhz",
  "start_time", "start_ticks", "old_layout", "compress", "log_file_mode", "logger_id",
  "logger_name", "log_file_name", "events_lost", "buffers_lost", "buffer_flags", "group_masks",
  "os_major", "os_minor", "timer_resolution", "time_zone", "boot_time", "end_time", NULL
};

static const char *const compress_names[] = { "lznt1", "xpress", "xpress_huff", "none", NULL };
static const int compress_values[] = { HS_XCA_LZNT1, HS_XCA_XPRESS, HS_XCA_XPRESS_HUFF, 0 };
static const char *const clock_names[] = { "qpc", "system", "cycles", NULL };
static const int clock_values[] = { 1, 2, 3 };

/* heapscript.writer(path [, opts]) -> writer | nil, message */
static int w_new(lua_State *L) {
  const char *path = hsi_lua_checkpath(L, 1);
  hsi_writer_opts o;
  uint32_t masks[8];
  char err[HS_ERRLEN];
  Writer *W;
  int rc;
  lua_settop(L, 2);
  memset(&o, 0, sizeof o);
  if (!lua_isnil(L, 2)) {
    checkkeys(L, 2, open_keys);
    o.pointer_size = (int)ifield(L, 2, "pointer_size", U8, 0, 0);
    o.buffer_size = u32field(L, 2, "buffer_size", 0, 0);
    o.cpus = u32field(L, 2, "cpus", 0, 0);
    o.os_build = u32field(L, 2, "os_build", 0, 0);
    o.clock_type = choice(L, 2, "clock_type", clock_names, clock_values, 1, 0, 0);
    o.perf_freq = (int64_t)ifield(L, 2, "perf_freq", ANY, 0, 0);
    o.cpu_mhz = u32field(L, 2, "cpu_mhz", 0, 0);
    o.start_time = (int64_t)ifield(L, 2, "start_time", ANY, 0, 0);
    o.start_ticks = (int64_t)ifield(L, 2, "start_ticks", ANY, 0, 0);
    o.old_layout = bfield(L, 2, "old_layout");
    if (rawfield(L, 2, "compress") == LUA_TBOOLEAN && !lua_toboolean(L, -1)) o.compress = 0;
    else o.compress = choice(L, 2, "compress", compress_names, compress_values, 1, 0, 0);
    lua_pop(L, 1);
    o.log_file_mode = u32field(L, 2, "log_file_mode", 0, 0);
    o.logger_id = (uint16_t)ifield(L, 2, "logger_id", U16, 0, 0);
    o.logger_name = sfield(L, 2, "logger_name", NULL, 0);
    o.log_file_name = sfield(L, 2, "log_file_name", NULL, 0);
    o.events_lost = u32field(L, 2, "events_lost", 0, 0);
    o.buffers_lost = u32field(L, 2, "buffers_lost", 0, 0);
    o.buffer_flags = (uint16_t)ifield(L, 2, "buffer_flags", U16, 0, 0);
    o.os_major = (uint8_t)ifield(L, 2, "os_major", U8, 0, 0);
    o.os_minor = (uint8_t)ifield(L, 2, "os_minor", U8, 0, 0);
    o.timer_resolution = u32field(L, 2, "timer_resolution", 0, 0);
    o.boot_time = (int64_t)ifield(L, 2, "boot_time", ANY, 0, 0);
    o.end_time = (int64_t)ifield(L, 2, "end_time", ANY, 0, 0);
    {
      size_t tzl;
      o.time_zone = (const uint8_t *)sfield(L, 2, "time_zone", &tzl, 0);
      if (o.time_zone && tzl != 0xAC) fielderr(L, 2, "time_zone", "a string of 172 bytes (TIME_ZONE_INFORMATION) expected");
    }
    if (rawfield(L, 2, "group_masks") != LUA_TNIL) {
      int i, mt = lua_gettop(L);
      if (!lua_istable(L, mt) || luaL_len(L, mt) != 8)
        fielderr(L, 2, "group_masks", "a list of 8 integers expected");
      for (i = 0; i < 8; i++) {
        lua_geti(L, mt, i + 1);
        masks[i] = (uint32_t)checkint(L, -1, "group_masks", U32);
        lua_pop(L, 1);
      }
      o.group_masks = masks;
    }
    lua_pop(L, 1);
  }
  if (hsi_lua_trace_named(L, path)) {   /* creating it would cut the trace short under its reader */
    luaL_pushfail(L);
    lua_pushfstring(L, "%s: is the trace %s, open in this script; the new trace must be another file", path,
                    lua_tostring(L, -2));
    return 2;
  }
  W = (Writer *)lua_newuserdatauv(L, sizeof *W, 1);
  memset(W, 0, sizeof *W);
  luaL_setmetatable(L, HSI_LUA_WRITER);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);           /* the path, for __tostring */
  err[0] = '\0';
  rc = hsi_writer_open(&W->w, path, &o, err, sizeof err);
  if (rc == HS_EARG) return luaL_argerror(L, 2, err);
  if (rc < 0) {
    luaL_pushfail(L);
    lua_pushstring(L, err[0] ? err : "cannot create the file");
    return 2;
  }
  W->ptr = o.pointer_size ? o.pointer_size : 8;
  W->cpus = o.cpus ? o.cpus : 1;
  W->last = (int64_t *)calloc(W->cpus, sizeof *W->last);
  W->used = (uint8_t *)calloc(W->cpus, 1);
  if (!W->last || !W->used) {
    release(W);
    return luaL_error(L, "not enough memory");
  }
  return 1;
}

/* w:close() -> true | nil, message (the file is then incomplete) */
static int w_close(lua_State *L) {
  Writer *W = towriter(L);
  int open = W->w != NULL, rc = release(W);
  if (open && rc < 0) {
    luaL_pushfail(L);
    lua_getiuservalue(L, 1, 1);
    if (W->fatal[0]) lua_pushfstring(L, "%s", W->fatal);
    else lua_pushfstring(L, "%s: write error while closing; the file is incomplete", lua_tostring(L, -1));
    lua_remove(L, -2);
    if (!W->fatal[0]) snprintf(W->fatal, sizeof W->fatal, "%s", lua_tostring(L, -1));
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int w_gc(lua_State *L) {
  release(towriter(L));
  return 0;
}

static int w_tostring(lua_State *L) {
  Writer *W = towriter(L);
  lua_getiuservalue(L, 1, 1);
  if (W->w) lua_pushfstring(L, "heapscript.Writer (%s)", lua_tostring(L, -1));
  else lua_pushfstring(L, "heapscript.Writer (%s, closed)", lua_tostring(L, -1));
  return 1;
}

/* w:stats() -> {records=, stacks=, buffers=} (buffers: written so far, buffer 0 included) */
static int w_stats(lua_State *L) {
  Writer *W = towriter(L);
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, W->records);
  lua_setfield(L, -2, "records");
  lua_pushinteger(L, W->stacks);
  lua_setfield(L, -2, "stacks");
  if (W->w) {
    lua_pushinteger(L, (lua_Integer)hsi_writer_buffers(W->w));
    lua_setfield(L, -2, "buffers");
  }
  return 1;
}

/* -------------------------------------------------- kernel rundown records */

static const char *const lifecycle_names[] = { "start", "end", "dcstart", "dcend", NULL };
static const int lifecycle_values[] = { 1, 2, 3, 4 };
static const char *const image_names[] = { "load", "unload", "dcstart", "dcend", NULL };
static const int image_values[] = { 10, 2, 3, 4 };

static const char *const process_keys[] = {
  "op", "pid", "ppid", "ts", "name", "cmdline", "ptr", "cpu", NULL
};

/* w:process{op=, pid=, ppid=, ts=, name=, cmdline=, ptr=, cpu=} */
static int w_process(lua_State *L) {
  Writer *W = checkopen(L);
  int op, ptr, cpu;
  uint32_t pid, ppid;
  int64_t ts;
  const char *name, *cmd;
  checkkeys(L, 2, process_keys);
  op = choice(L, 2, "op", lifecycle_names, lifecycle_values, 1, 0, 1);
  pid = u32field(L, 2, "pid", 0, 1);
  ppid = u32field(L, 2, "ppid", 0, 0);
  ts = (int64_t)ifield(L, 2, "ts", ANY, 0, 1);
  name = sfield(L, 2, "name", NULL, 0);
  cmd = sfield(L, 2, "cmdline", NULL, 0);
  ptr = ptrfield(L, W, 2, "ptr");
  cpu = cpufield(L, W, 2, "cpu", 0);
  return result(L, W, hsi_writer_process(W->w, cpu, op, ptr, pid, ppid, ts, name, cmd), cpu, ts);
}

static const char *const thread_keys[] = { "op", "pid", "tid", "ts", "start", "ptr", "cpu", NULL };

/* w:thread{op=, pid=, tid=, ts=, start=, ptr=, cpu=} (start: Win32StartAddr) */
static int w_thread(lua_State *L) {
  Writer *W = checkopen(L);
  int op, ptr, cpu;
  uint32_t pid, tid;
  uint64_t start;
  int64_t ts;
  checkkeys(L, 2, thread_keys);
  op = choice(L, 2, "op", lifecycle_names, lifecycle_values, 1, 0, 1);
  pid = u32field(L, 2, "pid", 0, 1);
  tid = u32field(L, 2, "tid", 0, 1);
  ts = (int64_t)ifield(L, 2, "ts", ANY, 0, 1);
  start = (uint64_t)ifield(L, 2, "start", ANY, 0, 0);
  ptr = ptrfield(L, W, 2, "ptr");
  cpu = cpufield(L, W, 2, "cpu", 0);
  return result(L, W, hsi_writer_thread(W->w, cpu, op, ptr, pid, tid, start, ts), cpu, ts);
}

static const char *const image_keys[] = { "op", "pid", "base", "size", "ts", "path", "ptr", "cpu",
                                           "checksum", "tds", NULL };

/* w:image{op=, pid=, base=, size=, ts=, path=, ptr=, cpu=} */
static int w_image(lua_State *L) {
  Writer *W = checkopen(L);
  int op, ptr, cpu;
  uint32_t pid, checksum, tds;
  uint64_t base, size;
  int64_t ts;
  const char *path;
  checkkeys(L, 2, image_keys);
  op = choice(L, 2, "op", image_names, image_values, 1, 0, 1);
  pid = u32field(L, 2, "pid", 0, 1);
  base = (uint64_t)ifield(L, 2, "base", ANY, 0, 1);
  size = (uint64_t)ifield(L, 2, "size", ANY, 0, 1);
  ts = (int64_t)ifield(L, 2, "ts", ANY, 0, 1);
  path = sfield(L, 2, "path", NULL, 1);
  checksum = u32field(L, 2, "checksum", 0, 0);
  tds = u32field(L, 2, "tds", 0, 0);
  ptr = ptrfield(L, W, 2, "ptr");
  cpu = cpufield(L, W, 2, "cpu", 0);
  return result(L, W, hsi_writer_image_id(W->w, cpu, op, ptr, pid, base, size, ts, path, checksum, tds),
                cpu, ts);
}

/* --------------------------------------------------------- raw records */

static const char *const kernel_keys[] = {
  "header", "group", "opcode", "version", "pid", "tid", "ts", "payload", "cpu", NULL
};

/* w:kernel{header=, group=, opcode=, version=, pid=, tid=, ts=, payload=, cpu=} */
static int w_kernel(lua_State *L) {
  Writer *W = checkopen(L);
  int ht, group, type, version, cpu;
  uint32_t pid, tid;
  int64_t ts;
  size_t len;
  const char *pl;
  checkkeys(L, 2, kernel_keys);
  ht = hfield(L, 2, "header", W->ptr == 8 ? HS_HT_SYSTEM64 : HS_HT_SYSTEM32);
  group = (int)ifield(L, 2, "group", U8, 0, 1);
  type = (int)ifield(L, 2, "opcode", U8, 0, 1);
  version = (int)ifield(L, 2, "version", U16, 2, 0);
  pid = u32field(L, 2, "pid", 0, 0);
  tid = u32field(L, 2, "tid", 0, 0);
  ts = (int64_t)ifield(L, 2, "ts", ANY, 0, 1);
  pl = sfield(L, 2, "payload", &len, 0);
  cpu = cpufield(L, W, 2, "cpu", 0);
  return result(L, W, hsi_writer_kernel(W->w, cpu, ht, group, type, version, pid, tid, ts, pl, len),
                cpu, ts);
}

static const char *const event_keys[] = {
  "header", "provider", "id", "version", "opcode", "level", "task", "keyword", "pid", "tid",
  "ts", "payload", "stack", "stack_type", "ext", "cpu", NULL
};

static const char *const stack_type_names[] = { "STACK_TRACE32", "STACK_TRACE64", NULL };
static const int stack_type_values[] = { HS_EXT_STACK_TRACE32, HS_EXT_STACK_TRACE64 };

/*
** w:event{provider=, id=, version=, opcode=, level=, task=, keyword=, pid=,
** tid=, ts=, payload=, stack=, stack_type=, ext={{type=, data=}, ...},
** header=, cpu=}: an EVENT_HEADER record; `stack` becomes its
** STACK_TRACE item (32-bit frames on EVENT_HEADER32 unless stack_type says).
*/
static int w_event(lua_State *L) {
  Writer *W = checkopen(L);
  int ht, cpu, st;
  hs_guid g;
  uint16_t id, task;
  uint8_t version, opcode, level;
  uint64_t keyword;
  uint32_t pid, tid;
  int64_t ts;
  size_t len, n, nitems = 0;
  const char *pl;
  hsi_ext *items = NULL;
  checkkeys(L, 2, event_keys);
  ht = hfield(L, 2, "header", W->ptr == 8 ? HS_HT_EVENT64 : HS_HT_EVENT32);
  g = gfield(L, 2, "provider");
  id = (uint16_t)ifield(L, 2, "id", U16, 0, 0);
  version = (uint8_t)ifield(L, 2, "version", U8, 0, 0);
  opcode = (uint8_t)ifield(L, 2, "opcode", U8, 0, 0);
  level = (uint8_t)ifield(L, 2, "level", U8, 4, 0);
  task = (uint16_t)ifield(L, 2, "task", U16, 0, 0);
  keyword = (uint64_t)ifield(L, 2, "keyword", ANY, 0, 0);
  pid = u32field(L, 2, "pid", 0, 0);
  tid = u32field(L, 2, "tid", 0, 0);
  ts = (int64_t)ifield(L, 2, "ts", ANY, 0, 1);
  pl = sfield(L, 2, "payload", &len, 0);
  st = choice(L, 2, "stack_type", stack_type_names, stack_type_values, 1,
              ht == HS_HT_EVENT32 ? HS_EXT_STACK_TRACE32 : HS_EXT_STACK_TRACE64, 0);
  cpu = cpufield(L, W, 2, "cpu", 0);
  if (rawfield(L, 2, "ext") != LUA_TNIL) {
    int et = lua_gettop(L);
    lua_Integer i, ne;
    if (!lua_istable(L, et)) fielderr(L, 2, "ext", "list of {type=, data=} expected");
    ne = luaL_len(L, et);
    if (ne < 0 || ne > 64) fielderr(L, 2, "ext", "at most 64 items");
    /* scratch as a userdata: an error below leaks nothing */
    items = (hsi_ext *)lua_newuserdatauv(L, (size_t)(ne ? ne : 1) * sizeof *items, 0);
    for (i = 1; i <= ne; i++) {
      static const char *const item_keys[] = { "type", "data", NULL };
      int it;
      size_t dl;
      lua_geti(L, et, i);
      it = lua_gettop(L);
      checkkeys(L, it, item_keys);
      items[i - 1].type = (uint16_t)ifield(L, it, "type", U16, 0, 1);
      items[i - 1].data = sfield(L, it, "data", &dl, 0);
      if (dl > 0xFFF0) fielderr(L, it, "data", "too long");
      items[i - 1].len = (uint16_t)dl;
      lua_pop(L, 1);   /* the list still holds the item and its data */
    }
    nitems = (size_t)ne;
  }
  n = frames(L, W, 2, "stack");
  return result(L, W, hsi_writer_event_ext(W->w, cpu, ht, &g, id, version, opcode, level, task,
                                           keyword, pid, tid, ts, n ? W->frames : NULL, n, st,
                                           items, nitems, NULL, pl, len), cpu, ts);
}

static const char *const mof_keys[] = {
  "header", "provider", "opcode", "version", "pid", "tid", "ts", "payload", "cpu", NULL
};

/* w:mof{provider=, opcode=, version=, pid=, tid=, ts=, payload=, header=, cpu=}:
   a classic EVENT_TRACE_HEADER record; provider is the class GUID, opcode its Type. */
static int w_mof(lua_State *L) {
  Writer *W = checkopen(L);
  int ht, cpu;
  hs_guid g;
  uint8_t type;
  uint16_t version;
  uint32_t pid, tid;
  int64_t ts;
  size_t len;
  const char *pl;
  checkkeys(L, 2, mof_keys);
  ht = hfield(L, 2, "header", W->ptr == 8 ? HS_HT_FULL64 : HS_HT_FULL32);
  g = gfield(L, 2, "provider");
  type = (uint8_t)ifield(L, 2, "opcode", U8, 0, 0);
  version = (uint16_t)ifield(L, 2, "version", U16, 0, 0);
  pid = u32field(L, 2, "pid", 0, 0);
  tid = u32field(L, 2, "tid", 0, 0);
  ts = (int64_t)ifield(L, 2, "ts", ANY, 0, 1);
  pl = sfield(L, 2, "payload", &len, 0);
  cpu = cpufield(L, W, 2, "cpu", 0);
  return result(L, W, hsi_writer_mof(W->w, cpu, ht, &g, type, version, pid, tid, ts, pl, len), cpu, ts);
}

static const char *const stack_keys[] = {
  "ts", "event_ts", "pid", "tid", "frames", "ptr", "cpu", NULL
};

/* w:stack{ts=, event_ts=, pid=, tid=, frames=, ptr=, cpu=}: StackWalk op 32 */
static int w_stack(lua_State *L) {
  Writer *W = checkopen(L);
  int ptr, cpu, rc;
  uint32_t pid, tid;
  int64_t ts, ets;
  size_t n;
  checkkeys(L, 2, stack_keys);
  ts = (int64_t)ifield(L, 2, "ts", ANY, 0, 1);
  ets = (int64_t)ifield(L, 2, "event_ts", ANY, ts, 0);
  pid = u32field(L, 2, "pid", 0, 1);
  tid = u32field(L, 2, "tid", 0, 1);
  ptr = ptrfield(L, W, 2, "ptr");
  cpu = cpufield(L, W, 2, "cpu", 0);
  n = frames(L, W, 2, "frames");
  rc = hsi_writer_stack(W->w, cpu, ts, ets, pid, tid, W->frames, n, ptr);
  if (rc == 0) W->stacks++;
  return result(L, W, rc, cpu, ts);
}

/* ------------------------------------------------------- memory events */

/*
** Shared by heap, virtual and pool: encode op, write it with header kind
** `hk` (SYSTEM or PERFINFO at the event's width unless `header` says),
** then its stack.  Every field is read before anything is written, so a
** misuse error never leaves an event without its stack.
*/
static int memevent(lua_State *L, Writer *W, hsi_memop *op, int perfinfo) {
  uint8_t pl[256];
  int ptr, cpu, hk, version, hint, group, type, scpu, sptr, rc;
  long len;
  int64_t delay, sts;
  size_t n;
  ptr = ptrfield(L, W, 2, "ptr");
  cpu = cpufield(L, W, 2, "cpu", 0);
  hk = perfinfo ? (ptr == 8 ? HS_HT_PERFINFO64 : HS_HT_PERFINFO32)
                : (ptr == 8 ? HS_HT_SYSTEM64 : HS_HT_SYSTEM32);
  hk = hfield(L, 2, "header", hk);
  version = (int)ifield(L, 2, "version", U8, 0, 0);
  hint = (int)ifield(L, 2, "opcode", U8, 0, 0);
  scpu = cpufield(L, W, 2, "stack_cpu", (lua_Integer)(((uint32_t)cpu + 1) % W->cpus));
  delay = (int64_t)ifield(L, 2, "stack_delay", 0, 0x7FFFFFFF, STACK_DELAY, 0);
  sptr = (int)ifield(L, 2, "stack_ptr", ANY, W->ptr, 0);
  if (sptr != 4 && sptr != 8) fielderr(L, 2, "stack_ptr", "4 or 8 expected");
  n = frames(L, W, 2, "stack");
  op->pointer_size = (uint8_t)ptr;
  len = hsi_memev_encode(op, hint, version, ptr, pl, sizeof pl, &group, &type);
  if (len < 0 || (size_t)len > sizeof pl)
    return luaL_argerror(L, 2, lua_pushfstring(L, "no layout for this event (opcode %d, version %d)", hint, version));
  if (version == 0) version = hsi_memev_version(group, type);
  if (n > 0 && op->ts > INT64_MAX - delay)              /* its StackWalk's stamp, below, would wrap */
    fielderr(L, 2, "ts", "room after it for its StackWalk's (ts + stack_delay at most 2^63 - 1)");
  rc = hsi_writer_kernel(W->w, cpu, hk, group, type, version, op->pid, op->tid, op->ts, pl, (size_t)len);
  if (rc < 0 || n == 0) return result(L, W, rc, cpu, op->ts);
  wrote(W, cpu, op->ts);
  sts = op->ts + delay;
  if (W->used[scpu] && W->last[scpu] > sts) sts = W->last[scpu];
  rc = hsi_writer_stack(W->w, scpu, sts, op->ts, op->pid, op->tid, W->frames, n, sptr);
  if (rc == HS_EARG)
    return luaL_error(L, "the event was written but its stack was rejected: %s", hsi_writer_error(W->w));
  if (rc < 0) return failed(L, W, rc);
  wrote(W, scpu, sts);
  W->stacks++;
  lua_pushboolean(L, 1);
  lua_pushinteger(L, (lua_Integer)sts);
  return 2;
}

static const char *const heap_names[] = { "create", "alloc", "realloc", "free", "destroy", NULL };
static const int heap_values[] = { HSI_OP_HEAP_CREATE, HSI_OP_HEAP_ALLOC, HSI_OP_HEAP_REALLOC,
                                   HSI_OP_HEAP_FREE, HSI_OP_HEAP_DESTROY };

static const char *const heap_keys[] = {
  "op", "pid", "tid", "ts", "heap", "addr", "size", "old_addr", "old_size", "source", "flags",
  "stack", "cpu", "ptr", "header", "version", "opcode", "stack_cpu", "stack_delay", "stack_ptr", NULL
};

/*
** w:heap{op=, pid=, tid=, ts=, heap=, addr=, size=, old_addr=, old_size=,
** source=, flags=, stack=, ...} -> true [, stack_ts]
*/
static int w_heap(lua_State *L) {
  Writer *W = checkopen(L);
  hsi_memop op;
  checkkeys(L, 2, heap_keys);
  memset(&op, 0, sizeof op);
  op.kind = choice(L, 2, "op", heap_names, heap_values, 0, 0, 1);
  op.pid = u32field(L, 2, "pid", 0, 1);
  op.tid = u32field(L, 2, "tid", 0, 0);
  op.ts = (int64_t)ifield(L, 2, "ts", ANY, 0, 1);
  op.heap = (uint64_t)ifield(L, 2, "heap", ANY, 0, 0);
  op.addr = (uint64_t)ifield(L, 2, "addr", ANY, 0, 0);
  op.size = (uint64_t)ifield(L, 2, "size", ANY, 0, 0);
  op.old_addr = (uint64_t)ifield(L, 2, "old_addr", ANY, 0, 0);
  op.old_size = (uint64_t)ifield(L, 2, "old_size", ANY, 0, 0);
  op.source = u32field(L, 2, "source", 0, 0);
  op.flags = u32field(L, 2, "flags", 0, 0);
  return memevent(L, W, &op, 0);
}

static const char *const mem_flag_names[] = {
  "commit", "reserve", "decommit", "release", "reset", "top_down", "write_watch", "physical",
  "reset_undo", "large_pages", NULL
};
static const uint32_t mem_flag_values[] = {
  HS_MEM_COMMIT, HS_MEM_RESERVE, HS_MEM_DECOMMIT, HS_MEM_RELEASE, 0x80000, 0x100000, 0x200000,
  0x400000, 0x1000000, 0x20000000
};

/* MEM_* flags from a number, a name or a list of names. */
static uint32_t memflags(lua_State *L, int t, uint32_t def) {
  int ty = rawfield(L, t, "flags"), ft = lua_gettop(L);
  uint32_t v = 0;
  lua_Integer i, n;
  if (ty == LUA_TNIL) {
    lua_pop(L, 1);
    return def;
  }
  if (ty == LUA_TNUMBER) {
    lua_pop(L, 1);
    return u32field(L, t, "flags", 0, 1);
  }
  if (ty == LUA_TSTRING) {
    lua_createtable(L, 1, 0);
    lua_pushvalue(L, ft);
    lua_rawseti(L, -2, 1);
    lua_replace(L, ft);
  } else if (ty != LUA_TTABLE) {
    fielderr(L, t, "flags", "a number, a flag name or a list of names expected");
  }
  n = luaL_len(L, ft);
  for (i = 1; i <= n; i++) {
    const char *s;
    int k;
    lua_geti(L, ft, i);
    s = lua_tostring(L, -1);
    for (k = 0; s && mem_flag_names[k]; k++)
      if (strcmp(mem_flag_names[k], s) == 0) break;
    if (!s || !mem_flag_names[k])
      fielderr(L, t, "flags", lua_pushfstring(L, "unknown flag '%s' (known: commit reserve decommit "
                                                 "release reset top_down write_watch physical "
                                                 "reset_undo large_pages)", luaL_tolstring(L, -1, NULL)));
    v |= mem_flag_values[k];
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return v;
}

static const char *const virtual_names[] = { "alloc", "free", NULL };
static const int virtual_values[] = { HSI_OP_VALLOC, HSI_OP_VFREE };

static const char *const virtual_keys[] = {
  "op", "pid", "tid", "ts", "addr", "size", "flags", "stack", "cpu", "ptr", "header", "version",
  "opcode", "stack_cpu", "stack_delay", "stack_ptr", NULL
};

/*
** w:virtual{op="alloc"|"free", pid=, tid=, ts=, addr=, size=, flags=, stack=, ...}
** PERFINFO header (no ids): pid is the payload's target process; tid only
** names the stack's thread.  flags default: COMMIT|RESERVE for alloc,
** RELEASE for free.
*/
static int w_virtual(lua_State *L) {
  Writer *W = checkopen(L);
  hsi_memop op;
  checkkeys(L, 2, virtual_keys);
  memset(&op, 0, sizeof op);
  op.kind = choice(L, 2, "op", virtual_names, virtual_values, 0, 0, 1);
  op.pid = u32field(L, 2, "pid", 0, 1);
  op.tid = u32field(L, 2, "tid", 0, 0);
  op.ts = (int64_t)ifield(L, 2, "ts", ANY, 0, 1);
  op.addr = (uint64_t)ifield(L, 2, "addr", ANY, 0, 1);
  op.size = (uint64_t)ifield(L, 2, "size", ANY, 0, 1);
  op.flags = memflags(L, 2, op.kind == HSI_OP_VALLOC ? HS_MEM_COMMIT | HS_MEM_RESERVE : HS_MEM_RELEASE);
  return memevent(L, W, &op, 1);
}

static const char *const pool_names[] = { "alloc", "free", NULL };
static const int pool_values[] = { HSI_OP_POOL_ALLOC, HSI_OP_POOL_FREE };
static const char *const pool_type_names[] = {
  "nonpaged", "paged", "nonpagednx", "nonpagedsession", "pagedsession", "nonpagedsessionnx", NULL
};
static const int pool_type_values[] = { 0, 1, 0x200, 0x20, 0x21, 0x220 };

static const char *const pool_keys[] = {
  "op", "pid", "tid", "ts", "tag", "type", "size", "entry", "session", "stack", "cpu", "ptr",
  "header", "version", "opcode", "stack_cpu", "stack_delay", "stack_ptr", NULL
};

/* Pool tag: up to 4 characters (padded with blanks, first in the low byte) or a number. */
static uint32_t tagfield(lua_State *L, int t) {
  size_t n, i;
  uint32_t v = 0;
  const char *s;
  if (rawfield(L, t, "tag") == LUA_TNUMBER) {
    lua_pop(L, 1);
    return u32field(L, t, "tag", 0, 1);
  }
  lua_pop(L, 1);
  s = sfield(L, t, "tag", &n, 1);
  if (n == 0 || n > 4) fielderr(L, t, "tag", "1 to 4 characters expected");
  for (i = 0; i < 4; i++) v |= (uint32_t)(i < n ? (unsigned char)s[i] : ' ') << (8 * i);
  return v;
}

/*
** w:pool{op="alloc"|"free", pid=, tid=, ts=, tag=, type=, size=, entry=,
** session=, stack=, ...}.  A session pool type (bit 0x20) writes the
** Session events (33/35) with SessionId.
*/
static int w_pool(lua_State *L) {
  Writer *W = checkopen(L);
  hsi_memop op;
  checkkeys(L, 2, pool_keys);
  memset(&op, 0, sizeof op);
  op.kind = choice(L, 2, "op", pool_names, pool_values, 0, 0, 1);
  op.pid = u32field(L, 2, "pid", 0, 1);
  op.tid = u32field(L, 2, "tid", 0, 0);
  op.ts = (int64_t)ifield(L, 2, "ts", ANY, 0, 1);
  op.tag = tagfield(L, 2);
  op.pool_type = (uint32_t)choice(L, 2, "type", pool_type_names, pool_type_values, 1, 0, 0);
  op.size = (uint64_t)ifield(L, 2, "size", ANY, 0, 0);
  op.addr = (uint64_t)ifield(L, 2, "entry", ANY, 0, 1);
  op.session = u32field(L, 2, "session", 0, 0);
  return memevent(L, W, &op, 0);
}

/* ------------------------------------------------------------ the class */

static const luaL_Reg methods[] = {
  {"process", w_process},
  {"thread", w_thread},
  {"image", w_image},
  {"kernel", w_kernel},
  {"event", w_event},
  {"mof", w_mof},
  {"stack", w_stack},
  {"heap", w_heap},
  {"virtual", w_virtual},
  {"pool", w_pool},
  {"stats", w_stats},
  {"close", w_close},
  {NULL, NULL}
};

static const luaL_Reg metameth[] = {
  {"__index", NULL},  /* placeholder: the method table */
  {"__gc", w_gc},
  {"__close", w_gc},
  {"__tostring", w_tostring},
  {NULL, NULL}
};

/* The opener (lua_run.h): heapscript.writer, the metatable, the methods. */
int hsi_lua_open_writer(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_pushcfunction(L, w_new);
  lua_setfield(L, 1, "writer");
  luaL_newmetatable(L, HSI_LUA_WRITER);
  luaL_setfuncs(L, metameth, 0);
  luaL_newlib(L, methods);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__index");
  return 1;
}
