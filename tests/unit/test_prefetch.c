/*
** test_prefetch.c -- items put on the producer's thread come out on the
** consumer's exactly as they were put: same bytes, same sizes, in the
** same order, whatever their size (items up to HSI_PREFETCH_MAX fill
** blocks early); the fill's error comes after the items put before it;
** closing mid-stream does not hang; HEAPSCRIPT_THREADS=0 gives no thread.
*/
#include "unit.h"
#include "heapscript.h"
#include "prefetch.h"

typedef struct src {
  uint64_t seq, n;            /* items put so far, items wanted */
  int fail;                   /* after n items: this code instead of 0 */
  int per_fill;               /* items per fill call */
} src;

/* Item k: its size from k (8 bytes to HSI_PREFETCH_MAX, some odd), then
   bytes that depend on k and on their place. */
static size_t size_of(uint64_t k) {
  if (k % 997 == 5) return HSI_PREFETCH_MAX;
  if (k % 101 == 7) return 40000 + (size_t)(k % 13) * 1000 + 3;
  return 8 + (size_t)(k % 61);
}

static uint8_t byte_of(uint64_t k, size_t i) { return (uint8_t)(k * 31 + i * 7); }

static int fill(void *ud, hsi_prefetch *pf) {
  src *s = (src *)ud;
  int j;
  for (j = 0; j < s->per_fill; j++) {
    size_t n, i;
    uint8_t *p;
    if (s->seq == s->n) return s->fail;
    n = size_of(s->seq);
    if (!(p = (uint8_t *)hsi_prefetch_put(pf, n))) return 0;
    memcpy(p, &s->seq, 8);
    for (i = 8; i < n; i++) p[i] = byte_of(s->seq, i);
    s->seq++;
  }
  return 1;
}

static void run(uint64_t n, int fail, int per_fill) {
  src s;
  hsi_prefetch *pf;
  const uint8_t *p;
  size_t size, i;
  uint64_t k = 0, bad = 0;
  int rc = 99;
  memset(&s, 0, sizeof s);
  s.n = n; s.fail = fail; s.per_fill = per_fill;
  setenv("HEAPSCRIPT_THREADS", "1", 1);
  pf = hsi_prefetch_start(fill, &s);
  CHECK(pf != NULL);
  if (!pf) return;
  while ((p = (const uint8_t *)hsi_prefetch_take(pf, &size, &rc)) != NULL) {
    uint64_t got;
    memcpy(&got, p, 8);
    /* sizes come out rounded up to 8 */
    if (got != k || size != ((size_of(k) + 7) & ~(size_t)7) || ((uintptr_t)p & 7)) bad++;
    else for (i = 8; i < size_of(k); i++) if (p[i] != byte_of(k, i)) { bad++; break; }
    k++;
  }
  CHECK_EQ(k, n);
  CHECK_EQ(bad, 0);
  CHECK_EQ(rc, fail);
  CHECK(hsi_prefetch_take(pf, &size, &rc) == NULL);    /* the end stays the end */
  CHECK_EQ(rc, fail);
  hsi_prefetch_close(pf);
}

TEST(same_items_in_the_same_order) {
  run(30000, 0, 1);
  run(30000, 0, 3);           /* several items per fill */
  run(0, 0, 1);               /* nothing at all */
  run(1, 0, 1);
}

TEST(the_error_after_the_items) {
  run(20000, HS_ENOMEM, 1);
  run(0, HS_EIO, 1);
}

TEST(early_stop_and_disabled) {
  src s;
  hsi_prefetch *pf;
  size_t size;
  int rc, i;
  memset(&s, 0, sizeof s);
  s.n = 1000000; s.per_fill = 1;
  setenv("HEAPSCRIPT_THREADS", "1", 1);
  pf = hsi_prefetch_start(fill, &s);
  CHECK(pf != NULL);
  for (i = 0; pf && i < 10; i++) CHECK(hsi_prefetch_take(pf, &size, &rc) != NULL);
  hsi_prefetch_close(pf);                              /* the producer is mid-stream: must not hang */
  CHECK(s.seq < s.n);
  setenv("HEAPSCRIPT_THREADS", "0", 1);
  CHECK(hsi_prefetch_start(fill, &s) == NULL);
  setenv("HEAPSCRIPT_THREADS", "1", 1);
}

int main(void) {
  RUN(same_items_in_the_same_order);
  RUN(the_error_after_the_items);
  RUN(early_stop_and_disabled);
  return UNIT_DONE();
}
