/*
** fuzz_symmap.c -- libFuzzer target over the symbol map reader: any bytes
** parsed as a map, then every module listed and looked up at each of its
** symbols' starts, inside and past them.  `make fuzz` builds it with
** libFuzzer; `make test` replays tests/fuzz/symmap_corpus through it
** (under ASan/UBSan with SANITIZE=1).
*/
#include <stdint.h>
#include <stddef.h>
#include "heapscript.h"
#include "symmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hsi_symmap *sm;
  char err[HS_ERRLEN];
  size_t i, n, k;
  volatile size_t sink = 0;
  if (hsi_symmap_load_mem(&sm, (const char *)data, size, "fuzz.sym", err, sizeof err) != 0) {
    const char *s = err;
    while (*s) sink += (unsigned char)*s++;    /* the message is a string */
    return 0;
  }
  n = hsi_symmap_nmodules(sm);
  for (i = 0; i < n; i++) {
    size_t ns;
    const char *m = hsi_symmap_module(sm, i, &ns);
    for (k = 0; k < 64; k++) {
      const char *name;
      uint64_t off;
      uint64_t rva = k < 32 ? k * 0x10 : (uint64_t)1 << (k - 32 + 8);
      if (hsi_symmap_lookup(sm, m, rva, &name, &off) == 1) {
        const char *s = name;
        while (*s) sink += (unsigned char)*s++;
      }
    }
  }
  (void)sink;
  hsi_symmap_free(sm);
  return 0;
}
