/*
** fuzz_json.c -- libFuzzer target over the JSON decoder of baselines
** (heapscript.json_decode, engine/lua_jsondec.c): any bytes decoded.
**  - Refused text must be refused with "invalid JSON at byte N: expected
**    ..." and N within the text (or at its end).
**  - Accepted text must come back whole through the encoder
**    (heapscript.json, engine/lua_json.c): its text decodes again, and
**    encodes to the same text (null is NaN here, which the encoder writes
**    as null; an empty object reads back as an empty array, and a byte of
**    no valid UTF-8 is written as U+FFFD, hence two rounds first).
**  - And the decoder must agree with the LPeg grammar it replaced (kept
**    in scripts/json.lua as json.decode_lpeg, the reference the Lua tests
**    use): both refuse the text, or both give the same value (same
**    types, integers and floats apart, same keys, null the same), for
**    texts nested at most 64 deep: the grammar stops sooner than the
**    decoder's 200 levels, at a depth its shape sets (LPeg's backtrack
**    stack: 99 objects, 199 arrays).  Read from scripts/json.lua (run
**    from the repository's root).
** Anything else aborts.  `make fuzz` builds it with libFuzzer; `make test`
** replays tests/fuzz/json_corpus through it (under ASan/UBSan with
** SANITIZE=1).
*/
#include <math.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heapscript.h"
#include "lua_run.h"
#include <lualib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int luaopen_lpeg(lua_State *L);

static lua_State *L;

/* How deep the text's brackets nest, outside strings. */
static int nesting(const uint8_t *p, size_t n) {
  size_t i;
  int d = 0, most = 0, in = 0;
  for (i = 0; i < n; i++) {
    if (in) {
      if (p[i] == '\\') i++;
      else if (p[i] == '"') in = 0;
    } else if (p[i] == '"') in = 1;
    else if (p[i] == '[' || p[i] == '{') { if (++d > most) most = d; }
    else if (p[i] == ']' || p[i] == '}') d--;
  }
  return most;
}

/* Are the values at a and b the same JSON value? */
static int same(int a, int b, int depth) {
  int t = lua_type(L, a), ok = 1;
  if (t != lua_type(L, b) || depth > 300) return 0;
  switch (t) {
  case LUA_TNUMBER:
    if (lua_isinteger(L, a) != lua_isinteger(L, b)) return 0;
    if (lua_isinteger(L, a)) return lua_tointeger(L, a) == lua_tointeger(L, b);
    return lua_tonumber(L, a) == lua_tonumber(L, b)
           || (lua_tonumber(L, a) != lua_tonumber(L, a) && lua_tonumber(L, b) != lua_tonumber(L, b));
  case LUA_TTABLE:
    if (lua_rawequal(L, a, b)) return 1;                        /* null */
    if (lua_rawlen(L, a) != lua_rawlen(L, b)) return 0;
    luaL_checkstack(L, 6, "fuzz_json");
    a = lua_absindex(L, a); b = lua_absindex(L, b);
    lua_pushnil(L);
    while (ok && lua_next(L, a)) {                              /* each of a's is in b */
      lua_pushvalue(L, -2);
      lua_rawget(L, b);
      ok = same(-1, -2, depth + 1);
      lua_pop(L, 2);
    }
    if (!ok) { lua_pop(L, 1); return 0; }
    lua_pushnil(L);
    while (ok && lua_next(L, b)) {                              /* and no more */
      lua_pushvalue(L, -2);
      ok = lua_rawget(L, a) != LUA_TNIL;
      lua_pop(L, 2);
    }
    if (!ok) lua_pop(L, 1);
    return ok;
  default:
    return lua_rawequal(L, a, b);
  }
}

/* Stack: 1 the functions' table, 2 json_decode, 3 json, 4 json.lua's
   table, 5 its decode_lpeg, 6 its null.  Pushes the result of
   json_decode(arg, NaN), json(arg), decode_lpeg(arg) or
   json_decode(arg, json.null): 1 with the value, 0 with the message. */
