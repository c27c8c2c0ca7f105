/* evfilter.h -- which events a consumer wants, tested in C before anything
   is printed or handed to Lua: one filter for `heapscript dump` and for
   trace:events{...} / trace:count{...}. */
#ifndef HS_EVFILTER_H
#define HS_EVFILTER_H
#include "heapscript.h"
#include "attrib.h"

#define HSI_EF_MAXSET 32

typedef struct hsi_evset {
  int n;                               /* 0: any value */
  uint32_t v[HSI_EF_MAXSET];
} hsi_evset;

typedef struct hsi_evfilter {
  int nprov;                           /* 0: any provider */
  hs_guid prov[HSI_EF_MAXSET];
  hsi_evset opcode, id, pid, tid, ht;
  int kernel;                          /* -1 any, 0 not kernel, 1 kernel */
  int from_set, to_set;
  int64_t from_ns, to_ns;              /* ns from the start, both ends inclusive */
  int nns;                             /* 0: any time; else the event's ns is one of ns[] */
  int64_t ns[HSI_EF_MAXSET];
  int64_t limit;                       /* -1: none */
} hsi_evfilter;

/* Everything passes. */
void hsi_evfilter_init(hsi_evfilter *f);
/* Does everything pass f? */
int hsi_evfilter_all(const hsi_evfilter *f);
/* Add an accepted value: 0, or HS_EARG (out of range, too many values). */
int hsi_evfilter_add(hsi_evset *s, int64_t v, int64_t max);
/* A provider: a GUID (braces allowed) or a name we know ("Heap", "Process",
   "Microsoft-Windows-Kernel-Process"; compared ignoring case).  0, or HS_EARG
   for a name we do not know (it could never match) or too many values. */
int hsi_evfilter_provider(hsi_evfilter *f, const char *s);
/* A header type by name ("SYSTEM64", ignoring case).  0 or HS_EARG. */
int hsi_evfilter_header_type(hsi_evfilter *f, const char *s);
/* An exact time (ns from the start, as ev.ns): the event's must be one
   of those added.  0, or HS_EARG (too many values). */
int hsi_evfilter_add_ns(hsi_evfilter *f, int64_t ns);
/* The time bounds and times need the event's ns from the start: the
   caller passes it (computed only when hsi_evfilter_timed says so). */
static inline int hsi_evfilter_timed(const hsi_evfilter *f) { return f->from_set || f->to_set || f->nns; }
/* ids: the event's as attrib.h gives them (pid/tid filters test those:
   the header's, else its StackWalk's); NULL: the header's. */
int hsi_evfilter_match(hsi_evfilter *f, const hs_event *ev, const hsi_ids *ids, int64_t ns);
#endif
