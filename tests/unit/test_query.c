/*
** test_query.c -- window classes, Impacting/Transient, peak, filters,
** grouping and series (engine/query.c) on records built through the
** tracker, with hand-computed answers, then a randomized comparison with
** a naive recomputation.
*/
#include "unit.h"
#include "query.h"

#define H1 0x10000u
#define H2 0x20000u

static hsi_memop mk(int kind, int64_t ts, uint32_t pid) {
  hsi_memop op;
  memset(&op, 0, sizeof op);
  op.kind = kind;
  op.ts = ts;
  op.pid = pid;
  op.tid = HS_NOID;
  op.pointer_size = 8;
  return op;
}

static void feed(hsi_life *L, hsi_memop op, uint32_t inst) {
  CHECK_EQ(hsi_life_feed(L, &op, inst, NULL), 0);
}

static void halloc(hsi_life *L, int64_t ts, uint64_t heap, uint64_t addr, uint64_t size, uint32_t inst) {
  hsi_memop op = mk(HSI_OP_HEAP_ALLOC, ts, 1000 + inst);
  op.heap = heap; op.addr = addr; op.size = size;
  feed(L, op, inst);
}

static void hfree(hsi_life *L, int64_t ts, uint64_t heap, uint64_t addr, uint32_t inst) {
  hsi_memop op = mk(HSI_OP_HEAP_FREE, ts, 1000 + inst);
  op.heap = heap; op.addr = addr;
  feed(L, op, inst);
}

/*
** The timeline (window [100, 200]; sizes are powers of two so that every
** sum names its records):
**
**  time    20   40 50 60 80 100 110 120 130 150 160 200 210 220 230
**  A   1                       [---------------------]            AIFI
**  B   2                            [-------------------------->  AIFO
**  C   4          [----------------------]                        AOFI
**  D   8             [----------------------------------------]   AOFO
**  E  16    [-----------]                                          out (freed before t1)
**  F  32                                              [---]        out (allocated after t2)
**  G  64                   [--------------------------]            AIFI (both ends on the edges)
**  H 128                                            [------->      AIFO (allocated at t2)
**  I 256     [------------]                                        AOFI (freed at t1)
**  U   ?  <----------------------------- 150                       AOFI, before the trace, size unknown
**
** Records in order: A B C D E F G H I U get indices from the alloc order
** below (E 0, I 1, C 2, D 3, G 4, A 5, B 6, U 7, H 8, F 9).
*/
static hsi_life *timeline(void) {
  hsi_life *L = hsi_life_new();
  halloc(L, 20, H1, 0xE0, 16, 1);     /* 0 E */
  halloc(L, 40, H1, 0x90, 256, 1);    /* 1 I */
  halloc(L, 50, H1, 0xC0, 4, 1);      /* 2 C */
  halloc(L, 60, H1, 0xD0, 8, 1);      /* 3 D */
  hfree(L, 80, H1, 0xE0, 1);
  halloc(L, 100, H1, 0x60, 64, 1);    /* 4 G */
  hfree(L, 100, H1, 0x90, 1);
  halloc(L, 110, H1, 0xA0, 1, 1);     /* 5 A */
  halloc(L, 120, H2, 0xB0, 2, 2);     /* 6 B: other heap, other process */
  hfree(L, 130, H1, 0xC0, 1);
  hfree(L, 150, H1, 0x777, 1);        /* 7 U */
  hfree(L, 160, H1, 0xA0, 1);
  halloc(L, 200, H1, 0x80, 128, 1);   /* 8 H */
  hfree(L, 200, H1, 0x60, 1);
  halloc(L, 210, H1, 0xF0, 32, 1);    /* 9 F */
  hfree(L, 220, H1, 0xF0, 1);
  hfree(L, 230, H1, 0xD0, 1);
  return L;
}

TEST(classes) {
  CHECK_EQ(hsi_query_class(110, 160, 100, 200), HSI_AIFI);
  CHECK_EQ(hsi_query_class(100, 200, 100, 200), HSI_AIFI);
  CHECK_EQ(hsi_query_class(200, HSI_TS_NEVER, 100, 200), HSI_AIFO);
  CHECK_EQ(hsi_query_class(99, 100, 100, 200), HSI_AOFI);
  CHECK_EQ(hsi_query_class(HSI_TS_BEFORE, 150, 100, 200), HSI_AOFI);
  CHECK_EQ(hsi_query_class(60, 201, 100, 200), HSI_AOFO);
  CHECK_EQ(hsi_query_class(HSI_TS_BEFORE, HSI_TS_NEVER, 100, 200), HSI_AOFO);
  CHECK_EQ(hsi_query_class(20, 99, 100, 200), -1);
  CHECK_EQ(hsi_query_class(201, 220, 100, 200), -1);
  CHECK_STR(hsi_class_name(HSI_AOFI), "AOFI");
}

TEST(window_aggregates) {
  hsi_life *L = timeline();
  hsi_agg a;
  uint64_t b, c;
  CHECK_EQ(hsi_life_recs(L)->n, 10);
  CHECK_EQ(hsi_query_agg(L, NULL, 100, 200, HSI_AGG_PEAK, &a), 0);
  CHECK_EQ(a.count, 8);                       /* A B C D G H I U */
  CHECK_EQ(a.cls_count[HSI_AIFI], 2);         /* A G */
  CHECK_EQ(a.cls_count[HSI_AIFO], 2);         /* B H */
  CHECK_EQ(a.cls_count[HSI_AOFI], 3);         /* C I U */
  CHECK_EQ(a.cls_count[HSI_AOFO], 1);         /* D */
  CHECK_EQ(a.cls_bytes[HSI_AIFI], 1 + 64);
  CHECK_EQ(a.cls_bytes[HSI_AIFO], 2 + 128);
  CHECK_EQ(a.cls_bytes[HSI_AOFI], 4 + 256);
  CHECK_EQ(a.cls_bytes[HSI_AOFO], 8);
  CHECK_EQ(a.bytes, 1 + 2 + 4 + 8 + 64 + 128 + 256);
  CHECK_EQ(a.size, 1 + 64 + 2 + 128);
  CHECK_EQ(a.transient, 65);
  CHECK_EQ((uint64_t)a.impacting, (uint64_t)(int64_t)(130 - 260));
  CHECK_EQ(a.unknown_count, 1);
  CHECK_EQ(a.before_count, 1);
  CHECK_EQ(a.before_bytes, 0);
  /* outstanding: just before t1 = C D I; at t2 = B D H */
  CHECK_EQ(a.out_start, 4 + 8 + 256); CHECK_EQ(a.out_start_count, 3);
  CHECK_EQ(a.out_end, 2 + 8 + 128);   CHECK_EQ(a.out_end_count, 3);
  hsi_query_outstanding(L, NULL, 99, &b, &c);
  CHECK_EQ(b, a.out_start); CHECK_EQ(c, 3);
  hsi_query_outstanding(L, NULL, 200, &b, &c);
  CHECK_EQ(b, a.out_end);
  CHECK_EQ((uint64_t)a.impacting, (uint64_t)((int64_t)a.out_end - (int64_t)a.out_start));
  /* the field names a script sorts and reads by: each its own value */
  CHECK_EQ(hsi_agg_field(&a, hsi_agg_field_find("out_start")), 4 + 8 + 256);
  CHECK_EQ(hsi_agg_field(&a, hsi_agg_field_find("out_end")), 2 + 8 + 128);
  CHECK_EQ(hsi_agg_field(&a, hsi_agg_field_find("before_count")), 1);
  CHECK_EQ(hsi_agg_field(&a, hsi_agg_field_find("unknown_count")), 1);
  CHECK_EQ(hsi_agg_field(&a, hsi_agg_field_find("peak_ts")), 200);
  /* outstanding over [100, 200]: 100: C D G = 76; 110: 77; 120: 79;
     130: 75; 160: 74; 200: -G +H = 138 */
  CHECK_EQ(a.peak, 138); CHECK_EQ(a.peak_ts, 200);
  hsi_query_outstanding(L, NULL, 100, &b, NULL); CHECK_EQ(b, 76);
  hsi_query_outstanding(L, NULL, 150, &b, NULL); CHECK_EQ(b, 75);
  /* [100, 199]: G is now AIFO, H is out; the peak is 79 at 120 */
  CHECK_EQ(hsi_query_agg(L, NULL, 100, 199, HSI_AGG_PEAK, &a), 0);
  CHECK_EQ(a.count, 7);
  CHECK_EQ(a.cls_count[HSI_AIFO], 2);         /* B G */
  CHECK_EQ(a.cls_bytes[HSI_AIFO], 66);
  CHECK_EQ(a.transient, 1);
  CHECK_EQ(a.peak, 79); CHECK_EQ(a.peak_ts, 120);
  /* peak already there at t1 */
  CHECK_EQ(hsi_query_agg(L, NULL, 125, 150, HSI_AGG_PEAK, &a), 0);
  CHECK_EQ(a.peak, 79); CHECK_EQ(a.peak_ts, 125);
  /* nothing transient, nothing impacting: a window where nothing happens */
  CHECK_EQ(hsi_query_agg(L, NULL, 170, 190, 0, &a), 0);
  CHECK_EQ(a.impacting, 0); CHECK_EQ(a.transient, 0); CHECK_EQ(a.size, 0);
  CHECK_EQ(a.count, 3); CHECK_EQ(a.cls_count[HSI_AOFO], 3);   /* B D G */
  hsi_life_free(L);
}

