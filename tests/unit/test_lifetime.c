/*
** test_lifetime.c -- the lifetime tracker (engine/lifetime.c) on hand-
** built memop sequences whose answers are worked out in the comments.
*/
#include "unit.h"
#include "lifetime.h"

#define H1 0x10000u
#define H2 0x20000u

static hsi_memop mk(int kind, int64_t ts, uint32_t pid, uint32_t tid) {
  hsi_memop op;
  memset(&op, 0, sizeof op);
  op.kind = kind;
  op.ts = ts;
  op.pid = pid;
  op.tid = tid;
  op.pointer_size = 8;
  return op;
}

static hsi_memop halloc(int64_t ts, uint32_t tid, uint64_t heap, uint64_t addr, uint64_t size) {
  hsi_memop op = mk(HSI_OP_HEAP_ALLOC, ts, 100, tid);
  op.heap = heap; op.addr = addr; op.size = size; op.source = 3;
  return op;
}

static hsi_memop hfree(int64_t ts, uint32_t tid, uint64_t heap, uint64_t addr) {
  hsi_memop op = mk(HSI_OP_HEAP_FREE, ts, 100, tid);
  op.heap = heap; op.addr = addr;
  return op;
}

static hsi_memop hrealloc(int64_t ts, uint32_t tid, uint64_t heap, uint64_t addr, uint64_t size,
                          uint64_t old_addr, uint64_t old_size) {
  hsi_memop op = mk(HSI_OP_HEAP_REALLOC, ts, 100, tid);
  op.heap = heap; op.addr = addr; op.size = size; op.old_addr = old_addr; op.old_size = old_size;
  return op;
}

static hsi_memop hdestroy(int64_t ts, uint32_t tid, uint64_t heap) {
  hsi_memop op = mk(HSI_OP_HEAP_DESTROY, ts, 100, tid);
  op.heap = heap;
  return op;
}

static hsi_memop vop(int kind, int64_t ts, uint32_t pid, uint64_t addr, uint64_t size, uint32_t flags) {
  hsi_memop op = mk(kind, ts, pid, HS_NOID);
  op.addr = addr; op.size = size; op.flags = flags;
  return op;
}

/* A VirtualAlloc rundown record: subop 128 (DCStart) or 129 (DCEnd). */
static hsi_memop vrundown(int64_t ts, uint32_t pid, uint64_t addr, uint64_t size, uint32_t flags, int subop) {
  hsi_memop op = vop(HSI_OP_VALLOC_RUNDOWN, ts, pid, addr, size, flags);
  op.subop = subop;
  return op;
}

static hsi_memop pop(int kind, int64_t ts, uint64_t addr, uint64_t size, uint32_t tag, uint32_t type) {
  hsi_memop op = mk(kind, ts, 4, HS_NOID);
  op.addr = addr; op.size = size; op.tag = tag; op.pool_type = type;
  return op;
}

#define TAG(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)

static hsi_life_res R_;
#define FEED(L, op, inst) CHECK_EQ(hsi_life_feed((L), &(op), (inst), &R_), 0)
#define FEEDV(L, op, inst) do { hsi_memop o_ = (op); FEED(L, o_, inst); } while (0)

/* Alloc/Free pairing by (heap, address), the columns, the result of each call. */
TEST(heap_pairing) {
  hsi_life *L = hsi_life_new();
  const hsi_recs *R;
  FEEDV(L, halloc(10, 1, H1, 0x1000, 100), 1);
  CHECK_EQ(R_.count, 1); CHECK_EQ(R_.first, 0); CHECK_EQ(R_.nended, 0);
  FEEDV(L, halloc(11, 1, H2, 0x1000, 200), 1);   /* same address, other heap */
  CHECK_EQ(R_.first, 1);
  FEEDV(L, halloc(12, 1, H1, 0x2000, 300), 1);
  FEEDV(L, hfree(20, 2, H1, 0x1000), 1);
  CHECK_EQ(R_.count, 0); CHECK_EQ(R_.nended, 1); CHECK_EQ(R_.ended[0], 0);
  FEEDV(L, halloc(30, 1, H1, 0x1000, 400), 1);  /* the address again: a new record */
  CHECK_EQ(R_.first, 3);
  R = hsi_life_recs(L);
  CHECK_EQ(R->n, 4);
  CHECK_EQ(R->kind[0], HSI_KIND_HEAP);
  CHECK_EQ(R->key[0], H1); CHECK_EQ(R->addr[0], 0x1000); CHECK_EQ(R->size[0], 100);
  CHECK_EQ(R->ts_alloc[0], 10); CHECK_EQ(R->ts_free[0], 20);
  CHECK_EQ(R->reason[0], HSI_END_FREE); CHECK_EQ(R->source[0], 3); CHECK_EQ(R->inst[0], 1);
  CHECK_EQ(R->ts_free[1], HSI_TS_NEVER); CHECK_EQ(R->reason[1], HSI_END_NONE);
  CHECK_EQ(R->ts_free[2], HSI_TS_NEVER);
  CHECK_EQ(R->ts_alloc[3], 30); CHECK_EQ(R->size[3], 400);
  CHECK_EQ(hsi_life_live(L), 3);
  CHECK_EQ(hsi_life_stats_get(L)->ops[HSI_OP_HEAP_ALLOC], 4);
  CHECK_EQ(hsi_life_stats_get(L)->ops[HSI_OP_HEAP_FREE], 1);
  CHECK_EQ(hsi_life_pid(L, 1), 100);
  CHECK_EQ(hsi_life_pid(L, 9), HS_NOID);
  /* stacks come later */
  CHECK_EQ(hsi_life_set_stack(L, 0, HSI_STACK_ALLOC, 7), 0);
  CHECK_EQ(hsi_life_set_stack(L, 0, HSI_STACK_FREE, 8), 0);
  CHECK_EQ(R->stk_alloc[0], 7); CHECK_EQ(R->stk_free[0], 8);
  CHECK_EQ(hsi_life_set_stack(L, 99, HSI_STACK_ALLOC, 1), HS_EARG);
  CHECK_EQ(hsi_life_set_stack(L, 0, 5, 1), HS_EARG);
  { int64_t a, b; hsi_life_span(L, &a, &b); CHECK_EQ(a, 10); CHECK_EQ(b, 30); }
  hsi_life_free(L);
}

/* In place: one record ends, another starts at the realloc with the new size. */
TEST(realloc_in_place) {
  hsi_life *L = hsi_life_new();
  const hsi_recs *R;
  FEEDV(L, halloc(10, 1, H1, 0x1000, 100), 1);
  FEEDV(L, hrealloc(20, 1, H1, 0x1000, 250, 0x1000, 100), 1);
  CHECK_EQ(R_.count, 1); CHECK_EQ(R_.first, 1);
  CHECK_EQ(R_.nended, 1); CHECK_EQ(R_.ended[0], 0);
  R = hsi_life_recs(L);
  CHECK_EQ(R->n, 2);
  CHECK_EQ(R->ts_free[0], 20); CHECK_EQ(R->reason[0], HSI_END_REALLOC);
  CHECK_EQ(R->ts_alloc[1], 20); CHECK_EQ(R->size[1], 250);
  CHECK(R->flags[1] & HSI_RF_REALLOC);
  CHECK(!(R->flags[0] & HSI_RF_REALLOC));
  CHECK_EQ(hsi_life_stats_get(L)->heap_realloc_inplace, 1);
  CHECK_EQ(hsi_life_stats_get(L)->heap_realloc_summary, 0);
  FEEDV(L, hfree(30, 1, H1, 0x1000), 1);
  CHECK_EQ(R->ts_free[1], 30);
  CHECK_EQ(hsi_life_live(L), 0);
  hsi_life_free(L);
}

/*
** Moving realloc as ntdll logs it (thread 5): Alloc(new) -> Free(old) ->
** ReAlloc summary.  Thread 6 interleaves its own heap events, which do
** not count: the rule looks at the ReAlloc's own thread.
*/
TEST(realloc_moving_summary) {
  hsi_life *L = hsi_life_new();
  const hsi_recs *R;
  FEEDV(L, halloc(10, 5, H1, 0x1000, 100), 1);      /* rec 0: old block */
  FEEDV(L, halloc(20, 5, H1, 0x5000, 300), 1);      /* rec 1: new block */
  FEEDV(L, halloc(20, 6, H1, 0x9000, 8), 1);        /* rec 2: other thread */
  FEEDV(L, hfree(21, 5, H1, 0x1000), 1);
  FEEDV(L, hfree(21, 6, H1, 0x9000), 1);
  FEEDV(L, hrealloc(22, 5, H1, 0x5000, 300, 0x1000, 100), 1);
  CHECK_EQ(R_.count, 0);   /* adds nothing */
  CHECK_EQ(R_.nended, 0);
  R = hsi_life_recs(L);
  CHECK_EQ(R->n, 3);
  CHECK_EQ(R->ts_free[0], 21); CHECK_EQ(R->reason[0], HSI_END_REALLOC);
  CHECK_EQ(R->ts_alloc[1], 20); CHECK_EQ(R->ts_free[1], HSI_TS_NEVER);
  CHECK(R->flags[1] & HSI_RF_REALLOC);
  CHECK_EQ(R->reason[2], HSI_END_FREE);
  CHECK_EQ(hsi_life_stats_get(L)->heap_realloc_summary, 1);
  CHECK_EQ(hsi_life_stats_get(L)->heap_realloc_lone, 0);
  CHECK_EQ(hsi_life_live(L), 1);
  /* Free before Alloc also makes a summary; the Free of a block never
     seen gets its size from the summary's OldAllocSize. */
  FEEDV(L, hfree(30, 5, H1, 0x7000), 1);            /* rec 3: before the trace, size unknown */
  CHECK(R->flags[3] & HSI_RF_SIZE_UNKNOWN);
  FEEDV(L, halloc(30, 5, H1, 0x8000, 64), 1);       /* rec 4 */
  FEEDV(L, hrealloc(31, 5, H1, 0x8000, 64, 0x7000, 48), 1);
  CHECK_EQ(hsi_life_recs(L)->n, 5);
  R = hsi_life_recs(L);
  CHECK(R->flags[3] & HSI_RF_BEFORE);
  CHECK(!(R->flags[3] & HSI_RF_SIZE_UNKNOWN));
  CHECK_EQ(R->size[3], 48);
  CHECK_EQ(R->reason[3], HSI_END_REALLOC);
  CHECK_EQ(hsi_life_stats_get(L)->heap_realloc_summary, 2);
  hsi_life_free(L);
}

