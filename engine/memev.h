/*
** memev.h -- memory events: heap (kernel group 0x10), VirtualAlloc and
** HeapRange (group 0x02), pool (group 0x0E) and the Heap-Snapshot
** provider.  One layout table per provider drives decoding (hs_event ->
** hsi_memop), encoding (hsi_memop -> payload bytes, for synthetic test
** traces) and the one-line description shown by `heapscript dump`, so
** the three can never disagree.  Every layout is documented only
** (ETL-FORMAT.md §6.1-6.3, §6.9); each provider's table (heap.c,
** valloc.c, pool.c, snapshot.c) says where each choice comes from, and
** memev.c is the engine that reads them.
*/
#ifndef HS_MEMEV_H
#define HS_MEMEV_H

#include "heapscript.h"
#include "memop.h"

/* "Group" of the Microsoft-Windows-Heap-Snapshot provider, whose events
   are EVENT_HEADER records identified by event id (100, 200), not hooks. */
#define HSI_MEMEV_SNAPSHOT (-1)

/* Microsoft-Windows-Heap-Snapshot 901d2afa-4ff6-46d7-8d0e-53645e1a47f5. */
extern const hs_guid hsi_heap_snapshot_guid;

/*
** Decode one record.  Returns 1 and fills *op for a memory event; 0 if
** the record is not one (op untouched); -1 for a memory event whose
** payload is shorter than its layout or whose pointer width is not 4 or
** 8 (the caller counts it as damaged; op->kind, subop, hook, ids and ts
** are filled anyway).  Longer payloads are accepted.
**
** Recognised: kernel records (HS_EVF_KERNEL) by hook; classic FULL/
** INSTANCE records whose class GUID is the Heap, PageFault or Pool GUID
** by opcode; Heap-Snapshot EVENT_HEADER records by id.  Events whose
** layout is unknown or unconfirmed (heap ops 39-41, pool ops 36-47) are
** HSI_OP_HEAP_OTHER and never damaged.
**
** Ids: heap and pool events take pid/tid from the header (HS_NOID when it
** has none; heap SnapShot falls back to its payload ProcessId);
** VirtualAlloc and HeapRangeRundown take the pid from the payload (the
** target process) and the tid from the header.
**
** Heap-Snapshot events (HSI_OP_SNAPSHOT, subop = event id):
**   id 100: heap = HeapSnapshotInstance, addr = HeapSnapshotSequence,
**           size = HeapSnapshotBufferLen (the chunk's blob bytes, which
**           must be present: a shorter payload is damaged);
**   id 200: heap = HeapSnapshotInstance, size = TotalData.
*/
int hsi_memev_decode(const hs_event *ev, hsi_memop *op);
/* The memory groups' slots (heap 0x10, PageFault 0x02, pool 0x0E: 0, 1,
   2), -1 for another group. */
static inline int hsi_memev_group_slot(int g) { return g == 0x10 ? 0 : g == 0x02 ? 1 : g == 0x0E ? 2 : -1; }
/* The first field of every GUID a non-kernel memory event can have: the
   classic heap, PageFault and pool classes (memev.c) and Heap-Snapshot
   (snapshot.c) are written with these. */
#define HSI_MEMEV_HEAP_D1 0x222962abu
#define HSI_MEMEV_PAGEFAULT_D1 0x3d6fa8d3u
#define HSI_MEMEV_POOL_D1 0x0268a8b6u
#define HSI_MEMEV_SNAPSHOT_D1 0x901d2afau
/* 0 when hsi_memev_decode would certainly return 0 for ev (an event of
   another kernel group or another provider): a test before the call,
   for the events of the walk that are not memory events. */
static inline int hsi_memev_maybe(const hs_event *ev) {
  uint32_t d1;
  if (ev->flags & HS_EVF_KERNEL) return hsi_memev_group_slot(ev->hook >> 8) >= 0;
  d1 = ev->provider.d1;
  return d1 == HSI_MEMEV_HEAP_D1 || d1 == HSI_MEMEV_PAGEFAULT_D1 || d1 == HSI_MEMEV_POOL_D1
         || d1 == HSI_MEMEV_SNAPSHOT_D1;
}
/* Work out every row's lookups now (they are otherwise made on first
   use): after it, decoding writes no shared state, so it may run on
   another thread (the analysis decodes on its reader thread). */
