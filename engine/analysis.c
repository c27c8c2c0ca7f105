/*
** analysis.c -- the one pass that turns events into allocation records
** with stacks (see analysis.h for the order of the steps and why).
*/
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heapscript.h"
#include "bytes.h"
#include "memev.h"
#include "prefetch.h"
#include "analysis.h"
#include "attrib.h"
#include "layoutcheck.h"
#include "source.h"
#include "stop.h"
#include "text.h"
#include "thread.h"

/*
** Whether a trace has stacks for allocations, and for frees, is known
** only from the trace itself (`-stackwalk HeapAlloc` without HeapFree is
** the usual setup).  A target that never gets a stack lingers in the
** matcher's window, so a kind (heap, VirtualAlloc or pool; alloc or free)
** none of whose targets a StackWalk has named stops asking once it has
** asked PROBE times and its first target is a tenth of that window old
** (100 ms): Windows writes a StackWalk microseconds after its event, and a
** trace that writes them later than that still has its stacks matched,
** where deciding on the count alone lost every stack after the first
** PROBE events when they came that many events late.
*/
#define PROBE 4096
#define PROBE_PART 10                /* of the matcher's window */

/*
** One event has one StackWalk, whatever records it made or ended: a
** ReAlloc's new block (its alloc stack) and old block (its free stack),
** the pieces of a commit over pages partly committed.  It is one target
** to the matcher, so that the StackWalk reaches every record, and a
** second event at the same (time, thread) gets its own StackWalk, not
** the first one's.  A target of one record is rec * 2 + which; of
** several, GROUP | its index in a->groups.
*/
#define GROUP ((uint64_t)1 << 40)
typedef struct tgroup {
  uint32_t first, count;      /* records given the stack as their alloc stack */
  uint32_t freed;             /* the record given it as its free stack, or HSI_NOREC */
} tgroup;

typedef struct probe {
  uint64_t wanted;
  int seen;                   /* a StackWalk was matched to a target of this kind */
  int off;                    /* it stopped asking */
  int64_t first;              /* the time of its first target */
} probe;

struct hsi_analysis {
  hsi_procmap *pm;
  hsi_stacks *st;
  hsi_life *lt;
  hsi_lcheck *lc;             /* do the memory events fit their layouts? */
  hsi_syms *sy;                  /* names for the procmap's addresses, made on demand */
  hsi_analysis_counts c;
  hs_logfile lf;
  probe pr[2 * HSI_KIND_COUNT];  /* which * HSI_KIND_COUNT + kind */
  int open;                      /* probes asking that have no stack yet */
  int64_t window;                /* the probes', in ticks */
  const hsi_analysis_scope *scope;
  int threaded;                  /* read on a prefetch thread (pass_threaded) */
  hsi_prefetch_counts ring;      /* where its two threads waited (zero without) */
  hs_event walk;                 /* a kernel StackWalk (op 32), for walk_event */
  tgroup *groups;                /* targets of several records (group_target) */
  uint32_t ngroups, capgroups;
};

static int kind_of(int op) {
  switch (op) {
    case HSI_OP_VALLOC: case HSI_OP_VFREE: case HSI_OP_VALLOC_RUNDOWN: return HSI_KIND_VIRTUAL;
    case HSI_OP_POOL_ALLOC: case HSI_OP_POOL_FREE: return HSI_KIND_POOL;
    default: return HSI_KIND_HEAP;
  }
}

/* Is this memory event inside the scope?  The process name is the
   instance's at that time (known from rundown or Start by then).  Pool
   events are in whatever processes it names: an entry is the kernel's,
   allocated in one process's context and often freed in another's (the
   System's), so leaving out either would change the other's answers. */
static int in_scope(const hsi_analysis *a, const hsi_memop *op, uint32_t inst) {
  const hsi_analysis_scope *sc = a->scope;
  size_t i;
  if (!sc) return 1;
  if (sc->kinds && !(sc->kinds & (1u << kind_of(op->kind)))) return 0;
  if (kind_of(op->kind) == HSI_KIND_POOL) return 1;
  if (sc->pids) {
    for (i = 0; i < sc->npids && sc->pids[i] != op->pid; i++) {}
    if (i == sc->npids) return 0;
  }
  if (sc->names) {
    const char *name = hsi_procmap_name(a->pm, inst);
    for (i = 0; i < sc->nnames && !hsi_strieq(sc->names[i], name); i++) {}
    if (i == sc->nnames) return 0;
  }
  return 1;
}

