/*
** cursor.c -- bounds-checked reading of payload bytes, GUIDs, strings.
** Every read of file bytes outside the framing code goes through here.
** A read past the end returns zero and sets the sticky `bad` flag, so a
** decoder reads a whole layout and checks once.
*/
#include <string.h>
#include <stdio.h>
#include "heapscript.h"
#include "bytes.h"
#include "text.h"
#include "record.h"

void hs_cur_init(hs_cursor *c, const uint8_t *p, size_t len, int ptr) {
  c->p = p; c->len = len; c->pos = 0; c->bad = 0; c->ptr = ptr;
}

static const uint8_t *take(hs_cursor *c, size_t n) {
  if (c->bad || n > c->len - c->pos) { c->bad = 1; c->pos = c->len; return NULL; }
  c->pos += n;
  return c->p + c->pos - n;
}

uint8_t hs_cur_u8(hs_cursor *c) { const uint8_t *b = take(c, 1); return b ? b[0] : 0; }
uint16_t hs_cur_u16(hs_cursor *c) { const uint8_t *b = take(c, 2); return b ? rd16(b) : 0; }
uint32_t hs_cur_u32(hs_cursor *c) { const uint8_t *b = take(c, 4); return b ? rd32(b) : 0; }
uint64_t hs_cur_u64(hs_cursor *c) { const uint8_t *b = take(c, 8); return b ? rd64(b) : 0; }
uint64_t hs_cur_ptr(hs_cursor *c) { return c->ptr == 4 ? hs_cur_u32(c) : hs_cur_u64(c); }
void hs_cur_skip(hs_cursor *c, size_t n) { (void)take(c, n); }

hs_guid hs_cur_guid(hs_cursor *c) {
  const uint8_t *b = take(c, 16);
  hs_guid g;
  if (b) return hs_guid_from_bytes(b);
  memset(&g, 0, sizeof g);
  return g;
}

size_t hs_cur_cstr(hs_cursor *c, const char **s) {
  size_t i, start = c->pos;
  *s = NULL;
  if (c->bad) return 0;
  for (i = start; i < c->len && c->p[i] != 0; i++) {}
  *s = (const char *)c->p + start;
  c->pos = i < c->len ? i + 1 : c->len;
  return i - start;
}

/* Does w, four UTF-16 units, hold a 0 unit? */
static int has_zero_unit(uint64_t w) {
  return ((w - 0x0001000100010001ull) & ~w & 0x8000800080008000ull) != 0;
}

size_t hs_cur_wstr(hs_cursor *c, const uint8_t **s) {
  size_t i, start = c->pos;
  *s = NULL;
  if (c->bad) return 0;
  /* four characters at a time while none of them is 0 (image paths run
     to a hundred and more), then one at a time */
  for (i = start; i + 8 <= c->len; i += 8) {
    uint64_t w;
    memcpy(&w, c->p + i, 8);
    if (has_zero_unit(w)) break;
  }
  for (; i + 1 < c->len && (c->p[i] | c->p[i + 1]) != 0; i += 2) {}
  *s = c->p + start;
  if (i + 1 < c->len) { c->pos = i + 2; return i - start; }
  c->pos = c->len;                       /* no NUL: runs to the end */
  return (c->len - start) & ~(size_t)1;
}

/* Kernel payload SID (ETL-FORMAT §6.5): a u32 0 alone, or TOKEN_USER
   (two pointers) followed by a SID of 8 + 4n bytes. */
size_t hs_cur_sid(hs_cursor *c, const uint8_t **s) {
  size_t start = c->pos;
  const uint8_t *b;
  *s = NULL;
  if (c->bad || c->len - c->pos < 4) { c->bad = 1; return 0; }
  if (rd32(c->p + c->pos) == 0) { c->pos += 4; return 0; }
  hs_cur_skip(c, 2 * (size_t)c->ptr);
  b = take(c, 8);
  if (!b) return 0;
  hs_cur_skip(c, 4 * (size_t)b[1]);
  if (c->bad) return 0;
  *s = b;
  (void)start;
  return 8 + 4 * (size_t)b[1];
}

