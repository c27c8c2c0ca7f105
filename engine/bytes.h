/* bytes.h -- little-endian loads from byte pointers the caller has
   already bounds-checked.  Byte-wise, so alignment and host order never matter. */
#ifndef HS_BYTES_H
#define HS_BYTES_H
#include <stdint.h>
static inline uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }
/* A value w bytes wide (8, 4, 2, else 1): a pointer of either width, a field. */
static inline uint64_t rdw(const uint8_t *p, unsigned w) {
  return w == 8 ? rd64(p) : w == 4 ? rd32(p) : w == 2 ? rd16(p) : p[0];
}
static inline void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void wr32(uint8_t *p, uint32_t v) { wr16(p, (uint16_t)v); wr16(p + 2, (uint16_t)(v >> 16)); }
static inline void wr64(uint8_t *p, uint64_t v) { wr32(p, (uint32_t)v); wr32(p + 4, (uint32_t)(v >> 32)); }
#endif
