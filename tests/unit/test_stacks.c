/*
** test_stacks.c -- stack interning, StackWalk decoding and matching,
** frame formatting (engine/stacks.c).  StackWalk payloads are written
** field by field from ETL-FORMAT.md §6.4, ext items from §4; then the
** real traces, when the corpus is there (HEAPSCRIPT_CORPUS or
** ../shared/traces; CI=true makes a missing corpus a failure).
*/
#include "unit.h"
#include "corpus.h"
#include "heapscript.h"
#include "procmap.h"
#include "stacks.h"
#include "analysis.h"

typedef struct buf { uint8_t b[4096]; size_t n; } buf;

static void u8(buf *b, unsigned v) { if (b->n < sizeof b->b) b->b[b->n++] = (uint8_t)v; }
static void u16(buf *b, unsigned v) { u8(b, v & 0xFF); u8(b, v >> 8 & 0xFF); }
static void u32(buf *b, uint32_t v) { u16(b, v & 0xFFFF); u16(b, v >> 16); }
static void u64(buf *b, uint64_t v) { u32(b, (uint32_t)v); u32(b, (uint32_t)(v >> 32)); }
static void ptr(buf *b, int p, uint64_t v) { if (p == 8) u64(b, v); else u32(b, (uint32_t)v); }

#define K(x) (0xFFFFF80000000000ull + (x))     /* kernel addresses */
#define U(x) (0x00007FF800000000ull + (x))     /* user addresses */

static hs_event stackwalk(int op, int p, int64_t ts, const buf *b) {
  hs_event ev;
  memset(&ev, 0, sizeof ev);
  ev.flags = HS_EVF_KERNEL;                   /* PERFINFO: no ids in the header */
  ev.hook = (uint16_t)(0x1800 | op);
  ev.opcode = (uint8_t)op;
  ev.version = 2;
  ev.header_type = p == 8 ? HS_HT_PERFINFO64 : HS_HT_PERFINFO32;
  ev.pointer_size = (uint8_t)p;
  ev.timestamp = ts;
  ev.pid = ev.tid = HS_NOID;
  ev.payload = b->b;
  ev.payload_len = (uint32_t)b->n;
  return ev;
}

/* op 32: EventTimeStamp, StackProcess, StackThread, frames. */
static hs_event op32(buf *b, int p, int64_t ts, int64_t ets, uint32_t pid, uint32_t tid,
                     const uint64_t *f, size_t n) {
  size_t i;
  b->n = 0;
  u64(b, (uint64_t)ets); u32(b, pid); u32(b, tid);
  for (i = 0; i < n; i++) ptr(b, p, f[i]);
  return stackwalk(32, p, ts, b);
}

/* op 37/38: EventTimeStamp, StackProcess, StackThread, StackKey. */
static hs_event keyref(buf *b, int op, int64_t ts, int64_t ets, uint32_t pid, uint32_t tid, uint64_t key) {
  b->n = 0;
  u64(b, (uint64_t)ets); u32(b, pid); u32(b, tid); ptr(b, 8, key);
  CHECK_EQ(b->n, 24);
  return stackwalk(op, 8, ts, b);
}

/* op 34/35/36: StackKey, frames. */
static hs_event keydef(buf *b, int op, int64_t ts, uint64_t key, const uint64_t *f, size_t n) {
  size_t i;
  b->n = 0;
  ptr(b, 8, key);
  for (i = 0; i < n; i++) ptr(b, 8, f[i]);
  return stackwalk(op, 8, ts, b);
}

/* Any other event, to move time forward. */
static hs_event other(int64_t ts) {
  hs_event ev;
  memset(&ev, 0, sizeof ev);
  ev.flags = HS_EVF_KERNEL | HS_EVF_HAS_IDS;
  ev.hook = 0x0524;
  ev.timestamp = ts;
  ev.pid = 1; ev.tid = 2;
  ev.pointer_size = 8;
  return ev;
}

/* The stack delivered for target t, or 0. */
static uint32_t stack_of(const hsi_stacks *st, uint64_t t) {
  size_t n, i;
  const hsi_stack_match *m = hsi_stacks_results(st, &n);
  uint32_t id = 0;
  for (i = 0; i < n; i++) if (m[i].target == t) id = m[i].stack;
  return id;
}

static int frames_are(const hsi_stacks *st, uint32_t id, const uint64_t *f, size_t n) {
  size_t k;
  const uint64_t *g = hsi_stacks_frames(st, id, &k);
  return k == n && (n == 0 || memcmp(f, g, n * sizeof *f) == 0);
}

/* ------------------------------------------------------------ interning */

TEST(interning) {
  hsi_stacks *st = hsi_stacks_new();
  uint64_t a[3] = { U(1), U(2), U(3) }, b[3] = { U(1), U(2), U(4) }, big[300];
  uint32_t ia = hsi_stacks_intern(st, a, 3), ib, ia2, ip, i;
  size_t n;
  ib = hsi_stacks_intern(st, b, 3);
  ia2 = hsi_stacks_intern(st, a, 3);
  ip = hsi_stacks_intern(st, a, 2);
  CHECK(ia != 0 && ib != 0 && ip != 0);
  CHECK_EQ(ia, ia2);
  CHECK(ia != ib && ia != ip);
  CHECK_EQ(hsi_stacks_intern(st, a, 0), HSI_STACK_UNKNOWN);
  CHECK(hsi_stacks_frames(st, 0, &n) == NULL && n == 0);
  CHECK(frames_are(st, ia, a, 3));
  CHECK(frames_are(st, ib, b, 3));
  CHECK_EQ(hsi_stacks_count(st), 3);
  /* many stacks: ids stay stable while tables grow */
  for (i = 0; i < 300; i++) big[i] = U(i);
  for (i = 1; i <= 300; i++) CHECK_EQ(hsi_stacks_intern(st, big, i), hsi_stacks_intern(st, big, i));
  CHECK_EQ(hsi_stacks_count(st), 3 + 300);
  CHECK_EQ(hsi_stacks_intern(st, a, 3), ia);
  CHECK(!hsi_stacks_nomem(st));
  hsi_stacks_free(st);
}

/* --------------------------------------------------------------- op 32 */

TEST(op32_match) {
  hsi_stacks *st = hsi_stacks_new();
  buf b;
  hs_event ev;
  uint64_t f[3] = { U(0x10), U(0x20), U(0x30) };
  CHECK_EQ(hsi_stacks_want(st, 1000, 10, 20, 7), 0);
  ev = other(1000); hsi_stacks_feed(st, &ev);
  CHECK_EQ(hsi_stacks_want(st, 1000, 11, 21, 8), 0);      /* same time, other thread */
  ev = op32(&b, 8, 1001, 1000, 10, 20, f, 3);
  CHECK_EQ(hsi_stacks_feed(st, &ev), 1);
  CHECK_EQ(hsi_stacks_finish(st), 0);
  CHECK(frames_are(st, stack_of(st, 7), f, 3));
  CHECK_EQ(stack_of(st, 8), 0);
  CHECK_EQ(hsi_stacks_counts(st)->op32, 1);
  CHECK_EQ(hsi_stacks_counts(st)->matched, 1);
  CHECK_EQ(hsi_stacks_counts(st)->delivered, 1);
  hsi_stacks_free(st);
}

