/*
** test_threads.c -- the reader gives the same walk with its decoding
** workers and without (HEAPSCRIPT_THREADS=0): every event field, the
** record bytes, the damage reports in their order and the file counters,
** on every corpus trace, the examples and written traces that force
** compressed buffers, tiny chunks and damage; and the analysis built on
** each walk has the same counts.
*/
#include <dirent.h>
#include <unistd.h>
#include "unit.h"
#include "corpus.h"
#include "heapscript.h"
#include "writer.h"
#include "analysis.h"
#include "source.h"
#include "thread.h"

typedef struct dmg_log { char text[16384]; size_t len; int n; } dmg_log;
static int last_damage;      /* damage reports in the last compare_walks */

static void on_damage(void *ud, const hs_damage *d) {
  dmg_log *l = (dmg_log *)ud;
  int k = snprintf(l->text + l->len, sizeof l->text - l->len, "%d %llu %u %s\n", d->file,
                   (unsigned long long)d->pos, d->buffer, d->what);
  l->n++;
  if (k > 0 && (size_t)k < sizeof l->text - l->len) l->len += (size_t)k;
}

static int same_event(const hs_event *a, const hs_event *b) {
  return memcmp(&a->provider, &b->provider, sizeof a->provider) == 0 && a->timestamp == b->timestamp &&
         a->keyword == b->keyword && a->record_len == b->record_len && a->payload_len == b->payload_len &&
         a->ext_len == b->ext_len && a->pid == b->pid && a->tid == b->tid && a->id == b->id &&
         a->version == b->version && a->task == b->task && a->hook == b->hook &&
         a->header_flags == b->header_flags && a->cpu == b->cpu && a->opcode == b->opcode &&
         a->level == b->level && a->channel == b->channel && a->header_type == b->header_type &&
         a->pointer_size == b->pointer_size && a->flags == b->flags && a->file == b->file &&
         a->buffer == b->buffer && a->offset == b->offset && a->buffer_pos == b->buffer_pos &&
         memcmp(a->record, b->record, a->record_len) == 0 &&
         (a->payload - a->record) == (b->payload - b->record) &&
         (a->ext ? a->ext - a->record : -1) == (b->ext ? b->ext - b->record : -1);
}

static hs_reader *open_with(const char *path, const char *threads, dmg_log *log) {
  hs_reader *r = NULL;
  hs_reader_opts o;
  memset(&o, 0, sizeof o);
  memset(log, 0, sizeof *log);
  o.on_damage = on_damage;
  o.ud = log;
  setenv("HEAPSCRIPT_THREADS", threads, 1);
  if (hs_reader_open(&r, &path, 1, &o, NULL, 0)) r = NULL;
  unsetenv("HEAPSCRIPT_THREADS");
  return r;
}

/* Walk a and b to their end side by side: the events they gave, or -1 at
   the first difference.  Every `help` events (0: never) this thread also
   helps b's walk (hsi_reader_help), adding what it did to *helped. */
static long walk_pair(const char *path, hs_reader *a, hs_reader *b, int help, long *helped) {
  hs_event x, y;
  long n = 0;
  int ra, rb;
  for (;;) {
    ra = hs_reader_next(a, &x);
    rb = hs_reader_next(b, &y);
    if (ra != rb) return -1;
    if (ra != 1) return n;
    n++;
    if (!same_event(&x, &y)) { fprintf(stderr, "%s: event %ld differs\n", path, n); return -1; }
    if (help && n % help == 0) *helped += hsi_reader_help(b);
  }
}

/* Walk path both ways (twice each: the second walk after a rewind);
   returns the number of events, or -1 when a difference was found. */