void hsi_memev_prepare(void);

/*
** Build the payload for *op at pointer width ptr (4 or 8).  The event is
** chosen as follows: group from op->hook when it is non-zero, else from
** op->kind; type = opcode_hint when > 0, else the type in op->hook, else
** the default for op->kind (Create 32, Alloc 33, ReAlloc 34, Destroy 35,
** Free 36, HEAP_OTHER op->subop, VirtualAlloc 98, VirtualFree 99,
** VALLOC_RUNDOWN 128, pool alloc 32 / free 34, or 33 / 35 when pool_type
** has the session bit 0x20; SNAPSHOT op->subop or 100).  version 0 means
** the newest layout known (hsi_memev_version says which).  The layout's
** kind must equal op->kind.
**
** Fields the op does not carry are written as 0; values wider than their
** field are truncated.  Returns the payload length and writes it to out
** when cap is large enough (snprintf style: out may be NULL with cap 0),
** or HS_EARG.  *group and *type (may be NULL) receive the hook group
** (HSI_MEMEV_SNAPSHOT for the snapshot provider) and opcode / event id;
** -1 when the operation cannot be encoded.
*/
long hsi_memev_encode(const hsi_memop *op, int opcode_hint, int version, int ptr,
                      uint8_t *out, size_t cap, int *group, int *type);

/*
** The table row ev decodes with: its name, version, HSI_OP_* kind, and
** the payload lengths it explains at the event's pointer size: its
** required fields up to all of its fields (max SIZE_MAX for a row with a
** blob or a provisional or unknown layout).  1, or 0 if ev is not a
** memory event.  For the layout checks (layoutcheck.h).
*/
int hsi_memev_row(const hs_event *ev, const char **name, int *version, int *kind,
                  size_t *min_len, size_t *max_len);

/* Newest version in the table for (group, type), or -1 if unknown. */
int hsi_memev_version(int group, int type);

/* "HeapAlloc", "VirtualAlloc", "PoolAlloc", ...; NULL if not a memory event. */
const char *hsi_memev_name(int group, int type);

/*
** Walk the tables: for i = 0, 1, ... returns 1 and the (group, type,
** version) of the i-th layout, 0 past the end.
*/
int hsi_memev_layout_at(size_t i, int *group, int *type, int *version);

/*
** "heap=0x1a0000 size=24 addr=0x1a2b30 source=LFH" for a memory event,
** driven by the same table; a damaged one is described as such.
** Returns the length written (out is always NUL-terminated when cap > 0),
** 0 and an empty string if ev is not a memory event.
*/
size_t hsi_memev_describe(const hs_event *ev, char *out, size_t cap);

/* Pool tag to 4 characters, first from the low byte; non-printable as '.'. */
void hsi_pool_tag(uint32_t tag, char out[5]);

/* "NonPagedNx", "PagedSession", "NonPaged|Big" (§6.3); returns out. */
#define HSI_POOLTYPE_STRLEN 64
char *hsi_pool_type_str(uint32_t type, char *out, size_t cap);

/* MEM_* flags: "COMMIT|RESERVE", unknown bits as hex, "0" for none; returns out. */
#define HSI_MEMFLAGS_STRLEN 192
char *hsi_mem_flags_str(uint32_t flags, char *out, size_t cap);

/* Heap SourceId: "Lookaside", "LFH", "MainPath", ...; NULL if unknown. */
const char *hsi_heap_source_name(uint32_t source);

/* Heap Commit/Decommit Caller: "CreateHeap", ...; NULL if unknown. */
const char *hsi_heap_caller_name(uint32_t caller);

/*
** Check the tables for consistency (packed, contiguous fields at both
** widths, optional fields last, versions ascending, one kind and name
** per event).  Returns 0, or -1 with a message in err.
*/
int hsi_memev_selfcheck(char *err, size_t errlen);

#endif