/* The probe of record rec's kind, for its stack `which`. */
static probe *probe_of(hsi_analysis *a, uint32_t rec, int which) {
  return &a->pr[which * HSI_KIND_COUNT + hsi_life_recs(a->lt)->kind[rec]];
}

/* A stack target names a record and which of its stacks (rec * 2 +
   which), or a group of them. */
static void on_stack(void *ud, uint64_t target, uint32_t stack) {
  hsi_analysis *a = (hsi_analysis *)ud;
  if (target & GROUP) {
    const tgroup *g = &a->groups[(uint32_t)(target & ~GROUP)];
    uint32_t i;
    for (i = 0; i < g->count; i++) hsi_life_set_stack(a->lt, g->first + i, HSI_STACK_ALLOC, stack);
    if (g->freed != HSI_NOREC) hsi_life_set_stack(a->lt, g->freed, HSI_STACK_FREE, stack);
    return;
  }
  hsi_life_set_stack(a->lt, (uint32_t)(target >> 1), (int)(target & 1), stack);
}

/* A StackWalk part was matched to target: its kind has stacks.  The
   matcher is told to stop calling once no probe is asking (most of a
   trace); want() starts it again for a probe that opens later. */
static void seen(hsi_analysis *a, uint32_t rec, int which) {
  probe *pr = probe_of(a, rec, which);
  if (!pr->seen && !pr->off) { pr->seen = 1; a->open--; }
}

static void on_part(void *ud, uint64_t target) {
  hsi_analysis *a = (hsi_analysis *)ud;
  if (target & GROUP) seen(a, a->groups[(uint32_t)(target & ~GROUP)].first, HSI_STACK_ALLOC);
  else seen(a, (uint32_t)(target >> 1), (int)(target & 1));
  if (!a->open) hsi_stacks_on_part(a->st, NULL, NULL);
}

/* Does the probe of rec's kind ask for its stack `which` at ts? */
static int asks(hsi_analysis *a, int64_t ts, uint32_t rec, int which) {
  probe *pr = probe_of(a, rec, which);
  if (!pr->seen) {
    if (pr->off) return 0;
    if (!pr->wanted) {
      pr->first = ts;
      if (a->open++ == 0) hsi_stacks_on_part(a->st, on_part, a);
    } else if (pr->wanted >= PROBE && ts - pr->first > a->window) {
      pr->off = 1;
      if (--a->open == 0) hsi_stacks_on_part(a->st, NULL, NULL);
      return 0;
    }
  }
  pr->wanted++;
  return 1;
}

/* The event's target (above): `count` records from `first` for their
   alloc stack, `freed` (or HSI_NOREC) for its free stack.  The probe of
   the records' kind for alloc stacks decides for them all: a ReAlloc's
   StackWalk is its own, whether Frees are stack-walked or not, and it
   says nothing of whether they are (the probe for free stacks is the
   Frees' alone: kept open by ReAllocs, it had every Free ask for a
   StackWalk that never comes, and take the next event's at its tick).
   ts, pid, tid: the event as its StackWalk names it (header ids, else
   the ids attrib.c took from that StackWalk, else the payload pid
   alone).  0 or HS_ENOMEM. */
static int want(hsi_analysis *a, int64_t ts, uint32_t pid, uint32_t tid, uint32_t first, uint32_t count,
                uint32_t freed) {
  uint64_t target;
  if (count && asks(a, ts, first, HSI_STACK_ALLOC)) {
    if (count == 1 && freed == HSI_NOREC) target = (uint64_t)first * 2 + HSI_STACK_ALLOC;
    else {
      if (a->ngroups == a->capgroups) {
        uint32_t nc = a->capgroups ? a->capgroups * 2 : 64;
        tgroup *ng = nc > a->capgroups ? (tgroup *)realloc(a->groups, (size_t)nc * sizeof *ng) : NULL;
        if (!ng) return HS_ENOMEM;
        a->groups = ng;
        a->capgroups = nc;
      }
      a->groups[a->ngroups].first = first;
      a->groups[a->ngroups].count = count;
      a->groups[a->ngroups].freed = freed;
      target = GROUP | a->ngroups++;
    }
  } else if (count == 0 && freed != HSI_NOREC && asks(a, ts, freed, HSI_STACK_FREE))
    target = (uint64_t)freed * 2 + HSI_STACK_FREE;
  else return 0;
  return hsi_stacks_want(a->st, ts, pid, tid, target) < 0 ? HS_ENOMEM : 0;
}

