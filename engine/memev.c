/*
** memev.c -- heap, VirtualAlloc/HeapRange, pool and Heap-Snapshot events.
**
** No trace we have contains any of these events, so every layout below is
** documented only (ETL-FORMAT.md §6.1-6.3, §6.9).  They are written as
** data, one table per provider with one entry per (opcode, version), so
** that the first real trace can confirm or correct them by editing a
** table row: decoding, encoding (the synthetic-trace writer) and the
** `dump` description all read the same rows.  hsi_memev_selfcheck()
** (run by the unit tests) proves every row packed and contiguous at both
** pointer widths.
**
** Tags as in the format doc: [D: source] documented only, [I] inference.
*/
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "heapscript.h"
#include "memop.h"
#include "memev.h"
#include "bytes.h"

/* ------------------------------------------------------------ the tables */

/* Field kinds.  PTR and SIZE (SIZE_T) are both P bytes, P = the record's
   pointer width; they differ only in how they are shown. */
enum { K_PTR = 1, K_SIZE, K_U32, K_U16, K_U8 };

/* Where a field goes in hsi_memop (M_NONE: shown by describe only). */
enum { M_NONE = 0, M_HEAP, M_ADDR, M_SIZE, M_OLD_ADDR, M_OLD_SIZE, M_FLAGS,
       M_TAG, M_POOLTYPE, M_SESSION, M_SOURCE, M_PID, M_LAST };

/* How describe shows a field. */
enum { S_DEC = 0, S_HEX, S_SOURCE, S_MEMFLAGS, S_TAG, S_POOLTYPE, S_CALLER };

typedef struct field {
  const char *name;        /* key in the describe output */
  uint8_t kind;            /* K_* */
  uint8_t np, k;           /* offset = np * P + k */
  uint8_t dest;            /* M_* */
  uint8_t show;            /* S_* */
  uint8_t opt;             /* 1: may be missing at the end of the payload */
} field;

#define F(name, kind, np, k, dest, show)   { name, kind, np, k, dest, show, 0 }
#define OPT(name, kind, np, k, dest, show) { name, kind, np, k, dest, show, 1 }

/* Which process an event belongs to. */
enum { PID_HDR = 0,           /* header pid (HS_NOID without one) */
       PID_PAYLOAD,           /* the payload's ProcessId (the target process) */
       PID_HDR_ELSE_PAYLOAD };

#define L_PROV 0x01  /* provisional layout: every field optional, never damaged */
#define L_BLOB 0x02  /* M_SIZE bytes of opaque data follow the fields */

typedef struct layout {
  uint16_t op;             /* opcode (kernel) or event id (snapshot provider) */
  uint8_t version;         /* first event version this row describes */
  uint8_t kind;            /* HSI_OP_* */
  uint8_t pid;             /* PID_* */
  uint8_t pad8;            /* tail bytes after the fields at P = 8 (required and written) */
  uint8_t flags;           /* L_* */
  const char *name;
  const field *f;
  uint8_t nf;
} layout;

/* A row's fields; a row may also give `NULL, 0`: a known event whose
   layout is unknown (decoded as its kind with header data only). */
#define FL(a) a, (uint8_t)(sizeof a / sizeof a[0])
#define COUNT(a) (sizeof a / sizeof a[0])

/* ---- Heap, group 0x10 (§6.1).  Packed structures [D: ntwmi pshpack1]; x64
   lengths 28/44/20 of Alloc/ReAlloc/Free seen in one real capture [D: traplol]. */

/* ETW_HEAP_EVENT_COMMON: Destroy 35, Lock/Unlock/Validate/Walk 43-46 */
static const field heap_common[] = {
  F("heap", K_PTR, 0, 0, M_HEAP, S_HEX),
};
/* Create 32 v2: HeapHandle, HeapFlags */
static const field heap_create_v2[] = {
  F("heap",  K_PTR, 0, 0, M_HEAP,  S_HEX),
  F("flags", K_U32, 1, 0, M_FLAGS, S_HEX),
};
/* Create 32 v3: + ReservedSpace, CommittedSpace, AllocatedSpace [D: ossem v3, ntwmi] */
static const field heap_create_v3[] = {
  F("heap",            K_PTR,  0, 0, M_HEAP,  S_HEX),
  F("flags",           K_U32,  1, 0, M_FLAGS, S_HEX),
  F("reserved_space",  K_SIZE, 1, 4, M_NONE,  S_DEC),
  F("committed_space", K_SIZE, 2, 4, M_NONE,  S_DEC),
  F("allocated_space", K_SIZE, 3, 4, M_NONE,  S_DEC),
};
/* Alloc 33 v2: HeapHandle, AllocSize, AllocAddress, SourceId: 3P+4 (28/16) */
static const field heap_alloc[] = {
  F("heap",   K_PTR,  0, 0, M_HEAP,   S_HEX),
  F("size",   K_SIZE, 1, 0, M_SIZE,   S_DEC),
  F("addr",   K_PTR,  2, 0, M_ADDR,   S_HEX),
  F("source", K_U32,  3, 0, M_SOURCE, S_SOURCE),
};
/* ReAlloc 34 v2: HeapHandle, NewAllocAddress, OldAllocAddress, NewAllocSize,
   OldAllocSize, SourceId: 5P+4 (44/24) */
static const field heap_realloc[] = {
  F("heap",     K_PTR,  0, 0, M_HEAP,     S_HEX),
  F("addr",     K_PTR,  1, 0, M_ADDR,     S_HEX),
  F("old_addr", K_PTR,  2, 0, M_OLD_ADDR, S_HEX),
  F("size",     K_SIZE, 3, 0, M_SIZE,     S_DEC),
  F("old_size", K_SIZE, 4, 0, M_OLD_SIZE, S_DEC),
  F("source",   K_U32,  5, 0, M_SOURCE,   S_SOURCE),
};
/* Free 36 v2: HeapHandle, FreeAddress, SourceId: 2P+4 (20/12) */
static const field heap_free[] = {
  F("heap",   K_PTR, 0, 0, M_HEAP,   S_HEX),
  F("addr",   K_PTR, 1, 0, M_ADDR,   S_HEX),
  F("source", K_U32, 2, 0, M_SOURCE, S_SOURCE),
};
/* Expand 37 / Contract 42 (ETW_HEAP_EVENT_EXPANSION / _CONTRACTION) v3:
   7P+4.  The older MOF ends after NoOfUCRs (6P+4) [D: pv, ntwmi], with no
   version to tell them apart, so AllocatedSpace is optional [I]. */
