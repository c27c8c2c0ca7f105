/*
** test_analysis.c -- the whole chain on synthetic real-format traces:
** writer -> reader -> procmap, memory decoders, lifetimes, stacks.
** Each scenario is small enough to compute its answer by hand.
*/
#include <unistd.h>
#include "unit.h"
#include "heapscript.h"
#include "writer.h"
#include "memev.h"
#include "analysis.h"
#include "attrib.h"
#include "query.h"

static char path[512];

static const char *tmp_path(const char *name) {
  return unit_tmp_path(path, sizeof path, "analysis-%s.etl", name);
}

/* One heap/VirtualAlloc/pool event through the shared encoder, with header
   hk (0: SYSTEM, or PERFINFO for VirtualAlloc, which has no ids [I]). */
static void mem_as(hsi_writer *w, int ptr, int hk, const hsi_memop *op) {
  uint8_t pl[128];
  int group = 0, type = 0;
  long len = hsi_memev_encode(op, 0, 0, ptr, pl, sizeof pl, &group, &type);
  CHECK(len > 0);
  if (!hk && group == 0x02) hk = ptr == 8 ? HS_HT_PERFINFO64 : HS_HT_PERFINFO32;
  else if (!hk) hk = ptr == 8 ? HS_HT_SYSTEM64 : HS_HT_SYSTEM32;
  CHECK_EQ(hsi_writer_kernel(w, 0, hk, group, type, hsi_memev_version(group, type), op->pid, op->tid,
                             op->ts, pl, (size_t)len), 0);
}

/* ... then its stack. */
static void mem(hsi_writer *w, int ptr, hsi_memop *op, const uint64_t *frames, size_t n) {
  mem_as(w, ptr, 0, op);
  if (n) CHECK_EQ(hsi_writer_stack(w, 1, op->ts + 3, op->ts, op->pid, op->tid, frames, n, 8), 0);
}

static hsi_analysis *analyse_in(const char *p, const hsi_analysis_scope *sc) {
  hs_reader *r;
  hsi_analysis *a = NULL;
  char err[256];
  CHECK_EQ(hs_reader_open(&r, &p, 1, NULL, err, sizeof err), 0);
  CHECK_EQ(hsi_analysis_run(r, sc, &a, err, sizeof err), 0);
  hs_reader_close(r);
  return a;
}

static hsi_analysis *analyse(const char *p) { return analyse_in(p, NULL); }

