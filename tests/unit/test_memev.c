/*
** test_memev.c -- memory-event decoders and encoders (engine/memev.c and
** the tables of heap.c, valloc.c, pool.c, snapshot.c).
**
** Payloads are written byte by byte from ETL-FORMAT.md §6.1-6.3 and §6.9,
** never with the encoder, so a wrong table row fails here.  Then every
** table row is round-tripped through the encoder at both widths.
*/
#include "unit.h"
#include "heapscript.h"
#include "memop.h"
#include "memev.h"

#define HPID 1234u
#define HTID 5678u
#define TS   0x1122334455667788LL

/* Little-endian store of the n low bytes of v at b + off. */
static void le(uint8_t *b, size_t off, uint64_t v, int n) {
  int i;
  for (i = 0; i < n; i++) b[off + i] = (uint8_t)(v >> (8 * i));
}

/* A kernel record as the reader hands it out: SYSTEM header with ids. */
static hs_event kev(int group, int type, int version, int P, const uint8_t *p, size_t len) {
  hs_event ev;
  memset(&ev, 0, sizeof ev);
  ev.flags = HS_EVF_KERNEL | HS_EVF_HAS_IDS;
  ev.header_type = P == 8 ? HS_HT_SYSTEM64 : HS_HT_SYSTEM32;
  ev.hook = (uint16_t)(group << 8 | type);
  ev.opcode = (uint8_t)type;
  ev.version = (uint16_t)version;
  ev.pointer_size = (uint8_t)P;
  ev.payload = p;
  ev.payload_len = (uint32_t)len;
  ev.pid = HPID;
  ev.tid = HTID;
  ev.timestamp = TS;
  return ev;
}

/* A Heap-Snapshot EVENT_HEADER record. */
static hs_event sev(int id, const uint8_t *p, size_t len) {
  hs_event ev;
  memset(&ev, 0, sizeof ev);
  ev.flags = HS_EVF_HAS_IDS;
  ev.header_type = HS_HT_EVENT64;
  ev.provider = hsi_heap_snapshot_guid;
  ev.id = (uint16_t)id;
  ev.version = 1;
  ev.pointer_size = 8;
  ev.payload = p;
  ev.payload_len = (uint32_t)len;
  ev.pid = HPID;
  ev.tid = HTID;
  ev.timestamp = TS;
  return ev;
}

/* Decode; check the common fields, that one byte less is damaged (when
   `strict`) and that extra bytes change nothing. */
static int dec(const hs_event *ev0, hsi_memop *op, int kind, int strict) {
  hs_event ev = *ev0;
  hsi_memop op2;
  uint8_t big[512];
  int rc = hsi_memev_decode(&ev, op);
  CHECK_EQ(rc, 1);
  CHECK_EQ(op->kind, kind);
  CHECK_EQ(op->ts, TS);
  CHECK_EQ(op->pointer_size, ev.pointer_size);
  if (ev.flags & HS_EVF_KERNEL) {
    CHECK_EQ(op->hook, ev.hook);
    CHECK_EQ(op->subop, ev.hook & 0xFF);
  }
  if (strict) {
    ev.payload_len = ev0->payload_len - 1;
    CHECK_EQ(hsi_memev_decode(&ev, &op2), -1);
    ev.payload_len = 0;
    CHECK_EQ(hsi_memev_decode(&ev, &op2), -1);
  }
  if (ev0->payload_len + 8 <= sizeof big) {
    memcpy(big, ev0->payload, ev0->payload_len);
    memset(big + ev0->payload_len, 0xEE, 8);
    ev = *ev0;
    ev.payload = big;
    ev.payload_len = ev0->payload_len + 8;
    CHECK_EQ(hsi_memev_decode(&ev, &op2), 1);
    CHECK(memcmp(op, &op2, sizeof op2) == 0);
  }
  return rc;
}

/* ------------------------------------------------------------------ heap */

TEST(heap_alloc_x64) {
  /* §6.1 Alloc v2, P=8: HeapHandle @0, AllocSize @8, AllocAddress @16, SourceId @24; 28 bytes */
  static const uint8_t p[28] = {
    0x00, 0x00, 0x1A, 0x00, 0x00, 0x00, 0x00, 0x00,   /* heap 0x1a0000 */
    0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,   /* size 24 */
    0xE8, 0xD5, 0xC4, 0xB3, 0xA2, 0x01, 0x00, 0x00,   /* addr 0x1a2b3c4d5e8 */
    0x02, 0x00, 0x00, 0x00                            /* source 2 = LFH */
  };
  hs_event ev = kev(0x10, 33, 2, 8, p, sizeof p);
  hsi_memop op;
  dec(&ev, &op, HSI_OP_HEAP_ALLOC, 1);
  CHECK_EQ(op.heap, 0x1a0000);
  CHECK_EQ(op.size, 24);
  CHECK_EQ(op.addr, 0x1a2b3c4d5e8ULL);
  CHECK_EQ(op.source, 2);
  CHECK_EQ(op.pid, HPID);
  CHECK_EQ(op.tid, HTID);
  CHECK_EQ(op.hook, 0x1021);
  CHECK_EQ(op.old_addr, 0);
}

TEST(heap_alloc_x86) {
  /* P=4: HeapHandle @0, AllocSize @4, AllocAddress @8, SourceId @12; 16 bytes */
  static const uint8_t p[16] = {
    0x00, 0x00, 0x35, 0x00,   /* heap 0x350000 */
    0x40, 0x00, 0x00, 0x00,   /* size 64 */
    0x30, 0x12, 0x35, 0x80,   /* addr 0x80351230 */
    0x03, 0x00, 0x00, 0x00    /* source 3 */
  };
  hs_event ev = kev(0x10, 33, 2, 4, p, sizeof p);
  hsi_memop op;
  dec(&ev, &op, HSI_OP_HEAP_ALLOC, 1);
  CHECK_EQ(op.heap, 0x350000);
  CHECK_EQ(op.size, 64);
  CHECK_EQ(op.addr, 0x80351230u);
  CHECK_EQ(op.source, 3);
  CHECK_EQ(op.pointer_size, 4);
}

TEST(heap_realloc) {
  uint8_t p[44];
  hs_event ev;
  hsi_memop op;
  /* P=8: heap @0, new @8, old @16, newsize @24, oldsize @32, source @40; 44 bytes */
  memset(p, 0, sizeof p);
  le(p, 0, 0x00000231a0000000ULL, 8);
  le(p, 8, 0x00000231a0001000ULL, 8);
  le(p, 16, 0x00000231a0000800ULL, 8);
  le(p, 24, 0x2000, 8);
  le(p, 32, 0x100000000ULL, 8);
  le(p, 40, 4, 4);
  ev = kev(0x10, 34, 2, 8, p, 44);
  dec(&ev, &op, HSI_OP_HEAP_REALLOC, 1);
  CHECK_EQ(op.heap, 0x00000231a0000000ULL);
  CHECK_EQ(op.addr, 0x00000231a0001000ULL);
  CHECK_EQ(op.old_addr, 0x00000231a0000800ULL);
  CHECK_EQ(op.size, 0x2000);
  CHECK_EQ(op.old_size, 0x100000000ULL);
  CHECK_EQ(op.source, 4);
  /* P=4: heap @0, new @4, old @8, newsize @12, oldsize @16, source @20; 24 bytes */
  memset(p, 0, sizeof p);
  le(p, 0, 0x00500000, 4);
  le(p, 4, 0x00501000, 4);
  le(p, 8, 0x00500800, 4);
  le(p, 12, 300, 4);
  le(p, 16, 200, 4);
  le(p, 20, 1, 4);
  ev = kev(0x10, 34, 2, 4, p, 24);
  dec(&ev, &op, HSI_OP_HEAP_REALLOC, 1);
  CHECK_EQ(op.heap, 0x00500000);
  CHECK_EQ(op.addr, 0x00501000);
  CHECK_EQ(op.old_addr, 0x00500800);
  CHECK_EQ(op.size, 300);
  CHECK_EQ(op.old_size, 200);
  CHECK_EQ(op.source, 1);
}