/* A ReAlloc logged alone (or not right after its Alloc/Free) moves the block itself. */
TEST(realloc_lone) {
  hsi_life *L = hsi_life_new();
  const hsi_recs *R;
  FEEDV(L, halloc(10, 5, H1, 0x1000, 100), 1);
  FEEDV(L, halloc(11, 5, H1, 0x2000, 10), 1);
  FEEDV(L, hrealloc(20, 5, H1, 0x3000, 500, 0x1000, 100), 1);
  CHECK_EQ(R_.count, 1); CHECK_EQ(R_.first, 2);
  CHECK_EQ(R_.nended, 1); CHECK_EQ(R_.ended[0], 0);
  /* Alloc(new) and Free(old), but another heap event of the thread between. */
  FEEDV(L, halloc(30, 5, H1, 0x4000, 700), 1);       /* rec 3 */
  FEEDV(L, hfree(31, 5, H1, 0x3000), 1);
  FEEDV(L, halloc(32, 5, H1, 0x6000, 1), 1);         /* rec 4 */
  FEEDV(L, hrealloc(33, 5, H1, 0x5000, 700, 0x2000, 10), 1);  /* not those: lone */
  R = hsi_life_recs(L);
  CHECK_EQ(R->n, 6);
  CHECK_EQ(R->ts_free[0], 20); CHECK_EQ(R->reason[0], HSI_END_REALLOC);
  CHECK_EQ(R->ts_alloc[2], 20); CHECK_EQ(R->size[2], 500); CHECK(R->flags[2] & HSI_RF_REALLOC);
  CHECK_EQ(R->ts_free[1], 33); CHECK_EQ(R->reason[1], HSI_END_REALLOC);
  CHECK_EQ(R->ts_alloc[5], 33); CHECK_EQ(R->addr[5], 0x5000);
  CHECK_EQ(hsi_life_stats_get(L)->heap_realloc_lone, 2);
  CHECK_EQ(hsi_life_stats_get(L)->heap_realloc_summary, 0);
  /* A ReAlloc on another thread than the Alloc/Free is not their summary. */
  FEEDV(L, halloc(40, 7, H1, 0xA000, 5), 1);         /* rec 6 */
  FEEDV(L, hfree(41, 7, H1, 0x4000), 1);
  FEEDV(L, hrealloc(42, 8, H1, 0xA000, 5, 0x4000, 700), 1);
  CHECK_EQ(hsi_life_stats_get(L)->heap_realloc_summary, 0);
  CHECK_EQ(hsi_life_stats_get(L)->heap_double_free, 1);       /* 0x4000 was freed at 41 */
  CHECK_EQ(hsi_life_stats_get(L)->heap_alloc_over_live, 1);   /* 0xA000 was live */
  R = hsi_life_recs(L);
  CHECK_EQ(R->reason[6], HSI_END_REUSED);
  /* Thread id 9 of instance 1 ends; the id is reused in instance 2, whose
     ReAlloc must not be taken for the summary of instance 1's pair. */
  FEEDV(L, halloc(50, 9, H1, 0xB000, 16), 1);
  FEEDV(L, hfree(51, 9, H1, 0x5000), 1);
  CHECK_EQ(hsi_life_recs(L)->n, 9);
  FEEDV(L, hrealloc(52, 9, H1, 0xB000, 16, 0x5000, 700), 2);
  CHECK_EQ(hsi_life_stats_get(L)->heap_realloc_summary, 0);
  CHECK_EQ(R_.count, 1);
  CHECK_EQ(hsi_life_recs(L)->n, 11);   /* a before-trace block and a new one, in instance 2 */
  {
    const hsi_life_stats *st = hsi_life_stats_get(L);
    uint64_t lone = st->heap_realloc_lone, dbl = st->heap_double_free, over = st->heap_alloc_over_live;
    size_t n;
    /* Alloc and Free right before on its thread, but the Alloc is of
       another block than the ReAlloc's new one: not its summary. */
    FEEDV(L, halloc(60, 10, H2, 0x100, 50), 1);       /* rec 11: the old block */
    FEEDV(L, halloc(61, 10, H2, 0x200, 60), 1);       /* rec 12: another block */
    FEEDV(L, hfree(62, 10, H2, 0x100), 1);
    FEEDV(L, hrealloc(63, 10, H2, 0x300, 70, 0x100, 50), 1);
    R = hsi_life_recs(L);
    CHECK_EQ(R->n, 14);
    CHECK_EQ(R->addr[13], 0x300); CHECK_EQ(R->size[13], 70); CHECK(R->flags[13] & HSI_RF_REALLOC);
    CHECK(!(R->flags[12] & HSI_RF_REALLOC));
    CHECK_EQ(R->reason[11], HSI_END_FREE);
    CHECK_EQ(st->heap_realloc_summary, 0);
    CHECK_EQ(st->heap_realloc_lone, lone + 1);
    CHECK_EQ(st->heap_double_free, dbl + 1);          /* 0x100 was freed at 62 */
    /* ... and the Free is of another block than the ReAlloc's old one. */
    FEEDV(L, halloc(70, 11, H2, 0x400, 10), 1);       /* rec 14: the old block */
    FEEDV(L, halloc(71, 11, H2, 0x500, 20), 1);       /* rec 15: the new block */
    FEEDV(L, hfree(72, 11, H2, 0x600), 1);            /* rec 16: a block from before the trace */
    n = hsi_life_recs(L)->n;
    FEEDV(L, hrealloc(73, 11, H2, 0x500, 20, 0x400, 10), 1);
    R = hsi_life_recs(L);
    CHECK_EQ(R->n, n + 1);
    CHECK_EQ(R->reason[14], HSI_END_REALLOC); CHECK_EQ(R->ts_free[14], 73);
    CHECK_EQ(R->reason[15], HSI_END_REUSED);
    CHECK_EQ(st->heap_realloc_summary, 0);
    CHECK_EQ(st->heap_realloc_lone, lone + 2);
    CHECK_EQ(st->heap_alloc_over_live, over + 1);
  }
  hsi_life_free(L);
}

/* Frees of blocks never seen: records allocated before the trace. */
TEST(free_before_trace) {
  hsi_life *L = hsi_life_new();
  const hsi_recs *R;
  const hsi_life_stats *st = hsi_life_stats_get(L);
  FEEDV(L, hfree(10, 1, H1, 0x1000), 1);
  CHECK_EQ(R_.count, 0); CHECK_EQ(R_.nended, 1); CHECK_EQ(R_.ended[0], 0);
  FEEDV(L, hrealloc(20, 1, H1, 0x3000, 64, 0x2000, 32), 1);
  FEEDV(L, pop(HSI_OP_POOL_FREE, 30, 0xFFFF800000001000ull, 256, TAG('F', 'i', 'l', 'e'), 1), 2);
  FEEDV(L, vop(HSI_OP_VFREE, 40, 300, 0x700000, 0x2000, HS_MEM_DECOMMIT), 3);
  R = hsi_life_recs(L);
  CHECK_EQ(R->n, 5);
  /* heap Free: size unknown */
  CHECK_EQ(R->ts_alloc[0], HSI_TS_BEFORE); CHECK_EQ(R->ts_free[0], 10);
  CHECK_EQ(R->flags[0], HSI_RF_BEFORE | HSI_RF_SIZE_UNKNOWN);
  CHECK_EQ(R->size[0], 0); CHECK_EQ(R->reason[0], HSI_END_FREE);
  /* heap ReAlloc: old size known */
  CHECK_EQ(R->ts_alloc[1], HSI_TS_BEFORE); CHECK_EQ(R->flags[1], HSI_RF_BEFORE);
  CHECK_EQ(R->size[1], 32); CHECK_EQ(R->addr[1], 0x2000); CHECK_EQ(R->reason[1], HSI_END_REALLOC);
  CHECK_EQ(R->ts_alloc[2], 20);
  /* pool Free: size known, tag and type from the free */
  CHECK_EQ(R->kind[3], HSI_KIND_POOL); CHECK_EQ(R->flags[3], HSI_RF_BEFORE); CHECK_EQ(R->size[3], 256);
  CHECK_EQ(HSI_REC_TAG(R, 3), TAG('F', 'i', 'l', 'e')); CHECK_EQ(HSI_REC_POOLTYPE(R, 3), 1);
  /* decommit: size known */
  CHECK_EQ(R->kind[4], HSI_KIND_VIRTUAL); CHECK_EQ(R->flags[4], HSI_RF_BEFORE);
  CHECK_EQ(R->size[4], 0x2000); CHECK_EQ(R->reason[4], HSI_END_DECOMMIT); CHECK_EQ(R->inst[4], 3);
  CHECK_EQ(st->heap_free_unknown, 1); CHECK_EQ(st->heap_realloc_unknown, 1);
  CHECK_EQ(st->pool_free_unknown, 1); CHECK_EQ(st->vm_decommit_unknown, 1);
  CHECK_EQ(st->vm_decommit_unknown_bytes, 0x2000);
  CHECK_EQ(st->before_records, 4);
  hsi_life_free(L);
}

