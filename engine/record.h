/* record.h -- decoding one record header inside a buffer (ETL-FORMAT §3, §4). */
#ifndef HS_RECORD_H
#define HS_RECORD_H
#include "heapscript.h"

/* Decode the record at b[pos..end).  Returns 1 with *ev filled (its
   buffer/file/cpu fields untouched) and *next set to the aligned position of
   the following record; 0 at the end of data (0xFFFFFFFF marker, or fewer
   than 8 bytes left); -1 when the record header is damaged and the rest of
   the buffer cannot be trusted; -2 when only this record is damaged but its
   size is sound (*next is set: the caller may skip it).  *why says what was
   expected. */
int hsi_record_decode(const uint8_t *b, uint32_t pos, uint32_t end, int file_ptr,
                      hs_event *ev, uint32_t *next, const char **why);

/* A kernel-header record (SYSTEM, COMPACT, PERFINFO) as the walk's
   decoder finds it, checked: 32 bytes that say all its hs_event holds. */
typedef struct hsi_krec {
  const uint8_t *rec;
  int64_t ts;
  uint32_t tid, pid;   /* HS_NOID for PERFINFO */
  uint16_t size;       /* record Size */
  uint16_t plen;       /* where the payload starts: header, PEBS and PMC words */
  uint16_t hook;       /* group << 8 | type */
  uint8_t version;     /* Version less its PEBS/PMC bits */
  uint8_t ht;          /* HS_HT_*; 0: not a kernel record */
} hsi_krec;

/* Kernel group GUIDs by group number (zero above 31), set by
   hsi_record_init() (call it before any thread decodes: hsi_record_decode
   calls it when needed). */
extern hs_guid hsi_kernel_guid[256];
void hsi_record_init(void);

/* The walk's fast path: check the well-formed kernel-header records in
   b[*pos..end), up to max, into k[] and their timestamps into ts[] (the
   merge's keys, kept apart so the merge reads them packed);
   hsi_record_decode would return 1 for each.  Stops before the first
   other record, the end, or anything hsi_record_decode would report;
   returns the count and moves *pos past them. */
uint32_t hsi_record_kernel_scan(const uint8_t *b, uint32_t *pos, uint32_t end, hsi_krec *k, int64_t *ts,
                               uint32_t max);

/* Payload pointer width of a header type: 4 for SYSTEM32, COMPACT32,
   FULL32, INSTANCE32, PERFINFO32 and EVENT32 (types 1, 3, 0x0A, 0x0B,
   0x10, 0x12), else 8.  hsi_ht_ptr_small for a type known below 32 (a
   kernel record's, for every event: without a branch). */
static inline int hsi_ht_ptr_small(unsigned ht) { return (int)(8u - 4u * ((0x50C0Au >> ht) & 1u)); }
static inline int hsi_ht_ptr(unsigned ht) { return ht < 32 ? hsi_ht_ptr_small(ht) : 8; }

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
#endif
