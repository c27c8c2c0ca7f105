/*
** symmap.c -- symbol map files (format in symmap.h): parse into one flat
** array sorted by (module, rva), look up by binary search.
**
** Layout: every string (module names, function names) lives in one text
** arena and is referred to by its offset, so growing the arena never
** invalidates anything; a symbol is 24 bytes.  The symbol layer (sym.c)
** caches what it asks, so a lookup may scan the module list.
*/
#include "symmap.h"
#include "osfile.h"
#include "text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sym {
  uint64_t rva, size;
  uint32_t name;           /* offset in the arena */
  uint32_t mod;            /* module index */
} sym;

typedef struct module {
  uint32_t name;           /* offset in the arena */
  uint32_t first, n;       /* its symbols: syms[first .. first+n) */
} smod;

struct hsi_symmap {
  char *text;
  size_t ntext, captext;
  sym *syms;
  size_t nsyms, capsyms;
  smod *mods;
  size_t nmods, capmods;
};

/* ---------------------------------------------------------------- text */

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* Case-insensitive: map name `m` against an image's module name `img`;
   `m` without a '.' also matches `img` up to its last '.'. */
static int module_match(const char *m, const char *img) {
  const char *dot;
  size_t i;
  for (i = 0; m[i] && img[i]; i++)
    if (lower((unsigned char)m[i]) != lower((unsigned char)img[i])) return 0;
  if (m[i] == '\0' && img[i] == '\0') return 1;
  if (m[i] != '\0' || strchr(m, '.')) return 0;
  dot = strrchr(img, '.');
  return dot == img + i;
}

/* Append s[0..n) and a NUL; returns the offset or -1. */
static long add_text(hsi_symmap *sm, const char *s, size_t n) {
  size_t off = sm->ntext;
  if (off + n + 1 > 0xFFFFFFFFu) return -1;
  if (off + n + 1 > sm->captext) {
    size_t cap = sm->captext ? sm->captext : 4096;
    char *p;
    while (cap < off + n + 1) cap *= 2;
    if (!(p = (char *)realloc(sm->text, cap))) return -1;
    sm->text = p;
    sm->captext = cap;
  }
  memcpy(sm->text + off, s, n);
  sm->text[off + n] = '\0';
  sm->ntext = off + n + 1;
  return (long)off;
}

/* ------------------------------------------------------------- parsing */

typedef struct parser {
  hsi_symmap *sm;
  const char *name;
  unsigned long line;
  char *err;
  size_t errlen;
} parser;

static int perr(parser *p, int rc, const char *fmt, ...) {
  va_list ap;
  size_t n;
  if (!p->err || !p->errlen) return rc;
  n = (size_t)snprintf(p->err, p->errlen, "%s:%lu: ", p->name, p->line);
  if (n < p->errlen) {
    va_start(ap, fmt);
    vsnprintf(p->err + n, p->errlen - n, fmt, ap);
    va_end(ap);
  }
  return rc;
}

static int blank(int c) { return c == ' ' || c == '\t'; }

/* A field: skips blanks, returns its start and sets *n; NULL at the end. */
static const char *field(const char **s, const char *end, size_t *n) {
  const char *a = *s, *b;
  while (a < end && blank(*a)) a++;
  if (a == end) return NULL;
  for (b = a; b < end && !blank(*b); b++) {}
  *n = (size_t)(b - a);
  *s = b;
  return a;
}

/* Hex with an optional 0x; 0 on success. */
static int hex(const char *s, size_t n, uint64_t *v) {
  size_t i = 0;
  *v = 0;
  if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) i = 2;
  if (i == n || n - i > 16) return -1;
  for (; i < n; i++) {
    int c = (unsigned char)s[i], d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return -1;
    *v = *v << 4 | (uint64_t)d;
  }
  return 0;
}

static int module_index(parser *p, const char *s, size_t n, uint32_t *out) {
  hsi_symmap *sm = p->sm;
  char tmp[256];
  size_t i;
  long off;
  if (n >= sizeof tmp) return perr(p, HS_EFORMAT, "module name of %lu bytes: the limit is %lu",
                                   (unsigned long)n, (unsigned long)sizeof tmp - 1);
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  /* maps are usually grouped by module: try the last one first */
  if (sm->nmods && hsi_strieq(sm->text + sm->mods[sm->nmods - 1].name, tmp)) {
    *out = (uint32_t)sm->nmods - 1;
    return 0;
  }
  for (i = 0; i < sm->nmods; i++)
    if (hsi_strieq(sm->text + sm->mods[i].name, tmp)) { *out = (uint32_t)i; return 0; }
  if (sm->nmods == sm->capmods) {
    size_t cap = sm->capmods ? sm->capmods * 2 : 16;
    smod *m = (smod *)realloc(sm->mods, cap * sizeof *m);
    if (!m) return perr(p, HS_ENOMEM, "out of memory");
    sm->mods = m;
    sm->capmods = cap;
  }
  if ((off = add_text(sm, tmp, n)) < 0) return perr(p, HS_ENOMEM, "out of memory");
  sm->mods[sm->nmods].name = (uint32_t)off;
  sm->mods[sm->nmods].first = sm->mods[sm->nmods].n = 0;
  *out = (uint32_t)sm->nmods++;
  return 0;
}

