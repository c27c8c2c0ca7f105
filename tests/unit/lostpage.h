/*
** lostpage.h -- a page of a mapped file that the device cannot read, for
** the tests of the guard (mapfile.c) and of the readers above it.
**
** A disk or network error while a mapped page is read raises SIGBUS
** (BUS_ADRERR) at that page while the file keeps its size.  Here one
** page of the process's mapping of `path` is replaced by a page of an
** empty file: reading it raises that same SIGBUS, and the file's size is
** unchanged, so the guard sees a device error, not a cut.  POSIX only.
*/
#ifndef HS_TEST_LOSTPAGE_H
#define HS_TEST_LOSTPAGE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

/* The start of the process's mapping of path at file offset 0 (from
   /proc/self/maps), or NULL. */
static uint8_t *lost_mapping_of(const char *path) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[1024];
  uint8_t *at = NULL;
  size_t pl = strlen(path);
  if (!f) return NULL;
  while (!at && fgets(line, sizeof line, f)) {
    unsigned long lo, hi, off;
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == ' ')) line[--n] = 0;
    if (n < pl || strcmp(line + n - pl, path) != 0) continue;
    if (sscanf(line, "%lx-%lx %*s %lx", &lo, &hi, &off) == 3 && off == 0) at = (uint8_t *)lo;
  }
  fclose(f);
  return at;
}

/* Make the page at file offset off (page-aligned) of path's mapping one
   the device cannot read: 0, or -1 when the mapping is not found. */
static int lose_page(const char *path, uint64_t off) {
  char empty[256];
  uint8_t *base = lost_mapping_of(path);
  long ps = sysconf(_SC_PAGESIZE);
  int fd;
  void *p;
  if (!base || ps <= 0 || off % (uint64_t)ps) return -1;
  snprintf(empty, sizeof empty, "%s.empty", path);
  fd = open(empty, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return -1;
  p = mmap(base + off, (size_t)ps, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
  close(fd);
  remove(empty);
  return p == MAP_FAILED ? -1 : 0;
}

#endif
