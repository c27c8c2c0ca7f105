/*
** test_vmem.c -- growable arrays (engine/vmem.c): contents kept through
** growth by large steps and shrinking, sizes that are not whole pages,
** and the lifetime tracker's columns through many growths and a trim.
*/
#include "unit.h"
#include "vmem.h"
#include "lifetime.h"

static uint32_t val(size_t i) { return (uint32_t)(i * 2654435761u ^ 0x5bd1e995u); }

TEST(grow_keep_shrink) {
  size_t n = 300, i, bad = 0;              /* 1,200 bytes: less than a page */
  uint32_t *p = (uint32_t *)hsi_vgrow(NULL, 0, n * sizeof *p), *q;
  CHECK(p != NULL);
  if (!p) return;
  for (i = 0; i < n; i++) p[i] = val(i);
  /* 1,200 bytes -> 40 MB -> 48 MB: every byte before kept, the new ones writable */
  q = (uint32_t *)hsi_vgrow(p, n * sizeof *p, 10000000 * sizeof *p);
  CHECK(q != NULL);
  if (!q) { hsi_vfree(p, n * sizeof *p); return; }
  p = q;
  for (i = 0; i < n; i++) bad += p[i] != val(i);
  for (i = n; i < 10000000; i++) p[i] = val(i);
  q = (uint32_t *)hsi_vgrow(p, 10000000 * sizeof *p, 12000001 * sizeof *p);
  CHECK(q != NULL);
  if (!q) { hsi_vfree(p, 10000000 * sizeof *p); return; }
  p = q;
  for (i = 0; i < 10000000; i += 997) bad += p[i] != val(i);
  p[12000000] = 7;
  /* shrink to 5,001 entries: the first ones kept */
  q = (uint32_t *)hsi_vgrow(p, 12000001 * sizeof *p, 5001 * sizeof *p);
  CHECK(q != NULL);
  if (q) p = q;
  for (i = 0; i < 5001; i++) bad += p[i] != val(i);
  CHECK_EQ(bad, 0);
  hsi_vfree(p, q ? 5001 * sizeof *p : 12000001 * sizeof *p);
  hsi_vfree(NULL, 0);                      /* nothing to free: no-op */
}

TEST(tracker_columns) {
  /* 200,000 records: the columns grow about 17 times, then the trim
     shrinks them; every record reads back as it was written */
  hsi_life *L = hsi_life_new();
  const hsi_recs *R;
  size_t i, bad = 0;
  for (i = 0; i < 200000; i++) {
    hsi_memop op;
    memset(&op, 0, sizeof op);
    op.kind = HSI_OP_HEAP_ALLOC;
    op.ts = (int64_t)i * 10;
    op.pid = 1000;
    op.tid = 1004;
    op.pointer_size = 8;
    op.heap = 0x10000;
    op.addr = 0x100000 + i * 16;
    op.size = 1 + i % 4000;
    CHECK_EQ(hsi_life_feed(L, &op, 1, NULL), 0);
  }
  hsi_life_trim(L);
  R = hsi_life_recs(L);
  CHECK_EQ(R->n, 200000);
  for (i = 0; i < R->n; i++)
    bad += R->addr[i] != 0x100000 + i * 16 || R->size[i] != 1 + i % 4000 || R->ts_alloc[i] != (int64_t)i * 10
           || R->kind[i] != HSI_KIND_HEAP || R->inst[i] != 1 || R->key[i] != 0x10000;
  CHECK_EQ(bad, 0);
  CHECK(hsi_life_memory(L) >= 200000u * 56);
  hsi_life_free(L);
}

int main(void) {
  RUN(grow_keep_shrink);
  RUN(tracker_columns);
  return UNIT_DONE();
}