/*
** op has the header's ids; ids are the event's as attrib.c gives them.  An
** event without header ids takes the StackWalk's for every use (process
** instance, scope, the thread-keyed realloc rule), except that a
** VirtualAlloc record stays in the payload's target process.
*/
static int memory_event(hsi_analysis *a, hsi_memop *op, const hsi_ids *ids) {
  hsi_life_res res;
  uint32_t inst, i, spid;
  int freed;
  a->c.memory_events++;
  if (op->kind == HSI_OP_SNAPSHOT) { a->c.snapshot_chunks++; return 0; }
  if (op->kind == HSI_OP_HEAP_OTHER || op->kind == HSI_OP_NONE) return 0;
  if (ids->how == HSI_IDS_STACK) {
    a->c.ids_from_stack++;
    op->tid = ids->tid;
    if (kind_of(op->kind) != HSI_KIND_VIRTUAL) op->pid = ids->pid;
  }
  spid = ids->how != HSI_IDS_NONE ? ids->pid : op->pid;
  inst = hsi_procmap_instance(a->pm, op->pid, op->ts);
  if (inst == HSI_NOINST && (op->kind == HSI_OP_HEAP_FREE || op->kind == HSI_OP_HEAP_REALLOC)) {
    /* no ids and no StackWalk (frees are often not stack-walked): the one
       live block it frees, if only one process holds it, says whose it is */
    uint64_t addr = op->kind == HSI_OP_HEAP_FREE ? op->addr : op->old_addr;
    if ((inst = hsi_life_heap_owner(a->lt, op->heap, addr)) != HSI_NOINST) {
      op->pid = hsi_procmap_pid(a->pm, inst);
      a->c.ids_from_block++;
    }
  }
  if (!in_scope(a, op, inst)) { a->c.out_of_scope++; return 0; }
  if (hsi_life_feed(a->lt, op, inst, &res)) return HS_ENOMEM;
  /* A free's stack belongs to the record it ended; a HeapDestroy or a
     release ending many records gives none (it is not theirs alone).  A
     ReAlloc ends its old block (the first it ends) as it starts the new
     one: the old block's free stack is the ReAlloc's, as its alloc stack
     is the new block's. */
  freed = res.nended == 1 && res.count == 0;
  if (op->kind == HSI_OP_HEAP_REALLOC && res.nended >= 1
      && hsi_life_recs(a->lt)->reason[res.ended[0]] == HSI_END_REALLOC)
    freed = 1;
  if ((res.count || freed) && spid != op->pid && kind_of(op->kind) == HSI_KIND_VIRTUAL) {
    /* VirtualAllocEx, VirtualFreeEx: the memory is the target's, the
       stack the caller's */
    uint32_t sinst = hsi_procmap_find(a->pm, spid, op->ts);
    if (sinst != HSI_NOINST) {
      for (i = 0; i < res.count; i++) hsi_life_set_stack_inst(a->lt, res.first + i, HSI_STACK_ALLOC, sinst);
      if (freed) hsi_life_set_stack_inst(a->lt, res.ended[0], HSI_STACK_FREE, sinst);
    }
  }
  return want(a, op->ts, spid, op->tid, res.first, res.count, freed ? res.ended[0] : HSI_NOREC);
}

static int is_process_end(const hs_event *ev) { return (ev->flags & HS_EVF_KERNEL) && ev->hook == 0x0302; }

