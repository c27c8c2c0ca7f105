/*
** test_prefetch.c -- the reader on a second thread gives exactly what the
** reader gives: same events in the same order, same bytes, whatever their
** size (records of up to 60 KB fill blocks early), also after an early
** stop; and the analysis built through it equals the one built without.
*/
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include "unit.h"
#include "heapscript.h"
#include "writer.h"
#include "prefetch.h"
#include "thread.h"
#include "analysis.h"

static char path[512];

static int write_trace(int n) {
  hsi_writer *w;
  hsi_writer_opts o;
  static uint8_t pl[60000];
  int i;
  memset(&o, 0, sizeof o);
  o.cpus = 3;
  unit_tmp_path(path, sizeof path, "prefetch.etl");
  if (hsi_writer_open(&w, path, &o, NULL, 0)) return -1;
  for (i = 0; i < n; i++) {
    size_t len = i % 97 == 0 ? 40000 + (size_t)(i % 5) * 4000 : (size_t)(i % 50);
    memset(pl, i & 0xFF, len);
    hsi_writer_kernel(w, i % 3, HS_HT_SYSTEM64, 0x05, 36, 2, 4, (uint32_t)i, 1000 + i, pl, len);
  }
  return hsi_writer_close(w);
}

/* The plain read: the reader itself as the source. */
static int reader_src(void *ud, hs_event *ev, void *extra) {
  (void)extra;
  return hs_reader_next((hs_reader *)ud, ev);
}

static hsi_prefetch *open_reader(hs_reader *r) { return hsi_prefetch_open(reader_src, r, 0, (size_t)-1); }

/* One event at a time out of the blocks hsi_prefetch_take hands over: 1
   with *e (and *x, the stage's bytes) set, 0 at the end, negative: the
   source's error. */
struct cur { hsi_prefetch *pf; size_t xsize; const hs_event *ev; uint8_t *x; int n, i, blocks; };

static int cur_next(struct cur *c, const hs_event **e, void **x) {
  if (c->i == c->n) {
    void *xp = NULL;
    int n = hsi_prefetch_take(c->pf, &c->ev, &xp);
    if (n <= 0) return n;
    c->x = (uint8_t *)xp;
    c->n = n;
    c->i = 0;
    c->blocks++;
  }
  *e = &c->ev[c->i];
  if (x) *x = c->x + (size_t)c->i * c->xsize;
  c->i++;
  return 1;
}

TEST(same_events_in_the_same_order) {
  hs_reader *a, *b;
  hsi_prefetch *pf;
  hs_event x;
  const hs_event *py;
  const char *p = path;
  struct cur c;
  uint64_t n = 0, bad = 0;
  int ra, rb;
  memset(&c, 0, sizeof c);
  CHECK_EQ(write_trace(30000), 0);
  CHECK_EQ(hs_reader_open(&a, &p, 1, NULL, NULL, 0), 0);
  CHECK_EQ(hs_reader_open(&b, &p, 1, NULL, NULL, 0), 0);
  setenv("HEAPSCRIPT_THREADS", "1", 1);
  pf = open_reader(b);
  CHECK(pf != NULL);
  if (!pf) return;
  c.pf = pf;
  for (;;) {
    hs_event y;
    ra = hs_reader_next(a, &x);
    rb = cur_next(&c, &py, NULL);
    if (ra != rb) { bad++; break; }
    if (ra != 1) break;
    y = *py;
    n++;
    if (x.timestamp != y.timestamp || x.record_len != y.record_len || x.payload_len != y.payload_len ||
        x.cpu != y.cpu || x.tid != y.tid || memcmp(x.record, y.record, x.record_len) != 0 ||
        y.payload != y.record + (x.payload - x.record))
      bad++;
  }
  CHECK_EQ(n, 30001);
  CHECK_EQ(bad, 0);
  CHECK(c.blocks >= 29);                              /* whole blocks: 1,024 events at most */
  CHECK_EQ(hsi_prefetch_take(pf, &py, NULL), 0);      /* the end stays the end */
  hsi_prefetch_close(pf);
  hs_reader_close(a);
  hs_reader_close(b);
}