/* The whole trace is [first, last]: AOFO is empty; before-trace blocks are AOFI. */
TEST(whole_trace) {
  hsi_life *L = timeline();
  hsi_filter f;
  hsi_agg a;
  hsi_filter_init(&f, L);
  CHECK_EQ(f.t1, 20); CHECK_EQ(f.t2, 230);
  CHECK_EQ(hsi_query_agg(L, NULL, f.t1, f.t2, 0, &a), 0);
  CHECK_EQ(a.count, 10);
  CHECK_EQ(a.cls_count[HSI_AOFO], 0);
  CHECK_EQ(a.cls_count[HSI_AOFI], 1);
  CHECK_EQ(a.cls_count[HSI_AIFO], 2);         /* B H */
  CHECK_EQ(a.impacting, 130);
  CHECK_EQ(a.size, 511);
  hsi_life_set_span(L, 0, 1000);
  hsi_filter_init(&f, L);
  CHECK_EQ(f.t1, 0); CHECK_EQ(f.t2, 1000);
  hsi_life_free(L);
}

/* Before-trace blocks of known size count in AOFI bytes and Impacting. */
TEST(before_trace_bytes) {
  hsi_life *L = hsi_life_new();
  hsi_memop op = mk(HSI_OP_POOL_FREE, 50, 4);
  hsi_agg a;
  op.addr = 0xFFFF800000000000ull; op.size = 1000; op.tag = 0x656C6946;
  feed(L, op, 1);                                  /* before the trace, 1000 bytes */
  halloc(L, 60, H1, 0x10, 300, 1);
  CHECK_EQ(hsi_query_agg(L, NULL, 0, 100, 0, &a), 0);
  CHECK_EQ(a.cls_bytes[HSI_AOFI], 1000);
  CHECK_EQ(a.impacting, 300 - 1000);
  CHECK_EQ(a.before_bytes, 1000); CHECK_EQ(a.before_aofi_bytes, 1000);
  CHECK_EQ(a.out_start, 0); CHECK_EQ(a.out_end, 300);
  CHECK_EQ((int64_t)a.out_end - (int64_t)a.out_start, a.impacting + (int64_t)a.before_aofi_bytes);
  /* window ending before the free: AOFO, not outstanding (not in the trace) */
  CHECK_EQ(hsi_query_agg(L, NULL, 0, 40, 0, &a), 0);
  CHECK_EQ(a.cls_count[HSI_AOFO], 1); CHECK_EQ(a.cls_bytes[HSI_AOFO], 1000);
  CHECK_EQ(a.out_end, 0);
  hsi_life_free(L);
}

TEST(filters) {
  hsi_life *L = timeline();
  hsi_filter f;
  hsi_sel s;
  uint32_t buf[4], insts[1] = {2};
  uint8_t stk[1] = {0};
  memset(&s, 0, sizeof s);
  hsi_filter_init(&f, L);
  f.t1 = 100; f.t2 = 200;
  CHECK_EQ(hsi_query_select(L, &f, &s), 0);
  CHECK_EQ(s.n, 8);
  CHECK_EQ(s.idx[0], 1); CHECK_EQ(s.idx[7], 8);   /* E (0) and F (9) are out */
  f.classes = 1u << HSI_AOFI;
  CHECK_EQ(hsi_query_select(L, &f, &s), 0);
  CHECK_EQ(s.n, 3); CHECK_EQ(s.idx[0], 1); CHECK_EQ(s.idx[1], 2); CHECK_EQ(s.idx[2], 7);
  f.flags_none = HSI_RF_BEFORE;
  CHECK_EQ(hsi_query_select(L, &f, &s), 0);
  CHECK_EQ(s.n, 2);
  f.flags_none = 0; f.classes = 0;
  f.size_min = 8; f.size_max = 128;                /* D G H; not U (unknown size) */
  CHECK_EQ(hsi_query_select(L, &f, &s), 0);
  CHECK_EQ(s.n, 3); CHECK_EQ(s.idx[0], 3); CHECK_EQ(s.idx[1], 4); CHECK_EQ(s.idx[2], 8);
  f.size_min = 0; f.size_max = UINT64_MAX;
  f.has_heap = 1; f.heap = H2;
  CHECK_EQ(hsi_query_select(L, &f, &s), 0);
  CHECK_EQ(s.n, 1); CHECK_EQ(s.idx[0], 6);
  f.has_heap = 0;
  f.pid = 1002;
  CHECK_EQ(hsi_query_select(L, &f, &s), 0);
  CHECK_EQ(s.n, 1); CHECK_EQ(s.idx[0], 6);
  f.pid = HS_NOID; f.insts = insts; f.ninsts = 1;
  CHECK_EQ(hsi_query_select(L, &f, &s), 0);
  CHECK_EQ(s.n, 1);
  insts[0] = 1; f.pid = 1002;                      /* both: nothing */
  CHECK_EQ(hsi_query_select(L, &f, &s), 0);
  CHECK_EQ(s.n, 0);
  f.pid = HS_NOID; f.insts = NULL;
  f.reasons = 1u << HSI_END_NONE;
  CHECK_EQ(hsi_query_select(L, &f, &s), 0);
  CHECK_EQ(s.n, 2);                                /* B H */
  f.reasons = 0;
  f.kinds = 1u << HSI_KIND_POOL;
  CHECK_EQ(hsi_query_select(L, &f, &s), 0);
  CHECK_EQ(s.n, 0);
  f.kinds = 0;
  /* stacks: G (4) gets stack 3, B (6) stack 5; the set is {3} */
  CHECK_EQ(hsi_life_set_stack(L, 4, HSI_STACK_ALLOC, 3), 0);
  CHECK_EQ(hsi_life_set_stack(L, 6, HSI_STACK_ALLOC, 5), 0);
  stk[0] = 1u << 3;
  f.stacks = stk; f.nstacks = 8; f.stack_which = HSI_STACK_ALLOC;
  CHECK_EQ(hsi_query_select(L, &f, &s), 0);
  CHECK_EQ(s.n, 1); CHECK_EQ(s.idx[0], 4);
  f.stack_which = HSI_STACK_FREE;
  CHECK_EQ(hsi_query_select(L, &f, &s), 0);
  CHECK_EQ(s.n, 0);
  f.stacks = NULL;
  CHECK_EQ(hsi_query_select_buf(L, &f, buf, 4), 8);
  CHECK_EQ(buf[0], 1); CHECK_EQ(buf[3], 4);
  /* an aggregate over a selection */
  {
    hsi_agg a;
    f.classes = (1u << HSI_AIFO) | (1u << HSI_AIFI);
    CHECK_EQ(hsi_query_select(L, &f, &s), 0);
    CHECK_EQ(hsi_query_agg(L, &s, 100, 200, 0, &a), 0);
    CHECK_EQ(a.count, 4); CHECK_EQ(a.size, 195); CHECK_EQ(a.impacting, 130);
  }
  hsi_sel_free(&s);
  hsi_life_free(L);
}

