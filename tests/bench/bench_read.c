/*
** bench_read.c -- decode throughput against reading the same bytes.
** For each file: the best of N runs of (a) read(2) of the whole file in
** 1 MiB chunks, as cat does, from the page cache; (b) opening it and
** walking every record with hs_reader_next.  Prints MB/s, events/s and
** the ratio b/a.  Used by `make bench`; never by a test.
**   bench_read FILE...        the table
**   bench_read -t RUNS FILE   one line: read_seconds walk_seconds events bytes
**                             walk_cpu_seconds (processor time of every thread)
*/
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "heapscript.h"
#include "clock.h"

static double read_all(const char *path, unsigned long long *bytes) {
  static char buf[1 << 20];
  double t0 = now();
  ssize_t n;
  unsigned sum = 0;
  int fd = open(path, O_RDONLY);
  *bytes = 0;
  if (fd < 0) return -1;
  while ((n = read(fd, buf, sizeof buf)) > 0) { *bytes += (unsigned long long)n; sum += (unsigned char)buf[0]; }
  close(fd);
  (void)sum;
  return now() - t0;
}

static double walk_cpu;       /* of the last walk */

static double walk(const char *path, unsigned long long *events) {
  hs_reader *r;
  hs_event ev;
  char err[HS_ERRLEN];
  double t0 = now(), c0 = cpu_now();
  uint64_t acc = 0;
  *events = 0;
  if (hs_reader_open(&r, &path, 1, NULL, err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); return -1; }
  while (hs_reader_next(r, &ev) == 1) { (*events)++; acc += ev.payload_len; }
  hs_reader_close(r);
  (void)acc;
  walk_cpu = cpu_now() - c0;
  return now() - t0;
}

int main(int argc, char **argv) {
  int i, k, runs = 5;
  if (argc == 4 && strcmp(argv[1], "-t") == 0) {
    double tr = 1e9, tw = 1e9, tc = 1e9;
    unsigned long long bytes = 0, events = 0;
    runs = atoi(argv[2]) > 0 ? atoi(argv[2]) : 1;
    for (k = 0; k < runs; k++) {
      double a = read_all(argv[3], &bytes), b = walk(argv[3], &events);
      if (a < 0 || b < 0) return 1;
      if (a < tr) tr = a;
      if (b < tw) tw = b;
      if (walk_cpu < tc) tc = walk_cpu;
    }
    printf("%.6f %.6f %llu %llu %.6f\n", tr, tw, events, bytes, tc);
    return 0;
  }
  printf("%-58s %10s %10s %12s %10s %8s\n", "file", "MB", "read MB/s", "decode MB/s", "Mevents/s", "ratio");
  for (i = 1; i < argc; i++) {
    double tr = 1e9, tw = 1e9, mb;
    unsigned long long bytes = 0, events = 0;
    const char *base = strrchr(argv[i], '/');
    for (k = 0; k < runs; k++) {
      double a = read_all(argv[i], &bytes), b = walk(argv[i], &events);
      if (a < 0 || b < 0) return 1;
      if (a < tr) tr = a;
      if (b < tw) tw = b;
    }
    mb = (double)bytes / 1e6;
    printf("%-58.58s %10.1f %10.0f %12.0f %10.2f %8.2f\n", base ? base + 1 : argv[i], mb, mb / tr, mb / tw,
           (double)events / tw / 1e6, tw / tr);
  }
  return 0;
}
