/* evcount.h -- events counted by key (provider, id, opcode, and a version
   the caller chooses: `info` keys on it, trace:tally does not), the rows
   in the order each key was first met. */
#ifndef HS_EVCOUNT_H
#define HS_EVCOUNT_H
#include <stddef.h>
#include <stdint.h>
#include "heapscript.h"

typedef struct hsi_evrow {
  hs_guid provider;
  uint16_t id, version;
  uint8_t opcode;
  uint64_t count;
} hsi_evrow;

typedef struct hsi_evcount {
  hsi_evrow *rows;             /* first met first */
  size_t n, cap;
  uint32_t *slot;              /* open addressing over rows: row + 1, 0 empty */
  size_t nslot;                /* a power of two, at least twice n */
  /* kernel events' rows by (hook, version): a trace is mostly a few kinds
     of them, so most events skip the hash of their key */
  uint64_t ktag[256];          /* 1 << 32 | hook << 16 | version; 0: empty */
  uint32_t krow[256];
} hsi_evcount;

/* The kernel cache's slot and tag of an event. */
static inline unsigned hsi_evcount_slot(const hs_event *ev, uint16_t version) {
  return (ev->hook ^ ev->hook >> 8 ^ (unsigned)version * 31u) & 255u;
}
static inline uint64_t hsi_evcount_tag(const hs_event *ev, uint16_t version) {
  return (uint64_t)1 << 32 | (uint32_t)ev->hook << 16 | version;
}

/* An event not in the kernel cache: found or added by its key. */
int hsi_evcount_miss(hsi_evcount *c, const hs_event *ev, uint16_t version);

/* Count ev under its key with `version`: 0 or HS_ENOMEM.  Zero-initialise
   c before the first add.  Per event: the cache's hit is inline (a kernel
   event's provider, opcode and id follow from its hook). */
static inline int hsi_evcount_add(hsi_evcount *c, const hs_event *ev, uint16_t version) {
  unsigned h = hsi_evcount_slot(ev, version);
  if ((ev->flags & HS_EVF_KERNEL) && c->ktag[h] == hsi_evcount_tag(ev, version)) {
    c->rows[c->krow[h]].count++;
    return 0;
  }
  return hsi_evcount_miss(c, ev, version);
}

void hsi_evcount_free(hsi_evcount *c);
#endif
