/* test_time.c -- the three trace clocks (ETL-FORMAT §2.6), without overflow. */
#include "unit.h"
#include "heapscript.h"
#include "text.h"

TEST(qpc) {
  hs_logfile lf;
  char s[64];
  memset(&lf, 0, sizeof lf);
  lf.clock_type = 1; lf.perf_freq = 3117777; lf.header_ts = 185227195741; lf.start_time = 131159502220379266;
  CHECK_EQ(hs_time_ns(&lf, lf.header_ts), 0);
  CHECK_EQ(hs_time_ns(&lf, lf.header_ts + 3117777), 1000000000);
  CHECK_EQ(hs_time_filetime(&lf, lf.header_ts + 3117777 / 2), 131159502220379266 + 4999998);
  /* a day of ticks at 10 MHz times 10^9 overflows int64 if done naively */
  lf.perf_freq = 10000000; lf.header_ts = 0;
  CHECK_EQ(hs_time_ns(&lf, 3LL * 86400 * 10000000 + 7), 3LL * 86400 * 1000000000 + 700);
  CHECK_STR(hs_filetime_format(131159502220379266, s, sizeof s), "2016-08-17T23:30:22.0379266Z");
  CHECK_STR(hs_filetime_format(0, s, sizeof s), "1601-01-01T00:00:00.0000000Z");
  CHECK_EQ(hs_time_freq(&lf), 10000000);
}

/* Two files' ticks compare as they are only on one clock: kind, rate and
   origin (one machine since one boot), the headers agreeing within 2 s. */
TEST(same_clock) {
  hs_logfile a, b;
  memset(&a, 0, sizeof a);
  a.clock_type = 1; a.perf_freq = 10000000; a.header_ts = 72000000000; a.start_time = 133231626000000000;
  b = a;
  b.header_ts = a.header_ts + 600LL * 10000000;           /* 10 minutes later on one machine */
  b.start_time = a.start_time + 600LL * 10000000 + 15000000;   /* its header 1.5 s off: drift */
  CHECK(hs_time_same_clock(&a, &b));
  CHECK(hs_time_same_clock(&b, &a));
  b.start_time += 10000000;                                /* 2.5 s off */
  CHECK(!hs_time_same_clock(&a, &b));
  b.header_ts = 54000000000; b.start_time = a.start_time + 16500LL * 10000000;   /* another boot */
  CHECK(!hs_time_same_clock(&a, &b));
  b = a; b.perf_freq = 3117777;                            /* another rate */
  CHECK(!hs_time_same_clock(&a, &b));
  b = a; b.clock_type = 2; a.clock_type = 2;               /* system time: FILETIME, one origin */
  b.header_ts = b.start_time = 1; CHECK(hs_time_same_clock(&a, &b));
}

TEST(system_time_and_cycles) {
  hs_logfile lf;
  memset(&lf, 0, sizeof lf);
  lf.clock_type = 2; lf.start_time = 130000000000000000; lf.header_ts = 130000000000000000;
  CHECK_EQ(hs_time_filetime(&lf, 130000000000001234), 130000000000001234);
  CHECK_EQ(hs_time_ns(&lf, 130000000000001234), 123400);
  lf.clock_type = 3; lf.cpu_mhz = 2000; lf.header_ts = 1000; lf.start_time = 5;
  CHECK_EQ(hs_time_freq(&lf), 2000000000);
  CHECK_EQ(hs_time_ns(&lf, 1000 + 2000000000LL * 5), 5000000000LL);
  CHECK_EQ(hs_time_filetime(&lf, 1000 + 2000), 5 + 10);
}

/* Ticks far outside any trace (a window's open ends, EDGE_LO/EDGE_HI of
   lua_alloc.c; a damaged stamp) and clocks no machine has (a damaged
   header's frequency) saturate at the int64 range instead of overflowing
   (undefined behaviour: UBSan fails the sanitizer build). */
TEST(extremes_saturate) {
  hs_logfile lf;
  memset(&lf, 0, sizeof lf);
  lf.perf_freq = 10000000; lf.header_ts = 5000000000;
  CHECK_EQ(hs_time_ns(&lf, INT64_MAX - 1), INT64_MAX);
  CHECK_EQ(hs_time_ns(&lf, INT64_MIN + 1), INT64_MIN);
  CHECK_EQ(hs_time_ns(&lf, 5000000000 + 10000000 * 3 + 5), 3000000500);   /* ordinary ticks unchanged */
  lf.header_ts = -5000000000;                 /* ts - origin past INT64_MAX */
  CHECK_EQ(hs_time_ns(&lf, INT64_MAX - 1), INT64_MAX);
  lf.perf_freq = INT64_MAX / 2;              /* rem * 1e9 would overflow */
  lf.header_ts = 0;
  CHECK_EQ(hs_time_ns(&lf, INT64_MAX / 4), 500000000);
  CHECK_EQ(hs_time_ns(&lf, INT64_MAX - 1), 2000000000);     /* two ticks */
  lf.perf_freq = 1;                           /* a tick a second: seconds * 1e9 past the range */
  CHECK_EQ(hs_time_ns(&lf, 20000000000), INT64_MAX);
  CHECK_EQ(hs_time_ns(&lf, -20000000000), INT64_MIN);
  lf.start_time = INT64_MAX - 10;             /* FILETIME start + offset past the range */
  CHECK_EQ(hs_time_filetime(&lf, 1000), INT64_MAX);
}

/* A CPU-cycle clock whose header has no MHz counts at 10 MHz, as the
   other clocks without a frequency do. */
