/*
** attrib.c -- bounded look-ahead that gives memory events without header
** ids the pid/tid of the StackWalk matched to them (see attrib.h).
**
** A StackWalk op 32, and the key references 37/38, start with
** EventTimeStamp u64, StackProcess u32, StackThread u32 [V: ETL-FORMAT.md
** §6.4], so the held event it names is a waiting one with that
** timestamp: of several, the one on the StackWalk's CPU, or of its
** process, else the first.  A walk can come in two parts, its kernel
** frames then its user frames: the user part of a walk whose kernel part
** gave a waiting event its ids is that event's (kp), even once it has
** been handed on.  Several CPUs' events interleave between an event and its
** stack (the stack is stamped after the walk), so the match is on the
** timestamp, not on adjacency.  A StackWalk whose (timestamp, thread) is
** also that of an event with ids is that event's (ambiguous, counted): it
** gives nothing to the waiting one.  Such an event is held behind the
** waiting one, or came at its tick just before it and passed; of the
** latter, the first StackWalk naming its thread is its own (a second one
** of the same thread can be the waiting event's).
*/
#include <stdlib.h>
#include <string.h>
#include "heapscript.h"
#include "bytes.h"
#include "memev.h"
#include "attrib.h"
#include "stacks.h"
#include "thread.h"

#define NOOFF ((size_t)-1)
#define TICK_IDS 4          /* threads of events with ids kept for the tick that is passing */
#define CONT 4              /* kernel parts remembered for their user parts (kp) */

typedef struct held {
  hs_event ev;             /* record/payload/ext pointers are rebuilt from the offsets */
  size_t rec, pay, ext;    /* arena offsets, NOOFF for NULL */
  hsi_ids ids;
  uint16_t hook;
  uint8_t waiting;         /* a memory event without ids, its StackWalk not seen yet */
  uint8_t npre;            /* ... and the threads of events with ids that came at its */
  uint32_t pre[TICK_IDS];  /* tick before it, not held: their StackWalks are not its */
} held;

/* Per hook of the three memory groups: how waits ended. */
typedef struct hookstat { uint32_t matched, unmatched; } hookstat;

struct hsi_attrib {
  hsi_attrib_src src;
  void *ud;
  held q[HSI_ATTRIB_AHEAD];  /* ring */
  uint32_t head, n;
  uint8_t *buf;              /* arena of the held events' bytes */
  size_t len, cap;
  int eof, err;
  /* the events with ids that passed without being held at the latest tick:
     a StackWalk of that tick naming one of their threads is theirs, even
     when an event without ids waits at the same tick (attrib.h) */
  int64_t tick;
  uint32_t tick_tid[TICK_IDS];
  uint32_t ntick;
  /* waiting events given their ids by a kernel part of a StackWalk: the
     user part of the same walk (same time and ids) may follow, once the
     event has been handed on too; it is that event's, not another's */
  struct { int64_t ts; uint32_t pid, tid; } kp[CONT];
  uint32_t nkp;
  hookstat hs[3][256];
  hsi_attrib_counts c;
};

int hsi_attrib_reader_src(void *ud, hs_event *ev) { return hs_reader_next((hs_reader *)ud, ev); }

hsi_attrib *hsi_attrib_new(hsi_attrib_src src, void *ud) {
  hsi_attrib *at = (hsi_attrib *)hsi_line_calloc(sizeof *at);   /* the pass's reading thread's: thread.h */
  if (!at) return NULL;
  at->src = src;
  at->ud = ud;
  return at;
}

void hsi_attrib_free(hsi_attrib *at) {
  if (!at) return;
  hsi_line_free(at->buf);
  hsi_line_free(at);
}

void hsi_attrib_reset(hsi_attrib *at) {
  at->head = at->n = 0;
  at->len = 0;
  at->eof = at->err = 0;
  memset(at->hs, 0, sizeof at->hs);
  memset(&at->c, 0, sizeof at->c);
  at->nkp = 0;
}

const hsi_attrib_counts *hsi_attrib_counts_get(const hsi_attrib *at) { return &at->c; }