/* Stacks that agree on their count and their first, middle and last
   frames (what read_part remembers recent parts by) but not elsewhere,
   alternating, 64- and 32-bit: each keeps its own stack. */
TEST(op32_recent_parts) {
  hsi_stacks *st = hsi_stacks_new();
  buf b;
  hs_event ev;
  uint64_t f[4][5] = {
    { U(0x10), U(0x20), U(0x30), U(0x40), U(0x50) },
    { U(0x10), U(0x21), U(0x30), U(0x40), U(0x50) },
    { U(0x10), U(0x20), U(0x30), U(0x41), U(0x50) },
    { U(0x10), U(0x20), U(0x30), U(0x40), U(0x50) },
  };
  uint64_t g[2][4] = { { 0x00401000u, 0x00402000u, 0x00403000u, 0x00404000u },
                       { 0x00401000u, 0x00402004u, 0x00403000u, 0x00404000u } };
  uint32_t id[12];
  int k;
  for (k = 0; k < 12; k++) {
    int64_t ts = 1000 + 10 * k;
    CHECK_EQ(hsi_stacks_want(st, ts, 3, 4, (uint64_t)k), 0);
    ev = k < 8 ? op32(&b, 8, ts + 1, ts, 3, 4, f[k % 4], 5) : op32(&b, 4, ts + 1, ts, 3, 4, g[k % 2], 4);
    CHECK_EQ(hsi_stacks_feed(st, &ev), 1);
  }
  CHECK_EQ(hsi_stacks_finish(st), 0);
  for (k = 0; k < 12; k++) {
    id[k] = stack_of(st, (uint64_t)k);
    CHECK(k < 8 ? frames_are(st, id[k], f[k % 4], 5) : frames_are(st, id[k], g[k % 2], 4));
  }
  CHECK_EQ(id[0], id[3]);
  CHECK_EQ(id[0], id[4]);
  CHECK(id[0] != id[1] && id[0] != id[2] && id[1] != id[2]);
  CHECK(id[8] != id[9]);
  CHECK_EQ(id[8], id[10]);
  CHECK_EQ(hsi_stacks_count(st), 5);
  hsi_stacks_free(st);
}

TEST(op32_32bit_frames) {
  hsi_stacks *st = hsi_stacks_new();
  buf b;
  hs_event ev;
  uint64_t f[2] = { 0x81001000u, 0x00401000u };          /* kernel, user on a 32-bit OS */
  hsi_stacks_want(st, 50, 3, 4, 1);
  ev = op32(&b, 4, 50, 50, 3, 4, f, 2);
  hsi_stacks_feed(st, &ev);
  hsi_stacks_finish(st);
  CHECK(frames_are(st, stack_of(st, 1), f, 2));
  CHECK(hsi_addr_is_kernel(0x81001000u, 4) && !hsi_addr_is_kernel(0x00401000u, 4));
  hsi_stacks_free(st);
}

TEST(kernel_user_join) {
  hsi_stacks *st = hsi_stacks_new();
  buf b;
  hs_event ev;
  uint64_t kf[2] = { K(0x100), K(0x200) }, uf[2] = { U(0x300), U(0x400) };
  uint64_t all[4] = { K(0x100), K(0x200), U(0x300), U(0x400) };
  hsi_stacks_want(st, 100, 1, 2, 1);
  hsi_stacks_want(st, 200, 1, 2, 2);
  hsi_stacks_want(st, 300, 1, 2, 3);
  hsi_stacks_want(st, 400, 1, 2, 4);
  ev = op32(&b, 8, 101, 100, 1, 2, kf, 2); hsi_stacks_feed(st, &ev);
  CHECK_EQ(hsi_stacks_counts(st)->delivered, 0);         /* a user part may follow */
  ev = op32(&b, 8, 102, 100, 1, 2, uf, 2); hsi_stacks_feed(st, &ev);
  CHECK_EQ(hsi_stacks_counts(st)->delivered, 1);         /* reached user space: complete */
  /* kernel and user frames in one record: complete at once */
  ev = op32(&b, 8, 201, 200, 1, 2, all, 4); hsi_stacks_feed(st, &ev);
  CHECK_EQ(hsi_stacks_counts(st)->delivered, 2);
  /* a kernel part alone is delivered when the target leaves the window */
  ev = op32(&b, 8, 301, 300, 1, 2, kf, 2); hsi_stacks_feed(st, &ev);
  /* user part first: complete on its own, so a kernel part after it
     finds nothing (parts come kernel first, §6.4 rule 4) */
  ev = op32(&b, 8, 401, 400, 1, 2, uf, 2); hsi_stacks_feed(st, &ev);
  ev = op32(&b, 8, 402, 400, 1, 2, kf, 2); hsi_stacks_feed(st, &ev);
  hsi_stacks_finish(st);
  CHECK(frames_are(st, stack_of(st, 1), all, 4));
  CHECK_EQ(stack_of(st, 1), stack_of(st, 2));
  CHECK(frames_are(st, stack_of(st, 3), kf, 2));
  CHECK(frames_are(st, stack_of(st, 4), uf, 2));
  CHECK_EQ(hsi_stacks_counts(st)->joined, 1);
  CHECK_EQ(hsi_stacks_counts(st)->unmatched, 1);
  hsi_stacks_free(st);
}

TEST(late_arrival_and_window) {
  hsi_stacks *st = hsi_stacks_new();
  buf b;
  hs_event ev;
  uint64_t f[1] = { U(0x1) }, g[1] = { U(0x2) };
  int64_t t;
  hsi_stacks_set_window(st, 1000000, 1000);
  hsi_stacks_want(st, 100, 1, 2, 1);
  hsi_stacks_want(st, 200, 1, 3, 2);
  /* other threads keep logging for 0.9 window */
  for (t = 300; t < 900000; t += 1000) {
    ev = other(t); hsi_stacks_feed(st, &ev);
    hsi_stacks_want(st, t, 1, 9, (uint64_t)t);
  }
  ev = op32(&b, 8, 900100, 100, 1, 2, f, 1); hsi_stacks_feed(st, &ev);
  /* this one comes after the window has passed its target */
  ev = other(1300000); hsi_stacks_feed(st, &ev);
  ev = op32(&b, 8, 1300001, 200, 1, 3, g, 1); hsi_stacks_feed(st, &ev);
  hsi_stacks_finish(st);
  CHECK(frames_are(st, stack_of(st, 1), f, 1));
  CHECK_EQ(stack_of(st, 2), 0);
  CHECK_EQ(hsi_stacks_counts(st)->unmatched, 1);
  /* the live cap retires the oldest first */
  hsi_stacks_free(st);
  st = hsi_stacks_new();
  hsi_stacks_set_window(st, 1000000, 4);
  for (t = 1; t <= 10; t++) hsi_stacks_want(st, t, 1, 2, (uint64_t)t);
  ev = op32(&b, 8, 11, 3, 1, 2, f, 1); hsi_stacks_feed(st, &ev);   /* target 3 is gone */
  ev = op32(&b, 8, 12, 8, 1, 2, f, 1); hsi_stacks_feed(st, &ev);
  hsi_stacks_finish(st);
  CHECK_EQ(stack_of(st, 3), 0);
  CHECK(stack_of(st, 8) != 0);
  hsi_stacks_free(st);
}