TEST(double_free) {
  hsi_life *L = hsi_life_new();
  const hsi_life_stats *st = hsi_life_stats_get(L);
  FEEDV(L, halloc(10, 1, H1, 0x1000, 100), 1);
  FEEDV(L, hfree(20, 1, H1, 0x1000), 1);
  FEEDV(L, hfree(30, 1, H1, 0x1000), 1);
  CHECK_EQ(R_.nended, 0);
  CHECK_EQ(st->heap_double_free, 1);
  CHECK_EQ(st->heap_free_unknown, 0);
  CHECK_EQ(hsi_life_recs(L)->n, 1);
  CHECK_EQ(hsi_life_recs(L)->ts_free[0], 20);
  /* a never-seen block freed twice: a before-trace record, then a double free */
  FEEDV(L, hfree(40, 1, H1, 0x8000), 1);
  FEEDV(L, hfree(50, 1, H1, 0x8000), 1);
  CHECK_EQ(st->heap_free_unknown, 1);
  CHECK_EQ(st->heap_double_free, 2);
  CHECK_EQ(hsi_life_recs(L)->n, 2);
  /* pool too */
  FEEDV(L, pop(HSI_OP_POOL_ALLOC, 60, 0xFFFF900000000000ull, 64, TAG('A', 'b', 'c', 'd'), 0), 1);
  FEEDV(L, pop(HSI_OP_POOL_FREE, 61, 0xFFFF900000000000ull, 0, 0, 0), 1);
  FEEDV(L, pop(HSI_OP_POOL_FREE, 62, 0xFFFF900000000000ull, 0, 0, 0), 1);
  CHECK_EQ(st->pool_double_free, 1);
  CHECK_EQ(st->pool_free_unknown, 0);
  CHECK_EQ(hsi_life_recs(L)->n, 3);
  /* after a new alloc at the address, a free is fine again */
  FEEDV(L, halloc(70, 1, H1, 0x1000, 5), 1);
  FEEDV(L, hfree(71, 1, H1, 0x1000), 1);
  CHECK_EQ(st->heap_double_free, 2);
  CHECK_EQ(hsi_life_recs(L)->ts_free[3], 71);
  hsi_life_free(L);
}

/* HeapDestroy ends every outstanding block of that heap, in that process only. */
TEST(heap_destroy) {
  hsi_life *L = hsi_life_new();
  const hsi_recs *R;
  FEEDV(L, halloc(10, 1, H1, 0x1000, 1), 1);   /* 0 */
  FEEDV(L, halloc(11, 1, H1, 0x2000, 2), 1);   /* 1 */
  FEEDV(L, halloc(12, 1, H1, 0x3000, 4), 1);   /* 2: freed before the destroy */
  FEEDV(L, halloc(13, 1, H2, 0x4000, 8), 1);   /* 3: other heap */
  FEEDV(L, halloc(14, 1, H1, 0x5000, 16), 2);  /* 4: same handle, other process */
  FEEDV(L, hfree(20, 1, H1, 0x3000), 1);
  FEEDV(L, hdestroy(50, 1, H1), 1);
  CHECK_EQ(R_.nended, 2);
  CHECK_EQ(R_.count, 0);
  R = hsi_life_recs(L);
  CHECK_EQ(R->ts_free[0], 50); CHECK_EQ(R->reason[0], HSI_END_DESTROY);
  CHECK_EQ(R->ts_free[1], 50); CHECK_EQ(R->reason[1], HSI_END_DESTROY);
  CHECK_EQ(R->ts_free[2], 20); CHECK_EQ(R->reason[2], HSI_END_FREE);
  CHECK_EQ(R->ts_free[3], HSI_TS_NEVER);
  CHECK_EQ(R->ts_free[4], HSI_TS_NEVER);
  CHECK_EQ(hsi_life_stats_get(L)->heap_destroyed, 2);
  CHECK_EQ(hsi_life_live(L), 2);
  /* the heap's blocks are gone: freeing one is a double free, no record */
  FEEDV(L, hfree(60, 1, H1, 0x2000), 1);
  CHECK_EQ(hsi_life_stats_get(L)->heap_double_free, 1);
  CHECK_EQ(hsi_life_recs(L)->n, 5);
  hsi_life_free(L);
}

/* Process end ends heap blocks and committed ranges of that instance, not pool. */
TEST(process_end) {
  hsi_life *L = hsi_life_new();
  const hsi_recs *R;
  hsi_life_res res;
  FEEDV(L, halloc(10, 1, H1, 0x1000, 10), 1);                                        /* 0 */
  FEEDV(L, halloc(11, 1, H1, 0x2000, 20), 1);                                        /* 1 */
  FEEDV(L, hfree(12, 1, H1, 0x2000), 1);
  FEEDV(L, vop(HSI_OP_VALLOC, 13, 100, 0x100000, 0x3000, HS_MEM_RESERVE | HS_MEM_COMMIT), 1); /* 2 */
  FEEDV(L, pop(HSI_OP_POOL_ALLOC, 14, 0xFFFF800000000000ull, 64, TAG('P', 'o', 'o', 'l'), 1), 1); /* 3 */
  FEEDV(L, halloc(15, 1, H1, 0x1000, 30), 2);                                        /* 4 */
  CHECK_EQ(hsi_life_process_end(L, 1, 100, &res), 0);
  CHECK_EQ(res.nended, 2);
  CHECK_EQ(res.count, 0);
  R = hsi_life_recs(L);
  CHECK_EQ(R->ts_free[0], 100); CHECK_EQ(R->reason[0], HSI_END_PROCESS_END);
  CHECK_EQ(R->ts_free[1], 12); CHECK_EQ(R->reason[1], HSI_END_FREE);
  CHECK_EQ(R->ts_free[2], 100); CHECK_EQ(R->reason[2], HSI_END_PROCESS_END);
  CHECK_EQ(R->ts_free[3], HSI_TS_NEVER);
  CHECK_EQ(R->ts_free[4], HSI_TS_NEVER);
  CHECK_EQ(hsi_life_stats_get(L)->process_end_ended, 2);
  CHECK_EQ(hsi_life_live(L), 2);
  /* trace end: nothing more happens, the rest stays outstanding */
  CHECK_EQ(hsi_life_process_end(L, 77, 110, &res), 0);   /* never seen: nothing */
  CHECK_EQ(res.nended, 0);
  hsi_life_free(L);
}

/* pid 500 is used by two processes, one after the other: instances 1 and 2. */
TEST(pid_reuse) {
  hsi_life *L = hsi_life_new();
  const hsi_recs *R;
  hsi_memop op;
  op = halloc(10, 1, H1, 0x1000, 10); op.pid = 500; FEED(L, op, 1);   /* 0 */
  op = halloc(11, 1, H1, 0x2000, 20); op.pid = 500; FEED(L, op, 1);   /* 1 */
  CHECK_EQ(hsi_life_process_end(L, 1, 20, NULL), 0);
  op = halloc(30, 1, H1, 0x1000, 30); op.pid = 500; FEED(L, op, 2);   /* 2 */
  op = hfree(40, 1, H1, 0x1000); op.pid = 500; FEED(L, op, 2);
  op = hfree(41, 1, H1, 0x2000); op.pid = 500; FEED(L, op, 2);        /* 3: not instance 1's block */
  R = hsi_life_recs(L);
  CHECK_EQ(R->n, 4);
  CHECK_EQ(R->ts_free[0], 20); CHECK_EQ(R->reason[0], HSI_END_PROCESS_END);
  CHECK_EQ(R->ts_free[1], 20);
  CHECK_EQ(R->ts_free[2], 40); CHECK_EQ(R->inst[2], 2); CHECK_EQ(R->reason[2], HSI_END_FREE);
  CHECK(R->flags[3] & HSI_RF_BEFORE); CHECK_EQ(R->inst[3], 2);
  CHECK_EQ(hsi_life_pid(L, 1), 500); CHECK_EQ(hsi_life_pid(L, 2), 500);
  hsi_life_free(L);
}

