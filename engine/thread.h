/*
** thread.h -- the few thread primitives the engine uses (the prefetch
** thread, the per-CPU decoding workers of etl.c, the live store and the
** replay source): POSIX threads, or
** Windows threads and condition variables, behind small wrappers.  And
** the one switch for all of them: HEAPSCRIPT_THREADS=0 turns every extra
** thread off (results are the same either way; tests compare them).
*/
#ifndef HS_THREAD_H
#define HS_THREAD_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#ifndef _WIN32_WINNT
#define _WIN32_WINNT 0x0600          /* condition variables: Vista and later */
#endif
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
typedef HANDLE hsi_thread;
typedef CRITICAL_SECTION hsi_mutex;
typedef CONDITION_VARIABLE hsi_cond;
static inline void hsi_mx_init(hsi_mutex *m) { InitializeCriticalSection(m); }
static inline void hsi_mx_free(hsi_mutex *m) { DeleteCriticalSection(m); }
static inline void hsi_mx_lock(hsi_mutex *m) { EnterCriticalSection(m); }
static inline void hsi_mx_unlock(hsi_mutex *m) { LeaveCriticalSection(m); }
static inline void hsi_cv_init(hsi_cond *c) { InitializeConditionVariable(c); }
static inline void hsi_cv_free(hsi_cond *c) { (void)c; }
static inline void hsi_cv_wait(hsi_cond *c, hsi_mutex *m) { SleepConditionVariableCS(c, m, INFINITE); }
static inline void hsi_cv_signal(hsi_cond *c) { WakeConditionVariable(c); }
static inline void hsi_cv_broadcast(hsi_cond *c) { WakeAllConditionVariable(c); }
/* Wait at most ms milliseconds (a wake-up may come early). */
static inline void hsi_cv_timedwait(hsi_cond *c, hsi_mutex *m, int ms) { SleepConditionVariableCS(c, m, (DWORD)ms); }
static inline void hsi_sleep_ms(int ms) { Sleep((DWORD)ms); }
/* A monotonic clock in milliseconds. */
static inline double hsi_now_ms(void) {
  LARGE_INTEGER f, c;
  QueryPerformanceFrequency(&f); QueryPerformanceCounter(&c);
  return (double)c.QuadPart * 1000.0 / (double)f.QuadPart;
}
#define HSI_THREAD_FN DWORD WINAPI
#define HSI_THREAD_RET 0
static inline int hsi_th_start(hsi_thread *t, LPTHREAD_START_ROUTINE fn, void *arg) {
  *t = CreateThread(NULL, 0, fn, arg, 0, NULL);
  return *t ? 0 : -1;
}
static inline void hsi_th_join(hsi_thread t) { WaitForSingleObject(t, INFINITE); CloseHandle(t); }
static inline int hsi_ncpu(void) {
  SYSTEM_INFO si;
  GetSystemInfo(&si);
  return si.dwNumberOfProcessors > 0 ? (int)si.dwNumberOfProcessors : 1;
}
#else
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
typedef pthread_t hsi_thread;
typedef pthread_mutex_t hsi_mutex;
typedef pthread_cond_t hsi_cond;
static inline void hsi_mx_init(hsi_mutex *m) { pthread_mutex_init(m, NULL); }
static inline void hsi_mx_free(hsi_mutex *m) { pthread_mutex_destroy(m); }
static inline void hsi_mx_lock(hsi_mutex *m) { pthread_mutex_lock(m); }
static inline void hsi_mx_unlock(hsi_mutex *m) { pthread_mutex_unlock(m); }
static inline void hsi_cv_init(hsi_cond *c) { pthread_cond_init(c, NULL); }
static inline void hsi_cv_free(hsi_cond *c) { pthread_cond_destroy(c); }
static inline void hsi_cv_wait(hsi_cond *c, hsi_mutex *m) { pthread_cond_wait(c, m); }
static inline void hsi_cv_signal(hsi_cond *c) { pthread_cond_signal(c); }
static inline void hsi_cv_broadcast(hsi_cond *c) { pthread_cond_broadcast(c); }
static inline void hsi_cv_timedwait(hsi_cond *c, hsi_mutex *m, int ms) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
  pthread_cond_timedwait(c, m, &ts);
}
static inline void hsi_sleep_ms(int ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (long)(ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}
static inline double hsi_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}
#define HSI_THREAD_FN void *
#define HSI_THREAD_RET NULL
/* Worker threads take no signals sent to the process: their handlers
   (Ctrl-C, the CPU time limit of lua_sandbox.c) set hooks on the main
   thread's Lua state.  They do take the SIGBUS their own reads raise: a
   view's page the file cannot give (mapfile.c), else the kernel would
   kill the process for a blocked fault. */