/* A stage on the reading thread: its bytes about each event come out
   with that event, also where a large record moved the event to the next
   block. */
struct mark { uint64_t seq; int64_t ts; uint32_t len; uint8_t pad[44]; };
struct stage_ud { hs_reader *r; uint64_t seq; };

static int stage(void *ud, hs_event *ev, void *extra) {
  struct stage_ud *u = (struct stage_ud *)ud;
  struct mark *m = (struct mark *)extra;
  int rc = hs_reader_next(u->r, ev);
  if (rc != 1) return rc;
  m->seq = u->seq++;
  m->ts = ev->timestamp;
  m->len = ev->record_len;
  memset(m->pad, (int)(m->seq & 0xFF), sizeof m->pad);
  return 1;
}

/* The trace through a prefetch thread running src (a stage over u); NULL
   (checked) when it cannot be had. */
static hsi_prefetch *open_staged_x(hs_reader **r, struct stage_ud *u, hsi_prefetch_src src,
                                   size_t xsize, size_t xbytes) {
  const char *p = path;
  hsi_prefetch *pf;
  CHECK_EQ(hs_reader_open(r, &p, 1, NULL, NULL, 0), 0);
  if (!*r) return NULL;
  u->r = *r;
  u->seq = 0;
  setenv("HEAPSCRIPT_THREADS", "1", 1);
  pf = hsi_prefetch_open(src, u, xsize, xbytes);
  CHECK(pf != NULL);
  if (!pf) hs_reader_close(*r);
  return pf;
}

static hsi_prefetch *open_staged(hs_reader **r, struct stage_ud *u, hsi_prefetch_src src) {
  return open_staged_x(r, u, src, sizeof(struct mark), (size_t)-1);
}

/* The trace through a prefetch thread running src beside a plain reader
   of it: fn(event through the thread, the same event read plainly, its
   extra, its number, counts) for each; the events taken, *blocks the
   blocks they came in.  The counts are fn's (counts[0]: the bad ones). */
typedef void (*pair_fn)(const hs_event *e, const hs_event *x, const void *extra, uint64_t n, uint64_t *counts);

static uint64_t side_by_side(hsi_prefetch_src src, size_t xsize, size_t xbytes, pair_fn fn,
                             uint64_t *counts, int *blocks) {
  hs_reader *r, *a = NULL;
  hsi_prefetch *pf;
  struct stage_ud u;
  struct cur c;
  const hs_event *e;
  const char *p = path;
  hs_event x;
  void *xp;
  uint64_t n = 0;
  *blocks = 0;
  if (!(pf = open_staged_x(&r, &u, src, xsize, xbytes))) return 0;
  CHECK_EQ(hs_reader_open(&a, &p, 1, NULL, NULL, 0), 0);
  memset(&c, 0, sizeof c);
  c.pf = pf;
  c.xsize = xsize;
  while (a && cur_next(&c, &e, &xp) == 1) {
    if (hs_reader_next(a, &x) != 1) { counts[0]++; break; }
    fn(e, &x, xp, n++, counts);
  }
  *blocks = c.blocks;
  hsi_prefetch_close(pf);
  hs_reader_close(r);
  hs_reader_close(a);
  return n;
}

/* Every event to the end, each with the stage's mark of it: the events
   taken, *bad those whose mark is not theirs. */
static uint64_t drain_marks(hsi_prefetch *pf, uint64_t *bad) {
  const hs_event *e;
  void *x = NULL;
  struct cur c;
  uint64_t n = 0;
  size_t k;
  memset(&c, 0, sizeof c);
  c.pf = pf;
  c.xsize = sizeof(struct mark);
  *bad = 0;
  while (cur_next(&c, &e, &x) == 1) {
    const struct mark *m = (const struct mark *)x;
    if (m->seq != n || m->ts != e->timestamp || m->len != e->record_len) ++*bad;
    for (k = 0; k < sizeof m->pad; k++) if (m->pad[k] != (uint8_t)(n & 0xFF)) { ++*bad; break; }
    n++;
  }
  return n;
}

