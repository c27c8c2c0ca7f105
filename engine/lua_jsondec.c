/*
** lua_jsondec.c -- heapscript.json_decode(text, null) -> value: JSON text
** as Lua values, the decoder behind scripts/json.lua (stored baselines:
** the JSON report of `leaks --json`).  In C because a baseline of 100,000
** leaking stacks is 27 MB of text: the LPeg grammar json.lua had took
** 1.2 s over it, a Lua call for every field and number.
**
** The values are json.lua's: objects as tables (a key given twice keeps
** its last value), arrays as sequences, strings with their escapes
** undone (each \uXXXX as Lua's utf8.char makes it, a surrogate pair
** \uD83D\uDE00 as its one character, RFC 8259: jq -a and Python's
** ensure_ascii write so; a lone surrogate alone), numbers as tonumber reads them and then integers where they are
** whole (math.tointeger), true and false, and null as the `null` given.
** The grammar is JSON's: whitespace is space, tab, CR and LF; a number is
** -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; a string holds any byte
** but '"' and '\' unescaped.  Anything else, or text after the value, is
** an error naming the byte offset and what was expected there.  Nesting
** deeper than MAXDEPTH is an error too.
*/
#include <stdio.h>
#include <string.h>
#include "heapscript.h"
#include "lua_run.h"

#define MAXDEPTH 200
#define STR_(x) #x
#define STR(x) STR_(x)

typedef struct jd {
  lua_State *L;
  const char *s;
  size_t n, i;
  int depth;
  int null;                   /* stack index of the null value */
} jd;

static void fail(jd *d, const char *what) {
  if (d->i >= d->n) luaL_error(d->L, "invalid JSON at byte %I (the end): expected %s", (LUAI_UACINT)d->i, what);
  luaL_error(d->L, "invalid JSON at byte %I: expected %s", (LUAI_UACINT)d->i, what);
}

static void ws(jd *d) {
  while (d->i < d->n) {
    char c = d->s[d->i];
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') break;
    d->i++;
  }
}

