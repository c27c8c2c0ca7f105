/*
** memop.h -- the contract between the memory-event decoders (heap,
** VirtualAlloc, pool: engine/memev.c driven by the tables of heap.c,
** valloc.c, pool.c) and the lifetime tracker (engine/lifetime.c).  A
** decoder turns one hs_event into one hsi_memop; the tracker never looks
** at payload bytes.
*/
#ifndef HS_MEMOP_H
#define HS_MEMOP_H

#include "heapscript.h"

enum hsi_memop_kind {
  HSI_OP_NONE = 0,
  /* heap (group 0x10) */
  HSI_OP_HEAP_CREATE,    /* heap */
  HSI_OP_HEAP_ALLOC,     /* heap, addr, size, source */
  HSI_OP_HEAP_REALLOC,   /* heap, addr (new), size (new), old_addr, old_size, source */
  HSI_OP_HEAP_FREE,      /* heap, addr, source */
  HSI_OP_HEAP_DESTROY,   /* heap */
  HSI_OP_HEAP_OTHER,     /* expand, contract, snapshot, range...: decoded, no lifetime effect */
  /* VirtualAlloc (group 0x02 ops 98/99, rundown 128/129) */
  HSI_OP_VALLOC,         /* addr, size, flags (MEM_*), pid from payload */
  HSI_OP_VFREE,          /* addr, size, flags (MEM_DECOMMIT / MEM_RELEASE) */
  HSI_OP_VALLOC_RUNDOWN, /* existing region at trace start: addr, size, flags, commit size in old_size */
  /* pool (group 0x0E) */
  HSI_OP_POOL_ALLOC,     /* addr (Entry), size, tag, pool_type, session */
  HSI_OP_POOL_FREE,      /* addr (Entry), size (may be meaningless), tag, pool_type */
  HSI_OP_SNAPSHOT        /* heap snapshot chunk (Microsoft-Windows-Heap-Snapshot): counted only */
};

/* MEM_* flags (winnt.h). */
#define HS_MEM_COMMIT   0x1000u
#define HS_MEM_RESERVE  0x2000u
#define HS_MEM_DECOMMIT 0x4000u
#define HS_MEM_RELEASE  0x8000u

typedef struct hsi_memop {
  int kind;               /* HSI_OP_* */
  int subop;              /* the event's opcode, for HSI_OP_HEAP_OTHER */
  int64_t ts;             /* raw ticks (from the event) */
  uint32_t pid, tid;      /* subject process (payload pid for VirtualAlloc), thread or HS_NOID */
  uint64_t heap;          /* heap handle */
  uint64_t addr, size;
  uint64_t old_addr, old_size;
  uint32_t flags;         /* MEM_* for VirtualAlloc, HeapFlags for create */
  uint32_t tag;           /* pool tag, first char in the low byte */
  uint32_t pool_type;
  uint32_t session;
  uint32_t source;        /* heap SourceId */
  uint8_t pointer_size;
  uint16_t hook;          /* group << 8 | type of the source event (0 for Heap-Snapshot): subop
                             alone is ambiguous across groups (heap 37 vs pool 37) */
} hsi_memop;

#endif