TEST(heap_free) {
  uint8_t p[20];
  hs_event ev;
  hsi_memop op;
  /* P=8: heap @0, addr @8, source @16; 20 bytes */
  le(p, 0, 0x00000231a0000000ULL, 8);
  le(p, 8, 0x00000231a0001230ULL, 8);
  le(p, 16, 3, 4);
  ev = kev(0x10, 36, 2, 8, p, 20);
  dec(&ev, &op, HSI_OP_HEAP_FREE, 1);
  CHECK_EQ(op.heap, 0x00000231a0000000ULL);
  CHECK_EQ(op.addr, 0x00000231a0001230ULL);
  CHECK_EQ(op.source, 3);
  CHECK_EQ(op.size, 0);
  /* P=4: 12 bytes */
  le(p, 0, 0x00600000, 4);
  le(p, 4, 0x00601230, 4);
  le(p, 8, 2, 4);
  ev = kev(0x10, 36, 2, 4, p, 12);
  dec(&ev, &op, HSI_OP_HEAP_FREE, 1);
  CHECK_EQ(op.heap, 0x00600000);
  CHECK_EQ(op.addr, 0x00601230);
  CHECK_EQ(op.source, 2);
}

TEST(heap_create_destroy) {
  uint8_t p[36];
  hs_event ev;
  hsi_memop op;
  /* Create v2, P=8: heap @0, flags @8; 12 bytes */
  le(p, 0, 0x000002a000000000ULL, 8);
  le(p, 8, 0x00000002, 4);
  ev = kev(0x10, 32, 2, 8, p, 12);
  dec(&ev, &op, HSI_OP_HEAP_CREATE, 1);
  CHECK_EQ(op.heap, 0x000002a000000000ULL);
  CHECK_EQ(op.flags, 2);
  /* Create v3, P=8: + reserved @12, committed @20, allocated @28; 36 bytes */
  le(p, 12, 0x100000, 8);
  le(p, 20, 0x2000, 8);
  le(p, 28, 0x800, 8);
  ev = kev(0x10, 32, 3, 8, p, 36);
  dec(&ev, &op, HSI_OP_HEAP_CREATE, 1);
  CHECK_EQ(op.heap, 0x000002a000000000ULL);
  CHECK_EQ(op.flags, 2);
  /* a v3 record cut to the v2 length is damaged */
  ev.payload_len = 12;
  CHECK_EQ(hsi_memev_decode(&ev, &op), -1);
  /* Create v3, P=4: heap @0, flags @4, reserved @8, committed @12, allocated @16; 20 bytes */
  le(p, 0, 0x00700000, 4);
  le(p, 4, 0x40001, 4);
  le(p, 8, 1, 4); le(p, 12, 2, 4); le(p, 16, 3, 4);
  ev = kev(0x10, 32, 3, 4, p, 20);
  dec(&ev, &op, HSI_OP_HEAP_CREATE, 1);
  CHECK_EQ(op.heap, 0x00700000);
  CHECK_EQ(op.flags, 0x40001);
  /* Destroy: HeapHandle only, 8 / 4 bytes */
  le(p, 0, 0x000002a000000000ULL, 8);
  ev = kev(0x10, 35, 2, 8, p, 8);
  dec(&ev, &op, HSI_OP_HEAP_DESTROY, 1);
  CHECK_EQ(op.heap, 0x000002a000000000ULL);
  le(p, 0, 0x00700000, 4);
  ev = kev(0x10, 35, 2, 4, p, 4);
  dec(&ev, &op, HSI_OP_HEAP_DESTROY, 1);
  CHECK_EQ(op.heap, 0x00700000);
}

TEST(heap_expand_contract) {
  uint8_t p[64];
  hs_event ev;
  hsi_memop op;
  int P;
  for (P = 4; P <= 8; P += 4) {
    /* Expand v3: heap, CommittedSize @P, CommitAddress @2P, FreeSpace @3P, CommittedSpace @4P,
       ReservedSpace @5P, NoOfUCRs @6P, AllocatedSpace @6P+4: 7P+4 (60/32) */
    memset(p, 0, sizeof p);
    le(p, 0, 0x10000, P);
    le(p, P, 0x3000, P);
    le(p, 2 * P, 0x15000, P);
    le(p, 3 * P, 7, P);
    le(p, 6 * P, 9, 4);
    le(p, 6 * P + 4, 11, P);
    ev = kev(0x10, 37, 3, P, p, (size_t)(7 * P + 4));
    dec(&ev, &op, HSI_OP_HEAP_OTHER, 0);
    CHECK_EQ(op.subop, 37);
    CHECK_EQ(op.heap, 0x10000);
    CHECK_EQ(op.size, 0x3000);
    CHECK_EQ(op.addr, 0x15000);
    /* the older MOF form ends after NoOfUCRs: 6P+4 is accepted, one less is not */
    ev.payload_len = (uint32_t)(6 * P + 4);
    CHECK_EQ(hsi_memev_decode(&ev, &op), 1);
    CHECK_EQ(op.addr, 0x15000);
    ev.payload_len = (uint32_t)(6 * P + 3);
    CHECK_EQ(hsi_memev_decode(&ev, &op), -1);
    /* Contract 42: same layout, DeCommittedSize / DeCommitAddress */
    ev = kev(0x10, 42, 3, P, p, (size_t)(7 * P + 4));
    dec(&ev, &op, HSI_OP_HEAP_OTHER, 0);
    CHECK_EQ(op.subop, 42);
    CHECK_EQ(op.size, 0x3000);
    CHECK_EQ(op.addr, 0x15000);
  }
  CHECK_EQ(7 * 8 + 4, 60);
}

TEST(heap_snapshot_event) {
  uint8_t p[64];
  hs_event ev;
  hsi_memop op;
  /* SnapShot v2, P=8: heap @0, Free @8, Committed @16, Reserved @24, HeapFlags @32,
     ProcessId @36, LargeUCRSpace @40, FreeListLength @48, UCRLength @52: 56 bytes */
  memset(p, 0, sizeof p);
  le(p, 0, 0x000001f000000000ULL, 8);
  le(p, 32, 0x2, 4);
  le(p, 36, 4321, 4);
  le(p, 52, 5, 4);
  ev = kev(0x10, 38, 2, 8, p, 56);
  dec(&ev, &op, HSI_OP_HEAP_OTHER, 1);
  CHECK_EQ(op.heap, 0x000001f000000000ULL);
  CHECK_EQ(op.flags, 2);
  CHECK_EQ(op.pid, HPID);               /* header pid wins when present */
  /* v3: + AllocatedSpace @56: 64 bytes; 56 is too short for v3 */
  ev = kev(0x10, 38, 3, 8, p, 64);
  dec(&ev, &op, HSI_OP_HEAP_OTHER, 1);
  ev.payload_len = 56;
  CHECK_EQ(hsi_memev_decode(&ev, &op), -1);
  /* without header ids the payload ProcessId is used */
  ev = kev(0x10, 38, 2, 8, p, 56);
  ev.flags = HS_EVF_KERNEL;
  CHECK_EQ(hsi_memev_decode(&ev, &op), 1);
  CHECK_EQ(op.pid, 4321);
  CHECK_EQ(op.tid, HS_NOID);
  /* P=4 v3: heap @0, flags @16, pid @20, allocated @36: 40 bytes */
  memset(p, 0, sizeof p);
  le(p, 0, 0x00800000, 4);
  le(p, 16, 0x1, 4);
  le(p, 20, 99, 4);
  ev = kev(0x10, 38, 3, 4, p, 40);
  ev.flags = HS_EVF_KERNEL;
  dec(&ev, &op, HSI_OP_HEAP_OTHER, 1);
  CHECK_EQ(op.heap, 0x00800000);
  CHECK_EQ(op.flags, 1);
  CHECK_EQ(op.pid, 99);
}