/*
** VirtualAlloc, one reservation at 0x10000-0x20000 of pid 7 (instance 3):
**   10  reserve+commit 0x10000-0x20000         rec 0
**   20  decommit 0x14000-0x18000               rec 0 becomes that piece, ended;
**                                              rec 1 = 0x10000-0x14000, rec 2 = 0x18000-0x20000, from 10
**   30  decommit 0x14000-0x18000 again         nothing
**   40  commit 0x10000-0x20000                 rec 3 = 0x14000-0x18000 only
**   45  commit 0x10000-0x14000                 nothing
**   50  release base 0x10000 size 0            recs 1, 2, 3 end
*/
TEST(virtual_ranges) {
  hsi_life *L = hsi_life_new();
  const hsi_recs *R;
  const hsi_life_stats *st = hsi_life_stats_get(L);
  FEEDV(L, vop(HSI_OP_VALLOC, 10, 7, 0x10000, 0x10000, HS_MEM_RESERVE | HS_MEM_COMMIT), 3);
  CHECK_EQ(R_.count, 1); CHECK_EQ(R_.first, 0);
  CHECK_EQ(hsi_life_set_stack(L, 0, HSI_STACK_ALLOC, 77), 0);
  FEEDV(L, vop(HSI_OP_VFREE, 20, 7, 0x14000, 0x4000, HS_MEM_DECOMMIT), 3);
  CHECK_EQ(R_.count, 0); CHECK_EQ(R_.nended, 1); CHECK_EQ(R_.ended[0], 0);
  R = hsi_life_recs(L);
  CHECK_EQ(R->n, 3);
  CHECK_EQ(R->addr[0], 0x14000); CHECK_EQ(R->size[0], 0x4000);
  CHECK_EQ(R->ts_alloc[0], 10); CHECK_EQ(R->ts_free[0], 20); CHECK_EQ(R->reason[0], HSI_END_DECOMMIT);
  CHECK_EQ(R->addr[1], 0x10000); CHECK_EQ(R->size[1], 0x4000);
  CHECK_EQ(R->addr[2], 0x18000); CHECK_EQ(R->size[2], 0x8000);
  CHECK_EQ(R->ts_alloc[1], 10); CHECK_EQ(R->ts_alloc[2], 10);
  CHECK_EQ(R->ts_free[1], HSI_TS_NEVER); CHECK_EQ(R->ts_free[2], HSI_TS_NEVER);
  CHECK_EQ(R->stk_alloc[1], 77); CHECK_EQ(R->stk_alloc[2], 77);
  CHECK(R->flags[1] & HSI_RF_SPLIT); CHECK(!(R->flags[0] & HSI_RF_SPLIT));
  CHECK_EQ(R->inst[1], 3); CHECK_EQ(R->kind[2], HSI_KIND_VIRTUAL);
  CHECK_EQ(st->vm_splits, 1);
  FEEDV(L, vop(HSI_OP_VFREE, 30, 7, 0x14000, 0x4000, HS_MEM_DECOMMIT), 3);
  CHECK_EQ(R_.nended, 0);
  CHECK_EQ(hsi_life_recs(L)->n, 3);
  CHECK_EQ(st->vm_decommit_nothing, 1);
  CHECK_EQ(st->vm_decommit_unknown, 0);
  FEEDV(L, vop(HSI_OP_VALLOC, 40, 7, 0x10000, 0x10000, HS_MEM_COMMIT), 3);
  CHECK_EQ(R_.count, 1); CHECK_EQ(R_.first, 3);
  R = hsi_life_recs(L);
  CHECK_EQ(R->addr[3], 0x14000); CHECK_EQ(R->size[3], 0x4000); CHECK_EQ(R->ts_alloc[3], 40);
  CHECK_EQ(st->vm_commit_dup_bytes, 0xC000);
  FEEDV(L, vop(HSI_OP_VALLOC, 45, 7, 0x10000, 0x4000, HS_MEM_COMMIT), 3);
  CHECK_EQ(R_.count, 0);
  CHECK_EQ(st->vm_commit_dup, 1);
  CHECK_EQ(hsi_life_live(L), 3);
  FEEDV(L, vop(HSI_OP_VFREE, 50, 7, 0x10000, 0, HS_MEM_RELEASE), 3);
  CHECK_EQ(R_.nended, 3);
  R = hsi_life_recs(L);
  CHECK_EQ(R->n, 4);
  CHECK_EQ(R->ts_free[1], 50); CHECK_EQ(R->reason[1], HSI_END_RELEASE);
  CHECK_EQ(R->ts_free[2], 50); CHECK_EQ(R->ts_free[3], 50);
  CHECK_EQ(R->size[1], 0x4000); CHECK_EQ(R->size[2], 0x8000);   /* whole pieces */
  CHECK_EQ(hsi_life_live(L), 0);
  CHECK_EQ(hsi_life_pid(L, 3), 7);
  hsi_life_free(L);
}

/* A release with a size inside a reservation ends everything in it; unknown regions. */
TEST(virtual_release) {
  hsi_life *L = hsi_life_new();
  const hsi_recs *R;
  const hsi_life_stats *st = hsi_life_stats_get(L);
  FEEDV(L, vop(HSI_OP_VALLOC, 10, 7, 0x100000, 0x100000, HS_MEM_RESERVE), 1);
  CHECK_EQ(R_.count, 0);
  FEEDV(L, vop(HSI_OP_VALLOC, 11, 7, 0x100000, 0x1000, HS_MEM_COMMIT), 1);   /* 0 */
  FEEDV(L, vop(HSI_OP_VALLOC, 12, 7, 0x180000, 0x2000, HS_MEM_COMMIT), 1);   /* 1 */
  FEEDV(L, vop(HSI_OP_VALLOC, 13, 7, 0x300000, 0x1000, HS_MEM_COMMIT), 1);   /* 2: outside */
  FEEDV(L, vop(HSI_OP_VFREE, 20, 7, 0x100000, 0x100000, HS_MEM_RELEASE), 1);
  CHECK_EQ(R_.nended, 2);
  R = hsi_life_recs(L);
  CHECK_EQ(R->ts_free[0], 20); CHECK_EQ(R->ts_free[1], 20); CHECK_EQ(R->ts_free[2], HSI_TS_NEVER);
  /* release of a region the trace never saw: committed before the trace,
     a before-trace record (AOFI) with the size the event carries */
  FEEDV(L, vop(HSI_OP_VFREE, 30, 7, 0x900000, 0x10000, HS_MEM_RELEASE), 1);   /* 3 */
  CHECK_EQ(st->vm_release_unknown, 1);
  CHECK_EQ(st->vm_release_unknown_bytes, 0x10000);
  CHECK_EQ(R_.count, 0); CHECK_EQ(R_.nended, 1); CHECK_EQ(R_.ended[0], 3);
  R = hsi_life_recs(L);
  CHECK_EQ(R->flags[3], HSI_RF_BEFORE); CHECK_EQ(R->ts_alloc[3], HSI_TS_BEFORE);
  CHECK_EQ(R->ts_free[3], 30); CHECK_EQ(R->reason[3], HSI_END_RELEASE);
  CHECK_EQ(R->addr[3], 0x900000); CHECK_EQ(R->size[3], 0x10000); CHECK_EQ(R->inst[3], 1);
  FEEDV(L, vop(HSI_OP_VFREE, 31, 7, 0xA00000, 0, HS_MEM_RELEASE), 1);
  CHECK_EQ(st->vm_size0_unknown, 1);
  CHECK_EQ(hsi_life_recs(L)->n, 4);
  /* the released reservation is gone: a size-0 release there knows nothing */
  FEEDV(L, vop(HSI_OP_VFREE, 32, 7, 0x100000, 0, HS_MEM_RELEASE), 1);
  CHECK_EQ(st->vm_size0_unknown, 2);
  /* a rundown reservation: a size-0 release resolves it, nothing is made */
  FEEDV(L, vrundown(33, 7, 0x400000, 0x10000, HS_MEM_RESERVE, 128), 1);
  CHECK_EQ(hsi_life_recs(L)->n, 4);
  FEEDV(L, vop(HSI_OP_VALLOC, 34, 7, 0x408000, 0x1000, HS_MEM_COMMIT), 1);   /* 4 */
  /* pages of a rundown region never seen committed: decommitting them
     is a before-trace record (its commit state was unknown) */
  FEEDV(L, vop(HSI_OP_VFREE, 35, 7, 0x400000, 0x1000, HS_MEM_DECOMMIT), 1);   /* 5 */
  CHECK_EQ(R_.nended, 1);
  CHECK_EQ(hsi_life_recs(L)->flags[5], HSI_RF_BEFORE);
  FEEDV(L, vop(HSI_OP_VFREE, 36, 7, 0x400000, 0, HS_MEM_RELEASE), 1);
  CHECK_EQ(R_.nended, 1);
  CHECK_EQ(hsi_life_recs(L)->ts_free[4], 36);
  /* a release given a smaller size still ends all of its reservation */
  FEEDV(L, vop(HSI_OP_VALLOC, 40, 7, 0x600000, 0x8000, HS_MEM_RESERVE | HS_MEM_COMMIT), 1);  /* 6 */
  FEEDV(L, vop(HSI_OP_VFREE, 41, 7, 0x600000, 0x1000, HS_MEM_RELEASE), 1);
  CHECK_EQ(R_.nended, 1);
  R = hsi_life_recs(L);
  CHECK_EQ(R->n, 7);
  CHECK_EQ(R->ts_free[6], 41); CHECK_EQ(R->size[6], 0x8000); CHECK_EQ(R->reason[6], HSI_END_RELEASE);
  CHECK_EQ(st->vm_release_unknown, 1);
  CHECK_EQ(hsi_life_live(L), 1);   /* rec 2, outside any reservation */
  hsi_life_free(L);
}

