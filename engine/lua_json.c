/*
** lua_json.c -- heapscript.json(value [, indent]) -> string: a Lua value
** as JSON, the encoder behind report.json (scripts/report.lua); and
** heapscript.sort(list), the bytewise order of its keys, for report keys.
**
** In C because a report of 100,000 leaking stacks is a million values:
** in Lua, each object's keys sorted with strcoll and each string scanned
** by a pattern took seconds.  The text is what report.json always wrote:
**   tables that are exactly a sequence (or empty) as arrays, other tables
**   as objects with their keys (as tostring gives them) sorted bytewise;
**   integers exactly, other numbers with "%.17g" (NaN and infinities as
**   null); userdata as its tostring; strings with '"', '\', control
**   bytes escaped ("\n", "\t", "\r", else "\u00XX"), a byte that is not
**   part of valid UTF-8 as U+FFFD, and every other byte as it is.
** With an indent, one item a line, each level indented once more.
** Tables are read raw (no __index, __len or __pairs).  A table nested
** deeper than MAXDEPTH (one that holds itself) is an error, as is a
** function or a thread, or two keys of a table written alike.
**
** The text grows in a userdata at a fixed stack slot, so an error on the
** way leaves nothing for anyone to free.
*/
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "text.h"

#include "lua_run.h"

#define MAXDEPTH 200

typedef struct out {
  lua_State *L;
  int slot;                    /* stack index of the buffer userdata */
  char *p;
  size_t n, cap;
  const char *indent;
  size_t ilen;
  FILE *f;                     /* streaming: the buffer is written here when full */
  int failed;                  /* a write to f failed (errno kept in err) */
  int err;
} out;

/* Streaming: the buffer's bytes written to f, the buffer emptied. */
static void flush(out *o) {
  if (o->n && !o->failed && fwrite(o->p, 1, o->n, o->f) != o->n) {
    o->failed = 1;
    o->err = errno;
  }
  o->n = 0;
}

static void room(out *o, size_t more) {
  char *np;
  size_t cap;
  if (o->cap - o->n >= more) return;
  if (o->f) {
    flush(o);
    if (o->cap >= more) return;
  }
  cap = o->cap * 2;
  while (cap - o->n < more) cap *= 2;
  np = (char *)lua_newuserdatauv(o->L, cap, 0);
  memcpy(np, o->p, o->n);
  lua_replace(o->L, o->slot);
  o->p = np;
  o->cap = cap;
}

static void add(out *o, const char *s, size_t len) {
  room(o, len);
  memcpy(o->p + o->n, s, len);
  o->n += len;
}

static void addc(out *o, char c) {
  room(o, 1);
  o->p[o->n++] = c;
}

/* A newline and depth indents, with an indent; nothing without one. */
static void newline(out *o, int depth) {
  int i;
  if (!o->ilen) return;
  addc(o, '\n');
  for (i = 0; i < depth; i++) add(o, o->indent, o->ilen);
}

/* Does any of the 8 bytes of w need escaping: below 0x20, '"', '\\' or
   DEL?  The words' tests for a byte below n and for a zero byte: each
   sets the high bit of such a byte (and may of bytes above it, only where
   one is: the answer is exact whatever the byte order). */