TEST(heap_chain_with_stacks_and_images) {
  hsi_writer *w;
  hsi_writer_opts o;
  hsi_memop op;
  hsi_analysis *a;
  const hsi_recs *rs;
  char frame[128];
  uint64_t f1[] = { 0x7ff800011234ull, 0x7ff700002000ull };   /* ntdll, app */
  uint64_t f2[] = { 0x7ff800011234ull, 0x7ff700003000ull };
  int i;
  memset(&o, 0, sizeof o);
  o.cpus = 2;
  CHECK_EQ(hsi_writer_open(&w, tmp_path("heap"), &o, NULL, 0), 0);
  CHECK_EQ(hsi_writer_process(w, 0, 3, 8, 1000, 4, 100, "app.exe", "app.exe --leak"), 0);
  CHECK_EQ(hsi_writer_image(w, 0, 3, 8, 1000, 0x7ff700000000ull, 0x10000, 101, "\\Device\\HarddiskVolume3\\app.exe"), 0);
  CHECK_EQ(hsi_writer_image(w, 0, 3, 8, 1000, 0x7ff800000000ull, 0x200000, 102, "\\SystemRoot\\System32\\ntdll.dll"), 0);
  memset(&op, 0, sizeof op);
  op.pid = 1000; op.tid = 1001; op.heap = 0x10000;
  /* ten 40-byte blocks: the even ones freed, the odd ones leaked */
  for (i = 0; i < 10; i++) {
    op.kind = HSI_OP_HEAP_ALLOC; op.ts = 1000 + 100 * i; op.addr = 0x20000 + 64 * (uint64_t)i; op.size = 40;
    mem(w, 8, &op, (i & 1) ? f1 : f2, 2);
  }
  for (i = 0; i < 10; i += 2) {
    op.kind = HSI_OP_HEAP_FREE; op.ts = 5000 + 10 * i; op.addr = 0x20000 + 64 * (uint64_t)i; op.size = 0;
    mem(w, 8, &op, NULL, 0);
  }
  /* a free of a block the trace never saw allocated */
  op.kind = HSI_OP_HEAP_FREE; op.ts = 6000; op.addr = 0x99990; mem(w, 8, &op, NULL, 0);
  CHECK_EQ(hsi_writer_close(w), 0);

  a = analyse(path);
  if (!a) return;
  rs = hsi_life_recs(hsi_analysis_life(a));
  CHECK_EQ(hsi_analysis_counts_get(a)->memory_events, 16);
  CHECK_EQ(rs->n, 11);
  for (i = 0; i < 10; i++) {
    CHECK_EQ(rs->size[i], 40);
    CHECK_EQ(rs->ts_alloc[i], 1000 + 100 * i);
    CHECK_EQ(rs->ts_free[i], (i & 1) ? HSI_TS_NEVER : 5000 + 10 * i);
    CHECK(rs->stk_alloc[i] != 0);
  }
  CHECK(rs->stk_alloc[1] == rs->stk_alloc[3]);        /* interned */
  CHECK(rs->stk_alloc[0] != rs->stk_alloc[1]);
  CHECK(rs->flags[10] & HSI_RF_BEFORE);
  CHECK(rs->flags[10] & HSI_RF_SIZE_UNKNOWN);
  {
    size_t n;
    hsi_procmap *pm = hsi_analysis_procmap(a);
    const uint64_t *fr = hsi_stacks_frames(hsi_analysis_stacks(a), rs->stk_alloc[1], &n);
    CHECK_EQ(n, 2);
    hsi_syms_format(hsi_analysis_syms(a), rs->inst[1], fr[0], rs->ts_alloc[1], frame, sizeof frame);
    CHECK_STR(frame, "ntdll.dll+0x11234");
    hsi_syms_format(hsi_analysis_syms(a), rs->inst[1], fr[1], rs->ts_alloc[1], frame, sizeof frame);
    CHECK_STR(frame, "app.exe+0x2000");
    CHECK_STR(hsi_procmap_name(pm, rs->inst[1]), "app.exe");
  }
  {
    /* the whole trace: 5 x 40 leaked (AIFO), 5 x 40 transient (AIFI) */
    hsi_agg g;
    int64_t t1, t2;
    hsi_life_span(hsi_analysis_life(a), &t1, &t2);
    CHECK_EQ(hsi_query_agg(hsi_analysis_life(a), NULL, t1, t2, HSI_AGG_PEAK, &g), 0);
    CHECK_EQ(g.cls_count[HSI_AIFO], 5); CHECK_EQ(g.cls_bytes[HSI_AIFO], 200);
    CHECK_EQ(g.transient, 200);
    CHECK_EQ(g.peak, 400); CHECK_EQ(g.peak_ts, 1900);
    CHECK_EQ(g.cls_count[HSI_AOFI], 1);               /* the before-trace free */
  }
  hsi_analysis_free(a);
  {
    /* the same trace under scopes: kind, process name (ignoring case), pid */
    static const char *const names[] = { "APP.EXE" };
    static const uint32_t pids[] = { 999, 1000 }, nopid[] = { 999 };
    hsi_analysis_scope sc;
    memset(&sc, 0, sizeof sc);
    sc.kinds = 1u << HSI_KIND_VIRTUAL;
    if ((a = analyse_in(path, &sc)) != NULL) {
      CHECK_EQ(hsi_life_recs(hsi_analysis_life(a))->n, 0);
      CHECK_EQ(hsi_analysis_counts_get(a)->out_of_scope, 16);
      hsi_analysis_free(a);
    }
    memset(&sc, 0, sizeof sc);
    sc.names = names; sc.nnames = 1; sc.pids = pids; sc.npids = 2;
    if ((a = analyse_in(path, &sc)) != NULL) {
      CHECK_EQ(hsi_life_recs(hsi_analysis_life(a))->n, 11);
      CHECK_EQ(hsi_analysis_counts_get(a)->out_of_scope, 0);
      hsi_analysis_free(a);
    }
    sc.pids = nopid; sc.npids = 1;
    if ((a = analyse_in(path, &sc)) != NULL) {
      CHECK_EQ(hsi_life_recs(hsi_analysis_life(a))->n, 0);
      hsi_analysis_free(a);
    }
  }
  remove(path);
}