TEST(no_tid_targets) {
  hsi_stacks *st = hsi_stacks_new();
  buf b;
  hs_event ev;
  uint64_t f[1] = { K(0x5) }, g[1] = { U(0x6) }, h[1] = { U(0x7) };
  hsi_stacks_want(st, 500, HS_NOID, HS_NOID, 1);          /* e.g. SampledProfile */
  hsi_stacks_want(st, 600, 44, HS_NOID, 2);               /* e.g. VirtualAlloc: payload pid */
  ev = op32(&b, 8, 501, 500, 4, 77, f, 1); hsi_stacks_feed(st, &ev);
  ev = op32(&b, 8, 601, 600, 45, 77, h, 1); hsi_stacks_feed(st, &ev);   /* wrong pid */
  ev = op32(&b, 8, 602, 600, 44, 77, g, 1); hsi_stacks_feed(st, &ev);
  hsi_stacks_finish(st);
  CHECK(frames_are(st, stack_of(st, 1), f, 1));
  CHECK(frames_are(st, stack_of(st, 2), g, 1));
  CHECK_EQ(hsi_stacks_counts(st)->matched_notid, 2);
  CHECK_EQ(hsi_stacks_counts(st)->unmatched, 1);
  hsi_stacks_free(st);
}

/*
** Parts at their edges:
**   - a kernel stack in two kernel-only records, then its user part: the
**     second kernel part goes after the first, the user part after both;
**   - a 32-bit kernel part (addresses from 0x80000000) waits for its user
**     part as a 64-bit one does;
**   - a target is still in the window when exactly `window` has passed;
**   - a key definition whose outermost frame is a user address resolves the
**     user table's references (op 38), whatever its innermost frame.
*/
TEST(part_edges) {
  hsi_stacks *st = hsi_stacks_new();
  buf b;
  hs_event ev;
  uint64_t ka[2] = { K(0x10), K(0x20) }, kb[1] = { K(0x30) }, uc[2] = { U(0x40), U(0x50) };
  uint64_t all[5] = { K(0x10), K(0x20), K(0x30), U(0x40), U(0x50) };
  uint64_t k32[2] = { 0x81001000u, 0x81002000u }, u32f[1] = { 0x00401000u };
  uint64_t all32[3] = { 0x81001000u, 0x81002000u, 0x00401000u };
  uint64_t w[1] = { U(0x60) }, mixed[3] = { K(0x70), U(0x80), U(0x90) };
  hsi_stacks_set_window(st, 1000, 100);
  hsi_stacks_want(st, 100, 1, 2, 1);
  ev = op32(&b, 8, 101, 100, 1, 2, ka, 2); hsi_stacks_feed(st, &ev);
  ev = op32(&b, 8, 102, 100, 1, 2, kb, 1); hsi_stacks_feed(st, &ev);
  ev = op32(&b, 8, 103, 100, 1, 2, uc, 2); hsi_stacks_feed(st, &ev);
  CHECK_EQ(hsi_stacks_counts(st)->delivered, 1);
  hsi_stacks_want(st, 200, 1, 2, 2);
  ev = op32(&b, 4, 201, 200, 1, 2, k32, 2); hsi_stacks_feed(st, &ev);
  CHECK_EQ(hsi_stacks_counts(st)->delivered, 1);         /* a user part may follow */
  ev = op32(&b, 4, 202, 200, 1, 2, u32f, 1); hsi_stacks_feed(st, &ev);
  CHECK_EQ(hsi_stacks_counts(st)->delivered, 2);
  hsi_stacks_want(st, 300, 1, 2, 3);
  hsi_stacks_want(st, 1300, 1, 5, 99);                  /* time moves on: exactly the window */
  ev = op32(&b, 8, 1300, 300, 1, 2, w, 1); hsi_stacks_feed(st, &ev);
  hsi_stacks_want(st, 1400, 1, 2, 4);
  ev = keyref(&b, 38, 1401, 1400, 1, 2, 0xFFFFA0000000CCC0ull); hsi_stacks_feed(st, &ev);
  ev = keydef(&b, 35, 1402, 0xFFFFA0000000CCC0ull, mixed, 3); hsi_stacks_feed(st, &ev);
  hsi_stacks_finish(st);
  CHECK(frames_are(st, stack_of(st, 1), all, 5));
  CHECK(frames_are(st, stack_of(st, 2), all32, 3));
  CHECK(frames_are(st, stack_of(st, 3), w, 1));
  CHECK(frames_are(st, stack_of(st, 4), mixed, 3));
  CHECK_EQ(hsi_stacks_counts(st)->unmatched, 0);
  CHECK_EQ(hsi_stacks_counts(st)->key_resolved, 1);
  hsi_stacks_free(st);
}

TEST(same_time_same_thread) {
  hsi_stacks *st = hsi_stacks_new();
  buf b;
  hs_event ev;
  uint64_t f[1] = { K(0xA) }, g[1] = { K(0xB) };
  /* kernel-only parts, so both targets stay open: each part goes to the
     oldest target without one */
  hsi_stacks_want(st, 700, 1, 2, 1);
  hsi_stacks_want(st, 700, 1, 2, 2);
  ev = op32(&b, 8, 701, 700, 1, 2, f, 1); hsi_stacks_feed(st, &ev);
  ev = op32(&b, 8, 702, 700, 1, 2, g, 1); hsi_stacks_feed(st, &ev);
  hsi_stacks_finish(st);
  CHECK(frames_are(st, stack_of(st, 1), f, 1));
  CHECK(frames_are(st, stack_of(st, 2), g, 1));
  CHECK_EQ(hsi_stacks_counts(st)->ambiguous, 2);
  hsi_stacks_free(st);
}