static int any_special(uint64_t w) {
  const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
  uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\'), d = w ^ (ones * 0x7F);
  uint64_t hit = ((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((b - ones) & ~b) | ((d - ones) & ~d) | w;
  return (hit & high) != 0;
}


static void add_string(out *o, const char *s, size_t len) {
  size_t i = 0, run = 0;
  room(o, len + 2);
  o->p[o->n++] = '"';
  for (; i < len; i++) {
    unsigned char c;
    char e[8];
    const char *r;
    while (len - i >= 8) {            /* a word at a time past what needs none */
      uint64_t w;
      memcpy(&w, s + i, 8);
      if (any_special(w)) break;
      i += 8;
    }
    if (i == len) break;
    c = (unsigned char)s[i];
    if (c >= 0x80) {                  /* UTF-8 as it is; a byte of none is U+FFFD (JSON is UTF-8) */
      size_t k = hsi_utf8_seq((const unsigned char *)s + i, len - i);
      if (k) { i += k - 1; continue; }
    } else if (c >= 0x20 && c != 0x7F && c != '"' && c != '\\') {
      continue;
    }
    add(o, s + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': r = "\\\""; break;
      case '\\': r = "\\\\"; break;
      case '\n': r = "\\n"; break;
      case '\t': r = "\\t"; break;
      case '\r': r = "\\r"; break;
      default: if (c >= 0x80) r = "\xEF\xBF\xBD"; else { snprintf(e, sizeof e, "\\u%04x", c); r = e; } break;
    }
    add(o, r, strlen(r));
  }
  add(o, s + run, len - run);
  addc(o, '"');
}

/* Bytewise order of two strings (Lua's own in the C locale), equal ones
   by `at`, as qsort takes it (lua_run.h). */
int hsi_lua_keycmp(const void *a, const void *b) {
  const hsi_lua_key *x = (const hsi_lua_key *)a, *y = (const hsi_lua_key *)b;
  size_t m = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->s, y->s, m);
  if (c) return c;
  if (x->len != y->len) return x->len < y->len ? -1 : 1;
  return (x->at > y->at) - (x->at < y->at);
}

size_t hsi_lua_keyrun(const hsi_lua_key *k, size_t i, size_t n) {
  size_t j = i + 1;
  while (j < n && k[j].len == k[i].len && memcmp(k[j].s, k[i].s, k[i].len) == 0) j++;
  return j;
}

static void value(out *o, int idx, int depth);

/* An object's keys in hsi_lua_keycmp's order: by insertion for the few
   of most objects (a report's 100,000 stack entries each sorted theirs
   through qsort, a quarter of the time of writing them), else qsort.  The
   order is total, so either gives the same. */
static void sort_keys(hsi_lua_key *k, size_t n) {
  size_t i, j;
  if (n > 16) { qsort(k, n, sizeof *k, hsi_lua_keycmp); return; }
  for (i = 1; i < n; i++) {
    hsi_lua_key x = k[i];
    for (j = i; j > 0 && hsi_lua_keycmp(&k[j - 1], &x) > 0; j--) k[j] = k[j - 1];
    k[j] = x;
  }
}

/* The table at idx as an array: it holds exactly 1..n. */
static void array(out *o, int idx, lua_Integer n, int depth) {
  lua_State *L = o->L;
  lua_Integer i;
  if (n == 0) { add(o, "[]", 2); return; }
  addc(o, '[');
  for (i = 1; i <= n; i++) {
    if (i > 1) addc(o, ',');
    newline(o, depth + 1);
    lua_rawgeti(L, idx, i);
    value(o, lua_gettop(L), depth + 1);
    lua_pop(L, 1);
  }
  newline(o, depth);
  addc(o, ']');
}

/* Key i (sorted) of the object at idx and its value, written. */
static void member(out *o, int idx, const hsi_lua_key *k, size_t i, int depth, int orig) {
  lua_State *L = o->L;
  if (i) addc(o, ',');
  newline(o, depth + 1);
  add_string(o, k->s, k->len);
  if (o->ilen) add(o, ": ", 2);
  else addc(o, ':');
  if (orig) lua_rawgeti(L, orig, (lua_Integer)k->at);
  else lua_pushlstring(L, k->s, k->len);
  lua_rawget(L, idx);
  value(o, lua_gettop(L), depth + 1);
  lua_pop(L, 1);
}

/*
** The table at idx as an object of npairs keys, sorted.  Keys that are
** all strings (the usual object) are kept alive by the table and sorted
** in place on the C stack when there are few; other keys get their
** tostring text, which two tables keep alive.
*/
#define FEW 32

static void object(out *o, int idx, size_t npairs, int strings, int depth) {
  lua_State *L = o->L;
  hsi_lua_key few[FEW], *k = few;
  size_t i = 0;
  int names = 0, orig = 0;
  if (!strings || npairs > FEW) {
    lua_createtable(L, (int)npairs, 0);  /* names: tostring of each key */
    names = lua_gettop(L);
    lua_createtable(L, (int)npairs, 0);  /* the keys themselves */
    orig = lua_gettop(L);
    k = (hsi_lua_key *)lua_newuserdatauv(L, npairs * sizeof *k, 0);
  }
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (i == npairs) continue;           /* counted just before: never */
    if (!orig) {
      k[i].s = lua_tolstring(L, -1, &k[i].len);   /* a string: the table keeps it */
    } else {
      lua_pushvalue(L, -1);
      lua_rawseti(L, orig, (lua_Integer)i + 1);
      lua_pushvalue(L, -1);
      k[i].s = luaL_tolstring(L, -1, &k[i].len);
      lua_rawseti(L, names, (lua_Integer)i + 1);
      lua_pop(L, 1);
    }
    k[i].at = i + 1;
    i++;
  }
  npairs = i;
  sort_keys(k, npairs);
  /* keys that are not all strings may meet as one name ([10] and ["10"]):
     an object with the name twice would keep one value in any reader */
  for (i = 1; !strings && i < npairs; i++)
    if (hsi_lua_keyrun(k, i - 1, npairs) > i)
      luaL_error(L, "JSON: two keys of one table are written \"%s\" (a number and a string, or two values "
                 "tostring gives alike)", k[i].s);
  addc(o, '{');
  for (i = 0; i < npairs; i++) member(o, idx, &k[i], i, depth, orig);
  newline(o, depth);
  addc(o, '}');
  if (orig) lua_pop(L, 3);
}