TEST(virtualalloc_pool_and_process_end_32bit) {
  hsi_writer *w;
  hsi_writer_opts o;
  hsi_memop op;
  hsi_analysis *a;
  const hsi_recs *rs;
  size_t i, nva = 0, npool = 0;
  uint64_t vbytes = 0;
  memset(&o, 0, sizeof o);
  o.cpus = 1; o.pointer_size = 4;
  CHECK_EQ(hsi_writer_open(&w, tmp_path("va"), &o, NULL, 0), 0);
  CHECK_EQ(hsi_writer_process(w, 0, 1, 4, 200, 4, 10, "va.exe", NULL), 0);
  memset(&op, 0, sizeof op);
  op.pid = 200; op.tid = 201;
  op.kind = HSI_OP_VALLOC; op.ts = 100; op.addr = 0x100000; op.size = 0x10000; op.flags = HS_MEM_COMMIT | HS_MEM_RESERVE;
  mem(w, 4, &op, NULL, 0);
  /* decommit the middle page: two pieces remain, with the first commit time */
  op.kind = HSI_OP_VFREE; op.ts = 200; op.addr = 0x104000; op.size = 0x1000; op.flags = HS_MEM_DECOMMIT;
  mem(w, 4, &op, NULL, 0);
  op.kind = HSI_OP_POOL_ALLOC; op.ts = 300; op.addr = 0x80001000; op.size = 64;
  op.tag = 'L' | 'e' << 8 | 'a' << 16 | 'k' << 24; op.pool_type = 0x200; op.flags = 0;
  mem(w, 4, &op, NULL, 0);
  CHECK_EQ(hsi_writer_process(w, 0, 2, 4, 200, 4, 400, "va.exe", NULL), 0);
  CHECK_EQ(hsi_writer_close(w), 0);

  a = analyse(path);
  if (!a) return;
  rs = hsi_life_recs(hsi_analysis_life(a));
  for (i = 0; i < rs->n; i++) {
    if (rs->kind[i] == HSI_KIND_VIRTUAL && rs->ts_alloc[i] == 100) {
      nva++;
      if (rs->ts_free[i] == 200) CHECK_EQ(rs->size[i], 0x1000);
      /* the process's exit frees nothing (LIFETIMES.md): the pieces stay outstanding, as in WPA */
      else { vbytes += rs->size[i]; CHECK_EQ(rs->reason[i], HSI_END_NONE); CHECK_EQ(rs->ts_free[i], HSI_TS_NEVER); }
    }
    if (rs->kind[i] == HSI_KIND_POOL) {
      npool++;
      CHECK_EQ(HSI_REC_TAG(rs, i), op.tag);
      CHECK_EQ(rs->ts_free[i], HSI_TS_NEVER);          /* pool outlives the process */
    }
  }
  CHECK_EQ(nva, 3);
  CHECK_EQ(vbytes, 0xF000);
  CHECK_EQ(npool, 1);
  CHECK_EQ(hsi_analysis_counts_get(a)->process_ends, 1);
  hsi_analysis_free(a);
  remove(path);
}

/* A trace of 2 CPUs at tmp_path(name) with app.exe (pid 1000) started;
   NULL when it cannot be written. */