/*
** Process End (group 3 type 2): counted.  What the instance still holds
** stays outstanding: a heap block ends at its Free, a ReAlloc or its
** heap's HeapDestroy, a commit at its decommit or release
** (LIFETIMES.md), none of which a process's exit logs, and WPA's AIFO
** is what a program never freed before it exited: the leaks of a test
** run recorded to its end.
*/
static int process_end(hsi_analysis *a, const hs_event *ev) {
  hs_cursor c;
  uint32_t pid, inst;
  hs_cur_init(&c, ev->payload, ev->payload_len, ev->pointer_size);
  hs_cur_ptr(&c);                          /* UniqueProcessKey */
  pid = hs_cur_u32(&c);
  if (c.bad) return 0;
  inst = hsi_procmap_find(a->pm, pid, ev->timestamp);
  if (inst == HSI_NOINST) return 0;
  a->c.process_ends++;
  hsi_life_exited(a->lt, inst);
  return 0;
}

/*
** What the reading side works out about each event, on the prefetch
** thread when there is one (the decoding there, the records here): the
** event's ids (attrib.h) and its memory operation.  The layout checks
** are kept there too; both the attribution and the checks are that
** thread's until the prefetch is closed.
*/
typedef struct pre {
  hsi_ids ids;
  int d;                      /* hsi_memev_decode: 1 op, 0 none, < 0 damaged */
  uint16_t bare;              /* BARE_OP or BARE_TIME: the op, or the time in op.ts, says all the */
  uint16_t file;              /* pass reads of the event (stage), but for where it is, for the */
  uint32_t buffer;            /* progress line */
  hsi_memop op;
} pre;

enum { BARE_OP = 1, BARE_TIME = 2, BARE_STACK = 3 };

/* A kernel StackWalk record (op 32): to the stack matcher its time, its
   frames and their width, which is all it reads of it (stacks.c).  It
   crosses to the analysis thread as those, its frames copied alone
   (prefetch.h), not as an event and its record: a third of a memory
   trace's events. */
static int plain_walk(const hs_event *ev) {
  return (ev->flags & (HS_EVF_KERNEL | HS_EVF_EXT)) == HS_EVF_KERNEL && ev->hook == 0x1820 && ev->payload;
}

/* Is ev one the loop of hsi_analysis_run reads no more of than its time?
   Its memory operation (d), Process End, the process map and the stack
   matcher each say whether they read it; most events of a real trace's
   other providers are such. */
static int time_only(const hs_event *ev, int d) {
  return d == 0 && !hsi_procmap_wants(ev) && !hsi_stacks_wants(ev) && !is_process_end(ev);
}

/* The pass counts every time on the first file's clock (hsi_reader_clocks):
   an event of a file with another one has its time moved there once it is
   read, its StackWalk (of the same file) with it. */
typedef struct stage_ctx {
  int cross;                  /* events cross to another thread (BARE_STACK pays only there) */
  hsi_attrib *at;
  hsi_lcheck *lc;
  const hs_reader *r;
  const hs_logfile **clocks;
} stage_ctx;

/* A StackWalk's EventTimeStamp moved as its event's time was (stacks.h). */
static int64_t walk_clock(void *ud, const hs_event *walk, int64_t ets) {
  const stage_ctx *sc = (const stage_ctx *)ud;
  return hsi_rebase_ts(sc->r, sc->clocks, walk->file, ets);
}