static void value(out *o, int idx, int depth) {
  lua_State *L = o->L;
  char num[64];
  size_t len;
  const char *s;
  switch (lua_type(L, idx)) {
  case LUA_TNIL: add(o, "null", 4); return;
  case LUA_TBOOLEAN:
    if (lua_toboolean(L, idx)) add(o, "true", 4);
    else add(o, "false", 5);
    return;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) {
      snprintf(num, sizeof num, LUA_INTEGER_FMT, (LUAI_UACINT)lua_tointeger(L, idx));
    } else {
      lua_Number v = lua_tonumber(L, idx);
      if (v != v || v == (lua_Number)HUGE_VAL || v == -(lua_Number)HUGE_VAL) { add(o, "null", 4); return; }
      snprintf(num, sizeof num, "%.17g", (double)v);   /* round-trips every double */
    }
    add(o, num, strlen(num));
    return;
  case LUA_TSTRING:
    s = lua_tolstring(L, idx, &len);
    add_string(o, s, len);
    return;
  case LUA_TUSERDATA: case LUA_TLIGHTUSERDATA:
    s = luaL_tolstring(L, idx, &len);
    add_string(o, s, len);
    lua_pop(L, 1);
    return;
  case LUA_TTABLE: {
    size_t npairs = 0;
    int strings = 1;
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
    if (depth >= MAXDEPTH)
      luaL_error(L, "JSON: tables nested deeper than %d (a table that holds itself?)", MAXDEPTH);
    luaL_checkstack(L, 8, "JSON: nested too deeply");
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      lua_pop(L, 1);
      npairs++;
      strings &= lua_type(L, -1) == LUA_TSTRING;
    }
    if ((lua_Integer)npairs == n) array(o, idx, n, depth);   /* a sequence, or empty */
    else object(o, idx, npairs, strings, depth);
    return;
  }
  default:
    luaL_error(L, "JSON: cannot encode a %s", luaL_typename(L, idx));
  }
}