TEST(heap_other_ops) {
  uint8_t p[64];
  hs_event ev;
  hsi_memop op;
  /* Commit 51, P=8: heap @0, Block @8, Size @16, Caller @24: 28 bytes (packed choice) */
  memset(p, 0, sizeof p);
  le(p, 0, 0x10000, 8);
  le(p, 8, 0x7ff612340000ULL, 8);
  le(p, 16, 0x5000, 8);
  le(p, 24, 8, 4);
  ev = kev(0x10, 51, 2, 8, p, 28);
  dec(&ev, &op, HSI_OP_HEAP_OTHER, 1);
  CHECK_EQ(op.addr, 0x7ff612340000ULL);
  CHECK_EQ(op.size, 0x5000);
  ev.payload_len = 32;                  /* a padded 3P+8 record decodes the same */
  CHECK_EQ(hsi_memev_decode(&ev, &op), 1);
  CHECK_EQ(op.size, 0x5000);
  /* Decommit 52, P=4: 16 bytes */
  le(p, 0, 0x10000, 4); le(p, 4, 0x20000, 4); le(p, 8, 0x1000, 4); le(p, 12, 13, 4);
  ev = kev(0x10, 52, 2, 4, p, 16);
  dec(&ev, &op, HSI_OP_HEAP_OTHER, 1);
  CHECK_EQ(op.addr, 0x20000);
  CHECK_EQ(op.size, 0x1000);
  /* SubsegmentAlloc 47, P=8: heap, SubSegment @8, SubSegmentSize @16, BlockSize @24: 32 */
  le(p, 0, 0x10000, 8); le(p, 8, 0x30000, 8); le(p, 16, 0x4000, 8); le(p, 24, 0x20, 8);
  ev = kev(0x10, 47, 2, 8, p, 32);
  dec(&ev, &op, HSI_OP_HEAP_OTHER, 1);
  CHECK_EQ(op.heap, 0x10000);
  CHECK_EQ(op.addr, 0x30000);
  CHECK_EQ(op.size, 0x4000);
  /* Lock 43: heap only */
  ev = kev(0x10, 43, 2, 8, p, 8);
  dec(&ev, &op, HSI_OP_HEAP_OTHER, 1);
  CHECK_EQ(op.heap, 0x10000);
  /* AffinitySlotAssigned 55: SlotIndex u32 only */
  ev = kev(0x10, 55, 2, 8, p, 4);
  dec(&ev, &op, HSI_OP_HEAP_OTHER, 1);
  CHECK_EQ(op.heap, 0);
  /* 39-41 are provisional: any length, never damaged */
  ev = kev(0x10, 39, 2, 8, p, 0);
  CHECK_EQ(hsi_memev_decode(&ev, &op), 1);
  CHECK_EQ(op.kind, HSI_OP_HEAP_OTHER);
  CHECK_EQ(op.subop, 39);
  CHECK_EQ(op.hook, 0x1027);
  ev = kev(0x10, 41, 2, 8, p, 8);
  CHECK_EQ(hsi_memev_decode(&ev, &op), 1);
  CHECK_EQ(op.heap, 0x10000);
}

/* ----------------------------------------------------------- VirtualAlloc */

TEST(virtualalloc) {
  uint8_t p[32];
  hs_event ev;
  hsi_memop op;
  /* P=8: BaseAddress @0, RegionSize @8, ProcessId @16, Flags @20; 24 bytes */
  le(p, 0, 0x000001d2c4e10000ULL, 8);
  le(p, 8, 0x200000, 8);
  le(p, 16, 4242, 4);
  le(p, 20, 0x3000, 4);
  ev = kev(0x02, 98, 2, 8, p, 24);
  dec(&ev, &op, HSI_OP_VALLOC, 1);
  CHECK_EQ(op.addr, 0x000001d2c4e10000ULL);
  CHECK_EQ(op.size, 0x200000);
  CHECK_EQ(op.flags, HS_MEM_COMMIT | HS_MEM_RESERVE);
  CHECK_EQ(op.pid, 4242);               /* payload (target) pid, not the header's */
  CHECK_EQ(op.tid, HTID);
  /* PERFINFO header: no tid */
  ev.flags = HS_EVF_KERNEL;
  ev.pid = ev.tid = HS_NOID;
  CHECK_EQ(hsi_memev_decode(&ev, &op), 1);
  CHECK_EQ(op.pid, 4242);
  CHECK_EQ(op.tid, HS_NOID);
  /* VirtualFree, P=4: 16 bytes */
  le(p, 0, 0x00a10000, 4);
  le(p, 4, 0x10000, 4);
  le(p, 8, 77, 4);
  le(p, 12, 0x8000, 4);
  ev = kev(0x02, 99, 2, 4, p, 16);
  dec(&ev, &op, HSI_OP_VFREE, 1);
  CHECK_EQ(op.addr, 0x00a10000);
  CHECK_EQ(op.size, 0x10000);
  CHECK_EQ(op.pid, 77);
  CHECK_EQ(op.flags, HS_MEM_RELEASE);
}

TEST(virtualalloc_rundown) {
  uint8_t p[32];
  hs_event ev;
  hsi_memop op;
  /* 128, P=8: the 98 layout + CommitSizeInBytes @24: 32 bytes */
  le(p, 0, 0x7ff000000000ULL, 8);
  le(p, 8, 0x100000, 8);
  le(p, 16, 55, 4);
  le(p, 20, 0x2000, 4);
  le(p, 24, 0x3000, 8);
  ev = kev(0x02, 128, 2, 8, p, 32);
  dec(&ev, &op, HSI_OP_VALLOC_RUNDOWN, 0);
  CHECK_EQ(op.addr, 0x7ff000000000ULL);
  CHECK_EQ(op.size, 0x100000);
  CHECK_EQ(op.pid, 55);
  CHECK_EQ(op.flags, HS_MEM_RESERVE);
  CHECK_EQ(op.old_size, 0x3000);
  /* without CommitSize (24 bytes) it still decodes; 23 is damaged */
  ev.payload_len = 24;
  CHECK_EQ(hsi_memev_decode(&ev, &op), 1);
  CHECK_EQ(op.old_size, 0);
  CHECK_EQ(op.addr, 0x7ff000000000ULL);
  ev.payload_len = 28;                  /* half of it: not there either */
  CHECK_EQ(hsi_memev_decode(&ev, &op), 1);
  CHECK_EQ(op.old_size, 0);
  ev.payload_len = 23;
  CHECK_EQ(hsi_memev_decode(&ev, &op), -1);
  /* 129, P=4: 20 bytes */
  le(p, 0, 0x00400000, 4); le(p, 4, 0x1000, 4); le(p, 8, 8, 4); le(p, 12, 0x1000, 4); le(p, 16, 0x800, 4);
  ev = kev(0x02, 129, 2, 4, p, 20);
  dec(&ev, &op, HSI_OP_VALLOC_RUNDOWN, 0);
  CHECK_EQ(op.subop, 129);
  CHECK_EQ(op.addr, 0x00400000);
  CHECK_EQ(op.pid, 8);
  CHECK_EQ(op.old_size, 0x800);
}