/*
** Many targets at one (timestamp, thread), as a clock of coarse ticks
** gives: 200,000 of them, then their kernel parts, then their user
** parts, each to the oldest target without one, in a time that does not
** grow with the square of their number (this ran for many minutes when
** each part looked at every target of its (timestamp, thread)).  Then
** the chain's edges: a target completed in its middle, at its end and at
** its head, a chain emptied and begun again, and targets without a
** thread of several processes at one time.
*/
TEST(one_time_many_targets) {
  enum { N = 200000 };
  hsi_stacks *st = hsi_stacks_new();
  buf b;
  hs_event ev;
  uint64_t f[2], kA[1] = { K(0xA) }, kB[1] = { K(0xB) }, kuC[2] = { K(0xC), U(0xC1) };
  uint64_t kuD[2] = { K(0xD), U(0xD1) }, uA[1] = { U(0xA1) }, uB[1] = { U(0xB1) }, uE[1] = { U(0xE1) };
  uint64_t AuA[2] = { K(0xA), U(0xA1) }, BuB[2] = { K(0xB), U(0xB1) };
  uint64_t g44[1] = { U(0x44) }, g45[1] = { U(0x45) }, g46[1] = { U(0x46) };
  size_t n, i, bad = 0;
  const hsi_stack_match *m;
  for (i = 0; i < N; i++) hsi_stacks_want(st, 500, 1, 2, i);
  for (i = 0; i < N; i++) {
    f[0] = K(16 * i);
    ev = op32(&b, 8, 501, 500, 1, 2, f, 1);
    if (hsi_stacks_feed(st, &ev) != 1) bad++;
  }
  CHECK_EQ(hsi_stacks_counts(st)->delivered, 0);          /* kernel parts: user ones may follow */
  for (i = 0; i < N; i++) {
    f[0] = U(16 * i);
    ev = op32(&b, 8, 502, 500, 1, 2, f, 1);
    if (hsi_stacks_feed(st, &ev) != 1) bad++;
  }
  m = hsi_stacks_results(st, &n);
  CHECK_EQ(n, N);
  for (i = 0; i < n; i++) {
    size_t nf;
    const uint64_t *g = hsi_stacks_frames(st, m[i].stack, &nf);
    if (m[i].target != i || nf != 2 || g[0] != K(16 * i) || g[1] != U(16 * i)) bad++;
  }
  CHECK_EQ(bad, 0);
  CHECK_EQ(hsi_stacks_counts(st)->unmatched, 0);
  /* as many targets without a thread (PERFINFO events), all of one process:
     the chain's cursor serves them too, no target looked at one by one */
  for (i = 0; i < N / 10; i++) hsi_stacks_want(st, 700, 1, HS_NOID, 2 * N + i);
  for (i = 0; i < N / 10; i++) {
    f[0] = U(16 * i);
    ev = op32(&b, 8, 701, 700, 1, 2, f, 1);
    if (hsi_stacks_feed(st, &ev) != 1) bad++;
  }
  CHECK_EQ(bad, 0);
  CHECK_EQ(hsi_stacks_counts(st)->walked, 0);
  CHECK_EQ(hsi_stacks_counts(st)->matched_notid, N / 10);
  /* t1..t4 at (900, 3) */
  for (i = 1; i <= 4; i++) hsi_stacks_want(st, 900, 1, 3, N + i);
  ev = op32(&b, 8, 901, 900, 1, 3, kA, 1); hsi_stacks_feed(st, &ev);    /* t1 */
  ev = op32(&b, 8, 902, 900, 1, 3, kB, 1); hsi_stacks_feed(st, &ev);    /* t2 */
  ev = op32(&b, 8, 903, 900, 1, 3, kuC, 2); hsi_stacks_feed(st, &ev);   /* t3, whole: the middle goes */
  CHECK(frames_are(st, stack_of(st, N + 3), kuC, 2));
  ev = op32(&b, 8, 904, 900, 1, 3, kuD, 2); hsi_stacks_feed(st, &ev);   /* t4, whole: the end goes */
  CHECK(frames_are(st, stack_of(st, N + 4), kuD, 2));
  ev = op32(&b, 8, 905, 900, 1, 3, uA, 1); hsi_stacks_feed(st, &ev);    /* t1: the head goes */
  CHECK(frames_are(st, stack_of(st, N + 1), AuA, 2));
  ev = op32(&b, 8, 906, 900, 1, 3, uB, 1); hsi_stacks_feed(st, &ev);    /* t2, the last */
  CHECK(frames_are(st, stack_of(st, N + 2), BuB, 2));
  ev = op32(&b, 8, 907, 900, 1, 3, kA, 1); hsi_stacks_feed(st, &ev);    /* nobody's */
  CHECK_EQ(hsi_stacks_counts(st)->unmatched, 1);
  hsi_stacks_want(st, 900, 1, 3, N + 5);
  hsi_stacks_want(st, 900, 1, 9, N + 6);                  /* t5 no longer held */
  ev = op32(&b, 8, 908, 900, 1, 3, uE, 1); hsi_stacks_feed(st, &ev);
  CHECK(frames_are(st, stack_of(st, N + 5), uE, 1));
  /* without a thread: pid 44, 45 and none at 1500 */
  hsi_stacks_want(st, 1500, 44, HS_NOID, N + 10);
  hsi_stacks_want(st, 1500, 45, HS_NOID, N + 11);
  hsi_stacks_want(st, 1500, HS_NOID, HS_NOID, N + 12);
  ev = op32(&b, 8, 1501, 1500, 45, 77, g45, 1); hsi_stacks_feed(st, &ev);
  ev = op32(&b, 8, 1502, 1500, 44, 77, g44, 1); hsi_stacks_feed(st, &ev);
  ev = op32(&b, 8, 1503, 1500, 46, 77, g46, 1); hsi_stacks_feed(st, &ev);
  CHECK(frames_are(st, stack_of(st, N + 10), g44, 1));
  CHECK(frames_are(st, stack_of(st, N + 11), g45, 1));
  CHECK(frames_are(st, stack_of(st, N + 12), g46, 1));
  CHECK_EQ(hsi_stacks_finish(st), 0);
  CHECK_EQ(hsi_stacks_counts(st)->matched_notid, N / 10 + 3);
  CHECK(hsi_stacks_counts(st)->walked > 0);               /* that chain of three processes was */
  hsi_stacks_free(st);
}

/* Many targets: completed ones leave stale queue entries behind, targets
   without stacks leave by time; every stack is interned once. */
TEST(many_targets) {
  hsi_stacks *st = hsi_stacks_new();
  buf b;
  hs_event ev;
  uint64_t f[8];
  size_t n, i, bad = 0;
  const hsi_stack_match *m;
  uint32_t k;
  hsi_stacks_set_window(st, 100000, 1000);
  for (i = 0; i < 100000; i++) {
    int64_t ts = 10 + 3 * (int64_t)i;
    hsi_stacks_want(st, ts, 1, (uint32_t)(i % 7), i);
    if (i % 10 == 9) continue;                          /* no stack for this one */
    for (k = 0; k < 8; k++) f[k] = U(((i % 500) << 8) + k);
    ev = op32(&b, 8, ts + 1, ts, 1, (uint32_t)(i % 7), f, 1 + i % 8);
    if (hsi_stacks_feed(st, &ev) != 1) bad++;
  }
  CHECK_EQ(hsi_stacks_finish(st), 0);
  m = hsi_stacks_results(st, &n);
  CHECK_EQ(n, 90000);
  for (i = 0; i < n; i++) {
    size_t nf;
    const uint64_t *g = hsi_stacks_frames(st, m[i].stack, &nf);
    if (m[i].target % 10 == 9 || nf != 1 + m[i].target % 8 || g[0] != U((m[i].target % 500) << 8)) bad++;
  }
  CHECK_EQ(bad, 0);
  CHECK_EQ(hsi_stacks_count(st), 900);       /* i mod 1000, less the tenth without a stack */
  CHECK_EQ(hsi_stacks_counts(st)->unmatched, 0);
  hsi_stacks_free(st);
}

/* ---------------------------------------------------------- stack keys */