/*
** Should ev wait for its StackWalk?  Only kernel records of the memory
** groups without ids whose kind changes lifetimes (the events a stack is
** asked for); the test on the flags comes first, so an event with ids
** costs one branch.
*/
static int wants_stack_slow(hsi_attrib *at, const hs_event *ev) {
  hsi_memop op;
  int gs;
  const hookstat *h;
  if ((gs = hsi_memev_group_slot(ev->hook >> 8)) < 0) return 0;
  if (hsi_memev_decode(ev, &op) != 1) return 0;
  switch (op.kind) {
  case HSI_OP_HEAP_CREATE: case HSI_OP_HEAP_ALLOC: case HSI_OP_HEAP_REALLOC: case HSI_OP_HEAP_FREE:
  case HSI_OP_HEAP_DESTROY: case HSI_OP_VALLOC: case HSI_OP_VFREE: case HSI_OP_POOL_ALLOC:
  case HSI_OP_POOL_FREE:
    break;
  default:
    return 0;
  }
  h = &at->hs[gs][ev->hook & 0xFF];
  if (h->unmatched >= HSI_ATTRIB_GIVEUP && h->matched == 0) { at->c.no_stack++; return 0; }
  return 1;
}

static int wants_stack(hsi_attrib *at, const hs_event *ev) {
  return (ev->flags & (HS_EVF_HAS_IDS | HS_EVF_KERNEL)) == HS_EVF_KERNEL && wants_stack_slow(at, ev);
}

/* -------------------------------------------------------------- arena */

static size_t put(hsi_attrib *at, const uint8_t *p, size_t n) {
  size_t off = at->len;
  if (!p) return NOOFF;
  if (n > at->cap - at->len) {
    size_t nc = at->cap ? at->cap : 65536;
    uint8_t *nb;
    while (nc - at->len < n) nc *= 2;
    if (!(nb = (uint8_t *)hsi_line_grow(at->buf, at->len, nc))) return (size_t)-2;   /* thread.h */
    at->buf = nb;
    at->cap = nc;
  }
  memcpy(at->buf + at->len, p, n);
  at->len += n;
  return off;
}

/* An interior pointer of the record is kept as an offset into its copy. */
static size_t inside(const hs_event *ev, const uint8_t *p, size_t n, size_t rec) {
  if (!p || !ev->record || rec == NOOFF) return NOOFF;
  if (p < ev->record || p + n > ev->record + ev->record_len) return NOOFF;
  return rec + (size_t)(p - ev->record);
}

/* Move the held bytes to the front once the consumed prefix is large. */
static void compact(hsi_attrib *at) {
  const held *h = &at->q[at->head];
  size_t base = h->rec, k;
  if (h->pay < base) base = h->pay;
  if (h->ext < base) base = h->ext;
  if (base == NOOFF || base < at->len / 2 || base < 65536) return;
  memmove(at->buf, at->buf + base, at->len - base);
  at->len -= base;
  for (k = 0; k < at->n; k++) {
    held *x = &at->q[(at->head + k) % HSI_ATTRIB_AHEAD];
    if (x->rec != NOOFF) x->rec -= base;
    if (x->pay != NOOFF) x->pay -= base;
    if (x->ext != NOOFF) x->ext -= base;
  }
}

static int hold(hsi_attrib *at, const hs_event *ev, int waiting) {
  held *h = &at->q[(at->head + at->n) % HSI_ATTRIB_AHEAD];
  size_t r;
  h->ev = *ev;
  h->hook = ev->hook;
  h->waiting = (uint8_t)waiting;
  h->npre = 0;
  if (waiting && at->ntick && at->tick == ev->timestamp) {
    h->npre = (uint8_t)(at->ntick < TICK_IDS ? at->ntick : TICK_IDS);
    memcpy(h->pre, at->tick_tid, h->npre * sizeof *h->pre);
  }
  h->ids.how = ev->flags & HS_EVF_HAS_IDS ? HSI_IDS_HEADER : HSI_IDS_NONE;
  h->ids.pid = h->ids.how ? ev->pid : HS_NOID;
  h->ids.tid = h->ids.how ? ev->tid : HS_NOID;
  if ((r = put(at, ev->record, ev->record_len)) == (size_t)-2) return HS_ENOMEM;
  h->rec = r;
  if ((h->pay = inside(ev, ev->payload, ev->payload_len, h->rec)) == NOOFF
      && (h->pay = put(at, ev->payload, ev->payload_len)) == (size_t)-2) return HS_ENOMEM;
  if ((h->ext = inside(ev, ev->ext, ev->ext_len, h->rec)) == NOOFF
      && (h->ext = put(at, ev->ext, ev->ext_len)) == (size_t)-2) return HS_ENOMEM;
  at->n++;
  if (waiting) at->c.waited++;
  if (at->n > at->c.held_max) at->c.held_max = at->n;
  return 0;
}

