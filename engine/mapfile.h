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
  int guard;         /* its slot in the SIGBUS guard + 1, or 0 (mapfile.c) */
} hsi_map;

/* 0, or HS_EIO with a message naming the file in err. */
int hsi_map_open(hsi_map *m, const char *path, char *err, size_t errlen);
void hsi_map_close(hsi_map *m);
/* The reader is done with [off, off+len) for now: let the pages wholly
   inside it leave this process's memory (they come back from the page
   cache if read again).  Keeps the resident size of a pass over a huge
   trace flat (POSIX: madvise MADV_DONTNEED; Windows: VirtualUnlock, which
   takes unlocked pages out of the working set). */
void hsi_map_release(hsi_map *m, uint64_t off, uint64_t len);
/* How the file will be read next: scattered (indexing touches one header
   per buffer: map no neighbours) or front to back (ask for readahead). */
void hsi_map_advise(hsi_map *m, int sequential);
/* Copy [off, off+len) with read(2) (Windows: ReadFile) into buf: 0, or -1
   when it cannot (no file behind the map, a short read): then read the
   view.  On a page-cache-warm file a read costs less than the page faults
   and the release of mapping the same bytes, and the read bytes never
   count in the process's memory (thread-safe: pread, positional ReadFile). */
int hsi_map_read(const hsi_map *m, uint64_t off, void *buf, size_t len);
/* Can [off, off+len) of the view be read?  A page the file cannot give
   (the file was cut short after it was mapped, or the device failed to
   read it) raises SIGBUS when the view is read there.  A handler guards
   every view: it puts a page of zeros in place of such a page (of every
   page past the new end, for a cut file) and notes the range, so that
   reading the view never kills the process.  This reads each page of the
   range once and answers from the noted ranges: 0, or -1 with in *bad
   the first offset of the range whose bytes are lost (they read as zeros)
   and in *cut 1 when the file now ends before it, 0 for a device error.
   Thread-safe.  0 where nothing is guarded (no view; Windows, which
   refuses to cut a file that has a view; more views than the guard has
   slots). */
int hsi_map_check(const hsi_map *m, uint64_t off, uint64_t len, uint64_t *bad, int *cut);
/* Has any page of the view been lost (read as zeros) since it was
   mapped?  1 with the first offset noted and whether the file was cut,
   else 0; one load when none was: for readers that keep views of the
   map and read them later (the PDB's streams), to ask after a lookup. */
int hsi_map_lost(const hsi_map *m, uint64_t *at, int *cut);
/* What lost bytes were expected to be, for a message "expected bytes %s":
   cut 1, the file was cut short; 0, the device failed. */
const char *hsi_map_loss(int cut);
#endif
