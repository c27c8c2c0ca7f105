/*
** sym_path.c -- symbol path parsing and the search for an image's PDB
** (formats in sym_path.h).  The search stats candidate files in the
** order a debugger would and opens each one that exists to compare its
** identity; the best failure seen is kept for the report (a matching file
** later in the path still wins, as with symchk).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "osfile.h"
#include "sym_path.h"
#include "pdb.h"

/* ----------------------------------------------------------- parsing */

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

static int prefix_ci(const char *s, size_t n, const char *p) {
  size_t i;
  for (i = 0; p[i]; i++)
    if (i >= n || lower((unsigned char)s[i]) != p[i]) return 0;
  return 1;
}

static int is_url(const char *s, size_t n) {
  return prefix_ci(s, n, "http://") || prefix_ci(s, n, "https://");
}

int hsi_sympath_add(hsi_sympath *sp, int kind, const char *path, size_t len) {
  size_t i;
  char *p;
  while (len && (*path == ' ' || *path == '\t')) { path++; len--; }
  while (len && (path[len - 1] == ' ' || path[len - 1] == '\t' || path[len - 1] == '\r' ||
                 path[len - 1] == '\n')) len--;
  if (len == 0) return 0;
  if (kind != HSI_SP_URL && is_url(path, len)) kind = HSI_SP_URL;
  for (i = 0; i < sp->n; i++)
    if (sp->e[i].kind == kind && strlen(sp->e[i].path) == len && memcmp(sp->e[i].path, path, len) == 0)
      return 0;
  if (sp->n == sp->cap) {
    size_t cap = sp->cap ? sp->cap * 2 : 8;
    hsi_sympath_entry *e = (hsi_sympath_entry *)realloc(sp->e, cap * sizeof *e);
    if (!e) return HS_ENOMEM;
    sp->e = e;
    sp->cap = cap;
  }
  if (!(p = (char *)malloc(len + 1))) return HS_ENOMEM;
  memcpy(p, path, len);
  p[len] = '\0';
  sp->e[sp->n].kind = kind;
  sp->e[sp->n].path = p;
  sp->n++;
  if (kind == HSI_SP_URL) sp->nurls++;
  return 0;
}

/* The '*'-separated stores of a srv, symsrv or cache element after its prefix. */
static int add_stores(hsi_sympath *sp, const char *s, size_t n, int skip_first) {
  size_t a = 0;
  int rc = 0, first = 1;
  while (a <= n && rc == 0) {
    const char *star = (const char *)memchr(s + a, '*', n - a);
    size_t b = star ? (size_t)(star - s) : n;
    if (!(first && skip_first)) rc = hsi_sympath_add(sp, HSI_SP_STORE, s + a, b - a);
    first = 0;
    a = b + 1;
  }
  return rc;
}

int hsi_sympath_parse(hsi_sympath *sp, const char *text) {
  size_t a = 0, n;
  int rc = 0;
  if (!text) return 0;
  n = strlen(text);
  while (a < n && rc == 0) {
    const char *semi = (const char *)memchr(text + a, ';', n - a);
    size_t b = semi ? (size_t)(semi - text) : n, len;
    const char *s = text + a;
    while (s < text + b && (*s == ' ' || *s == '\t')) s++;
    len = (size_t)(text + b - s);
    if (prefix_ci(s, len, "srv*")) rc = add_stores(sp, s + 4, len - 4, 0);
    else if (prefix_ci(s, len, "symsrv*")) rc = add_stores(sp, s + 7, len - 7, 1);
    else if (prefix_ci(s, len, "cache*")) rc = add_stores(sp, s + 6, len - 6, 0);
    else rc = hsi_sympath_add(sp, HSI_SP_DIR, s, len);
    a = b + 1;
  }
  return rc;
}

void hsi_sympath_free(hsi_sympath *sp) {
  size_t i;
  if (!sp) return;
  for (i = 0; i < sp->n; i++) free(sp->e[i].path);
  free(sp->e);
  memset(sp, 0, sizeof *sp);
}

/* -------------------------------------------------------------- names */

void hsi_sym_key(const hs_guid *g, uint32_t age, char out[HSI_SYMKEY_LEN]) {
  snprintf(out, HSI_SYMKEY_LEN, "%08lX%04X%04X%02X%02X%02X%02X%02X%02X%02X%02X%lX",
           (unsigned long)g->d1, (unsigned)g->d2, (unsigned)g->d3, g->d4[0], g->d4[1], g->d4[2],
           g->d4[3], g->d4[4], g->d4[5], g->d4[6], g->d4[7], (unsigned long)age);
}

