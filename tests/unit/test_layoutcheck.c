/*
** test_layoutcheck.c -- the per-layout counters (engine/layoutcheck.c):
** the threshold, one unexplained length, each field check, the pid check
** against a process map, and the sample `info` takes.
*/
#include "unit.h"
#include "heapscript.h"
#include "memev.h"
#include "layoutcheck.h"
#include "lifetime.h"

static uint8_t buf[256];

/* An event for op encoded at pointer width 8, plus `extra` zero bytes. */
static hs_event event_of(hsi_memop *op, size_t extra) {
  hs_event ev;
  int group, type;
  long len = hsi_memev_encode(op, 0, 0, 8, buf, sizeof buf - 16, &group, &type);
  memset(&ev, 0, sizeof ev);
  CHECK(len > 0);
  memset(buf + len, 0, extra);
  ev.flags = HS_EVF_KERNEL;
  ev.hook = (uint16_t)(group << 8 | type);
  ev.version = (uint16_t)hsi_memev_version(group, type);
  ev.pointer_size = 8;
  ev.payload = buf;
  ev.payload_len = (uint32_t)len + (uint32_t)extra;
  ev.record = buf;
  ev.record_len = ev.payload_len;
  return ev;
}

static void feed(hsi_lcheck *lc, hsi_memop *op, size_t extra) {
  hs_event ev = event_of(op, extra);
  hsi_memop d;
  int r = hsi_memev_decode(&ev, &d);
  CHECK(r != 0);
  CHECK_EQ(hsi_lcheck_add(lc, &ev, r, &d), 0);
}

static hsi_memop heap_alloc(uint64_t addr, uint64_t size) {
  hsi_memop op;
  memset(&op, 0, sizeof op);
  op.kind = HSI_OP_HEAP_ALLOC; op.heap = 0x250000; op.addr = addr; op.size = size;
  return op;
}

TEST(threshold) {
  hsi_lcheck *lc = hsi_lcheck_new();
  hsi_memop op;
  const hsi_lcheck_row *r;
  int i;
  for (i = 0; i < 100; i++) {
    op = heap_alloc(0x7ff0000000ull + 16 * (uint64_t)i + (i < 5 ? 8 : 0), 32);  /* 5 misaligned */
    feed(lc, &op, 0);
  }
  CHECK_EQ(hsi_lcheck_finish(lc, NULL), 0);            /* 5 % is not more than 5 % */
  r = hsi_lcheck_row_at(lc, 0);
  CHECK_EQ(r->events, 100); CHECK_EQ(r->fail[HSI_LC_ALIGN], 5); CHECK_EQ(r->bad, 0);
  op = heap_alloc(0x7ff0000008ull, 32);
  feed(lc, &op, 0);
  CHECK_EQ(hsi_lcheck_finish(lc, NULL), 1);            /* 6 of 101 */
  CHECK_EQ(hsi_lcheck_bad_kinds(lc), 1u << HSI_KIND_HEAP);
  /* below 4 GiB (a 32-bit process logged with 8-byte pointers) 8 is enough */
  op = heap_alloc(0x10008, 32);
  feed(lc, &op, 0);
  CHECK_EQ(hsi_lcheck_row_at(lc, 0)->fail[HSI_LC_ALIGN], 6);
  hsi_lcheck_free(lc);
}

TEST(length_and_fields) {
  hsi_lcheck *lc = hsi_lcheck_new();
  hsi_memop op;
  const hsi_lcheck_row *r;
  char line[512], len[64];
  int i;
  for (i = 0; i < 1000; i++) { op = heap_alloc(0x20000 + 16 * (uint64_t)i, 24); feed(lc, &op, 0); }
  op = heap_alloc(0x20000, 24);
  feed(lc, &op, 4);                                    /* one payload 4 bytes longer */
  CHECK_EQ(hsi_lcheck_finish(lc, NULL), 1);
  r = hsi_lcheck_row_at(lc, 0);
  CHECK_EQ(r->fail[HSI_LC_LENGTH], 1);
  CHECK_STR(hsi_lcheck_lengths(r, len, sizeof len), "28 (1000), 32 (1)");
  hsi_lcheck_warning(r, line, sizeof line);
  CHECK(strstr(line, "HeapAlloc v2") && strstr(line, "the v2 row explains 28") && strstr(line, "length 1 of 1001")
        && strstr(line, "heap figures are doubtful"));
  /* each field check */
  op = heap_alloc(0x30000, (uint64_t)1 << 41); feed(lc, &op, 0);
  op = heap_alloc(0x30000, 8); op.heap = 0; feed(lc, &op, 0);
  CHECK_EQ(hsi_lcheck_row_at(lc, 0)->fail[HSI_LC_SIZE], 1);
  CHECK_EQ(hsi_lcheck_row_at(lc, 0)->fail[HSI_LC_HEAP], 1);
  memset(&op, 0, sizeof op);
  op.kind = HSI_OP_POOL_ALLOC; op.tag = 0x0100200A; op.addr = 0xffffc30f41200004ull; op.size = 64;
  feed(lc, &op, 0);
  op.tag = 0xEB61654Cu;                                /* "Leak" with PROTECTED_POOL: printable */
  op.addr = 0xffffc30f41200010ull;
  feed(lc, &op, 0);
  r = hsi_lcheck_row_at(lc, 1);
  CHECK_EQ(r->events, 2); CHECK_EQ(r->fail[HSI_LC_TAG], 1); CHECK_EQ(r->fail[HSI_LC_ALIGN], 1);
  memset(&op, 0, sizeof op);
  op.kind = HSI_OP_VALLOC; op.addr = 0x7000800; op.size = 0x1000; op.flags = HS_MEM_COMMIT; op.pid = 7;
  feed(lc, &op, 0);
  CHECK_EQ(hsi_lcheck_row_at(lc, 2)->fail[HSI_LC_PAGE], 1);
  hsi_lcheck_finish(lc, NULL);
  CHECK_EQ(hsi_lcheck_bad_kinds(lc), (1u << HSI_KIND_HEAP) | (1u << HSI_KIND_POOL) | (1u << HSI_KIND_VIRTUAL));
  hsi_lcheck_free(lc);
}

