/* hash.h -- the one 64-bit mixer of the engine's hash tables (the
   finaliser of MurmurHash3: every input bit moves about half the output
   bits). */
#ifndef HS_HASH_H
#define HS_HASH_H
#include <stdint.h>

static inline uint64_t hsi_mix64(uint64_t x) {
  x ^= x >> 33; x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}
#endif