/*
** Decommits in a region reserved before the trace: pages the trace never
** saw committed were committed before it (size known), once.
**   10  commit 0x51000-0x53000 (no reservation seen)        rec 0
**   20  decommit 0x50000-0x54000: rec 0 ends; 0x50000-0x51000 and 0x53000-0x54000
**       become before-trace records 1, 2
**   30  decommit 0x50000-0x54000 again: nothing
*/
TEST(virtual_decommit_before_trace) {
  hsi_life *L = hsi_life_new();
  const hsi_recs *R;
  const hsi_life_stats *st = hsi_life_stats_get(L);
  FEEDV(L, vop(HSI_OP_VALLOC, 10, 9, 0x51000, 0x2000, HS_MEM_COMMIT), 1);
  FEEDV(L, vop(HSI_OP_VFREE, 20, 9, 0x50000, 0x4000, HS_MEM_DECOMMIT), 1);
  CHECK_EQ(R_.nended, 3);
  R = hsi_life_recs(L);
  CHECK_EQ(R->n, 3);
  CHECK_EQ(R->ts_free[0], 20); CHECK_EQ(R->flags[0], 0);
  CHECK_EQ(R->addr[1], 0x50000); CHECK_EQ(R->size[1], 0x1000); CHECK_EQ(R->flags[1], HSI_RF_BEFORE);
  CHECK_EQ(R->addr[2], 0x53000); CHECK_EQ(R->size[2], 0x1000);
  CHECK_EQ(R->ts_alloc[2], HSI_TS_BEFORE); CHECK_EQ(R->reason[2], HSI_END_DECOMMIT);
  CHECK_EQ(st->vm_decommit_unknown, 2);
  FEEDV(L, vop(HSI_OP_VFREE, 30, 9, 0x50000, 0x4000, HS_MEM_DECOMMIT), 1);
  CHECK_EQ(R_.nended, 0);
  CHECK_EQ(hsi_life_recs(L)->n, 3);
  CHECK_EQ(st->vm_decommit_nothing, 1);
  /* a wider decommit: only the new pages are before-trace */
  FEEDV(L, vop(HSI_OP_VFREE, 40, 9, 0x4F000, 0x6000, HS_MEM_DECOMMIT), 1);
  R = hsi_life_recs(L);
  CHECK_EQ(R->n, 5);
  CHECK_EQ(R->addr[3], 0x4F000); CHECK_EQ(R->size[3], 0x1000);
  CHECK_EQ(R->addr[4], 0x54000); CHECK_EQ(R->size[4], 0x1000);
  /* a fresh reservation's pages are known: decommitting them makes nothing */
  FEEDV(L, vop(HSI_OP_VALLOC, 50, 9, 0x800000, 0x10000, HS_MEM_RESERVE), 1);
  FEEDV(L, vop(HSI_OP_VFREE, 51, 9, 0x800000, 0x10000, HS_MEM_DECOMMIT), 1);
  CHECK_EQ(hsi_life_recs(L)->n, 5);
  CHECK_EQ(st->vm_decommit_nothing, 2);
  hsi_life_free(L);
}

/* A stack that arrives after a split reaches the pieces too. */
TEST(virtual_split_late_stack) {
  hsi_life *L = hsi_life_new();
  const hsi_recs *R;
  FEEDV(L, vop(HSI_OP_VALLOC, 10, 7, 0x10000, 0x10000, HS_MEM_RESERVE | HS_MEM_COMMIT), 1);  /* 0 */
  FEEDV(L, vop(HSI_OP_VFREE, 11, 7, 0x11000, 0x1000, HS_MEM_DECOMMIT), 1);   /* pieces 1, 2 */
  FEEDV(L, vop(HSI_OP_VFREE, 12, 7, 0x13000, 0x1000, HS_MEM_DECOMMIT), 1);   /* 2 -> 2 (ended), 3, 4 */
  R = hsi_life_recs(L);
  CHECK_EQ(R->n, 5);
  CHECK_EQ(R->stk_alloc[3], 0);
  CHECK_EQ(hsi_life_set_stack(L, 0, HSI_STACK_ALLOC, 42), 0);
  R = hsi_life_recs(L);
  CHECK_EQ(R->stk_alloc[0], 42); CHECK_EQ(R->stk_alloc[1], 42); CHECK_EQ(R->stk_alloc[2], 42);
  CHECK_EQ(R->stk_alloc[3], 42); CHECK_EQ(R->stk_alloc[4], 42);
  CHECK_EQ(R->addr[3], 0x12000); CHECK_EQ(R->size[3], 0x1000);
  CHECK_EQ(R->addr[4], 0x14000); CHECK_EQ(R->size[4], 0xC000);
  hsi_life_free(L);
}

TEST(pool_by_tag) {
  hsi_life *L = hsi_life_new();
  const hsi_recs *R;
  uint64_t e1 = 0xFFFF800000001000ull, e2 = 0xFFFF800000002000ull;
  FEEDV(L, pop(HSI_OP_POOL_ALLOC, 10, e1, 64, TAG('A', 'b', 'c', 'd'), 0x200), 5);
  FEEDV(L, pop(HSI_OP_POOL_ALLOC, 11, e2, 128, TAG('W', 'x', 'y', 'z'), 1), 6);
  FEEDV(L, pop(HSI_OP_POOL_FREE, 20, e1, 0, TAG('A', 'b', 'c', 'd'), 0x200), 7);  /* any process */
  CHECK_EQ(R_.nended, 1); CHECK_EQ(R_.ended[0], 0);
  R = hsi_life_recs(L);
  CHECK_EQ(R->n, 2);
  CHECK_EQ(R->kind[0], HSI_KIND_POOL);
  CHECK_EQ(HSI_REC_TAG(R, 0), TAG('A', 'b', 'c', 'd')); CHECK_EQ(HSI_REC_POOLTYPE(R, 0), 0x200);
  CHECK_EQ(R->ts_free[0], 20); CHECK_EQ(R->reason[0], HSI_END_FREE);
  CHECK_EQ(R->ts_free[1], HSI_TS_NEVER); CHECK_EQ(HSI_REC_TAG(R, 1), TAG('W', 'x', 'y', 'z'));
  CHECK_EQ(R->inst[0], 5); CHECK_EQ(R->inst[1], 6);
  /* the entry reused while live: the free was lost */
  FEEDV(L, pop(HSI_OP_POOL_ALLOC, 30, e2, 32, TAG('N', 'e', 'w', ' '), 1), 6);
  R = hsi_life_recs(L);
  CHECK_EQ(R->reason[1], HSI_END_REUSED); CHECK_EQ(R->ts_free[1], 30);
  CHECK_EQ(hsi_life_stats_get(L)->pool_alloc_over_live, 1);
  hsi_life_free(L);
}

TEST(odd_input) {
  hsi_life *L = hsi_life_new();
  const hsi_life_stats *st = hsi_life_stats_get(L);
  hsi_memop o = mk(HSI_OP_HEAP_OTHER, 5, 1, 1);
  FEED(L, o, 1);
  FEEDV(L, halloc(10, 1, H1, 0, 10), 1);      /* failed alloc */
  FEEDV(L, hfree(11, 1, H1, 0), 1);           /* free(NULL) */
  FEEDV(L, halloc(20, 1, H1, 0x100, 10), 1);
  FEEDV(L, hfree(15, 1, H1, 0x100), 1);       /* goes back in time: taken as 20 */
  CHECK_EQ(st->ignored, 2);
  CHECK_EQ(st->out_of_order, 1);
  CHECK_EQ(hsi_life_recs(L)->ts_free[0], 20);
  CHECK_EQ(st->ops[HSI_OP_HEAP_OTHER], 1);
  CHECK_EQ(hsi_life_feed(L, NULL, 1, NULL), HS_EARG);
  hsi_life_free(L);
}

/* The live map gives memory back as blocks are freed; records stay. */
TEST(memory_shrinks) {
  hsi_life *L = hsi_life_new();
  size_t i, n = 100000, peak, after;
  for (i = 0; i < n; i++) FEEDV(L, halloc((int64_t)i, 1, H1, 0x10000 + i * 16, 16), 1);
  peak = hsi_life_memory(L);
  CHECK_EQ(hsi_life_live(L), n);
  for (i = 0; i < n; i++) FEEDV(L, hfree((int64_t)(n + i), 1, H1, 0x10000 + i * 16), 1);
  after = hsi_life_memory(L);
  CHECK_EQ(hsi_life_live(L), 0);
  CHECK(after + 8 * n < peak);       /* the map held >= 8 bytes per live block */
  hsi_life_trim(L);
  CHECK(hsi_life_memory(L) <= after);
  CHECK(hsi_life_memory(L) < 56 * n + 600000);
  CHECK_EQ(hsi_life_recs(L)->n, n);
  CHECK_EQ(hsi_life_recs(L)->ts_free[n - 1], (int64_t)(2 * n - 1));
  hsi_life_free(L);
}