static long compare_walks(const char *path, const char *threads) {
  static dmg_log la, lb;
  hs_reader *a = open_with(path, "0", &la), *b = open_with(path, threads, &lb);
  long n = 0, bad = 0;
  int pass;
  if (!a || !b) { hs_reader_close(a); hs_reader_close(b); return a == b ? 0 : -1; }
  for (pass = 0; pass < 2 && !bad; pass++) {
    if (pass) { hs_reader_rewind(a); hs_reader_rewind(b); }
    n = walk_pair(path, a, b, 0, NULL);
    if (n < 0) bad++;
    {
      const hs_file_stats *sa = hs_reader_stats(a, 0), *sb = hs_reader_stats(b, 0);
      if (memcmp(sa, sb, sizeof *sa) != 0) { bad++; fprintf(stderr, "%s: file stats differ\n", path); }
    }
    if (la.n != lb.n || la.len != lb.len || memcmp(la.text, lb.text, la.len) != 0) {
      bad++;
      fprintf(stderr, "%s: damage reports differ (%d and %d)\n", path, la.n, lb.n);
    }
  }
  last_damage = la.n;
  hs_reader_close(a);
  hs_reader_close(b);
  return bad ? -1 : n;
}

/* Two analyses made the same records: every column alike, the stacks
   matched to them included (the StackWalks cross between the pass's
   threads in their own form: analysis.c BARE_STACK). */
static int same_records(const hsi_analysis *x, const hsi_analysis *y) {
  const hsi_recs *a = hsi_life_recs(hsi_analysis_life(x)), *b = hsi_life_recs(hsi_analysis_life(y));
  size_t n = a->n;
  if (a->n != b->n) return 0;
#define SAME(c) (n == 0 || memcmp(a->c, b->c, n * sizeof *a->c) == 0)
  if (!(SAME(kind) && SAME(flags) && SAME(reason) && SAME(source) && SAME(inst) && SAME(key) && SAME(addr)
        && SAME(size) && SAME(ts_alloc) && SAME(ts_free) && SAME(stk_alloc) && SAME(stk_free)))
    return 0;
#undef SAME
  {
    /* ids are numbered in the order stacks are first met: their frames too */
    const hsi_stacks *sx = hsi_analysis_stacks(x), *sy = hsi_analysis_stacks(y);
    uint32_t id, k = hsi_stacks_count(sx);
    if (k != hsi_stacks_count(sy)) return 0;
    for (id = 1; id <= k; id++) {
      size_t nx, ny;
      const uint64_t *fx = hsi_stacks_frames(sx, id, &nx), *fy = hsi_stacks_frames(sy, id, &ny);
      if (nx != ny || (nx && memcmp(fx, fy, nx * sizeof *fx) != 0)) return 0;
    }
  }
  return 1;
}

static int compare_analysis(const char *path) {
  hs_reader *a, *b;
  hsi_analysis *x = NULL, *y = NULL;
  dmg_log la, lb;
  char err[HS_ERRLEN];
  int same = 0;
  a = open_with(path, "0", &la);
  b = open_with(path, "2", &lb);
  if (!a || !b) { hs_reader_close(a); hs_reader_close(b); return a == b; }
  setenv("HEAPSCRIPT_THREADS", "0", 1);
  if (hsi_analysis_run(a, NULL, &x, err, sizeof err)) x = NULL;
  setenv("HEAPSCRIPT_THREADS", "2", 1);
  if (hsi_analysis_run(b, NULL, &y, err, sizeof err)) y = NULL;
  unsetenv("HEAPSCRIPT_THREADS");
  if (x && y) {
    const hsi_analysis_counts *cx = hsi_analysis_counts_get(x), *cy = hsi_analysis_counts_get(y);
    same = memcmp(cx, cy, sizeof *cx) == 0 && same_records(x, y);
  } else same = x == y;
  hsi_analysis_free(y);
  y = NULL;
  /* the default: the machine's workers, and the analysis thread helping */
  if (same && hsi_analysis_run(b, NULL, &y, err, sizeof err)) y = NULL;
  if (same && x && y) {
    const hsi_analysis_counts *cx = hsi_analysis_counts_get(x), *cy = hsi_analysis_counts_get(y);
    same = memcmp(cx, cy, sizeof *cx) == 0 && same_records(x, y);
  } else if (same) same = x == y;
  hsi_analysis_free(x);
  hsi_analysis_free(y);
  hs_reader_close(a);
  hs_reader_close(b);
  return same;
}

static int is_etl(const char *name) {
  size_t n = strlen(name);
  return n > 4 && strcmp(name + n - 4, ".etl") == 0;
}

