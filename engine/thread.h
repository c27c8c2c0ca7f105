/*
** thread.h -- the few thread calls the engine uses (the prefetch reader,
** the live store and the replay source), on Windows threads or pthreads.
** Static functions: each file that includes it gets its own copies.
*/
#ifndef HS_THREAD_H
#define HS_THREAD_H
#if defined(_WIN32)
#ifndef _WIN32_WINNT
#define _WIN32_WINNT 0x0600          /* condition variables: Vista and later */
#endif
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
typedef HANDLE thread_t;
typedef CRITICAL_SECTION mutex_t;
typedef CONDITION_VARIABLE cond_t;
static inline void mx_init(mutex_t *m) { InitializeCriticalSection(m); }
static inline void mx_free(mutex_t *m) { DeleteCriticalSection(m); }
static inline void mx_lock(mutex_t *m) { EnterCriticalSection(m); }
static inline void mx_unlock(mutex_t *m) { LeaveCriticalSection(m); }
static inline void cv_init(cond_t *c) { InitializeConditionVariable(c); }
static inline void cv_free(cond_t *c) { (void)c; }
static inline void cv_wait(cond_t *c, mutex_t *m) { SleepConditionVariableCS(c, m, INFINITE); }
static inline void cv_signal(cond_t *c) { WakeConditionVariable(c); }
static inline void cv_broadcast(cond_t *c) { WakeAllConditionVariable(c); }
/* Wait at most ms milliseconds (a wake-up may come early). */
static inline void cv_timedwait(cond_t *c, mutex_t *m, int ms) { SleepConditionVariableCS(c, m, (DWORD)ms); }
static inline void hsi_sleep_ms(int ms) { Sleep((DWORD)ms); }
/* A monotonic clock in milliseconds. */
static inline double hsi_now_ms(void) {
  LARGE_INTEGER f, c;
  QueryPerformanceFrequency(&f); QueryPerformanceCounter(&c);
  return (double)c.QuadPart * 1000.0 / (double)f.QuadPart;
}
#define THREAD_FN DWORD WINAPI
#define THREAD_RET 0
static inline int th_start(thread_t *t, LPTHREAD_START_ROUTINE fn, void *arg) {
  *t = CreateThread(NULL, 0, fn, arg, 0, NULL);
  return *t ? 0 : -1;
}
static inline void th_join(thread_t t) { WaitForSingleObject(t, INFINITE); CloseHandle(t); }
#else
#include <pthread.h>
#include <signal.h>
#include <time.h>
typedef pthread_t thread_t;
typedef pthread_mutex_t mutex_t;
typedef pthread_cond_t cond_t;
static inline void mx_init(mutex_t *m) { pthread_mutex_init(m, NULL); }
static inline void mx_free(mutex_t *m) { pthread_mutex_destroy(m); }
static inline void mx_lock(mutex_t *m) { pthread_mutex_lock(m); }
static inline void mx_unlock(mutex_t *m) { pthread_mutex_unlock(m); }
static inline void cv_init(cond_t *c) { pthread_cond_init(c, NULL); }
static inline void cv_free(cond_t *c) { pthread_cond_destroy(c); }
static inline void cv_wait(cond_t *c, mutex_t *m) { pthread_cond_wait(c, m); }
static inline void cv_signal(cond_t *c) { pthread_cond_signal(c); }
static inline void cv_broadcast(cond_t *c) { pthread_cond_broadcast(c); }
static inline void cv_timedwait(cond_t *c, mutex_t *m, int ms) {
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
#define THREAD_FN void *
#define THREAD_RET NULL
/* Worker threads take no signals: their handlers (Ctrl-C, the CPU time
   limit of lua_sandbox.c) set hooks on the main thread's Lua state. */
static inline int th_start(thread_t *t, void *(*fn)(void *), void *arg) {
  sigset_t all, old;
  int rc;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  rc = pthread_create(t, NULL, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}
static inline void th_join(thread_t t) { pthread_join(t, NULL); }
#endif
#endif