TEST(key_resolved_later) {
  hsi_stacks *st = hsi_stacks_new();
  buf b;
  hs_event ev;
  uint64_t kf[2] = { K(0x10), K(0x20) }, uf[3] = { U(0x30), U(0x40), U(0x50) };
  uint64_t all[5] = { K(0x10), K(0x20), U(0x30), U(0x40), U(0x50) };
  hsi_stacks_set_window(st, 1000, 100);
  hsi_stacks_want(st, 100, 1, 2, 1);
  ev = keyref(&b, 37, 101, 100, 1, 2, 0xFFFFA0000000AAA0ull); CHECK_EQ(hsi_stacks_feed(st, &ev), 1);
  ev = keyref(&b, 38, 102, 100, 1, 2, 0xFFFFA0000000BBB0ull); hsi_stacks_feed(st, &ev);
  /* long after the window; the target waits for its keys */
  ev = other(50000); hsi_stacks_feed(st, &ev);
  CHECK_EQ(hsi_stacks_counts(st)->delivered, 0);
  ev = keydef(&b, 35, 60000, 0xFFFFA0000000BBB0ull, uf, 3); hsi_stacks_feed(st, &ev);
  CHECK_EQ(hsi_stacks_counts(st)->delivered, 0);
  ev = keydef(&b, 36, 70000, 0xFFFFA0000000AAA0ull, kf, 2); hsi_stacks_feed(st, &ev);
  CHECK_EQ(hsi_stacks_counts(st)->delivered, 1);     /* delivered as soon as complete */
  hsi_stacks_finish(st);
  CHECK(frames_are(st, stack_of(st, 1), all, 5));
  CHECK_EQ(hsi_stacks_counts(st)->key_refs, 2);
  CHECK_EQ(hsi_stacks_counts(st)->key_defs, 2);
  CHECK_EQ(hsi_stacks_counts(st)->key_resolved, 2);
  CHECK_EQ(hsi_stacks_counts(st)->key_orphaned, 0);
  hsi_stacks_free(st);
}

TEST(key_reuse) {
  hsi_stacks *st = hsi_stacks_new();
  buf b;
  hs_event ev;
  const uint64_t key = 0xFFFFA00000001230ull;
  uint64_t fa[1] = { U(0xA) }, fb[2] = { U(0xB), U(0xBB) }, fc[1] = { U(0xC) };
  uint64_t kf[1] = { K(0xD) }, kfc[2] = { K(0xD), U(0xC) };
  /* a definition before any reference serves nobody */
  ev = keydef(&b, 35, 400, key, fa, 1); hsi_stacks_feed(st, &ev);
  hsi_stacks_want(st, 500, 1, 2, 5);
  ev = keyref(&b, 38, 501, 500, 1, 2, key); hsi_stacks_feed(st, &ev);
  hsi_stacks_want(st, 550, 1, 3, 55);                    /* two references wait for one key */
  ev = keyref(&b, 38, 551, 550, 1, 3, key); hsi_stacks_feed(st, &ev);
  ev = keydef(&b, 35, 600, key, fb, 2); hsi_stacks_feed(st, &ev);
  /* the binding is forgotten: the next reference waits for the next definition */
  hsi_stacks_want(st, 700, 1, 2, 7);
  ev = keyref(&b, 37, 701, 700, 1, 2, key); hsi_stacks_feed(st, &ev);
  ev = keyref(&b, 38, 702, 700, 1, 2, key); hsi_stacks_feed(st, &ev);
  /* same key live in the kernel and the user table: a definition whose
     last frame is kernel resolves the kernel reference only */
  ev = keydef(&b, 35, 800, key, kf, 1); hsi_stacks_feed(st, &ev);
  ev = keydef(&b, 35, 810, key, fc, 1); hsi_stacks_feed(st, &ev);
  hsi_stacks_finish(st);
  CHECK(frames_are(st, stack_of(st, 5), fb, 2));
  CHECK(frames_are(st, stack_of(st, 55), fb, 2));
  CHECK(frames_are(st, stack_of(st, 7), kfc, 2));
  CHECK_EQ(hsi_stacks_counts(st)->key_defs, 4);
  CHECK_EQ(hsi_stacks_counts(st)->key_defs_unused, 1);
  CHECK_EQ(hsi_stacks_counts(st)->key_resolved, 4);
  hsi_stacks_free(st);
}

TEST(key_orphan) {
  hsi_stacks *st = hsi_stacks_new();
  buf b;
  hs_event ev;
  uint64_t f[1] = { K(0x1) };
  hsi_stacks_want(st, 100, 1, 2, 1);
  ev = op32(&b, 8, 101, 100, 1, 2, f, 1); hsi_stacks_feed(st, &ev);
  ev = keyref(&b, 38, 102, 100, 1, 2, 0x999); hsi_stacks_feed(st, &ev);
  ev = keyref(&b, 38, 103, 99, 1, 2, 0x998); hsi_stacks_feed(st, &ev);   /* no target */
  hsi_stacks_finish(st);
  CHECK_EQ(stack_of(st, 1), 0);                       /* stays unknown */
  CHECK_EQ(hsi_stacks_counts(st)->key_orphaned, 2);
  CHECK_EQ(hsi_stacks_counts(st)->orphaned, 1);
  CHECK_EQ(hsi_stacks_counts(st)->unmatched, 1);
  CHECK_EQ(hsi_stacks_counts(st)->delivered, 0);
  hsi_stacks_free(st);
}

/* ------------------------------------------------------------ ext items */

/* An EVENT_HEADER record with ext items: item = u16 size, u16 type,
   u16 linkage, u16 DataSize, data padded to 8. */
static void ext_item(buf *b, int type, int more, const uint8_t *data, size_t n) {
  size_t sz = (8 + n + 7) & ~(size_t)7, i;
  u16(b, (unsigned)sz); u16(b, (unsigned)type); u16(b, more ? 1 : 0); u16(b, (unsigned)n);
  for (i = 0; i < n; i++) u8(b, data[i]);
  for (i = 8 + n; i < sz; i++) u8(b, 0);
}

static hs_event ext_event(const buf *b, int64_t ts, uint32_t pid, uint32_t tid) {
  hs_event ev;
  memset(&ev, 0, sizeof ev);
  ev.flags = HS_EVF_HAS_IDS | HS_EVF_EXT;
  ev.header_type = HS_HT_EVENT32;                         /* width of frames comes from the item */
  ev.pointer_size = 4;
  ev.timestamp = ts; ev.pid = pid; ev.tid = tid;
  ev.ext = b->b; ev.ext_len = (uint32_t)b->n;
  ev.payload = b->b + b->n; ev.payload_len = 0;
  return ev;
}

TEST(ext_stack_trace64) {
  hsi_stacks *st = hsi_stacks_new();
  buf d, b;
  hs_event ev;
  uint64_t f[3] = { K(0x1), U(0x2), 0x401000 };
  uint8_t act[16] = { 1 };
  d.n = 0; u64(&d, 0); u64(&d, f[0]); u64(&d, f[1]); u64(&d, f[2]);   /* MatchId, frames */
  b.n = 0;
  ext_item(&b, HS_EXT_RELATED_ACTIVITYID, 1, act, 16);
  ext_item(&b, HS_EXT_STACK_TRACE64, 0, d.b, d.n);
  hsi_stacks_want(st, 900, 5, 6, 42);
  ev = ext_event(&b, 900, 5, 6);
  CHECK_EQ(hsi_stacks_feed(st, &ev), 1);
  /* an ext stack of an event nobody asked for */
  ev = ext_event(&b, 901, 5, 6);
  hsi_stacks_feed(st, &ev);
  /* STACK_TRACE32 */
  d.n = 0; u64(&d, 0); u32(&d, 0x401000); u32(&d, 0x402000);
  b.n = 0;
  ext_item(&b, HS_EXT_STACK_TRACE32, 0, d.b, d.n);
  hsi_stacks_want(st, 950, 5, 6, 43);
  ev = ext_event(&b, 950, 5, 6);
  hsi_stacks_feed(st, &ev);
  hsi_stacks_finish(st);
  CHECK(frames_are(st, stack_of(st, 42), f, 3));
  {
    uint64_t g[2] = { 0x401000, 0x402000 };
    CHECK(frames_are(st, stack_of(st, 43), g, 2));
  }
  CHECK_EQ(hsi_stacks_counts(st)->ext_stacks, 3);
  CHECK_EQ(hsi_stacks_counts(st)->unmatched, 1);
  hsi_stacks_free(st);
}