/* Held event h as an event, its pointers into the arena. */
static void rebuild(const hsi_attrib *at, const held *h, hs_event *ev) {
  *ev = h->ev;
  ev->record = h->rec == NOOFF ? NULL : at->buf + h->rec;
  ev->payload = h->pay == NOOFF ? NULL : at->buf + h->pay;
  ev->ext = h->ext == NOOFF ? NULL : at->buf + h->ext;
}

static void emit(hsi_attrib *at, hs_event *ev, hsi_ids *ids) {
  const held *h = &at->q[at->head];
  rebuild(at, h, ev);
  *ids = h->ids;
  at->head = (at->head + 1) % HSI_ATTRIB_AHEAD;
  at->n--;
}

static hookstat *stat_of(hsi_attrib *at, uint16_t hook) {
  return &at->hs[hsi_memev_group_slot(hook >> 8)][hook & 0xFF];
}

/* How well held event x fits a StackWalk of process pid on cpu, when
   several wait at its timestamp: on the StackWalk's CPU (where the kernel
   writes it, most of the time: ETL-FORMAT.md §6.4), and of its process
   (a VirtualAlloc event's payload names one; it is the caller's but for
   VirtualAllocEx). */
static int fit(const hsi_attrib *at, const held *x, uint32_t pid, uint16_t cpu) {
  hs_event e;
  hsi_memop op;
  int score = x->ev.cpu == cpu;
  rebuild(at, x, &e);
  if (hsi_memev_decode(&e, &op) == 1 && (op.kind == HSI_OP_VALLOC || op.kind == HSI_OP_VFREE)
      && op.pid == pid)
    score += 2;
  return score;
}

/* Is StackWalk part ev a kernel one (op 37, or op 32 whose innermost
   frame is a kernel address), after which a user part of the same walk
   may come (op 38, or op 32 of user frames: ETL-FORMAT.md §6.4)? */
static int kernel_part(const hs_event *ev) {
  int w = ev->pointer_size == 4 ? 4 : 8;
  if (ev->hook != 0x1820) return ev->hook == 0x1825;
  if (ev->payload_len < 16u + (uint32_t)w) return 0;
  return hsi_addr_is_kernel(w == 4 ? rd32(ev->payload + 16) : rd64(ev->payload + 16), w);
}

/* A StackWalk (op 32, 37, 38) names (ts, pid, tid): give them to the
   waiting event stamped ts, unless a held event with ids is its; of
   several, the one that fits it best (fit), else the first. */
