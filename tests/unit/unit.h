/*
** unit.h -- the smallest test harness that does the job.  A test file
** defines TEST(name) functions and lists them in main with RUN(name).
** Each failed CHECK prints file:line and the expression; the exit code
** is non-zero when any check failed, and tests/run.sh counts that.
*/
#ifndef HS_UNIT_H
#define HS_UNIT_H

#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <stdarg.h>
#include <unistd.h>

static int unit_checks, unit_failed, unit_tests, unit_tests_failed;

#define CHECK(c) do { unit_checks++; if (!(c)) { unit_failed++; \
  fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); } } while (0)
#define CHECK_EQ(a, b) do { unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b); \
  unit_checks++; if (a_ != b_) { unit_failed++; fprintf(stderr, "%s:%d: %s == %s failed: %llu (0x%llx) != %llu (0x%llx)\n", \
  __FILE__, __LINE__, #a, #b, a_, a_, b_, b_); } } while (0)
#define CHECK_STR(a, b) do { const char *a_ = (a), *b_ = (b); unit_checks++; \
  if (!a_ || !b_ || strcmp(a_, b_) != 0) { unit_failed++; fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", \
  __FILE__, __LINE__, #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); } } while (0)

/* A temporary file's path, TMPDIR (or /tmp)/hs-PID-NAME with NAME from the
   format: the process id keeps two runs of the tests at once apart. */
static inline char *unit_tmp_path(char *buf, size_t n, const char *fmt, ...) {
  const char *d = getenv("TMPDIR");
  int k = snprintf(buf, n, "%s/hs-%ld-", d && *d ? d : "/tmp", (long)getpid());
  va_list ap;
  va_start(ap, fmt);
  if (k > 0 && (size_t)k < n) vsnprintf(buf + k, n - (size_t)k, fmt, ap);
  va_end(ap);
  return buf;
}

#define TEST(name) static void name(void)
#define RUN(name) do { int f_ = unit_failed; unit_tests++; name(); \
  if (unit_failed != f_) { unit_tests_failed++; fprintf(stderr, "FAIL %s\n", #name); } } while (0)
#define UNIT_DONE() (printf("%s: %d checks, %d tests: %d passed, %d failed\n", __FILE__, unit_checks, \
  unit_tests, unit_tests - unit_tests_failed, unit_tests_failed), unit_failed ? 1 : 0)

#endif