TEST(ext_stack_key) {
  hsi_stacks *st = hsi_stacks_new();
  buf d, b, k;
  hs_event ev;
  uint64_t f[2] = { U(0x7), U(0x8) };
  d.n = 0; u64(&d, 0); u64(&d, 0xFFFFA00000004440ull);
  b.n = 0;
  ext_item(&b, HS_EXT_STACK_KEY64, 0, d.b, d.n);
  hsi_stacks_want(st, 300, 5, 6, 9);
  ev = ext_event(&b, 300, 5, 6);
  CHECK_EQ(hsi_stacks_feed(st, &ev), 1);
  ev = keydef(&k, 35, 400, 0xFFFFA00000004440ull, f, 2); hsi_stacks_feed(st, &ev);
  hsi_stacks_finish(st);
  CHECK(frames_are(st, stack_of(st, 9), f, 2));
  CHECK_EQ(hsi_stacks_counts(st)->ext_keys, 1);
  hsi_stacks_free(st);
}

/*
** A MatchId joins the halves of a split stack (§4) only while the target
** of its first half still owns the slot it was in: once that target has
** left the window and another target took its slot, a late second half
** is unmatched, not the other target's stack.
*/
TEST(ext_matchid_reused_slot) {
  hsi_stacks *st = hsi_stacks_new();
  buf d, b;
  hs_event ev;
  uint64_t k1[1] = { K(0x1) }, u1[1] = { U(0x2) }, u2[1] = { U(0x3) };
  hsi_stacks_set_window(st, 1000, 1024);
  hsi_stacks_want(st, 100, 5, 6, 1);
  d.n = 0; u64(&d, 0x77); u64(&d, k1[0]);            /* the kernel half */
  b.n = 0; ext_item(&b, HS_EXT_STACK_TRACE64, 0, d.b, d.n);
  ev = ext_event(&b, 100, 5, 6); hsi_stacks_feed(st, &ev);
  ev = other(5000); hsi_stacks_feed(st, &ev);        /* target 1 leaves the window */
  hsi_stacks_want(st, 6000, 5, 7, 2);                /* and target 2 takes its slot */
  d.n = 0; u64(&d, 0x77); u64(&d, u1[0]);            /* the user half, too late */
  b.n = 0; ext_item(&b, HS_EXT_STACK_TRACE64, 0, d.b, d.n);
  ev = ext_event(&b, 6001, 5, 6); hsi_stacks_feed(st, &ev);
  d.n = 0; u64(&d, 0); u64(&d, u2[0]);               /* target 2's own stack */
  b.n = 0; ext_item(&b, HS_EXT_STACK_TRACE64, 0, d.b, d.n);
  ev = ext_event(&b, 6000, 5, 7); hsi_stacks_feed(st, &ev);
  hsi_stacks_finish(st);
  CHECK(frames_are(st, stack_of(st, 1), k1, 1));
  CHECK(frames_are(st, stack_of(st, 2), u2, 1));
  CHECK_EQ(hsi_stacks_counts(st)->unmatched, 1);
  hsi_stacks_free(st);
}

/* ------------------------------------------------------------ callback */

static uint64_t cb_target;
static uint32_t cb_stack;
static int cb_calls;
static void on_match(void *ud, uint64_t target, uint32_t stack) {
  (void)ud;
  cb_target = target; cb_stack = stack; cb_calls++;
}

TEST(callback) {
  hsi_stacks *st = hsi_stacks_new();
  buf b;
  hs_event ev;
  uint64_t f[1] = { U(1) };
  size_t n;
  hsi_stacks_on_match(st, on_match, NULL);
  hsi_stacks_want(st, 10, 1, 2, 77);
  ev = op32(&b, 8, 11, 10, 1, 2, f, 1); hsi_stacks_feed(st, &ev);
  hsi_stacks_finish(st);
  CHECK_EQ(cb_calls, 1);
  CHECK_EQ(cb_target, 77);
  CHECK(frames_are(st, cb_stack, f, 1));
  CHECK(hsi_stacks_results(st, &n) == NULL || n == 0);
  hsi_stacks_free(st);
}

TEST(damaged) {
  hsi_stacks *st = hsi_stacks_new();
  buf b;
  hs_event ev;
  b.n = 0; u64(&b, 5);                        /* op 32 cut after EventTimeStamp */
  ev = stackwalk(32, 8, 10, &b); CHECK_EQ(hsi_stacks_feed(st, &ev), 1);
  ev = stackwalk(37, 8, 10, &b); hsi_stacks_feed(st, &ev);
  b.n = 4;
  ev = stackwalk(35, 8, 10, &b); hsi_stacks_feed(st, &ev);
  CHECK_EQ(hsi_stacks_counts(st)->damaged, 3);
  CHECK_EQ(hsi_stacks_finish(st), 0);
  hsi_stacks_free(st);
}

/* ------------------------------------------------------- real traces */


/* A number field of the "stacks" object. */
static uint64_t stacks_field(const char *json, const char *field) {
  const char *p = strstr(json, "\"stacks\"");
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", field);
  if (!p || !(p = strstr(p, pat))) return UINT64_MAX;
  return strtoull(p + strlen(pat), NULL, 10);
}

static const char *P_STACKWALK = "def2fe46-7bd6-4b80-bd94-f57fe20d0ce3";
static const hs_guid G_KTC = { 0xb3e675d7, 0x2554, 0x4f18, { 0x83, 0x0b, 0x27, 0x62, 0x73, 0x25, 0x60, 0xde } };

static int corpus_missing;

/*
** Every event but StackWalk and KernelTraceControl (whose records share
** timestamp and thread with the Image record they describe, §6.4 rule 2)
** is a target: with its header tid when it has one, else on timestamp.
** Then every op-32 stack and ext item must find its target, and every
** key reference its definition.
*/

/* ------------------------------------------------------- the hold */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n) {
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (uint32_t)(rng % n);
}

/* Feed the same event to the three: the one that holds the newest target,
   the one that puts every target in a slot, and one that takes a kernel
   event that is no StackWalk and has no ext items by its time alone
   (hsi_stacks_advance), as the analysis takes a heap event. */