const char *hsi_sym_basename(const char *path) {
  const char *b = path, *p;
  if (!path) return "";
  for (p = path; *p; p++) if (*p == '\\' || *p == '/') b = p + 1;
  return b;
}

/* ------------------------------------------------------------- search */

typedef struct want {
  const hs_guid *guid;
  uint32_t age;
  hsi_pdb_search *res;
  int keyed_damage;    /* res is a damaged file found under the identity's own store key */
} want;

/* A file of the wanted name that could not be used (st DAMAGED or
   UNREADABLE, err says why): the report's, unless a better one is. */
static void unusable(want *w, const char *path, int at_key, int st, const char *err) {
  hsi_pdb_search *r = w->res;
  if (st < r->status || (at_key && !w->keyed_damage && (r->status == HSI_PDB_BADGUID || r->status == HSI_PDB_BADAGE))) {
    w->keyed_damage = at_key;
    r->status = st;
    snprintf(r->path, sizeof r->path, "%s", path);
    snprintf(r->detail, sizeof r->detail, "%s", err);
  }
}

/* Look at one candidate file; 1 when it is the one (res FOUND).  at_key:
   the file lies under the identity's store key (GUID and age): one that
   does not open is almost surely the wanted PDB damaged, which a file of
   another identity elsewhere must not hide.  A FIFO or a device of that
   name is not opened (a FIFO would block): unreadable.  Where there is
   no X.pdb but an X.pd_ (a store's compressed entry, a cabinet): it is
   not read, and the report says to expand it. */
static int consider(want *w, const char *path, int at_key) {
  hsi_pdb_search *r = w->res;
  hsi_pdb *p = NULL;
  char err[HS_ERRLEN + 1100];
  hs_guid g;
  uint32_t age;
  int st, kind;
  size_t n;
  r->tried++;
  kind = hsi_path_kind(path);
  if (kind == HSI_PATH_OTHER) {
    snprintf(err, sizeof err, "%s: not a regular file", path);
    unusable(w, path, at_key, HSI_PDB_UNREADABLE, err);
    return 0;
  }
  if (kind != HSI_PATH_FILE) {
    char cab[1024];
    n = strlen(path);
    if (kind == HSI_PATH_NONE && n > 4 && n < sizeof cab && path[n - 4] == '.' && lower((unsigned char)path[n - 3]) == 'p'
        && lower((unsigned char)path[n - 2]) == 'd' && lower((unsigned char)path[n - 1]) == 'b') {
      memcpy(cab, path, n + 1);
      cab[n - 1] = '_';
      if (hsi_path_kind(cab) == HSI_PATH_FILE) {
        snprintf(err, sizeof err, "%s: compressed, not read: expand it to %s", cab, hsi_sym_basename(path));
        unusable(w, cab, at_key, HSI_PDB_UNREADABLE, err);
      }
    }
    return 0;
  }
  if ((st = hsi_pdb_open(&p, path, err, sizeof err)) < 0) {
    /* not opened (the open-file limit, permissions) is not damage */
    unusable(w, path, at_key, st == HS_EIO ? HSI_PDB_UNREADABLE : HSI_PDB_DAMAGED, err);
    return 0;
  }
  hsi_pdb_identity(p, &g, &age);
  if (hs_guid_eq(&g, w->guid) && age == w->age) {
    r->status = HSI_PDB_FOUND;
    r->pdb = p;
    snprintf(r->path, sizeof r->path, "%s", path);
    r->detail[0] = '\0';
    return 1;
  }
  hsi_pdb_close(p);
  st = hs_guid_eq(&g, w->guid) ? HSI_PDB_BADAGE : HSI_PDB_BADGUID;
  if (st < r->status && !w->keyed_damage) {
    char gs[HS_GUID_STRLEN];
    hs_guid_format(&g, gs);
    r->status = st;
    r->found_guid = g;
    r->found_age = age;
    snprintf(r->path, sizeof r->path, "%s", path);
    snprintf(r->detail, sizeof r->detail, "it has GUID %s age %lu", gs, (unsigned long)age);
  }
  return 0;
}

/* dir + "/" + parts (NULL-terminated); 0 when it does not fit. */
static int join(char *out, size_t cap, const char *dir, const char *a, const char *b, const char *c,
                const char *d) {
  const char *parts[4];
  size_t n = 0, k;
  int i;
  parts[0] = a; parts[1] = b; parts[2] = c; parts[3] = d;
  k = strlen(dir);
  if (k >= cap) return 0;
  memcpy(out, dir, k);
  n = k;
  for (i = 0; i < 4 && parts[i]; i++) {
    k = strlen(parts[i]);
    if (n && out[n - 1] != '/' && out[n - 1] != '\\') {
      if (n + 1 >= cap) return 0;
      out[n++] = '/';
    }
    if (n + k >= cap) return 0;
    memcpy(out + n, parts[i], k);
    n += k;
  }
  out[n] = '\0';
  return 1;
}

