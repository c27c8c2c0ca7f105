/*
** test_cliargs.c -- which words after SCRIPT are traces and which the
** script's (engine/cliargs.h): options where users type them, values
** that are never traces, files after the options, `--`, and heapscript's
** own -I / --timeout wherever they are.
*/
#include <string.h>
#include "unit.h"
#include "cliargs.h"

static int fake_file(const char *p) {   /* the "files" of these tests */
  return strcmp(p, "a.etl") == 0 || strcmp(p, "b.etl") == 0 || strcmp(p, "out.json") == 0;
}
static int own(const char *w) {
  if (strcmp(w, "-I") == 0 || strcmp(w, "--timeout") == 0) return 2;
  return strncmp(w, "-I", 2) == 0 ? 1 : 0;
}

/* classify the space-separated words and compare with want: one letter a
   word, T trace, S script, O own, D the `--` */
static int kinds(const char *line, const char *want) {
  char buf[256], *w[32], got[33];
  unsigned char k[32];
  int n = 0, i;
  strcpy(buf, line);
  for (char *p = strtok(buf, " "); p; p = strtok(NULL, " ")) w[n++] = p;
  hsi_cli_classify(n, w, fake_file, own, k);
  for (i = 0; i < n; i++) got[i] = "?TSOD"[k[i]];
  got[n] = 0;
  if (strcmp(got, want) != 0) fprintf(stderr, "  '%s': got %s, expected %s\n", line, got, want);
  return strcmp(got, want) == 0;
}

TEST(traces_then_options) {
  CHECK(kinds("a.etl", "T"));
  CHECK(kinds("a.etl b.etl", "TT"));
  CHECK(kinds("a.etl --top 10", "TSS"));
  CHECK(kinds("a.etl b.etl --top 10 --kind heap", "TTSSSS"));
  CHECK(kinds("a.etl --top=10 b.etl", "TST"));          /* --x=v takes no value word: b.etl is a trace */
  CHECK(kinds("a.etl --json out.json", "TSS"));         /* a value is never a trace, even an existing file */
  CHECK(kinds("a.etl --top 10 b.etl", "TSST"));         /* a file after the options is a trace */
  CHECK(kinds("a.etl --top 10 nofile", "TSSS"));
  CHECK(kinds("a.etl --flag --other", "TSS"));
  CHECK(kinds("--help", "S"));
  CHECK(kinds("nofile.etl --top 3", "TSS"));            /* before the options every word is a trace */
  CHECK(kinds("a.etl --out - b.etl", "TSST"));          /* "-" (standard output) is a value, not an option */
}

TEST(dashdash) {
  CHECK(kinds("a.etl -- --top 10", "TDSS"));
  CHECK(kinds("a.etl --top 1 -- b.etl", "TSSDS"));      /* after --, even a file is the script's */
  CHECK(kinds("-- a.etl", "DS"));
  CHECK(kinds("a.etl -- --timeout 5", "TDSS"));         /* the script's own --timeout */
}

TEST(own_options) {
  CHECK(kinds("a.etl --timeout 5 --top 3", "TOOSS"));
  CHECK(kinds("a.etl --top 3 --timeout 5", "TSSOO"));
  CHECK(kinds("a.etl --flag --timeout 5", "TSOO"));     /* an option-like word is never a value */
  CHECK(kinds("a.etl -I dir -Iother", "TOOO"));
  CHECK(kinds("a.etl --timeout", "TO"));                /* missing value: the caller says so */
}

int main(void) {
  RUN(traces_then_options);
  RUN(dashdash);
  RUN(own_options);
  return UNIT_DONE();
}