TEST(pool_tags) {
  hsi_life *L = hsi_life_new();
  hsi_filter f;
  hsi_groups g;
  hsi_sel s;
  uint32_t i;
  const uint32_t tags[3] = {0x656C6946 /* File */, 0x6E497053 /* SpIn */, 0x656C6946};
  memset(&s, 0, sizeof s);
  for (i = 0; i < 6; i++) {
    hsi_memop op = mk(HSI_OP_POOL_ALLOC, 10 + i, 4);
    op.addr = 0xFFFF800000000000ull + i * 0x100; op.size = 10u << i; op.tag = tags[i % 3];
    op.pool_type = 1;
    feed(L, op, 1);
  }
  { hsi_memop op = mk(HSI_OP_POOL_FREE, 30, 4); op.addr = 0xFFFF800000000000ull; feed(L, op, 1); }
  hsi_filter_init(&f, L);
  f.has_tag = 1; f.tag = 0x656C6946;
  CHECK_EQ(hsi_query_select(L, &f, &s), 0);
  CHECK_EQ(s.n, 4);                                /* 0 2 3 5 */
  f.tag = 0x00006946; f.tag_mask = 0xFFFF;         /* "Fi*" */
  CHECK_EQ(hsi_query_select(L, &f, &s), 0);
  CHECK_EQ(s.n, 4);
  CHECK_EQ(hsi_query_group(L, NULL, f.t1, f.t2, HSI_BY_TAG, NULL, 0, &g), 0);
  CHECK_EQ(g.n, 2);
  CHECK_EQ(g.g[0].key, 0x656C6946);
  CHECK_EQ(g.g[0].agg.count, 4);
  CHECK_EQ(g.g[0].agg.bytes, 10 + 40 + 80 + 320);
  CHECK_EQ(g.g[0].agg.out_end, 40 + 80 + 320);
  CHECK_EQ(g.g[1].agg.bytes, 20 + 160);
  hsi_groups_free(&g);
  /* by heap: pool records have none (their key column holds the tag) */
  CHECK_EQ(hsi_query_group(L, NULL, f.t1, f.t2, HSI_BY_HEAP, NULL, 0, &g), 0);
  CHECK_EQ(g.n, 1);
  CHECK_EQ(g.g[0].key, HSI_NOKEY);
  CHECK_EQ(g.g[0].agg.count, 6);
  hsi_groups_free(&g);
  hsi_sel_free(&s);
  hsi_life_free(L);
}

/*
** Every record of some kinds (trace:allocations{kind = ...} over the whole
** trace) is filled without a look at the times: it must be what the
** record-by-record filter gives, and only when the window holds every
** time fed, every class is asked and nothing else is.  Heap and pool
** records alternate and the last is pool, so a fill of the heap ones that
** ran past its count would write past a buffer of exactly that many.
*/
TEST(every_record_of_a_kind) {
  hsi_life *L = hsi_life_new();
  hsi_filter f;
  hsi_sel fast, slow;
  uint32_t i, *buf;
  int k;
  memset(&fast, 0, sizeof fast);
  memset(&slow, 0, sizeof slow);
  for (i = 0; i < 4; i++) {
    hsi_memop op = mk(HSI_OP_POOL_ALLOC, 20 + 10 * i, 4);
    halloc(L, 15 + 10 * i, H1, 0x100 + 0x10 * i, 8, 1);
    op.addr = 0xFFFF800000000000ull + i * 0x100; op.size = 16; op.tag = 0x656C6946;
    feed(L, op, 1);
  }
  hfree(L, 60, H1, 0x100, 1);
  hfree(L, 70, H1, 0x999, 1);                      /* before the trace: AOFI, size unknown */
  CHECK_EQ(hsi_life_recs(L)->n, 9);
  for (k = -1; k < HSI_KIND_COUNT; k++) {
    size_t n;
    hsi_filter_init(&f, L);
    f.kinds = k < 0 ? 0 : 1u << k;
    n = hsi_query_every(L, &f);
    CHECK_EQ(n, k < 0 ? 9 : hsi_life_kind_records(L, k));
    buf = malloc((n ? n : 1) * sizeof *buf);
    CHECK_EQ(hsi_query_every_fill(L, &f, buf), 0);
    CHECK_EQ(hsi_query_select(L, &f, &fast), 0);
    CHECK_EQ(fast.n, n);
    {                                              /* the slow path: a selection of 0..8 */
      uint32_t in[9];
      for (i = 0; i < 9; i++) in[i] = i;
      CHECK_EQ(hsi_query_select_in(L, &f, in, 9, &slow), 0);
    }
    CHECK_EQ(slow.n, n);
    for (i = 0; i < n && i < slow.n; i++) {
      CHECK_EQ(buf[i], slow.idx[i]);
      CHECK_EQ(fast.idx[i], slow.idx[i]);
    }
    free(buf);
  }
  hsi_filter_init(&f, L);
  f.kinds = 1u << HSI_KIND_HEAP;
  CHECK_EQ(hsi_query_every(L, &f), 5);
  f.classes = HSI_CLS_ALL;                         /* every class is no class */
  CHECK_EQ(hsi_query_every(L, &f), 5);
  f.classes = 1u << HSI_AIFO;                      /* a class: the times decide */
  CHECK_EQ(hsi_query_every(L, &f), SIZE_MAX);
  CHECK_EQ(hsi_query_select(L, &f, &fast), 0);
  CHECK_EQ(fast.n, 3);
  f.classes = 0;
  f.t1++;                                          /* the first time fed is left out */
  CHECK_EQ(hsi_query_every(L, &f), SIZE_MAX);
  CHECK_EQ(hsi_query_select(L, &f, &fast), 0);
  CHECK_EQ(fast.n, 5);                             /* the record allocated at t1 - 1 and freed at 60 is AOFI */
  f.t2 = 30;
  CHECK_EQ(hsi_query_select(L, &f, &fast), 0);
  CHECK_EQ(fast.n, 3);                             /* those allocated after 30 are not in it */
  f.t1 = INT64_MIN + 1; f.t2 = INT64_MAX - 1;      /* a wider window holds it all */
  CHECK_EQ(hsi_query_every(L, &f), 5);
  f.t2 = 69;                                       /* the last time fed is not */
  CHECK_EQ(hsi_query_every(L, &f), SIZE_MAX);
  hsi_filter_init(&f, L);
  f.pid = 1001;                                    /* anything else: the filter decides */
  CHECK_EQ(hsi_query_every(L, &f), SIZE_MAX);
  hsi_filter_init(&f, L);
  f.flags_none = HSI_RF_BEFORE;
  CHECK_EQ(hsi_query_every(L, &f), SIZE_MAX);
  CHECK_EQ(hsi_query_select(L, &f, &fast), 0);
  CHECK_EQ(fast.n, 8);
  hsi_sel_free(&fast);
  hsi_sel_free(&slow);
  hsi_life_free(L);
}

