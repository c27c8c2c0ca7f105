/*
** mapfile.c -- map a trace file (or a PDB) read-only.  Traces can be many
** GB, so the reader works on the mapping (64-bit offsets throughout) and
** the page cache does the buffering.  An empty file maps to size 0 with no
** data.  On POSIX a view's pages that the file cannot give read as zeros
** instead of raising SIGBUS, and the readers ask (the guard, below); on
** Windows such a page ends the run with one line naming the file and the
** offset, where it would have died of an unhandled exception.
*/
#ifndef _WIN32
#define _DEFAULT_SOURCE 1     /* madvise(MADV_DONTNEED) */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include "heapscript.h"
#include "mapfile.h"
#include "osfile.h"

const char *hsi_map_loss(int cut) {
  return cut ? "the file holds (it was cut short after it was opened)"
             : "the device can read (a page of them could not be read: a disk or network error)";
}

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

/* ----------------------------------------------------------- the guard

   On Windows a view's page that cannot be read (a disk or network error:
   a trace on a share that went away) raises EXCEPTION_IN_PAGE_ERROR when
   it is read (Wine raises an access violation for a file cut short under
   it; Windows itself refuses to cut a mapped file).  A part of a view
   cannot be replaced as on POSIX, so the reading cannot go on: a
   vectored handler finds the view the address is in, says which file and
   offset could not be read, and ends the process with status 2 (a trace
   that cannot be read), where it would have died of an unhandled
   exception.  An address in no view goes on to the other handlers. */

#define GUARDS 512
typedef struct guard {
  volatile LONG_PTR lo;     /* the view's addresses; lo 0: a free slot */
  volatile LONG_PTR hi;
  HANDLE file;
  char path[MAX_PATH * 3];
} guard;
static guard guards[GUARDS];
static volatile LONG installed, stopping;

static LONG CALLBACK on_fault(EXCEPTION_POINTERS *ep) {
  const EXCEPTION_RECORD *r = ep->ExceptionRecord;
  ULONG_PTR a;
  size_t i;
  if ((r->ExceptionCode != EXCEPTION_IN_PAGE_ERROR && r->ExceptionCode != EXCEPTION_ACCESS_VIOLATION)
      || r->NumberParameters < 2 || r->ExceptionInformation[0] != 0)    /* a read */
    return EXCEPTION_CONTINUE_SEARCH;
  a = r->ExceptionInformation[1];
  for (i = 0; i < GUARDS; i++) {
    guard *g = &guards[i];
    ULONG_PTR lo = (ULONG_PTR)g->lo, hi = (ULONG_PTR)g->hi;
    LARGE_INTEGER sz;
    char msg[MAX_PATH * 3 + 300];
    DWORD n;
    int k, cut;
    if (!lo || a < lo || a >= hi) continue;
    if (InterlockedExchange(&stopping, 1)) Sleep(INFINITE);   /* another thread says it and ends the process */
    cut = GetFileSizeEx(g->file, &sz) && (uint64_t)sz.QuadPart <= (uint64_t)(a - lo);
    k = snprintf(msg, sizeof msg, "heapscript: %s: offset 0x%llx: expected bytes %s; stopped\n", g->path,
                 (unsigned long long)(a - lo), hsi_map_loss(cut));
    if (k > 0) WriteFile(GetStdHandle(STD_ERROR_HANDLE), msg, (DWORD)(k < (int)sizeof msg ? k : (int)sizeof msg - 1), &n, NULL);
    ExitProcess(2);
  }
  return EXCEPTION_CONTINUE_SEARCH;
}

static void guard_on(hsi_map *m, const char *path) {
  size_t i;
  if (InterlockedCompareExchange(&installed, 1, 0) == 0) AddVectoredExceptionHandler(1, on_fault);
  for (i = 0; i < GUARDS; i++) {
    guard *g = &guards[i];
    if (g->lo || InterlockedCompareExchangePointer((PVOID volatile *)&g->lo, (PVOID)m->data, NULL) != NULL) continue;
    g->file = (HANDLE)m->handle;
    snprintf(g->path, sizeof g->path, "%s", path);
    InterlockedExchangePointer((PVOID volatile *)&g->hi, (PVOID)(m->data + m->size));
    m->guard = (int)i + 1;
    return;
  }
}

static void guard_off(hsi_map *m) {
  guard *g;
  if (!m->guard) return;
  g = &guards[m->guard - 1];
  InterlockedExchangePointer((PVOID volatile *)&g->hi, NULL);
  InterlockedExchangePointer((PVOID volatile *)&g->lo, NULL);
  m->guard = 0;
}

