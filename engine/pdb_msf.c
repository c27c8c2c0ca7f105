/*
** pdb_msf.c -- the MSF 7.00 container of a PDB: a file of fixed-size
** blocks holding numbered streams.
**
** Superblock at offset 0: the 32-byte magic "Microsoft C/C++ MSF 7.00\r\n
** \x1a" "DS\0\0\0", then u32 BlockSize, FreeBlockMapBlock, NumBlocks,
** NumDirectoryBytes, Unknown, BlockMapAddr.  The stream directory is
** NumDirectoryBytes long, spread over blocks whose numbers are listed at
** block BlockMapAddr.  The directory is u32 NumStreams, u32 size per
** stream (0xFFFFFFFF: a deleted stream, read as empty), then each
** stream's block numbers in turn.
**
** Everything is checked at open: block numbers inside the file, the
** directory long enough for the blocks its sizes claim.  A stream is then
** a view into the mapping when its blocks follow each other, else a copy.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bytes.h"
#include "pdb_int.h"

static const char msf_magic[32] = "Microsoft C/C++ MSF 7.00\r\n\x1a" "DS\0\0";

/* File offset of byte off of the assembled directory. */
static uint64_t dir_fileoff(const pdb_msf *m, const uint8_t *map, uint32_t off) {
  return (uint64_t)rd32(map + 4 * (off / m->bs)) * m->bs + off % m->bs;
}

int hsi_msf_open(pdb_msf *m, const uint8_t *data, uint64_t size, const char *name, char *err, size_t errlen) {
  uint32_t bs, ndirblocks, dirlen, mapaddr, i, n, nblk, total = 0;
  const uint8_t *map;
  uint64_t maxblk;
  memset(m, 0, sizeof *m);
  m->data = data;
  m->size = size;
  if (size < 56 || memcmp(data, msf_magic, 32) != 0) {
    snprintf(err, errlen, "%s: offset 0x0: expected the MSF 7.00 signature \"Microsoft C/C++ MSF 7.00\" "
             "(%s)", name, size < 56 ? "file shorter than the 56-byte superblock" : "not a PDB 7 file");
    return HS_EFORMAT;
  }
  bs = rd32(data + 32);
  if (bs < 512 || bs > 65536 || (bs & (bs - 1))) {
    snprintf(err, errlen, "%s: offset 0x20: expected a block size of 512..65536, a power of two; found %u", name, bs);
    return HS_EFORMAT;
  }
  m->bs = bs;
  m->nblocks = rd32(data + 40);
  if ((uint64_t)m->nblocks * bs > size) {
    snprintf(err, errlen, "%s: offset 0x28: truncated: expected %u blocks of %u bytes "
             "(%llu bytes) as the superblock says, the file has %llu", name, m->nblocks, bs,
             (unsigned long long)m->nblocks * bs, (unsigned long long)size);
    return HS_EFORMAT;
  }
  maxblk = m->nblocks;
  dirlen = rd32(data + 44);
  mapaddr = rd32(data + 52);
  ndirblocks = (uint32_t)(((uint64_t)dirlen + bs - 1) / bs);
  if (dirlen < 4 || (uint64_t)ndirblocks * bs > size) {
    snprintf(err, errlen, "%s: offset 0x2c: expected a stream directory size of 4..%llu bytes; found %u",
             name, (unsigned long long)size, dirlen);
    return HS_EFORMAT;
  }
  /* The directory's block list may run past one block in huge PDBs: read
     it as consecutive bytes from BlockMapAddr, checked against the file. */
  if (mapaddr >= maxblk || (uint64_t)mapaddr * bs + 4ull * ndirblocks > size) {
    snprintf(err, errlen, "%s: offset 0x34: expected the directory block map inside the file's %u blocks; "
             "found block %u", name, m->nblocks, mapaddr);
    return HS_EFORMAT;
  }
  map = data + (uint64_t)mapaddr * bs;
  for (i = 0; i < ndirblocks; i++) {
    uint32_t b = rd32(map + 4 * i);
    if (b >= maxblk) {
      snprintf(err, errlen, "%s: offset 0x%llx: corrupt stream directory: expected directory block %u "
               "inside the file's %u blocks, found block %u", name, (unsigned long long)mapaddr * bs + 4 * i, i, m->nblocks, b);
      return HS_EFORMAT;
    }
  }
  if (!(m->dir = malloc(dirlen))) { snprintf(err, errlen, "%s: out of memory", name); return HS_ENOMEM; }
  m->dirlen = dirlen;
  m->dir_at = (uint64_t)rd32(map) * bs;
  for (i = 0; i < ndirblocks; i++) {
    uint32_t len = i + 1 < ndirblocks ? bs : dirlen - i * bs;
    memcpy(m->dir + (size_t)i * bs, data + (uint64_t)rd32(map + 4 * i) * bs, len);
  }
  n = rd32(m->dir);
  if (n > PDB_MAX_STREAMS || 4ull + 4ull * n > dirlen) {
    snprintf(err, errlen, "%s: offset 0x%llx: corrupt stream directory: expected a stream count that fits "
             "its %u bytes, found %u", name, (unsigned long long)dir_fileoff(m, map, 0), dirlen, n);
    hsi_msf_close(m);
    return HS_EFORMAT;
  }
  m->nstreams = n;
  m->sizes = m->dir + 4;
  m->blocks = m->dir + 4 + 4 * (size_t)n;
  nblk = (dirlen - 4 - 4 * n) / 4;
  if (!(m->first = malloc(((size_t)n + 1) * sizeof *m->first))) {
    snprintf(err, errlen, "%s: out of memory", name);
    hsi_msf_close(m);
    return HS_ENOMEM;
  }
  for (i = 0; i < n; i++) {
    uint32_t sz = rd32(m->sizes + 4 * i), k, cnt;
    if (sz == 0xFFFFFFFFu) sz = 0;
    cnt = (uint32_t)(((uint64_t)sz + bs - 1) / bs);
    if ((uint64_t)sz > size || cnt > nblk - total) {
      snprintf(err, errlen, "%s: offset 0x%llx: expected stream %u's size within %s, found %u bytes", name,
               (unsigned long long)dir_fileoff(m, map, 4 + 4 * i), i,
               (uint64_t)sz > size ? "the file" : "the blocks the stream directory lists", sz);
      hsi_msf_close(m);
      return HS_EFORMAT;
    }
    m->first[i] = total;
    for (k = 0; k < cnt; k++) {
      uint32_t b = rd32(m->blocks + 4 * ((size_t)total + k));
      if (b >= maxblk) {
        uint32_t doff = (uint32_t)(m->blocks - m->dir) + 4 * (total + k);
        snprintf(err, errlen, "%s: offset 0x%llx: block index past the end: expected block %u of stream %u "
                 "inside the file's %u blocks, found block %u", name, (unsigned long long)dir_fileoff(m, map, doff),
                 k, i, m->nblocks, b);
        hsi_msf_close(m);
        return HS_EFORMAT;
      }
    }
    total += cnt;
  }
  m->first[n] = total;
  return 0;
}