/* A tag without a mask is all four characters: "Filx" is not "File". */
TEST(pool_tag_fourth_char) {
  hsi_life *L = hsi_life_new();
  hsi_filter f;
  hsi_sel s;
  const uint32_t tags[2] = {0x656C6946 /* File */, 0x786C6946 /* Filx */};
  uint32_t i;
  memset(&s, 0, sizeof s);
  for (i = 0; i < 2; i++) {
    hsi_memop op = mk(HSI_OP_POOL_ALLOC, 10 + i, 4);
    op.addr = 0xFFFF800000000000ull + i * 0x100; op.size = 16; op.tag = tags[i];
    op.pool_type = 1;
    feed(L, op, 1);
  }
  hsi_filter_init(&f, L);
  f.has_tag = 1; f.tag = 0x656C6946;
  CHECK_EQ(hsi_query_select(L, &f, &s), 0);
  CHECK_EQ(s.n, 1);
  if (s.n) CHECK_EQ(s.idx[0], 0);
  f.tag = 0x00006946; f.tag_mask = 0xFFFF;         /* "Fi*": both */
  CHECK_EQ(hsi_query_select(L, &f, &s), 0);
  CHECK_EQ(s.n, 2);
  hsi_sel_free(&s);
  hsi_life_free(L);
}

/*
** Three allocation stacks:
**   stack 1: three 100-byte blocks, never freed   impacting 300, size 300
**   stack 2: one 1000-byte block, freed            transient 1000, impacting 0
**   stack 3: two 50-byte blocks, never freed       impacting 100
*/
TEST(grouping_top_n) {
  hsi_life *L = hsi_life_new();
  hsi_groups g;
  uint64_t keys[6];
  size_t i;
  halloc(L, 10, H1, 0x100, 100, 1); hsi_life_set_stack(L, 0, HSI_STACK_ALLOC, 1);
  halloc(L, 11, H1, 0x200, 1000, 1); hsi_life_set_stack(L, 1, HSI_STACK_ALLOC, 2);
  halloc(L, 12, H1, 0x300, 50, 1); hsi_life_set_stack(L, 2, HSI_STACK_ALLOC, 3);
  halloc(L, 13, H1, 0x400, 100, 1); hsi_life_set_stack(L, 3, HSI_STACK_ALLOC, 1);
  halloc(L, 14, H1, 0x500, 50, 1); hsi_life_set_stack(L, 4, HSI_STACK_ALLOC, 3);
  halloc(L, 15, H1, 0x600, 100, 1); hsi_life_set_stack(L, 5, HSI_STACK_ALLOC, 1);
  hfree(L, 20, H1, 0x200, 1);
  CHECK_EQ(hsi_query_group(L, NULL, 10, 20, HSI_BY_ALLOC_STACK, NULL,
                           HSI_AGG_PEAK | HSI_GRP_MEMBERS, &g), 0);
  CHECK_EQ(g.n, 3);
  CHECK_EQ(g.g[0].key, 1); CHECK_EQ(g.g[1].key, 2); CHECK_EQ(g.g[2].key, 3);  /* first seen */
  CHECK_EQ(g.g[0].agg.impacting, 300);
  CHECK_EQ(g.g[1].agg.transient, 1000); CHECK_EQ(g.g[1].agg.impacting, 0);
  CHECK_EQ(g.g[1].agg.peak, 1000); CHECK_EQ(g.g[1].agg.peak_ts, 11);
  CHECK_EQ(g.g[0].agg.peak, 300); CHECK_EQ(g.g[0].agg.peak_ts, 15);
  CHECK_EQ(g.g[2].agg.peak, 100); CHECK_EQ(g.g[2].agg.peak_ts, 14);
  CHECK_EQ(g.nmembers, 6);
  CHECK_EQ(g.g[0].mlen, 3);
  CHECK_EQ(g.members[g.g[0].moff], 0); CHECK_EQ(g.members[g.g[0].moff + 1], 3);
  CHECK_EQ(g.members[g.g[0].moff + 2], 5);
  CHECK_EQ(g.members[g.g[2].moff + 1], 4);
  CHECK_EQ(g.g[2].first, 2);
  CHECK_EQ(hsi_groups_sort(&g, HSI_F_IMPACTING, 1), 0);
  CHECK_EQ(g.g[0].key, 1); CHECK_EQ(g.g[1].key, 3); CHECK_EQ(g.g[2].key, 2);
  CHECK_EQ(g.members[g.g[1].moff], 2);                  /* members follow their group */
  CHECK_EQ(hsi_groups_sort(&g, HSI_F_SIZE, 1), 0);
  CHECK_EQ(g.g[0].key, 2); CHECK_EQ(g.g[1].key, 1); CHECK_EQ(g.g[2].key, 3);
  CHECK_EQ(hsi_groups_sort(&g, HSI_F_COUNT, 0), 0);
  CHECK_EQ(g.g[0].key, 2); CHECK_EQ(g.g[1].key, 3); CHECK_EQ(g.g[2].key, 1);
  CHECK_EQ(hsi_groups_sort(&g, HSI_F_KEY, 1), 0);
  CHECK_EQ(g.g[0].key, 3); CHECK_EQ(g.g[2].key, 1);
  CHECK_EQ(hsi_groups_sort(&g, HSI_F_TRANSIENT, 1), 0);   /* ties (0, 0): by key */
  CHECK_EQ(g.g[0].key, 2); CHECK_EQ(g.g[1].key, 1); CHECK_EQ(g.g[2].key, 3);
  hsi_groups_top(&g, 2);
  CHECK_EQ(g.n, 2);
  CHECK_EQ(hsi_groups_sort(&g, HSI_F_COUNT_, 1), HS_EARG);
  hsi_groups_free(&g);
  /* a caller's key per record: even and odd addresses / 0x100 */
  for (i = 0; i < 6; i++) keys[i] = (hsi_life_recs(L)->addr[i] >> 8) & 1;
  CHECK_EQ(hsi_query_group(L, NULL, 10, 20, HSI_BY_KEY, keys, 0, &g), 0);
  CHECK_EQ(g.n, 2);
  CHECK_EQ(g.g[0].key, 1); CHECK_EQ(g.g[0].agg.count, 3);
  CHECK_EQ(g.g[0].agg.bytes, 100 + 50 + 50);            /* 0x100 0x300 0x500 */
  CHECK_EQ(g.g[1].agg.bytes, 1000 + 100 + 100);
  hsi_groups_free(&g);
  CHECK_EQ(hsi_query_group(L, NULL, 10, 20, HSI_BY_KEY, NULL, 0, &g), HS_EARG);
  /* by window class */
  CHECK_EQ(hsi_query_group(L, NULL, 12, 20, HSI_BY_CLASS, NULL, 0, &g), 0);
  CHECK_EQ(hsi_groups_sort(&g, HSI_F_KEY, 0), 0);
  CHECK_EQ(g.n, 3);
  CHECK_EQ(g.g[0].key, HSI_AIFO); CHECK_EQ(g.g[0].agg.count, 4);
  CHECK_EQ(g.g[1].key, HSI_AOFI); CHECK_EQ(g.g[1].agg.count, 1);
  CHECK_EQ(g.g[2].key, HSI_AOFO); CHECK_EQ(g.g[2].agg.count, 1);
  hsi_groups_free(&g);
  CHECK_EQ(hsi_agg_field_find("impacting"), HSI_F_IMPACTING);
  CHECK_STR(hsi_agg_field_name(HSI_F_AOFI_BYTES), "aofi_bytes");
  CHECK_EQ(hsi_agg_field_find("nope"), -1);
  hsi_life_free(L);
}

/* s has n points: times t (NULL: not checked), bytes b, counts c. */
static void series_is(const hsi_series *s, size_t n, const int64_t *t, const uint64_t *b, const uint64_t *c) {
  size_t i;
  CHECK_EQ(s->n, n);
  for (i = 0; i < n && i < s->n; i++) {
    if (t) CHECK_EQ(s->t[i], t[i]);
    CHECK_EQ(s->bytes[i], b[i]);
    CHECK_EQ(s->count[i], c[i]);
  }
}

