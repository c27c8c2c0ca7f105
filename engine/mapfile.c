/*
** mapfile.c -- map a trace file read-only.  Traces can be many GB, so the
** reader works on the mapping (64-bit offsets throughout) and the page cache
** does the buffering.  An empty file maps to size 0 with no data.
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

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

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
  CloseHandle(f);
  if (!map) { snprintf(err, errlen, "%s: cannot map", path); return HS_EIO; }
  m->data = (const uint8_t *)MapViewOfFile(map, FILE_MAP_READ, 0, 0, 0);
  CloseHandle(map);
  if (!m->data) { snprintf(err, errlen, "%s: cannot map view", path); return HS_EIO; }
  return 0;
}

void hsi_map_close(hsi_map *m) {
  if (m->data) UnmapViewOfFile((LPCVOID)m->data);
  memset(m, 0, sizeof *m);
}

void hsi_map_release(hsi_map *m, uint64_t off, uint64_t len) {
  (void)m; (void)off; (void)len;        /* the working set trimmer does this on Windows */
}

void hsi_map_advise(hsi_map *m, int sequential) { (void)m; (void)sequential; }

int hsi_map_read(const hsi_map *m, uint64_t off, void *buf, size_t len) {
  (void)m; (void)off; (void)buf; (void)len;
  return -1;                             /* the view is read directly */
}

int hsi_map_holds(const hsi_map *m, uint64_t off, uint64_t len) { (void)m; (void)off; (void)len; return 1; }

#else
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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
  m->handle = (void *)(intptr_t)(fd + 1);   /* kept for hsi_map_read */
  /* Read mostly front to back (one stream per CPU): ask for readahead. */
  (void)posix_madvise(p, (size_t)m->size, POSIX_MADV_SEQUENTIAL);
  m->data = (const uint8_t *)p;
  return 0;
}

void hsi_map_close(hsi_map *m) {
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

int hsi_map_holds(const hsi_map *m, uint64_t off, uint64_t len) {
  int fd = m->handle ? (int)((intptr_t)m->handle - 1) : -1;
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return 1;
  return (uint64_t)st.st_size >= off && (uint64_t)st.st_size - off >= len;
}

void hsi_map_advise(hsi_map *m, int sequential) {
  if (m->data && m->size)
    (void)posix_madvise((void *)m->data, (size_t)m->size, sequential ? POSIX_MADV_SEQUENTIAL : POSIX_MADV_RANDOM);
}

/* Called from the reader's decoding workers too: no shared state. */
void hsi_map_release(hsi_map *m, uint64_t off, uint64_t len) {
  long ps = sysconf(_SC_PAGESIZE);
  uint64_t a, b, page = ps > 0 ? (uint64_t)ps : 4096;
  if (!m->data || off >= m->size) return;
  if (len > m->size - off) len = m->size - off;
  a = (off + page - 1) / page * page;     /* pages wholly inside the range only: */
  b = (off + len) / page * page;          /* a neighbour buffer may share the edges */
  if (b > a) (void)madvise((void *)(m->data + a), (size_t)(b - a), MADV_DONTNEED);
}
#endif