enum { DECODE = 2, ENCODE = 3, LPEG = 5, DECODE_NULL = 7 };
static int call(int fn, int arg) {
  int n = 1;
  lua_pushvalue(L, fn == DECODE_NULL ? DECODE : fn);
  lua_pushvalue(L, arg);
  if (fn == DECODE) { lua_pushnumber(L, (lua_Number)NAN); n = 2; }
  if (fn == DECODE_NULL) { lua_pushvalue(L, 6); n = 2; }
  return lua_pcall(L, n, 1, 0) == LUA_OK;
}

/* The message of a refused text: "invalid JSON at byte N..." with N <= size. */
static void check_refusal(const char *msg, size_t size) {
  const char *p = msg ? strstr(msg, "invalid JSON at byte ") : NULL;
  unsigned long long at;
  if (!p || sscanf(p + 21, "%llu", &at) != 1 || at > size || !strstr(p, "expected ")) {
    fprintf(stderr, "fuzz_json: refusal without its byte: %s\n", msg ? msg : "(not a string)");
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t n1, n2;
  const char *y1, *y2;
  int shallow = nesting(data, size) <= 64;   /* the grammar reads it (above) */
  if (!L) {
    if (!(L = luaL_newstate())) abort();
    lua_newtable(L);
    hsi_lua_open_jsondec(L);
    hsi_lua_open_json(L);
    lua_getfield(L, 1, "json_decode");
    lua_getfield(L, 1, "json");
    luaL_openlibs(L);
    luaL_requiref(L, "lpeg", luaopen_lpeg, 0);
    lua_pop(L, 1);
    if (luaL_dofile(L, "scripts/json.lua") != LUA_OK) {
      fprintf(stderr, "fuzz_json: %s (run from the repository's root)\n", lua_tostring(L, -1));
      abort();
    }
    lua_getfield(L, 4, "decode_lpeg");
    lua_getfield(L, 4, "null");
  }
  lua_settop(L, 6);
  lua_pushlstring(L, (const char *)data, size);               /* 7 */
  if (!call(DECODE, 7)) {                                     /* refused */
    check_refusal(lua_tostring(L, -1), size);
    if (shallow && call(LPEG, 7)) { fprintf(stderr, "fuzz_json: refused, but the grammar reads it\n"); abort(); }
    lua_settop(L, 6);
    return 0;
  }
  if (!call(ENCODE, 8)) { fprintf(stderr, "fuzz_json: an accepted value does not encode: %s\n", lua_tostring(L, -1)); abort(); }
  if (!call(DECODE, 9)) { fprintf(stderr, "fuzz_json: the encoder's text is refused: %s\n", lua_tostring(L, -1)); abort(); }
  if (!call(ENCODE, 10)) { fprintf(stderr, "fuzz_json: the value read back does not encode: %s\n", lua_tostring(L, -1)); abort(); }
  /* a round more: bytes of no valid UTF-8 are written as U+FFFD, so two
     keys may become one and sort otherwise once read back */
  if (!call(DECODE, 11) || !call(ENCODE, 12)) { fprintf(stderr, "fuzz_json: the second round failed\n"); abort(); }
  y1 = lua_tolstring(L, 11, &n1);
  y2 = lua_tolstring(L, 13, &n2);
  if (!y1 || !y2 || n1 != n2 || memcmp(y1, y2, n1) != 0) {
    fprintf(stderr, "fuzz_json: encoded, read back and encoded again, the text changed\n");
    abort();
  }
  lua_settop(L, 11);
  if (!call(DECODE_NULL, 7)) { fprintf(stderr, "fuzz_json: refused with json.null: %s\n", lua_tostring(L, -1)); abort(); }
  if (!shallow) { lua_settop(L, 6); return 0; }
  if (!call(LPEG, 7) || !same(-1, -2, 0)) {                   /* 13 against 12 */
    fprintf(stderr, "fuzz_json: the grammar reads it otherwise\n");
    abort();
  }
  lua_settop(L, 6);
  lua_gc(L, LUA_GCSTEP, 0);
  return 0;
}
