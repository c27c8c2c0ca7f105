/*
** live.h -- the store behind a live session: events arrive from a
** producer thread (ETW's ProcessTrace callback on Windows, win_live.c, or
** the replay source, replay.c) as EVENT_RECORDs, go through the adapter
** (evrec.h) and are kept in arrival order.  The consumer (the Lua layer,
** lua_live.c) waits for time to pass in the trace, and opens readers over
** what has arrived: a reader over the first N records is a trace like a
** file's (rewind, reopen, the whole analysis), so a periodic report runs
** the same code as the final one.
**
** Records are copied once into chunks that never move, so readers decode
** them without holding the lock.  The store is shared by its readers and
** its owner: each holds a reference.
*/
#ifndef HS_LIVE_H
#define HS_LIVE_H
#include "heapscript.h"
#include "evrec.h"

typedef struct hsi_live hsi_live;

typedef struct hsi_live_counts {
  uint64_t events;          /* records kept */
  uint64_t lost_events;     /* RTLostEvent notices and what the session reported lost */
  uint64_t lost_buffers;    /* RTLostBuffer notices and the session's count */
  uint64_t dropped;         /* events the store could not keep (too large, no memory) */
  uint64_t bytes;           /* bytes of the records kept */
  int64_t last_ts;          /* timestamp of the latest record */
  int finished;             /* the producer has ended */
} hsi_live_counts;

/* What the command line asks of a session. */
typedef struct hsi_live_opts {
  int replay;                   /* 1: --replay FILE..., 0: --live (Windows) */
  const char *const *paths;     /* --replay: the traces */
  int npaths;
  double speed;                 /* --replay: 1 real time, N faster, 0 --fast */
  long pid;                     /* --live --pid N (0: none) */
  const char *exe;              /* --live --exe NAME.exe (NULL: none) */
  double duration;              /* --duration S (0: until stopped) */
} hsi_live_opts;

/* What feeds a store: the replay source, or ETW sessions (win_live.c). */
typedef struct hsi_live_producer {
  void *impl;
  int (*start)(void *impl);     /* 0, or a negative HS_E* */
  void (*close)(void *impl);    /* stop delivering (the store was asked), wait, free */
} hsi_live_producer;

/* A store named `name` (what hs_reader_path says) whose clock is lf's. */
hsi_live *hsi_live_new(const hs_logfile *lf, const char *name);
void hsi_live_unref(hsi_live *s);

/* ---- producer side (any thread) */
/* Adapt and keep one event.  Never blocks for long: a real-time callback
   that waits makes ETW lose events. */
void hsi_live_event(hsi_live *s, const hsi_evrec *e);
void hsi_live_add_lost(hsi_live *s, uint64_t events, uint64_t buffers);
/* The producer has ended; reason says why ("end of trace", "target exited"). */
void hsi_live_finish(hsi_live *s, const char *reason);
/* Has the consumer asked the producer to stop? */
int hsi_live_stopping(hsi_live *s);

/* ---- consumer side */
void hsi_live_request_stop(hsi_live *s, const char *reason);
/*
** Wait until an event stamped at or after until_ts has arrived (1; *n is
** the number of records before the first such one), the producer has
** finished (0; *n all records), or timeout_ms has passed (2; *n all
** records so far).  timeout_ms < 0: no timeout.
*/
int hsi_live_wait(hsi_live *s, int64_t until_ts, int timeout_ms, uint64_t *n);
void hsi_live_counts_get(hsi_live *s, hsi_live_counts *c);
/* Why the session ended (after it finished), or "". */
const char *hsi_live_reason(hsi_live *s);
const hs_logfile *hsi_live_logfile(hsi_live *s);
/* A reader over the first n records (n > count: all there are now). */
int hsi_live_reader(hsi_live *s, uint64_t n, hs_reader **out);
#endif
