/*
** corpus.h -- for C tests that read the real traces: where the corpus is
** (HEAPSCRIPT_CORPUS, else ../shared/traces), reading a file whole, and
** the figures of expected/NAME.json that the tests compare with.
*/
#ifndef HS_TEST_CORPUS_H
#define HS_TEST_CORPUS_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

static inline const char *corpus_dir(void) {
  const char *d = getenv("HEAPSCRIPT_CORPUS");
  return d && *d ? d : "../shared/traces";
}

/* The real traces copied into the repository (tests/corpus/traces/README.md):
   there in every clone, read from the top of the tree as `make test` runs. */
#define CORPUS_BUNDLED "tests/corpus/traces"

/* The path of rel ("NAME.etl", "expected/NAME.json") in the full corpus,
   else among the bundled traces; 0 (buf holds the bundled path) when
   neither has it. */
static inline int corpus_path(char *buf, size_t n, const char *rel) {
  FILE *f;
  snprintf(buf, n, "%s/%s", corpus_dir(), rel);
  if ((f = fopen(buf, "rb")) != NULL) { fclose(f); return 1; }
  snprintf(buf, n, "%s/%s", CORPUS_BUNDLED, rel);
  if ((f = fopen(buf, "rb")) != NULL) { fclose(f); return 1; }
  return 0;
}

/* The corpus is missing: say so; 1 (a failure) when CI=true, else 0 (a skip). */
static inline int corpus_absent(const char *test) {
  const char *ci = getenv("CI");
  if (ci && strcmp(ci, "true") == 0) {
    fprintf(stderr, "%s: corpus not found in %s (set HEAPSCRIPT_CORPUS), and CI=true\n", test, corpus_dir());
    return 1;
  }
  printf("%s: corpus not found in %s (set HEAPSCRIPT_CORPUS): only the bundled traces ("
         CORPUS_BUNDLED ") were checked, the others skipped\n", test, corpus_dir());
  return 0;
}

/* Reads the whole file, NUL-terminated, its length in *len (may be NULL);
   NULL if missing. */
static inline char *slurp_len(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *s;
  long n;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0
      || !(s = malloc((size_t)n + 1))) { fclose(f); return NULL; }
  if (fread(s, 1, (size_t)n, f) != (size_t)n) { fclose(f); free(s); return NULL; }
  s[n] = 0;
  fclose(f);
  if (len) *len = (size_t)n;
  return s;
}

static inline char *slurp(const char *path) { return slurp_len(path, NULL); }

/* Sum of the by_key counts of (provider, opcode) over versions in an expected JSON. */
static inline uint64_t by_key(const char *json, const char *provider, int opcode) {
  const char *p = strstr(json, "\"by_key\"");
  uint64_t sum = 0;
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\"", provider);
  if (!p || !(p = strchr(p, '['))) return 0;
  for (p++;;) {
    const char *end, *q, *o, *c;
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t' || *p == ',') p++;
    if (*p != '{' || !(end = strchr(p, '}'))) break;
    q = strstr(p, pat); o = strstr(p, "\"opcode\":"); c = strstr(p, "\"count\":");
    if (q && o && c && q < end && o < end && c < end && atoi(o + 9) == opcode)
      sum += strtoull(c + 8, NULL, 10);
    p = end + 1;
  }
  return sum;
}
#endif
