/*
** bench_floor.c -- a yardstick for `make bench`, not a part of heapscript:
** the least work a leak pass over the generated heap trace must do, done
** in the walk's own loop (the reader's decoding workers on, as in the
** walk).  Each 64-bit HeapAlloc (0x1021) makes a record in columns and
** enters a block map keyed by (heap, address); each HeapFree (0x1024)
** finds its block, ends the record and leaves the map; each StackWalk
** (0x1820) after an allocation gets its frames hashed and numbered, and
** the allocation takes that number.  Nothing else: no processes, no
** reallocations, no layout tables or checks, no stack parts or matching
** by time and thread, no selection or report, hash collisions of frames
** not checked.  Whatever the real pass does beyond this is what its
** figure adds to this one.
**
**   bench_floor FILE [RUNS]   prints "floor SECONDS EVENTS RECORDS LEAKED STACKS"
**                             (best of RUNS, default 3)
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "heapscript.h"
#include "clock.h"

static uint64_t ld64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static uint64_t scramble(uint64_t x) {
  x ^= x >> 31;
  x *= 0x9E3779B97F4A7C15ull;
  return x ^ x >> 29;
}

typedef struct {
  int64_t *born, *died;
  uint64_t *addr, *heap, *bytes;
  uint32_t *stack;
  size_t n, cap;
} table;

static int more(table *t) {
  size_t c = t->cap ? t->cap * 2 : 65536;
  void *a = realloc(t->born, c * 8), *b = realloc(t->died, c * 8), *d = realloc(t->addr, c * 8);
  void *e = realloc(t->heap, c * 8), *f = realloc(t->bytes, c * 8), *g = realloc(t->stack, c * 4);
  if (a) t->born = a;
  if (b) t->died = b;
  if (d) t->addr = d;
  if (e) t->heap = e;
  if (f) t->bytes = f;
  if (g) t->stack = g;
  if (!a || !b || !d || !e || !f || !g) return -1;
  t->cap = c;
  return 0;
}

/* Open addressing, linear probes; a slot is (hash << 32 | record + 1). */
typedef struct { uint64_t *s; uint32_t cap, n; } blocks;

static int put(blocks *m, uint32_t h, uint32_t rec) {
  uint32_t i;
  if ((m->n + 1) * 2 > m->cap) {
    uint32_t c = m->cap ? m->cap * 2 : 16384, k;
    uint64_t *s = calloc(c, 8);
    if (!s) return -1;
    for (k = 0; k < m->cap; k++) {
      if (!m->s[k]) continue;
      for (i = (uint32_t)(m->s[k] >> 32) & (c - 1); s[i]; i = (i + 1) & (c - 1)) {}
      s[i] = m->s[k];
    }
    free(m->s);
    m->s = s;
    m->cap = c;
  }
  for (i = h & (m->cap - 1); m->s[i]; i = (i + 1) & (m->cap - 1)) {}
  m->s[i] = (uint64_t)h << 32 | (rec + 1u);
  m->n++;
  return 0;
}

/* The record of (heap, addr), taken out of the map; UINT32_MAX if none. */
static uint32_t take(blocks *m, const table *t, uint32_t h, uint64_t heap, uint64_t addr) {
  uint32_t mask = m->cap - 1, i, j, k, rec;
  if (!m->cap) return UINT32_MAX;
  for (i = h & mask; m->s[i]; i = (i + 1) & mask) {
    rec = (uint32_t)m->s[i] - 1;
    if ((uint32_t)(m->s[i] >> 32) == h && t->addr[rec] == addr && t->heap[rec] == heap) break;
  }
  if (!m->s[i]) return UINT32_MAX;
  rec = (uint32_t)m->s[i] - 1;
  for (j = i;;) {                       /* close the gap: later slots move back */
    j = (j + 1) & mask;
    if (!m->s[j]) break;
    k = (uint32_t)(m->s[j] >> 32) & mask;
    if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) { m->s[i] = m->s[j]; i = j; }
  }
  m->s[i] = 0;
  m->n--;
  return rec;
}

