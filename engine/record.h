/* record.h -- decoding one record header inside a buffer (ETL-FORMAT §3, §4). */
#ifndef HS_RECORD_H
#define HS_RECORD_H
#include <string.h>
#include "heapscript.h"
#include "bytes.h"

/* Decode the record at b[pos..end).  Returns 1 with *ev filled (its
   buffer/file/cpu fields untouched) and *next set to the aligned position of
   the following record; 0 at the end of data (0xFFFFFFFF marker, or fewer
   than 8 bytes left); -1 when the record header is damaged and the rest of
   the buffer cannot be trusted; -2 when only this record is damaged but its
   size is sound (*next is set: the caller may skip it).  *why says what was
   expected. */
int hsi_record_decode(const uint8_t *b, uint32_t pos, uint32_t end, int file_ptr,
                      hs_event *ev, uint32_t *next, const char **why);

/* A record with a kernel header (SYSTEM, COMPACT, PERFINFO), an
   EVENT_HEADER or a classic one (FULL, INSTANCE) as the walk's decoder
   finds it, checked: 32 bytes that, with the header's own bytes for the
   last two, say all its hs_event holds. */
typedef struct hsi_krec {
  const uint8_t *rec;
  int64_t ts;
  uint32_t tid, pid;   /* HS_NOID for PERFINFO */
  uint16_t size;       /* record Size */
  uint16_t plen;       /* where the payload starts: header, PEBS and PMC words;
                          EVENT_HEADER: header and extended data items */
  uint16_t hook;       /* group << 8 | type; else 0 */
  uint8_t version;     /* Version less its PEBS/PMC bits; EVENT_HEADER: the
                          descriptor's; classic: 0 (a u16, in the header) */
  uint8_t ht;          /* HS_HT_*, with HSI_KREC_HEADER for EVENT_HEADER and
                          classic; 0: none of these */
} hsi_krec;

/* In hsi_krec.ht beside the type of an EVENT_HEADER or classic record: a
   kernel record's ht is above 0 as a signed byte, the others' below. */
#define HSI_KREC_HEADER 0x80u
static inline int hsi_krec_kernel(const hsi_krec *k) { return (int8_t)k->ht > 0; }

/* Kernel group GUIDs by group number (zero above 31), set by
   hsi_record_init() (call it before any thread decodes: hsi_record_decode
   calls it when needed). */
extern hs_guid hsi_kernel_guid[256];
void hsi_record_init(void);

/* The walk's fast path: check the well-formed kernel-header, EVENT_HEADER
   and classic records in b[*pos..end), up to max, into k[] and their
   timestamps into ts[] (the merge's keys, kept apart so the merge reads
   them packed); hsi_record_decode would return 1 for each.  Stops before
   the first other record, the end, anything hsi_record_decode would
   report, or a record whose timestamp is not in [ts_lo, ts_lo + ts_span]
   (the caller's bounds: a damaged one); returns the count and moves *pos
   past them. */
uint32_t hsi_record_scan(const uint8_t *b, uint32_t *pos, uint32_t end, hsi_krec *k, int64_t *ts,
                         uint32_t max, int64_t ts_lo, uint64_t ts_span);

/* Payload pointer width of a header type: 4 for SYSTEM32, COMPACT32,
   FULL32, INSTANCE32, PERFINFO32 and EVENT32 (types 1, 3, 0x0A, 0x0B,
   0x10, 0x12), else 8.  hsi_ht_ptr_small for a type known below 32 (a
   kernel record's, for every event: without a branch). */
static inline int hsi_ht_ptr_small(unsigned ht) { return (int)(8u - 4u * ((0x50C0Au >> ht) & 1u)); }
static inline int hsi_ht_ptr(unsigned ht) { return ht < 32 ? hsi_ht_ptr_small(ht) : 8; }

/* A GUID from its 16 bytes as Windows writes them (hs_guid_from_bytes). */
static inline hs_guid hsi_guid_at(const uint8_t *b) {
  hs_guid g;
  g.d1 = rd32(b);
  g.d2 = rd16(b + 4);
  g.d3 = rd16(b + 6);
  memcpy(g.d4, b + 8, 8);
  return g;
}

/* Group of the hook that stands for Image Load under the Process group. */
#define HSI_HOOK_IMAGE_LOAD 0x030A