TEST(corpus_and_examples) {
  DIR *d = opendir(corpus_dir());
  struct dirent *e;
  char path[1024];
  int files = 0;
  static const char *examples[] = { "examples/memorytestapp.etl", "examples/notmyfault.etl" };
  size_t i;
  for (i = 0; i < sizeof examples / sizeof *examples; i++) {
    CHECK(compare_walks(examples[i], "2") > 0);
    CHECK(compare_walks(examples[i], "1") > 0);
    CHECK(compare_analysis(examples[i]));
  }
  if (!d) { CHECK(corpus_absent("test_threads") == 0); return; }
  while ((e = readdir(d)) != NULL) {
    long n;
    if (!is_etl(e->d_name)) continue;
    snprintf(path, sizeof path, "%s/%s", corpus_dir(), e->d_name);
    n = compare_walks(path, "2");
    if (n < 0) fprintf(stderr, "differs: %s\n", path);
    CHECK(n >= 0);
    CHECK(compare_analysis(path));
    files++;
  }
  closedir(d);
  CHECK(files > 10);
}

/* A thread beside the walk that helps it (hsi_reader_help), as the
   analysis thread does while it waits for events: the walk, with no
   worker of its own, gives what the plain walk gives. */
typedef struct helper { hs_reader *r; int stop; long helped; } helper;

static HSI_THREAD_FN help_loop(void *arg) {
  helper *h = (helper *)arg;
  while (!hsi_atomic_get(&h->stop)) h->helped += hsi_reader_help(h->r);
  return HSI_THREAD_RET;
}

static long compare_helped(const char *path) {
  static dmg_log la, lb;
  hs_reader *a = open_with(path, "0", &la), *b = open_with(path, "0", &lb);
  helper h;
  hsi_thread th;
  long n, bad = 0, mine = 0;
  if (!a || !b) { hs_reader_close(a); hs_reader_close(b); return -1; }
  hsi_reader_beside(b, 1000);             /* no worker on any machine: the helper alone */
  unsetenv("HEAPSCRIPT_THREADS");
  hs_reader_rewind(b);
  hsi_reader_beside(b, 0);
  CHECK_EQ(hsi_reader_workers(b), 0);
  memset(&h, 0, sizeof h);
  h.r = b;
  CHECK_EQ(hsi_th_start(&th, help_loop, &h), 0);
  n = walk_pair(path, a, b, 64, &mine);     /* this thread helps too, between events */
  if (n < 0) bad++;
  hsi_atomic_set(&h.stop, 1);
  hsi_th_join(th);
  if (memcmp(hs_reader_stats(a, 0), hs_reader_stats(b, 0), sizeof(hs_file_stats)) != 0) bad++;
  if (la.n != lb.n || la.len != lb.len || memcmp(la.text, lb.text, la.len) != 0) bad++;
  last_damage = la.n;
  /* which of the two helpers finds the work is the scheduler's choice (under
     a sanitizer the other thread can take all of it): between them, some */
  if (mine + h.helped == 0) { fprintf(stderr, "%s: helping found nothing to do\n", path); bad++; }
  CHECK_EQ(hsi_reader_help(b), 0);        /* after the walk: nothing */
  hs_reader_close(a);
  hs_reader_close(b);
  return bad ? -1 : n;
}

/* Written traces: compressed buffers (scratch slots), buffers of a single
   tiny record (notes fill chunks), and a damaged copy. */
static void write_trace(const char *path, int compress, int n) {
  hsi_writer *w;
  hsi_writer_opts o;
  uint8_t pl[300];
  int i;
  memset(&o, 0, sizeof o);
  o.cpus = 3;
  o.compress = compress;
  CHECK_EQ(hsi_writer_open(&w, path, &o, NULL, 0), 0);
  for (i = 0; i < n; i++) {
    size_t len = (size_t)(i * 7 % 300);
    memset(pl, i & 0xFF, len);
    hsi_writer_kernel(w, i % 3, HS_HT_SYSTEM64, 0x05, 36, 2, 4, (uint32_t)i, 1000 + i / 2, pl, len);
  }
  CHECK_EQ(hsi_writer_close(w), 0);
}

