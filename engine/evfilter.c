/* evfilter.c -- event filters (see evfilter.h). */
#include <string.h>
#include "heapscript.h"
#include "evfilter.h"
#include "text.h"

void hsi_evfilter_init(hsi_evfilter *f) {
  memset(f, 0, sizeof *f);
  f->kernel = -1;
  f->limit = -1;
}

int hsi_evfilter_all(const hsi_evfilter *f) {
  return f->nprov == 0 && f->opcode.n == 0 && f->id.n == 0 && f->pid.n == 0 && f->tid.n == 0 && f->ht.n == 0
         && f->kernel < 0 && !f->from_set && !f->to_set && f->nns == 0 && f->limit < 0;
}

int hsi_evfilter_add(hsi_evset *s, int64_t v, int64_t max) {
  if (v < 0 || v > max || s->n == HSI_EF_MAXSET) return HS_EARG;
  s->v[s->n++] = (uint32_t)v;
  return 0;
}

int hsi_evfilter_add_ns(hsi_evfilter *f, int64_t ns) {
  if (f->nns == HSI_EF_MAXSET) return HS_EARG;
  f->ns[f->nns++] = ns;
  return 0;
}

int hsi_evfilter_provider(hsi_evfilter *f, const char *s) {
  if (f->nprov == HSI_EF_MAXSET) return HS_EARG;
  if (hs_guid_parse(s, &f->prov[f->nprov]) != 0 && !hs_provider_guid(s, &f->prov[f->nprov])) return HS_EARG;
  f->nprov++;
  return 0;
}

int hsi_evfilter_header_type(hsi_evfilter *f, const char *s) {
  int t;
  for (t = 0; t < 256; t++) {
    const char *n = hs_header_type_name(t);
    if (n && hsi_strieq(n, s)) return hsi_evfilter_add(&f->ht, t, 0xFF);
  }
  return HS_EARG;
}

static int inset(const hsi_evset *s, uint32_t x) {
  int i;
  if (s->n == 0) return 1;
  for (i = 0; i < s->n; i++)
    if (s->v[i] == x) return 1;
  return 0;
}

static int provider_ok(const hsi_evfilter *f, const hs_guid *g) {
  int i;
  if (f->nprov == 0) return 1;
  for (i = 0; i < f->nprov; i++)
    if (hs_guid_eq(&f->prov[i], g)) return 1;
  return 0;
}

int hsi_evfilter_match(hsi_evfilter *f, const hs_event *ev, const hsi_ids *ids, int64_t ns) {
  if (!inset(&f->opcode, ev->opcode) || !inset(&f->id, ev->id) || !inset(&f->ht, ev->header_type)) return 0;
  if (f->pid.n || f->tid.n) {
    if (ids ? ids->how == HSI_IDS_NONE : !(ev->flags & HS_EVF_HAS_IDS)) return 0;
    if (!inset(&f->pid, ids ? ids->pid : ev->pid) || !inset(&f->tid, ids ? ids->tid : ev->tid)) return 0;
  }
  if (f->kernel >= 0 && f->kernel != ((ev->flags & HS_EVF_KERNEL) != 0)) return 0;
  if (!provider_ok(f, &ev->provider)) return 0;
  if (f->from_set && ns < f->from_ns) return 0;
  if (f->to_set && ns > f->to_ns) return 0;
  if (f->nns) {
    int i;
    for (i = 0; i < f->nns && f->ns[i] != ns; i++) {}
    if (i == f->nns) return 0;
  }
  return 1;
}
