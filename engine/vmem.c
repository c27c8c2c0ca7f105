/*
** vmem.c -- growable long-lived arrays (vmem.h): mmap and mremap on
** Linux, realloc elsewhere.
*/
#if defined(__linux__)
#define _GNU_SOURCE 1          /* mremap */
#endif
#include <stdlib.h>
#include "vmem.h"

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>

static size_t whole_pages(size_t n) {
  static size_t pg;
  if (!pg) {
    long v = sysconf(_SC_PAGESIZE);
    pg = v > 0 ? (size_t)v : 4096;
  }
  if (n == 0) n = 1;
  return n > (size_t)-1 - pg ? 0 : (n + pg - 1) / pg * pg;
}

void *hsi_vgrow(void *p, size_t old, size_t n) {
  size_t to = whole_pages(n), from;
  void *q;
  if (!to) return NULL;
  if (!p) {
    q = mmap(NULL, to, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return q == MAP_FAILED ? NULL : q;
  }
  from = whole_pages(old);
  if (from == to) return p;
  q = mremap(p, from, to, MREMAP_MAYMOVE);
  return q == MAP_FAILED ? NULL : q;
}

void hsi_vfree(void *p, size_t n) {
  if (p) munmap(p, whole_pages(n));
}
#else
void *hsi_vgrow(void *p, size_t old, size_t n) {
  (void)old;
  return realloc(p, n ? n : 1);
}

void hsi_vfree(void *p, size_t n) {
  (void)n;
  free(p);
}
#endif