TEST(series) {
  hsi_life *L = timeline();
  hsi_series s;
  static const int64_t et[] = {100, 110, 120, 130, 160, 200};
  static const uint64_t eb[] = {76, 77, 79, 75, 74, 138}, ec[] = {3, 4, 5, 4, 3, 3};
  CHECK_EQ(hsi_query_series(L, NULL, 100, 200, 0, &s), 0);
  series_is(&s, 6, et, eb, ec);
  hsi_series_free(&s);
  CHECK_EQ(hsi_query_series(L, NULL, 100, 200, 3, &s), 0);
  CHECK_EQ(s.n, 3);
  CHECK_EQ(s.t[0], 100); CHECK_EQ(s.t[1], 150); CHECK_EQ(s.t[2], 200);
  CHECK_EQ(s.bytes[0], 76); CHECK_EQ(s.bytes[1], 75); CHECK_EQ(s.bytes[2], 138);
  hsi_series_free(&s);
  CHECK_EQ(hsi_query_series(L, NULL, 100, 200, 1, &s), 0);
  CHECK_EQ(s.n, 1); CHECK_EQ(s.t[0], 200); CHECK_EQ(s.bytes[0], 138);
  hsi_series_free(&s);
  CHECK_EQ(hsi_query_series(L, NULL, 200, 100, 0, &s), HS_EARG);
  hsi_life_free(L);
}

/* Columns: each the highest level in it, the level carried in counted
   (changes at 100 110 120 | 130 | 160 | 200 in four columns of 25) */
TEST(series_peaks) {
  hsi_life *L = timeline();
  hsi_series s;
  static const int64_t t4[] = {112, 137, 162, 187};
  static const uint64_t b4[] = {79, 79, 75, 138}, c4[] = {5, 5, 4, 3};
  /* ten columns of 10: 140-150 and 150-160 have no change and hold 130's 75, 4 */
  static const uint64_t b10[] = {76, 77, 79, 79, 75, 75, 75, 74, 74, 138}, c10[] = {3, 4, 5, 5, 4, 4, 4, 3, 3, 3};
  CHECK_EQ(hsi_query_series_peaks(L, NULL, 100, 200, 4, &s), 0);
  series_is(&s, 4, t4, b4, c4);
  hsi_series_free(&s);
  CHECK_EQ(hsi_query_series_peaks(L, NULL, 100, 200, 10, &s), 0);
  series_is(&s, 10, NULL, b10, c10);
  hsi_series_free(&s);
  CHECK_EQ(hsi_query_series_peaks(L, NULL, 150, 150, 3, &s), 0);   /* one instant: every column its level */
  CHECK_EQ(s.n, 3);
  CHECK_EQ(s.bytes[0], 75); CHECK_EQ(s.bytes[2], 75);
  hsi_series_free(&s);
  CHECK_EQ(hsi_query_series_peaks(L, NULL, 100, 200, 0, &s), HS_EARG);
  CHECK_EQ(hsi_query_series_peaks(L, NULL, 200, 100, 4, &s), HS_EARG);
  hsi_life_free(L);
}

/* ---------------------------------------------------- randomized check */

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
  rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
  return rs;
}

static int naive_class(int64_t a, int64_t f, int64_t t1, int64_t t2) {
  int ai, fi;
  if (a > t2) return -1;
  if (f < t1) return -1;
  ai = (a >= t1 && a <= t2);
  fi = (f >= t1 && f <= t2);
  if (ai && fi) return HSI_AIFI;
  if (ai) return HSI_AIFO;
  if (fi) return HSI_AOFI;
  return HSI_AOFO;
}

static uint64_t naive_out(const hsi_recs *R, const uint32_t *idx, size_t n, int64_t t) {
  uint64_t b = 0;
  size_t i;
  for (i = 0; i < n; i++) {
    uint32_t r = idx ? idx[i] : (uint32_t)i;
    if (R->flags[r] & HSI_RF_BEFORE) continue;
    if (R->ts_alloc[r] <= t && !(R->ts_free[r] <= t)) b += R->size[r];
  }
  return b;
}

static int check_agg(const hsi_recs *R, const uint32_t *idx, size_t n, int64_t t1, int64_t t2,
                     const hsi_agg *a) {
  uint64_t cc[4] = {0, 0, 0, 0}, cb[4] = {0, 0, 0, 0}, cnt = 0, peak, unknown = 0;
  int64_t peak_ts = t1;
  size_t i;
  int ok = 1;
  for (i = 0; i < n; i++) {
    uint32_t r = idx ? idx[i] : (uint32_t)i;
    int c = naive_class(R->ts_alloc[r], R->ts_free[r], t1, t2);
    if (c < 0) continue;
    cnt++;
    cc[c]++;
    if (R->flags[r] & HSI_RF_SIZE_UNKNOWN) unknown++;
    else cb[c] += R->size[r];
  }
  /* peak: outstanding at t1 and at every alloc time in (t1, t2] */
  peak = naive_out(R, idx, n, t1);
  for (i = 0; i < n; i++) {
    uint32_t r = idx ? idx[i] : (uint32_t)i;
    int64_t t = R->ts_alloc[r];
    uint64_t v;
    if (t <= t1 || t > t2 || (R->flags[r] & HSI_RF_BEFORE)) continue;
    v = naive_out(R, idx, n, t);
    if (v > peak || (v == peak && t < peak_ts && peak_ts != t1)) { peak = v; peak_ts = t; }
  }
  for (i = 0; i < 4; i++) ok &= a->cls_count[i] == cc[i] && a->cls_bytes[i] == cb[i];
  ok &= a->count == cnt && a->unknown_count == unknown;
  ok &= a->impacting == (int64_t)cb[HSI_AIFO] - (int64_t)cb[HSI_AOFI];
  ok &= a->transient == cb[HSI_AIFI] && a->size == cb[HSI_AIFI] + cb[HSI_AIFO];
  ok &= a->out_end == naive_out(R, idx, n, t2) && a->out_start == naive_out(R, idx, n, t1 - 1);
  ok &= a->peak == peak && a->peak_ts == peak_ts;
  if (!ok)
    fprintf(stderr, "window [%lld, %lld]: peak %llu@%lld vs %llu@%lld, impacting %lld\n",
            (long long)t1, (long long)t2, (unsigned long long)a->peak, (long long)a->peak_ts,
            (unsigned long long)peak, (long long)peak_ts, (long long)a->impacting);
  return ok;
}