static int parse_line(parser *p, const char *s, const char *end) {
  hsi_symmap *sm = p->sm;
  const char *f, *name;
  size_t n;
  uint64_t rva, size;
  uint32_t mod = 0;
  long off;
  int rc;
  if (end > s && end[-1] == '\r') end--;
  if (!(f = field(&s, end, &n)) || f[0] == '#') return 0;
  if ((rc = module_index(p, f, n, &mod)) < 0) return rc;
  if (!(f = field(&s, end, &n)) || hex(f, n, &rva))
    return perr(p, HS_EFORMAT, "expected the RVA in hex after the module name, got '%.*s'",
                f ? (int)(n < 40 ? n : 40) : 0, f ? f : "");
  if (!(f = field(&s, end, &n)) || hex(f, n, &size))
    return perr(p, HS_EFORMAT, "expected the size in hex after the RVA, got '%.*s'",
                f ? (int)(n < 40 ? n : 40) : 0, f ? f : "");
  while (s < end && blank(*s)) s++;
  while (end > s && blank(end[-1])) end--;
  if (s == end) return perr(p, HS_EFORMAT, "expected a function name after the size");
  name = s;
  if (sm->nsyms >= HSI_SYMMAP_MAXSYMS)
    return perr(p, HS_EFORMAT, "more than %u symbols", HSI_SYMMAP_MAXSYMS);
  if (sm->nsyms == sm->capsyms) {
    size_t cap = sm->capsyms ? sm->capsyms * 2 : 256;
    sym *q = (sym *)realloc(sm->syms, cap * sizeof *q);
    if (!q) return perr(p, HS_ENOMEM, "out of memory");
    sm->syms = q;
    sm->capsyms = cap;
  }
  if ((off = add_text(sm, name, (size_t)(end - name))) < 0) return perr(p, HS_ENOMEM, "out of memory");
  sm->syms[sm->nsyms].rva = rva;
  sm->syms[sm->nsyms].size = size;
  sm->syms[sm->nsyms].name = (uint32_t)off;
  sm->syms[sm->nsyms].mod = mod;
  sm->mods[mod].n++;
  sm->nsyms++;
  return 0;
}

/* Sort key while parsing: module, rva, then the arrival order kept in a
   side array so that the first of equal RVAs wins (qsort is not stable). */
typedef struct skey {
  sym s;
  size_t order;
} skey;

static int cmp_skey(const void *pa, const void *pb) {
  const skey *a = (const skey *)pa, *b = (const skey *)pb;
  if (a->s.mod != b->s.mod) return a->s.mod < b->s.mod ? -1 : 1;
  if (a->s.rva != b->s.rva) return a->s.rva < b->s.rva ? -1 : 1;
  return a->order < b->order ? -1 : a->order > b->order;
}

/* Sort, drop repeated RVAs, fill the module ranges. */
static int finish(hsi_symmap *sm) {
  skey *k;
  size_t i, n = 0;
  if (sm->nsyms == 0) return 0;
  if (!(k = (skey *)malloc(sm->nsyms * sizeof *k))) return HS_ENOMEM;
  for (i = 0; i < sm->nsyms; i++) {
    k[i].s = sm->syms[i];
    k[i].order = i;
  }
  qsort(k, sm->nsyms, sizeof *k, cmp_skey);
  for (i = 0; i < sm->nmods; i++) sm->mods[i].n = 0;
  for (i = 0; i < sm->nsyms; i++) {
    if (n && k[i].s.mod == sm->syms[n - 1].mod && k[i].s.rva == sm->syms[n - 1].rva) continue;
    if (sm->mods[k[i].s.mod].n++ == 0) sm->mods[k[i].s.mod].first = (uint32_t)n;
    sm->syms[n++] = k[i].s;
  }
  sm->nsyms = n;
  free(k);
  return 0;
}

int hsi_symmap_load_mem(hsi_symmap **out, const char *text, size_t len, const char *name,
                        char *err, size_t errlen) {
  parser p;
  hsi_symmap *sm;
  size_t pos = 0;
  int rc = 0;
  *out = NULL;
  if (err && errlen) err[0] = '\0';
  p.name = name ? name : "(symbol map)";
  p.line = 0;
  p.err = err;
  p.errlen = errlen;
  if (!(sm = (hsi_symmap *)calloc(1, sizeof *sm))) {
    p.sm = NULL;
    return perr(&p, HS_ENOMEM, "out of memory");
  }
  p.sm = sm;
  while (pos < len && rc == 0) {
    const char *s = text + pos, *nl = (const char *)memchr(s, '\n', len - pos);
    size_t n = nl ? (size_t)(nl - s) : len - pos;
    p.line++;
    if (n > HSI_SYMMAP_MAXLINE)
      rc = perr(&p, HS_EFORMAT, "line of %lu bytes: the limit is %u", (unsigned long)n, HSI_SYMMAP_MAXLINE);
    else if (memchr(s, '\0', n))
      rc = perr(&p, HS_EFORMAT, "NUL byte in the line: not a text file");
    else
      rc = parse_line(&p, s, s + n);
    pos += n + 1;
  }
  if (rc == 0 && (rc = finish(sm)) < 0) perr(&p, rc, "out of memory");
  if (rc < 0) {
    hsi_symmap_free(sm);
    return rc;
  }
  *out = sm;
  return 0;
}