TEST(a_stage_and_its_bytes) {
  hs_reader *r;
  hsi_prefetch *pf;
  struct stage_ud u;
  uint64_t bad;
  if (!(pf = open_staged(&r, &u, stage))) return;
  CHECK_EQ(drain_marks(pf, &bad), 30001);
  CHECK_EQ(bad, 0);
  hsi_prefetch_close(pf);
  hs_reader_close(r);
}

/* A stage that needs none of a record's bytes sets it to NULL: the event
   goes over as the stage's bytes alone and takes no room, so blocks
   close on their count of events alone (the large records closed them
   early), and the events and bytes of the others are still theirs. */
static int drop_large(void *ud, hs_event *ev, void *extra) {
  int rc = stage(ud, ev, extra);
  if (rc == 1 && ev->record_len > 1000) ev->record = ev->payload = ev->ext = NULL;
  return rc;
}

static void check_dropped(const hs_event *e, const hs_event *x, const void *extra, uint64_t n, uint64_t *k) {
  const struct mark *m = (const struct mark *)extra;
  if (m->seq != n || m->ts != x->timestamp || m->len != x->record_len) k[0]++;
  else if (x->record_len > 1000) k[1]++;            /* dropped: its event is not to be read */
  else if (e->timestamp != x->timestamp || e->record_len != x->record_len || !e->record
           || memcmp(e->record, x->record, x->record_len) != 0) k[0]++;
}

TEST(dropped_bytes_take_no_room) {
  uint64_t k[2] = { 0, 0 };
  int blocks;
  CHECK_EQ(side_by_side(drop_large, sizeof(struct mark), (size_t)-1, check_dropped, k, &blocks), 30001);
  CHECK_EQ(k[0], 0);
  CHECK_EQ(k[1], 310);                                 /* every 97th, 40,000 bytes or more */
  CHECK_EQ(blocks, 30);                                /* 1,024 events each, the last 305 */
}

/* A stage that keeps only a record's payload (the analysis's StackWalks)
   sets the record to NULL and names the payload in its extra: the payload
   crosses alone, copied into the block, and the extra names the copy.
   Every payload comes whole, also those of 40,000 bytes and more that
   open a new block, and none is read where the reader had it. */
struct pmark { uint64_t seq; uint64_t at; uint64_t orig; uint32_t len; };

static int keep_payload(void *ud, hs_event *ev, void *extra) {
  struct stage_ud *u = (struct stage_ud *)ud;
  struct pmark *m = (struct pmark *)extra;
  int rc = hs_reader_next(u->r, ev);
  if (rc != 1) return rc;
  m->seq = u->seq++;
  m->at = m->orig = (uint64_t)(uintptr_t)ev->payload;
  m->len = ev->payload_len;
  ev->record = ev->ext = NULL;
  return 1;
}

static void check_payload(const hs_event *e, const hs_event *x, const void *extra, uint64_t n, uint64_t *k) {
  const struct pmark *m = (const struct pmark *)extra;
  const uint8_t *q = (const uint8_t *)(uintptr_t)m->at;
  (void)e;
  if (m->seq != n || m->len != x->payload_len || !q || memcmp(q, x->payload, x->payload_len) != 0) k[0]++;
  k[1] += m->at != m->orig;
  k[2] += x->payload_len > 1000;
}

TEST(payloads_alone) {
  uint64_t k[3] = { 0, 0, 0 };
  int blocks;
  CHECK_EQ(side_by_side(keep_payload, sizeof(struct pmark), offsetof(struct pmark, at), check_payload, k, &blocks),
           30001);
  CHECK_EQ(k[0], 0);
  CHECK_EQ(k[1], 30001);                               /* every payload read from its copy */
  CHECK_EQ(k[2], 310);
  CHECK(blocks > 30);                                  /* the large ones fill blocks early */
}

