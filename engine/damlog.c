/* damlog.c -- damage reports kept once each, and their lines (damlog.h). */
#include <stdlib.h>
#include <string.h>
#include "damlog.h"
#include "hash.h"

/* A report's file, offset, buffer and wording in 64 bits (never 0). */
static uint64_t key_of(const hs_damage *d, const char *what) {
  uint64_t k = hsi_mix64((uint64_t)(uint32_t)d->file << 32 ^ d->buffer) ^ hsi_mix64(d->pos + 1);
  for (; *what; what++) k = hsi_mix64(k ^ (unsigned char)*what);
  return k ? k : 1;
}

/* Is key new (then kept)?  An open-addressing set, under half full; new
   as well when the set cannot grow (a repeat then counts twice, nothing
   is lost). */
static int is_new(hsi_damlog *l, uint64_t key) {
  size_t i, mask;
  if ((l->nseen + 1) * 2 > l->capseen) {
    size_t nc = l->capseen ? l->capseen * 2 : 64, j;
    uint64_t *ns = (uint64_t *)calloc(nc, sizeof *ns);
    if (!ns) return 1;
    for (j = 0; j < l->capseen; j++)
      if (l->seen[j]) {
        for (i = (size_t)l->seen[j] & (nc - 1); ns[i]; i = (i + 1) & (nc - 1)) {}
        ns[i] = l->seen[j];
      }
    free(l->seen);
    l->seen = ns;
    l->capseen = nc;
  }
  mask = l->capseen - 1;
  for (i = (size_t)key & mask; l->seen[i]; i = (i + 1) & mask)
    if (l->seen[i] == key) return 0;
  l->seen[i] = key;
  l->nseen++;
  return 1;
}

int hsi_damlog_add(hsi_damlog *l, const hs_damage *d) {
  const char *what = d->what ? d->what : "";
  hsi_damage_rec *r;
  size_t n;
  l->total++;
  if (!is_new(l, key_of(d, what))) return 0;
  if (l->n == HSI_DAMLOG_MAX) { l->unlisted++; return 2; }
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    hsi_damage_rec *p = (hsi_damage_rec *)realloc(l->e, cap * sizeof *p);
    if (!p) { l->unlisted++; return 2; }
    l->e = p;
    l->cap = cap;
  }
  r = &l->e[l->n];
  n = strlen(what);
  if (!(r->what = (char *)malloc(n + 1))) { l->unlisted++; return 2; }
  memcpy(r->what, what, n + 1);
  r->file = d->file;
  r->pos = d->pos;
  r->buffer = d->buffer;
  l->n++;
  return 1;
}

void hsi_damlog_add_all(hsi_damlog *to, const hsi_damlog *from, int file) {
  size_t i;
  for (i = 0; i < from->n; i++) {
    hs_damage d;
    d.file = file >= 0 ? file : from->e[i].file;
    d.pos = from->e[i].pos;
    d.buffer = from->e[i].buffer;
    d.what = from->e[i].what;
    (void)hsi_damlog_add(to, &d);
  }
}

void hsi_damlog_free(hsi_damlog *l) {
  size_t i;
  for (i = 0; i < l->n; i++) free(l->e[i].what);
  free(l->e);
  free(l->seen);
  memset(l, 0, sizeof *l);
}

void hsi_damage_line(FILE *o, const char *path, const hs_damage *d) {
  fprintf(o, "heapscript: %s: offset 0x%llx (buffer %u): damaged: expected %s; skipped\n",
          path, (unsigned long long)d->pos, d->buffer, d->what ? d->what : "");
}

void hsi_damlog_more(FILE *o, const hsi_damlog *l, const char *path) {
  if (l->unlisted)
    fprintf(o, "heapscript: %s: %llu more damage reports not listed (only the first %d are kept)\n",
            path, (unsigned long long)l->unlisted, HSI_DAMLOG_MAX);
}

void hsi_damage_stderr(void *ud, const hs_damage *d) {
  hsi_damage_out *o = (hsi_damage_out *)ud;
  if (hsi_damlog_add(&o->log, d) == 1) hsi_damage_line(stderr, o->paths[d->file], d);
}

void hsi_damage_stderr_opts(hsi_damage_out *o, char *const *paths, hs_reader_opts *ro) {
  memset(o, 0, sizeof *o);
  o->paths = paths;
  memset(ro, 0, sizeof *ro);
  ro->on_damage = hsi_damage_stderr;
  ro->ud = o;
}

uint64_t hsi_damage_stderr_done(hsi_damage_out *o) {
  uint64_t n = o->log.n + o->log.unlisted;
  hsi_damlog_more(stderr, &o->log, o->paths[0]);
  hsi_damlog_free(&o->log);
  return n;
}

size_t hsi_damlog_print(FILE *o, const hsi_damlog *l, const char *const *paths) {
  size_t i;
  for (i = 0; i < l->n; i++) {
    hs_damage d;
    d.file = l->e[i].file;
    d.pos = l->e[i].pos;
    d.buffer = l->e[i].buffer;
    d.what = l->e[i].what;
    hsi_damage_line(o, paths ? paths[d.file] : "?", &d);
  }
  hsi_damlog_more(o, l, paths ? paths[0] : "?");
  return l->n + (size_t)l->unlisted;
}
