/*
** query.h -- questions over the allocation records of a tracker
** (lifetime.h), answered in C over its columns: which records match a
** filter, what they add up to in a time window (WPA's Type classes,
** Impacting and Transient size, peak outstanding), grouped and sorted,
** and outstanding bytes over time.
**
** Windows follow LIFETIMES.md.  For [t1, t2], both ends inclusive:
**   AI: t1 <= alloc <= t2            AO: alloc < t1 (or before the trace)
**   FI: t1 <= free <= t2             FO: free > t2 (or never)
** A record allocated after t2 or freed before t1 is not in the window and
** is never selected, counted or grouped.
**
** Bytes: records of unknown size (HSI_RF_SIZE_UNKNOWN) are counted and
** add no bytes.  Before-trace records of known size add their bytes to
** their class (they are AOFI or AOFO), hence to Impacting.
** Outstanding at t counts only records allocated in the trace (LIFETIMES:
** "allocated in the trace at or before t and not freed by t").  With
** out_start = outstanding at t1 - 1 and out_end = outstanding at t2:
**   out_end - out_start = impacting + before_aofi_bytes
** so the two agree, as LIFETIMES states, whenever no before-trace block
** of known size is freed in the window.
*/
#ifndef HS_QUERY_H
#define HS_QUERY_H

#include "lifetime.h"

/* Window classes; masks are (1u << class). */
enum { HSI_AIFI, HSI_AIFO, HSI_AOFI, HSI_AOFO, HSI_NCLASS };
#define HSI_CLS_ALL 0xFu

/* Class of a record allocated at a and freed at f in [t1, t2], or -1 if not in it. */
int hsi_query_class(int64_t a, int64_t f, int64_t t1, int64_t t2);
const char *hsi_class_name(int cls);     /* "AIFI", ...; "?" */

/*
** What to select.  Start from hsi_filter_init (everything, whole trace)
** and narrow.  Sets given as pointers are read during the call only.
*/
typedef struct hsi_filter {
  uint32_t kinds;              /* 1u << HSI_KIND_*; 0 = all */
  uint32_t pid;                /* HS_NOID = any; else the instance's pid must be it */
  const uint32_t *insts;       /* instance ids, any order; NULL = any */
  size_t ninsts;
  int has_heap;                /* heap records of this heap handle only */
  uint64_t heap;
  int has_tag;                 /* pool records with (their tag & tag_mask) == (tag & tag_mask) */
  uint32_t tag, tag_mask;      /* tag_mask 0 = all 32 bits */
  uint64_t size_min, size_max; /* inclusive; a narrower range leaves out unknown sizes */
  int64_t t1, t2;              /* the window, inclusive */
  uint32_t classes;            /* 1u << HSI_AIFI...; 0 = all four */
  const uint8_t *stacks;       /* bitmap over stack ids (bit s = byte s/8, bit s%8); NULL = any */
  uint32_t nstacks;            /* bits in it; ids >= nstacks are not in the set */
  int stack_which;             /* HSI_STACK_ALLOC or HSI_STACK_FREE */
  uint32_t reasons;            /* 1u << HSI_END_*; 0 = all */
  uint32_t flags_all;          /* HSI_RF_* bits that must be set */
  uint32_t flags_none;         /* HSI_RF_* bits that must be clear */
} hsi_filter;

void hsi_filter_init(hsi_filter *f, const hsi_life *lt);

/* A selection: record indices in increasing order. */
typedef struct hsi_sel {
  uint32_t *idx;
  size_t n, cap;
} hsi_sel;

/* Fill `out` (its old contents dropped; zero-initialise before first use). 0 or HS_ENOMEM/HS_EARG,
   or HSI_ESTOPPED (stop.h) when a time limit stopped it (so may hsi_query_group, _agg, _series). */
int hsi_query_select(const hsi_life *lt, const hsi_filter *f, hsi_sel *out);
/* The same over the n records of `in` only, in their order (a filter of
   a selection costs its size, not the trace's). */