/* A file.ptr in a store's KEY directory: the path of the real file
   (SymStore writes it with an optional "PATH:" prefix). */
static int follow_ptr(want *w, const char *ptrfile) {
  char buf[1024];
  size_t n;
  FILE *f;
  const char *p = buf;
  if (!hsi_is_file(ptrfile) || !(f = hsi_fopen(ptrfile, "rb"))) return 0;
  n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) buf[--n] = '\0';
  if (strncmp(p, "PATH:", 5) == 0) p += 5;
  return *p && consider(w, p, 1);
}

/* The store layouts under dir, for each spelling of name and key. */
static int try_store(want *w, const char *dir, const char *name) {
  char path[1024], lname[256], key[HSI_SYMKEY_LEN], lkey[HSI_SYMKEY_LEN], tier[3];
  const char *names[2], *keys[2];
  size_t i, len = strlen(name);
  int two, t, a, b;
  if (len >= sizeof lname) return 0;
  for (i = 0; i <= len; i++) lname[i] = (char)lower((unsigned char)name[i]);
  hsi_sym_key(w->guid, w->age, key);
  for (i = 0; i < sizeof key; i++) lkey[i] = (char)(i >= 32 ? lower((unsigned char)key[i]) : key[i]);
  names[0] = name; names[1] = strcmp(lname, name) ? lname : NULL;
  keys[0] = key; keys[1] = strcmp(lkey, key) ? lkey : NULL;
  two = join(path, sizeof path, dir, "index2.txt", NULL, NULL, NULL) && hsi_is_file(path);
  for (t = 0; t < 2; t++) {
    int tiered = two ? t == 0 : t == 1;    /* index2.txt: two-tier first; else flat first */
    for (a = 0; a < 2; a++) {
      if (!names[a]) continue;
      tier[0] = names[a][0]; tier[1] = names[a][0] ? names[a][1] : '\0'; tier[2] = '\0';
      for (b = 0; b < 2; b++) {
        const char *top = tiered ? tier : names[a], *mid = tiered ? names[a] : keys[b];
        if (!keys[b]) continue;
        if (!(tiered ? join(path, sizeof path, dir, top, mid, keys[b], names[a])
                     : join(path, sizeof path, dir, top, mid, names[a], NULL))) continue;
        if (consider(w, path, 1)) return 1;
        if ((tiered ? join(path, sizeof path, dir, top, mid, keys[b], "file.ptr")
                    : join(path, sizeof path, dir, top, mid, "file.ptr", NULL)) && follow_ptr(w, path))
          return 1;
      }
    }
  }
  return 0;
}

static int try_dir(want *w, const char *dir, const char *name) {
  char path[1024], lname[256];
  size_t i, len = strlen(name);
  if (join(path, sizeof path, dir, name, NULL, NULL, NULL) && consider(w, path, 0)) return 1;
  if (len < sizeof lname) {
    for (i = 0; i <= len; i++) lname[i] = (char)lower((unsigned char)name[i]);
    if (strcmp(lname, name) && join(path, sizeof path, dir, lname, NULL, NULL, NULL) && consider(w, path, 0))
      return 1;
  }
  return 0;
}

int hsi_pdb_find(const hsi_sympath *sp, const char *recorded, const hs_guid *guid, uint32_t age,
                 hsi_pdb_search *res) {
  const char *name = hsi_sym_basename(recorded);
  want w;
  size_t i;
  memset(res, 0, sizeof *res);
  res->status = HSI_PDB_MISSING;
  w.guid = guid;
  w.age = age;
  w.res = res;
  w.keyed_damage = 0;
  if (!*name) { res->status = HSI_PDB_NOID; return res->status; }
  for (i = 0; sp && i < sp->n; i++) {
    const hsi_sympath_entry *e = &sp->e[i];
    if (e->kind == HSI_SP_URL) continue;
    if (e->kind == HSI_SP_DIR && try_dir(&w, e->path, name)) return res->status;
    /* a plain directory that is a store is read as one, as dbghelp does */
    if (try_store(&w, e->path, name)) return res->status;
  }
  if (name != recorded && consider(&w, recorded, 0)) return res->status;
  return res->status;
}