TEST(heaprange) {
  uint8_t p[64];
  hs_event ev;
  hsi_memop op;
  /* 100 v2, P=8: heap, HRFlags @8, HRPid @12, HRRangeCount @16: 20 bytes */
  memset(p, 0, sizeof p);
  le(p, 0, 0x20000, 8); le(p, 8, 0x5, 4); le(p, 12, 31, 4); le(p, 16, 1, 4);
  ev = kev(0x02, 100, 2, 8, p, 20);
  dec(&ev, &op, HSI_OP_HEAP_OTHER, 1);
  CHECK_EQ(op.heap, 0x20000);
  CHECK_EQ(op.flags, 5);
  CHECK_EQ(op.pid, 31);
  /* v3 + Reserved: 24 bytes */
  ev = kev(0x02, 100, 3, 8, p, 24);
  dec(&ev, &op, HSI_OP_HEAP_OTHER, 1);
  /* 101, P=4: heap, FirstRangeSize @4, HRCreateFlags @8: 12 */
  le(p, 0, 0x30000, 4); le(p, 4, 0x10000, 4); le(p, 8, 3, 4);
  ev = kev(0x02, 101, 2, 4, p, 12);
  dec(&ev, &op, HSI_OP_HEAP_OTHER, 1);
  CHECK_EQ(op.heap, 0x30000);
  CHECK_EQ(op.size, 0x10000);
  CHECK_EQ(op.flags, 3);
  CHECK_EQ(op.pid, HPID);
  /* 102 / 103, P=8: heap, HRAddress @8, HRSize @16: 24 */
  le(p, 0, 0x30000, 8); le(p, 8, 0x40000, 8); le(p, 16, 0x8000, 8);
  ev = kev(0x02, 102, 2, 8, p, 24);
  dec(&ev, &op, HSI_OP_HEAP_OTHER, 1);
  CHECK_EQ(op.addr, 0x40000);
  CHECK_EQ(op.size, 0x8000);
  ev = kev(0x02, 103, 2, 8, p, 24);
  dec(&ev, &op, HSI_OP_HEAP_OTHER, 1);
  CHECK_EQ(op.subop, 103);
  /* 104: heap only */
  ev = kev(0x02, 104, 2, 4, p, 4);
  dec(&ev, &op, HSI_OP_HEAP_OTHER, 1);
  CHECK_EQ(op.heap, 0x30000);
}

/* ------------------------------------------------------------------ pool */

TEST(pool) {
  uint8_t p[32];
  hs_event ev;
  hsi_memop op;
  /* PoolAlloc, P=8: PoolType @0, Tag @4, NumberOfBytes @8, Entry @16: 24 bytes */
  le(p, 0, 0x200, 4);
  p[4] = 'F'; p[5] = 'i'; p[6] = 'l'; p[7] = 'e';
  le(p, 8, 0x150, 8);
  le(p, 16, 0xffffc00012345670ULL, 8);
  ev = kev(0x0E, 32, 2, 8, p, 24);
  dec(&ev, &op, HSI_OP_POOL_ALLOC, 1);
  CHECK_EQ(op.pool_type, 0x200);
  CHECK_EQ(op.tag, 0x656c6946);
  CHECK_EQ(op.size, 0x150);
  CHECK_EQ(op.addr, 0xffffc00012345670ULL);
  CHECK_EQ(op.pid, HPID);
  CHECK_EQ(op.tid, HTID);
  /* PoolFree, P=4: 16 bytes */
  le(p, 0, 1, 4);
  le(p, 4, 0x20206f49, 4);  /* "Io  " */
  le(p, 8, 0x40, 4);
  le(p, 12, 0x8a001000, 4);
  ev = kev(0x0E, 34, 2, 4, p, 16);
  dec(&ev, &op, HSI_OP_POOL_FREE, 1);
  CHECK_EQ(op.pool_type, 1);
  CHECK_EQ(op.tag, 0x20206f49);
  CHECK_EQ(op.size, 0x40);
  CHECK_EQ(op.addr, 0x8a001000);
  /* PoolAllocSession, P=8: + SessionId @24: 28 bytes */
  le(p, 0, 0x21, 4); le(p, 4, 0x6e657347, 4); le(p, 8, 0x30, 8); le(p, 16, 0xfffff90000001000ULL, 8);
  le(p, 24, 2, 4);
  ev = kev(0x0E, 33, 2, 8, p, 28);
  dec(&ev, &op, HSI_OP_POOL_ALLOC, 1);
  CHECK_EQ(op.session, 2);
  CHECK_EQ(op.pool_type, 0x21);
  CHECK_EQ(op.addr, 0xfffff90000001000ULL);
  /* PoolFreeSession, P=4: 20 bytes */
  le(p, 0, 0x20, 4); le(p, 4, 0x41424344, 4); le(p, 8, 0x10, 4); le(p, 12, 0x9000, 4); le(p, 16, 3, 4);
  ev = kev(0x0E, 35, 2, 4, p, 20);
  dec(&ev, &op, HSI_OP_POOL_FREE, 1);
  CHECK_EQ(op.session, 3);
  CHECK_EQ(op.addr, 0x9000);
}

TEST(pool_unknown_ops) {
  uint8_t p[32];
  hs_event ev;
  hsi_memop op;
  int t;
  memset(p, 0, sizeof p);
  for (t = 36; t <= 47; t++) {
    ev = kev(0x0E, t, 2, 8, p, 0);
    CHECK_EQ(hsi_memev_decode(&ev, &op), 1);
    CHECK_EQ(op.kind, HSI_OP_HEAP_OTHER);
    CHECK_EQ(op.subop, t);
    CHECK_EQ(op.hook, 0x0E00 | t);
    CHECK(hsi_memev_name(0x0E, t) != NULL);
  }
  /* provisionally read as ETW_POOL_EVENT when long enough */
  le(p, 0, 0x10000000, 4); le(p, 8, 0x2000, 8); le(p, 16, 0xffffd00000000000ULL, 8);
  ev = kev(0x0E, 38, 2, 8, p, 24);
  CHECK_EQ(hsi_memev_decode(&ev, &op), 1);
  CHECK_EQ(op.pool_type, 0x10000000);
  CHECK_EQ(op.addr, 0xffffd00000000000ULL);
}

/* ------------------------------------------------------------- snapshot */