int hsi_query_select_in(const hsi_life *lt, const hsi_filter *f, const uint32_t *in, size_t n,
                        hsi_sel *out);
/* The same into a caller's buffer: returns how many match (0 when out of memory or
   stopped); writes at most cap. */
size_t hsi_query_select_buf(const hsi_life *lt, const hsi_filter *f, uint32_t *buf, size_t cap);
void hsi_sel_free(hsi_sel *s);

/*
** When f selects every record of its kinds (nothing asked beyond kinds,
** window and classes; every class; a window holding every time fed, see
** hsi_life_holds): how many, so that a caller can size its buffer and
** fill it with hsi_query_every_fill (0, or HSI_ESTOPPED), which reads the
** kind column at most.  SIZE_MAX otherwise (hsi_query_select answers).
*/
size_t hsi_query_every(const hsi_life *lt, const hsi_filter *f);
int hsi_query_every_fill(const hsi_life *lt, const hsi_filter *f, uint32_t *buf);

/* What a set of records adds up to in a window. */
typedef struct hsi_agg {
  uint64_t count;                 /* records in the window */
  uint64_t bytes;                 /* their known bytes */
  uint64_t size;                  /* WPA Size: bytes allocated in the window (AIFI + AIFO) */
  int64_t impacting;              /* AIFO bytes - AOFI bytes */
  uint64_t transient;             /* AIFI bytes */
  uint64_t cls_count[HSI_NCLASS];
  uint64_t cls_bytes[HSI_NCLASS];
  uint64_t unknown_count;         /* records of unknown size (no bytes) */
  uint64_t before_count;          /* records allocated before the trace */
  uint64_t before_bytes;          /* their known bytes (all in AOFI or AOFO) */
  uint64_t before_aofi_bytes;     /* ... of which freed in the window */
  uint64_t out_start, out_start_count; /* outstanding just before t1 (at t1 - 1) */
  uint64_t out_end, out_end_count;     /* outstanding at t2 */
  uint64_t peak;                  /* with HSI_AGG_PEAK: max outstanding over [t1, t2] */
  int64_t peak_ts;                /* first time it is reached (t1 if it is there at t1) */
} hsi_agg;

#define HSI_AGG_PEAK    0x1u   /* compute peak and peak_ts (sorts the alloc and free times) */
#define HSI_GRP_MEMBERS 0x2u   /* hsi_query_group: list each group's records */

/* Aggregate `sel` (NULL = every record) over [t1, t2]. 0 or HS_ENOMEM. */
int hsi_query_agg(const hsi_life *lt, const hsi_sel *sel, int64_t t1, int64_t t2,
                  unsigned opts, hsi_agg *out);

/* Outstanding bytes and records of `sel` (NULL = all) at t: in the trace, alloc <= t < free. */
void hsi_query_outstanding(const hsi_life *lt, const hsi_sel *sel, int64_t t,
                           uint64_t *bytes, uint64_t *count);

/* Grouping keys. */
enum {
  HSI_BY_NONE,         /* one group, key 0 */
  HSI_BY_INSTANCE, HSI_BY_PID, /* HSI_NOKEY for records without a process (or its pid) */
  HSI_BY_HEAP,         /* heap handle; HSI_NOKEY for other kinds */
  HSI_BY_TAG,          /* pool tag; HSI_NOKEY for other kinds */
  HSI_BY_ALLOC_STACK, HSI_BY_FREE_STACK,
  HSI_BY_SIZE,         /* HSI_NOKEY for unknown sizes */
  HSI_BY_KIND, HSI_BY_REASON,
  HSI_BY_CLASS,        /* window class */
  HSI_BY_KEY,          /* keys[i], one per selection position (per record when sel is NULL) */
  HSI_BY_COUNT
};
#define HSI_NOKEY UINT64_MAX

