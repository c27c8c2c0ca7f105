/*
** bench_lifetime.c -- throughput of the lifetime tracker and of the
** window queries on synthetic heap traffic: N memops (default 5 million)
** of balanced alloc/free around ~64k live blocks, with reallocs, several
** threads and heaps, addresses reused the way an allocator reuses them,
** and 1% of allocations leaked.  Prints events/s for the tracker (memop
** generation not counted), the query timings, bytes held per record and
** the peak RSS (VmHWM) when /proc/self/status has it.
**
**   make build/rel/bench_lifetime && build/rel/bench_lifetime [N]   (make bench runs it)
**
** Not a test: make bench runs it.  Build with
** -DBENCH_LIFETIME_NO_MAIN to call bench_lifetime_run() from elsewhere.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "lifetime.h"
#include "query.h"
#include "clock.h"

static long vm_hwm_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0) { kb = strtol(line + 6, NULL, 10); break; }
  fclose(f);
  return kb;
}

static uint64_t rs = 0x243F6A8885A308D3ull;
static uint64_t rnd(void) {
  rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
  return rs;
}

#define CHUNK 65536
#define TARGET_LIVE 65536
#define HEAPS 4

struct blk { uint64_t heap, addr, size; };

/* Feeds n memops; returns 0 or a negative code. */
int bench_lifetime_run(long n) {
  hsi_life *L = hsi_life_new();
  hsi_memop *ops = malloc(CHUNK * sizeof *ops);
  struct blk *live = malloc((TARGET_LIVE * 2 + 16) * sizeof *live);
  uint64_t *freed = malloc((TARGET_LIVE * 4 + 16) * sizeof *freed);
  size_t nlive = 0, nfreed = 0, nfreed_cap = TARGET_LIVE * 4;
  uint64_t next = 0x10000000, leaked = 0;
  long done = 0, k;
  int64_t ts = 1000;
  double t_feed = 0, t0;
  hsi_agg a;
  hsi_groups g;
  hsi_series se;
  const hsi_life_stats *st;
  if (!L || !ops || !live || !freed) return HS_ENOMEM;
  while (done < n) {
    long m = n - done < CHUNK ? n - done : CHUNK;
    for (k = 0; k < m; k++) {
      hsi_memop *op = &ops[k];
      unsigned r = (unsigned)(rnd() % 100);
      memset(op, 0, sizeof *op);
      ts += 1 + (int64_t)(rnd() % 8);
      op->ts = ts;
      op->pid = 4242;
      op->tid = 100 + (uint32_t)(rnd() % 8);
      op->source = 2;
      op->pointer_size = 8;
      if (nlive && (r < 5)) {                       /* realloc, in place or moving */
        size_t i = rnd() % nlive;
        op->kind = HSI_OP_HEAP_REALLOC;
        op->heap = live[i].heap;
        op->old_addr = live[i].addr;
        op->old_size = live[i].size;
        op->size = 16 + rnd() % 4096;
        op->addr = (rnd() & 1) ? live[i].addr : (next += 0x40);
        live[i].addr = op->addr;
        live[i].size = op->size;
      } else if (nlive && (nlive >= TARGET_LIVE * 2 || (nlive > TARGET_LIVE / 2 && r < 52))) {
        size_t i = rnd() % nlive;                   /* free */
        op->kind = HSI_OP_HEAP_FREE;
        op->heap = live[i].heap;
        op->addr = live[i].addr;
        if (nfreed < nfreed_cap) freed[nfreed++] = live[i].addr;
        live[i] = live[--nlive];
      } else {                                      /* alloc, reusing freed addresses */
        op->kind = HSI_OP_HEAP_ALLOC;
        op->heap = 0x100000 * (1 + rnd() % HEAPS);
        op->size = 8 + rnd() % 512;
        if (nfreed && (rnd() & 3)) {
          size_t i = rnd() % nfreed;
          op->addr = freed[i];
          freed[i] = freed[--nfreed];
        } else {
          op->addr = (next += 0x40);
        }
        if (rnd() % 100 == 0) leaked++;             /* never freed */
        else { live[nlive].heap = op->heap; live[nlive].addr = op->addr; live[nlive].size = op->size; nlive++; }
      }
    }
    t0 = now();
    for (k = 0; k < m; k++)
      if (hsi_life_feed(L, &ops[k], 1, NULL)) { fprintf(stderr, "feed failed\n"); return HS_ENOMEM; }
    t_feed += now() - t0;
    done += m;
  }
  st = hsi_life_stats_get(L);
  printf("lifetime: %ld memops in %.3f s: %.2f M events/s\n", n, t_feed, (double)n / t_feed / 1e6);
  printf("lifetime: %zu records (%llu leaked allocs, %zu live at end), %llu summary reallocs, "
         "%llu lone, %llu frees of unknown blocks\n",
         hsi_life_recs(L)->n, (unsigned long long)leaked, hsi_life_live(L),
         (unsigned long long)st->heap_realloc_summary, (unsigned long long)st->heap_realloc_lone,
         (unsigned long long)st->heap_free_unknown);
  hsi_life_trim(L);
  printf("lifetime: tracker holds %.1f MB, %.1f bytes per record\n",
         (double)hsi_life_memory(L) / 1e6, (double)hsi_life_memory(L) / (double)hsi_life_recs(L)->n);
  {
    int64_t t1, t2;
    hsi_life_span(L, &t1, &t2);
    t0 = now();
    hsi_query_agg(L, NULL, t1 + (t2 - t1) / 4, t2 - (t2 - t1) / 4, HSI_AGG_PEAK, &a);
    printf("query: window aggregate with peak over %zu records: %.3f s (impacting %lld, peak %llu)\n",
           hsi_life_recs(L)->n, now() - t0, (long long)a.impacting, (unsigned long long)a.peak);
    t0 = now();
    hsi_query_group(L, NULL, t1, t2, HSI_BY_SIZE, NULL, HSI_AGG_PEAK, &g);
    hsi_groups_sort(&g, HSI_F_IMPACTING, 1);
    printf("query: group by size (%zu groups) with peaks, sorted: %.3f s\n", g.n, now() - t0);
    hsi_groups_free(&g);
    t0 = now();
    hsi_query_series(L, NULL, t1, t2, 1000, &se);
    printf("query: series of 1000 points: %.3f s\n", now() - t0);
    hsi_series_free(&se);
  }
  {
    long kb = vm_hwm_kb();
    if (kb >= 0) printf("lifetime: peak RSS (VmHWM) %.1f MB\n", (double)kb / 1024);
    else printf("lifetime: peak RSS unknown (no /proc/self/status)\n");
  }
  hsi_life_free(L);
  free(ops);
  free(live);
  free(freed);
  return 0;
}

#ifndef BENCH_LIFETIME_NO_MAIN
int main(int argc, char **argv) {
  long n = argc > 1 ? strtol(argv[1], NULL, 10) : 5000000;
  if (n <= 0) n = 5000000;
  return bench_lifetime_run(n) ? 1 : 0;
}
#endif
