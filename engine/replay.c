/*
** replay.c -- an .etl file as real-time callbacks (see replay.h).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "replay.h"
#include "damlog.h"
#include "source.h"
#include "thread.h"

#define MAX_ITEMS 64             /* extended data items of one event */

struct hsi_replay {
  hs_reader *r;
  hsi_live *s;
  double speed;
  hsi_thread th;
  int started;
  hsi_damlog dmg;                /* what the reader skipped (hsi_replay_join hands it over) */
};

/* The reader's damage: at open on the caller's thread, then on the
   replay's (one at a time). */
static void on_damage(void *ud, const hs_damage *d) { (void)hsi_damlog_add(&((hsi_replay *)ud)->dmg, d); }

int hsi_replay_open(hsi_replay **out, const char *const *paths, int npaths, double speed,
                    hsi_live **store, char *err, size_t errlen) {
  hsi_replay *p = (hsi_replay *)calloc(1, sizeof *p);
  hs_reader_opts o;
  char name[600];
  int rc;
  *out = NULL; *store = NULL;
  if (!p) { snprintf(err, errlen, "out of memory"); return HS_ENOMEM; }
  memset(&o, 0, sizeof o);
  o.on_damage = on_damage;
  o.ud = p;
  if ((rc = hs_reader_open(&p->r, paths, npaths, &o, err, errlen)) < 0) {
    hsi_damlog_free(&p->dmg);
    free(p);
    return rc;
  }
  snprintf(name, sizeof name, "%s", paths[0]);
  if (!(p->s = hsi_live_new(hs_reader_logfile(p->r, 0), name))) {
    hs_reader_close(p->r); hsi_damlog_free(&p->dmg); free(p);
    snprintf(err, errlen, "out of memory");
    return HS_ENOMEM;
  }
  p->speed = speed;
  *out = p;
  *store = p->s;
  return 0;
}

/* Sleep until wall time `at` (ms), in steps that notice a stop request. */
static int pace(hsi_replay *p, double at) {
  for (;;) {
    double left = at - hsi_now_ms();
    if (hsi_live_stopping(p->s)) return 1;
    if (left <= 0) return 0;
    hsi_sleep_ms(left > 50 ? 50 : (int)left + 1);
  }
}

/*
** The pace's clock is the first file's (an event of a file with another
** clock is paced at its time moved there: source.h, hsi_rebase), and the
** earliest start of the files is time 0.  An event outside every file's
** span as its logfile header gives it (StartTime..EndTime, with a minute
** of slack: rundown is written after the stop) carries a damaged or foreign
** timestamp and is delivered at once, so that a timestamp years away
** cannot hold the replay for years.  A file never stopped (EndTime 0) has
** no end: then nothing is delivered early for being late.
*/
#define SLACK_S 60.0

static void span_of(hs_reader *r, double freq, int64_t *t0, double *lo, double *hi) {
  const hs_logfile *first = hs_reader_logfile(r, 0);
  int i, n = hs_reader_nfiles(r), open = 0;
  int64_t start = INT64_MAX, end = INT64_MIN;
  for (i = 0; i < n; i++) {
    const hs_logfile *lf = hs_reader_logfile(r, i);
    if (lf->start_time < start) start = lf->start_time;
    if (lf->end_time <= lf->start_time) open = 1;
    else if (lf->end_time > end) end = lf->end_time;
  }
  *t0 = hs_time_from_filetime(first, start);
  *lo = (double)*t0 - SLACK_S * freq;
  *hi = open ? HUGE_VAL : (double)hs_time_from_filetime(first, end) + SLACK_S * freq;
}

static HSI_THREAD_FN run(void *arg) {
  hsi_replay *p = (hsi_replay *)arg;
  hs_event ev;
  hsi_evrec e;
  hsi_evrec_ext items[MAX_ITEMS];
  const hs_logfile *lf = hs_reader_logfile(p->r, 0);
  double freq = (double)hs_time_freq(lf), w0 = hsi_now_ms(), lo, hi;
  const hs_logfile **clocks = NULL;
  int64_t t0;
  uint64_t n = 0, bad = 0;
  int rc, stopped = 0;
  /* What the session itself recorded as lost is lost for a live consumer too. */
  for (rc = 0; rc < hs_reader_nfiles(p->r); rc++)
    hsi_live_add_lost(p->s, hs_reader_logfile(p->r, rc)->events_lost,
                      hs_reader_logfile(p->r, rc)->buffers_lost);
  span_of(p->r, freq, &t0, &lo, &hi);
  (void)hsi_reader_clocks(p->r, &clocks);   /* none (no memory): paced on raw ticks */
  while ((rc = hs_reader_next(p->r, &ev)) == 1) {
    int64_t raw = ev.timestamp;
    double t;
    n++;
    hsi_rebase(p->r, clocks, &ev);
    t = (double)ev.timestamp;
    ev.timestamp = raw;                    /* delivered as the file has it */
    if (p->speed > 0 && freq > 0 && t >= lo && t <= hi && pace(p, w0 + (t - (double)t0) / freq * 1000.0 / p->speed)) {
      stopped = 1; break;
    }
    if (p->speed <= 0 && (n & 1023) == 0 && hsi_live_stopping(p->s)) { stopped = 1; break; }
    if (hsi_evrec_from_event(&ev, &e, items, MAX_ITEMS) != 0) { bad++; continue; }
    hsi_live_event(p->s, &e);
  }
  free((void *)clocks);
  if (bad) hsi_live_add_lost(p->s, bad, 0);
  hsi_live_finish(p->s, stopped ? "stopped" : rc < 0 ? "the trace could not be read further" : "end of trace");
  return HSI_THREAD_RET;
}

int hsi_replay_start(hsi_replay *p) {
  if (hsi_th_start(&p->th, run, p) != 0) return HS_ENOMEM;
  p->started = 1;
  return 0;
}

void hsi_replay_join(hsi_replay *p, hsi_damlog *damage) {
  if (p->started) hsi_th_join(p->th);
  p->started = 0;
  *damage = p->dmg;
  memset(&p->dmg, 0, sizeof p->dmg);
}

void hsi_replay_close(hsi_replay *p) {
  if (!p) return;
  if (p->started) hsi_th_join(p->th);
  hs_reader_close(p->r);
  hsi_damlog_free(&p->dmg);
  free(p);
}
