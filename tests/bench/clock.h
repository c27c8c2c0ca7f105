/*
** clock.h -- the bench programs' clocks: wall time, and the processor
** time of the whole process (every thread, those already ended too), so
** that a figure can say how much work a stage was as well as how long it
** took.
*/
#ifndef HS_BENCH_CLOCK_H
#define HS_BENCH_CLOCK_H
#include <time.h>

static inline double clock_of(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline double now(void) { return clock_of(CLOCK_MONOTONIC); }
static inline double cpu_now(void) { return clock_of(CLOCK_PROCESS_CPUTIME_ID); }
#endif