TEST(written_traces) {
  char path[512], bad[512];
  static const int formats[] = { 0, HS_XCA_LZNT1, HS_XCA_XPRESS, HS_XCA_XPRESS_HUFF };
  int c;
  size_t len, k;
  char *bytes;
  FILE *f;
  for (c = 0; c < 4; c++) {
    unit_tmp_path(path, sizeof path, "threads-%d.etl", c);
    write_trace(path, formats[c], 20000);
    CHECK(compare_walks(path, "1") == 20001);
    CHECK(compare_walks(path, "3") == 20001);
    CHECK(compare_helped(path) == 20001);
    /* damage: every 7th KiB page gets a bad record marker */
    bytes = slurp_len(path, &len);
    CHECK(bytes != NULL);
    if (!bytes) continue;
    for (k = 70000; k + 0x200 < len; k += 7 * 1024 + 13) bytes[k] = (char)0x5A;
    unit_tmp_path(bad, sizeof bad, "threads-%d-bad.etl", c);
    f = fopen(bad, "wb");
    CHECK(f && fwrite(bytes, 1, len, f) == len);
    if (f) fclose(f);
    free(bytes);
    CHECK(compare_walks(bad, "1") >= 0);
    if (last_damage <= 3) fprintf(stderr, "format %d: %d damage reports\n", formats[c], last_damage);
    CHECK(last_damage > 3);
    CHECK(compare_walks(bad, "2") >= 0);
    CHECK(compare_helped(bad) >= 0);
    CHECK(last_damage >= 2);                /* one walk (the others: two) */
    remove(path);
    remove(bad);
  }
}

/* A trace of a machine with many CPUs, each event on a CPU at random: its
   chunks hold fewer events (etl.c, chunk_max) and the tournament merges
   them.  Every event comes once, in time order, events of one tick in CPU
   order (then as written), with and without threads, read into slots and
   inflated. */
typedef struct mc_ev { uint32_t i, cpu; int64_t ts; } mc_ev;

static int mc_cmp(const void *pa, const void *pb) {
  const mc_ev *a = (const mc_ev *)pa, *b = (const mc_ev *)pb;
  if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
  if (a->cpu != b->cpu) return a->cpu < b->cpu ? -1 : 1;
  return a->i < b->i ? -1 : a->i > b->i;
}

TEST(many_cpus) {
  static const int formats[] = { 0, HS_XCA_XPRESS };
  enum { N = 60000, NCPU = 96 };
  static mc_ev want[N];
  char path[512];
  uint8_t pl[40];
  int c;
  for (c = 0; c < 2; c++) {
    hsi_writer *w;
    hsi_writer_opts o;
    dmg_log log;
    hs_reader *r;
    hs_event ev;
    uint32_t seed = 12345, i;
    int64_t ts = 1000;
    long got = 0, bad = 0;
    unit_tmp_path(path, sizeof path, "threads-cpus-%d.etl", c);
    memset(&o, 0, sizeof o);
    o.cpus = NCPU;
    o.compress = formats[c];
    CHECK_EQ(hsi_writer_open(&w, path, &o, NULL, 0), 0);
    for (i = 0; i < N; i++) {
      seed = seed * 1103515245u + 12345u;
      if ((seed >> 8) % 3 != 0) ts++;            /* a third share the tick before */
      want[i].i = i;
      want[i].cpu = (seed >> 16) % NCPU;
      want[i].ts = ts;
      memset(pl, (int)(i & 0xFF), sizeof pl);
      hsi_writer_kernel(w, (int)want[i].cpu, HS_HT_SYSTEM64, 0x05, 36, 2, 4, i, ts, pl, (size_t)(i % 40));
    }
    CHECK_EQ(hsi_writer_close(w), 0);
    qsort(want, N, sizeof want[0], mc_cmp);
    CHECK(compare_walks(path, "1") == (long)N + 1);
    CHECK(compare_walks(path, "3") == (long)N + 1);
    CHECK(compare_helped(path) == (long)N + 1);
    r = open_with(path, "2", &log);
    CHECK(r != NULL);
    while (r && hs_reader_next(r, &ev) == 1) {
      if (!(ev.flags & HS_EVF_KERNEL) || ev.hook != 0x0524) continue;   /* the header */
      if (got >= N || ev.tid != want[got].i || ev.timestamp != want[got].ts || ev.cpu != want[got].cpu
          || ev.payload_len != want[got].i % 40) {
        if (bad++ < 3) fprintf(stderr, "event %ld: tid %u ts %lld cpu %u\n", got, ev.tid, (long long)ev.timestamp, ev.cpu);
      }
      got++;
    }
    CHECK_EQ(got, (long)N);
    CHECK_EQ(bad, 0);
    CHECK_EQ(log.n, 0);
    hs_reader_close(r);
    remove(path);
  }
}

