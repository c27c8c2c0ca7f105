/*
** merge.h -- several .etl files of one run (a kernel session and a heap
** session, as `heapscript record` writes them, or any set the reader can
** merge) written as one .etl, as `xperf -merge` does: one logfile header
** (the first file's clock, OS version, time zone and boot time; the
** earliest start and latest end; the largest processor count; the
** files' losses added up; their modes with RELOG) and every record in the
** merged time order.  Each input buffer flagged as having lost events
** flags the buffer that holds its first record.
** Records keep their header kind, ids, time, processor, payload and
** extended items, and every other header field (EVENT_HEADER Flags,
** Channel, ActivityId, processor times, a kernel header's whole Version,
** Class.Level, instance ids): a record of a single file merged is the
** same bytes.  The inputs' own logfile header records are replaced by
** the new one; WPP (MESSAGE) and ERROR records, which the writer has no
** call for, are left out and counted.
*/
#ifndef HS_MERGE_H
#define HS_MERGE_H
#include <stdint.h>
#include <stddef.h>

typedef struct hsi_merge_counts {
  uint64_t records;        /* written */
  uint64_t headers;        /* the inputs' logfile header records, replaced */
  uint64_t left_out;       /* MESSAGE/ERROR records, and records too long for a buffer */
  uint64_t moved;          /* records of another clock moved up to the time of the record
                              before them on their CPU (within the 100 ns of FILETIME) */
} hsi_merge_counts;

/* 0, or a negative HS_E* with a message naming the file in err.  ro
   (may be NULL): the reader's options, whose on_damage hears of every
   part of the inputs skipped as damaged (left out of the new file). */
struct hs_reader_opts;
int hsi_merge(const char *const *in, int nin, const char *out, const struct hs_reader_opts *ro,
              hsi_merge_counts *c, char *err, size_t errlen);
#endif
