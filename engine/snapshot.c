/*
** snapshot.c -- the Microsoft-Windows-Heap-Snapshot provider (ETL-FORMAT.md
** §6.9), whose events are EVENT_HEADER records identified by event id,
** not kernel hooks: one layout row per (event id, version) for the
** table-driven engine in memev.c.
**
** No trace we have contains these events, so every layout is documented
** only.  Tags: [D: source] documented only, [I] inference.
*/
#include "heapscript.h"
#include "memop.h"
#include "memev.h"
#include "memev_tab.h"

/* Microsoft-Windows-Heap-Snapshot 901d2afa-4ff6-46d7-8d0e-53645e1a47f5. */
const hs_guid hsi_heap_snapshot_guid =
  { HSI_MEMEV_SNAPSHOT_D1, 0x4ff6, 0x46d7, { 0x8d, 0x0e, 0x53, 0x64, 0x5e, 0x1a, 0x47, 0xf5 } };

/* Both events' layouts [D: etlparser, ossem]. */

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

const hsi_memev_table hsi_snapshot_table = { HSI_MEMEV_SNAPSHOT, snap_tab, COUNT(snap_tab) };