/*
** Random heap traffic against a plain model: a list of live blocks
** searched linearly.  Every record must come out identical.
*/
static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void) {
  rnd_state ^= rnd_state << 13; rnd_state ^= rnd_state >> 7; rnd_state ^= rnd_state << 17;
  return rnd_state;
}

struct mrec { uint32_t inst; uint64_t heap, addr, size; int64_t a, f; int reason; unsigned flags; };

/* NOPS operations over ninst instances, nheap heaps each and, when
   nthreads > 0, that many threads (else no thread ids): the instance,
   heap and thread tables grow past their first sizes when these pass 32. */
static void heap_model(uint32_t ninst, uint32_t nheap, uint32_t nthreads) {
  enum { NOPS = 20000, MAXLIVE = 4096 };
  hsi_life *L = hsi_life_new();
  static struct mrec m[NOPS * 2];
  static uint32_t live[MAXLIVE];
  size_t nm = 0, nlive = 0, i, bad = 0;
  uint64_t next_addr = 0x100000, next_unknown = 0x900000000ull;
  const hsi_recs *R;
  for (i = 0; i < NOPS; i++) {
    int64_t ts = (int64_t)i * 3;
    unsigned r = (unsigned)(rnd() % 100);
    uint32_t inst = 1 + (uint32_t)(rnd() % ninst);
    uint64_t heap = 0x1000 * (1 + rnd() % nheap);
    uint32_t tid = nthreads ? 1000 + 4 * (uint32_t)(rnd() % nthreads) : HS_NOID;
    if (r < 45 && nlive < MAXLIVE) {
      /* alloc: sometimes reuse a freed-looking address of another instance */
      uint64_t addr = next_addr, size = 1 + rnd() % 5000;
      next_addr += 16;
      FEEDV(L, halloc(ts, tid, heap, addr, size), inst);
      m[nm].inst = inst; m[nm].heap = heap; m[nm].addr = addr; m[nm].size = size;
      m[nm].a = ts; m[nm].f = HSI_TS_NEVER; m[nm].reason = HSI_END_NONE; m[nm].flags = 0;
      live[nlive++] = (uint32_t)nm++;
    } else if (r < 85 && nlive) {
      size_t k = rnd() % nlive;
      struct mrec *x = &m[live[k]];
      FEEDV(L, hfree(ts, tid, x->heap, x->addr), x->inst);
      x->f = ts; x->reason = HSI_END_FREE;
      live[k] = live[--nlive];
    } else if (r < 95 && nlive) {
      size_t k = rnd() % nlive;
      struct mrec *x = &m[live[k]];
      uint64_t naddr = (rnd() & 1) ? x->addr : next_addr, nsize = 1 + rnd() % 9000;
      if (naddr == next_addr) next_addr += 16;
      FEEDV(L, hrealloc(ts, tid, x->heap, naddr, nsize, x->addr, x->size), x->inst);
      x->f = ts; x->reason = HSI_END_REALLOC;
      m[nm] = *x;
      m[nm].addr = naddr; m[nm].size = nsize; m[nm].a = ts; m[nm].f = HSI_TS_NEVER;
      m[nm].reason = HSI_END_NONE; m[nm].flags = HSI_RF_REALLOC;
      live[k] = (uint32_t)nm++;
    } else {
      uint64_t addr = next_unknown;
      next_unknown += 16;
      FEEDV(L, hfree(ts, tid, heap, addr), inst);
      m[nm].inst = inst; m[nm].heap = heap; m[nm].addr = addr; m[nm].size = 0;
      m[nm].a = HSI_TS_BEFORE; m[nm].f = ts; m[nm].reason = HSI_END_FREE;
      m[nm].flags = HSI_RF_BEFORE | HSI_RF_SIZE_UNKNOWN;
      nm++;
    }
  }
  R = hsi_life_recs(L);
  CHECK_EQ(R->n, nm);
  for (i = 0; i < nm && i < R->n; i++) {
    if (R->inst[i] != m[i].inst || R->key[i] != m[i].heap || R->addr[i] != m[i].addr ||
        R->size[i] != m[i].size || R->ts_alloc[i] != m[i].a || R->ts_free[i] != m[i].f ||
        R->reason[i] != m[i].reason || R->flags[i] != m[i].flags) {
      if (bad++ < 5) fprintf(stderr, "record %zu differs from the model\n", i);
    }
  }
  CHECK_EQ(bad, 0);
  CHECK_EQ(hsi_life_live(L), nlive);
  CHECK_EQ(hsi_life_stats_get(L)->heap_realloc_summary, 0);   /* new addresses are never an Alloc's */
  hsi_life_free(L);
}

TEST(random_against_model) {
  heap_model(3, 2, 0);
}

/* Many processes, heaps and threads: the tables grow, and every block is
   still found in its own heap of its own instance. */
TEST(random_many_against_model) {
  heap_model(150, 5, 400);
}

/*
** State kept per thread, heap and instance survives the growth of their
** tables: a moving realloc's Alloc and Free (per thread) are recognised
** with the summary that follows though hundreds of threads, heaps and
** processes came in between (each table grew several times), and a
** commit made before is ended by its release after (per instance).
*/
TEST(state_across_growth) {
  hsi_life *L = hsi_life_new();
  uint32_t k;
  FEEDV(L, vop(HSI_OP_VALLOC, 0, 100, 0x700000, 0x2000, HS_MEM_RESERVE | HS_MEM_COMMIT), 1);
  FEEDV(L, halloc(1, 7, H1, 0x1000, 16), 1);
  FEEDV(L, halloc(2, 7, H1, 0x2000, 32), 1);     /* moving realloc 0x1000 -> 0x2000 on thread 7 */
  FEEDV(L, hfree(3, 7, H1, 0x1000), 1);
  for (k = 0; k < 300; k++) {                      /* other threads, heaps, instances */
    hsi_memop op = halloc(4 + k, 100 + k, 0x100000 + 0x1000 * (uint64_t)k, 0x5000, 8);
    FEED(L, op, 2 + k);
  }
  FEEDV(L, hrealloc(400, 7, H1, 0x2000, 32, 0x1000, 16), 1);
  CHECK_EQ(hsi_life_stats_get(L)->heap_realloc_summary, 1);
  CHECK_EQ(hsi_life_stats_get(L)->heap_realloc_lone, 0);
  CHECK_EQ(hsi_life_recs(L)->reason[1], HSI_END_REALLOC);
  CHECK(hsi_life_recs(L)->flags[2] & HSI_RF_REALLOC);
  FEEDV(L, vop(HSI_OP_VFREE, 401, 100, 0x700000, 0x2000, HS_MEM_RELEASE), 1);
  CHECK_EQ(hsi_life_recs(L)->reason[0], HSI_END_RELEASE);      /* the commit, not a before-trace record */
  CHECK_EQ(hsi_life_recs(L)->ts_free[0], 401);
  CHECK_EQ(hsi_life_stats_get(L)->vm_release_unknown, 0);
  for (k = 0; k < 300; k++) {                      /* every block found in its heap and instance */
    hsi_memop op = hfree(500 + k, 100 + k, 0x100000 + 0x1000 * (uint64_t)k, 0x5000);
    FEED(L, op, 2 + k);
  }
  CHECK_EQ(hsi_life_stats_get(L)->heap_free_unknown, 0);
  CHECK_EQ(hsi_life_live(L), 1);                   /* the realloc's new block */
  hsi_life_free(L);
}

/*
** Random VirtualAlloc traffic over a 200-byte space, against a model that
** keeps one cell per byte: its reservation (0 = none), whether the trace
** knows its state, and its commit time if committed.  The tracker is
** byte-granular, so odd sizes and edges one byte apart are exercised.
*/
#define VCELLS 200
#define VBASE 0x10000u
struct vcell { int resv, known, committed; int64_t t; };

static int vm_check(hsi_life *L, const struct vcell *c, uint32_t inst) {
  const hsi_recs *R = hsi_life_recs(L);
  static int cover[VCELLS];
  static int64_t ct[VCELLS];
  size_t i;
  int k, bad = 0;
  for (k = 0; k < VCELLS; k++) cover[k] = 0;
  for (i = 0; i < R->n; i++) {
    uint64_t a;
    if (R->kind[i] != HSI_KIND_VIRTUAL || R->inst[i] != inst) continue;
    if (!R->size[i] || R->ts_free[i] < R->ts_alloc[i]) bad++;
    if (R->ts_free[i] != HSI_TS_NEVER) continue;
    for (a = R->addr[i]; a < R->addr[i] + R->size[i]; a++) {
      if (a < VBASE || a >= VBASE + VCELLS) { bad++; break; }
      cover[a - VBASE]++;
      ct[a - VBASE] = R->ts_alloc[i];
    }
  }
  for (k = 0; k < VCELLS; k++) {
    if (cover[k] != (c[k].committed ? 1 : 0)) bad++;
    else if (cover[k] && ct[k] != c[k].t) bad++;
  }
  return bad;
}

