/* satmath.h -- int64_t sums held within the int64 range: a time or a sum
   of sizes from a damaged trace (or a window's open end) goes to the
   range's end rather than overflowing. */
#ifndef HS_SATMATH_H
#define HS_SATMATH_H
#include <stdint.h>

static inline int64_t hsi_add_sat(int64_t a, int64_t b) {
  if (b > 0 && a > INT64_MAX - b) return INT64_MAX;
  if (b < 0 && a < INT64_MIN - b) return INT64_MIN;
  return a + b;
}

static inline int64_t hsi_sub_sat(int64_t a, int64_t b) {
  if (b > 0 && a < INT64_MIN + b) return INT64_MIN;
  if (b < 0 && a > INT64_MAX + b) return INT64_MAX;
  return a - b;
}
#endif