int main(int argc, char **argv) {
  int runs = argc > 2 ? atoi(argv[2]) : 3, k;
  double best = -1, best_cpu = -1;
  uint64_t events = 0, leaked = 0;
  size_t records = 0;
  uint32_t nstacks = 0;
  if (argc < 2 || runs < 1) {
    fprintf(stderr, "usage: bench_floor FILE [RUNS]\n");
    return 2;
  }
  for (k = 0; k < runs; k++) {
    const char *path = argv[1];
    hs_reader *r;
    hs_event ev;
    table t;
    blocks m;
    uint64_t *ids = calloc(8192, 16);        /* frames hash, number: 4096 pairs */
    uint32_t idcap = 4096, last = UINT32_MAX;
    double t0 = now(), c0 = cpu_now();
    size_t i;
    memset(&t, 0, sizeof t);
    memset(&m, 0, sizeof m);
    events = leaked = 0;
    nstacks = 0;
    if (!ids || hs_reader_open(&r, &path, 1, NULL, NULL, 0) != 0) {
      fprintf(stderr, "bench_floor: cannot open %s\n", path);
      return 1;
    }
    while (hs_reader_next(r, &ev) == 1) {
      const uint8_t *p = ev.payload;
      events++;
      if (!(ev.flags & HS_EVF_KERNEL) || ev.pointer_size != 8) continue;
      if (ev.hook == 0x1021 && ev.payload_len >= 28) {                 /* HeapAlloc v2 */
        uint64_t heap = ld64(p), bytes = ld64(p + 8), addr = ld64(p + 16);
        if (t.n == t.cap && more(&t)) return 1;
        t.born[t.n] = ev.timestamp;
        t.died[t.n] = INT64_MAX;
        t.addr[t.n] = addr;
        t.heap[t.n] = heap;
        t.bytes[t.n] = bytes;
        t.stack[t.n] = 0;
        if (put(&m, (uint32_t)(scramble(addr ^ heap) >> 32), (uint32_t)t.n)) return 1;
        last = (uint32_t)t.n++;
      } else if (ev.hook == 0x1024 && ev.payload_len >= 20) {          /* HeapFree v2 */
        uint64_t heap = ld64(p), addr = ld64(p + 8);
        uint32_t rec = take(&m, &t, (uint32_t)(scramble(addr ^ heap) >> 32), heap, addr);
        if (rec != UINT32_MAX) t.died[rec] = ev.timestamp;
      } else if (ev.hook == 0x1820 && last != UINT32_MAX && ev.payload_len > 16) {   /* StackWalk */
        size_t n = (ev.payload_len - 16) / 8, f;
        uint64_t h = 0xCBF29CE484222325ull ^ n;
        uint32_t s;
        for (f = 0; f < n; f++) h = (h ^ ld64(p + 16 + 8 * f)) * 0x100000001B3ull;
        h |= 1;
        for (s = (uint32_t)scramble(h) & (idcap - 1); ids[2 * s] && ids[2 * s] != h; s = (s + 1) & (idcap - 1)) {}
        if (!ids[2 * s]) {
          if (nstacks + 1 >= idcap / 2) { fprintf(stderr, "bench_floor: more than %u stacks\n", idcap / 2); return 1; }
          ids[2 * s] = h;
          ids[2 * s + 1] = ++nstacks;
        }
        t.stack[last] = (uint32_t)ids[2 * s + 1];
        last = UINT32_MAX;
      }
    }
    for (i = 0; i < t.n; i++) leaked += t.died[i] == INT64_MAX;
    hs_reader_close(r);
    t0 = now() - t0;
    c0 = cpu_now() - c0;
    if (best < 0 || t0 < best) best = t0;
    if (best_cpu < 0 || c0 < best_cpu) best_cpu = c0;
    records = t.n;
    free(t.born); free(t.died); free(t.addr); free(t.heap); free(t.bytes); free(t.stack);
    free(m.s);
    free(ids);
  }
  printf("floor %.6f %llu %zu %llu %u %.6f\n", best, (unsigned long long)events, records,
         (unsigned long long)leaked, nstacks, best_cpu);
  return 0;
}