/* The literal word w at the current byte, else an error. */
static void word(jd *d, const char *w) {
  size_t k = strlen(w);
  if (d->n - d->i < k || memcmp(d->s + d->i, w, k) != 0) fail(d, "a value");
  d->i += k;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Code point u as Lua's utf8.char writes it (u <= 0x10FFFF here). */
static void add_utf8(luaL_Buffer *b, unsigned u) {
  if (u < 0x80) {
    luaL_addchar(b, (char)u);
  } else if (u < 0x800) {
    luaL_addchar(b, (char)(0xC0 | (u >> 6)));
    luaL_addchar(b, (char)(0x80 | (u & 0x3F)));
  } else if (u >= 0x10000) {
    luaL_addchar(b, (char)(0xF0 | (u >> 18)));
    luaL_addchar(b, (char)(0x80 | ((u >> 12) & 0x3F)));
    luaL_addchar(b, (char)(0x80 | ((u >> 6) & 0x3F)));
    luaL_addchar(b, (char)(0x80 | (u & 0x3F)));
  } else {
    luaL_addchar(b, (char)(0xE0 | (u >> 12)));
    luaL_addchar(b, (char)(0x80 | ((u >> 6) & 0x3F)));
    luaL_addchar(b, (char)(0x80 | (u & 0x3F)));
  }
}

/* The string at the current byte (a '"'), pushed. */
static void string(jd *d) {
  luaL_Buffer b;
  size_t run;
  d->i++;                                  /* the opening quote */
  run = d->i;
  luaL_buffinit(d->L, &b);
  for (;;) {
    char c;
    if (d->i >= d->n) fail(d, "'\"' closing the string");
    c = d->s[d->i];
    if (c == '"') break;
    if (c != '\\') { d->i++; continue; }
    luaL_addlstring(&b, d->s + run, d->i - run);
    if (++d->i >= d->n) fail(d, "an escape");
    switch (d->s[d->i]) {
      case '"': luaL_addchar(&b, '"'); break;
      case '\\': luaL_addchar(&b, '\\'); break;
      case '/': luaL_addchar(&b, '/'); break;
      case 'b': luaL_addchar(&b, '\b'); break;
      case 'f': luaL_addchar(&b, '\f'); break;
      case 'n': luaL_addchar(&b, '\n'); break;
      case 'r': luaL_addchar(&b, '\r'); break;
      case 't': luaL_addchar(&b, '\t'); break;
      case 'u': {
        unsigned u = 0;
        int k;
        for (k = 1; k <= 4; k++) {
          int h = d->i + (size_t)k < d->n ? hexval(d->s[d->i + (size_t)k]) : -1;
          if (h < 0) { d->i += (size_t)k; fail(d, "four hex digits after \\u"); }
          u = u * 16 + (unsigned)h;
        }
        d->i += 4;
        if (u >= 0xD800 && u <= 0xDBFF && d->i + 6 < d->n && d->s[d->i + 1] == '\\' && d->s[d->i + 2] == 'u') {
          unsigned lo = 0;                 /* a surrogate pair: one character */
          for (k = 3; k <= 6; k++) {
            int h = hexval(d->s[d->i + (size_t)k]);
            if (h < 0) break;
            lo = lo * 16 + (unsigned)h;
          }
          if (k == 7 && lo >= 0xDC00 && lo <= 0xDFFF) {
            u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            d->i += 6;
          }
        }
        add_utf8(&b, u);
        break;
      }
      default: fail(d, "an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
    }
    run = ++d->i;
  }
  luaL_addlstring(&b, d->s + run, d->i - run);
  luaL_pushresult(&b);
  d->i++;                                  /* the closing quote */
}

/* The number at the current byte, pushed: an integer where it is whole. */
static void number(jd *d) {
  size_t start = d->i;
  int isint;
  lua_Integer v;
  const char *s = d->s;
  if (d->i < d->n && s[d->i] == '-') d->i++;
  if (d->i < d->n && s[d->i] == '0') d->i++;
  else if (d->i < d->n && s[d->i] >= '1' && s[d->i] <= '9') {
    while (d->i < d->n && s[d->i] >= '0' && s[d->i] <= '9') d->i++;
  } else {
    fail(d, "a value");
  }
  if (d->i + 1 < d->n && s[d->i] == '.' && s[d->i + 1] >= '0' && s[d->i + 1] <= '9') {
    d->i += 2;
    while (d->i < d->n && s[d->i] >= '0' && s[d->i] <= '9') d->i++;
  }
  if (d->i < d->n && (s[d->i] == 'e' || s[d->i] == 'E')) {
    size_t e = d->i + 1;
    if (e < d->n && (s[e] == '+' || s[e] == '-')) e++;
    if (e < d->n && s[e] >= '0' && s[e] <= '9') {
      while (e < d->n && s[e] >= '0' && s[e] <= '9') e++;
      d->i = e;
    }
  }
  lua_pushlstring(d->L, s + start, d->i - start);
  if (lua_stringtonumber(d->L, lua_tostring(d->L, -1)) == 0) fail(d, "a number");
  lua_remove(d->L, -2);
  v = lua_tointegerx(d->L, -1, &isint);    /* math.tointeger: whole floats too */
  if (isint) {
    lua_pop(d->L, 1);
    lua_pushinteger(d->L, v);
  }
}

static void value(jd *d);

/* Is the current byte c?  Then it is read. */
static int eat(jd *d, char c) {
  if (d->i >= d->n || d->s[d->i] != c) return 0;
  d->i++;
  return 1;
}

/* At the '{' or '[' of an object or an array: its table pushed, and 0
   when it is empty (its `close` read too). */
static int begin(jd *d, char close) {
  d->i++;
  lua_newtable(d->L);
  ws(d);
  return !eat(d, close);
}

/* After an item of an object or an array: 1 at a ',' (another item
   follows), 0 at `close` (the end), else an error expecting `what`. */
static int another(jd *d, char close, const char *what) {
  ws(d);
  if (eat(d, ',')) return 1;
  if (!eat(d, close)) fail(d, what);
  return 0;
}

/* The object (or array) at the current byte, a '{' (a '['), pushed. */
static void object(jd *d) {
  if (!begin(d, '}')) return;
  do {
    ws(d);
    if (d->i >= d->n || d->s[d->i] != '"') fail(d, "a string naming a member");
    string(d);
    ws(d);
    if (!eat(d, ':')) fail(d, "':'");
    ws(d);
    value(d);
    lua_rawset(d->L, -3);
  } while (another(d, '}', "',' or '}'"));
}

static void array(jd *d) {
  lua_Integer k = 0;
  if (!begin(d, ']')) return;
  do {
    ws(d);
    value(d);
    lua_rawseti(d->L, -2, ++k);
  } while (another(d, ']', "',' or ']'"));
}

static void value(jd *d) {
  char c;
  if (d->i >= d->n) fail(d, "a value");
  c = d->s[d->i];
  switch (c) {
    case '"': string(d); return;
    case 't': word(d, "true"); lua_pushboolean(d->L, 1); return;
    case 'f': word(d, "false"); lua_pushboolean(d->L, 0); return;
    case 'n': word(d, "null"); lua_pushvalue(d->L, d->null); return;
    case '{': case '[':
      if (++d->depth > MAXDEPTH) fail(d, "at most " STR(MAXDEPTH) " nested objects and arrays");
      luaL_checkstack(d->L, 4, "JSON nesting");
      if (c == '{') object(d); else array(d);
      d->depth--;
      return;
    default: number(d); return;
  }
}

/* heapscript.json_decode(text, null) -> value */
static int l_json_decode(lua_State *L) {
  jd d;
  d.L = L;
  d.s = luaL_checklstring(L, 1, &d.n);
  d.i = 0;
  d.depth = 0;
  lua_settop(L, 2);
  d.null = 2;
  ws(&d);
  value(&d);
  ws(&d);
  if (d.i != d.n) fail(&d, "the end of the text after the value");
  return 1;
}

int hsi_lua_open_jsondec(lua_State *L) {
  lua_pushcfunction(L, l_json_decode);
  lua_setfield(L, 1, "json_decode");
  return 0;
}