/* Buffers over 1 MiB are mapped, not read; large records leave few in
   each, so a chunk of the walk spans more buffers than it keeps (it
   closes early).  Every event must still be the file's bytes at its
   buffer_pos + offset, in order, with threads and without. */
TEST(mapped_buffers_of_few_records) {
  char path[512];
  static uint8_t pl[60000];
  hsi_writer *w;
  hsi_writer_opts o;
  hs_reader *r;
  dmg_log log;
  hs_event ev;
  size_t len;
  char *bytes;
  long n = 0, bad = 0;
  int i;
  unit_tmp_path(path, sizeof path, "threads-mapped.etl");
  memset(&o, 0, sizeof o);
  o.cpus = 1;
  o.buffer_size = 1179648;              /* 1.125 MiB: mapped; 19 records a buffer */
  CHECK_EQ(hsi_writer_open(&w, path, &o, NULL, 0), 0);
  for (i = 0; i < 720; i++) {           /* 38 buffers: more than a chunk keeps */
    memset(pl, i & 0xFF, sizeof pl);
    hsi_writer_kernel(w, 0, HS_HT_SYSTEM64, 0x05, 36, 2, 4, (uint32_t)i, 1000 + i, pl, sizeof pl);
  }
  CHECK_EQ(hsi_writer_close(w), 0);
  CHECK_EQ(compare_walks(path, "1"), 721);
  bytes = slurp_len(path, &len);
  CHECK(bytes != NULL);
  r = open_with(path, "1", &log);
  CHECK(r != NULL);
  while (bytes && r && hs_reader_next(r, &ev) == 1) {
    if (ev.buffer_pos + ev.offset + ev.record_len > len
        || memcmp(bytes + ev.buffer_pos + ev.offset, ev.record, ev.record_len) != 0
        || ev.buffer_pos != (uint64_t)ev.buffer * o.buffer_size || ev.offset < 0x48 || ev.offset >= o.buffer_size)
      bad++;
    else if (n > 0 && (ev.payload_len != sizeof pl || ev.payload[0] != (uint8_t)((n - 1) & 0xFF)
                       || ev.payload[sizeof pl - 1] != (uint8_t)((n - 1) & 0xFF) || ev.tid != (uint32_t)(n - 1)))
      bad++;
    n++;
  }
  CHECK_EQ(n, 721);
  CHECK_EQ(bad, 0);
  hs_reader_close(r);
  free(bytes);
  remove(path);
}

/* Threads of this process now (Linux); -1 where that cannot be seen.  A
   joined thread may stay listed for a moment: wait up to a second for
   the count `want`. */
static int tasks(int want) {
  int n = -1, tries;
  for (tries = 0; tries < 100; tries++) {
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    if (!d) return -1;
    for (n = 0; (e = readdir(d)) != NULL;) if (e->d_name[0] != '.') n++;
    closedir(d);
    if (n == want || want < 0) break;
    hsi_sleep_ms(10);
  }
  return n;
}

/* A reader starts its workers when it is first walked, not at its open or
   rewind: a script's trace that is only analysed (the pass reads the
   files again) and a reopen rewound at once start no thread. */