/*
** heapscript.sort(list) -> list: a list of strings sorted in place, in the
** order of hsi_lua_keycmp (Lua's `<` in the C locale), in C: table.sort calls
** back into Lua for each of the two million comparisons that 100,000
** report keys take.  The strings stay alive in a copy of the list while
** it is written back.
*/
static int l_sort(lua_State *L) {
  lua_Integer i, n;
  hsi_lua_key *k;
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  n = (lua_Integer)lua_rawlen(L, 1);
  if (n < 2) return 1;
  if ((lua_Unsigned)n > (lua_Unsigned)(SIZE_MAX / sizeof *k)) return luaL_error(L, "sort: list too long");
  lua_createtable(L, (int)(n < INT_MAX ? n : INT_MAX), 0);   /* 2: the strings, kept */
  k = (hsi_lua_key *)lua_newuserdatauv(L, (size_t)n * sizeof *k, 0);  /* 3 */
  for (i = 1; i <= n; i++) {
    if (lua_rawgeti(L, 1, i) != LUA_TSTRING)
      return luaL_error(L, "sort: item %I is a %s, not a string", (LUAI_UACINT)i, luaL_typename(L, -1));
    k[i - 1].s = lua_tolstring(L, -1, &k[i - 1].len);
    k[i - 1].at = (size_t)i;
    lua_rawseti(L, 2, i);
  }
  qsort(k, (size_t)n, sizeof *k, hsi_lua_keycmp);
  for (i = 1; i <= n; i++) {
    lua_rawgeti(L, 2, (lua_Integer)k[i - 1].at);
    lua_rawseti(L, 1, i);
  }
  lua_settop(L, 1);
  return 1;
}

/*
** heapscript.json(value [, indent [, file]]) -> string; with a file
** handle, the text is written to it as it is made (a report of 100,000
** stacks is 27 MB: not held twice more as a buffer and a string), and
** the result is true, or nil and a message when a write failed.
*/
static int l_json(lua_State *L) {
  out o;
  luaL_Stream *fh = NULL;
  luaL_checkany(L, 1);
  if (lua_type(L, 2) == LUA_TNUMBER) {  /* N spaces, as json.dumps(indent=N) (it was the text "2") */
    lua_Integer k = luaL_checkinteger(L, 2);
    if (k < 0 || k > 16) return luaL_argerror(L, 2, "indent: 0 to 16 spaces, or the text of one level");
    lua_pushfstring(L, "%s", "                " + (16 - k));
    lua_replace(L, 2);
  }
  o.indent = luaL_optlstring(L, 2, "", &o.ilen);
  if (strspn(o.indent, " \t") != o.ilen)  /* anything else would be in the JSON, or change it */
    return luaL_argerror(L, 2, "indent: blanks and tabs only");
  if (!lua_isnoneornil(L, 3)) {
    fh = (luaL_Stream *)luaL_checkudata(L, 3, LUA_FILEHANDLE);
    if (!fh->closef) return luaL_argerror(L, 3, "attempt to use a closed file");
  }
  lua_settop(L, 3);
  o.L = L;
  o.f = fh ? fh->f : NULL;
  o.failed = o.err = 0;
  o.cap = fh ? 65536 : 256;
  o.n = 0;
  o.p = (char *)lua_newuserdatauv(L, o.cap, 0);
  o.slot = lua_gettop(L);
  value(&o, 1, 0);
  if (!fh) {
    lua_pushlstring(L, o.p, o.n);
    return 1;
  }
  flush(&o);
  if (o.failed) {
    errno = o.err;
    return luaL_fileresult(L, 0, NULL);   /* nil, the message, the error number */
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* The opener (lua_run.h): heapscript.json, heapscript.sort. */
int hsi_lua_open_json(lua_State *L) {
  lua_pushcfunction(L, l_json);
  lua_setfield(L, 1, "json");
  lua_pushcfunction(L, l_sort);
  lua_setfield(L, 1, "sort");
  return 0;
}