TEST(cycles_without_mhz) {
  hs_logfile lf;
  memset(&lf, 0, sizeof lf);
  lf.clock_type = 3;
  CHECK_EQ(hs_time_freq(&lf), 10000000);
  CHECK_EQ(hs_time_ns(&lf, 10000000), 1000000000);
}

/* From FILETIME back to ticks: a system-time clock stamps FILETIMEs
   already; a cycle clock scales from the header stamp at its own rate. */
TEST(from_filetime_by_clock) {
  hs_logfile lf;
  memset(&lf, 0, sizeof lf);
  lf.clock_type = 2; lf.start_time = 130000000000000000; lf.header_ts = 130000000000000000 + 77;
  CHECK_EQ(hs_time_from_filetime(&lf, 130000000000001234), 130000000000001234);
  lf.clock_type = 3; lf.cpu_mhz = 2000; lf.header_ts = 1000; lf.start_time = 5;
  CHECK_EQ(hs_time_from_filetime(&lf, 5 + 10000000), 1000 + 2000000000LL);
  CHECK_EQ(hs_time_filetime(&lf, hs_time_from_filetime(&lf, 5 + 30)), 5 + 30);
}

/* The last whole second that fits: 9223372036 s and 0.9999999 s more is
   past INT64_MAX ns (9223372036.854775807 s), so it saturates; the
   second before it does not. */
TEST(saturates_at_the_last_whole_second) {
  hs_logfile lf;
  memset(&lf, 0, sizeof lf);
  lf.perf_freq = 10000000;
  CHECK_EQ(hs_time_ns(&lf, 9223372036LL * 10000000 + 9999999), INT64_MAX);
  CHECK_EQ(hs_time_ns(&lf, 9223372035LL * 10000000 + 9999999), 9223372035LL * 1000000000 + 999999900);
}

/* January and February belong to the year after the March-based era
   year the conversion counts in; 2000 and 2024 are leap years. */
TEST(dates_in_january_and_february) {
  char s[64];
  /* 2024-02-29T12:00:00Z: 154556 days from 1601-01-01, plus half a day */
  CHECK_STR(hs_filetime_format((154556LL * 86400 + 43200) * 10000000, s, sizeof s), "2024-02-29T12:00:00.0000000Z");
  CHECK_STR(hs_filetime_format(154497LL * 86400 * 10000000, s, sizeof s), "2024-01-01T00:00:00.0000000Z");
  CHECK_STR(hs_filetime_format(154496LL * 86400 * 10000000, s, sizeof s), "2023-12-31T00:00:00.0000000Z");
}

/* dump's seconds: the text printf("%14.7f") gives the double, for every
   remainder of 100 ns (the ties too), across the digits' widths, past
   the 11 days made without printf, and below zero. */
TEST(seconds_as_printf_writes_them) {
  static const long long bases[] = { 0, 1000000000ll, 9999999999ll, 12345678901234ll, 99999999999999ll,
                                     999999999999000ll, 1000000000000000ll, 86400000000000000ll };
  char a[64], b[64];
  long long bad = 0, n = 0;
  size_t i;
  int r;
  uint64_t x = 88172645463325252ull;
  for (i = 0; i < sizeof bases / sizeof bases[0]; i++)
    for (r = -150; r < 250; r++) {
      long long ns = bases[i] + r;
      size_t len = hsi_secs_format(ns, 7, 14, a);
      snprintf(b, sizeof b, "%14.7f", (double)ns / 1e9);
      n++;
      if (strcmp(a, b) != 0 || len != strlen(b)) { if (bad++ < 5) fprintf(stderr, "%lld: '%s' '%s'\n", ns, a, b); }
    }
  for (i = 0; i < 200000; i++) {                  /* anywhere below 2^50 ns (13 days) */
    long long ns;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    ns = (long long)(x >> 14);
    hsi_secs_format(ns, 7, 14, a);
    snprintf(b, sizeof b, "%14.7f", (double)ns / 1e9);
    n++;
    if (strcmp(a, b) != 0) { if (bad++ < 5) fprintf(stderr, "%lld: '%s' '%s'\n", ns, a, b); }
  }
  CHECK_EQ(bad, 0);
  CHECK(n > 200000);
  CHECK_STR((hsi_secs_format(1234567890123ll, 7, 14, a), a), "  1234.5678901");
  /* dump --jsonl's "%.9f": every nanosecond, no width */
  for (i = 0; i < sizeof bases / sizeof bases[0]; i++)
    for (r = -150; r < 250; r++) {
      long long ns = bases[i] + r;
      hsi_secs_format(ns, 9, 0, a);
      snprintf(b, sizeof b, "%.9f", (double)ns / 1e9);
      if (strcmp(a, b) != 0) { if (bad++ < 5) fprintf(stderr, "%lld: '%s' '%s'\n", ns, a, b); }
    }
  for (i = 0; i < 200000; i++) {
    long long ns;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    ns = (long long)(x >> 14);
    hsi_secs_format(ns, 9, 0, a);
    snprintf(b, sizeof b, "%.9f", (double)ns / 1e9);
    if (strcmp(a, b) != 0) { if (bad++ < 5) fprintf(stderr, "%lld: '%s' '%s'\n", ns, a, b); }
  }
  CHECK_EQ(bad, 0);
}

int main(void) {
  RUN(qpc); RUN(same_clock); RUN(system_time_and_cycles); RUN(extremes_saturate); RUN(cycles_without_mhz);
  RUN(from_filetime_by_clock); RUN(saturates_at_the_last_whole_second); RUN(dates_in_january_and_february);
  RUN(seconds_as_printf_writes_them);
  return UNIT_DONE();
}
