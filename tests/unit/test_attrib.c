/*
** test_attrib.c -- the look-ahead that gives memory events without header
** ids the pid/tid of their StackWalk (engine/attrib.c), on a scripted
** event source: order kept, bytes kept, the bound, giving up on a kind
** that never gets stacks (and not giving up on one that got some),
** ambiguity, StackKey references, events stamped alike, the byte bound,
** and an error after held events.
*/
#include "unit.h"
#include "heapscript.h"
#include "bytes.h"
#include "attrib.h"

#define MAXEV 40000

/* A scripted source: events with their own payload buffers, then `err`. */
typedef struct script {
  hs_event ev[MAXEV];
  uint8_t pl[MAXEV][32];
  int n, at, err;
} script;

static int next(void *ud, hs_event *ev) {
  script *s = (script *)ud;
  if (s->at == s->n) return s->err;
  *ev = s->ev[s->at++];
  return 1;
}

static hs_event *add(script *s, uint16_t hook, int64_t ts, int ids, uint32_t pid, uint32_t tid) {
  hs_event *e = &s->ev[s->n];
  memset(e, 0, sizeof *e);
  e->flags = (uint8_t)(HS_EVF_KERNEL | (ids ? HS_EVF_HAS_IDS : 0));
  e->hook = hook;
  e->version = 2;
  e->pointer_size = 8;
  e->timestamp = ts;
  e->pid = ids ? pid : HS_NOID;
  e->tid = ids ? tid : HS_NOID;
  e->payload = s->pl[s->n];
  e->record = s->pl[s->n];     /* the payload is the whole "record" here */
  s->n++;
  return e;
}

/* PoolAlloc v2 (P = 8): PoolType, Tag, NumberOfBytes, Entry; no ids. */
static void pool(script *s, int64_t ts, uint64_t entry) {
  hs_event *e = add(s, 0x0E20, ts, 0, 0, 0);
  uint8_t *p = (uint8_t *)e->payload;
  wr32(p, 0); wr32(p + 4, 0x6b61654c); wr64(p + 8, 64); wr64(p + 16, entry);
  e->payload_len = e->record_len = 24;
}

/* A StackWalk record of `hook` naming (event_ts, pid, tid), then one
   word: a frame (op 32, 0x1820) or a StackKey (op 37/38, 0x1825/0x1826). */
static void stackref(script *s, uint16_t hook, int64_t ts, int64_t ets, uint32_t pid, uint32_t tid,
                     uint64_t word) {
  hs_event *e = add(s, hook, ts, 0, 0, 0);
  uint8_t *p = (uint8_t *)e->payload;
  wr64(p, (uint64_t)ets); wr32(p + 8, pid); wr32(p + 12, tid); wr64(p + 16, word);
  e->payload_len = e->record_len = 24;
}

/* StackWalk op 32 naming (event_ts, pid, tid), one frame. */
static void stack(script *s, int64_t ts, int64_t ets, uint32_t pid, uint32_t tid) {
  stackref(s, 0x1820, ts, ets, pid, tid, 0x401000);
}

/* Any event with ids (a CSwitch, say). */
static void other(script *s, int64_t ts, uint32_t pid, uint32_t tid) {
  hs_event *e = add(s, 0x0524, ts, 1, pid, tid);
  wr32((uint8_t *)e->payload, (uint32_t)ts);
  e->payload_len = e->record_len = 4;
}

/* n pool events from ts on, each followed by a whole look-ahead of other
   events and no stack: each waits its whole look-ahead for nothing. */
static void unmatched(script *s, int64_t ts, int n) {
  int i, j;
  for (i = 0; i < n; i++) {
    pool(s, ts++, 0x1000 + 16 * (uint64_t)i);
    for (j = 0; j < HSI_ATTRIB_AHEAD; j++) other(s, ts++, 1, 2);
  }
}

static script S;

TEST(order_bytes_and_ids) {
  hsi_attrib *at;
  hs_event ev;
  hsi_ids ids;
  int64_t last = 0;
  int k = 0;
  memset(&S, 0, sizeof S);
  other(&S, 10, 1, 2);
  pool(&S, 20, 0xffffc30f41200000ull);
  other(&S, 21, 5, 6);                   /* another CPU's events before the stack */
  other(&S, 22, 5, 6);
  stack(&S, 23, 20, 100, 101);
  other(&S, 30, 1, 2);
  at = hsi_attrib_new(next, &S);
  while (hsi_attrib_next(at, &ev, &ids) == 1) {
    CHECK(ev.timestamp >= last);
    last = ev.timestamp;
    CHECK_EQ(ev.timestamp, S.ev[k].timestamp);        /* same order */
    CHECK_EQ(ev.payload_len, S.ev[k].payload_len);
    CHECK(memcmp(ev.payload, S.ev[k].payload, ev.payload_len) == 0);   /* same bytes */
    if (k == 1) {
      CHECK_EQ(ids.how, HSI_IDS_STACK);
      CHECK_EQ(ids.pid, 100); CHECK_EQ(ids.tid, 101);
      CHECK_EQ(ev.pid, HS_NOID);                       /* the header's stay as they were */
      CHECK_EQ(rd64(ev.payload + 16), 0xffffc30f41200000ull);
    } else if (ev.hook == 0x0524) {
      CHECK_EQ(ids.how, HSI_IDS_HEADER); CHECK_EQ(ids.pid, ev.pid);
    } else {
      CHECK_EQ(ids.how, HSI_IDS_NONE);
    }
    k++;
  }
  CHECK_EQ(k, S.n);
  CHECK_EQ(hsi_attrib_counts_get(at)->waited, 1);
  CHECK_EQ(hsi_attrib_counts_get(at)->from_stack, 1);
  CHECK_EQ(hsi_attrib_counts_get(at)->no_stack, 0);
  CHECK_EQ(hsi_attrib_counts_get(at)->held_max, 4);   /* the event, two others, its stack */
  hsi_attrib_free(at);
}

