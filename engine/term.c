/*
** term.c -- the terminal: its width and colour, lines cut to it, and the
** progress line of a long analysis on standard error.  Lua-free (the
** core's C commands use it); heapscript.terminal() is lua_term.c's.
**
** Colour only when standard output is a terminal and NO_COLOR
** (https://no-color.org) is unset or empty and TERM is not "dumb".
** Progress only when standard error is a terminal, so a redirected or
** piped run (CI logs, tests) never holds a carriage return.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _WIN32
#include <io.h>
#define isatty _isatty
#define fileno _fileno
#else
#include <unistd.h>
#include <sys/ioctl.h>
#endif

#include "term.h"
#include "thread.h"

/* The width of the terminal on f: COLUMNS, else the terminal's own. */
static int columns_of(FILE *f) {
  const char *e = getenv("COLUMNS");
  int n = e ? atoi(e) : 0;
#if defined(TIOCGWINSZ)
  if (n <= 0 && isatty(fileno(f))) {
    struct winsize ws;
    if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0) n = ws.ws_col;
  }
#endif
  return n >= 20 && n <= 1000 ? n : 80;
}

int hsi_term_stdout_width(void) { return columns_of(stdout); }

static int columns(void) { return columns_of(stdout); }

int hsi_term_columns(void) { return isatty(fileno(stdout)) ? columns() : 0; }

size_t hsi_term_width(const char *s, size_t n) {
  size_t i, w = 0;
  for (i = 0; i < n; i++) w += ((unsigned char)s[i] & 0xC0) != 0x80;
  return w;
}

size_t hsi_term_take(const char *s, size_t n, size_t w) {
  size_t i;
  for (i = 0; i < n; i++)
    if (((unsigned char)s[i] & 0xC0) != 0x80 && w-- == 0) return i;
  return n;
}

size_t hsi_term_cut(const char *s, size_t n, size_t w, size_t min) {
  size_t end = hsi_term_take(s, n, w), lo, k;
  if (end == n) return n;
  lo = hsi_term_take(s, end, min);
  for (k = end; k > lo; k--) if (s[k] == ' ') return k;   /* a blank is one byte */
  return end ? end : hsi_term_take(s, n, 1);               /* w 0: one character */
}

/* The control character at p a terminal would act on: its bytes (1, or 2
   for a C1 one), 0 for none; tab and line feed are ones in a line of a
   table (one_line), not in text. */
static size_t ctl(const unsigned char *p, int one_line) {
  if (*p == '\t' || *p == '\n') return one_line ? 1 : 0;
  if (*p < 0x20 || *p == 0x7F) return 1;
  return *p == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F ? 2 : 0;
}

int hsi_term_dirty(const char *s, int one_line) {
  const unsigned char *p;
  for (p = (const unsigned char *)s; *p; p++) if (ctl(p, one_line)) return 1;
  return 0;
}

char *hsi_term_clean(char *s, int one_line) {
  unsigned char *p;
  for (p = (unsigned char *)s; *p; p++) {
    size_t k = ctl(p, one_line);
    if (k == 2) { p[0] = p[1] = '?'; p++; }
    else if (k == 1) *p = '?';
  }
  return s;
}

int hsi_term_color(void) {
  const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
  if (nc && *nc) return 0;
  if (term && strcmp(term, "dumb") == 0) return 0;
  return isatty(fileno(stdout));
}


/* ------------------------------------------------------------ progress */

static double now_s(void) { return hsi_now_ms() / 1000.0; }   /* thread.h: monotonic */

/*
** A long pass shows one line, rewritten in place, no more than five
** times a second, and only after a first delay (0.5 s; the environment's
** HEAPSCRIPT_PROGRESS_DELAY in seconds, for tests) so short runs show
** nothing.  The share done is the buffers behind the current one, over
** all files: buffers are merged in time order, so it grows steadily.
*/
size_t hsi_term_progress_line(const char *what, int pct, int cols, char *out, size_t cap) {
  static const char dots[] = "...";
  const char *pre = "heapscript: ", *sp = strchr(what, ' '), *keep;
  char tail[8];
  size_t room, wl = strlen(what), head, fixed, n;
  snprintf(tail, sizeof tail, " %3d%%", pct < 0 ? 0 : pct > 100 ? 100 : pct);
  if (cols < 20) cols = 20;
  room = (size_t)cols - 1;                      /* the last column never written */
  if (room > cap - 1) room = cap - 1;
  if (strlen(pre) + wl + strlen(tail) <= room) {
    snprintf(out, cap, "%s%s%s", pre, what, tail);
    return strlen(out);
  }
  /* too long: the first word ("analysing") and as much of the end of the
     rest as fits; narrower still, without the word, then without "heapscript: " */
  head = sp ? (size_t)(sp - what) + 1 : 0;
  fixed = strlen(pre) + head + sizeof dots - 1 + strlen(tail);
  if (fixed + 8 > room) { fixed -= head; head = 0; }
  if (fixed + 8 > room) { fixed -= strlen(pre); pre = ""; }
  n = room - fixed;                              /* room >= 19, fixed <= 8 here */
  keep = what + wl - (n < wl ? n : wl);
  while (keep < what + wl && ((unsigned char)*keep & 0xC0) == 0x80) keep++;   /* not inside a UTF-8 character */
  snprintf(out, cap, "%s%.*s%s%s%s", pre, (int)head, what, dots, keep, tail);
  return strlen(out);
}

int hsi_term_progress_init(hsi_term_progress *p, hs_reader *r, const char *what) {
  const char *d = getenv("HEAPSCRIPT_PROGRESS_DELAY"), *term = getenv("TERM");
  int i, n = hs_reader_nfiles(r);
  memset(p, 0, sizeof *p);
  if (!isatty(fileno(stderr))) return 0;
  p->r = r;
  p->what = what;
  p->cols = columns_of(stderr);
  p->dumb = term && strcmp(term, "dumb") == 0;
  p->next = now_s() + (d && *d ? atof(d) : 0.5);
  for (i = 0; i < n && i < HSI_TERM_MAXFILES; i++) {
    p->before[i] = p->total;
    p->total += hs_reader_stats(r, i)->buffers;
  }
  return p->total > 0;
}

void hsi_term_progress_step(void *ud, const hs_event *ev) {
  hsi_term_progress *p = (hsi_term_progress *)ud;
  double t = now_s(), done;
  if (t < p->next || ev->file >= HSI_TERM_MAXFILES) return;
  p->next = t + 0.2;
  done = (double)(p->before[ev->file] + ev->buffer) / (double)p->total;
  if (done > 1) done = 1;
  {
    char line[1024];
    size_t n = hsi_term_progress_line(p->what, (int)(done * 100), p->cols, line, sizeof line);
    fputc('\r', stderr);
    fputs(line, stderr);
    if (!p->dumb) fputs("\033[K", stderr);                     /* a shorter line leaves nothing */
    else for (; p->len > n; p->len--) fputc(' ', stderr);     /* (a dumb terminal: spaces) */
    p->len = n;
  }
  fflush(stderr);
  p->shown = 1;
}

void hsi_term_progress_done(hsi_term_progress *p) {
  if (!p->shown) return;
  /* the line goes: what follows starts clean */
  if (!p->dumb) fputs("\r\033[K", stderr);
  else {
    fputc('\r', stderr);
    for (; p->len > 0; p->len--) fputc(' ', stderr);
    fputc('\r', stderr);
  }
  fflush(stderr);
  p->shown = 0;
}
