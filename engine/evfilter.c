/* evfilter.c -- event filters (see evfilter.h). */
#include <string.h>
#include "heapscript.h"
#include "evfilter.h"

void hsi_evfilter_init(hsi_evfilter *f) {
  memset(f, 0, sizeof *f);
  f->to_ns = -1;
}

int hsi_evfilter_provider(hsi_evfilter *f, const char *s) {
  int g;
  if (hs_guid_parse(s, &f->provider) != 0) {
    for (g = 0; g < 32; g++) {
      hs_guid k;
      const char *n;
      if (!hs_kernel_group_guid(g, &k)) continue;
      n = hs_provider_name(&k);
      if (n && strcmp(n, s) == 0) { f->provider = k; break; }
    }
    if (g == 32) return HS_EARG;
  }
  f->set |= HSI_EF_PROVIDER;
  return 0;
}

int hsi_evfilter_header_type(hsi_evfilter *f, const char *s) {
  int t;
  for (t = 0; t < 0x20; t++) {
    const char *n = hs_header_type_name(t);
    if (n && strcmp(n, s) == 0) { f->header_type = t; f->set |= HSI_EF_HTYPE; return 0; }
  }
  return HS_EARG;
}

int hsi_evfilter_match(const hsi_evfilter *f, const hs_event *ev, const hs_logfile *lf) {
  if (f->set) {
    if ((f->set & HSI_EF_PROVIDER) && !hs_guid_eq(&f->provider, &ev->provider)) return 0;
    if ((f->set & HSI_EF_OPCODE) && ev->opcode != f->opcode) return 0;
    if ((f->set & HSI_EF_ID) && ev->id != f->id) return 0;
    if ((f->set & HSI_EF_PID) && ev->pid != f->pid) return 0;
    if ((f->set & HSI_EF_TID) && ev->tid != f->tid) return 0;
    if ((f->set & HSI_EF_HTYPE) && ev->header_type != f->header_type) return 0;
    if ((f->set & HSI_EF_KERNEL) && !(ev->flags & HS_EVF_KERNEL) != !f->kernel) return 0;
  }
  if (f->from_ns > 0 || f->to_ns >= 0) {
    int64_t ns = hs_time_ns(lf, ev->timestamp);
    if (ns < f->from_ns || (f->to_ns >= 0 && ns > f->to_ns)) return 0;
  }
  return 1;
}
