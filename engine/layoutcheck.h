/*
** layoutcheck.h -- does a trace's memory events fit the layouts we decode
** them with?  The heap, VirtualAlloc and pool layouts are documented only
** (ETL-FORMAT.md [D]); a Windows build nobody here has seen may write
** longer, shifted or narrower payloads, which would decode silently into
** wrong addresses and sizes.  Per layout row actually used (hook, event
** version, pointer size) this keeps the payload lengths seen and checks
** what was decoded:
**   length   a payload length the row does not explain (shorter than its
**            required fields, or longer than all of them; per distinct length)
**   short    too short to decode (counted as damaged by the analysis)
**   align    heap block addresses aligned to 8 (16 with 8-byte pointers),
**            pool entries to 8
**   size     heap sizes below 2^40
**   heap     heap handle non-zero
**   page     VirtualAlloc addresses and sizes page-aligned (4 KiB)
**   tag      pool tags printable (4 characters 0x20..0x7E)
**   pid      VirtualAlloc's payload process id known from a Process record
**            (checked at the end, only when the trace has Process records)
** A row fits badly when a length is not explained, or when more than
** HSI_LCHECK_PERCENT percent of its events fail a check.  Only the events
** that change lifetimes are checked; the other memory events only have
** their lengths kept.
**
** Cost per event: a row is found through a small cache, a length already
** seen is one compare, and the fields are checked on a sample (the first
** HSI_LCHECK_FULL events of a row, then one in HSI_LCHECK_EVERY).
*/
#ifndef HS_LAYOUTCHECK_H
#define HS_LAYOUTCHECK_H

#include <stdio.h>
#include "heapscript.h"
#include "memop.h"
#include "procmap.h"

#define HSI_LCHECK_PERCENT 5
#define HSI_LCHECK_LENGTHS 8        /* distinct payload lengths kept per row */

enum { HSI_LC_LENGTH, HSI_LC_SHORT, HSI_LC_ALIGN, HSI_LC_SIZE, HSI_LC_HEAP, HSI_LC_PAGE, HSI_LC_TAG,
       HSI_LC_PID, HSI_LC_COUNT };

typedef struct hsi_lcheck_row {
  uint16_t hook;                    /* group << 8 | type */
  uint8_t version, ptr;             /* the event's version and pointer size */
  const char *name;                 /* "HeapAlloc", ... */
  int row_version;                  /* version of the table row used (-1: no layout) */
  int checked;                      /* a lifetime event: fields and lengths are checked */
  size_t min_len, max_len;          /* lengths the row explains (max SIZE_MAX: any longer) */
  uint64_t events, failed;          /* events, and those failing a field check or too short */
  uint64_t fields_checked;          /* events whose fields were checked (all but in a sample) */
  uint64_t fail[HSI_LC_COUNT];      /* events failing each check (HSI_LC_LENGTH: unexplained) */
  uint32_t len[HSI_LCHECK_LENGTHS]; /* distinct payload lengths, in the order seen */
  uint64_t nlen_events[HSI_LCHECK_LENGTHS];
  int nlen;
  uint64_t other_lengths;           /* events with a length beyond the ones kept */
  int bad;                          /* fits badly (set by hsi_lcheck_finish) */
} hsi_lcheck_row;

typedef struct hsi_lcheck hsi_lcheck;

hsi_lcheck *hsi_lcheck_new(void);
void hsi_lcheck_free(hsi_lcheck *lc);
/*
** One memory event: d is hsi_memev_decode's result for it (1 or -1; 0 is
** ignored), op what it decoded.  Heap-Snapshot events are not kept.
** Every event's length is checked, and the fields of the sample below, so
** that `info` (which decodes only that sample) and the analysis agree.
** 0 or HS_ENOMEM.
*/
int hsi_lcheck_add(hsi_lcheck *lc, const hs_event *ev, int d, const hsi_memop *op);
/*
** For a reader that does not decode every event (`info`): a kernel record
** is counted with its length in its row when it is a memory event; returns
** 1 when its fields should be checked too (the first HSI_LCHECK_FULL
** events of a row, then one in HSI_LCHECK_EVERY: a layout is the same for
** every event of a row, so a sample shows a misfit as well), and then the
** caller decodes it and calls hsi_lcheck_fields.  0 otherwise, HS_ENOMEM.
*/
#define HSI_LCHECK_FULL  4096
#define HSI_LCHECK_EVERY 64
int hsi_lcheck_sample(hsi_lcheck *lc, const hs_event *ev);
void hsi_lcheck_fields(hsi_lcheck *lc, const hs_event *ev, int d, const hsi_memop *op);
/* Any event of a walk that decodes nothing else (`info`, trace:tally):
   Process records into pm (for the pid check), memory events through
   hsi_lcheck_sample/_fields, or hsi_lcheck_add for the classic-header
   ones.  The rows come out as the analysis's.  0 or HS_ENOMEM. */
int hsi_lcheck_feed(hsi_lcheck *lc, hsi_procmap *pm, const hs_event *ev);
/* After the last event: resolve the pid checks against pm (may be NULL:
   not checked) and decide which rows fit badly.  Returns how many. */
int hsi_lcheck_finish(hsi_lcheck *lc, const hsi_procmap *pm);
size_t hsi_lcheck_count(const hsi_lcheck *lc);
const hsi_lcheck_row *hsi_lcheck_row_at(const hsi_lcheck *lc, size_t i);   /* NULL past the end */
int hsi_lcheck_bad(const hsi_lcheck *lc);                                    /* rows that fit badly */
/* Which record kinds (1u << HSI_KIND_*) have a row that fits badly. */
unsigned hsi_lcheck_bad_kinds(const hsi_lcheck *lc);
const char *hsi_lcheck_name(int check);                                      /* "length", ... */

/* The lengths seen: "24 (3000), 28 (2)"; returns out. */
char *hsi_lcheck_lengths(const hsi_lcheck_row *r, char *out, size_t cap);
/*
** The one-line warning for a row that fits badly:
** "layout does not fit: PoolAlloc v2 (8-byte pointers): payload lengths 28 (320), table row v2 explains
**  24; checks failed: length 320, tag 320 of 320 events; its figures are doubtful"
*/
size_t hsi_lcheck_warning(const hsi_lcheck_row *r, char *out, size_t cap);
/* `info`: "memory layouts:" with one line per row (lengths seen, checks failed). */
void hsi_lcheck_text(const hsi_lcheck *lc, FILE *o);
/* `info --json`: an array of rows (hook, name, version, pointer_size, events, lengths, failed, bad). */
void hsi_lcheck_json(const hsi_lcheck *lc, FILE *o);

#endif