static hsi_writer *app_trace(const char *name) {
  hsi_writer *w = NULL;
  hsi_writer_opts o;
  memset(&o, 0, sizeof o);
  o.cpus = 2;
  CHECK_EQ(hsi_writer_open(&w, tmp_path(name), &o, NULL, 0), 0);
  if (w) CHECK_EQ(hsi_writer_process(w, 0, 3, 8, 1000, 4, 100, "app.exe", "app.exe"), 0);
  return w;
}

/* Records of the analysis with an alloc stack; *n all its records. */
static size_t alloc_stacks(hsi_analysis *a, size_t *n) {
  const hsi_recs *rs = hsi_life_recs(hsi_analysis_life(a));
  size_t i, stk = 0;
  for (i = 0; i < rs->n; i++) stk += rs->stk_alloc[i] != 0;
  *n = rs->n;
  return stk;
}

/*
** The probes (analysis.c): a kind whose events get StackWalks keeps
** asking, one whose events get none stops after 4096 targets once its
** first is 100 ms old (a tenth of the matcher's window: 1,000,000 ticks
** here).  Heap
** allocs are seen first; pool allocs start later and must be seen on
** their own (their probe opens after the heap's has closed); heap frees
** never get a stack.  They come every 3,000 ticks: the 4096th is 12.3 M
** ticks after the first, the 334th the first past 100 ms.
*/
TEST(stack_probes) {
  hsi_writer *w = app_trace("probes");
  hsi_memop op;
  hsi_analysis *a;
  const hsi_recs *rs;
  uint64_t f[] = { 0x7ff800011234ull, 0x7ff700002000ull };
  size_t i, heap_stk = 0, pool_stk = 0, npool = 0, nheap = 0, free_stk = 0;
  if (!w) return;
  memset(&op, 0, sizeof op);
  op.pid = 1000; op.tid = 1001; op.heap = 0x10000;
  /* first a heap and a pool alloc before either StackWalk: both probes
     open at once, and each must be looked for after the other is seen */
  op.kind = HSI_OP_HEAP_ALLOC; op.ts = 500; op.addr = 0x1F000; op.size = 40;
  mem(w, 8, &op, NULL, 0);
  op.kind = HSI_OP_POOL_ALLOC; op.ts = 510; op.addr = 0xFFFF8000000F0000ull; op.size = 64;
  op.tag = 0x656E6F4E; op.pool_type = 1;
  mem(w, 8, &op, NULL, 0);
  CHECK_EQ(hsi_writer_stack(w, 1, 503, 500, 1000, 1001, f, 2, 8), 0);
  CHECK_EQ(hsi_writer_stack(w, 1, 513, 510, 1000, 1001, f, 2, 8), 0);
  op.tag = 0; op.pool_type = 0;
  for (i = 0; i < 6000; i++) {         /* heap allocs with stacks, frees without */
    op.kind = HSI_OP_HEAP_ALLOC; op.ts = 1000 + 3000 * (int64_t)i; op.addr = 0x20000 + 64 * (uint64_t)i; op.size = 40;
    mem(w, 8, &op, f, 2);
    op.kind = HSI_OP_HEAP_FREE; op.ts += 50; op.size = 0;
    mem(w, 8, &op, NULL, 0);
  }
  op.kind = HSI_OP_POOL_ALLOC; op.heap = 0; op.tag = 0x656E6F4E; op.pool_type = 1;
  for (i = 0; i < 5000; i++) {         /* then pool allocs, each with its stack */
    op.ts = 20000000 + 100 * (int64_t)i; op.addr = 0xFFFF800000100000ull + 64 * (uint64_t)i; op.size = 64;
    mem(w, 8, &op, f, 2);
  }
  CHECK_EQ(hsi_writer_close(w), 0);
  a = analyse(path);
  if (!a) return;
  rs = hsi_life_recs(hsi_analysis_life(a));
  for (i = 0; i < rs->n; i++) {
    if (rs->kind[i] == HSI_KIND_POOL) { npool++; pool_stk += rs->stk_alloc[i] != 0; }
    else { nheap++; heap_stk += rs->stk_alloc[i] != 0; free_stk += rs->stk_free[i] != 0; }
  }
  CHECK_EQ(nheap, 6001);
  CHECK_EQ(heap_stk, 6001);
  CHECK_EQ(npool, 5001);
  CHECK_EQ(pool_stk, 5001);           /* the pool probe was seen: its kind kept asking */
  CHECK_EQ(free_stk, 0);
  /* 6001 heap + 5001 pool alloc targets, and the frees' 4096 before they stopped */
  CHECK_EQ(hsi_stacks_counts(hsi_analysis_stacks(a))->targets, 6001 + 5001 + 4096);
  hsi_analysis_free(a);
  unlink(path);
}