TEST(random_virtual_against_model) {
  hsi_life *L = hsi_life_new();
  static struct vcell c[VCELLS];
  int nextresv = 1, i, bad = 0;
  uint64_t before = 0, relbefore = 0;
  memset(c, 0, sizeof c);
  for (i = 0; i < 6000; i++) {
    int64_t ts = 10 + i;
    int a = (int)(rnd() % VCELLS), len = 1 + (int)(rnd() % 40), b, k, op = (int)(rnd() % 100);
    if (a + len > VCELLS) len = VCELLS - a;
    b = a + len;
    if (op < 15) {                       /* reserve (+commit) on unreserved, uncommitted bytes */
      int ok = 1, commit = (int)(rnd() & 1);
      for (k = a; k < b; k++) if (c[k].resv || c[k].committed) ok = 0;
      if (!ok) continue;
      FEEDV(L, vop(HSI_OP_VALLOC, ts, 7, VBASE + a, len, HS_MEM_RESERVE | (commit ? HS_MEM_COMMIT : 0)), 1);
      for (k = a; k < b; k++) {
        c[k].resv = nextresv; c[k].known = 1;
        if (commit) { c[k].committed = 1; c[k].t = ts; }
      }
      nextresv++;
    } else if (op < 50) {                /* commit anywhere */
      uint32_t runs = 0;
      FEEDV(L, vop(HSI_OP_VALLOC, ts, 7, VBASE + a, len, HS_MEM_COMMIT), 1);
      for (k = a; k < b; k++)
        if (!c[k].committed && (k == a || c[k - 1].committed)) runs++;
      for (k = a; k < b; k++)
        if (!c[k].committed) { c[k].committed = 1; c[k].known = 1; c[k].t = ts; }
      if (R_.count != runs) bad++;
    } else if (op < 85) {                /* decommit anywhere */
      FEEDV(L, vop(HSI_OP_VFREE, ts, 7, VBASE + a, len, HS_MEM_DECOMMIT), 1);
      for (k = a; k < b; k++) {
        if (!c[k].committed && !c[k].known) before++;
        c[k].committed = 0;
        c[k].known = 1;
      }
    } else {                             /* release, sometimes size 0 at a reservation base */
      int lo = a, hi = b, size0 = 0, r;
      if ((rnd() & 3) == 0 && c[a].resv && (a == 0 || c[a - 1].resv != c[a].resv)) size0 = 1;
      if (c[a].resv) {                   /* a release ends all of its reservation */
        r = c[a].resv;
        while (lo > 0 && c[lo - 1].resv == r) lo--;
        if (size0) hi = a + 1;
        while (hi < VCELLS && c[hi].resv == r) hi++;
        if (!size0 && hi < b) hi = b;
      } else if (size0) continue;
      FEEDV(L, vop(HSI_OP_VFREE, ts, 7, VBASE + a, size0 ? 0 : len, HS_MEM_RELEASE), 1);
      /* released bytes the trace knew nothing about were committed before it;
         released bytes are free, and the tracker forgets them */
      for (k = lo; k < hi; k++) {
        if (!c[k].committed && !c[k].known) relbefore++;
        c[k].resv = 0; c[k].committed = 0; c[k].known = 0;
      }
    }
    if (i % 97 == 0) bad += vm_check(L, c, 1);
  }
  bad += vm_check(L, c, 1);
  CHECK_EQ(bad, 0);
  CHECK_EQ(hsi_life_stats_get(L)->vm_decommit_unknown_bytes, before);
  CHECK_EQ(hsi_life_stats_get(L)->vm_release_unknown_bytes, relbefore);
  CHECK(relbefore > 0);
  CHECK(hsi_life_stats_get(L)->vm_splits > 100);
  CHECK(before > 0);
  hsi_life_free(L);
}

/*
** The moving-realloc summary needs its Alloc and Free on the ReAlloc's own
** heap: the same addresses allocated and freed on another heap just before
** are another call's, so the ReAlloc is a lone one on its heap.
*/
TEST(realloc_summary_same_heap) {
  hsi_life *L = hsi_life_new();
  const hsi_recs *R;
  const hsi_life_stats *st = hsi_life_stats_get(L);
  FEEDV(L, halloc(10, 5, H1, 0x1000, 100), 1);      /* rec 0: the old block, on H1 */
  FEEDV(L, halloc(20, 5, H2, 0x5000, 300), 1);      /* rec 1: on H2 */
  FEEDV(L, hfree(21, 5, H2, 0x1000), 1);            /* rec 2: H2's 0x1000, before the trace */
  FEEDV(L, hrealloc(22, 5, H1, 0x5000, 300, 0x1000, 100), 1);   /* rec 3 */
  CHECK_EQ(st->heap_realloc_summary, 0);
  CHECK_EQ(st->heap_realloc_lone, 1);
  CHECK_EQ(R_.count, 1); CHECK_EQ(R_.first, 3);
  CHECK_EQ(R_.nended, 1); CHECK_EQ(R_.ended[0], 0);
  R = hsi_life_recs(L);
  CHECK_EQ(R->ts_free[0], 22); CHECK_EQ(R->reason[0], HSI_END_REALLOC);
  CHECK_EQ(R->key[3], H1); CHECK_EQ(R->addr[3], 0x5000);
  CHECK(!(R->flags[1] & HSI_RF_REALLOC));
  CHECK_EQ(hsi_life_live(L), 2);   /* H2's 0x5000 and H1's 0x5000 */
  hsi_life_free(L);
}

/*
** The recent-free cache is per process instance: heap handles repeat
** across processes (each has its default heap at a similar address), so a
** Free in process 2 of an address process 1 freed is process 2's block,
** allocated before the trace, not a double free.  Instance 0x10001 shares
** instance 1's slot of the cache (its 65,536 slots are indexed by address,
** instance and heap hashed), so what the slot holds must be checked too.
*/
TEST(double_free_per_process) {
  hsi_life *L = hsi_life_new();
  const hsi_recs *R;
  const hsi_life_stats *st = hsi_life_stats_get(L);
  FEEDV(L, halloc(10, 1, H1, 0x1000, 100), 1);
  FEEDV(L, hfree(20, 1, H1, 0x1000), 1);
  FEEDV(L, hfree(30, 9, H1, 0x1000), 0x10001);
  CHECK_EQ(st->heap_double_free, 0);
  CHECK_EQ(st->heap_free_unknown, 1);
  CHECK_EQ(R_.nended, 1); CHECK_EQ(R_.ended[0], 1);
  R = hsi_life_recs(L);
  CHECK_EQ(R->n, 2);
  CHECK_EQ(R->inst[1], 0x10001); CHECK_EQ(R->flags[1] & HSI_RF_BEFORE, HSI_RF_BEFORE);
  CHECK_EQ(R->ts_free[1], 30);
  /* and in another process whose slot differs */
  FEEDV(L, hfree(35, 9, H1, 0x1000), 2);
  CHECK_EQ(st->heap_double_free, 0);
  CHECK_EQ(hsi_life_recs(L)->inst[2], 2);
  /* in process 0x10001 it is one now */
  FEEDV(L, hfree(40, 9, H1, 0x1000), 0x10001);
  CHECK_EQ(st->heap_double_free, 1);
  hsi_life_free(L);
}

/*
** Virtual memory odd cases:
**   - a decommit of size 0 not at the region's base ends the pages from its
**     address to the region's end (the pages below stay committed);
**   - a reservation over committed pages ends them as reused (their release
**     was lost), not as released;
**   - a DCEnd rundown (subop 129, at the trace's end) says nothing: a
**     release after it of a region the trace never saw is before-trace
**     memory, as without it (a DCStart rundown, 128, makes the region known);
**   - pages of a rundown region decommitted once are known decommitted: a
**     second decommit makes no second before-trace record.
*/
TEST(virtual_odd_cases) {
  hsi_life *L = hsi_life_new();
  const hsi_recs *R;
  const hsi_life_stats *st = hsi_life_stats_get(L);
  FEEDV(L, vop(HSI_OP_VALLOC, 10, 7, 0x100000, 0x10000, HS_MEM_RESERVE | HS_MEM_COMMIT), 1);  /* 0 */
  FEEDV(L, vop(HSI_OP_VFREE, 11, 7, 0x108000, 0, HS_MEM_DECOMMIT), 1);   /* 1: the piece below */
  CHECK_EQ(R_.nended, 1); CHECK_EQ(R_.ended[0], 0);
  R = hsi_life_recs(L);
  CHECK_EQ(R->n, 2);
  CHECK_EQ(R->addr[0], 0x108000); CHECK_EQ(R->size[0], 0x8000); CHECK_EQ(R->reason[0], HSI_END_DECOMMIT);
  CHECK_EQ(R->addr[1], 0x100000); CHECK_EQ(R->size[1], 0x8000); CHECK_EQ(R->ts_free[1], HSI_TS_NEVER);
  CHECK_EQ(R->ts_alloc[1], 10);
  /* reserved again over the committed piece */
  FEEDV(L, vop(HSI_OP_VALLOC, 20, 7, 0x100000, 0x10000, HS_MEM_RESERVE), 1);
  CHECK_EQ(st->vm_reserve_over_commit, 1);
  R = hsi_life_recs(L);
  CHECK_EQ(R->ts_free[1], 20); CHECK_EQ(R->reason[1], HSI_END_REUSED);
  /* DCEnd, then a release of that region: before-trace memory */
  FEEDV(L, vrundown(30, 7, 0x500000, 0x4000, HS_MEM_RESERVE | HS_MEM_COMMIT, 129), 1);
  FEEDV(L, vop(HSI_OP_VFREE, 31, 7, 0x500000, 0x4000, HS_MEM_RELEASE), 1);   /* 2 */
  CHECK_EQ(st->vm_release_unknown, 1);
  R = hsi_life_recs(L);
  CHECK_EQ(R->n, 3);
  CHECK_EQ(R->flags[2], HSI_RF_BEFORE); CHECK_EQ(R->size[2], 0x4000);
  /* DCStart: the same release says nothing */
  FEEDV(L, vrundown(40, 7, 0x600000, 0x4000, HS_MEM_RESERVE | HS_MEM_COMMIT, 128), 1);
  FEEDV(L, vop(HSI_OP_VFREE, 41, 7, 0x600000, 0x4000, HS_MEM_RELEASE), 1);
  CHECK_EQ(st->vm_release_unknown, 1);
  CHECK_EQ(hsi_life_recs(L)->n, 3);
  /* a rundown region decommitted twice: one before-trace record */
  FEEDV(L, vrundown(50, 7, 0x700000, 0x10000, HS_MEM_RESERVE | HS_MEM_COMMIT, 128), 1);
  FEEDV(L, vop(HSI_OP_VFREE, 51, 7, 0x700000, 0x2000, HS_MEM_DECOMMIT), 1);   /* 3 */
  CHECK_EQ(R_.nended, 1);
  FEEDV(L, vop(HSI_OP_VFREE, 52, 7, 0x700000, 0x2000, HS_MEM_DECOMMIT), 1);
  CHECK_EQ(R_.nended, 0);
  CHECK_EQ(st->vm_decommit_unknown, 1);
  CHECK_EQ(st->vm_decommit_nothing, 1);
  CHECK_EQ(hsi_life_recs(L)->n, 4);
  hsi_life_free(L);
}

