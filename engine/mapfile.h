/* mapfile.h -- a read-only view of a whole file, behind one small wrapper
   so the engine builds on POSIX (mmap) and Windows (file mapping). */
#ifndef HS_MAPFILE_H
#define HS_MAPFILE_H
#include <stddef.h>
#include <stdint.h>

typedef struct hsi_map {
  const uint8_t *data;
  uint64_t size;
  void *handle;      /* platform state */
} hsi_map;

/* 0, or HS_EIO with a message naming the file in err. */
int hsi_map_open(hsi_map *m, const char *path, char *err, size_t errlen);
void hsi_map_close(hsi_map *m);
/* The reader is done with [off, off+len) for now: let the pages wholly
   inside it leave this process's memory (they come back from the page
   cache if read again).  Keeps the resident size of a pass over a huge
   trace flat.  A no-op where the platform has no such call. */
void hsi_map_release(hsi_map *m, uint64_t off, uint64_t len);
/* How the file will be read next: scattered (indexing touches one header
   per buffer: map no neighbours) or front to back (ask for readahead). */
void hsi_map_advise(hsi_map *m, int sequential);
/* Copy [off, off+len) with read(2) into buf: 0, or -1 when it cannot (no
   file behind the map, Windows, a short read): then read the view.  On a
   page-cache-warm file a read costs less than the page faults and the
   release of mapping the same bytes (thread-safe: pread). */
int hsi_map_read(const hsi_map *m, uint64_t off, void *buf, size_t len);
/* Does the file still hold [off, off+len)?  A file cut short after it was
   mapped raises SIGBUS where the view is read past its new end: the
   reader asks before it reads a buffer from the view.  1 where it cannot
   tell or need not (no file behind the map; Windows, which refuses to cut
   a file that has a view). */
int hsi_map_holds(const hsi_map *m, uint64_t off, uint64_t len);
#endif