TEST(heap_snapshot_provider) {
  uint8_t p[32];
  hs_event ev;
  hsi_memop op;
  /* id 100 v1: Instance @0, Sequence @4, BufferLen @8, Buffer @12 */
  le(p, 0, 7, 4); le(p, 4, 3, 4); le(p, 8, 10, 4);
  memset(p + 12, 0xAB, 10);
  ev = sev(100, p, 22);
  CHECK_EQ(hsi_memev_decode(&ev, &op), 1);
  CHECK_EQ(op.kind, HSI_OP_SNAPSHOT);
  CHECK_EQ(op.subop, 100);
  CHECK_EQ(op.hook, 0);
  CHECK_EQ(op.heap, 7);
  CHECK_EQ(op.addr, 3);
  CHECK_EQ(op.size, 10);
  CHECK_EQ(op.pid, HPID);
  CHECK_EQ(op.tid, HTID);
  CHECK_EQ(op.ts, TS);
  ev.payload_len = 21;                  /* blob cut short */
  CHECK_EQ(hsi_memev_decode(&ev, &op), -1);
  ev.payload_len = 11;
  CHECK_EQ(hsi_memev_decode(&ev, &op), -1);
  ev.payload_len = 30;                  /* trailing bytes accepted */
  CHECK_EQ(hsi_memev_decode(&ev, &op), 1);
  /* id 200 v1: Instance @0, TotalData @4 */
  le(p, 0, 7, 4); le(p, 4, 123456, 4);
  ev = sev(200, p, 8);
  CHECK_EQ(hsi_memev_decode(&ev, &op), 1);
  CHECK_EQ(op.kind, HSI_OP_SNAPSHOT);
  CHECK_EQ(op.subop, 200);
  CHECK_EQ(op.heap, 7);
  CHECK_EQ(op.size, 123456);
  ev.payload_len = 7;
  CHECK_EQ(hsi_memev_decode(&ev, &op), -1);
  /* other ids of the provider are not memory events */
  ev = sev(101, p, 8);
  CHECK_EQ(hsi_memev_decode(&ev, &op), 0);
  /* the provider as a record holds it: 901d2afa-4ff6-46d7-8d0e-53645e1a47f5
     (ETL-FORMAT 6.9), the first three parts little-endian */
  {
    static const uint8_t id[16] = {0xfa, 0x2a, 0x1d, 0x90, 0xf6, 0x4f, 0xd7, 0x46,
                                   0x8d, 0x0e, 0x53, 0x64, 0x5e, 0x1a, 0x47, 0xf5};
    ev = sev(200, p, 8);
    ev.provider = hs_guid_from_bytes(id);
    CHECK_EQ(hsi_memev_decode(&ev, &op), 1);
    CHECK_EQ(op.kind, HSI_OP_SNAPSHOT);
  }
}

/* -------------------------------------------------------- not memory events */

TEST(not_memory) {
  uint8_t p[64];
  hs_event ev;
  hsi_memop op;
  static const int bad[][2] = {
    { 0x10, 31 }, { 0x10, 59 }, { 0x10, 0 }, { 0x02, 32 }, { 0x02, 97 }, { 0x02, 105 },
    { 0x02, 127 }, { 0x02, 130 }, { 0x0E, 31 }, { 0x0E, 48 }, { 0x03, 1 }, { 0x03, 10 },
    { 0x18, 32 }, { 0x0F, 33 }, { 0x11, 33 }
  };
  size_t i;
  memset(p, 0, sizeof p);
  memset(&op, 0x5A, sizeof op);
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ev = kev(bad[i][0], bad[i][1], 2, 8, p, sizeof p);
    CHECK_EQ(hsi_memev_decode(&ev, &op), 0);
    CHECK(hsi_memev_name(bad[i][0], bad[i][1]) == NULL);
  }
  CHECK_EQ(op.kind, 0x5A5A5A5A);       /* untouched */
  /* a heap hook without the kernel flag is not a kernel record */
  ev = kev(0x10, 33, 2, 8, p, 28);
  ev.flags = HS_EVF_HAS_IDS;
  ev.header_type = HS_HT_EVENT64;
  CHECK_EQ(hsi_memev_decode(&ev, &op), 0);
  /* an EVENT_HEADER record of another provider with id 100 */
  ev = sev(100, p, 22);
  ev.provider.d1 ^= 1;
  CHECK_EQ(hsi_memev_decode(&ev, &op), 0);
}

TEST(classic_header) {
  /* a FULL_HEADER record with the Heap class GUID decodes by opcode */
  static const uint8_t guid_heap[16] = {
    0xab, 0x62, 0x29, 0x22, 0x80, 0x61, 0x88, 0x4b, 0xa8, 0x25, 0x34, 0x6b, 0x75, 0xf2, 0xa2, 0x4a };
  uint8_t p[20];
  hs_event ev;
  hsi_memop op;
  le(p, 0, 0x10000, 8); le(p, 8, 0x12340, 8); le(p, 16, 1, 4);
  ev = kev(0x10, 36, 2, 8, p, 20);
  ev.flags = HS_EVF_HAS_IDS;
  ev.hook = 0;
  ev.header_type = HS_HT_FULL64;
  ev.provider = hs_guid_from_bytes(guid_heap);
  CHECK_EQ(hsi_memev_decode(&ev, &op), 1);
  CHECK_EQ(op.kind, HSI_OP_HEAP_FREE);
  CHECK_EQ(op.addr, 0x12340);
  CHECK_EQ(op.hook, 0x1024);
}

TEST(bad_pointer_size) {
  uint8_t p[64];
  hs_event ev;
  hsi_memop op;
  char s[128];
  memset(p, 0, sizeof p);
  ev = kev(0x10, 33, 2, 6, p, sizeof p);
  CHECK_EQ(hsi_memev_decode(&ev, &op), -1);
  CHECK_EQ(op.kind, HSI_OP_HEAP_ALLOC);
  CHECK(hsi_memev_describe(&ev, s, sizeof s) > 0);
  CHECK(strncmp(s, "damaged", 7) == 0);
}

/* -------------------------------------------------------------- encoder */