TEST(workers_start_with_the_walk) {
  char path[512];
  hs_reader *r;
  hs_event ev;
  char err[HS_ERRLEN];
  const char *pp = path;
  int base = tasks(-1), i;
  if (base < 0) { printf("  (no /proc/self/task here: thread counts not checked)\n"); return; }
  unit_tmp_path(path, sizeof path, "threads-lazy.etl");
  write_trace(path, 0, 40000);              /* 3 streams, over THREADS_MIN_BYTES */
  setenv("HEAPSCRIPT_THREADS", "2", 1);
  CHECK_EQ(hs_reader_open(&r, &pp, 1, NULL, err, sizeof err), 0);
  if (!r) { unsetenv("HEAPSCRIPT_THREADS"); remove(path); return; }
  CHECK_EQ(hsi_reader_workers(r), 2);       /* chosen */
  CHECK_EQ(tasks(base), base);              /* not started */
  CHECK_EQ(hs_reader_next(r, &ev), 1);
  CHECK_EQ(tasks(base + 2), base + 2);
  for (i = 0; i < 100; i++) CHECK_EQ(hs_reader_next(r, &ev), 1);
  CHECK_EQ(hs_reader_rewind(r), 0);
  CHECK_EQ(tasks(base), base);              /* stopped, and not started again */
  CHECK_EQ(hsi_reader_workers(r), 2);
  unsetenv("HEAPSCRIPT_THREADS");
  for (i = 0; hs_reader_next(r, &ev) == 1; i++) {}
  CHECK_EQ(i, 40001);
  hs_reader_close(r);
  CHECK_EQ(tasks(base), base);
  remove(path);
}

/* The analysis walks on its prefetch thread and works beside it: its
   reader starts one decoding worker fewer than a walk alone (none on two
   cores), and a later rewind walks alone again. */
TEST(workers_beside_the_pass) {
  char path[512];
  hs_reader *r;
  hsi_analysis *a = NULL;
  char err[HS_ERRLEN];
  const char *pp = path;
  int ncpu = hsi_ncpu(), alone, beside;
  CHECK_EQ(hsi_auto_workers(1, 0), 1);      /* reading overlaps decoding even on one core */
  CHECK_EQ(hsi_auto_workers(2, 0), 1);
  CHECK_EQ(hsi_auto_workers(8, 0), 7);
  CHECK_EQ(hsi_auto_workers(1, 1), 0);
  CHECK_EQ(hsi_auto_workers(2, 1), 0);      /* no third thread on two cores */
  CHECK_EQ(hsi_auto_workers(4, 1), 2);
  CHECK_EQ(hsi_auto_workers(8, 2), 5);
  unit_tmp_path(path, sizeof path, "threads-beside.etl");
  write_trace(path, 0, 40000);              /* 3 streams, over THREADS_MIN_BYTES */
  alone = hsi_auto_workers(ncpu, 0) < 3 ? hsi_auto_workers(ncpu, 0) : 3;
  beside = hsi_auto_workers(ncpu, 1) < 3 ? hsi_auto_workers(ncpu, 1) : 3;
  unsetenv("HEAPSCRIPT_THREADS");
  CHECK_EQ(hs_reader_open(&r, &pp, 1, NULL, err, sizeof err), 0);
  if (!r) { remove(path); return; }
  CHECK_EQ(hsi_reader_workers(r), alone);
  CHECK_EQ(hsi_analysis_run(r, NULL, &a, err, sizeof err), 0);
  CHECK_EQ(hsi_reader_workers(r), beside);
  CHECK(a != NULL && hsi_analysis_counts_get(a)->events == 40001);
  hsi_analysis_free(a);
  CHECK_EQ(hs_reader_rewind(r), 0);
  CHECK_EQ(hsi_reader_workers(r), alone);
  setenv("HEAPSCRIPT_THREADS", "2", 1);     /* a number asked for is what it gets */
  CHECK_EQ(hsi_analysis_run(r, NULL, &a, err, sizeof err), 0);
  CHECK_EQ(hsi_reader_workers(r), 2);
  unsetenv("HEAPSCRIPT_THREADS");
  hsi_analysis_free(a);
  hs_reader_close(r);
  remove(path);
}

int main(void) {
  RUN(workers_beside_the_pass);
  RUN(workers_start_with_the_walk);
  RUN(written_traces);
  RUN(many_cpus);
  RUN(mapped_buffers_of_few_records);
  RUN(corpus_and_examples);
  return UNIT_DONE();
}