static size_t put_utf8(char *out, size_t cap, size_t n, unsigned cp) {
  char tmp[4];
  size_t k, i;
  if (cp < 0x80) { tmp[0] = (char)cp; k = 1; }
  else if (cp < 0x800) { tmp[0] = (char)(0xC0 | cp >> 6); tmp[1] = (char)(0x80 | (cp & 0x3F)); k = 2; }
  else if (cp < 0x10000) {
    tmp[0] = (char)(0xE0 | cp >> 12); tmp[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    tmp[2] = (char)(0x80 | (cp & 0x3F)); k = 3;
  } else {
    tmp[0] = (char)(0xF0 | cp >> 18); tmp[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    tmp[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); tmp[3] = (char)(0x80 | (cp & 0x3F)); k = 4;
  }
  if (n + k >= cap) return n;            /* keep room for the NUL; never split a character */
  for (i = 0; i < k; i++) out[n + i] = tmp[i];
  return n + k;
}

size_t hs_utf16_to_utf8(const uint8_t *s, size_t nbytes, char *out, size_t outlen) {
  size_t i = 0, n = 0, m;
  if (outlen == 0) return 0;
  /* four ASCII characters at a time, none of them 0 (paths, names) */
  for (; i + 8 <= nbytes && n + 5 < outlen; i += 8, n += 4) {
    uint64_t w;
    memcpy(&w, s + i, 8);
    if ((w & 0xFF80FF80FF80FF80ull) || has_zero_unit(w)) break;
    out[n] = (char)s[i];
    out[n + 1] = (char)s[i + 2];
    out[n + 2] = (char)s[i + 4];
    out[n + 3] = (char)s[i + 6];
  }
  for (; i + 1 < nbytes; i += 2) {
    unsigned u = rd16(s + i), cp = u;
    if (u < 0x80) {                        /* ASCII, most paths and names: as put_utf8 would */
      if (u == 0 || n + 1 >= outlen) break;
      out[n++] = (char)u;
      continue;
    }
    if (u >= 0xD800 && u < 0xDC00) {
      unsigned v = i + 3 < nbytes ? rd16(s + i + 2) : 0;
      if (v >= 0xDC00 && v < 0xE000) { cp = 0x10000 + ((u - 0xD800) << 10) + (v - 0xDC00); i += 2; }
      else cp = 0xFFFD;
    } else if (u >= 0xDC00 && u < 0xE000) cp = 0xFFFD;
    if ((m = put_utf8(out, outlen, n, cp)) == n) break;   /* full: a prefix, no split character */
    n = m;
  }
  out[n] = 0;
  return n;
}

size_t hs_sid_format(const uint8_t *s, size_t n, char *out, size_t outlen) {
  uint64_t auth = 0;
  size_t i, k, sub;
  int w;
  if (n < 8 || outlen == 0) return 0;
  sub = s[1];
  if (n < 8 + 4 * sub) return 0;
  for (i = 2; i < 8; i++) auth = auth << 8 | s[i];
  w = snprintf(out, outlen, "S-%u-%llu", s[0], (unsigned long long)auth);
  if (w < 0 || (size_t)w >= outlen) return 0;
  k = (size_t)w;
  for (i = 0; i < sub; i++) {
    w = snprintf(out + k, outlen - k, "-%lu", (unsigned long)rd32(s + 8 + 4 * i));
    if (w < 0 || (size_t)w >= outlen - k) return 0;
    k += (size_t)w;
  }
  return k;
}

uint32_t hsi_hash_bytes(const char *s, size_t n) {
  /* eight bytes a step (paths run long), then the rest; the host's byte
     order only moves strings between slots */
  uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, s + i, 8);
    h = (h ^ w) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 32;
  }
  for (; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001B3ull;
  h ^= h >> 29;
  h *= 0xC4CEB9FE1A85EC53ull;
  return (uint32_t)(h ^ h >> 32);
}

char *hsi_utoa(uint64_t v, int hex, char *end) {
  if (hex) do { *--end = "0123456789abcdef"[v & 15]; v >>= 4; } while (v);
  else do { *--end = (char)('0' + v % 10); v /= 10; } while (v);
  return end;
}

int hsi_strieq(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    int x = (unsigned char)*a, y = (unsigned char)*b;
    if (x >= 'A' && x <= 'Z') x += 32;
    if (y >= 'A' && y <= 'Z') y += 32;
    if (x != y) return 0;
  }
  return *a == *b;
}

/* ---- GUIDs */

hs_guid hs_guid_from_bytes(const uint8_t b[16]) { return hsi_guid_at(b); }

int hs_guid_eq(const hs_guid *a, const hs_guid *b) {
  return a->d1 == b->d1 && a->d2 == b->d2 && a->d3 == b->d3 && memcmp(a->d4, b->d4, 8) == 0;
}

/* "%08lx-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x", digit by digit:
   dump and info write one for every line */
static char *hex(char *p, uint32_t v, int digits) {
  static const char xd[] = "0123456789abcdef";
  int i;
  for (i = digits - 1; i >= 0; i--) { p[i] = xd[v & 15]; v >>= 4; }
  return p + digits;
}

void hs_guid_format(const hs_guid *g, char out[HS_GUID_STRLEN]) {
  char *p = out;
  int i;
  p = hex(p, g->d1, 8); *p++ = '-';
  p = hex(p, g->d2, 4); *p++ = '-';
  p = hex(p, g->d3, 4); *p++ = '-';
  for (i = 0; i < 8; i++) {
    if (i == 2) *p++ = '-';
    p = hex(p, g->d4[i], 2);
  }
  *p = 0;
}

static int hexval(int ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

int hs_guid_parse(const char *s, hs_guid *g) {
  /* xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, optional braces */
  uint8_t v[16];
  int i = 0, nib = 0, acc = 0;
  size_t len = strlen(s);
  if (len == 38 && s[0] == '{' && s[37] == '}') { s++; len = 36; }
  if (len != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-') return HS_EARG;
  for (; *s && i < 16; s++) {
    int h;
    if (*s == '-') continue;
    if (*s == '}') break;
    if ((h = hexval((unsigned char)*s)) < 0) return HS_EARG;
    acc = acc << 4 | h;
    if (++nib == 2) { v[i++] = (uint8_t)acc; nib = 0; acc = 0; }
  }
  if (i != 16) return HS_EARG;
  g->d1 = (uint32_t)v[0] << 24 | (uint32_t)v[1] << 16 | (uint32_t)v[2] << 8 | v[3];
  g->d2 = (uint16_t)(v[4] << 8 | v[5]);
  g->d3 = (uint16_t)(v[6] << 8 | v[7]);
  memcpy(g->d4, v + 8, 8);
  return 0;
}

size_t hsi_utf8_seq(const unsigned char *s, size_t n) {
  size_t k, i;
  uint32_t c, min;
  if (s[0] < 0xC2 || s[0] > 0xF4) return 0;
  k = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : 2;
  if (n < k) return 0;
  c = s[0] & (k == 2 ? 0x1F : k == 3 ? 0x0F : 0x07);
  for (i = 1; i < k; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    c = c << 6 | (s[i] & 0x3F);
  }
  min = k == 2 ? 0x80 : k == 3 ? 0x800 : 0x10000;
  if (c < min || c > 0x10FFFF || (c >= 0xD800 && c < 0xE000)) return 0;
  return k;
}