static int stage(void *ud, hs_event *ev, void *extra) {
  stage_ctx *sc = (stage_ctx *)ud;
  pre *x = (pre *)extra;
  int n = hsi_attrib_next(sc->at, ev, &x->ids);
  if (n != 1) return n;
  hsi_rebase(sc->r, sc->clocks, ev);
  x->d = hsi_memev_maybe(ev) ? hsi_memev_decode(ev, &x->op) : 0;
  if (x->d != 0 && hsi_lcheck_add(sc->lc, ev, x->d, &x->op)) return HS_ENOMEM;
  /* A kernel event decoded whole is one of the heap, VirtualAlloc or pool
     groups (the only kernel groups hsi_memev_decode knows), most of a
     memory trace's events.  It is read on by its operation alone: the
     process map and Process End look at other groups, and to
     the stack matcher it is only its time.  Neither its record's bytes nor
     the event go over to the analysis thread (prefetch.h), only this. */
  x->bare = x->d == 1 && (ev->flags & (HS_EVF_KERNEL | HS_EVF_EXT)) == HS_EVF_KERNEL ? BARE_OP : 0;
  /* Nor does an event the pass reads only the time of (time_only): on a
     real trace, most of them. */
  if (!x->bare && time_only(ev, x->d)) {
    x->bare = BARE_TIME;
    x->op.ts = ev->timestamp;
  } else if (!x->bare && sc->cross && x->d == 0 && plain_walk(ev)) {
    /* (op.addr: where its frames are, made the copy's by the prefetch) */
    x->bare = BARE_STACK;
    x->op.ts = ev->timestamp;
    x->op.addr = (uint64_t)(uintptr_t)ev->payload;
    x->op.size = ev->payload_len;
    x->op.pointer_size = ev->pointer_size;
  }
  if (x->bare) {
    ev->record = ev->ext = NULL;
    if (x->bare != BARE_STACK) ev->payload = NULL;
    x->file = ev->file;
    x->buffer = ev->buffer;
  }
  return 1;
}

/* Feed the matcher a BARE_STACK event as the StackWalk it was (a->walk:
   the fields it reads are set, the others stay as made). */
static int walk_event(hsi_analysis *a, const pre *x) {
  a->walk.timestamp = x->op.ts;
  a->walk.file = x->file;
  a->walk.payload = (const uint8_t *)(uintptr_t)x->op.addr;
  a->walk.payload_len = (uint32_t)x->op.size;
  a->walk.pointer_size = x->op.pointer_size;
  return hsi_stacks_feed(a->st, &a->walk) < 0 ? HS_ENOMEM : 0;
}

/* The progress line's step at event e, or at a bare one, where x says
   it is. */
static void progress(const hsi_analysis_scope *scope, const hs_event *e, const pre *x) {
  hs_event where;
  if (x->bare) {
    memset(&where, 0, sizeof where);
    where.timestamp = x->op.ts;
    where.file = x->file;
    where.buffer = x->buffer;
    e = &where;
  }
  scope->progress(scope->progress_ud, e);
}

static int help_reader(void *ud) { return hsi_reader_help((hs_reader *)ud); }

/* Whether the pass reads on a prefetch thread: not for a trace under
   HSI_THREADS_MIN_BYTES (thread.h) unless HEAPSCRIPT_THREADS asks for
   threads, nor for files whose sizes are unknown (a live session keeps
   it).  Measured with `leaks`, the wall time of 15 runs each: 1.5 MB
   (Tx Process) 6.6 ms with the thread, 5.2 ms without; the 243 KB
   example 10.4 ms and 8.4 ms; from about 8 MB of heap events the thread
   pays (8.7 MB 16.5-19.8 ms against 18.5-20.6 ms, 29 MB 41-49 ms against
   53-54 ms). */
static int pass_threaded(const hs_reader *r) {
  uint64_t bytes = 0;
  int i, n = hs_reader_nfiles(r);
  if (!hsi_prefetch_wanted()) return 0;
  if (hsi_threads_allowed(-1) >= 0 || n < 1) return 1;
  for (i = 0; i < n; i++) {
    const hs_file_stats *st = hs_reader_stats(r, i);
    if (!st || !st->file_size) return 1;
    bytes += st->file_size;
  }
  return bytes >= HSI_THREADS_MIN_BYTES;
}

/* Records of a process the trace does not name: heap and pool events
   without ids whose StackWalk never came. */
static uint64_t count_no_process(const hsi_life *lt) {
  const hsi_recs *rs = hsi_life_recs(lt);
  uint64_t n = 0;
  size_t i;
  for (i = 0; i < rs->n; i++) n += rs->inst[i] == HSI_NOINST;
  return n;
}