int hsi_map_open(hsi_map *m, const char *path, char *err, size_t errlen) {
  HANDLE f, map;
  LARGE_INTEGER sz;
  wchar_t *wp = hsi_wide(path);          /* UTF-8 path: the wide call */
  DWORD e;
  memset(m, 0, sizeof *m);
  if (wp)
    f = CreateFileW(wp, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL,
                    OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
  else
    f = CreateFileA(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL,
                    OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
  e = GetLastError();
  free(wp);
  if (f == INVALID_HANDLE_VALUE) {
    /* the same words as strerror's on POSIX, so messages match */
    snprintf(err, errlen, "%s: cannot open: %s", path,
             e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND ? "No such file or directory" :
             e == ERROR_ACCESS_DENIED ? "Permission denied" : "Windows error");
    return HS_EIO;
  }
  if (GetFileType(f) != FILE_TYPE_DISK) {
    snprintf(err, errlen, "%s: not a regular file", path);
    CloseHandle(f);
    return HS_EIO;
  }
  if (!GetFileSizeEx(f, &sz)) {
    snprintf(err, errlen, "%s: cannot read its size", path);
    CloseHandle(f);
    return HS_EIO;
  }
  m->size = (uint64_t)sz.QuadPart;
  if (m->size == 0) { CloseHandle(f); return 0; }
  map = CreateFileMappingA(f, NULL, PAGE_READONLY, 0, 0, NULL);
  if (!map) { CloseHandle(f); snprintf(err, errlen, "%s: cannot map", path); return HS_EIO; }
  m->data = (const uint8_t *)MapViewOfFile(map, FILE_MAP_READ, 0, 0, 0);
  CloseHandle(map);
  if (!m->data) { CloseHandle(f); snprintf(err, errlen, "%s: cannot map view", path); return HS_EIO; }
  m->handle = f;                         /* kept for hsi_map_read and the guard */
  guard_on(m, path);
  return 0;
}

void hsi_map_close(hsi_map *m) {
  guard_off(m);                          /* before the pages go */
  if (m->data) UnmapViewOfFile((LPCVOID)m->data);
  if (m->handle) CloseHandle((HANDLE)m->handle);
  memset(m, 0, sizeof *m);
}

static uint64_t page_size(void) {
  SYSTEM_INFO si;
  GetSystemInfo(&si);
  return si.dwPageSize ? si.dwPageSize : 4096;
}

/* VirtualUnlock on pages that are not locked takes them out of the
   working set: the view's pages the reader is done with no longer count
   in the process's memory (they stay in the file cache). */
static void drop_pages(const uint8_t *p, uint64_t len) { (void)VirtualUnlock((LPVOID)p, (SIZE_T)len); }

void hsi_map_advise(hsi_map *m, int sequential) { (void)m; (void)sequential; }

/* Positional reads of a synchronous handle (ReadFile with an OVERLAPPED
   offset): thread-safe, as pread. */
int hsi_map_read(const hsi_map *m, uint64_t off, void *buf, size_t len) {
  uint8_t *p = (uint8_t *)buf;
  if (!m->handle || off > m->size || len > m->size - off) return -1;
  while (len) {
    OVERLAPPED ov;
    DWORD want = len > (1u << 30) ? (1u << 30) : (DWORD)len, got = 0;
    memset(&ov, 0, sizeof ov);
    ov.Offset = (DWORD)off;
    ov.OffsetHigh = (DWORD)(off >> 32);
    if (!ReadFile((HANDLE)m->handle, p, want, &got, &ov) || got == 0) return -1;
    p += got; off += got; len -= got;
  }
  return 0;
}

int hsi_map_check(const hsi_map *m, uint64_t off, uint64_t len, uint64_t *bad, int *cut) {
  (void)m; (void)off; (void)len; (void)bad; (void)cut;
  return 0;
}

int hsi_map_lost(const hsi_map *m, uint64_t *at, int *cut) { (void)m; (void)at; (void)cut; return 0; }

#else
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ----------------------------------------------------------- the guard

   A view's page that the file cannot give raises SIGBUS when it is read:
   past the end of a file cut short after it was mapped, or where the
   device fails to read it (a bad sector, a network share gone away).
   The handler finds the view the address is in, maps a page of zeros
   over the lost page (over every page from it to the view's end when the
   file now ends before it), notes the range on the view's slot and
   returns: the read that faulted runs again and reads zeros.  The readers
   learn of it from hsi_map_check, never from the zeros.  An address in no
   view goes to the handler that was there before (or to the default
   action: the process dies of SIGBUS, as it would have).

   The handler reads the slots without locks: a slot is claimed with a
   compare-and-swap of lo (0 = free), hi is set after it and cleared
   first when the view is closed, so a slot being filled or emptied
   matches no address.  Its lost ranges are claimed with an atomic
   increment (two threads may fault in one view at once) and published
   with their own flag. */

#define GUARDS 512          /* views guarded at once (traces and PDBs) */
#define LOST 8              /* lost ranges noted per view; more: all of it from the first */

typedef struct lost { uint64_t from, to; int cut, ready; } lost;
typedef struct guard {
  uintptr_t lo, hi;         /* the view's addresses; lo 0: a free slot */
  int fd;
  unsigned nlost;           /* ranges claimed (may pass LOST: the overflow) */
  lost l[LOST];
} guard;

static guard guards[GUARDS];
static uintptr_t pagesize;
static struct sigaction old_bus;
static pthread_once_t installed = PTHREAD_ONCE_INIT;

static void on_bus(int sig, siginfo_t *si, void *ctx) {
  uintptr_t a = (uintptr_t)si->si_addr;
  size_t i;
  if (si->si_code == BUS_ADRERR)
    for (i = 0; i < GUARDS; i++) {
      guard *g = &guards[i];
      uintptr_t lo = __atomic_load_n(&g->lo, __ATOMIC_ACQUIRE), hi = __atomic_load_n(&g->hi, __ATOMIC_ACQUIRE);
      uintptr_t page = a & ~(pagesize - 1), end = page + pagesize;
      struct stat st;
      int cut;
      unsigned k;
      if (!lo || a < lo || a >= hi) continue;
      /* the page holding the new end of a cut file reads (zeros past the
         end): a page that faults lies wholly past it, or the device failed */
      cut = fstat(g->fd, &st) == 0 && (uint64_t)st.st_size <= page - lo;
      /* past LOST ranges the whole view is in doubt anyway: the rest of it
         at once, rather than a mapping a page (their number is bounded) */
      if (cut || __atomic_load_n(&g->nlost, __ATOMIC_ACQUIRE) >= LOST) end = (hi + pagesize - 1) & ~(pagesize - 1);
      if (mmap((void *)page, end - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
        break;
      k = __atomic_fetch_add(&g->nlost, 1, __ATOMIC_ACQ_REL);
      if (k < LOST) {
        g->l[k].from = page - lo;
        g->l[k].to = end - lo;
        g->l[k].cut = cut;
        __atomic_store_n(&g->l[k].ready, 1, __ATOMIC_RELEASE);
      }
      return;
    }
  if (old_bus.sa_flags & SA_SIGINFO) { old_bus.sa_sigaction(sig, si, ctx); return; }
  if (old_bus.sa_handler != SIG_DFL && old_bus.sa_handler != SIG_IGN) { old_bus.sa_handler(sig); return; }
  /* not ours: the default action, when the read runs again */
  signal(SIGBUS, SIG_DFL);
}

static void install(void) {
  struct sigaction sa;
  long ps = sysconf(_SC_PAGESIZE);
  pagesize = ps > 0 ? (uintptr_t)ps : 4096;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_bus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGBUS, &sa, &old_bus) != 0) memset(&old_bus, 0, sizeof old_bus);
}

static void guard_on(hsi_map *m, int fd) {
  size_t i;
  pthread_once(&installed, install);
  for (i = 0; i < GUARDS; i++) {
    uintptr_t free_lo = 0;
    guard *g = &guards[i];
    if (__atomic_load_n(&g->lo, __ATOMIC_RELAXED)) continue;
    if (!__atomic_compare_exchange_n(&g->lo, &free_lo, (uintptr_t)m->data, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
      continue;
    g->fd = fd;
    __atomic_store_n(&g->nlost, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g->hi, (uintptr_t)m->data + (uintptr_t)m->size, __ATOMIC_RELEASE);
    m->guard = (int)i + 1;
    return;
  }
}

static void guard_off(hsi_map *m) {
  guard *g;
  unsigned k;
  if (!m->guard) return;
  g = &guards[m->guard - 1];
  __atomic_store_n(&g->hi, 0, __ATOMIC_RELEASE);
  for (k = 0; k < LOST; k++) __atomic_store_n(&g->l[k].ready, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g->lo, 0, __ATOMIC_RELEASE);
  m->guard = 0;
}

/* The first lost byte of [off, off+len) from the ranges noted: 0 when
   none, else -1 with *bad and *cut. */
static int noted(const hsi_map *m, uint64_t off, uint64_t len, uint64_t *bad, int *cut) {
  const guard *g = &guards[m->guard - 1];
  unsigned n = __atomic_load_n(&g->nlost, __ATOMIC_ACQUIRE), k;
  uint64_t first = UINT64_MAX;
  int first_cut = 0;
  if (n == 0) return 0;
  if (n > LOST) { *bad = off; *cut = 0; return -1; }   /* too many to tell apart: all in doubt */
  for (k = 0; k < n; k++) {
    const lost *l = &g->l[k];
    uint64_t from;
    if (!__atomic_load_n(&l->ready, __ATOMIC_ACQUIRE)) { *bad = off; *cut = 0; return -1; }   /* being noted */
    if (l->to <= off || l->from >= off + len) continue;
    from = l->from > off ? l->from : off;
    if (from < first) { first = from; first_cut = l->cut; }
  }
  if (first == UINT64_MAX) return 0;
  *bad = first;
  *cut = first_cut;
  return -1;
}

int hsi_map_lost(const hsi_map *m, uint64_t *at, int *cut) {
  return m->guard && m->size && noted(m, 0, m->size, at, cut) != 0;
}

int hsi_map_check(const hsi_map *m, uint64_t off, uint64_t len, uint64_t *bad, int *cut) {
  uint64_t at;
  if (!m->guard || !len || off >= m->size) return 0;
  if (len > m->size - off) len = m->size - off;
  /* each page once: a lost one faults now, here, and is noted */
  for (at = off; at < off + len; at = (at | (pagesize - 1)) + 1)
    (void)*(const volatile uint8_t *)(m->data + at);
  return noted(m, off, len, bad, cut);
}

/* ------------------------------------------------------------ the map */

int hsi_map_open(hsi_map *m, const char *path, char *err, size_t errlen) {
  struct stat st;
  void *p;
  int fd;
  memset(m, 0, sizeof *m);
  /* O_NONBLOCK: a FIFO without a writer would block the open; it is
     refused below like anything else that is not a regular file (a
     regular file's reads ignore the flag) */
  fd = open(path, O_RDONLY | O_NONBLOCK);
  if (fd < 0) { snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno)); return HS_EIO; }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "%s: not a regular file", path);
    close(fd);
    return HS_EIO;
  }
  m->size = (uint64_t)st.st_size;
  if (m->size == 0) { close(fd); return 0; }
  if ((uint64_t)(size_t)m->size != m->size) {
    snprintf(err, errlen, "%s: too large to map on this platform", path);
    close(fd);
    return HS_EIO;
  }
  p = mmap(NULL, (size_t)m->size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    snprintf(err, errlen, "%s: cannot map: %s", path, strerror(errno));
    return HS_EIO;
  }
  m->handle = (void *)(intptr_t)(fd + 1);   /* kept for hsi_map_read and the guard */
  /* Read mostly front to back (one stream per CPU): ask for readahead. */
  (void)posix_madvise(p, (size_t)m->size, POSIX_MADV_SEQUENTIAL);
  m->data = (const uint8_t *)p;
  guard_on(m, fd);
  return 0;
}