/* Set the fields of *ev that a checked kernel record gives; the others
   (keyword, ext, ext_len, id, task, header_flags, level, channel: 0) and
   the walk's (cpu, file, buffer, offset, buffer_pos) are left as they
   are, and flags gets its bits or'ed in.  hsi_record_init() must have run. */
static inline void hsi_record_kernel_set(const hsi_krec *k, hs_event *ev) {
  uint32_t group = k->hook == HSI_HOOK_IMAGE_LOAD ? 0x14u : (uint32_t)k->hook >> 8;  /* Image class [V] */
  ev->provider = hsi_kernel_guid[group];
  ev->timestamp = k->ts;
  ev->record = k->rec;
  ev->payload = k->rec + k->plen;
  ev->record_len = k->size;
  ev->payload_len = (uint32_t)k->size - k->plen;
  ev->pid = k->pid;
  ev->tid = k->tid;
  ev->version = k->version;
  ev->hook = k->hook;
  ev->opcode = (uint8_t)k->hook;
  ev->header_type = k->ht;
  ev->pointer_size = (uint8_t)hsi_ht_ptr_small(k->ht);    /* kernel types: 1-4, 0x10, 0x11 */
  /* no ids for PERFINFO; without a branch, this runs per event */
  ev->flags |= (uint8_t)(HS_EVF_KERNEL | (k->ht < HS_HT_PERFINFO32 ? HS_EVF_HAS_IDS : 0));
}

/* The same for a checked EVENT_HEADER record (ETL-FORMAT §3.6): the
   descriptor and provider from its header's bytes, the rest from *k. */
static inline void hsi_record_eh_set(const hsi_krec *k, hs_event *ev) {
  const uint8_t *r = k->rec;
  uint16_t hf = rd16(r + 4);
  ev->record = r;
  ev->record_len = k->size;
  ev->header_type = (uint8_t)(k->ht & ~HSI_KREC_HEADER);
  ev->pointer_size = (uint8_t)hsi_ht_ptr_small(ev->header_type);
  ev->header_flags = hf;
  ev->tid = k->tid;
  ev->pid = k->pid;
  ev->timestamp = k->ts;
  ev->provider = hsi_guid_at(r + 0x18);
  ev->id = rd16(r + 0x28);
  ev->version = r[0x2A];
  ev->channel = r[0x2B];
  ev->level = r[0x2C];
  ev->opcode = r[0x2D];
  ev->task = rd16(r + 0x2E);
  ev->keyword = rd64(r + 0x30);
  ev->flags |= (uint8_t)(HS_EVF_HAS_IDS | (hf & 0x4 ? HS_EVF_STRING : 0));
  if (hf & 0x1) {
    ev->ext = r + 0x50;
    ev->ext_len = k->plen - 0x50u;
    ev->flags |= HS_EVF_EXT;
  }
  ev->payload = r + k->plen;
  ev->payload_len = (uint32_t)k->size - k->plen;
}

/* The same for a checked classic record (ETL-FORMAT §3.4, §3.5). */
static inline void hsi_record_classic_set(const hsi_krec *k, hs_event *ev) {
  const uint8_t *r = k->rec;
  ev->record = r;
  ev->record_len = k->size;
  ev->header_type = (uint8_t)(k->ht & ~HSI_KREC_HEADER);
  ev->pointer_size = (uint8_t)hsi_ht_ptr_small(ev->header_type);
  ev->opcode = r[4];
  ev->level = r[5];
  ev->version = rd16(r + 6);
  ev->tid = k->tid;
  ev->pid = k->pid;
  ev->timestamp = k->ts;
  ev->provider = hsi_guid_at(r + 0x18);
  ev->flags |= HS_EVF_HAS_IDS;
  ev->payload = r + k->plen;
  ev->payload_len = (uint32_t)k->size - k->plen;
}

/* An EVENT_HEADER or classic record's, by its header type. */
static inline void hsi_record_header_set(const hsi_krec *k, hs_event *ev) {
  unsigned ht = k->ht & ~HSI_KREC_HEADER;
  if (ht == HS_HT_EVENT32 || ht == HS_HT_EVENT64) hsi_record_eh_set(k, ev);
  else hsi_record_classic_set(k, ev);
}
#endif