TEST(random_aggregates) {
  enum { NOPS = 3000 };
  hsi_life *L = hsi_life_new();
  static uint64_t live[NOPS];
  static uint64_t keys[NOPS * 2];
  size_t nlive = 0, i, w, bad = 0;
  uint64_t next = 0x1000;
  int64_t ts = 0;
  const hsi_recs *R;
  for (i = 0; i < NOPS; i++) {
    unsigned r = (unsigned)(rnd() % 100);
    ts += (int64_t)(rnd() % 4);   /* equal timestamps happen */
    if (r < 50 || !nlive) {
      halloc(L, ts, H1, next, rnd() % 3000, 1);
      hsi_life_set_stack(L, (uint32_t)(hsi_life_recs(L)->n - 1), HSI_STACK_ALLOC, 1 + (uint32_t)(rnd() % 7));
      live[nlive++] = next;
      next += 16;
    } else if (r < 90) {
      size_t k = rnd() % nlive;
      hfree(L, ts, H1, live[k], 1);
      live[k] = live[--nlive];
    } else if (r < 95) {
      hsi_memop op = mk(HSI_OP_POOL_FREE, ts, 4);   /* before the trace, known size */
      op.addr = 0xFFFF000000000000ull + i * 64; op.size = 1 + rnd() % 500;
      feed(L, op, 1);
    } else {
      hfree(L, ts, H1, 0x7000000000ull + i * 16, 1);  /* before the trace, size unknown */
    }
  }
  R = hsi_life_recs(L);
  for (w = 0; w < 40; w++) {
    int64_t t1 = (int64_t)(rnd() % (uint64_t)(ts + 1)), t2 = t1 + (int64_t)(rnd() % (uint64_t)(ts / 2 + 1));
    hsi_agg a;
    hsi_groups g;
    hsi_sel s;
    hsi_filter f;
    hsi_series se;
    uint64_t sum = 0, sumb = 0;
    size_t k;
    if (w == 0) { t1 = 0; t2 = ts; }
    CHECK_EQ(hsi_query_agg(L, NULL, t1, t2, HSI_AGG_PEAK, &a), 0);
    if (!check_agg(R, NULL, R->n, t1, t2, &a)) bad++;
    if (w == 0) {
      /* As many records as the whole trace, but one live at the peak twice
         and another left out: not every record, so not the tracker's peak. */
      static uint32_t dup[NOPS * 2];
      uint32_t at = 0;
      for (k = 0; k < R->n; k++) dup[k] = (uint32_t)(R->n - 1 - k);   /* descending */
      for (k = 0; k < R->n; k++)
        if (hsi_rec_counts(R, (uint32_t)k) && R->size[k] && R->ts_alloc[k] <= a.peak_ts && R->ts_free[k] > a.peak_ts) at = (uint32_t)k;
      dup[R->n - 1 - (at ? 0 : 1)] = at;
      s.idx = dup; s.n = s.cap = R->n;
      CHECK_EQ(hsi_query_agg(L, &s, t1, t2, HSI_AGG_PEAK, &a), 0);
      if (!check_agg(R, dup, R->n, t1, t2, &a)) bad++;
      CHECK(a.peak > 0);
    }
    /* a selection: sizes 100..2000 */
    memset(&s, 0, sizeof s);
    hsi_filter_init(&f, L);
    f.t1 = t1; f.t2 = t2; f.size_min = 100; f.size_max = 2000;
    CHECK_EQ(hsi_query_select(L, &f, &s), 0);
    for (k = 0; k < s.n; k++) {
      uint32_t r = s.idx[k];
      if (R->size[r] < 100 || R->size[r] > 2000 || (R->flags[r] & HSI_RF_SIZE_UNKNOWN) ||
          naive_class(R->ts_alloc[r], R->ts_free[r], t1, t2) < 0) bad++;
    }
    CHECK_EQ(hsi_query_agg(L, &s, t1, t2, HSI_AGG_PEAK, &a), 0);
    if (!check_agg(R, s.idx, s.n, t1, t2, &a)) bad++;
    /* groups by stack: each group is its own naive aggregate; sums add up */
    CHECK_EQ(hsi_query_group(L, NULL, t1, t2, HSI_BY_ALLOC_STACK, NULL,
                             HSI_AGG_PEAK | HSI_GRP_MEMBERS, &g), 0);
    for (k = 0; k < g.n; k++) {
      size_t j;
      for (j = 0; j < g.g[k].mlen; j++)
        if (R->stk_alloc[g.members[g.g[k].moff + j]] != g.g[k].key) bad++;
      if (!check_agg(R, g.members + g.g[k].moff, g.g[k].mlen, t1, t2, &g.g[k].agg)) bad++;
      sum += g.g[k].agg.count;
      sumb += g.g[k].agg.bytes;
    }
    CHECK_EQ(hsi_query_agg(L, NULL, t1, t2, 0, &a), 0);
    CHECK_EQ(sum, a.count);
    CHECK_EQ(sumb, a.bytes);
    CHECK_EQ(hsi_groups_sort(&g, HSI_F_PEAK, 1), 0);
    for (k = 1; k < g.n; k++)
      if (g.g[k - 1].agg.peak < g.g[k].agg.peak) bad++;
    hsi_groups_free(&g);
    /* caller keys: size classes */
    for (k = 0; k < R->n; k++) keys[k] = R->size[k] / 1000;
    CHECK_EQ(hsi_query_group(L, NULL, t1, t2, HSI_BY_KEY, keys, 0, &g), 0);
    for (k = 0; k < g.n; k++) {
      size_t j, c = 0;
      for (j = 0; j < R->n; j++)
        if (keys[j] == g.g[k].key && naive_class(R->ts_alloc[j], R->ts_free[j], t1, t2) >= 0) c++;
      if (c != g.g[k].agg.count) bad++;
    }
    hsi_groups_free(&g);
    /* series against outstanding at each of its points */
    CHECK_EQ(hsi_query_series(L, &s, t1, t2, 0, &se), 0);
    for (k = 0; k < se.n; k++) {
      if (se.bytes[k] != naive_out(R, s.idx, s.n, se.t[k])) bad++;
      if (k && se.bytes[k] == se.bytes[k - 1] && se.count[k] == se.count[k - 1]) bad++;
    }
    hsi_series_free(&se);
    /* columns against every change folded by hand */
    CHECK_EQ(hsi_query_series(L, &s, t1, t2, 0, &se), 0);
    {
      hsi_series pk;
      uint64_t top[7], lvl = 0;
      int have[7] = {0}, c;
      size_t m;
      CHECK_EQ(hsi_query_series_peaks(L, &s, t1, t2, 7, &pk), 0);
      for (m = 0; m < se.n; m++) {
        c = t2 > t1 ? (int)((double)(se.t[m] - t1) / (double)(t2 - t1) * 7) : 0;
        if (c > 6) c = 6;
        if (!have[c] || se.bytes[m] > top[c]) top[c] = se.bytes[m];
        have[c] = 1;
      }
      for (c = 0; c < 7 && pk.n == 7; c++) {
        uint64_t v = have[c] && top[c] > lvl ? top[c] : lvl;
        if (pk.bytes[c] != v) bad++;
        for (m = 0; m < se.n; m++) {                 /* carried on: the column's last change */
          int cm = t2 > t1 ? (int)((double)(se.t[m] - t1) / (double)(t2 - t1) * 7) : 0;
          if ((cm > 6 ? 6 : cm) == c) lvl = se.bytes[m];
        }
      }
      CHECK_EQ(pk.n, 7);
      hsi_series_free(&pk);
    }
    hsi_series_free(&se);
    CHECK_EQ(hsi_query_series(L, &s, t1, t2, 17, &se), 0);
    CHECK_EQ(se.n, 17);
    CHECK_EQ(se.t[0], t1);
    CHECK_EQ(se.t[se.n - 1], t2);
    for (k = 0; k < se.n; k++)
      if (se.bytes[k] != naive_out(R, s.idx, s.n, se.t[k])) bad++;
    hsi_series_free(&se);
    hsi_sel_free(&s);
  }
  CHECK_EQ(bad, 0);
  hsi_life_free(L);
}

/* Many records: the radix sort path (>= 512 times) against the naive
   peak, with timestamps close together and spread over more than 2^32
   ticks (every 16-bit digit of the sort matters). */