static hsi_stacks *by_time;
static void both(hsi_stacks *a, hsi_stacks *b, const hs_event *ev, size_t *bad) {
  int r = hsi_stacks_feed(a, ev);
  int plain = (ev->flags & (HS_EVF_KERNEL | HS_EVF_EXT)) == HS_EVF_KERNEL && ev->hook >> 8 != 0x18;
  if (r != hsi_stacks_feed(b, ev)) (*bad)++;
  if (plain ? r != 0 || hsi_stacks_advance(by_time, ev->timestamp) != 0 : hsi_stacks_feed(by_time, ev) != r) (*bad)++;
  /* a target leaving the window goes at the same event (a kernel part
     alone is delivered then), not at the next StackWalk */
  if (hsi_stacks_counts(a)->delivered != hsi_stacks_counts(by_time)->delivered) (*bad)++;
}
static int want3(hsi_stacks *a, hsi_stacks *b, int64_t ts, uint32_t tid, uint64_t target) {
  int r = hsi_stacks_want(a, ts, 1, tid, target);
  return r != hsi_stacks_want(b, ts, 1, tid, target) || r != hsi_stacks_want(by_time, ts, 1, tid, target);
}

/* Random streams of targets, their own events, op 32 parts (kernel only,
   user, kernel ending in user, empty, for this target or an older one or
   none), key references and definitions, ext items, jumps past the window
   and a small max_live: the hold must give the same deliveries, in the
   same order, and the same counts as the slots alone, and so must the
   matcher that takes plain kernel events by their time. */
TEST(hold_same_answers) {
  int round;
  for (round = 0; round < 40; round++) {
    hsi_stacks *a = hsi_stacks_new(), *b = hsi_stacks_new();
    size_t bad = 0, na, nb, i;
    const hsi_stack_match *ma, *mb;
    int64_t ts = 1000;
    int64_t recent[8] = { 0 };
    uint32_t rtid[8] = { 0 };
    uint64_t target = 0;
    int k;
    by_time = hsi_stacks_new();
    hsi_stacks_set_direct(b, 0);
    hsi_stacks_set_window(a, 5000, round % 3 == 0 ? 4 : 1000);
    hsi_stacks_set_window(b, 5000, round % 3 == 0 ? 4 : 1000);
    hsi_stacks_set_window(by_time, 5000, round % 3 == 0 ? 4 : 1000);
    for (k = 0; k < 3000; k++) {
      buf d;
      hs_event ev;
      uint64_t f[6];
      uint32_t tid = rnd(5) == 0 ? HS_NOID : 10 + rnd(3), j, nf = rnd(7);
      int w = round % 4 == 3 ? 4 : 8, which = rnd(16);
      int64_t ets;
      ts += rnd(6) == 0 ? 0 : 1 + rnd(rnd(40) == 0 ? 9000 : 300);
      for (j = 0; j < nf; j++)                /* kernel frames first, then user ones */
        f[j] = w == 8 ? (j < (uint32_t)rnd(4) ? K(0x100 * rnd(4) + j) : U(0x100 * rnd(4) + j))
                      : (j < (uint32_t)rnd(4) ? 0x80001000u + 0x100 * rnd(4) + j : 0x401000u + 0x100 * rnd(4) + j);
      if (which < 7) {                        /* a target, its own event, maybe its stack at once */
        if (want3(a, b, ts, tid, target)) bad++;
        target++;
        recent[k % 8] = ts; rtid[k % 8] = tid;
        ev = other(ts);
        both(a, b, &ev, &bad);
        if (which < 5) {
          ev = op32(&d, w, ts + rnd(2), ts, 1, rnd(8) == 0 ? 99 : tid, f, nf);
          both(a, b, &ev, &bad);
        }
      } else if (which < 11) {                /* a part for an older target, or for none */
        int r = (int)rnd(8);
        ets = rnd(4) == 0 ? ts - 1 : recent[r];
        ev = op32(&d, w, ts, ets, 1, rnd(3) == 0 ? 10 + rnd(3) : rtid[r], f, nf);
        both(a, b, &ev, &bad);
      } else if (which < 13) {                /* a key reference for a recent target, or its definition */
        int r = (int)rnd(8);
        uint64_t key = 0x7000 + rnd(4);
        if (rnd(2)) ev = keyref(&d, 37 + (int)rnd(2), ts, recent[r], 1, rtid[r], key);
        else ev = keydef(&d, 34 + (int)rnd(3), ts, key, f, nf);
        both(a, b, &ev, &bad);
      } else if (which < 14) {                /* an ext stack item on the event of a new target */
        uint8_t item[8 + 6 * 8];
        uint32_t x;
        if (want3(a, b, ts, tid, target)) bad++;
        target++;
        memset(item, 0, sizeof item);
        for (j = 0; j < nf; j++) for (x = 0; x < 8; x++) item[8 + 8 * j + x] = (uint8_t)(f[j] >> (8 * x));
        d.n = 0;
        ext_item(&d, HS_EXT_STACK_TRACE64, 0, item, 8 + 8 * nf);
        ev = ext_event(&d, ts, 1, tid);
        both(a, b, &ev, &bad);
      } else {                                /* time moves on */
        ev = other(ts);
        both(a, b, &ev, &bad);
      }
    }
    if (hsi_stacks_finish(a) != hsi_stacks_finish(b) || hsi_stacks_finish(by_time) != 0) bad++;
    ma = hsi_stacks_results(by_time, &nb);
    mb = hsi_stacks_results(a, &na);
    CHECK_EQ(na, nb);
    for (i = 0; i < na && i < nb; i++)
      if (ma[i].target != mb[i].target || ma[i].stack != mb[i].stack) bad++;
    CHECK(memcmp(hsi_stacks_counts(a), hsi_stacks_counts(by_time), sizeof(hsi_stack_counts)) == 0);
    ma = hsi_stacks_results(a, &na);
    mb = hsi_stacks_results(b, &nb);
    CHECK_EQ(na, nb);
    for (i = 0; i < na && i < nb; i++)
      if (ma[i].target != mb[i].target || ma[i].stack != mb[i].stack) bad++;
    CHECK_EQ(bad, 0);
    CHECK(memcmp(hsi_stacks_counts(a), hsi_stacks_counts(b), sizeof(hsi_stack_counts)) == 0);
    CHECK_EQ(hsi_stacks_count(a), hsi_stacks_count(b));
    if (round == 0) CHECK(na > 500 && hsi_stacks_counts(a)->unmatched > 0 && hsi_stacks_counts(a)->joined > 0);
    hsi_stacks_free(a);
    hsi_stacks_free(b);
    hsi_stacks_free(by_time);
  }
}