static void on_stackwalk(hsi_attrib *at, const hs_event *ev) {
  int64_t ts;
  uint32_t pid, tid, k, first = HSI_ATTRIB_AHEAD, nwait = 0;
  int theirs = 0, kpart;
  if (!hsi_stacks_names_event(ev) || ev->payload_len < 16) return;
  ts = (int64_t)rd64(ev->payload);
  pid = rd32(ev->payload + 8);
  tid = rd32(ev->payload + 12);
  kpart = kernel_part(ev);
  if (!kpart)                            /* the user part of a walk whose kernel part gave ids */
    for (k = 0; k < at->nkp && k < CONT; k++)
      if (at->kp[k].ts == ts && at->kp[k].pid == pid && at->kp[k].tid == tid) {
        at->kp[k].ts = INT64_MIN;
        return;
      }
  for (k = 0; k + 1 < at->n; k++) {      /* the last one held is this StackWalk */
    held *x = &at->q[(at->head + k) % HSI_ATTRIB_AHEAD];
    uint32_t j;
    if (x->ev.timestamp != ts) continue;
    if (x->ids.how == HSI_IDS_HEADER && x->ids.tid == tid) theirs = 1;
    else if (x->waiting && nwait++ == 0) first = k;
    /* an event with ids of its tick that passed before it, on that thread:
       the first StackWalk naming the thread is that event's (a second one,
       of the same thread, may be the waiting event's own) */
    for (j = 0; x->waiting && !theirs && j < x->npre; j++)
      if (x->pre[j] == tid) { x->pre[j] = HS_NOID; theirs = 1; }
  }
  if (theirs) {
    if (first < HSI_ATTRIB_AHEAD) at->c.ambiguous++;
    return;
  }
  if (nwait > 1) {
    int best = -1;
    at->c.ambiguous++;
    for (k = 0; k + 1 < at->n; k++) {
      const held *x = &at->q[(at->head + k) % HSI_ATTRIB_AHEAD];
      int f;
      if (x->ev.timestamp != ts || !x->waiting || x->ids.how == HSI_IDS_HEADER) continue;
      if ((f = fit(at, x, pid, ev->cpu)) > best) { best = f; first = k; }
    }
  }
  if (first < HSI_ATTRIB_AHEAD) {
    held *x = &at->q[(at->head + first) % HSI_ATTRIB_AHEAD];
    x->waiting = 0;
    if (kpart) {
      uint32_t i = at->nkp++ % CONT;
      at->kp[i].ts = ts; at->kp[i].pid = pid; at->kp[i].tid = tid;
    }
    x->ids.pid = pid;
    x->ids.tid = tid;
    x->ids.how = HSI_IDS_STACK;
    at->c.from_stack++;
    stat_of(at, x->hook)->matched++;
  }
}

/* Something is held, or *ev (hold_ev) must wait: the look-ahead proper,
   out of line so that the pass-through path stays short. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static int next_held(hsi_attrib *at, hs_event *ev, hsi_ids *ids, int hold_ev) {
  hs_event in;
  int r;
  if (hold_ev && (r = hold(at, ev, 1)) != 0) return r;
  for (;;) {
    if (at->n) {
      held *h = &at->q[at->head];
      if (!h->waiting || at->eof || at->n >= HSI_ATTRIB_AHEAD || at->len > HSI_ATTRIB_BYTES) {
        if (h->waiting) {                /* its stack did not come: no ids */
          h->waiting = 0;
          at->c.no_stack++;
          stat_of(at, h->hook)->unmatched++;
        }
        emit(at, ev, ids);
        return 1;
      }
      compact(at);
    } else {
      if (at->eof) { r = at->err; at->err = 0; return r; }
      at->len = 0;                       /* the last event handed out is no longer needed */
    }
    r = at->src(at->ud, &in);
    if (r <= 0) { at->eof = 1; at->err = r; continue; }
    if ((r = hold(at, &in, wants_stack(at, &in))) != 0) return r;
    on_stackwalk(at, &in);
  }
}

int hsi_attrib_next(hsi_attrib *at, hs_event *ev, hsi_ids *ids) {
  int r;
  if (at->n || at->eof) return next_held(at, ev, ids, 0);
  /* Nothing held: read straight into *ev, so an event that passes costs
     no copy (it is copied only when it must wait). */
  at->len = 0;                           /* the last event handed out is no longer needed */
  r = at->src(at->ud, ev);
  if (r <= 0) { at->eof = 1; at->err = 0; return r; }
  if (wants_stack(at, ev)) return next_held(at, ev, ids, 1);
  ids->how = ev->flags & HS_EVF_HAS_IDS ? HSI_IDS_HEADER : HSI_IDS_NONE;
  ids->pid = ids->how ? ev->pid : HS_NOID;
  ids->tid = ids->how ? ev->tid : HS_NOID;
  if (ids->how) {                        /* the tick's threads (see struct hsi_attrib) */
    if (ev->timestamp != at->tick) { at->tick = ev->timestamp; at->ntick = 0; }
    if (at->ntick < TICK_IDS) at->tick_tid[at->ntick] = ev->tid;
    at->ntick++;
  }
  return 1;
}
