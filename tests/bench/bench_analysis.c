/*
** bench_analysis.c -- lifetime tracking end to end against the plain
** decode of the same file, each in its own process so peak memory is its
** own:  bench_analysis walk|analyse FILE [RUNS].  Prints one line: mode,
** seconds (best of RUNS, default 3), events, events/s, records, peak RSS and anonymous RSS in MB.
** Anonymous memory is what the engine allocated; the rest of RSS is the
** mapped trace, page cache the kernel can drop.  With the analysis on two
** threads, a second line on stderr says where they waited (prefetch.h).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "heapscript.h"
#include "clock.h"
#include "analysis.h"

static double status_mb(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  double v = 0;
  size_t n = strlen(key);
  if (!f) return 0;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0) { v = atof(line + n + 1) / 1024.0; break; }
  fclose(f);
  return v;
}

int main(int argc, char **argv) {
  const char *path;
  double best = 1e9, best_cpu = 1e9, anon = 0;
  hsi_prefetch_counts ring = {0, 0, 0, 0, 0}, ring_best = {0, 0, 0, 0, 0};
  unsigned long long events = 0, records = 0;
  int k, analyse, runs = argc == 4 ? atoi(argv[3]) : 3;
  if ((argc != 3 && argc != 4) || runs < 1) {
    fprintf(stderr, "usage: bench_analysis walk|analyse FILE [RUNS]\n");
    return 2;
  }
  analyse = strcmp(argv[1], "analyse") == 0;
  path = argv[2];
  for (k = 0; k < runs; k++) {
    hs_reader *r;
    hs_event ev;
    char err[HS_ERRLEN];
    double t0 = now(), c0 = cpu_now(), t, c;
    if (hs_reader_open(&r, &path, 1, NULL, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    if (analyse) {
      hsi_analysis *a;
      if (hsi_analysis_run(r, NULL, &a, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
      events = hsi_analysis_counts_get(a)->events;
      records = hsi_life_recs(hsi_analysis_life(a))->n;
      ring = *hsi_analysis_ring(a);
      anon = status_mb("RssAnon:");
      t = now() - t0;
      c = cpu_now() - c0;
      hsi_analysis_free(a);
    } else {
      events = 0;
      while (hs_reader_next(r, &ev) == 1) events++;
      anon = status_mb("RssAnon:");
      t = now() - t0;
      c = cpu_now() - c0;
    }
    hs_reader_close(r);
    if (analyse && t < best) ring_best = ring;
    if (t < best) best = t;
    if (c < best_cpu) best_cpu = c;
  }
  printf("%-8s %8.3f s %10llu events %7.2f Mevents/s %10llu records  peak RSS %7.1f MB  anon %7.1f MB"
         "  cpu %.3f s\n", argv[1], best, events, (double)events / best / 1e6, records, status_mb("VmHWM:"), anon,
         best_cpu);
  /* Where the pass's two threads waited (the best run), on stderr: the
     line above is what tests/bench.sh reads field by field. */
  if (analyse && ring_best.blocks)
    fprintf(stderr, "ring of the best run: %llu blocks; the reading thread found it full %llu times, "
            "the analysis thread empty %llu times (then decoded %llu chunks for the reader, slept %llu times)\n",
            (unsigned long long)ring_best.blocks, (unsigned long long)ring_best.full,
            (unsigned long long)ring_best.empty, (unsigned long long)ring_best.helped,
            (unsigned long long)ring_best.slept);
  return 0;
}