static void real_trace(const char *name) {
  char path[1024], jpath[1024], err[HS_ERRLEN];
  const char *paths[1];
  char *json;
  hs_reader *r = NULL;
  hs_event ev;
  hsi_procmap *pm;
  hsi_stacks *st, *slots;            /* slots: the same without the hold */
  const hsi_stack_counts *c;
  uint64_t idx = 0, defs, nframes = 0, resolved = 0, errors = 0;
  int64_t *tts;
  uint32_t *tpid;
  size_t cap = 1u << 20, nres, nres2, i, differ = 0;
  const hsi_stack_match *res, *res2;
  int rc;
  {
    char rel[512];
    snprintf(rel, sizeof rel, "%s.etl", name);
    corpus_path(path, sizeof path, rel);
    snprintf(rel, sizeof rel, "expected/%s.json", name);
    corpus_path(jpath, sizeof jpath, rel);
  }
  if (!(json = slurp(jpath))) { corpus_missing = 1; return; }
  paths[0] = path;
  rc = hs_reader_open(&r, paths, 1, NULL, err, sizeof err);
  CHECK_EQ(rc, 0);
  if (rc != 0) { fprintf(stderr, "%s: %s\n", name, err); free(json); return; }
  pm = hsi_procmap_new();
  st = hsi_stacks_new();
  slots = hsi_stacks_new();
  hsi_stacks_set_direct(slots, 0);
  hsi_stacks_set_window(slots, hs_time_freq(hs_reader_logfile(r, 0)), HSI_STACKS_MAX_LIVE);
  tts = malloc(cap * sizeof *tts);
  tpid = malloc(cap * sizeof *tpid);
  hsi_stacks_set_window(st, hs_time_freq(hs_reader_logfile(r, 0)), HSI_STACKS_MAX_LIVE);
  while ((rc = hs_reader_next(r, &ev)) == 1) {
    int sw = (ev.flags & HS_EVF_KERNEL) && (ev.hook >> 8) == 0x18;
    if (idx < cap) { tts[idx] = ev.timestamp; tpid[idx] = ev.pid; }
    if (!sw && !hs_guid_eq(&ev.provider, &G_KTC)
        && (hsi_stacks_want(st, ev.timestamp, ev.pid, ev.tid, idx) != 0
            || hsi_stacks_want(slots, ev.timestamp, ev.pid, ev.tid, idx) != 0))
      errors++;
    if (hsi_procmap_feed(pm, &ev) < 0 || hsi_stacks_feed(st, &ev) < 0 || hsi_stacks_feed(slots, &ev) < 0)
      errors++;
    idx++;
  }
  CHECK_EQ(errors, 0);
  CHECK_EQ(rc, 0);
  CHECK_EQ(hsi_stacks_finish(st), 0);
  CHECK_EQ(hsi_stacks_finish(slots), 0);
  c = hsi_stacks_counts(st);
  /* the hold changes nothing: the same deliveries in the same order */
  res = hsi_stacks_results(st, &nres);
  res2 = hsi_stacks_results(slots, &nres2);
  CHECK_EQ(nres, nres2);
  for (i = 0; i < nres && i < nres2; i++) differ += res[i].target != res2[i].target || res[i].stack != res2[i].stack;
  CHECK_EQ(differ, 0);
  CHECK(memcmp(c, hsi_stacks_counts(slots), sizeof *c) == 0);
  defs = by_key(json, P_STACKWALK, 34) + by_key(json, P_STACKWALK, 35) + by_key(json, P_STACKWALK, 36);
  CHECK_EQ(c->op32, stacks_field(json, "stackwalk_events"));
  CHECK_EQ(c->key_refs, stacks_field(json, "stack_key_events"));
  CHECK_EQ(c->ext_stacks, stacks_field(json, "ext_stack_items"));
  CHECK_EQ(c->key_defs, defs);
  CHECK_EQ(c->damaged, 0);
  /* every part found its event; every reference its definition (§6.4) */
  CHECK_EQ(c->unmatched, 0);
  CHECK_EQ(c->matched, c->op32 + c->key_refs + c->ext_stacks);
  CHECK_EQ(c->key_resolved, c->key_refs);
  CHECK_EQ(c->key_orphaned, 0);
  CHECK_EQ(c->orphaned, 0);
  CHECK(c->delivered > 0);
  CHECK(!hsi_stacks_nomem(st));
  /* frames of stacks of events with a pid fall in a known image */
  res = hsi_stacks_results(st, &nres);
  for (i = 0; i < nres; i++) {
    size_t n, k;
    const uint64_t *f;
    uint32_t inst;
    uint64_t t = res[i].target;
    if (t >= cap || tpid[t] == HS_NOID) continue;
    inst = hsi_procmap_find(pm, tpid[t], tts[t]);
    f = hsi_stacks_frames(st, res[i].stack, &n);
    for (k = 0; k < n; k++, nframes++)
      resolved += hsi_procmap_image_at(pm, inst, f[k], tts[t]) != NULL;
  }
  CHECK(nframes > 0);
  CHECK(resolved * 100 >= nframes * 90);
  /* The analysis pass reads no more than the time of most events
     (analysis.c, time_only): it must still see every stack item and
     every process, thread and image record fed above. */
  {
    hs_reader *r2 = NULL;
    hsi_analysis *a = NULL;
    CHECK_EQ(hs_reader_open(&r2, paths, 1, NULL, err, sizeof err), 0);
    if (r2) CHECK_EQ(hsi_analysis_run(r2, NULL, &a, err, sizeof err), 0);
    if (a) {
      const hsi_stack_counts *ca = hsi_stacks_counts(hsi_analysis_stacks(a));
      CHECK_EQ(ca->op32, c->op32);
      CHECK_EQ(ca->key_refs, c->key_refs);
      CHECK_EQ(ca->key_defs, c->key_defs);
      CHECK_EQ(ca->ext_stacks, c->ext_stacks);
      CHECK(memcmp(hsi_procmap_stats(hsi_analysis_procmap(a)), hsi_procmap_stats(pm), sizeof(hsi_procstats)) == 0);
      CHECK_EQ(hsi_procmap_nimages(hsi_analysis_procmap(a)), hsi_procmap_nimages(pm));
    }
    hsi_analysis_free(a);
    hs_reader_close(r2);
  }
  printf("%s: %llu op-32 stacks, %llu ext items, %llu key references (%llu resolved) and %llu definitions; "
         "%llu parts matched (%llu on timestamp alone), %llu ambiguous, %llu unmatched; %llu targets "
         "got stacks (%llu joined), %u distinct; %llu of %llu frames in a known image\n", name,
         (unsigned long long)c->op32, (unsigned long long)c->ext_stacks, (unsigned long long)c->key_refs,
         (unsigned long long)c->key_resolved, (unsigned long long)c->key_defs,
         (unsigned long long)c->matched, (unsigned long long)c->matched_notid,
         (unsigned long long)c->ambiguous, (unsigned long long)c->unmatched,
         (unsigned long long)c->delivered, (unsigned long long)c->joined, (unsigned)hsi_stacks_count(st),
         (unsigned long long)resolved, (unsigned long long)nframes);
  free(tts);
  free(tpid);
  hsi_stacks_free(st);
  hsi_stacks_free(slots);
  hsi_procmap_free(pm);
  hs_reader_close(r);
  free(json);
}

TEST(real_traces) {
  real_trace("microsoft_perfview__net.4.5.2.x64");
  real_trace("microsoft_perfview__net.4.5.x86_PerfViewData");
  real_trace("microsoft_perfview__net.4.5.2.x86");
  if (corpus_missing) CHECK(!corpus_absent("test_stacks"));
}

int main(void) {
  RUN(interning);
  RUN(op32_match);
  RUN(op32_recent_parts);
  RUN(op32_32bit_frames);
  RUN(kernel_user_join);
  RUN(late_arrival_and_window);
  RUN(no_tid_targets);
  RUN(part_edges);
  RUN(same_time_same_thread);
  RUN(one_time_many_targets);
  RUN(many_targets);
  RUN(key_resolved_later);
  RUN(key_reuse);
  RUN(key_orphan);
  RUN(ext_stack_trace64);
  RUN(ext_stack_key);
  RUN(ext_matchid_reused_slot);
  RUN(callback);
  RUN(damaged);
  RUN(hold_same_answers);
  RUN(real_traces);
  return UNIT_DONE();
}
