/*
** heap.c -- the Heap events, kernel group 0x10 (ETL-FORMAT.md §6.1): one
** layout row per (opcode, version) for the table-driven engine in
** memev.c, and the names of the SourceId and Commit/Decommit Caller codes
** they carry.
**
** No trace we have contains these events, so every layout is documented
** only.  Tags: [D: source] documented only, [I] inference.
*/
#include "heapscript.h"
#include "memop.h"
#include "memev.h"
#include "memev_tab.h"

/* Packed structures [D: ntwmi pshpack1]; x64 lengths 28/44/20 of
   Alloc/ReAlloc/Free seen in one real capture [D: traplol]. */

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

const hsi_memev_table hsi_heap_table = { 0x10, heap_tab, COUNT(heap_tab) };

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