/*
** A pool free of an entry the trace never saw allocated: a before-trace
** record whose size is the event's when it carries one, unknown when it
** carries 0 (the free events of older layouts have no size).
*/
TEST(pool_free_before_trace) {
  hsi_life *L = hsi_life_new();
  const hsi_recs *R;
  FEEDV(L, pop(HSI_OP_POOL_FREE, 10, 0xFFFF800000001000ull, 96, TAG('A', 'b', 'c', 'd'), 1), 3);
  FEEDV(L, pop(HSI_OP_POOL_FREE, 11, 0xFFFF800000002000ull, 0, TAG('A', 'b', 'c', 'd'), 1), 3);
  R = hsi_life_recs(L);
  CHECK_EQ(R->n, 2);
  CHECK_EQ(R->flags[0], HSI_RF_BEFORE); CHECK_EQ(R->size[0], 96);
  CHECK_EQ(R->flags[1], HSI_RF_BEFORE | HSI_RF_SIZE_UNKNOWN); CHECK_EQ(R->size[1], 0);
  CHECK_EQ(hsi_life_stats_get(L)->pool_free_unknown, 2);
  hsi_life_free(L);
}

/* Whose live block is (heap, address): the one instance holding it, else
   none (no block, or blocks in two instances: a guess would be wrong). */
TEST(heap_owner) {
  hsi_life *L = hsi_life_new();
  FEEDV(L, halloc(10, 1, H1, 0x1000, 16), 3);
  FEEDV(L, halloc(11, 1, H1, 0x2000, 16), 3);
  FEEDV(L, halloc(12, 1, H1, 0x2000, 16), 4);
  CHECK_EQ(hsi_life_heap_owner(L, H1, 0x1000), 3);
  CHECK_EQ(hsi_life_heap_owner(L, H1, 0x2000), 0);
  CHECK_EQ(hsi_life_heap_owner(L, H1, 0x3000), 0);
  CHECK_EQ(hsi_life_heap_owner(L, H2, 0x1000), 0);
  FEEDV(L, hfree(13, 1, H1, 0x2000), 4);
  CHECK_EQ(hsi_life_heap_owner(L, H1, 0x2000), 3);
  hsi_life_free(L);
}

/*
** Instances that exited leave their heaps' handle chains, which the owner
** of a free without ids is looked for in: the middle of a chain, its
** head, all of it; and a thousand short processes one after the other,
** each of one heap at one handle, cost a lookup a probe or two (every
** heap that ever was: half a million).
*/
TEST(heap_owner_after_exits) {
  hsi_life *L = hsi_life_new();
  uint32_t i;
  uint64_t before;
  FEEDV(L, halloc(10, 1, H1, 0x1000, 16), 3);
  FEEDV(L, halloc(11, 1, H1, 0x2000, 16), 4);
  FEEDV(L, halloc(12, 1, H1, 0x3000, 16), 5);
  hsi_life_exited(L, 4);                                  /* the middle */
  CHECK_EQ(hsi_life_heap_owner(L, H1, 0x1000), 3);
  CHECK_EQ(hsi_life_heap_owner(L, H1, 0x2000), 0);
  CHECK_EQ(hsi_life_heap_owner(L, H1, 0x3000), 5);
  hsi_life_exited(L, 5);                                  /* the head, the newest */
  CHECK_EQ(hsi_life_heap_owner(L, H1, 0x1000), 3);
  CHECK_EQ(hsi_life_heap_owner(L, H1, 0x3000), 0);
  hsi_life_exited(L, 3);
  CHECK_EQ(hsi_life_heap_owner(L, H1, 0x1000), 0);
  FEEDV(L, halloc(13, 1, H1, 0x1000, 16), 6);             /* a new one at the handle */
  CHECK_EQ(hsi_life_heap_owner(L, H1, 0x1000), 6);
  hsi_life_exited(L, 6);
  before = hsi_life_stats_get(L)->heap_owner_heaps;
  for (i = 0; i < 1000; i++) {
    FEEDV(L, halloc(100 + i, 1, H2, 0x1000, 16), 100 + i);
    CHECK_EQ(hsi_life_heap_owner(L, H2, 0x1000), 100 + i);
    hsi_life_exited(L, 100 + i);
  }
  CHECK(hsi_life_stats_get(L)->heap_owner_heaps - before <= 2 * 1000);
  hsi_life_free(L);
}

/*
** Process ends among many instances sharing heap handles: each ends its
** own heaps' blocks and no other's (each instance keeps a list of its
** heaps), and a block's owner is found among the heaps of its handle.
*/
TEST(process_end_among_many) {
  hsi_life *L = hsi_life_new();
  enum { NI = 50 };
  uint32_t i, k, order[NI];
  size_t live = 0;
  for (i = 0; i < NI; i++)
    for (k = 0; k < 3; k++) {
      hsi_memop a = halloc(1 + i * 3 + k, 10 + i, H1 * (k + 1), 0x1000 + 0x100 * i, 16);
      hsi_memop b = halloc(1 + i * 3 + k, 10 + i, H1 * (k + 1), 0x9000, 16);   /* one address in every heap */
      FEED(L, a, 1 + i);
      FEED(L, b, 1 + i);
      live += 2;
    }
  CHECK_EQ(hsi_life_live(L), live);
  CHECK_EQ(hsi_life_heap_owner(L, H1 * 2, 0x1000 + 0x100 * 7), 8);   /* only instance 8 holds it */
  CHECK_EQ(hsi_life_heap_owner(L, H1 * 2, 0x9000), 0);               /* every instance does */
  CHECK_EQ(hsi_life_heap_owner(L, H1 * 4, 0x1000), 0);               /* no heap of that handle */
  for (i = 0; i < NI; i++) order[i] = (i * 17 + 5) % NI;             /* 17 is prime to 50: each once */
  for (i = 0; i < NI; i++) {
    const hsi_recs *R;
    size_t r, ended = 0, others_open = 0;
    CHECK_EQ(hsi_life_process_end(L, 1 + order[i], 1000 + i, &R_), 0);
    CHECK_EQ(R_.nended, 6);
    live -= 6;
    CHECK_EQ(hsi_life_live(L), live);
    R = hsi_life_recs(L);
    for (r = 0; r < R->n; r++) {
      if (R->inst[r] == 1 + order[i]) ended += R->reason[r] == HSI_END_PROCESS_END && R->ts_free[r] == 1000 + (int64_t)i;
      else others_open += R->ts_free[r] == HSI_TS_NEVER;
    }
    CHECK_EQ(ended, 6);
    CHECK_EQ(others_open, live);
  }
  CHECK_EQ(hsi_life_heap_owner(L, H1 * 2, 0x9000), 0);
  hsi_life_free(L);
}

int main(void) {
  RUN(heap_pairing);
  RUN(heap_owner_after_exits);
  RUN(realloc_in_place);
  RUN(realloc_moving_summary);
  RUN(realloc_lone);
  RUN(free_before_trace);
  RUN(double_free);
  RUN(heap_destroy);
  RUN(process_end);
  RUN(pid_reuse);
  RUN(virtual_ranges);
  RUN(virtual_release);
  RUN(virtual_decommit_before_trace);
  RUN(virtual_split_late_stack);
  RUN(pool_by_tag);
  RUN(odd_input);
  RUN(memory_shrinks);
  RUN(realloc_summary_same_heap);
  RUN(double_free_per_process);
  RUN(virtual_odd_cases);
  RUN(pool_free_before_trace);
  RUN(heap_owner);
  RUN(process_end_among_many);
  RUN(random_against_model);
  RUN(random_many_against_model);
  RUN(state_across_growth);
  RUN(random_virtual_against_model);
  return UNIT_DONE();
}