TEST(encode_matches_doc_bytes) {
  /* the encoder writes what the hand-built layouts above read */
  static const uint8_t alloc64[28] = {
    0x00, 0x00, 0x1A, 0x00, 0x00, 0x00, 0x00, 0x00, 0x18, 0, 0, 0, 0, 0, 0, 0,
    0xE8, 0xD5, 0xC4, 0xB3, 0xA2, 0x01, 0x00, 0x00, 0x02, 0, 0, 0 };
  uint8_t out[64], want[64];
  hsi_memop op;
  int g = 0, t = 0;
  memset(&op, 0, sizeof op);
  op.kind = HSI_OP_HEAP_ALLOC; op.heap = 0x1a0000; op.size = 24; op.addr = 0x1a2b3c4d5e8ULL; op.source = 2;
  CHECK_EQ(hsi_memev_encode(&op, 0, 2, 8, out, sizeof out, &g, &t), 28);
  CHECK(memcmp(out, alloc64, 28) == 0);
  CHECK_EQ(g, 0x10); CHECK_EQ(t, 33);
  CHECK_EQ(hsi_memev_encode(&op, 0, 2, 4, out, sizeof out, &g, &t), 16);
  /* VirtualAlloc P=4: 16 bytes */
  memset(&op, 0, sizeof op);
  op.kind = HSI_OP_VALLOC; op.addr = 0x10000; op.size = 0x2000; op.pid = 9; op.flags = 0x1000;
  memset(want, 0, sizeof want);
  le(want, 0, 0x10000, 4); le(want, 4, 0x2000, 4); le(want, 8, 9, 4); le(want, 12, 0x1000, 4);
  CHECK_EQ(hsi_memev_encode(&op, 0, 0, 4, out, sizeof out, &g, &t), 16);
  CHECK(memcmp(out, want, 16) == 0);
  CHECK_EQ(g, 0x02); CHECK_EQ(t, 98);
  CHECK_EQ(hsi_memev_encode(&op, 0, 0, 8, out, sizeof out, NULL, NULL), 24);
  /* PoolFree P=8: 24 bytes */
  memset(&op, 0, sizeof op);
  op.kind = HSI_OP_POOL_FREE; op.pool_type = 1; op.tag = 0x656c6946; op.size = 0x80; op.addr = 0xffffc00000001000ULL;
  memset(want, 0, sizeof want);
  le(want, 0, 1, 4); le(want, 4, 0x656c6946, 4); le(want, 8, 0x80, 8); le(want, 16, 0xffffc00000001000ULL, 8);
  CHECK_EQ(hsi_memev_encode(&op, 0, 0, 8, out, sizeof out, &g, &t), 24);
  CHECK(memcmp(out, want, 24) == 0);
  CHECK_EQ(g, 0x0E); CHECK_EQ(t, 34);
  /* ReAlloc 44/24, Free 20/12, Create v3 36/20, Expand 60/32, SnapShot v3 64/40 */
  memset(&op, 0, sizeof op);
  op.kind = HSI_OP_HEAP_REALLOC;
  CHECK_EQ(hsi_memev_encode(&op, 0, 0, 8, NULL, 0, NULL, NULL), 44);
  CHECK_EQ(hsi_memev_encode(&op, 0, 0, 4, NULL, 0, NULL, NULL), 24);
  op.kind = HSI_OP_HEAP_FREE;
  CHECK_EQ(hsi_memev_encode(&op, 0, 0, 8, NULL, 0, NULL, NULL), 20);
  CHECK_EQ(hsi_memev_encode(&op, 0, 0, 4, NULL, 0, NULL, NULL), 12);
  op.kind = HSI_OP_HEAP_CREATE;
  CHECK_EQ(hsi_memev_encode(&op, 0, 3, 8, NULL, 0, NULL, NULL), 36);
  CHECK_EQ(hsi_memev_encode(&op, 0, 3, 4, NULL, 0, NULL, NULL), 20);
  CHECK_EQ(hsi_memev_encode(&op, 0, 2, 8, NULL, 0, NULL, NULL), 12);
  op.kind = HSI_OP_HEAP_OTHER;
  CHECK_EQ(hsi_memev_encode(&op, 37, 0, 8, NULL, 0, NULL, NULL), 60);
  CHECK_EQ(hsi_memev_encode(&op, 37, 0, 4, NULL, 0, NULL, NULL), 32);
  CHECK_EQ(hsi_memev_encode(&op, 38, 3, 8, NULL, 0, NULL, NULL), 64);
  CHECK_EQ(hsi_memev_encode(&op, 38, 3, 4, NULL, 0, NULL, NULL), 40);
  CHECK_EQ(hsi_memev_encode(&op, 38, 2, 8, NULL, 0, NULL, NULL), 56);
  CHECK_EQ(hsi_memev_encode(&op, 51, 0, 8, NULL, 0, NULL, NULL), 28);
}

TEST(encode_choices) {
  uint8_t out[64];
  hsi_memop op;
  int g = 0, t = 0;
  memset(&op, 0, sizeof op);
  /* pool session bit selects the session event */
  op.kind = HSI_OP_POOL_ALLOC; op.pool_type = 0x21; op.session = 1;
  CHECK_EQ(hsi_memev_encode(&op, 0, 0, 8, out, sizeof out, &g, &t), 28);
  CHECK_EQ(t, 33);
  /* HEAP_OTHER needs a subop, hook or hint */
  memset(&op, 0, sizeof op);
  op.kind = HSI_OP_HEAP_OTHER;
  CHECK_EQ(hsi_memev_encode(&op, 0, 0, 8, out, sizeof out, &g, &t), HS_EARG);
  op.hook = 0x0264;                     /* HeapRangeRundown, group 2 */
  CHECK_EQ(hsi_memev_encode(&op, 0, 0, 8, out, sizeof out, &g, &t), 24);
  CHECK_EQ(g, 0x02); CHECK_EQ(t, 100);
  CHECK_EQ(hsi_memev_version(0x02, 100), 3);
  /* a hint that names an event of another kind */
  memset(&op, 0, sizeof op);
  op.kind = HSI_OP_HEAP_FREE;
  CHECK_EQ(hsi_memev_encode(&op, 33, 0, 8, out, sizeof out, &g, &t), HS_EARG);
  CHECK_EQ(hsi_memev_encode(&op, 0, 0, 6, out, sizeof out, &g, &t), HS_EARG);
  CHECK_EQ(hsi_memev_encode(NULL, 0, 0, 8, out, sizeof out, &g, &t), HS_EARG);
  op.kind = HSI_OP_NONE;
  CHECK_EQ(hsi_memev_encode(&op, 0, 0, 8, out, sizeof out, &g, &t), HS_EARG);
  /* too small: the length is returned and nothing is written */
  op.kind = HSI_OP_HEAP_FREE; op.heap = 0x1234;
  memset(out, 0xCC, sizeof out);
  CHECK_EQ(hsi_memev_encode(&op, 0, 0, 8, out, 19, &g, &t), 20);
  CHECK_EQ(out[0], 0xCC);
  /* snapshot chunk: header fields then `size` blob bytes */
  memset(&op, 0, sizeof op);
  op.kind = HSI_OP_SNAPSHOT; op.heap = 5; op.addr = 2; op.size = 6;
  CHECK_EQ(hsi_memev_encode(&op, 0, 0, 8, out, sizeof out, &g, &t), 18);
  CHECK_EQ(g, HSI_MEMEV_SNAPSHOT); CHECK_EQ(t, 100);
  CHECK_EQ(out[0], 5); CHECK_EQ(out[4], 2); CHECK_EQ(out[8], 6);
  op.size = 0x10000;
  CHECK_EQ(hsi_memev_encode(&op, 0, 0, 8, out, sizeof out, &g, &t), HS_EARG);
  op.size = 77; op.subop = 200;
  CHECK_EQ(hsi_memev_encode(&op, 0, 0, 8, out, sizeof out, &g, &t), 8);
  CHECK_EQ(t, 200);
}

static uint64_t maskp(uint64_t v, int P) { return P == 4 ? (v & 0xFFFFFFFFu) : v; }

/* Every table row at both widths: encode -> decode -> encode is stable and
   the fields the kind carries come back. */