static const field heap_expand[] = {
  F("heap",            K_PTR,  0, 0, M_HEAP, S_HEX),
  F("size",            K_SIZE, 1, 0, M_SIZE, S_DEC),   /* CommittedSize / DeCommittedSize */
  F("addr",            K_PTR,  2, 0, M_ADDR, S_HEX),   /* CommitAddress / DeCommitAddress */
  F("free_space",      K_SIZE, 3, 0, M_NONE, S_DEC),
  F("committed_space", K_SIZE, 4, 0, M_NONE, S_DEC),
  F("reserved_space",  K_SIZE, 5, 0, M_NONE, S_DEC),
  F("ucrs",            K_U32,  6, 0, M_NONE, S_DEC),   /* NoOfUCRs */
  OPT("allocated_space", K_SIZE, 6, 4, M_NONE, S_DEC),
};
/* SnapShot 38 v2 (ETW_HEAP_EVENT_SNAPSHOT): 5P+16 (56/36) */
static const field heap_snapshot_v2[] = {
  F("heap",             K_PTR,  0, 0,  M_HEAP,  S_HEX),
  F("free_space",       K_SIZE, 1, 0,  M_NONE,  S_DEC),
  F("committed_space",  K_SIZE, 2, 0,  M_NONE,  S_DEC),
  F("reserved_space",   K_SIZE, 3, 0,  M_NONE,  S_DEC),
  F("flags",            K_U32,  4, 0,  M_FLAGS, S_HEX),
  F("pid",              K_U32,  4, 4,  M_PID,   S_DEC),
  F("large_ucr_space",  K_SIZE, 4, 8,  M_NONE,  S_DEC),
  F("free_list_length", K_U32,  5, 8,  M_NONE,  S_DEC),
  F("ucr_length",       K_U32,  5, 12, M_NONE,  S_DEC),
};
/* SnapShot 38 v3: + AllocatedSpace: 6P+16 (64/40) */
static const field heap_snapshot_v3[] = {
  F("heap",             K_PTR,  0, 0,  M_HEAP,  S_HEX),
  F("free_space",       K_SIZE, 1, 0,  M_NONE,  S_DEC),
  F("committed_space",  K_SIZE, 2, 0,  M_NONE,  S_DEC),
  F("reserved_space",   K_SIZE, 3, 0,  M_NONE,  S_DEC),
  F("flags",            K_U32,  4, 0,  M_FLAGS, S_HEX),
  F("pid",              K_U32,  4, 4,  M_PID,   S_DEC),
  F("large_ucr_space",  K_SIZE, 4, 8,  M_NONE,  S_DEC),
  F("free_list_length", K_U32,  5, 8,  M_NONE,  S_DEC),
  F("ucr_length",       K_U32,  5, 12, M_NONE,  S_DEC),
  F("allocated_space",  K_SIZE, 5, 16, M_NONE,  S_DEC),
};
/* SubsegmentAlloc/Free(Cached) 47-50: 4P */
static const field heap_subseg[] = {
  F("heap",             K_PTR,  0, 0, M_HEAP, S_HEX),
  F("subsegment",       K_PTR,  1, 0, M_ADDR, S_HEX),
  F("subsegment_size",  K_SIZE, 2, 0, M_SIZE, S_DEC),
  F("block_size",       K_SIZE, 3, 0, M_NONE, S_DEC),
};
/* Commit 51 / Decommit 52: 3P+4.  ntwmi does not pack HEAP_COMMIT_DECOMMIT,
   so an x64 writer might pad to 3P+8 -- unknown (§9 q3).  We take packed
   [I]; a 3P+8 payload decodes anyway (longer payloads are accepted).  Set
   the row's pad8 to 4 to write and require the padded form. */
static const field heap_commit[] = {
  F("heap",   K_PTR,  0, 0, M_HEAP, S_HEX),
  F("addr",   K_PTR,  1, 0, M_ADDR, S_HEX),   /* Block */
  F("size",   K_SIZE, 2, 0, M_SIZE, S_DEC),
  F("caller", K_U32,  3, 0, M_NONE, S_CALLER),
};
/* SubsegmentInit 53: 4P+4 */
static const field heap_subseg_init[] = {
  F("heap",        K_PTR,  0, 0, M_HEAP, S_HEX),
  F("subsegment",  K_PTR,  1, 0, M_ADDR, S_HEX),
  F("block_size",  K_SIZE, 2, 0, M_NONE, S_DEC),
  F("block_count", K_SIZE, 3, 0, M_NONE, S_DEC),
  F("affinity",    K_U32,  4, 0, M_NONE, S_DEC),
};
/* AffinityManagerEnable 54: P+4 */
static const field heap_affinity_enable[] = {
  F("heap",   K_PTR, 0, 0, M_HEAP, S_HEX),
  F("bucket", K_U32, 1, 0, M_NONE, S_DEC),
};
/* AffinitySlotAssigned 55: SlotIndex only [D: dissect, ossem; ntwmi says reserved] */
static const field heap_slot_assigned[] = {
  F("slot", K_U32, 0, 0, M_NONE, S_DEC),
};
/* SubSegmentActivated 56: 2P */
static const field heap_subseg_activated[] = {
  F("heap",       K_PTR, 0, 0, M_HEAP, S_HEX),
  F("subsegment", K_PTR, 1, 0, M_ADDR, S_HEX),
};
/* AffinitySlotChanged 57: 2P+4 */
static const field heap_slot_changed[] = {
  F("heap",       K_PTR, 0, 0, M_HEAP, S_HEX),
  F("subsegment", K_PTR, 1, 0, M_ADDR, S_HEX),
  F("slot",       K_U32, 2, 0, M_NONE, S_DEC),
};
/* SubsegmentReuseThresholdActivated 58: 2P+4 */
static const field heap_reuse_threshold[] = {
  F("heap",       K_PTR, 0, 0, M_HEAP, S_HEX),
  F("subsegment", K_PTR, 1, 0, M_ADDR, S_HEX),
  F("bucket",     K_U32, 2, 0, M_NONE, S_DEC),
};