static void large_peak_run(int64_t start, uint64_t step) {
  hsi_life *L = hsi_life_new();
  static uint64_t live[20000];
  size_t nlive = 0, i, j;
  hsi_agg a;
  hsi_series se;
  int64_t ts = start, t1, t2;
  uint64_t peak, v;
  int64_t pts;
  const hsi_recs *R;
  for (i = 0; i < 20000; i++) {
    ts += (int64_t)(rnd() % step);
    if (rnd() % 100 < 55 || !nlive) {
      halloc(L, ts, H2, 0x10 + i * 16, 1 + rnd() % 100, 3);
      live[nlive++] = 0x10 + i * 16;
    } else {
      size_t k = rnd() % nlive;
      hfree(L, ts, H2, live[k], 3);
      live[k] = live[--nlive];
    }
  }
  R = hsi_life_recs(L);
  t1 = start + (ts - start) / 3;
  t2 = ts - (ts - start) / 3;
  CHECK_EQ(hsi_query_agg(L, NULL, t1, t2, HSI_AGG_PEAK, &a), 0);
  peak = naive_out(R, NULL, R->n, t1);
  pts = t1;
  for (j = 0; j < R->n; j++) {
    if (R->ts_alloc[j] <= t1 || R->ts_alloc[j] > t2) continue;
    v = naive_out(R, NULL, R->n, R->ts_alloc[j]);
    if (v > peak) { peak = v; pts = R->ts_alloc[j]; }
  }
  CHECK_EQ(a.peak, peak);
  CHECK_EQ(a.peak_ts, pts);
  CHECK_EQ(a.out_end, naive_out(R, NULL, R->n, t2));
  CHECK_EQ(hsi_query_series(L, NULL, t1, t2, 50, &se), 0);
  for (j = 0; j < se.n; j++) CHECK_EQ(se.bytes[j], naive_out(R, NULL, R->n, se.t[j]));
  hsi_series_free(&se);
  {
    /* three groups of thousands of records: each group's times sorted on
       their own (8-bit digits), against the naive peak of its members */
    static uint64_t keys[20000];
    hsi_groups g;
    size_t k;
    for (j = 0; j < R->n; j++) keys[j] = (R->addr[j] >> 4) % 3;
    CHECK_EQ(hsi_query_group(L, NULL, t1, t2, HSI_BY_KEY, keys, HSI_AGG_PEAK | HSI_GRP_MEMBERS, &g), 0);
    CHECK_EQ(g.n, 3);
    for (k = 0; k < g.n; k++) {
      CHECK(g.g[k].mlen > 1000);
      CHECK(check_agg(R, g.members + g.g[k].moff, g.g[k].mlen, t1, t2, &g.g[k].agg));
    }
    hsi_groups_free(&g);
    /* peaks asked for afterwards, of the groups kept: the same figures */
    {
      hsi_groups e, d;
      size_t m;
      CHECK_EQ(hsi_query_group(L, NULL, t1, t2, HSI_BY_KEY, keys, HSI_AGG_PEAK | HSI_GRP_MEMBERS, &e), 0);
      CHECK_EQ(hsi_query_group(L, NULL, t1, t2, HSI_BY_KEY, keys, HSI_GRP_MEMBERS, &d), 0);
      CHECK_EQ(hsi_groups_sort(&d, HSI_F_BYTES, 1), 0);
      hsi_groups_top(&d, 2);
      CHECK_EQ(hsi_groups_peaks(L, &d, t1, t2), 0);
      CHECK_EQ(d.n, 2);
      for (k = 0; k < d.n; k++)
        for (m = 0; m < e.n; m++)
          if (e.g[m].key == d.g[k].key) {
            CHECK_EQ(d.g[k].agg.peak, e.g[m].agg.peak);
            CHECK_EQ(d.g[k].agg.peak_ts, e.g[m].agg.peak_ts);
            CHECK(d.g[k].agg.peak > 0);
          }
      hsi_groups_free(&e);
      hsi_groups_free(&d);
      CHECK_EQ(hsi_groups_peaks(L, &g, t1, t2), 0);   /* no groups (freed): nothing to do */
    }
    /* peaks without members: the same figures, no member list */
    CHECK_EQ(hsi_query_group(L, NULL, t1, t2, HSI_BY_KEY, keys, HSI_AGG_PEAK, &g), 0);
    CHECK(g.members == NULL);
    for (k = 0; k < g.n; k++) CHECK_EQ(g.g[k].mlen, 0);
    hsi_groups_free(&g);
  }
  hsi_life_free(L);
}

/* A figure above INT64_MAX (sizes from a damaged or misread event) reads
   as INT64_MAX, never as a negative number. */
TEST(field_clamp) {
  hsi_agg a;
  memset(&a, 0, sizeof a);
  a.bytes = UINT64_MAX;
  a.peak = (uint64_t)INT64_MAX + 1;
  a.count = 3;
  CHECK_EQ(hsi_agg_field(&a, HSI_F_BYTES), INT64_MAX);
  CHECK_EQ(hsi_agg_field(&a, HSI_F_PEAK), INT64_MAX);
  CHECK_EQ(hsi_agg_field(&a, HSI_F_COUNT), 3);
}

TEST(large_peak) {
  large_peak_run(1000000, 50);
  large_peak_run((int64_t)1 << 40, (uint64_t)1 << 30);
}

/*
** The peak of every record of a kind over the whole trace is kept as the
** events come (hsi_life_peak) instead of swept from sorted times: on a
** random mix of every kind of event, with equal and backward timestamps,
** committed ranges split by decommits, reallocs, process ends and
** before-trace records, it must be the sweep's (a group by kind over the
** records listed backwards sweeps)
** and the naive peak, for each kind and for all.
*/
static void vm(hsi_life *L, int kind, int64_t ts, uint64_t addr, uint64_t size, uint32_t flags, uint32_t inst) {
  hsi_memop op = mk(kind, ts, 1000 + inst);
  op.addr = addr; op.size = size; op.flags = flags;
  feed(L, op, inst);
}

