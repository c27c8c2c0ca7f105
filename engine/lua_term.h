/* lua_term.h -- terminal facts and the progress line (lua_term.c). */
#ifndef HS_LUA_TERM_H
#define HS_LUA_TERM_H
#include "heapscript.h"

#define HSI_TERM_MAXFILES 64

/* 1 when standard output takes colour: a terminal, NO_COLOR unset or empty, TERM not "dumb". */
int hsi_term_color(void);

typedef struct hsi_term_progress {
  hs_reader *r;
  const char *what;                      /* "analysing trace.etl" */
  double next;                           /* monotonic seconds of the next line */
  uint64_t total;                        /* buffers of every file */
  uint64_t before[HSI_TERM_MAXFILES];    /* buffers of the files before file i */
  int shown;
} hsi_term_progress;

/* Set p up for a pass over r; 1 when a line may be shown (stderr is a
   terminal), 0 otherwise (then do not install the callback). */
int hsi_term_progress_init(hsi_term_progress *p, hs_reader *r, const char *what);
/* The analysis pass's callback (hsi_analysis_scope.progress), ud = p. */
void hsi_term_progress_step(void *ud, const hs_event *ev);
/* Clear the line if one was shown. */
void hsi_term_progress_done(hsi_term_progress *p);
#endif