static inline int hsi_th_start(hsi_thread *t, void *(*fn)(void *), void *arg) {
  sigset_t all, old;
  int rc;
  sigfillset(&all);
  sigdelset(&all, SIGBUS);
  sigdelset(&all, SIGSEGV);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  rc = pthread_create(t, NULL, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}
static inline void hsi_th_join(hsi_thread t) { pthread_join(t, NULL); }
static inline int hsi_ncpu(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}
#endif

/* An int read outside the lock that guards its writes (a spin before
   sleeping): the writes are hsi_atomic_set, also under the lock. */
#if defined(__GNUC__) || defined(__clang__)
static inline int hsi_atomic_get(const int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void hsi_atomic_set(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
#else
static inline int hsi_atomic_get(const int *p) { return *(const volatile int *)p; }
static inline void hsi_atomic_set(int *p, int v) { *(volatile int *)p = v; }
#endif

/*
** Decoding workers for a walk on a machine of ncpu cores when its caller
** keeps `beside` threads of its own busy next to the walk's (the analysis
** pass: its thread beside the prefetch thread that walks): one core for
** the walk, one for each of those, the rest for workers.  A walk alone
** gets one worker even on one core (reading overlaps decoding); a walk
** with company gets none rather than a third thread on two cores, which
** takes its core from the busiest thread in turns (the pass on the
** generated 5M-event trace: 0.569 s with a worker, 0.514 s without).
*/
static inline int hsi_auto_workers(int ncpu, int beside) {
  int n = ncpu - 1 - (beside > 0 ? beside : 0);
  return n > 0 ? n : beside > 0 ? 0 : 1;
}

/* A trace smaller than this (all its files together) is walked without
   decoding workers (etl.c) and analysed without a prefetch thread
   (analysis.c): a thread's start, its hand-over and its first touch of
   memory cost more there than the decoding they overlap. */
#define HSI_THREADS_MIN_BYTES (4u << 20)

/* How many extra threads a pass may start: HEAPSCRIPT_THREADS=0 none,
   =N at most N, unset or empty: `dflt`. */
static inline int hsi_threads_allowed(int dflt) {
  const char *env = getenv("HEAPSCRIPT_THREADS");
  if (!env || !*env) return dflt;
  if (env[0] < '0' || env[0] > '9') return dflt;
  return atoi(env);
}

/*
** Memory that one thread writes for every event while another thread
** writes its own for every event too (the pass: the reading thread's
** file counters, attribution and layout checks; the analysis thread's
** counters) must not share a cache line with the other's: each write
** would take the line from the other core.  malloc places small blocks
** side by side, so which ones met depended on what was allocated before
** (measured: the same pass 20% slower in `heapscript leaks` than in
** `bench_analysis` after a 136-byte change of an unrelated struct).
** hsi_line_calloc(n): n zeroed bytes on lines of their own (64-byte
** aligned, nothing else up to the next line); hsi_line_free frees them.
*/
#define HSI_LINE 64
static inline void *hsi_line_calloc(size_t n) {
  unsigned char *raw, *p;
  if (n > (size_t)-1 - 2 * HSI_LINE - sizeof(void *)) return NULL;
  if (!(raw = (unsigned char *)calloc(1, n + 2 * HSI_LINE + sizeof(void *)))) return NULL;
  p = raw + sizeof(void *);
  p += (HSI_LINE - (size_t)((uintptr_t)p % HSI_LINE)) % HSI_LINE;
  ((void **)p)[-1] = raw;
  return p;
}
static inline void hsi_line_free(void *p) {
  if (p) free(((void **)p)[-1]);
}
/* p (from hsi_line_calloc, or NULL) grown to n bytes on lines of their
   own, its first `keep` bytes kept and the rest zeroed; NULL when the
   memory cannot be had, and then p is untouched. */
static inline void *hsi_line_grow(void *p, size_t keep, size_t n) {
  void *q = hsi_line_calloc(n);
  if (!q) return NULL;
  if (keep) memcpy(q, p, keep < n ? keep : n);
  hsi_line_free(p);
  return q;
}
#endif