TEST(whole_trace_peak) {
  int round;
  for (round = 0; round < 30; round++) {
    hsi_life *L = hsi_life_new();
    static uint64_t live[4000], pool[4000];
    size_t nlive = 0, npool = 0, i, k;
    int64_t ts = 100, first, last;
    const hsi_recs *R;
    hsi_groups g;
    hsi_agg all;
    static uint64_t keys[40000];
    static uint32_t rev[40000];
    hsi_sel back;
    int kind;
    for (i = 0; i < 4000; i++) {
      unsigned r = (unsigned)(rnd() % 100);
      int64_t t = ts;
      if (rnd() % 50 == 0) t -= 3;                      /* backwards: taken as the latest */
      else ts += (int64_t)(rnd() % 3);                   /* equal times are common */
      if (r < 30 || !nlive) {
        uint64_t a = 0x100000 + (rnd() % 512) * 16;
        halloc(L, t, H1, a, 1 + rnd() % 900, 1 + (uint32_t)(rnd() % 2));   /* reuse of a live address too */
        live[nlive++] = a;
      } else if (r < 55) {
        k = rnd() % nlive;
        hfree(L, t, H1, live[k], 1 + (uint32_t)(rnd() % 2));
        live[k] = live[--nlive];
      } else if (r < 62) {
        hsi_memop op = mk(HSI_OP_HEAP_REALLOC, t, 1001);
        k = rnd() % nlive;
        op.heap = H1; op.old_addr = live[k]; op.old_size = 64;
        op.addr = rnd() % 2 ? live[k] : 0x200000 + i * 16; op.size = 1 + rnd() % 900;
        feed(L, op, 1);
        live[k] = op.addr;
      } else if (r < 72) {
        hsi_memop op = mk(HSI_OP_POOL_ALLOC, t, 4);
        op.addr = 0xFFFF800000000000ull + i * 64; op.size = 1 + rnd() % 500; op.tag = 0x656E6F4E;
        feed(L, op, 3);
        pool[npool++] = op.addr;
      } else if (r < 78 && npool) {
        hsi_memop op = mk(HSI_OP_POOL_FREE, t, 4);
        k = rnd() % npool;
        op.addr = pool[k];
        feed(L, op, 3);
        pool[k] = pool[--npool];
      } else if (r < 86) {
        vm(L, HSI_OP_VALLOC, t, 0x40000000 + (rnd() % 64) * 0x1000, 0x1000 * (1 + rnd() % 8),
           HS_MEM_RESERVE | HS_MEM_COMMIT, 1);
      } else if (r < 94) {
        vm(L, HSI_OP_VFREE, t, 0x40000000 + (rnd() % 64) * 0x1000, 0x1000 * (1 + rnd() % 4),
           rnd() % 3 ? HS_MEM_DECOMMIT : HS_MEM_RELEASE, 1);   /* splits, and before-trace pages */
      } else if (r < 98) {
        hfree(L, t, H1, 0x7000000000ull + i * 16, 1);           /* before the trace */
      } else if (r == 98 && round % 3 == 0) {
        CHECK_EQ(hsi_life_process_end(L, 2, t, NULL), 0);
      }
    }
    R = hsi_life_recs(L);
    hsi_life_span(L, &first, &last);
    /* the sweep, per kind: over the records listed backwards, which no
       group takes for a whole kind kept as the events came */
    CHECK(R->n <= 40000);
    for (k = 0; k < R->n; k++) rev[k] = (uint32_t)(R->n - 1 - k);
    back.idx = rev; back.n = back.cap = R->n;
    CHECK_EQ(hsi_query_group(L, &back, first, last, HSI_BY_KIND, NULL, HSI_AGG_PEAK | HSI_GRP_MEMBERS, &g), 0);
    for (kind = 0; kind < HSI_KIND_COUNT; kind++) {
      hsi_filter f;
      hsi_sel s;
      hsi_agg a;
      memset(&s, 0, sizeof s);
      hsi_filter_init(&f, L);
      f.t1 = first; f.t2 = last; f.kinds = 1u << kind;
      CHECK_EQ(hsi_query_select(L, &f, &s), 0);
      CHECK_EQ(hsi_query_agg(L, &s, first, last, HSI_AGG_PEAK, &a), 0);
      CHECK(check_agg(R, s.idx, s.n, first, last, &a));
      for (k = 0; k < g.n; k++)
        if (g.g[k].key == (uint64_t)kind) {
          CHECK_EQ(a.peak, g.g[k].agg.peak);
          CHECK_EQ(a.peak_ts, g.g[k].agg.peak_ts);
        }
      if (round == 0 && kind == HSI_KIND_VIRTUAL) CHECK(hsi_life_stats_get(L)->vm_splits > 0);
      hsi_sel_free(&s);
    }
    /* each kind's swept group against the naive peak of its members */
    for (k = 0; k < g.n; k++) CHECK(check_agg(R, g.members + g.g[k].moff, g.g[k].mlen, first, last, &g.g[k].agg));
    hsi_groups_free(&g);
    /* every record: against one group of caller keys over the records
       backwards, which sweeps */
    for (k = 0; k < R->n; k++) keys[k] = 7;
    CHECK_EQ(hsi_query_agg(L, NULL, first, last, HSI_AGG_PEAK, &all), 0);
    CHECK_EQ(hsi_query_group(L, &back, first, last, HSI_BY_KEY, keys, HSI_AGG_PEAK, &g), 0);
    CHECK_EQ(g.n, 1);
    CHECK_EQ(all.peak, g.g[0].agg.peak);
    CHECK_EQ(all.peak_ts, g.g[0].agg.peak_ts);
    CHECK(all.peak > 0);
    CHECK(check_agg(R, NULL, R->n, first, last, &all));
    hsi_groups_free(&g);
    hsi_life_free(L);
  }
}

/* A filter over given records: the records of `in` that the filter over
   every record selects, in the order of `in`; a kind with no records
   selects none (and one with records still does). */
TEST(select_in) {
  hsi_life *L = timeline();
  const hsi_recs *R = hsi_life_recs(L);
  hsi_filter f;
  hsi_sel all, sub;
  uint32_t in[64] = {0};
  size_t n = 0, i, j, want;
  memset(&all, 0, sizeof all);
  memset(&sub, 0, sizeof sub);
  hsi_filter_init(&f, L);
  f.t1 = 100; f.t2 = 200; f.classes = 1u << HSI_AIFO | 1u << HSI_AIFI;
  CHECK_EQ(hsi_query_select(L, &f, &all), 0);
  CHECK(all.n > 2);
  for (i = R->n; i-- > 0;) if (i % 3 != 1) in[n++] = (uint32_t)i;   /* descending, some left out */
  CHECK_EQ(hsi_query_select_in(L, &f, in, n, &sub), 0);
  for (i = 0, want = 0; i < n; i++) {
    int sel = 0;
    for (j = 0; j < all.n; j++) sel |= all.idx[j] == in[i];
    if (sel) { CHECK(want < sub.n && sub.idx[want] == in[i]); want++; }
  }
  CHECK_EQ(sub.n, want);
  CHECK(want > 0 && want < all.n);
  CHECK_EQ(hsi_query_select_in(L, &f, in, 0, &sub), 0);
  CHECK_EQ(sub.n, 0);
  f.kinds = 1u << HSI_KIND_POOL;                 /* the timeline has heap records only */
  CHECK_EQ(hsi_query_select(L, &f, &sub), 0);
  CHECK_EQ(sub.n, 0);
  f.kinds = 1u << HSI_KIND_POOL | 1u << HSI_KIND_HEAP;
  CHECK_EQ(hsi_query_select(L, &f, &sub), 0);
  CHECK_EQ(sub.n, all.n);
  hsi_sel_free(&all);
  hsi_sel_free(&sub);
  hsi_life_free(L);
}

/* Sorting with a cut (hsi_groups_sort_top) keeps what sorting all and
   cutting keeps, group for group, whatever the cut: a heap picks the
   first few of many, and ties in the field (few distinct counts here)
   fall to the key, then to the group's place. */
static void make_groups(hsi_groups *g, size_t n, uint32_t seed) {
  size_t i;
  memset(g, 0, sizeof *g);
  g->g = calloc(n, sizeof *g->g);
  g->n = n;
  for (i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    g->g[i].key = (seed >> 8) % 97;                  /* equal keys too */
    g->g[i].first = (uint32_t)i;
    g->g[i].agg.count = (seed >> 20) % 7;
    g->g[i].agg.bytes = (seed >> 12) % 1000;
  }
}

TEST(sort_top_as_sort_then_top) {
  static const size_t cuts[] = { 0, 1, 2, 3, 7, 49, 50, 51, 199, 200, 201, 1000 };
  static const int fields[] = { HSI_F_COUNT, HSI_F_BYTES, HSI_F_KEY };
  size_t c, i, bad = 0;
  int f, d;
  for (f = 0; f < 3; f++)
    for (d = 0; d < 2; d++)
      for (c = 0; c < sizeof cuts / sizeof *cuts; c++) {
        hsi_groups a, b;
        make_groups(&a, 200, (uint32_t)(f * 10 + d + 1));
        make_groups(&b, 200, (uint32_t)(f * 10 + d + 1));
        CHECK_EQ(hsi_groups_sort(&a, fields[f], d), 0);
        hsi_groups_top(&a, cuts[c]);
        CHECK_EQ(hsi_groups_sort_top(&b, fields[f], d, cuts[c]), 0);
        if (a.n != b.n) bad++;
        for (i = 0; i < a.n && i < b.n; i++)
          if (a.g[i].first != b.g[i].first) bad++;
        hsi_groups_free(&a);
        hsi_groups_free(&b);
      }
  CHECK_EQ(bad, 0);
  {
    hsi_groups g;
    make_groups(&g, 10, 5);
    CHECK_EQ(hsi_groups_sort_top(&g, HSI_F_COUNT_, 1, 3), HS_EARG);
    hsi_groups_free(&g);
  }
}

int main(void) {
  RUN(classes);
  RUN(window_aggregates);
  RUN(whole_trace);
  RUN(before_trace_bytes);
  RUN(filters);
  RUN(pool_tags);
  RUN(every_record_of_a_kind);
  RUN(pool_tag_fourth_char);
  RUN(grouping_top_n);
  RUN(series);
  RUN(series_peaks);
  RUN(random_aggregates);
  RUN(large_peak);
  RUN(field_clamp);
  RUN(whole_trace_peak);
  RUN(select_in);
  RUN(sort_top_as_sort_then_top);
  return UNIT_DONE();
}
