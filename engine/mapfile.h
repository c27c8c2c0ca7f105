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
#endif
