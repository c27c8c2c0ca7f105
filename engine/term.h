/* term.h -- terminal facts, lines cut to it and the progress line (term.c). */
#ifndef HS_TERM_H
#define HS_TERM_H
#include "heapscript.h"

#define HSI_TERM_MAXFILES 64

/* The width of standard output when it is a terminal (COLUMNS, else the
   terminal's own; 80 when neither is within 20..1000), 0 when it is a file
   or a pipe: text into those is not fitted, one line per item. */
int hsi_term_columns(void);
/* The width standard output would have as a terminal (COLUMNS, else the
   terminal's own, else 80), whatever it is. */
int hsi_term_stdout_width(void);
/* Columns of s[0..n) in UTF-8: its characters (a byte 10xxxxxx continues
   one).  Every character is taken as one column. */
size_t hsi_term_width(const char *s, size_t n);
/* The bytes of s[0..n)'s first w characters (n when it has no more). */
size_t hsi_term_take(const char *s, size_t n, size_t w);
/* Where to cut s[0..n) (a byte offset) for a line of at most w
   characters: n when it fits; else at its last blank, the line before it
   more than min characters and at most w; else after w characters, never
   inside one.  The line is s[0..cut); the blanks at the cut are the
   caller's to drop. */
size_t hsi_term_cut(const char *s, size_t n, size_t w, size_t min);
/* s with the control characters a terminal would act on (C0 but tab and
   line feed, DEL, C1; in one line of a table, one_line, tab and line feed
   too) made '?', in place: names from a trace are not the terminal's
   commands.  s itself.  hsi_term_dirty: whether s has one. */
char *hsi_term_clean(char *s, int one_line);
int hsi_term_dirty(const char *s, int one_line);
/* 1 when standard output takes colour: a terminal, NO_COLOR unset or empty, TERM not "dumb". */
int hsi_term_color(void);

typedef struct hsi_term_progress {
  hs_reader *r;
  const char *what;                      /* "analysing trace.etl" */
  double next;                           /* monotonic seconds of the next line */
  uint64_t total;                        /* buffers of every file */
  uint64_t before[HSI_TERM_MAXFILES];    /* buffers of the files before file i */
  int shown;
  int cols;                              /* stderr's width (COLUMNS, else the terminal's) */
  int dumb;                              /* TERM=dumb: no "\033[K"; spaces clear the line */
  size_t len;                            /* the length of the line shown */
} hsi_term_progress;

/* The progress line "heapscript: WHAT NN%" for a terminal of cols
   columns, into out (cap bytes, at least 64): within cols - 1 columns,
   so that a rewrite after '\r' never leaves a wrapped row behind.  What
   is cut is the path after WHAT's first word, from the left, after
   "...": "heapscript: analysing ...deep/dir/trace.etl  42%".  Its length. */
size_t hsi_term_progress_line(const char *what, int pct, int cols, char *out, size_t cap);

/* Set p up for a pass over r; 1 when a line may be shown (stderr is a
   terminal), 0 otherwise (then do not install the callback). */
int hsi_term_progress_init(hsi_term_progress *p, hs_reader *r, const char *what);
/* The analysis pass's callback (hsi_analysis_scope.progress), ud = p. */
void hsi_term_progress_step(void *ud, const hs_event *ev);
/* Clear the line if one was shown. */
void hsi_term_progress_done(hsi_term_progress *p);
#endif