/* A stack later than the look-ahead gives nothing; the event comes out in time. */
TEST(bound) {
  hsi_attrib *at;
  hs_event ev;
  hsi_ids ids;
  int i, k = 0, got = 0;
  memset(&S, 0, sizeof S);
  pool(&S, 1, 0x1000);
  for (i = 0; i < HSI_ATTRIB_AHEAD + 10; i++) other(&S, 2 + i, 1, 2);
  stack(&S, 5000, 1, 100, 101);
  at = hsi_attrib_new(next, &S);
  while (hsi_attrib_next(at, &ev, &ids) == 1) {
    if (k == 0) { got = ids.how; CHECK_EQ(ev.hook, 0x0E20); }
    k++;
  }
  CHECK_EQ(k, S.n);
  CHECK_EQ(got, HSI_IDS_NONE);
  CHECK_EQ(hsi_attrib_counts_get(at)->no_stack, 1);
  CHECK_EQ(hsi_attrib_counts_get(at)->held_max, HSI_ATTRIB_AHEAD);
  hsi_attrib_free(at);
}

/* A kind that never gets a stack stops waiting after HSI_ATTRIB_GIVEUP. */
TEST(give_up) {
  hsi_attrib *at;
  hs_event ev;
  hsi_ids ids;
  memset(&S, 0, sizeof S);
  unmatched(&S, 0, HSI_ATTRIB_GIVEUP + 5);
  at = hsi_attrib_new(next, &S);
  while (hsi_attrib_next(at, &ev, &ids) == 1) CHECK(ids.how != HSI_IDS_STACK);
  CHECK_EQ(hsi_attrib_counts_get(at)->waited, HSI_ATTRIB_GIVEUP);
  CHECK_EQ(hsi_attrib_counts_get(at)->no_stack, HSI_ATTRIB_GIVEUP + 5);
  hsi_attrib_free(at);
}

/* A StackWalk whose (timestamp, thread) is a held event's with ids is that
   event's: the waiting one at the same timestamp gets nothing from it. */
TEST(ambiguous) {
  hsi_attrib *at;
  hs_event ev;
  hsi_ids ids;
  int k = 0;
  memset(&S, 0, sizeof S);
  pool(&S, 50, 0x1000);
  other(&S, 50, 7, 8);
  stack(&S, 53, 50, 7, 8);
  stack(&S, 54, 50, 100, 101);           /* the pool event's own */
  at = hsi_attrib_new(next, &S);
  while (hsi_attrib_next(at, &ev, &ids) == 1) {
    if (k == 0) { CHECK_EQ(ids.how, HSI_IDS_STACK); CHECK_EQ(ids.tid, 101); }
    k++;
  }
  CHECK_EQ(hsi_attrib_counts_get(at)->ambiguous, 1);
  hsi_attrib_free(at);
}

/* A source error after held events: they come out first, then the error. */
TEST(error_after_held) {
  hsi_attrib *at;
  hs_event ev;
  hsi_ids ids;
  int k = 0, r;
  memset(&S, 0, sizeof S);
  S.err = HS_EFORMAT;
  pool(&S, 1, 0x1000);
  other(&S, 2, 1, 2);
  at = hsi_attrib_new(next, &S);
  while ((r = hsi_attrib_next(at, &ev, &ids)) == 1) k++;
  CHECK_EQ(k, 2);
  CHECK_EQ(r, HS_EFORMAT);
  CHECK_EQ(hsi_attrib_next(at, &ev, &ids), 0);
  /* reset: read again from a rewound source */
  S.at = 0;
  hsi_attrib_reset(at);
  for (k = 0; hsi_attrib_next(at, &ev, &ids) == 1; k++) {}
  CHECK_EQ(k, 2);
  hsi_attrib_free(at);
}

/* A kernel StackKey reference (op 37, hook 0x1825) or a user one (op 38,
   0x1826) names the event as a whole stack does: (timestamp, pid, tid). */
