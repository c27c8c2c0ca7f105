/*
** test_term.c -- the progress line of a long analysis (term.h):
** within the terminal's width less one column whatever the path, so that
** its rewrites after '\r' leave no wrapped rows behind; the path cut from
** the left, the share done always shown.  Lines cut to a width
** (hsi_term_cut) count characters, not bytes, and are cut between two.
*/
#include <string.h>
#include "unit.h"
#include "term.h"

TEST(fits_as_it_is) {
  char out[256];
  CHECK_EQ(hsi_term_progress_line("analysing t.etl", 7, 80, out, sizeof out), strlen(out));
  CHECK_STR(out, "heapscript: analysing t.etl   7%");
  hsi_term_progress_line("analysing t.etl", 100, 80, out, sizeof out);
  CHECK_STR(out, "heapscript: analysing t.etl 100%");
}

TEST(long_path_cut_from_the_left) {
  char what[256], out[256];
  size_t n;
  int cols;
  /* a path of 138 characters on 80 columns (it printed 161 characters) */
  strcpy(what, "analysing /home/someone/projects/");
  while (strlen(what) < 10 + 138 - 9) strcat(what, "deep/");
  strcat(what, "trace.etl");
  n = hsi_term_progress_line(what, 42, 80, out, sizeof out);
  CHECK_EQ(n, 79);
  CHECK_EQ(strlen(out), 79);
  CHECK(strncmp(out, "heapscript: analysing ...", 25) == 0);
  CHECK(strcmp(out + n - 14, "trace.etl  42%") == 0);
  for (cols = 20; cols <= 200; cols++) {         /* every width: within it, the share at the end */
    n = hsi_term_progress_line(what, 42, cols, out, sizeof out);
    CHECK(n <= (size_t)cols - 1);
    CHECK(n >= 4 && strcmp(out + n - 4, " 42%") == 0);
  }
  /* narrower than 20 is taken as 20; a small buffer bounds the line too */
  CHECK(hsi_term_progress_line(what, 1, 5, out, sizeof out) <= 19);
  CHECK(hsi_term_progress_line(what, 1, 200, out, 64) <= 63);
  CHECK_EQ(strlen(out), hsi_term_progress_line(what, 1, 200, out, 64));
}

TEST(utf8_not_split) {
  char what[256], out[256];
  size_t n, i;
  strcpy(what, "analysing /");
  for (i = 0; i < 60; i++) strcat(what, "\xc3\xa9");       /* é, two bytes each */
  strcat(what, "/t.etl");
  for (i = 20; i < 90; i++) {
    n = hsi_term_progress_line(what, 5, (int)i, out, sizeof out);
    CHECK(n <= i - 1);
    CHECK(strstr(out, "...\xa9") == NULL);               /* never half a character after the dots */
  }
}

/* "ü" and "é" are two bytes, "日" three: widths in characters, cuts between them */
TEST(cut_counts_characters) {
  const char *s = "\xc3\xbc\xc3\xa9 \xe6\x97\xa5" "ab cd";   /* "üé 日ab cd": 9 characters, 13 bytes */
  size_t n = strlen(s);
  CHECK_EQ(hsi_term_width(s, n), 9u);
  CHECK_EQ(hsi_term_take(s, n, 0), 0u);
  CHECK_EQ(hsi_term_take(s, n, 1), 2u);
  CHECK_EQ(hsi_term_take(s, n, 4), 8u);                 /* "üé 日" */
  CHECK_EQ(hsi_term_take(s, n, 9), n);
  CHECK_EQ(hsi_term_take(s, n, 20), n);
  CHECK_EQ(hsi_term_cut(s, n, 9, 0), n);                /* fits: 9 characters in 13 bytes */
  CHECK_EQ(hsi_term_cut(s, n, 8, 0), 10u);              /* at the blank after "ab" (8 characters) */
  CHECK_EQ(hsi_term_cut(s, n, 5, 0), 4u);               /* at the blank after "üé" */
  CHECK_EQ(hsi_term_cut(s, n, 5, 2), 9u);               /* no blank past 2 characters: after "üé 日a" */
  CHECK_EQ(hsi_term_cut(s, n, 1, 0), 2u);               /* never inside "ü" */
  CHECK_EQ(hsi_term_cut(s, n, 4, 3), 8u);               /* after "日", not inside it */
}

int main(void) {
  RUN(fits_as_it_is);
  RUN(long_path_cut_from_the_left);
  RUN(utf8_not_split);
  RUN(cut_counts_characters);
  return UNIT_DONE();
}