/* A consumer with work of its own while it waits (the analysis helps
   its reader): every event still comes, in order, and a block published
   while the consumer was busy is not missed (it would wait for a wake-up
   already given: the producer, its ring full, gives no other, and the
   alarm ends the test). */
static void nap(long us) {
  struct timespec t;
  t.tv_sec = 0;
  t.tv_nsec = us * 1000;
  nanosleep(&t, NULL);
}

static int slow_src(void *ud, hs_event *ev, void *extra) {
  static unsigned calls;
  if (++calls % 500 == 0) nap(200);           /* a block takes over 1.5 ms */
  return stage(ud, ev, extra);
}

static int idle_calls;
static int busy_idle(void *ud) {
  (void)ud;
  nap(5000);                                   /* blocks come meanwhile */
  return ++idle_calls % 3 == 0;                /* some calls found work */
}

TEST(idle_work_while_waiting) {
  hs_reader *r;
  hsi_prefetch *pf;
  struct stage_ud u;
  uint64_t n, bad;
  if (!(pf = open_staged(&r, &u, slow_src))) return;
  hsi_prefetch_on_idle(pf, busy_idle, NULL);
  idle_calls = 0;
  alarm(20);
  n = drain_marks(pf, &bad);
  alarm(0);
  CHECK_EQ(n, 30001);
  CHECK_EQ(bad, 0);
  CHECK(idle_calls > 3);
  hsi_prefetch_close(pf);
  hs_reader_close(r);
}

/*
** Where the two sides waited (hsi_prefetch_counts_get): the consumer finds
** the ring empty while the source holds back, and counts what its idle
** function did then; the source finds the ring full while the consumer
** holds a block and takes no other; every block taken is counted.
*/
static int go;                                 /* the source may start */
static int made;

static int waiting_src(void *ud, hs_event *ev, void *extra) {
  (void)ud; (void)extra;
  while (!hsi_atomic_get(&go)) nap(1000);
  if (made == 20000) return 0;
  memset(ev, 0, sizeof *ev);                   /* no record: it goes over as its (empty) extra */
  ev->timestamp = made++;
  return 1;
}

static int idle_then_go(void *ud) {
  int *calls = (int *)ud;
  if (++*calls == 1) return 1;                 /* found work: counted as help */
  hsi_atomic_set(&go, 1);
  return 0;
}

TEST(where_the_sides_waited) {
  hsi_prefetch *pf;
  hsi_prefetch_counts c;
  const hs_event *e;
  int calls = 0, n, took = 0, k;
  go = 0;
  made = 0;
  alarm(20);
  pf = hsi_prefetch_open(waiting_src, NULL, 0, (size_t)-1);
  CHECK(pf != NULL);
  if (!pf) return;
  hsi_prefetch_on_idle(pf, idle_then_go, &calls);
  CHECK((n = hsi_prefetch_take(pf, &e, NULL)) > 0);   /* empty until the idle function said go */
  took += n > 0;
  hsi_prefetch_counts_get(pf, &c);
  CHECK(c.empty >= 1);
  CHECK(c.helped >= 1);
  CHECK_EQ(c.blocks, 1);
  /* holding that block and taking no other, the source fills the rest */
  for (k = 0; k < 10000; k++) {
    hsi_prefetch_counts_get(pf, &c);
    if (c.full) break;
    nap(1000);
  }
  CHECK(c.full >= 1);
  while ((n = hsi_prefetch_take(pf, &e, NULL)) > 0) took++;
  CHECK_EQ(n, 0);
  hsi_prefetch_counts_get(pf, &c);
  CHECK_EQ(c.blocks, (uint64_t)took);
  CHECK(took >= 19);                           /* 20,000 events in blocks of 1,024 at most */
  alarm(0);
  hsi_prefetch_close(pf);
}