int hsi_symmap_load(hsi_symmap **out, const char *path, char *err, size_t errlen) {
  FILE *f;
  char *buf = NULL;
  size_t len = 0, cap = 0, n;
  int rc;
  *out = NULL;
  errno = 0;
  if (!(f = hsi_fopen(path, "rb"))) {
    if (err && errlen) snprintf(err, errlen, "cannot open %s: %s", path, errno ? strerror(errno) : "error");
    return HS_EIO;
  }
  /* read in growing chunks: no fseek/ftell, so pipes and special files work too */
  for (;;) {
    if (len == cap) {
      char *b;
      cap = cap ? cap * 2 : 65536;
      if (cap > HSI_SYMMAP_MAXFILE + 1) cap = HSI_SYMMAP_MAXFILE + 1;
      if (len == cap || !(b = (char *)realloc(buf, cap))) {
        free(buf);
        fclose(f);
        if (err && errlen) {
          if (len == cap) snprintf(err, errlen, "%s: larger than %lu bytes", path, (unsigned long)HSI_SYMMAP_MAXFILE);
          else snprintf(err, errlen, "%s: out of memory", path);
        }
        return len == cap ? HS_EFORMAT : HS_ENOMEM;
      }
      buf = b;
    }
    errno = 0;
    n = fread(buf + len, 1, cap - len, f);
    /* no text past the first MiB (/dev/zero): said now, not after 1 GiB; before it the
       parser names the line */
    if (len + n > ((size_t)1 << 20) && memchr(buf, '\0', len + n)) {
      free(buf);
      fclose(f);
      if (err && errlen) snprintf(err, errlen, "%s: a NUL byte in its first %lu bytes: not a text file", path,
                                  (unsigned long)(len + n));
      return HS_EFORMAT;
    }
    len += n;
    if (n == 0) break;
  }
  if (ferror(f)) {
    int e = errno;              /* a directory opens on POSIX; its first read fails */
    free(buf);
    fclose(f);
    if (err && errlen) {
      if (e == EISDIR) snprintf(err, errlen, "%s: is a directory, not a symbol map", path);
      else snprintf(err, errlen, "%s: cannot read: %s", path, e ? strerror(e) : "I/O error");
    }
    return HS_EIO;
  }
  fclose(f);
  rc = hsi_symmap_load_mem(out, buf ? buf : "", len, path, err, errlen);
  free(buf);
  return rc;
}

void hsi_symmap_free(hsi_symmap *sm) {
  if (!sm) return;
  free(sm->text);
  free(sm->syms);
  free(sm->mods);
  free(sm);
}

size_t hsi_symmap_count(const hsi_symmap *sm) { return sm ? sm->nsyms : 0; }
size_t hsi_symmap_nmodules(const hsi_symmap *sm) { return sm ? sm->nmods : 0; }

const char *hsi_symmap_module(const hsi_symmap *sm, size_t i, size_t *nsyms) {
  if (nsyms) *nsyms = 0;
  if (!sm || i >= sm->nmods) return NULL;
  if (nsyms) *nsyms = sm->mods[i].n;
  return sm->text + sm->mods[i].name;
}

/* -------------------------------------------------------------- lookup */

/* The symbol of module m containing rva, or NULL. */
static const sym *find(const hsi_symmap *sm, size_t m, uint64_t rva) {
  const sym *s = sm->syms + sm->mods[m].first;
  size_t lo = 0, hi = sm->mods[m].n;
  /* first symbol with start > rva */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s[mid].rva <= rva) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return NULL;
  s += lo - 1;
  if (s->size && rva - s->rva >= s->size) return NULL;
  return s;
}

/* A map may name one module two ways ("ntdll" and "ntdll.dll"): every
   spelling that matches is asked, the full name first. */
int hsi_symmap_lookup(const hsi_symmap *sm, const char *module, uint64_t rva,
                      const char **name, uint64_t *off) {
  const sym *s = NULL;
  size_t i;
  int pass;
  if (!sm || !module || !*module) return 0;
  for (pass = 0; pass < 2 && !s; pass++)
    for (i = 0; i < sm->nmods && !s; i++) {
      const char *m = sm->text + sm->mods[i].name;
      if ((strchr(m, '.') != NULL) == (pass == 0) && module_match(m, module)) s = find(sm, i, rva);
    }
  if (!s) return 0;
  if (name) *name = sm->text + s->name;
  if (off) *off = rva - s->rva;
  return 1;
}

size_t hsi_symmap_module_symbols(const hsi_symmap *sm, const char *module) {
  size_t i, n = 0;
  if (!sm || !module || !*module) return 0;
  for (i = 0; i < sm->nmods; i++)
    if (module_match(sm->text + sm->mods[i].name, module)) n += sm->mods[i].n;
  return n;
}
