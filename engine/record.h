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

/* Group of the hook that stands for Image Load under the Process group. */
#define HSI_HOOK_IMAGE_LOAD 0x030A
#endif