TEST(stack_key_refs) {
  hsi_attrib *at;
  hs_event ev;
  hsi_ids ids;
  int k = 0;
  memset(&S, 0, sizeof S);
  pool(&S, 10, 0x1000);
  stackref(&S, 0x1825, 11, 10, 300, 301, 0xffffe00012345678ull);
  pool(&S, 20, 0x2000);
  stackref(&S, 0x1826, 21, 20, 400, 401, 0xffffe00012345680ull);
  at = hsi_attrib_new(next, &S);
  while (hsi_attrib_next(at, &ev, &ids) == 1) {
    if (k == 0) { CHECK_EQ(ids.how, HSI_IDS_STACK); CHECK_EQ(ids.pid, 300); CHECK_EQ(ids.tid, 301); }
    if (k == 2) { CHECK_EQ(ids.how, HSI_IDS_STACK); CHECK_EQ(ids.pid, 400); CHECK_EQ(ids.tid, 401); }
    k++;
  }
  CHECK_EQ(k, 4);
  CHECK_EQ(hsi_attrib_counts_get(at)->from_stack, 2);
  hsi_attrib_free(at);
}

/* Two events stamped alike (two CPUs) wait: the first StackWalk naming
   that time goes to the first of them, the next to the next. */
TEST(same_time_in_order) {
  hsi_attrib *at;
  hs_event ev;
  hsi_ids ids;
  int k = 0;
  memset(&S, 0, sizeof S);
  pool(&S, 30, 0x1000);
  pool(&S, 30, 0x2000);
  stack(&S, 31, 30, 100, 101);
  stack(&S, 32, 30, 200, 201);
  at = hsi_attrib_new(next, &S);
  while (hsi_attrib_next(at, &ev, &ids) == 1) {
    if (k == 0) { CHECK_EQ(rd64(ev.payload + 16), 0x1000); CHECK_EQ(ids.tid, 101); }
    if (k == 1) { CHECK_EQ(rd64(ev.payload + 16), 0x2000); CHECK_EQ(ids.tid, 201); }
    k++;
  }
  CHECK_EQ(hsi_attrib_counts_get(at)->from_stack, 2);
  hsi_attrib_free(at);
}

/* The look-ahead holds at most HSI_ATTRIB_BYTES of records: large events
   after a waiting one let it go, without ids, before the event count
   bound, and before its stack comes. */
static uint8_t big[8192];

TEST(byte_bound) {
  hsi_attrib *at;
  hs_event ev;
  hsi_ids ids;
  int i, k = 0, got = -1, n = (int)(HSI_ATTRIB_BYTES / sizeof big) + 8;
  memset(&S, 0, sizeof S);
  CHECK(n + 2 < HSI_ATTRIB_AHEAD);
  pool(&S, 1, 0x1000);
  for (i = 0; i < n; i++) {
    hs_event *e = add(&S, 0x0524, 2 + i, 1, 1, 2);
    e->record = big;
    e->payload = big + 16;
    e->record_len = sizeof big;
    e->payload_len = sizeof big - 16;
  }
  stack(&S, 5000, 1, 100, 101);
  at = hsi_attrib_new(next, &S);
  while (hsi_attrib_next(at, &ev, &ids) == 1) {
    if (k == 0) got = ids.how;
    if (k > 0 && k <= n) CHECK_EQ(ev.record_len, sizeof big);
    k++;
  }
  CHECK_EQ(k, S.n);
  CHECK_EQ(got, HSI_IDS_NONE);
  CHECK_EQ(hsi_attrib_counts_get(at)->no_stack, 1);
  CHECK(hsi_attrib_counts_get(at)->held_max < (uint32_t)n);
  hsi_attrib_free(at);
}

/* A kind that got a stack once keeps waiting for them, however many of
   its events then go without one. */
TEST(no_give_up_once_matched) {
  hsi_attrib *at;
  hs_event ev;
  hsi_ids ids;
  memset(&S, 0, sizeof S);
  pool(&S, 0, 0x800);
  stack(&S, 1, 0, 100, 101);
  unmatched(&S, 2, HSI_ATTRIB_GIVEUP + 5);
  at = hsi_attrib_new(next, &S);
  while (hsi_attrib_next(at, &ev, &ids) == 1) {}
  CHECK_EQ(hsi_attrib_counts_get(at)->waited, HSI_ATTRIB_GIVEUP + 6);
  CHECK_EQ(hsi_attrib_counts_get(at)->from_stack, 1);
  CHECK_EQ(hsi_attrib_counts_get(at)->no_stack, HSI_ATTRIB_GIVEUP + 5);
  hsi_attrib_free(at);
}

int main(void) {
  RUN(order_bytes_and_ids);
  RUN(bound);
  RUN(give_up);
  RUN(ambiguous);
  RUN(error_after_held);
  RUN(stack_key_refs);
  RUN(same_time_in_order);
  RUN(byte_bound);
  RUN(no_give_up_once_matched);
  return UNIT_DONE();
}