TEST(roundtrip_all_rows) {
  size_t i;
  int g, t, v, P, rows = 0;
  for (i = 0; hsi_memev_layout_at(i, &g, &t, &v); i++) {
    rows++;
    for (P = 4; P <= 8; P += 4) {
      uint8_t zero[256], buf[256], buf2[256];
      hs_event ev;
      hsi_memop op, back;
      long n, n2;
      int g2 = 0, t2 = 0, kind;
      memset(zero, 0, sizeof zero);
      ev = g == HSI_MEMEV_SNAPSHOT ? sev(t, zero, sizeof zero) : kev(g, t, v, P, zero, sizeof zero);
      ev.version = (uint16_t)v;
      ev.pointer_size = (uint8_t)P;
      CHECK_EQ(hsi_memev_decode(&ev, &op), 1);
      kind = op.kind;
      memset(&op, 0, sizeof op);
      op.kind = kind;
      op.subop = t;
      op.hook = g == HSI_MEMEV_SNAPSHOT ? 0 : (uint16_t)(g << 8 | t);
      op.heap = maskp(0x1111222233334444ULL, P);
      op.addr = maskp(0x5555666677778888ULL, P);
      op.size = g == HSI_MEMEV_SNAPSHOT ? 9 : maskp(0x99990000AAAABBBBULL, P);
      op.old_addr = maskp(0x0C0C0D0D0E0E0F0FULL, P);
      op.old_size = maskp(0x0123456789ABCDEFULL, P);
      op.flags = 0x3000; op.tag = 0x656c6946; op.pool_type = 0x200; op.session = 4;
      op.source = 2; op.pid = 4242;
      if (g == HSI_MEMEV_SNAPSHOT) op.heap &= 0xFFFFFFFFu, op.addr &= 0xFFFFFFFFu;
      n = hsi_memev_encode(&op, 0, v, P, buf, sizeof buf, &g2, &t2);
      CHECK(n >= 0);
      if (n < 0) continue;
      CHECK_EQ(g2, g); CHECK_EQ(t2, t);
      ev = g == HSI_MEMEV_SNAPSHOT ? sev(t, buf, (size_t)n) : kev(g, t, v, P, buf, (size_t)n);
      ev.version = (uint16_t)v;
      ev.pointer_size = (uint8_t)P;
      /* header pid = payload pid, so every pid rule gives the same (the rules
         themselves are tested on hand-built records above) */
      ev.pid = 4242;
      ev.tid = 777;
      CHECK_EQ(hsi_memev_decode(&ev, &back), 1);
      CHECK_EQ(back.pid, 4242);
      CHECK_EQ(back.tid, 777);
      CHECK_EQ(back.kind, kind);
      CHECK_EQ(back.subop, t);
      CHECK_EQ(back.hook, op.hook);
      /* every field is either carried or zero */
      CHECK(back.heap == op.heap || back.heap == 0);
      CHECK(back.addr == op.addr || back.addr == 0);
      CHECK(back.size == op.size || back.size == 0);
      CHECK(back.old_addr == op.old_addr || back.old_addr == 0);
      CHECK(back.old_size == op.old_size || back.old_size == 0);
      CHECK(back.flags == op.flags || back.flags == 0);
      CHECK(back.tag == op.tag || back.tag == 0);
      CHECK(back.pool_type == op.pool_type || back.pool_type == 0);
      CHECK(back.session == op.session || back.session == 0);
      CHECK(back.source == op.source || back.source == 0);
      switch (kind) {
      case HSI_OP_HEAP_ALLOC:
        CHECK_EQ(back.heap, op.heap); CHECK_EQ(back.addr, op.addr); CHECK_EQ(back.size, op.size);
        CHECK_EQ(back.source, 2); break;
      case HSI_OP_HEAP_REALLOC:
        CHECK_EQ(back.heap, op.heap); CHECK_EQ(back.addr, op.addr); CHECK_EQ(back.size, op.size);
        CHECK_EQ(back.old_addr, op.old_addr); CHECK_EQ(back.old_size, op.old_size);
        CHECK_EQ(back.source, 2); break;
      case HSI_OP_HEAP_FREE:
        CHECK_EQ(back.heap, op.heap); CHECK_EQ(back.addr, op.addr); CHECK_EQ(back.source, 2); break;
      case HSI_OP_HEAP_CREATE:
        CHECK_EQ(back.heap, op.heap); CHECK_EQ(back.flags, 0x3000); break;
      case HSI_OP_HEAP_DESTROY:
        CHECK_EQ(back.heap, op.heap); break;
      case HSI_OP_VALLOC: case HSI_OP_VFREE: case HSI_OP_VALLOC_RUNDOWN:
        CHECK_EQ(back.addr, op.addr); CHECK_EQ(back.size, op.size); CHECK_EQ(back.flags, 0x3000);
        CHECK_EQ(back.pid, 4242);
        if (kind == HSI_OP_VALLOC_RUNDOWN) CHECK_EQ(back.old_size, op.old_size);
        break;
      case HSI_OP_POOL_ALLOC: case HSI_OP_POOL_FREE:
        CHECK_EQ(back.addr, op.addr); CHECK_EQ(back.size, op.size); CHECK_EQ(back.tag, op.tag);
        CHECK_EQ(back.pool_type, 0x200);
        CHECK_EQ(back.session, (t == 33 || t == 35) ? 4 : 0); break;
      case HSI_OP_SNAPSHOT:
        CHECK_EQ(back.heap, op.heap); CHECK_EQ(back.size, op.size);
        if (t == 100) CHECK_EQ(back.addr, op.addr);
        break;
      default: break;
      }
      n2 = hsi_memev_encode(&back, 0, v, P, buf2, sizeof buf2, NULL, NULL);
      CHECK_EQ(n2, n);
      if (n2 == n) CHECK(memcmp(buf, buf2, (size_t)n) == 0);
      /* version 0 means the newest row */
      if (v == hsi_memev_version(g, t)) CHECK_EQ(hsi_memev_encode(&op, 0, 0, P, NULL, 0, NULL, NULL), n);
    }
  }
  CHECK(rows >= 60);
}

/* ---------------------------------------------------------- names, strings */

TEST(names) {
  CHECK_STR(hsi_memev_name(0x10, 32), "HeapCreate");
  CHECK_STR(hsi_memev_name(0x10, 33), "HeapAlloc");
  CHECK_STR(hsi_memev_name(0x10, 34), "HeapReAlloc");
  CHECK_STR(hsi_memev_name(0x10, 35), "HeapDestroy");
  CHECK_STR(hsi_memev_name(0x10, 36), "HeapFree");
  CHECK_STR(hsi_memev_name(0x10, 37), "HeapExpand");
  CHECK_STR(hsi_memev_name(0x10, 38), "HeapSnapShot");
  CHECK_STR(hsi_memev_name(0x10, 42), "HeapContract");
  CHECK_STR(hsi_memev_name(0x02, 98), "VirtualAlloc");
  CHECK_STR(hsi_memev_name(0x02, 99), "VirtualFree");
  CHECK_STR(hsi_memev_name(0x02, 128), "VirtualAllocDCStart");
  CHECK_STR(hsi_memev_name(0x02, 100), "HeapRangeRundown");
  CHECK_STR(hsi_memev_name(0x0E, 32), "PoolAlloc");
  CHECK_STR(hsi_memev_name(0x0E, 35), "PoolFreeSession");
  CHECK_STR(hsi_memev_name(HSI_MEMEV_SNAPSHOT, 100), "HeapSnapshotData");
  CHECK(hsi_memev_name(0x05, 1) == NULL);
  CHECK_EQ(hsi_memev_version(0x10, 32), 3);
  CHECK_EQ(hsi_memev_version(0x10, 33), 2);
  CHECK_EQ(hsi_memev_version(0x10, 99), -1);
  CHECK_STR(hsi_heap_source_name(2), "LFH");
  CHECK_STR(hsi_heap_source_name(1), "Lookaside");
  CHECK_STR(hsi_heap_source_name(6), "SegmentHeap");
  /* ETL-FORMAT 6.1 (ntetw.h MEMORY_FROM_*): 3 MainPath, 4 SlowPath, 5 Invalid */
  CHECK_STR(hsi_heap_source_name(3), "MainPath");
  CHECK_STR(hsi_heap_source_name(4), "SlowPath");
  CHECK_STR(hsi_heap_source_name(5), "Invalid");
  CHECK(hsi_heap_source_name(0) == NULL);
  CHECK(hsi_heap_source_name(7) == NULL);
  CHECK_STR(hsi_heap_caller_name(13), "DecommitPageRange");
  CHECK(hsi_heap_caller_name(14) == NULL);
}