/* Rows sorted by opcode, then version ascending. */
static const layout heap_tab[] = {
  { 32, 2, HSI_OP_HEAP_CREATE,  PID_HDR, 0, 0, "HeapCreate",  FL(heap_create_v2) },
  { 32, 3, HSI_OP_HEAP_CREATE,  PID_HDR, 0, 0, "HeapCreate",  FL(heap_create_v3) },
  { 33, 2, HSI_OP_HEAP_ALLOC,   PID_HDR, 0, 0, "HeapAlloc",   FL(heap_alloc) },
  { 34, 2, HSI_OP_HEAP_REALLOC, PID_HDR, 0, 0, "HeapReAlloc", FL(heap_realloc) },
  { 35, 2, HSI_OP_HEAP_DESTROY, PID_HDR, 0, 0, "HeapDestroy", FL(heap_common) },
  { 36, 2, HSI_OP_HEAP_FREE,    PID_HDR, 0, 0, "HeapFree",    FL(heap_free) },
  { 37, 3, HSI_OP_HEAP_OTHER,   PID_HDR, 0, 0, "HeapExpand",  FL(heap_expand) },
  { 38, 2, HSI_OP_HEAP_OTHER,   PID_HDR_ELSE_PAYLOAD, 0, 0, "HeapSnapShot", FL(heap_snapshot_v2) },
  { 38, 3, HSI_OP_HEAP_OTHER,   PID_HDR_ELSE_PAYLOAD, 0, 0, "HeapSnapShot", FL(heap_snapshot_v3) },
  /* 39-41: names only in older sources; the System Informer ntwmi tags them
     ETW_HEAP_EVENT_SNAPSHOT [D: ntwmi hook comments].  Provisional [I]. */
  { 39, 2, HSI_OP_HEAP_OTHER, PID_HDR_ELSE_PAYLOAD, 0, L_PROV, "HeapCreateSnapshot",  FL(heap_snapshot_v2) },
  { 39, 3, HSI_OP_HEAP_OTHER, PID_HDR_ELSE_PAYLOAD, 0, L_PROV, "HeapCreateSnapshot",  FL(heap_snapshot_v3) },
  { 40, 2, HSI_OP_HEAP_OTHER, PID_HDR_ELSE_PAYLOAD, 0, L_PROV, "HeapDestroySnapshot", FL(heap_snapshot_v2) },
  { 40, 3, HSI_OP_HEAP_OTHER, PID_HDR_ELSE_PAYLOAD, 0, L_PROV, "HeapDestroySnapshot", FL(heap_snapshot_v3) },
  { 41, 2, HSI_OP_HEAP_OTHER, PID_HDR_ELSE_PAYLOAD, 0, L_PROV, "HeapExtendSnapshot",  FL(heap_snapshot_v2) },
  { 41, 3, HSI_OP_HEAP_OTHER, PID_HDR_ELSE_PAYLOAD, 0, L_PROV, "HeapExtendSnapshot",  FL(heap_snapshot_v3) },
  { 42, 3, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapContract", FL(heap_expand) },
  { 43, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapLock",     FL(heap_common) },
  { 44, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapUnlock",   FL(heap_common) },
  { 45, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapValidate", FL(heap_common) },
  { 46, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapWalk",     FL(heap_common) },
  { 47, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapSubsegmentAlloc",       FL(heap_subseg) },
  { 48, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapSubsegmentFree",        FL(heap_subseg) },
  { 49, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapSubsegmentAllocCached", FL(heap_subseg) },
  { 50, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapSubsegmentFreeCached",  FL(heap_subseg) },
  { 51, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0 /* pad8: see heap_commit */, 0, "HeapCommit",   FL(heap_commit) },
  { 52, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0 /* pad8: see heap_commit */, 0, "HeapDecommit", FL(heap_commit) },
  { 53, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapSubsegmentInit",        FL(heap_subseg_init) },
  { 54, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapAffinityManagerEnable", FL(heap_affinity_enable) },
  { 55, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapAffinitySlotAssigned",  FL(heap_slot_assigned) },
  { 56, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapSubsegmentActivated",   FL(heap_subseg_activated) },
  { 57, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapAffinitySlotChanged",   FL(heap_slot_changed) },
  { 58, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapSubsegmentReuseThresholdActivated", FL(heap_reuse_threshold) },
};

/* ---- Memory (PageFault) group 0x02 (§6.2) */

/* VirtualAlloc 98 / VirtualFree 99 v2 (PERFINFO_VIRTUAL_ALLOC): 2P+8 (24/16)
   [D: ntwmi, pv, dissect, libtrace].  ProcessId is the target process. */
static const field valloc[] = {
  F("addr",  K_PTR,  0, 0, M_ADDR,  S_HEX),
  F("size",  K_SIZE, 1, 0, M_SIZE,  S_DEC),
  F("pid",   K_U32,  2, 0, M_PID,   S_DEC),
  F("flags", K_U32,  2, 4, M_FLAGS, S_MEMFLAGS),
};
/* VirtualAllocDCStart 128 / DCEnd 129: dissect's manifest adds
   CommitSizeInBytes (3P+8); PerfView registers them without a payload.
   We read the 98 layout and take CommitSize when present [I]. */
static const field valloc_dc[] = {
  F("addr",  K_PTR,  0, 0, M_ADDR,  S_HEX),
  F("size",  K_SIZE, 1, 0, M_SIZE,  S_DEC),
  F("pid",   K_U32,  2, 0, M_PID,   S_DEC),
  F("flags", K_U32,  2, 4, M_FLAGS, S_MEMFLAGS),
  OPT("commit_size", K_SIZE, 2, 8, M_OLD_SIZE, S_DEC),
};
/* HeapRangeRundown 100 v2: HeapHandle, HRFlags, HRPid, HRRangeCount (P+12),
   then the ranges, which are not decoded [D: dissect, ntwmi] */
static const field hr_rundown_v2[] = {
  F("heap",        K_PTR, 0, 0, M_HEAP,  S_HEX),
  F("flags",       K_U32, 1, 0, M_FLAGS, S_HEX),
  F("pid",         K_U32, 1, 4, M_PID,   S_DEC),
  F("range_count", K_U32, 1, 8, M_NONE,  S_DEC),
};
/* HeapRangeRundown 100 v3: + Reserved u32 (P+16) */
static const field hr_rundown_v3[] = {
  F("heap",        K_PTR, 0, 0,  M_HEAP,  S_HEX),
  F("flags",       K_U32, 1, 0,  M_FLAGS, S_HEX),
  F("pid",         K_U32, 1, 4,  M_PID,   S_DEC),
  F("range_count", K_U32, 1, 8,  M_NONE,  S_DEC),
  F("reserved",    K_U32, 1, 12, M_NONE,  S_HEX),
};
/* HeapRangeCreate 101: HeapHandle, FirstRangeSize, HRCreateFlags: 2P+4 */
static const field hr_create[] = {
  F("heap",  K_PTR,  0, 0, M_HEAP,  S_HEX),
  F("size",  K_SIZE, 1, 0, M_SIZE,  S_DEC),
  F("flags", K_U32,  2, 0, M_FLAGS, S_HEX),
};
/* HeapRangeReserve 102 / Release 103: HeapHandle, HRAddress, HRSize: 3P */
static const field hr_range[] = {
  F("heap", K_PTR,  0, 0, M_HEAP, S_HEX),
  F("addr", K_PTR,  1, 0, M_ADDR, S_HEX),
  F("size", K_SIZE, 2, 0, M_SIZE, S_DEC),
};

static const layout mem_tab[] = {
  { 98,  2, HSI_OP_VALLOC, PID_PAYLOAD, 0, 0, "VirtualAlloc", FL(valloc) },
  { 99,  2, HSI_OP_VFREE,  PID_PAYLOAD, 0, 0, "VirtualFree",  FL(valloc) },
  /* HeapRange: written with PageFault hooks by the HeapRange logger [D: ntwmi] */
  { 100, 2, HSI_OP_HEAP_OTHER, PID_PAYLOAD, 0, 0, "HeapRangeRundown", FL(hr_rundown_v2) },
  { 100, 3, HSI_OP_HEAP_OTHER, PID_PAYLOAD, 0, 0, "HeapRangeRundown", FL(hr_rundown_v3) },
  { 101, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapRangeCreate",  FL(hr_create) },
  { 102, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapRangeReserve", FL(hr_range) },
  { 103, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapRangeRelease", FL(hr_range) },
  { 104, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapRangeDestroy", FL(heap_common) },
  { 128, 2, HSI_OP_VALLOC_RUNDOWN, PID_PAYLOAD, 0, 0, "VirtualAllocDCStart", FL(valloc_dc) },
  { 129, 2, HSI_OP_VALLOC_RUNDOWN, PID_PAYLOAD, 0, 0, "VirtualAllocDCEnd",   FL(valloc_dc) },
};

/* ---- Pool, group 0x0E (§6.3).  ETW_POOL_EVENT, naturally aligned, which
   here equals packed [D: ntwmi, dissect v2]. */

/* PoolAlloc 32 / PoolFree 34: PoolType, Tag, NumberOfBytes, Entry: 8+2P (24/16) */
static const field pool_ev[] = {
  F("pool_type", K_U32,  0, 0, M_POOLTYPE, S_POOLTYPE),
  F("tag",       K_U32,  0, 4, M_TAG,      S_TAG),
  F("size",      K_SIZE, 0, 8, M_SIZE,     S_DEC),
  F("addr",      K_PTR,  1, 8, M_ADDR,     S_HEX),   /* Entry */
};
/* PoolAllocSession 33 / PoolFreeSession 35: + SessionId: 12+2P */
static const field pool_ev_session[] = {
  F("pool_type", K_U32,  0, 0, M_POOLTYPE, S_POOLTYPE),
  F("tag",       K_U32,  0, 4, M_TAG,      S_TAG),
  F("size",      K_SIZE, 0, 8, M_SIZE,     S_DEC),
  F("addr",      K_PTR,  1, 8, M_ADDR,     S_HEX),
  F("session",   K_U32,  2, 8, M_SESSION,  S_DEC),
};

/* 36-47 have no template anywhere; the System Informer ntwmi tags every one
   ETW_POOL_EVENT [D: ntwmi hook comments].  Read provisionally with the 32
   layout, + SessionId for the session variants [I]; no lifetime effect. */
static const layout pool_tab[] = {
  { 32, 2, HSI_OP_POOL_ALLOC, PID_HDR, 0, 0, "PoolAlloc",        FL(pool_ev) },
  { 33, 2, HSI_OP_POOL_ALLOC, PID_HDR, 0, 0, "PoolAllocSession", FL(pool_ev_session) },
  { 34, 2, HSI_OP_POOL_FREE,  PID_HDR, 0, 0, "PoolFree",         FL(pool_ev) },
  { 35, 2, HSI_OP_POOL_FREE,  PID_HDR, 0, 0, "PoolFreeSession",  FL(pool_ev_session) },
  { 36, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "AddPoolPage",               FL(pool_ev) },
  { 37, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "AddPoolPageSession",        FL(pool_ev_session) },
  { 38, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "BigPoolPage",               FL(pool_ev) },
  { 39, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "BigPoolPageSession",        FL(pool_ev_session) },
  { 40, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "PoolSnapDCStart",           FL(pool_ev) },
  { 41, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "PoolSnapDCEnd",             FL(pool_ev) },
  { 42, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "BigPoolSnapDCStart",        FL(pool_ev) },
  { 43, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "BigPoolSnapDCEnd",          FL(pool_ev) },
  { 44, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "PoolSnapSessionDCStart",    FL(pool_ev_session) },
  { 45, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "PoolSnapSessionDCEnd",      FL(pool_ev_session) },
  { 46, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "SessionBigPoolSnapDCStart", FL(pool_ev_session) },
  { 47, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "SessionBigPoolSnapDCEnd",   FL(pool_ev_session) },
};

/* ---- Microsoft-Windows-Heap-Snapshot (§6.9) [D: etlparser, ossem] */

/* 100 v1: HeapSnapshotInstance, HeapSnapshotSequence, HeapSnapshotBufferLen,
   then BufferLen bytes of an undocumented blob */
static const field snap_chunk[] = {
  F("instance", K_U32, 0, 0, M_HEAP, S_DEC),
  F("sequence", K_U32, 0, 4, M_ADDR, S_DEC),
  F("length",   K_U32, 0, 8, M_SIZE, S_DEC),
};
/* 200 v1: HeapSnapshotInstance, TotalData */
static const field snap_total[] = {
  F("instance", K_U32, 0, 0, M_HEAP, S_DEC),
  F("total",    K_U32, 0, 4, M_SIZE, S_DEC),
};

static const layout snap_tab[] = {
  { 100, 1, HSI_OP_SNAPSHOT, PID_HDR, 0, L_BLOB, "HeapSnapshotData",  FL(snap_chunk) },
  { 200, 1, HSI_OP_SNAPSHOT, PID_HDR, 0, 0,      "HeapSnapshotTotal", FL(snap_total) },
};

typedef struct provider {
  int group;                  /* kernel hook group, or HSI_MEMEV_SNAPSHOT */
  const layout *tab;
  size_t n;
} provider;

static const provider providers[] = {
  { 0x10, heap_tab, COUNT(heap_tab) },
  { 0x02, mem_tab,  COUNT(mem_tab) },
  { 0x0E, pool_tab, COUNT(pool_tab) },
  { HSI_MEMEV_SNAPSHOT, snap_tab, COUNT(snap_tab) },
};

const hs_guid hsi_heap_snapshot_guid =
  { 0x901d2afau, 0x4ff6, 0x46d7, { 0x8d, 0x0e, 0x53, 0x64, 0x5e, 0x1a, 0x47, 0xf5 } };

/* Class GUIDs of the three kernel groups, for classic FULL/INSTANCE records
   (a relogger could write them so) [I]. */
static const struct { int group; hs_guid g; } class_guids[] = {
  { 0x10, { 0x222962abu, 0x6180, 0x4b88, { 0xa8, 0x25, 0x34, 0x6b, 0x75, 0xf2, 0xa2, 0x4a } } },
  { 0x02, { 0x3d6fa8d3u, 0xfe05, 0x11d0, { 0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c } } },
  { 0x0E, { 0x0268a8b6u, 0x74fd, 0x4302, { 0x9d, 0xd0, 0x6e, 0x8f, 0x17, 0x95, 0xc0, 0xcf } } },
};

/* ------------------------------------------------------------- lookups */

static size_t fwidth(const field *f, int P) {
  switch (f->kind) {
  case K_PTR: case K_SIZE: return (size_t)P;
  case K_U32: return 4;
  case K_U16: return 2;
  default: return 1;
  }
}

static size_t foff(const field *f, int P) { return (size_t)f->np * (size_t)P + f->k; }

/* Bytes a payload must have: the required fields and the tail pad. */
static size_t min_len(const layout *L, int P) {
  size_t n = 0, e;
  unsigned i;
  if (L->flags & L_PROV) return 0;
  for (i = 0; i < L->nf; i++) {
    if (L->f[i].opt) continue;
    e = foff(&L->f[i], P) + fwidth(&L->f[i], P);
    if (e > n) n = e;
  }
  return n + (P == 8 ? L->pad8 : 0);
}

/* Bytes the encoder writes before any blob: every field and the tail pad. */
static size_t full_len(const layout *L, int P) {
  size_t n = 0, e;
  unsigned i;
  for (i = 0; i < L->nf; i++) {
    e = foff(&L->f[i], P) + fwidth(&L->f[i], P);
    if (e > n) n = e;
  }
  return n + (P == 8 ? L->pad8 : 0);
}

static const provider *provider_of(int group) {
  size_t i;
  for (i = 0; i < COUNT(providers); i++)
    if (providers[i].group == group) return &providers[i];
  return NULL;
}

/*
** The row for (type, version): the newest row whose version is <= the
** event's, since newer versions append fields and older decoders keep
** working [I, PerfView does the same]; an event older than every row
** gets the oldest row.
*/
static const layout *pick(const provider *pv, int type, int version) {
  const layout *first = NULL, *best = NULL;
  size_t i;
  for (i = 0; i < pv->n; i++) {
    const layout *L = &pv->tab[i];
    if (L->op != type) continue;
    if (!first) first = L;
    if (L->version <= version) best = L;
  }
  return best ? best : first;
}

static int newest(const provider *pv, int type) {
  int v = -1;
  size_t i;
  for (i = 0; i < pv->n; i++)
    if (pv->tab[i].op == type && pv->tab[i].version > v) v = pv->tab[i].version;
  return v;
}

static int is_classic(int ht) {
  return ht == HS_HT_FULL32 || ht == HS_HT_FULL64 || ht == HS_HT_INSTANCE32 || ht == HS_HT_INSTANCE64;
}

/*
** Every event of a trace passes through classify, so kernel hooks of the
** three memory groups remember their row per (group, type, version):
** the tables are fixed, and a row is found once, not per event.
*/
#define CACHE_V 8
static const layout *kcache[3][256][CACHE_V];
static uint8_t kcached[3][256][CACHE_V];

/* min_len of a row at P = 4 and 8, remembered per row (the tables are
   fixed); rows are found by their index in their provider's table. */
static size_t minlen_of(const layout *L, int P);

static int group_slot(int g) { return g == 0x10 ? 0 : g == 0x02 ? 1 : g == 0x0E ? 2 : -1; }

/* The row for an event, or NULL if it is not a memory event. */
static const layout *classify(const hs_event *ev, int *group, int *type) {
  const provider *pv;
  int g = -2, t = 0, v = 0;
  size_t i;
  if (ev->flags & HS_EVF_KERNEL) {
    int gs;
    g = ev->hook >> 8; t = ev->hook & 0xFF; v = ev->version & 0xFF;  /* PEBS/PMC bits, if left in */
    if ((gs = group_slot(g)) < 0) return NULL;
    *group = g; *type = t;
    if (v < CACHE_V) {
      if (!kcached[gs][t][v]) {
        kcache[gs][t][v] = pick(provider_of(g), t, v);
        kcached[gs][t][v] = 1;
      }
      return kcache[gs][t][v];
    }
  } else if (is_classic(ev->header_type)) {
    for (i = 0; i < COUNT(class_guids); i++)
      if (hs_guid_eq(&ev->provider, &class_guids[i].g)) g = class_guids[i].group;
    t = ev->opcode; v = ev->version & 0xFF;
  } else if (hs_guid_eq(&ev->provider, &hsi_heap_snapshot_guid)) {
    g = HSI_MEMEV_SNAPSHOT; t = ev->id; v = ev->version;
  }
  pv = provider_of(g);
  if (!pv) return NULL;
  *group = g; *type = t;
  return pick(pv, t, v);
}

/* ----------------------------------------------------- hsi_memop fields */

static void store(hsi_memop *op, int dest, uint64_t v) {
  switch (dest) {
  case M_HEAP: op->heap = v; break;
  case M_ADDR: op->addr = v; break;
  case M_SIZE: op->size = v; break;
  case M_OLD_ADDR: op->old_addr = v; break;
  case M_OLD_SIZE: op->old_size = v; break;
  case M_FLAGS: op->flags = (uint32_t)v; break;
  case M_TAG: op->tag = (uint32_t)v; break;
  case M_POOLTYPE: op->pool_type = (uint32_t)v; break;
  case M_SESSION: op->session = (uint32_t)v; break;
  case M_SOURCE: op->source = (uint32_t)v; break;
  case M_PID: op->pid = (uint32_t)v; break;
  default: break;
  }
}

static uint64_t fetch(const hsi_memop *op, int dest) {
  switch (dest) {
  case M_HEAP: return op->heap;
  case M_ADDR: return op->addr;
  case M_SIZE: return op->size;
  case M_OLD_ADDR: return op->old_addr;
  case M_OLD_SIZE: return op->old_size;
  case M_FLAGS: return op->flags;
  case M_TAG: return op->tag;
  case M_POOLTYPE: return op->pool_type;
  case M_SESSION: return op->session;
  case M_SOURCE: return op->source;
  case M_PID: return op->pid;
  default: return 0;
  }
}

/* Read field f through the cursor; *present is 0 when an optional field
   lies past the end of the payload. */
static uint64_t read_field(const uint8_t *p, size_t len, int P, const field *f, int *present) {
  size_t off = foff(f, P), w = fwidth(f, P);
  *present = off + w <= len;              /* the only bounds check a field needs */
  if (!*present) return 0;
  switch (w) {
  case 8: return rd64(p + off);
  case 4: return rd32(p + off);
  case 2: return rd16(p + off);
  default: return p[off];
  }
}

static size_t minlen_of(const layout *L, int P) {
  static size_t memo[4][64][2];
  static uint8_t known[4][64][2];
  size_t pi, ri;
  int w = P == 8;
  for (pi = 0; pi < COUNT(providers); pi++) {
    if (L < providers[pi].tab || L >= providers[pi].tab + providers[pi].n) continue;
    ri = (size_t)(L - providers[pi].tab);
    if (pi >= 4 || ri >= 64) break;
    if (!known[pi][ri][w]) { memo[pi][ri][w] = min_len(L, P); known[pi][ri][w] = 1; }
    return memo[pi][ri][w];
  }
  return min_len(L, P);
}

/* -------------------------------------------------------------- decode */

int hsi_memev_decode(const hs_event *ev, hsi_memop *op) {
  const layout *L;
  int group = 0, type = 0, P = ev->pointer_size, present;
  uint32_t ppid = HS_NOID;
  int have_ppid = 0;
  unsigned i;
  L = classify(ev, &group, &type);
  if (!L) return 0;
  memset(op, 0, sizeof *op);
  op->kind = L->kind;
  op->subop = type;
  op->hook = group >= 0 ? (uint16_t)(group << 8 | type) : 0;
  op->ts = ev->timestamp;
  op->pointer_size = ev->pointer_size;
  if (ev->flags & HS_EVF_HAS_IDS) { op->pid = ev->pid; op->tid = ev->tid; }
  else op->pid = op->tid = HS_NOID;
  if (P != 4 && P != 8) return -1;
  if (ev->payload_len < minlen_of(L, P) || (!ev->payload && ev->payload_len)) return -1;
  for (i = 0; i < L->nf; i++) {
    const field *f = &L->f[i];
    uint64_t v = read_field(ev->payload, ev->payload_len, P, f, &present);
    if (!present) continue;
    if (f->dest == M_PID) { ppid = (uint32_t)v; have_ppid = 1; }
    else store(op, f->dest, v);
  }
  if ((L->flags & L_BLOB) && op->size > ev->payload_len - full_len(L, P)) return -1;
  if (have_ppid && (L->pid == PID_PAYLOAD || (L->pid == PID_HDR_ELSE_PAYLOAD && op->pid == HS_NOID)))
    op->pid = ppid;
  return 1;
}

/* -------------------------------------------------------------- encode */

static int kind_group(int kind) {
  switch (kind) {
  case HSI_OP_HEAP_CREATE: case HSI_OP_HEAP_ALLOC: case HSI_OP_HEAP_REALLOC:
  case HSI_OP_HEAP_FREE: case HSI_OP_HEAP_DESTROY: case HSI_OP_HEAP_OTHER: return 0x10;
  case HSI_OP_VALLOC: case HSI_OP_VFREE: case HSI_OP_VALLOC_RUNDOWN: return 0x02;
  case HSI_OP_POOL_ALLOC: case HSI_OP_POOL_FREE: return 0x0E;
  case HSI_OP_SNAPSHOT: return HSI_MEMEV_SNAPSHOT;
  default: return -2;
  }
}

static int kind_type(const hsi_memop *op) {
  int session = (op->pool_type & 0x20) != 0;
  switch (op->kind) {
  case HSI_OP_HEAP_CREATE: return 32;
  case HSI_OP_HEAP_ALLOC: return 33;
  case HSI_OP_HEAP_REALLOC: return 34;
  case HSI_OP_HEAP_DESTROY: return 35;
  case HSI_OP_HEAP_FREE: return 36;
  case HSI_OP_HEAP_OTHER: return op->subop;
  case HSI_OP_VALLOC: return 98;
  case HSI_OP_VFREE: return 99;
  case HSI_OP_VALLOC_RUNDOWN: return 128;
  case HSI_OP_POOL_ALLOC: return session ? 33 : 32;
  case HSI_OP_POOL_FREE: return session ? 35 : 34;
  case HSI_OP_SNAPSHOT: return op->subop > 0 ? op->subop : 100;
  default: return -1;
  }
}

long hsi_memev_encode(const hsi_memop *op, int opcode_hint, int version, int ptr,
                      uint8_t *out, size_t cap, int *group, int *type) {
  const provider *pv;
  const layout *L;
  int g, t;
  size_t len, blob = 0;
  unsigned i;
  if (!op || (ptr != 4 && ptr != 8)) return HS_EARG;
  g = kind_group(op->kind);
  t = kind_type(op);
  if (op->hook && op->kind != HSI_OP_SNAPSHOT) { g = op->hook >> 8; t = op->hook & 0xFF; }
  if (opcode_hint > 0) t = opcode_hint;
  pv = provider_of(g);
  if (!pv || t <= 0) return HS_EARG;
  L = pick(pv, t, version > 0 ? version : newest(pv, t));
  if (!L || L->kind != op->kind) return HS_EARG;
  len = full_len(L, ptr);
  if (L->flags & L_BLOB) {
    if (op->size > 0xFFFF) return HS_EARG;    /* an event is at most 64 KiB (§1.9) */
    blob = (size_t)op->size;
  }
  if (out && cap >= len + blob) {
    memset(out, 0, len + blob);
    for (i = 0; i < L->nf; i++) {
      const field *f = &L->f[i];
      uint8_t *p = out + foff(f, ptr);
      uint64_t v = fetch(op, f->dest);
      switch (fwidth(f, ptr)) {
      case 8: wr64(p, v); break;
      case 4: wr32(p, (uint32_t)v); break;
      case 2: wr16(p, (uint16_t)v); break;
      default: p[0] = (uint8_t)v; break;
      }
    }
  }
  if (group) *group = g;
  if (type) *type = t;
  return (long)(len + blob);
}

/* --------------------------------------------------------------- names */

int hsi_memev_version(int group, int type) {
  const provider *pv = provider_of(group);
  return pv ? newest(pv, type) : -1;
}

const char *hsi_memev_name(int group, int type) {
  const provider *pv = provider_of(group);
  size_t i;
  if (!pv) return NULL;
  for (i = 0; i < pv->n; i++)
    if (pv->tab[i].op == type) return pv->tab[i].name;
  return NULL;
}

int hsi_memev_layout_at(size_t i, int *group, int *type, int *version) {
  size_t p;
  for (p = 0; p < COUNT(providers); p++) {
    if (i < providers[p].n) {
      if (group) *group = providers[p].group;
      if (type) *type = providers[p].tab[i].op;
      if (version) *version = providers[p].tab[i].version;
      return 1;
    }
    i -= providers[p].n;
  }
  return 0;
}

void hsi_pool_tag(uint32_t tag, char out[5]) {
  int i;
  for (i = 0; i < 4; i++) {
    unsigned ch = (tag >> (8 * i)) & 0xFF;
    out[i] = ch >= 0x20 && ch < 0x7F ? (char)ch : '.';
  }
  out[4] = 0;
}

/* POOL_TYPE [D: wdm; ntwmi]: base = v & 7, session 0x20, nx 0x200, and ETW
   ORs 0x10000000 (ETW_POOLTRACE_BIGPOOL_MASK) into big-pool events [I]. */
#define POOL_SESSION 0x20u
#define POOL_NX      0x200u
#define POOL_BIG     0x10000000u

char *hsi_pool_type_str(uint32_t type, char *out, size_t cap) {
  static const char *const base[8] = {
    "NonPaged", "Paged", "NonPagedMustSucceed", "DontUseThisType",
    "NonPagedCacheAligned", "PagedCacheAligned", "NonPagedCacheAlignedMustS", "PoolType7"
  };
  const char *b = base[type & 7];
  uint32_t rest = type & ~(7u | POOL_SESSION | POOL_NX | POOL_BIG);
  char x[16] = "";
  if (!out || cap == 0) return out;
  if (rest) snprintf(x, sizeof x, "|0x%lx", (unsigned long)rest);
  if ((type & POOL_NX) && strncmp(b, "NonPaged", 8) == 0)   /* NonPagedNxCacheAligned, as wdm.h */
    snprintf(out, cap, "NonPagedNx%s%s%s%s", b + 8, type & POOL_SESSION ? "Session" : "",
             type & POOL_BIG ? "|Big" : "", x);
  else
    snprintf(out, cap, "%s%s%s%s%s", b, type & POOL_NX ? "Nx" : "", type & POOL_SESSION ? "Session" : "",
             type & POOL_BIG ? "|Big" : "", x);
  return out;
}

/* MEM_* [D: winnt].  0x4000 is also MEM_REPLACE_PLACEHOLDER; on these
   events it is shown as DECOMMIT. */
static const struct { uint32_t bit; const char *name; } mem_flags[] = {
  { 0x1, "COALESCE_PLACEHOLDERS" }, { 0x2, "PRESERVE_PLACEHOLDER" },
  { 0x1000, "COMMIT" }, { 0x2000, "RESERVE" }, { 0x4000, "DECOMMIT" }, { 0x8000, "RELEASE" },
  { 0x40000, "RESERVE_PLACEHOLDER" }, { 0x80000, "RESET" }, { 0x100000, "TOP_DOWN" },
  { 0x200000, "WRITE_WATCH" }, { 0x400000, "PHYSICAL" }, { 0x800000, "ROTATE" },
  { 0x1000000, "RESET_UNDO" }, { 0x20000000, "LARGE_PAGES" }, { 0x80000000u, "4MB_PAGES" },
};

char *hsi_mem_flags_str(uint32_t flags, char *out, size_t cap) {
  size_t i, n = 0;
  uint32_t rest = flags;
  int w;
  if (!out || cap == 0) return out;
  out[0] = 0;
  if (flags == 0) { snprintf(out, cap, "0"); return out; }
  for (i = 0; i < COUNT(mem_flags) && n < cap; i++) {
    if (!(flags & mem_flags[i].bit)) continue;
    rest &= ~mem_flags[i].bit;
    w = snprintf(out + n, cap - n, "%s%s", n ? "|" : "", mem_flags[i].name);
    if (w < 0) break;
    n += (size_t)w;
  }
  if (rest && n < cap) snprintf(out + n, cap - n, "%s0x%lx", n ? "|" : "", (unsigned long)rest);
  return out;
}

/* SourceId [D: heapdoc, ntetw.h MEMORY_FROM_*] */
const char *hsi_heap_source_name(uint32_t source) {
  static const char *const names[] = {
    NULL, "Lookaside", "LFH", "MainPath", "SlowPath", "Invalid", "SegmentHeap"
  };
  return source < COUNT(names) ? names[source] : NULL;
}

/* Commit/Decommit Caller [D: ntwmi HEAP_LOG_*] */
const char *hsi_heap_caller_name(uint32_t caller) {
  static const char *const names[] = {
    NULL, "CreateHeap", "FindAndCommitPages", "InitializeSegment", "ExtendHeap",
    "DecommitFreeBlock", "DecommitFreeBlock2", "DecommitBlock", "CommitBlock",
    "AllocateHeap", "CommitAndInitializePages", "AllocateSegmentHeap",
    "AllocateNewSegment", "DecommitPageRange"
  };
  return caller < COUNT(names) ? names[caller] : NULL;
}

/* ------------------------------------------------------------ describe */

typedef struct sbuf { char *p; size_t cap, n; } sbuf;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void put(sbuf *b, const char *fmt, ...) {
  va_list ap;
  int w;
  if (b->cap == 0 || b->n >= b->cap - 1) return;
  va_start(ap, fmt);
  w = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
  va_end(ap);
  if (w < 0) { b->p[b->n] = 0; return; }
  b->n += (size_t)w;
  if (b->n > b->cap - 1) b->n = b->cap - 1;
}

static void put_field(sbuf *b, const field *f, uint64_t v) {
  char tmp[HSI_MEMFLAGS_STRLEN];
  const char *s;
  put(b, "%s%s=", b->n ? " " : "", f->name);
  switch (f->show) {
  case S_HEX: put(b, "0x%llx", (unsigned long long)v); break;
  case S_SOURCE: case S_CALLER:
    s = f->show == S_SOURCE ? hsi_heap_source_name((uint32_t)v) : hsi_heap_caller_name((uint32_t)v);
    if (s) put(b, "%s", s); else put(b, "%lu", (unsigned long)v);
    break;
  case S_MEMFLAGS: put(b, "%s", hsi_mem_flags_str((uint32_t)v, tmp, sizeof tmp)); break;
  case S_TAG: hsi_pool_tag((uint32_t)v, tmp); put(b, "'%s'", tmp); break;
  case S_POOLTYPE: put(b, "%s", hsi_pool_type_str((uint32_t)v, tmp, sizeof tmp)); break;
  default: put(b, "%llu", (unsigned long long)v); break;
  }
}

size_t hsi_memev_describe(const hs_event *ev, char *out, size_t cap) {
  sbuf b;
  const layout *L;
  hsi_memop op;
  int group = 0, type = 0, P = ev->pointer_size, present, rc;
  size_t need, have = ev->payload_len, end = 0;
  unsigned i;
  b.p = out; b.cap = cap; b.n = 0;
  if (cap) out[0] = 0;
  L = classify(ev, &group, &type);
  if (!L) return 0;
  rc = hsi_memev_decode(ev, &op);   /* one verdict on damage for dump and the tracker */
  if (P != 4 && P != 8) { put(&b, "damaged: pointer size %d", P); return b.n; }
  if (rc < 0) {
    need = min_len(L, P);
    if ((L->flags & L_BLOB) && have >= need) need += (size_t)op.size;
    put(&b, "damaged: payload %lu bytes, %s v%d needs %lu at P=%d", (unsigned long)have,
        L->name, L->version, (unsigned long)need, P);
    return b.n;
  }
  if (L->nf == 0) { put(&b, "layout unknown, payload %lu bytes", (unsigned long)have); return b.n; }
  for (i = 0; i < L->nf; i++) {
    const field *f = &L->f[i];
    uint64_t v = read_field(ev->payload, have, P, f, &present);
    if (!present) continue;
    put_field(&b, f, v);
    end = foff(f, P) + fwidth(f, P);
    if ((L->flags & L_BLOB) && f->dest == M_SIZE) end += (size_t)v;
  }
  if (P == 8 && end) end += L->pad8;
  if (have > end) put(&b, "%s+%lu bytes", b.n ? " " : "", (unsigned long)(have - end));
  if (L->flags & L_PROV) put(&b, "%s(provisional layout)", b.n ? " " : "");
  return b.n;
}

/* ----------------------------------------------------------- selfcheck */

int hsi_memev_selfcheck(char *err, size_t errlen) {
  size_t p, i, j;
  int P;
#define FAIL(...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)
  for (p = 0; p < COUNT(providers); p++) {
    const provider *pv = &providers[p];
    for (i = 0; i < pv->n; i++) {
      const layout *L = &pv->tab[i];
      if (!L->name || (L->nf && !L->f)) FAIL("group %d op %d: no name or fields", pv->group, L->op);
      if (kind_group(L->kind) != pv->group && L->kind != HSI_OP_HEAP_OTHER)
        FAIL("%s: kind %d does not belong to group %d", L->name, L->kind, pv->group);
      if (i > 0) {
        const layout *Q = &pv->tab[i - 1];
        if (Q->op > L->op || (Q->op == L->op && Q->version >= L->version))
          FAIL("%s v%d: rows not sorted by opcode and version", L->name, L->version);
        if (Q->op == L->op && (Q->kind != L->kind || strcmp(Q->name, L->name) != 0))
          FAIL("%s v%d: kind or name differs between versions", L->name, L->version);
      }
      for (P = 4; P <= 8; P += 4) {
        size_t at = 0;
        int seen_opt = 0;
        for (j = 0; j < L->nf; j++) {
          const field *f = &L->f[j];
          size_t k;
          if (f->kind < K_PTR || f->kind > K_U8 || f->dest >= M_LAST)
            FAIL("%s v%d field %s: bad kind or destination", L->name, L->version, f->name);
          if (foff(f, P) != at)   /* packed: each field starts where the last ended */
            FAIL("%s v%d field %s: offset %lu at P=%d, expected %lu", L->name, L->version, f->name,
                 (unsigned long)foff(f, P), P, (unsigned long)at);
          at += fwidth(f, P);
          if (f->opt) seen_opt = 1;
          else if (seen_opt) FAIL("%s v%d field %s: required after optional", L->name, L->version, f->name);
          for (k = 0; k < j; k++)
            if (f->dest != M_NONE && L->f[k].dest == f->dest)
              FAIL("%s v%d field %s: destination used twice", L->name, L->version, f->name);
        }
        if ((L->flags & L_BLOB) && (L->pad8 || seen_opt))
          FAIL("%s: a blob must follow the fields directly", L->name);
      }
    }
  }
#undef FAIL
  if (err && errlen) err[0] = 0;
  return 0;
}
