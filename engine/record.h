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

/* The walk's fast path: decode the well-formed kernel-header records
   (SYSTEM, COMPACT, PERFINFO) from b[*pos..end) into ev[0..max), as
   hsi_record_decode would, with ev->offset set to each record's
   position.  Stops before the first other record, the end, or anything
   hsi_record_decode would report; returns the count and moves *pos past
   them. */
uint32_t hsi_record_kernel_run(const uint8_t *b, uint32_t *pos, uint32_t end, hs_event *ev, uint32_t max);

/* Group of the hook that stands for Image Load under the Process group. */
#define HSI_HOOK_IMAGE_LOAD 0x030A
#endif