/* A short payload counts as `short` (and its length is unexplained). */
TEST(short_payload) {
  hsi_lcheck *lc = hsi_lcheck_new();
  hsi_memop op = heap_alloc(0x20000, 24), d;
  hs_event ev = event_of(&op, 0);
  int r;
  ev.payload_len = 16;                                 /* a 32-bit payload in a 64-bit header */
  r = hsi_memev_decode(&ev, &d);
  CHECK_EQ(r, -1);
  CHECK_EQ(hsi_lcheck_add(lc, &ev, r, &d), 0);
  CHECK_EQ(hsi_lcheck_finish(lc, NULL), 1);
  CHECK_EQ(hsi_lcheck_row_at(lc, 0)->fail[HSI_LC_SHORT], 1);
  CHECK_EQ(hsi_lcheck_row_at(lc, 0)->fail[HSI_LC_LENGTH], 1);
  hsi_lcheck_free(lc);
}

/* VirtualAlloc's payload pid must be a process the trace names, when it names any. */
TEST(pids) {
  hsi_lcheck *lc = hsi_lcheck_new();
  hsi_procmap *pm = hsi_procmap_new();
  hsi_memop op;
  int i;
  memset(&op, 0, sizeof op);
  op.kind = HSI_OP_VALLOC; op.size = 0x1000; op.flags = HS_MEM_COMMIT;
  for (i = 0; i < 10; i++) { op.addr = 0x7000000 + 0x1000 * (uint64_t)i; op.pid = i < 9 ? 7 : 9; feed(lc, &op, 0); }
  CHECK_EQ(hsi_lcheck_finish(lc, pm), 0);              /* no Process records: not checked */
  CHECK_EQ(hsi_lcheck_row_at(lc, 0)->fail[HSI_LC_PID], 0);
  hsi_procmap_instance(pm, 7, 1);                      /* implied: does not count */
  CHECK_EQ(hsi_lcheck_finish(lc, pm), 0);
  hsi_procmap_free(pm);
  hsi_lcheck_free(lc);
}

/* `info` counts every length and checks the fields of a sample. */
TEST(sample) {
  hsi_lcheck *lc = hsi_lcheck_new();
  hsi_memop op, d;
  const hsi_lcheck_row *r;
  int i, n = 0;
  char line[512];
  memset(&op, 0, sizeof op);
  op.kind = HSI_OP_POOL_ALLOC; op.tag = 0x01020304; op.size = 64;
  for (i = 0; i < 5000; i++) {
    hs_event ev;
    op.addr = 0xffffc30f41200000ull + 16 * (uint64_t)i;
    ev = event_of(&op, 0);
    if (hsi_lcheck_sample(lc, &ev) == 1) {
      n++;
      hsi_lcheck_fields(lc, &ev, hsi_memev_decode(&ev, &d), &d);
    }
  }
  CHECK_EQ(n, HSI_LCHECK_FULL + (5000 - HSI_LCHECK_FULL) / HSI_LCHECK_EVERY);
  CHECK_EQ(hsi_lcheck_finish(lc, NULL), 1);
  r = hsi_lcheck_row_at(lc, 0);
  CHECK_EQ(r->events, 5000); CHECK_EQ(r->fields_checked, (uint64_t)n); CHECK_EQ(r->fail[HSI_LC_TAG], (uint64_t)n);
  hsi_lcheck_warning(r, line, sizeof line);
  CHECK(strstr(line, "tag 4110 of 5000 events (fields of 4110 checked)") != NULL);
  hsi_lcheck_free(lc);
}

int main(void) {
  RUN(threshold);
  RUN(length_and_fields);
  RUN(short_payload);
  RUN(pids);
  RUN(sample);
  return UNIT_DONE();
}