TEST(pool_tag_and_type) {
  char tag[5], s[HSI_POOLTYPE_STRLEN];
  hsi_pool_tag(0x656c6946, tag);
  CHECK_STR(tag, "File");
  hsi_pool_tag(0x20206f49, tag);
  CHECK_STR(tag, "Io  ");
  hsi_pool_tag(0x8041001f, tag);        /* bytes 1f 00 41 80: only 'A' is printable */
  CHECK_STR(tag, "..A.");
  CHECK_STR(hsi_pool_type_str(0, s, sizeof s), "NonPaged");
  CHECK_STR(hsi_pool_type_str(1, s, sizeof s), "Paged");
  CHECK_STR(hsi_pool_type_str(0x200, s, sizeof s), "NonPagedNx");
  CHECK_STR(hsi_pool_type_str(0x204, s, sizeof s), "NonPagedNxCacheAligned");
  CHECK_STR(hsi_pool_type_str(0x220, s, sizeof s), "NonPagedNxSession");
  CHECK_STR(hsi_pool_type_str(0x21, s, sizeof s), "PagedSession");
  CHECK_STR(hsi_pool_type_str(5, s, sizeof s), "PagedCacheAligned");
  CHECK_STR(hsi_pool_type_str(0x10000001, s, sizeof s), "Paged|Big");
  CHECK_STR(hsi_pool_type_str(0x10000200, s, sizeof s), "NonPagedNx|Big");
  CHECK_STR(hsi_pool_type_str(0x108, s, sizeof s), "NonPaged|0x108");
  CHECK_STR(hsi_pool_type_str(0x200, s, 4), "Non");
}

TEST(mem_flags) {
  char s[HSI_MEMFLAGS_STRLEN];
  CHECK_STR(hsi_mem_flags_str(0x3000, s, sizeof s), "COMMIT|RESERVE");
  CHECK_STR(hsi_mem_flags_str(0x1000, s, sizeof s), "COMMIT");
  CHECK_STR(hsi_mem_flags_str(0x4000, s, sizeof s), "DECOMMIT");
  CHECK_STR(hsi_mem_flags_str(0x8000, s, sizeof s), "RELEASE");
  CHECK_STR(hsi_mem_flags_str(0, s, sizeof s), "0");
  CHECK_STR(hsi_mem_flags_str(0x20103000, s, sizeof s), "COMMIT|RESERVE|TOP_DOWN|LARGE_PAGES");
  CHECK_STR(hsi_mem_flags_str(0x1010, s, sizeof s), "COMMIT|0x10");
  CHECK_STR(hsi_mem_flags_str(0x10, s, sizeof s), "0x10");
  CHECK_STR(hsi_mem_flags_str(0x3000, s, 8), "COMMIT|");
}

TEST(describe) {
  static const uint8_t alloc64[28] = {
    0x00, 0x00, 0x1A, 0x00, 0x00, 0x00, 0x00, 0x00, 0x18, 0, 0, 0, 0, 0, 0, 0,
    0xE8, 0xD5, 0xC4, 0xB3, 0xA2, 0x01, 0x00, 0x00, 0x02, 0, 0, 0 };
  uint8_t p[64];
  char s[256];
  hs_event ev;
  size_t n;
  ev = kev(0x10, 33, 2, 8, alloc64, 28);
  n = hsi_memev_describe(&ev, s, sizeof s);
  CHECK_STR(s, "heap=0x1a0000 size=24 addr=0x1a2b3c4d5e8 source=LFH");
  CHECK_EQ(n, strlen(s));
  ev.payload_len = 27;
  hsi_memev_describe(&ev, s, sizeof s);
  CHECK_STR(s, "damaged: payload 27 bytes, HeapAlloc v2 needs 28 at P=8");
  /* truncated output stays terminated */
  ev.payload_len = 28;
  n = hsi_memev_describe(&ev, s, 10);
  CHECK_EQ(n, 9);
  CHECK_STR(s, "heap=0x1a");
  /* VirtualAlloc P=4 with 4 trailing bytes */
  memset(p, 0, sizeof p);
  le(p, 0, 0x10000, 4); le(p, 4, 0x10000, 4); le(p, 8, 4242, 4); le(p, 12, 0x3000, 4);
  ev = kev(0x02, 98, 2, 4, p, 20);
  hsi_memev_describe(&ev, s, sizeof s);
  CHECK_STR(s, "addr=0x10000 size=65536 pid=4242 flags=COMMIT|RESERVE +4 bytes");
  /* pool */
  le(p, 0, 0x200, 4); le(p, 4, 0x656c6946, 4); le(p, 8, 100, 8); le(p, 16, 0xffffc00000001000ULL, 8);
  ev = kev(0x0E, 32, 2, 8, p, 24);
  hsi_memev_describe(&ev, s, sizeof s);
  CHECK_STR(s, "pool_type=NonPagedNx tag='File' size=100 addr=0xffffc00000001000");
  /* provisional */
  ev = kev(0x0E, 40, 2, 8, p, 0);
  hsi_memev_describe(&ev, s, sizeof s);
  CHECK_STR(s, "(provisional layout)");
  /* commit caller by name */
  memset(p, 0, sizeof p);
  le(p, 12, 9, 4);
  ev = kev(0x10, 51, 2, 4, p, 16);
  hsi_memev_describe(&ev, s, sizeof s);
  CHECK_STR(s, "heap=0x0 addr=0x0 size=0 caller=AllocateHeap");
  /* snapshot chunk with a cut blob is damaged, as decode says */
  le(p, 0, 1, 4); le(p, 4, 0, 4); le(p, 8, 8, 4);
  ev = sev(100, p, 16);
  hsi_memev_describe(&ev, s, sizeof s);
  CHECK_STR(s, "damaged: payload 16 bytes, HeapSnapshotData v1 needs 20 at P=8");
  ev.payload_len = 20;
  hsi_memev_describe(&ev, s, sizeof s);
  CHECK_STR(s, "instance=1 sequence=0 length=8");
  /* not a memory event */
  ev = kev(0x03, 1, 3, 8, p, 16);
  s[0] = 'x';
  CHECK_EQ(hsi_memev_describe(&ev, s, sizeof s), 0);
  CHECK_EQ(s[0], 0);
}

TEST(tables_consistent) {
  char err[200];
  int rc = hsi_memev_selfcheck(err, sizeof err);
  if (rc != 0) fprintf(stderr, "selfcheck: %s\n", err);
  CHECK_EQ(rc, 0);
}

int main(void) {
  RUN(heap_alloc_x64);
  RUN(heap_alloc_x86);
  RUN(heap_realloc);
  RUN(heap_free);
  RUN(heap_create_destroy);
  RUN(heap_expand_contract);
  RUN(heap_snapshot_event);
  RUN(heap_other_ops);
  RUN(virtualalloc);
  RUN(virtualalloc_rundown);
  RUN(heaprange);
  RUN(pool);
  RUN(pool_unknown_ops);
  RUN(heap_snapshot_provider);
  RUN(not_memory);
  RUN(classic_header);
  RUN(bad_pointer_size);
  RUN(encode_matches_doc_bytes);
  RUN(encode_choices);
  RUN(roundtrip_all_rows);
  RUN(names);
  RUN(pool_tag_and_type);
  RUN(mem_flags);
  RUN(describe);
  RUN(tables_consistent);
  return UNIT_DONE();
}
