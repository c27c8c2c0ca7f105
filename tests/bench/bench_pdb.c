/*
** bench_pdb.c -- the PDB reader's speed: the time to open a PDB (the
** container, the info stream and the DBI headers; the best of 5), then
** N distinct addresses (default 1,000,000) spread evenly over the code of
** every function, resolved in a shuffled order by a freshly opened PDB,
** so the first use of each module (reading its symbols and lines) is
** counted; then the same again with every module read.  Writes the addresses to ADDRS (one "0xRVA" a line) so that
** tests/bench.sh can time llvm-symbolizer on the same ones.
**
**   build/rel/bench_pdb PDB ADDRS [N]        (make bench runs it)
*/
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "pdb.h"
#include "clock.h"

int main(int argc, char **argv) {
  hsi_pdb *p;
  char err[HS_ERRLEN];
  hsi_pdb_sym s;
  hsi_pdb_frame f[16];
  uint32_t nf, i, k = 0, *addr;
  uint64_t code = 0, n = argc > 3 ? strtoull(argv[3], NULL, 10) : 1000000, frames = 0, named = 0;
  double t0, best = 1e9, step, acc = 0;
  long size;
  FILE *out;
  int r;
  if (argc < 3) { fprintf(stderr, "usage: bench_pdb PDB ADDRS [N]\n"); return 2; }
  for (r = 0; r < 5; r++) {
    t0 = now();
    if (hsi_pdb_open(&p, argv[1], err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); return 1; }
    t0 = now() - t0;
    if (t0 < best) best = t0;
    if (r < 4) hsi_pdb_close(p);
  }
  if (!(out = fopen(argv[1], "rb"))) return 1;
  fseek(out, 0, SEEK_END);
  size = ftell(out);
  fclose(out);
  nf = hsi_pdb_function_count(p);
  for (i = 0; hsi_pdb_function(p, i, &s); i++) code += s.size;
  if (!nf || !code) { fprintf(stderr, "%s: no functions\n", argv[1]); return 1; }
  if (n > code) n = code;
  if (!(addr = malloc(n * sizeof *addr))) return 1;
  step = (double)code / (double)n;
  for (i = 0; hsi_pdb_function(p, i, &s) && k < n; i++) {    /* every step-th byte of code */
    double end = acc + s.size;
    for (; acc < end && k < n; acc += step) addr[k++] = s.rva + (uint32_t)(acc - (end - s.size));
    acc = acc > end ? acc : end;
  }
  hsi_pdb_close(p);
  n = k;
  {
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (i = (uint32_t)n - 1; i > 0; i--) {           /* shuffle: no help from locality */
      uint32_t j, t;
      x ^= x << 13; x ^= x >> 7; x ^= x << 17;
      j = (uint32_t)(x % (i + 1));
      t = addr[i]; addr[i] = addr[j]; addr[j] = t;
    }
  }
  if (!(out = fopen(argv[2], "w"))) { perror(argv[2]); return 1; }
  for (i = 0; i < n; i++) fprintf(out, "0x%x\n", addr[i]);
  fclose(out);
  if (hsi_pdb_open(&p, argv[1], err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); return 1; }
  t0 = now();
  for (i = 0; i < n; i++) {
    int m = hsi_pdb_lookup(p, addr[i], f, 16);
    frames += (uint64_t)m;
    named += m > 0 && f[m - 1].name[0];
  }
  t0 = now() - t0;
  printf("PDB %s: %.1f MB, %u functions, %.1f MB of code\n", argv[1], size / 1e6, nf, code / 1e6);
  printf("open: %.2f ms (best of 5)\n", best * 1e3);
  printf("lookup: %llu addresses in %.3f s: %.0f ns/address, %.2f frames/address, %llu named\n",
         (unsigned long long)n, t0, t0 * 1e9 / (double)n, (double)frames / (double)n, (unsigned long long)named);
  t0 = now();                             /* again: every module already read */
  for (i = 0; i < n; i++) frames += (uint64_t)hsi_pdb_lookup(p, addr[i], f, 16);
  t0 = now() - t0;
  printf("again, every module read: %.0f ns/address\n", t0 * 1e9 / (double)n);
  hsi_pdb_close(p);
  free(addr);
  return 0;
}