typedef struct hsi_group {
  uint64_t key;
  uint32_t first;        /* a record of the group (the first in selection order) */
  size_t moff, mlen;     /* with HSI_GRP_MEMBERS: members[moff .. moff+mlen) */
  hsi_agg agg;
} hsi_group;

typedef struct hsi_groups {
  hsi_group *g;
  size_t n;
  uint32_t *members;     /* record indices, grouped; NULL without HSI_GRP_MEMBERS */
  size_t nmembers;
} hsi_groups;

/* Group `sel` (NULL = all) over [t1, t2] by `by`; groups in order of first appearance. */
int hsi_query_group(const hsi_life *lt, const hsi_sel *sel, int64_t t1, int64_t t2, int by,
                    const uint64_t *keys, unsigned opts, hsi_groups *out);
void hsi_groups_free(hsi_groups *gs);

/* Aggregate fields, for sorting and for scripts. */
enum {
  HSI_F_KEY, HSI_F_COUNT, HSI_F_BYTES, HSI_F_SIZE, HSI_F_IMPACTING, HSI_F_TRANSIENT, HSI_F_PEAK,
  HSI_F_AIFI_COUNT, HSI_F_AIFO_COUNT, HSI_F_AOFI_COUNT, HSI_F_AOFO_COUNT,
  HSI_F_AIFI_BYTES, HSI_F_AIFO_BYTES, HSI_F_AOFI_BYTES, HSI_F_AOFO_BYTES,
  HSI_F_UNKNOWN_COUNT, HSI_F_BEFORE_COUNT, HSI_F_OUT_START, HSI_F_OUT_END, HSI_F_PEAK_TS,
  HSI_F_COUNT_
};
int64_t hsi_agg_field(const hsi_agg *a, int field);   /* unsigned values clamp at INT64_MAX */
const char *hsi_agg_field_name(int field);             /* "count", "impacting", ...; NULL */
int hsi_agg_field_find(const char *name);              /* -1 if unknown */

/* Sort by a field (ties: by key, ascending); HS_EARG for a bad field. */
int hsi_groups_sort(hsi_groups *gs, int field, int descending);
/* The same, keeping the first `keep` groups (all when there are fewer):
   as hsi_groups_sort then hsi_groups_top, without sorting the rest. */
int hsi_groups_sort_top(hsi_groups *gs, int field, int descending, size_t keep);
/* Keep the first n groups. */
void hsi_groups_top(hsi_groups *gs, size_t n);
/* The peaks of groups made with HSI_GRP_MEMBERS and without HSI_AGG_PEAK
   (after sorting and keeping the first ones, say): as HSI_AGG_PEAK would
   have given them.  HS_EARG without members. */
int hsi_groups_peaks(const hsi_life *lt, hsi_groups *gs, int64_t t1, int64_t t2);

/*
** Outstanding bytes and records of `sel` (NULL = all) over [t1, t2]:
** npoints > 0: at t1 + (t2 - t1) * i / (npoints - 1), i = 0..npoints-1
** (npoints 1: at t2); npoints 0: at t1 and then at every time in
** (t1, t2] where either changes.  0 or HS_ENOMEM.
*/
typedef struct hsi_series {
  int64_t *t;
  uint64_t *bytes, *count;
  size_t n;
} hsi_series;

int hsi_query_series(const hsi_life *lt, const hsi_sel *sel, int64_t t1, int64_t t2,
                     size_t npoints, hsi_series *out);
/* The same over ncols equal columns of [t1, t2]: point c is the column's
   middle, bytes and count each the highest at any moment in the column,
   the level it starts with included (a spike shorter than a column still
   shows).  0, HS_EARG, HS_ENOMEM or HSI_ESTOPPED. */
int hsi_query_series_peaks(const hsi_life *lt, const hsi_sel *sel, int64_t t1, int64_t t2,
                           size_t ncols, hsi_series *out);
void hsi_series_free(hsi_series *s);

#endif