TEST(early_stop_and_disabled) {
  hs_reader *r;
  hsi_prefetch *pf;
  const hs_event *e;
  const char *p = path;
  CHECK_EQ(hs_reader_open(&r, &p, 1, NULL, NULL, 0), 0);
  pf = open_reader(r);
  CHECK(pf != NULL);
  CHECK(pf && hsi_prefetch_take(pf, &e, NULL) > 0);   /* one block taken, held */
  hsi_prefetch_close(pf);                              /* the producer is mid-trace: must not hang */
  setenv("HEAPSCRIPT_THREADS", "0", 1);
  CHECK(open_reader(r) == NULL);
  setenv("HEAPSCRIPT_THREADS", "1", 1);
  hs_reader_close(r);
  remove(path);
}

/* The pass: threads=1 whether it read on a prefetch thread; -1 when it
   could not be run. */
static int pass_threaded(const char *threads) {
  hs_reader *r = NULL;
  hsi_analysis *a = NULL;
  const char *p = path;
  char err[256];
  int t = -1;
  if (threads) setenv("HEAPSCRIPT_THREADS", threads, 1);
  else unsetenv("HEAPSCRIPT_THREADS");
  if (hs_reader_open(&r, &p, 1, NULL, NULL, 0) == 0 && r && hsi_analysis_run(r, NULL, &a, err, sizeof err) == 0) {
    t = hsi_analysis_threaded(a);
    /* the ring's counts come with the pass that had one */
    if (t) CHECK(hsi_analysis_ring(a)->blocks > 0);
    else CHECK_EQ(hsi_analysis_ring(a)->blocks, 0);
  }
  hsi_analysis_free(a);
  hs_reader_close(r);
  setenv("HEAPSCRIPT_THREADS", "1", 1);
  return t;
}

/* A trace under 4 MiB is analysed on one thread unless threads are asked
   for; a larger one on two unless they are refused. */
TEST(small_traces_on_one_thread) {
  const char *p = path;
  hs_reader *r;
  CHECK_EQ(write_trace(300), 0);                  /* about 180 KB */
  CHECK_EQ(pass_threaded(NULL), 0);
  CHECK_EQ(pass_threaded("1"), 1);
  CHECK_EQ(write_trace(30000), 0);                /* about 15 MB */
  CHECK(hs_reader_open(&r, &p, 1, NULL, NULL, 0) == 0 && hs_reader_stats(r, 0)->file_size >= (4u << 20));
  hs_reader_close(r);
  CHECK_EQ(pass_threaded(NULL), 1);
  CHECK_EQ(pass_threaded("0"), 0);
  CHECK_EQ(pass_threaded("2"), 1);
}

/* hsi_line_calloc (thread.h): zeroed, on a line boundary, and the whole
   of its last line its own (under SANITIZE=1 a write there past the
   block would be caught). */
TEST(lines_of_their_own) {
  static const size_t sizes[] = { 1, 8, 63, 64, 65, 136, 1000, 4096 };
  size_t k, i, bad = 0;
  for (k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    size_t n = sizes[k], whole = (n + 63) / 64 * 64;
    unsigned char *p = (unsigned char *)hsi_line_calloc(n);
    CHECK(p != NULL);
    if (!p) continue;
    CHECK_EQ((uintptr_t)p % 64, 0);
    for (i = 0; i < n; i++) bad += p[i] != 0;
    memset(p, 0xA5, whole);
    hsi_line_free(p);
  }
  CHECK_EQ(bad, 0);
  hsi_line_free(NULL);
}

int main(void) {
  RUN(lines_of_their_own);
  RUN(small_traces_on_one_thread);
  RUN(same_events_in_the_same_order);
  RUN(a_stage_and_its_bytes);
  RUN(dropped_bytes_take_no_room);
  RUN(payloads_alone);
  RUN(idle_work_while_waiting);
  RUN(where_the_sides_waited);
  RUN(early_stop_and_disabled);
  return UNIT_DONE();
}
