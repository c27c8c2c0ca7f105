/*
** timeconv.c -- trace clocks (ETL-FORMAT §2.6).  Records keep raw ticks;
** conversion happens on output with integer math: whole seconds and the
** remainder are scaled separately so tick counts of days never overflow.
*/
#include <stdio.h>
#include "heapscript.h"
#include "text.h"
#include "satmath.h"

int64_t hs_time_freq(const hs_logfile *lf) {
  switch (lf->clock_type) {
    case 2: return 10000000;                                  /* FILETIME */
    case 3: return lf->cpu_mhz ? (int64_t)lf->cpu_mhz * 1000000 : 10000000;
    default: return lf->perf_freq > 0 ? lf->perf_freq : 10000000;
  }
}

/* ticks * unit / freq, saturated at the int64 range rather than
   overflowing: a tick far outside any trace (a window's open end, a
   damaged stamp) converts to the range's end.  rem * unit fits whenever
   freq <= INT64_MAX / unit (every real clock); a larger one, only from a
   damaged header, is scaled through doubles. */
static int64_t scale(int64_t ticks, int64_t freq, int64_t unit) {
  int64_t whole = ticks / freq, rem = ticks % freq, part;
  if (whole > INT64_MAX / unit - 1) return INT64_MAX;
  if (whole < INT64_MIN / unit + 1) return INT64_MIN;
  part = freq <= INT64_MAX / unit ? rem * unit / freq : (int64_t)((double)rem / (double)freq * (double)unit);
  return whole * unit + part;
}

/* The clock's zero: system-time traces stamp FILETIMEs, so the session
   start is StartTime; the others count from the header record's stamp. */
static int64_t origin(const hs_logfile *lf) {
  return lf->clock_type == 2 ? lf->start_time : lf->header_ts;
}

int64_t hs_time_ns(const hs_logfile *lf, int64_t ts) {
  return scale(hsi_sub_sat(ts, origin(lf)), hs_time_freq(lf), 1000000000);
}

int64_t hs_time_filetime(const hs_logfile *lf, int64_t ts) {
  if (lf->clock_type == 2) return ts;
  return hsi_add_sat(lf->start_time, scale(hsi_sub_sat(ts, lf->header_ts), hs_time_freq(lf), 10000000));
}

/* Two files' clocks agree on where they start when each one's header,
   read on the other's clock, falls within this of where it says it is
   (FILETIME units): a QPC or cycle counter counts from a machine's boot,
   and the headers of two files of one run agree to milliseconds; counters
   drift from the system time by parts per million, a second in days. */
#define SAME_ORIGIN 20000000

int hs_time_same_clock(const hs_logfile *a, const hs_logfile *b) {
  int64_t d;
  if (a->clock_type != b->clock_type || hs_time_freq(a) != hs_time_freq(b)) return 0;
  if (a->clock_type == 2) return 1;       /* system time: FILETIME itself */
  d = hsi_sub_sat(hs_time_filetime(a, b->header_ts), b->start_time);
  return d > -SAME_ORIGIN && d < SAME_ORIGIN;
}

int64_t hs_time_from_filetime(const hs_logfile *lf, int64_t ft) {
  if (lf->clock_type == 2) return ft;
  return hsi_add_sat(lf->header_ts, scale(hsi_sub_sat(ft, lf->start_time), 10000000, hs_time_freq(lf)));
}

char *hs_filetime_format(int64_t ft, char *out, size_t outlen) {
  /* FILETIME: 100 ns since 1601-01-01; days to civil date (proleptic Gregorian). */
  int64_t secs = ft / 10000000, frac = ft % 10000000, days, rem;
  int64_t y, m, d, era, doe, yoe, doy, mp;
  if (ft < 0) { snprintf(out, outlen, "(invalid %lld)", (long long)ft); return out; }
  days = secs / 86400 - 134774;          /* days since 1970-01-01 */
  rem = secs % 86400;
  days += 719468;
  era = (days >= 0 ? days : days - 146096) / 146097;
  doe = days - era * 146097;
  yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = yoe + era * 400;
  doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  if (m <= 2) y++;
  snprintf(out, outlen, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%07lldZ", (long long)y, (long long)m,
           (long long)d, (long long)(rem / 3600), (long long)(rem / 60 % 60), (long long)(rem % 60),
           (long long)frac);
  return out;
}

/* The digits printf("%*.*f", width, places) gives the double ns / 1e9,
   from the integer: ns to the nearest 10^(9 - places), where that is not
   a tie (a tie is where the double's own rounding decides; 9 places have
   none) and the double holds the nanoseconds to well under one half
   (below 10^15 ns, 11 days); printf for the rest.  `dump` writes one a
   line, millions of lines. */
size_t hsi_secs_format(int64_t ns, int places, int width, char *out) {
  int64_t unit = 1;
  int k;
  for (k = places; k < 9; k++) unit *= 10;
  if (places >= 1 && places <= 9 && ns >= 0 && ns < 1000000000000000ll && (unit == 1 || ns % unit != unit / 2)) {
    int64_t q = (ns + unit / 2) / unit, whole = 1, sec, frac;
    char t[40];
    int i = (int)sizeof t;
    size_t n = 0;
    for (k = 0; k < places; k++) whole *= 10;
    sec = q / whole;
    frac = q % whole;
    for (k = 0; k < places; k++) { t[--i] = (char)('0' + frac % 10); frac /= 10; }
    t[--i] = '.';
    i = (int)(hsi_utoa((uint64_t)sec, 0, t + i) - t);
    for (k = width - ((int)sizeof t - i); k > 0; k--) out[n++] = ' ';
    while (i < (int)sizeof t) out[n++] = t[i++];
    out[n] = 0;
    return n;
  }
  return (size_t)snprintf(out, 64, "%*.*f", width, places, (double)ns / 1e9);
}