int hsi_analysis_run(hs_reader *r, const hsi_analysis_scope *scope, hsi_analysis **out,
                     char *err, size_t errlen) {
  hsi_analysis *a = (hsi_analysis *)hsi_line_calloc(sizeof *a);   /* thread.h */
  hs_event ev;
  const hs_event *e = &ev, *evs = NULL;   /* evs: the prefetch block's events */
  hsi_prefetch *pf = NULL;
  stage_ctx *sc = (stage_ctx *)hsi_line_calloc(sizeof *sc);   /* read by the reading thread: thread.h */
  pre own, *x = &own, *xs = NULL;         /* xs: their stage bytes */
  int rc = 0, n = 0, nb = 0, ib = 0, threaded;
  int64_t ts;
  *out = NULL;
  if (!a || !sc || !(a->pm = hsi_procmap_new()) || !(a->st = hsi_stacks_new()) || !(a->lt = hsi_life_new())
      || !(a->lc = hsi_lcheck_new()) || !(a->sy = hsi_syms_new(a->pm))) {
    hsi_analysis_free(a);
    hsi_line_free(sc);
    snprintf(err, errlen, "out of memory");
    return HS_ENOMEM;
  }
  hsi_memev_prepare();                   /* the decoders' plans, before the walk */
  a->lf = *hs_reader_logfile(r, 0);
  a->scope = scope;
  hsi_stacks_on_match(a->st, on_stack, a);
  hsi_stacks_set_window(a->st, hs_time_freq(&a->lf), HSI_STACKS_MAX_LIVE);
  a->window = hs_time_freq(&a->lf) / PROBE_PART;
  a->c.first_ts = INT64_MAX;
  a->c.last_ts = INT64_MIN;
  a->walk.flags = HS_EVF_KERNEL;
  a->walk.hook = 0x1820;
  a->walk.opcode = 0x20;
  /* With a prefetch thread the walk runs on it, and this thread works
     beside it: the reader starts one decoding worker fewer (source.h),
     and this thread decodes for it whenever it waits for events. */
  threaded = pass_threaded(r);
  hsi_reader_beside(r, threaded);
  hs_reader_rewind(r);
  hsi_reader_beside(r, 0);               /* a later rewind walks alone again */
  /* Events without ids wait for their StackWalk (attrib.h); the rest pass. */
  sc->at = hsi_attrib_new(hsi_attrib_reader_src, r);
  sc->lc = a->lc;
  sc->r = r;
  if (hsi_reader_clocks(r, &sc->clocks) != 0) rc = HS_ENOMEM;
  else if (!sc->at) rc = HS_ENOMEM;
  /* Reading, attribution and decoding cost about what the work below
     does: on a second core they run ahead (prefetch.h); without threads,
     here. */
  else {
    sc->cross = threaded;                 /* before the thread starts, which reads it */
    if (threaded && (pf = hsi_prefetch_open(stage, sc, sizeof(pre), offsetof(pre, op.addr))) != NULL)
      hsi_prefetch_on_idle(pf, help_reader, r);   /* waiting for events, decode some */
    else sc->cross = 0;
  }
  if (rc == 0 && sc->clocks) hsi_stacks_on_clock(a->st, walk_clock, sc);
  a->threaded = pf != NULL;
  while (rc == 0) {
    int d;
    if (!pf) {
      if ((n = stage(sc, &ev, &own)) != 1) break;
    } else {
      if (ib == nb) {                    /* the next block, the last one given back */
        void *xp = NULL;
        if ((n = hsi_prefetch_take(pf, &evs, &xp)) <= 0) break;
        xs = (pre *)xp;
        nb = n;
        ib = 0;
      }
      e = &evs[ib];
      x = &xs[ib++];
    }
    d = x->d;
    if (hsi_stop_due(a->c.events)) { rc = HSI_ESTOPPED; break; }   /* a time limit (stop.h) */
    ts = x->bare ? x->op.ts : e->timestamp;
    /* the earliest and the latest, not the first and the last: a stream
       out of order (a record before its file's header) stays inside them */
    if (ts < a->c.first_ts) a->c.first_ts = ts;
    if (ts > a->c.last_ts) a->c.last_ts = ts;
    if ((++a->c.events & 0xFFF) == 0 && scope && scope->progress) progress(scope, e, x);
    if (x->bare) {                        /* what the steps below do with it, from x alone */
      if (x->bare == BARE_STACK) { rc = walk_event(a, x); continue; }
      if (x->bare == BARE_OP) rc = memory_event(a, &x->op, &x->ids);
      if (rc == 0 && hsi_stacks_advance(a->st, ts) < 0) rc = HS_ENOMEM;
      continue;
    }
    /* Every step below reads events time_only (stage) knows of: a step
       that reads other events must be named there too, or their events
       come here bare.  End first: the instance is found while the
       procmap still has it alive. */
    if (is_process_end(e) && (rc = process_end(a, e)) != 0) break;
    if (hsi_procmap_feed(a->pm, e) < 0) { rc = HS_ENOMEM; break; }
    if ((e->flags & HS_EVF_KERNEL) && e->hook == 0x0301) {   /* a Process Start: its pid's instance before */
      /* had no End: it ended the tick before (counted as an End) */
      uint32_t lost = hsi_procmap_take_lost_end(a->pm);
      if (lost) { a->c.process_ends++; hsi_life_exited(a->lt, lost); }
    }
    if (d == 1) rc = memory_event(a, &x->op, &x->ids);
    else if (d < 0) a->c.memory_damaged++;
    if (rc == 0 && hsi_stacks_feed(a->st, e) < 0) rc = HS_ENOMEM;
  }
  if (pf) hsi_prefetch_counts_get(pf, &a->ring);
  hsi_prefetch_close(pf);                /* the attribution and the checks are ours again */
  if (sc->at) a->c.ids_missing = hsi_attrib_counts_get(sc->at)->no_stack;
  hsi_attrib_free(sc->at);
  hsi_stacks_on_clock(a->st, NULL, NULL);  /* sc goes */
  free((void *)sc->clocks);
  hsi_line_free(sc);
  if (rc == 0 && n == HS_ENOMEM) rc = n;
  else if (rc == 0 && n < 0) {
    snprintf(err, errlen, "reading the trace failed: %s", hs_reader_error(r));
    rc = n;
  }
  if (rc == 0 && hsi_stacks_finish(a->st) < 0) rc = HS_ENOMEM;
  free(a->groups);                       /* every target is settled: they are read no more */
  a->groups = NULL;
  a->ngroups = a->capgroups = 0;
  if (rc) {
    if (rc == HS_ENOMEM) snprintf(err, errlen, "out of memory while analysing the trace");
    if (rc == HSI_ESTOPPED) snprintf(err, errlen, "stopped by a time limit");
    hsi_analysis_free(a);
    return rc;
  }
  if (a->c.events) hsi_life_set_span(a->lt, a->c.first_ts, a->c.last_ts);
  a->c.records_no_process = count_no_process(a->lt);
  hsi_lcheck_finish(a->lc, a->pm);
  if (hsi_procmap_settle(a->pm) != 0) {  /* the eras of instances whose images changed meaning */
    snprintf(err, errlen, "out of memory while analysing the trace");
    hsi_analysis_free(a);
    return HS_ENOMEM;
  }
  a->scope = NULL;                       /* the caller's arrays are not kept */
  hsi_life_trim(a->lt);
  *out = a;
  return 0;
}

void hsi_analysis_free(hsi_analysis *a) {
  if (!a) return;
  hsi_life_free(a->lt);
  hsi_lcheck_free(a->lc);
  hsi_stacks_free(a->st);
  hsi_syms_free(a->sy);
  hsi_procmap_free(a->pm);
  free(a->groups);
  hsi_line_free(a);
}

hsi_procmap *hsi_analysis_procmap(const hsi_analysis *a) { return a->pm; }
hsi_stacks *hsi_analysis_stacks(const hsi_analysis *a) { return a->st; }
hsi_life *hsi_analysis_life(const hsi_analysis *a) { return a->lt; }
hsi_syms *hsi_analysis_syms(const hsi_analysis *a) { return a->sy; }
const hsi_analysis_counts *hsi_analysis_counts_get(const hsi_analysis *a) { return &a->c; }
int hsi_analysis_threaded(const hsi_analysis *a) { return a->threaded; }
const hsi_prefetch_counts *hsi_analysis_ring(const hsi_analysis *a) { return &a->ring; }
const hs_logfile *hsi_analysis_logfile(const hsi_analysis *a) { return &a->lf; }
const hsi_lcheck *hsi_analysis_layouts(const hsi_analysis *a) { return a->lc; }