/* n allocs of app.exe (heap, or pool when `pool`), one every `every`
   ticks, each with a StackWalk of frames f `delay` ticks later on CPU 1;
   then `frees` heap frees without stacks, one every 2,000 ticks.  The
   analysis of that trace, or NULL. */
static hsi_analysis *late_stacks(const char *name, int pool, const uint64_t *f, int64_t every, int64_t delay,
                                 size_t n, size_t frees) {
  hsi_writer *w = app_trace(name);
  hsi_memop op;
  int64_t ts = 1000;
  size_t i;
  if (!w) return NULL;
  memset(&op, 0, sizeof op);
  op.pid = 1000; op.tid = 1001; op.size = 40;
  op.kind = pool ? HSI_OP_POOL_ALLOC : HSI_OP_HEAP_ALLOC;
  if (pool) { op.tag = 0x656E6F4E; op.pool_type = 1; } else op.heap = 0x10000;
  for (i = 0; i < n; i++) {
    op.ts = ts = 1000 + every * (int64_t)i;
    op.addr = (pool ? 0xFFFF800000100000ull : 0x20000) + 64 * (uint64_t)i;
    mem(w, 8, &op, NULL, 0);
    CHECK_EQ(hsi_writer_stack(w, 1, op.ts + delay, op.ts, 1000, 1001, f, 2, 8), 0);
  }
  op.kind = HSI_OP_HEAP_FREE; op.heap = 0x10000; op.tag = 0; op.pool_type = 0;
  for (i = 0; i < frees; i++) {
    op.ts = ts + delay + 2000 * (int64_t)(i + 1); op.addr = 0x20000 + 64 * (uint64_t)i;
    mem(w, 8, &op, NULL, 0);
  }
  CHECK_EQ(hsi_writer_close(w), 0);
  return analyse(path);
}

/* late_stacks' analysis: every alloc has its stack, and (unless 0) the
   matcher was asked `targets` times. */
static void check_late(const char *name, int pool, const uint64_t *f, int64_t every, int64_t delay,
                       size_t n, size_t frees, uint64_t targets) {
  size_t nrec = 0;
  hsi_analysis *a = late_stacks(name, pool, f, every, delay, n, frees);
  if (!a) return;
  CHECK_EQ(alloc_stacks(a, &nrec), n);
  CHECK_EQ(nrec, n);
  if (targets) CHECK_EQ(hsi_stacks_counts(hsi_analysis_stacks(a))->targets, targets);
  hsi_analysis_free(a);
  unlink(path);
}

/*
** StackWalks written long after their events (the trace's order allows
** them anywhere in the matcher's window): 10,000 heap allocs on one CPU,
** each StackWalk 30,000 ticks (3 ms) later on another, about 10,000
** events behind.  The probe must not give up before the first arrives:
** every alloc gets its stack (deciding on 4096 targets alone gave 4096
** stacks).  The frees' probe, with no stack, still stops at 4096.
*/
TEST(stack_probe_late_stacks) {
  static const uint64_t f[] = { 0x7ff800011234ull, 0x7ff700002000ull };
  /* targets: the allocs', then the frees' 4096 (the 4096th is 8.2 M ticks after the first) */
  check_late("late", 0, f, 3, 30000, 10000, 10000, 10000 + 4096);
}

