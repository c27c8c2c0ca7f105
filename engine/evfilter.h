/* evfilter.h -- which events a consumer wants, tested in C before anything
   is printed or handed to Lua (shared by `dump` and trace:events). */
#ifndef HS_EVFILTER_H
#define HS_EVFILTER_H
#include "heapscript.h"

#define HSI_EF_PROVIDER 0x01
#define HSI_EF_OPCODE   0x02
#define HSI_EF_ID       0x04
#define HSI_EF_PID      0x08
#define HSI_EF_TID      0x10
#define HSI_EF_HTYPE    0x20
#define HSI_EF_KERNEL   0x40

typedef struct hsi_evfilter {
  unsigned set;            /* HSI_F_* of the fields in use */
  hs_guid provider;
  int opcode, id, header_type, kernel;
  uint32_t pid, tid;
  int64_t from_ns, to_ns;  /* window in ns from the start; to_ns < 0: open */
  uint64_t limit;          /* 0: no limit */
} hsi_evfilter;

void hsi_evfilter_init(hsi_evfilter *f);
/* A GUID string or a provider name we know ("Heap", "Process"...). */
int hsi_evfilter_provider(hsi_evfilter *f, const char *s);
/* A header type name ("SYSTEM64"...). */
int hsi_evfilter_header_type(hsi_evfilter *f, const char *s);
int hsi_evfilter_match(const hsi_evfilter *f, const hs_event *ev, const hs_logfile *lf);
#endif