void hsi_msf_close(pdb_msf *m) {
  free(m->dir);
  free(m->first);
  m->dir = NULL;
  m->first = NULL;
  m->nstreams = 0;
}

static uint32_t stream_size(const pdb_msf *m, uint32_t idx) {
  uint32_t sz = rd32(m->sizes + 4 * idx);
  return sz == 0xFFFFFFFFu ? 0 : sz;
}

int hsi_msf_exists(const pdb_msf *m, uint32_t idx) {
  return idx < m->nstreams && rd32(m->sizes + 4 * idx) != 0xFFFFFFFFu;
}

uint64_t hsi_msf_fileoff(const pdb_msf *m, uint32_t idx, uint32_t off) {
  uint32_t k;
  if (idx >= m->nstreams) return 0;
  k = off / m->bs;
  if (k >= m->first[idx + 1] - m->first[idx]) {     /* just past the end: after its last block */
    if (m->first[idx + 1] == m->first[idx]) return 0;
    k = m->first[idx + 1] - m->first[idx] - 1;
    return (uint64_t)rd32(m->blocks + 4 * ((size_t)m->first[idx] + k)) * m->bs + m->bs;
  }
  return (uint64_t)rd32(m->blocks + 4 * ((size_t)m->first[idx] + k)) * m->bs + off % m->bs;
}

/* Can [at, at+n) of the file be read?  A PDB cut short after it was
   opened (or a page the device fails to read) reads as zeros, never
   raises SIGBUS (mapfile.c): such a stream is an error, not zeros. */
static int lost(const pdb_msf *m, uint64_t at, uint32_t n, const char *name, uint32_t idx, char *err, size_t errlen) {
  uint64_t bad;
  int cut;
  if (!m->map || hsi_map_check(m->map, at, n, &bad, &cut) == 0) return 0;
  snprintf(err, errlen, "%s: offset 0x%llx: expected stream %u's bytes %s", name, (unsigned long long)bad, idx,
           hsi_map_loss(cut));
  return 1;
}

int hsi_msf_stream(pdb_msf *m, uint32_t idx, pdb_stream *s, const char *name, char *err, size_t errlen) {
  uint32_t sz, cnt, k, b0;
  const uint8_t *bl;
  memset(s, 0, sizeof *s);
  s->index = idx;
  if (idx >= m->nstreams) {
    snprintf(err, errlen, "%s: offset 0x%llx: expected stream %u in the stream directory, it lists %u streams",
             name, (unsigned long long)m->dir_at, idx, m->nstreams);
    return HS_EFORMAT;
  }
  sz = stream_size(m, idx);
  cnt = m->first[idx + 1] - m->first[idx];
  bl = m->blocks + 4 * (size_t)m->first[idx];
  if (sz == 0) { s->p = (const uint8_t *)""; return 0; }
  b0 = rd32(bl);
  for (k = 1; k < cnt && rd32(bl + 4 * k) == b0 + k; k++) {}
  if (k == cnt) {                       /* contiguous: a view */
    if (lost(m, (uint64_t)b0 * m->bs, sz, name, idx, err, errlen)) return HS_EIO;
    s->p = m->data + (uint64_t)b0 * m->bs;
    s->n = sz;
    return 0;
  }
  if (!(s->owned = malloc(sz))) { snprintf(err, errlen, "%s: out of memory", name); return HS_ENOMEM; }
  for (k = 0; k < cnt; k++) {
    uint32_t len = k + 1 < cnt ? m->bs : sz - k * m->bs;
    uint64_t at = (uint64_t)rd32(bl + 4 * k) * m->bs;
    if (lost(m, at, len, name, idx, err, errlen)) { hsi_stream_free(s); return HS_EIO; }
    memcpy(s->owned + (size_t)k * m->bs, m->data + at, len);
  }
  s->p = s->owned;
  s->n = sz;
  return 0;
}

void hsi_stream_free(pdb_stream *s) {
  free(s->owned);
  memset(s, 0, sizeof *s);
}