/*
** Pool allocations whose stacks are kernel frames only: such a stack is
** given when its target leaves the matcher's window (a user part could
** still come), long after the probe would decide.  The probe must count
** the StackWalk matched, not the stack given: 6,000 allocs over 0.6 s
** (past the probe's 100 ms and 4,096 targets), every one with its stack.
*/
TEST(stack_probe_kernel_stacks) {
  static const uint64_t f[] = { 0xFFFFF80000011234ull, 0xFFFFF80000012000ull };
  check_late("kstacks", 1, f, 1000, 3, 6000, 0, 0);
}

/*
** A target without a thread id (its event had no ids, and the attribution
** found no StackWalk for it in time) is named by its timestamp alone, for
** the probe too: pool events whose StackWalks came too late for the
** attribution, until it stopped waiting for them, then each right behind
** its event.  The pool probe sees them, and every pool alloc after the
** probe's 4096 targets still gets its stack.
*/
TEST(stack_probe_threadless) {
  static const hs_guid G_FILL = { 0x12345678, 0x1234, 0x5678, { 1, 2, 3, 4, 5, 6, 7, 8 } };
  hsi_writer *w;
  hsi_writer_opts o;
  hsi_memop op;
  hsi_analysis *a;
  const hsi_recs *rs;
  uint64_t f[] = { 0xFFFFF80000011234ull, 0xFFFFF80000012000ull };
  int64_t ts = 1000, late = 0;
  size_t i, k, npool = 0, stk = 0;
  enum { EARLY = HSI_ATTRIB_GIVEUP + 2, LATER = 4200 };
  memset(&o, 0, sizeof o);
  o.cpus = 2;
  CHECK_EQ(hsi_writer_open(&w, tmp_path("threadless"), &o, NULL, 0), 0);
  CHECK_EQ(hsi_writer_process(w, 0, 3, 8, 1000, 4, 100, "app.exe", "app.exe"), 0);
  memset(&op, 0, sizeof op);
  op.kind = HSI_OP_POOL_ALLOC; op.tag = 0x656E6F4E; op.pool_type = 1; op.size = 64;
  op.pid = op.tid = HS_NOID;
  for (i = 0; i < EARLY + LATER; i++) {
    op.ts = ts; op.addr = 0xFFFF800000100000ull + 64 * (uint64_t)i;
    mem_as(w, 8, HS_HT_PERFINFO64, &op);
    if (i < EARLY)              /* more events than the attribution looks ahead */
      for (k = 0; k <= HSI_ATTRIB_AHEAD; k++)
        CHECK_EQ(hsi_writer_event(w, 0, HS_HT_EVENT64, &G_FILL, 1, 0, 0, 4, 0, 0, 1000, 1001,
                                  ts + 1 + (int64_t)k, NULL, 0, NULL, 0), 0);
    else if (!late) late = ts;
    CHECK_EQ(hsi_writer_stack(w, 1, ts + 1 + (i < EARLY ? HSI_ATTRIB_AHEAD + 1 : 0), ts, 1000, 1001, f, 2, 8), 0);
    ts += i < EARLY ? HSI_ATTRIB_AHEAD + 10 : 10;
  }
  CHECK_EQ(hsi_writer_close(w), 0);
  a = analyse(path);
  if (!a) return;
  rs = hsi_life_recs(hsi_analysis_life(a));
  for (i = 0; i < rs->n; i++)
    if (rs->kind[i] == HSI_KIND_POOL && rs->ts_alloc[i] >= late) { npool++; stk += rs->stk_alloc[i] != 0; }
  CHECK_EQ(npool, LATER);
  CHECK_EQ(stk, LATER);
  hsi_analysis_free(a);
  unlink(path);
}

int main(void) {
  srand(12345);
  RUN(heap_chain_with_stacks_and_images);
  RUN(virtualalloc_pool_and_process_end_32bit);
  RUN(stack_probes);
  RUN(stack_probe_threadless);
  RUN(stack_probe_late_stacks);
  RUN(stack_probe_kernel_stacks);
  return UNIT_DONE();
}
