/*
** pdb.c -- a PDB opened for address lookups: open reads the container,
** the info stream and the DBI headers (pdb_msf.c, pdb_dbi.c); a lookup
** finds the module owning the address from the section contributions,
** reads that module once (pdb_sym.c, pdb_line.c), and answers from its
** sorted procedures and lines, else from the nearest public symbol.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bytes.h"
#include "pdb_int.h"

/* Everything a PDB keeps lives in its chunks (chunks.h), freed at close;
   sizes are rounded to 8 bytes, so every allocation stays aligned. */
void *hsi_pdb_alloc(hsi_pdb *p, size_t n) {
  return hsi_chunks_alloc(&p->arena, (n + 7) & ~(size_t)7);
}

uint32_t hsi_pdb_upper(const void *v, uint32_t n, size_t size, uint32_t rva) {
  uint32_t lo = 0, hi = n, r;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    memcpy(&r, (const char *)v + (size_t)mid * size, sizeof r);
    if (r <= rva) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/* ---------------------------------------------------------------- errors */

/* Has a page of the file been lost since it was opened (cut short, or a
   device error: its streams' views read zeros there, mapfile.c)?  Then
   that is the damage reported, whatever the zeros looked like, and the
   PDB answers no more lookups. */
static int lost_pages(hsi_pdb *p) {
  uint64_t at;
  int cut;
  if (!p->mapped || !hsi_map_lost(&p->map, &at, &cut)) return 0;
  if (!p->err[0])
    snprintf(p->err, sizeof p->err, "%s: offset 0x%llx: expected bytes %s", p->path, (unsigned long long)at,
             hsi_map_loss(cut));
  return 1;
}

void hsi_pdb_damage(hsi_pdb *p, const pdb_stream *s, uint32_t off, const char *fmt, ...) {
  va_list ap;
  int k;
  if (p->err[0] || lost_pages(p)) return;   /* the first damage met is the one reported */
  k = snprintf(p->err, sizeof p->err, "%s: offset 0x%llx: ", p->path,
               (unsigned long long)hsi_msf_fileoff(&p->msf, s->index, off));
  if (k < 0 || (size_t)k >= sizeof p->err) return;
  va_start(ap, fmt);
  vsnprintf(p->err + k, sizeof p->err - (size_t)k, fmt, ap);
  va_end(ap);
}

const char *hsi_pdb_error(const hsi_pdb *p) { return p ? p->err : ""; }

/* ----------------------------------------------------------- open, close */

static int open_core(hsi_pdb *p, const uint8_t *data, uint64_t size, char *err, size_t errlen) {
  int rc;
  if ((rc = hsi_msf_open(&p->msf, data, size, p->path, err, errlen)) != 0) return rc;
  p->msf.map = p->mapped ? &p->map : NULL;
  if ((rc = hsi_pdb_read_info(p, err, errlen)) != 0) return rc;
  if ((rc = hsi_pdb_read_dbi(p, err, errlen)) != 0) return rc;
  return 0;
}

static hsi_pdb *new_pdb(const char *name) {
  hsi_pdb *p = calloc(1, sizeof *p);
  size_t n = strlen(name) + 1;
  if (!p || !(p->path = malloc(n))) { free(p); return NULL; }
  memcpy(p->path, name, n);
  return p;
}

int hsi_pdb_open(hsi_pdb **pp, const char *path, char *err, size_t errlen) {
  hsi_pdb *p;
  int rc;
  *pp = NULL;
  if (!(p = new_pdb(path))) { snprintf(err, errlen, "%s: out of memory", path); return HS_ENOMEM; }
  if ((rc = hsi_map_open(&p->map, path, err, errlen)) != 0) { hsi_pdb_close(p); return rc; }
  p->mapped = 1;
  if ((rc = open_core(p, p->map.data, p->map.size, err, errlen)) != 0) { hsi_pdb_close(p); return rc; }
  *pp = p;
  return 0;
}

int hsi_pdb_open_mem(hsi_pdb **pp, const void *data, size_t len, const char *name, char *err, size_t errlen) {
  hsi_pdb *p;
  int rc;
  *pp = NULL;
  if (!name) name = "(memory)";
  if (!(p = new_pdb(name))) { snprintf(err, errlen, "%s: out of memory", name); return HS_ENOMEM; }
  if ((rc = open_core(p, (const uint8_t *)data, len, err, errlen)) != 0) { hsi_pdb_close(p); return rc; }
  *pp = p;
  return 0;
}

void hsi_pdb_close(hsi_pdb *p) {
  uint32_t i;
  if (!p) return;
  for (i = 0; i < p->nmods; i++) {
    hsi_stream_free(&p->mods[i].s);
    free(p->mods[i].procs);
    free(p->mods[i].lines);
    free(p->mods[i].inls);
  }
  free(p->mods);
  free(p->contribs);
  free(p->sec_rva);
  free(p->pubs);
  free(p->allprocs);
  hsi_stream_free(&p->names);
  hsi_stream_free(&p->dbi);
  hsi_stream_free(&p->symrec);
  hsi_stream_free(&p->psi);
  hsi_pdb_free_types(p);
  hsi_chunks_free(&p->arena);
  hsi_msf_close(&p->msf);
  if (p->mapped) hsi_map_close(&p->map);
  free(p->path);
  free(p);
}

void hsi_pdb_identity(const hsi_pdb *p, hs_guid *guid, uint32_t *age) {
  *guid = p->guid;
  *age = p->has_dbi ? p->dbi_age : p->info_age;
}

uint16_t hsi_pdb_machine(const hsi_pdb *p) { return p->has_dbi ? p->machine : 0; }

void hsi_pdb_ages(const hsi_pdb *p, uint32_t *info_age, uint32_t *dbi_age) {
  *info_age = p->info_age;
  *dbi_age = p->has_dbi ? p->dbi_age : 0;
}

/* ---------------------------------------------------------------- lookup */

int hsi_pdb_lookup(hsi_pdb *p, uint64_t rva64, hsi_pdb_frame *out, int cap) {
  uint32_t rva = (uint32_t)rva64, line = 0;
  const char *file = NULL;
  pdb_module *m = NULL;
  const pdb_proc *pr = NULL;
  int mi, n = 0, has_line = 0, i;
  if (!p || cap <= 0 || rva64 > 0xFFFFFFFFu) return 0;
  mi = hsi_pdb_module_at(p, rva);
  if (mi >= 0 && hsi_pdb_load_module(p, (uint32_t)mi)) {
    m = &p->mods[mi];
    pr = hsi_pdb_proc_at(m, rva);
    has_line = hsi_pdb_line_at(p, m, rva, &line, &file);
  }
  if (pr) {
    n = hsi_pdb_inline_frames(p, m, pr, rva, out, cap - 1);
    out[n].name = pr->name;
    out[n].start_rva = pr->rva;
    out[n].from_public = 0;
  } else {
    const pdb_public *pb = hsi_pdb_load_publics(p) ? hsi_pdb_public_at(p, rva) : NULL;
    if (!pb && !has_line) return 0;
    out[n].name = pb ? pb->name : "";
    out[n].start_rva = pb ? pb->rva : rva;
    out[n].from_public = pb != NULL;
  }
  out[n].file = has_line ? file : NULL;
  out[n].line = has_line ? line : 0;
  /* the names and files may be views the caller reads after this: their
     first bytes are read here, so that a page lost under them is known
     now rather than read as an empty name */
  for (i = 0; i <= n; i++) {
    if (out[i].name) (void)*(const volatile char *)out[i].name;
    if (out[i].file) (void)*(const volatile char *)out[i].file;
  }
  return lost_pages(p) ? 0 : n + 1;
}

/* ------------------------------------------------------------ listings */

uint32_t hsi_pdb_public_count(hsi_pdb *p) {
  return hsi_pdb_load_publics(p) ? p->npubs : 0;
}

int hsi_pdb_public(hsi_pdb *p, uint32_t i, hsi_pdb_sym *s) {
  const pdb_public *pb;
  if (!hsi_pdb_load_publics(p) || i >= p->npubs) return 0;
  pb = &p->pubs[i];
  s->name = pb->name;
  s->rva = pb->rva;
  s->size = 0;
  s->segment = pb->seg;
  s->offset = pb->off;
  s->flags = pb->flags;
  return 1;
}

static int allproc_cmp(const void *a, const void *b) {
  const pdb_proc *x = *(const pdb_proc *const *)a, *y = *(const pdb_proc *const *)b;
  if (x->rva != y->rva) return x->rva < y->rva ? -1 : 1;
  return x < y ? -1 : x > y;
}

uint32_t hsi_pdb_function_count(hsi_pdb *p) {
  uint32_t i, n = 0, k = 0;
  if (p->allprocs_state) return p->nallprocs;
  p->allprocs_state = 1;
  for (i = 0; i < p->nmods; i++)
    if (hsi_pdb_load_module(p, i)) n += p->mods[i].nprocs;
  if (!n || !(p->allprocs = malloc(n * sizeof *p->allprocs))) return 0;
  for (i = 0; i < p->nmods; i++) {
    uint32_t j;
    if (p->mods[i].state <= 0) continue;
    for (j = 0; j < p->mods[i].nprocs; j++) p->allprocs[k++] = &p->mods[i].procs[j];
  }
  qsort(p->allprocs, n, sizeof *p->allprocs, allproc_cmp);
  p->nallprocs = n;
  return n;
}

int hsi_pdb_function(hsi_pdb *p, uint32_t i, hsi_pdb_sym *s) {
  const pdb_proc *pr;
  if (i >= hsi_pdb_function_count(p)) return 0;
  pr = p->allprocs[i];
  s->name = pr->name;
  s->rva = pr->rva;
  s->size = pr->len;
  s->segment = pr->seg;
  s->offset = pr->off;
  s->flags = 0;
  return 1;
}