void hsi_map_close(hsi_map *m) {
  guard_off(m);                          /* before the pages go */
  if (m->data) munmap((void *)m->data, (size_t)m->size);
  if (m->handle) close((int)((intptr_t)m->handle - 1));
  memset(m, 0, sizeof *m);
}

int hsi_map_read(const hsi_map *m, uint64_t off, void *buf, size_t len) {
  int fd = m->handle ? (int)((intptr_t)m->handle - 1) : -1;
  uint8_t *p = (uint8_t *)buf;
  if (fd < 0 || off > m->size || len > m->size - off) return -1;
  while (len) {
    ssize_t n = pread(fd, p, len, (off_t)off);
    if (n <= 0) { if (n < 0 && errno == EINTR) continue; return -1; }
    p += n; off += (uint64_t)n; len -= (size_t)n;
  }
  return 0;
}

void hsi_map_advise(hsi_map *m, int sequential) {
  if (m->data && m->size)
    (void)posix_madvise((void *)m->data, (size_t)m->size, sequential ? POSIX_MADV_SEQUENTIAL : POSIX_MADV_RANDOM);
}

static uint64_t page_size(void) {
  long ps = sysconf(_SC_PAGESIZE);
  return ps > 0 ? (uint64_t)ps : 4096;
}

static void drop_pages(const uint8_t *p, uint64_t len) { (void)madvise((void *)p, (size_t)len, MADV_DONTNEED); }
#endif

/* Called from the reader's decoding workers too: no shared state. */
void hsi_map_release(hsi_map *m, uint64_t off, uint64_t len) {
  uint64_t a, b, page = page_size();
  if (!m->data || off >= m->size) return;
  if (len > m->size - off) len = m->size - off;
  a = (off + page - 1) / page * page;     /* pages wholly inside the range only: */
  b = (off + len) / page * page;          /* a neighbour buffer may share the edges */
  if (b > a) drop_pages(m->data + a, b - a);
}
