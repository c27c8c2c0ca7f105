/*
** pdbmangle.c -- a test tool that rewrites PDBs: into a smaller MSF block
** size (the fuzz seeds: a clang-made PDB is mostly 4 KiB padding), and
** into damaged copies for tests/cli/test_pdb_damage.sh.  Not part of
** heapscript.
**
**   pdbmangle repack BS IN OUT      the same streams, blocks of BS bytes
**   pdbmangle KIND IN OUT           a damaged copy, KIND one of
**     truncate    the file cut in the middle of its last stream
**     dirstreams  the directory's stream count made huge
**     dirblock    a directory block number past the end
**     block       a block number of the DBI stream past the end
**     size        the DBI stream's size made larger than the file
**     symlen      a module symbol record's length running past its stream
**   and not damage:
**     strip       every module's symbol stream dropped from the DBI module
**                 list, as /PDBSTRIPPED leaves a PDB: publics only
** Prints the file offset it changed.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bytes.h"
#include "pdb_int.h"

static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  uint8_t *b;
  long len;
  if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) { perror(path); exit(1); }
  if (!(b = malloc((size_t)len + 1)) || fread(b, 1, (size_t)len, f) != (size_t)len) { perror(path); exit(1); }
  fclose(f);
  *n = (size_t)len;
  return b;
}

static void spill(const char *path, const uint8_t *b, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(b, 1, n, f) != n || fclose(f)) { perror(path); exit(1); }
}

static int repack(uint32_t bs, const char *in, const char *out) {
  size_t n;
  uint8_t *src = slurp(in, &n), *dst;
  pdb_msf m;
  char err[512];
  uint32_t i, k, nb, dirlen, dirblocks, next = 3, total = 3, mapblock;
  uint8_t *dir;
  size_t dl = 0;
  if (hsi_msf_open(&m, src, n, in, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
  for (i = 0; i < m.nstreams; i++) {
    uint32_t sz = rd32(m.sizes + 4 * i);
    if (sz != 0xFFFFFFFFu) total += (sz + bs - 1) / bs;
  }
  dirlen = 4 + 8 * m.nstreams + 4 * total;       /* generous: block lists fit */
  dirblocks = (dirlen + bs - 1) / bs;
  nb = total + dirblocks + 1;
  if (nb > bs * 8 - 8) { fprintf(stderr, "too large for one free page map interval\n"); return 1; }
  dst = calloc(nb, bs);
  dir = calloc(dirblocks, bs);
  wr32(dir, m.nstreams);
  dl = 4 + 4 * (size_t)m.nstreams;
  for (i = 0; i < m.nstreams; i++) {
    pdb_stream s;
    uint32_t sz = rd32(m.sizes + 4 * i), cnt;
    wr32(dir + 4 + 4 * i, sz);
    if (sz == 0xFFFFFFFFu || sz == 0) continue;
    if (hsi_msf_stream(&m, i, &s, in, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    cnt = (sz + bs - 1) / bs;
    memcpy(dst + (size_t)next * bs, s.p, sz);
    for (k = 0; k < cnt; k++) { wr32(dir + dl, next + k); dl += 4; }
    next += cnt;
    hsi_stream_free(&s);
  }
  mapblock = next + dirblocks;
  for (k = 0; k < dirblocks; k++) {
    memcpy(dst + (size_t)(next + k) * bs, dir + (size_t)k * bs, bs);
    wr32(dst + (size_t)mapblock * bs + 4 * k, next + k);
  }
  memcpy(dst, src, 32);
  wr32(dst + 32, bs);
  wr32(dst + 36, 1);
  wr32(dst + 40, mapblock + 1);
  wr32(dst + 44, (uint32_t)dl);
  wr32(dst + 48, 0);
  wr32(dst + 52, mapblock);
  for (k = mapblock + 1; k < bs * 8; k++) dst[bs + k / 8] |= (uint8_t)(1u << (k % 8));   /* free bits */
  spill(out, dst, (size_t)(mapblock + 1) * bs);
  hsi_msf_close(&m);
  free(src);
  free(dst);
  free(dir);
  return 0;
}

int main(int argc, char **argv) {
  size_t n;
  uint8_t *b;
  pdb_msf m;
  char err[512];
  uint64_t at = 0;
  const char *kind;
  if (argc == 5 && !strcmp(argv[1], "repack")) return repack((uint32_t)atoi(argv[2]), argv[3], argv[4]);
  if (argc != 4) { fprintf(stderr, "usage: pdbmangle repack BS IN OUT | pdbmangle KIND IN OUT\n"); return 2; }
  kind = argv[1];
  b = slurp(argv[2], &n);
  if (hsi_msf_open(&m, b, n, argv[2], err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
  if (!strcmp(kind, "truncate")) {
    at = n / 2;
    n = (size_t)at;
  } else if (!strcmp(kind, "dirstreams") || !strcmp(kind, "dirblock")) {
    uint64_t map = (uint64_t)rd32(b + 52) * m.bs;
    if (kind[3] == 'b') { at = map; wr32(b + at, m.nblocks + 7); }
    else { at = (uint64_t)rd32(b + map) * m.bs; wr32(b + at, 0x00FFFFFFu); }
  } else if (!strcmp(kind, "block") || !strcmp(kind, "size")) {
    /* stream 3's entries in the directory, through the directory's block map */
    uint32_t doff = kind[0] == 's' ? 4 + 4 * 3 : (uint32_t)(m.blocks - m.dir) + 4 * m.first[3];
    const uint8_t *map = b + (uint64_t)rd32(b + 52) * m.bs;
    at = (uint64_t)rd32(map + 4 * (doff / m.bs)) * m.bs + doff % m.bs;
    wr32(b + at, kind[0] == 's' ? (uint32_t)n + 4096 : m.nblocks + 100);
  } else if (!strcmp(kind, "symlen")) {
    hsi_pdb *p;
    uint32_t i;
    if (hsi_pdb_open(&p, argv[2], err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    for (i = 0; i < p->nmods; i++)             /* the first module with procedures */
      if (hsi_pdb_load_module(p, i) && p->mods[i].nprocs > 0) break;
    if (i == p->nmods) { fprintf(stderr, "no module with procedures\n"); return 1; }
    at = hsi_msf_fileoff(&p->msf, p->mods[i].stream, 4);     /* the first record's length */
    wr16(b + at, 0xFFF0);
    hsi_pdb_close(p);
  } else if (!strcmp(kind, "strip")) {
    hsi_pdb *p;
    uint32_t i;
    if (hsi_pdb_open(&p, argv[2], err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    for (i = 0; i < p->nmods; i++) {              /* ModInfo's u16 ModuleSymStream, at +34 */
      at = hsi_msf_fileoff(&p->msf, 3, p->mods[i].dbi_off + 34);
      wr16(b + at, 0xFFFF);
    }
    hsi_pdb_close(p);
  } else {
    fprintf(stderr, "pdbmangle: unknown kind %s\n", kind);
    return 2;
  }
  spill(argv[3], b, n);
  printf("0x%llx\n", (unsigned long long)at);
  hsi_msf_close(&m);
  free(b);
  return 0;
}
