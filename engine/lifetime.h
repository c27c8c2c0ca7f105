/*
** lifetime.h -- allocation lifetimes from decoded memory events.
**
** The tracker is fed hsi_memop records (memop.h) in timestamp order,
** each with the process instance it belongs to (procmap.h: a pid plus
** its start), and turns heap blocks, committed VirtualAlloc ranges and
** kernel pool entries into allocation records, following
** shared/docs/LIFETIMES.md.  The records live in one columnar store
** owned by the tracker (no allocation per record); engine/query.c reads
** the columns to answer window, grouping and time-series questions.
**
** A record costs 56 bytes of columns: kind, flags, reason, source (4 x
** u8), instance (u32), key (u64), addr (u64), size (u64), alloc and free
** time (2 x i64), alloc and free stack (2 x u32).  Column arrays grow by
** half when full, so a store holds 56..84 bytes per record while filling
** and 56 after hsi_life_trim().  Apart from the records, memory is held
** only for what is live: a heap or pool block costs one 8-byte slot in
** the open-addressed pointer map of its heap (kept between 1/8 and 3/4
** full, so 11..64 bytes per live block; a map halves as its blocks are
** freed and is dropped at HeapDestroy and process end); a committed
** VirtualAlloc range, a reservation or a known-decommitted range costs a
** 32-byte tree node; a piece split off a committed range whose alloc
** stack is still unknown costs 8 bytes until the stack is set.  Per
** process, heap and thread there is a small fixed cost.  Events that end
** or skip records add nothing, so the memory grows with records, never
** with events.
**
** Semantics decided here where LIFETIMES.md is silent (the reasons are
** in lifetime.c's opening comment):
**  - "heap records on a thread" for the moving-realloc rule are the heap
**    events that change lifetimes (create, alloc, realloc, free,
**    destroy); HSI_OP_HEAP_OTHER (lock, subsegment, ...) is not one.  The
**    Alloc(new) and Free(old) may come in either order.
**  - A record ended by a moving-realloc Free gets reason REALLOC and its
**    successor the REALLOC flag once the summary is recognised.
**  - An alloc at a (heap, address) or pool entry that is already live
**    means its free was lost: the old record ends at the new alloc with
**    reason HSI_END_REUSED, and a counter says how often.
**  - A free matching nothing is a double free when the block was seen
**    freed before (a fixed-size cache of recent frees; no record), else
**    a block allocated before the trace (a record: HSI_RF_BEFORE).
**  - Before-trace records have alloc time HSI_TS_BEFORE.  Their size is
**    known for a heap ReAlloc (OldAllocSize), a VirtualAlloc decommit and
**    a pool free with a non-zero size; unknown (HSI_RF_SIZE_UNKNOWN, size
**    0) for a heap Free.
**  - VirtualAlloc: pages are "known" once reserved, committed or
**    decommitted in the trace; a decommit or a MEM_RELEASE makes a
**    before-trace record (class AOFI) for the pages of its range not
**    known, with the size the event carries.  A release inside a
**    reservation made in the trace makes none.  Rundown (DCStart) regions are reservations whose commit
**    state is unknown; they make no records.
**  - Process end ends the instance's heap blocks and committed ranges,
**    not pool entries (pool belongs to the kernel).
**  - Timestamps going backwards are counted and treated as the latest
**    timestamp seen, so a record never ends before it starts.
*/
#ifndef HS_LIFETIME_H
#define HS_LIFETIME_H

#include "memop.h"

#ifndef HSI_TS_BEFORE
#define HSI_TS_BEFORE INT64_MIN
#endif
#ifndef HSI_TS_NEVER
#define HSI_TS_NEVER  INT64_MAX

/* The largest size a record has: 16 TiB, more than any allocation, commit
   or pool block can be.  A larger one is a damaged event's (its layout
   check says so); taken as this, the sums of every record's bytes stay
   within int64_t (Lua's integers) for up to half a million of them. */
#define HSI_SIZE_MAX (1ull << 44)
#endif

#define HSI_NOREC 0xFFFFFFFFu
#define HSI_OP_KINDS (HSI_OP_SNAPSHOT + 1)

/* Record kinds; filters take masks (1u << kind). */
enum { HSI_KIND_HEAP, HSI_KIND_VIRTUAL, HSI_KIND_POOL, HSI_KIND_COUNT };

/* Why a record ended. */
enum {
  HSI_END_NONE,          /* still outstanding at the end of the trace */
  HSI_END_FREE,          /* heap Free, pool Free */
  HSI_END_REALLOC,       /* heap ReAlloc (lone or in place), or the Free of a moving realloc */
  HSI_END_DESTROY,       /* HeapDestroy of its heap */
  HSI_END_PROCESS_END,   /* its process ended with it outstanding */
  HSI_END_DECOMMIT,      /* MEM_DECOMMIT covering it */
  HSI_END_RELEASE,       /* MEM_RELEASE of its reservation */
  HSI_END_REUSED,        /* its address was allocated again: its end was lost */
  HSI_END_COUNT
};

/* Record flags. */
#define HSI_RF_BEFORE       0x01u  /* allocated before the trace (alloc time HSI_TS_BEFORE) */
#define HSI_RF_SIZE_UNKNOWN 0x02u  /* size not known (heap Free of a before-trace block); size 0 */
#define HSI_RF_REALLOC      0x04u  /* started by a ReAlloc (the new block) */
#define HSI_RF_SPLIT        0x08u  /* a piece left by a partial decommit/release of a committed range */
#define HSI_RF_PUBLIC       0x0Fu  /* higher bits are the tracker's own */

/* Which stack of a record. */
#define HSI_STACK_ALLOC 0
#define HSI_STACK_FREE  1

/*
** The columns: record i is (kind[i], inst[i], ...).  Pointers stay valid
** until the next call that may add records (hsi_life_feed,
** hsi_life_process_end, hsi_life_trim); values of existing records
** change only through those calls and hsi_life_set_stack.
**   key: heap records: the heap handle; pool records: the tag in the low
**        32 bits (first character in the low byte) and the pool type in
**        the high 32 bits; VirtualAlloc records: in the low 32 bits the
**        instance whose images name the alloc stack when it is not the
**        record's (VirtualAllocEx: the caller's StackWalk, the target's
**        memory), in the high 32 bits the same for the free stack
**        (VirtualFreeEx), else 0.
**   source: heap SourceId (memop source, clamped to 255), else 0.
**   ts_free: HSI_TS_NEVER while outstanding; stacks: 0 = unknown.
*/
typedef struct hsi_recs {
  size_t n;
  uint8_t *kind, *flags, *reason, *source;
  uint32_t *inst;
  uint64_t *key, *addr, *size;
  int64_t *ts_alloc, *ts_free;
  uint32_t *stk_alloc, *stk_free;
} hsi_recs;

#define HSI_REC_TAG(rs, i)      ((uint32_t)((rs)->key[i] & 0xFFFFFFFFu))
#define HSI_REC_POOLTYPE(rs, i) ((uint32_t)((rs)->key[i] >> 32))

/* Counters, for reports and tests. */
typedef struct hsi_life_stats {
  uint64_t ops[HSI_OP_KINDS];       /* memops fed, by HSI_OP_* */
  uint64_t records;                 /* records made (all kinds) */
  uint64_t before_records;          /* ... of them allocated before the trace */
  uint64_t ignored;                 /* memops with no lifetime effect (address 0, size 0, no flags) */
  uint64_t out_of_order;            /* memops with a timestamp before the previous one */
  /* heap */
  uint64_t heap_free_unknown;       /* Free of a block never seen: a before-trace record */
  uint64_t heap_realloc_unknown;    /* ReAlloc of a block never seen: a before-trace record */
  uint64_t heap_double_free;        /* Free/ReAlloc of a block seen freed already: no record */
  uint64_t heap_realloc_summary;    /* ReAllocs recognised as moving-realloc summaries, skipped */
  uint64_t heap_realloc_lone;       /* other ReAllocs (in place or alone) */
  uint64_t heap_realloc_inplace;    /* ... of them with the same old and new address */
  uint64_t heap_alloc_over_live;    /* Alloc/ReAlloc of an address already live (HSI_END_REUSED) */
  uint64_t heap_destroyed;          /* blocks ended by HeapDestroy */
  /* VirtualAlloc */
  uint64_t vm_commit_dup;           /* commits that added nothing (all pages committed already) */
  uint64_t vm_commit_dup_bytes;     /* bytes committed again, over all commits */
  uint64_t vm_splits;               /* committed ranges cut by a partial decommit/release */
  uint64_t vm_decommit_unknown;     /* before-trace pieces made by decommits */
  uint64_t vm_decommit_unknown_bytes;
  uint64_t vm_decommit_nothing;     /* decommits of known, uncommitted pages only */
  uint64_t vm_release_unknown;      /* releases of regions never seen: before-trace records */
  uint64_t vm_release_unknown_bytes;
  uint64_t vm_size0_unknown;        /* size-0 release/decommit with no known reservation at its base */
  uint64_t vm_reserve_over_commit;  /* reservations over committed ranges (HSI_END_REUSED) */
  /* pool */
  uint64_t pool_free_unknown;       /* Free of an entry never seen: a before-trace record */
  uint64_t pool_double_free;
  uint64_t pool_alloc_over_live;
  /* processes */
  uint64_t process_ends;            /* hsi_life_process_end calls */
  uint64_t process_end_ended;       /* records ended by them */
  uint64_t heap_owner_heaps;        /* heaps probed by hsi_life_heap_owner */
} hsi_life_stats;

/*
** What one call did.  Records started by the call (their alloc event is
** this memop, so its stack is their alloc stack) are first..first+count-1.
** `ended` lists the records the call ended, before-trace records it made
** included (their free event is this memop); it stays valid until the
** next call on the tracker.
*/
typedef struct hsi_life_res {
  uint32_t first, count;
  const uint32_t *ended;
  size_t nended;
} hsi_life_res;

typedef struct hsi_life hsi_life;

hsi_life *hsi_life_new(void);
void hsi_life_free(hsi_life *lt);

/*
** Feed one memop of process instance `instance` (for VirtualAlloc, the
** instance of the payload pid).  `res` may be NULL.  Returns 0, or
** HS_ENOMEM; after HS_ENOMEM the tracker refuses every further feed.
*/
int hsi_life_feed(hsi_life *lt, const hsi_memop *op, uint32_t instance, hsi_life_res *res);

/* The process instance ended at ts: what it still holds ends (HSI_END_PROCESS_END). */
int hsi_life_process_end(hsi_life *lt, uint32_t instance, int64_t ts, hsi_life_res *res);

/*
** Attach a stack id (which: HSI_STACK_ALLOC or HSI_STACK_FREE).  Pieces
** split off a committed range before its alloc stack was known get it
** too.  HS_EARG for a bad record or `which`.
*/
int hsi_life_set_stack(hsi_life *lt, uint32_t rec, int which, uint32_t id);
/* VirtualAlloc record rec's stack `which` (HSI_STACK_ALLOC or
   HSI_STACK_FREE) is named by instance inst's images (hsi_rec_stack_inst);
   pieces split off later keep the alloc stack's. */
void hsi_life_set_stack_inst(hsi_life *lt, uint32_t rec, int which, uint32_t inst);

const hsi_recs *hsi_life_recs(const hsi_life *lt);
const hsi_life_stats *hsi_life_stats_get(const hsi_life *lt);

/*
** The whole trace for window questions: first and last timestamp fed
** (memops and process ends), unless set with hsi_life_set_span (the
** caller knows the trace's first and last event).  0, 0 when empty.
*/
void hsi_life_span(const hsi_life *lt, int64_t *first, int64_t *last);
void hsi_life_set_span(hsi_life *lt, int64_t first, int64_t last);

/* Does record r count in outstanding bytes (and so in peaks)?  Not one
   allocated before the trace, nor one of unknown size. */
static inline int hsi_rec_counts(const hsi_recs *R, uint32_t r) {
  return !(R->flags[r] & (HSI_RF_BEFORE | HSI_RF_SIZE_UNKNOWN));
}

/* Record r's stack (which: HSI_STACK_ALLOC or HSI_STACK_FREE) and the
   time it was taken, when its frames' images are looked up. */
static inline uint32_t hsi_rec_stack(const hsi_recs *R, uint32_t r, int which) {
  return which == HSI_STACK_FREE ? R->stk_free[r] : R->stk_alloc[r];
}
static inline int64_t hsi_rec_stack_ts(const hsi_recs *R, uint32_t r, int which) {
  return which == HSI_STACK_FREE ? R->ts_free[r] : R->ts_alloc[r];
}
/* The instance whose images name that stack's frames: the record's, but
   for a VirtualAlloc made or freed from another process (key, above: the
   alloc stack's instance in its low half, the free stack's in its high
   half, 0 for the record's own). */
static inline uint32_t hsi_rec_stack_inst(const hsi_recs *R, uint32_t r, int which) {
  uint32_t inst = 0;
  if (R->kind[r] == HSI_KIND_VIRTUAL)
    inst = (uint32_t)(which == HSI_STACK_FREE ? R->key[r] >> 32 : R->key[r]);
  return inst ? inst : R->inst[r];
}

/* Records of a kind made so far (0 for a kind that is none). */
size_t hsi_life_kind_records(const hsi_life *lt, int kind);

/* Does [t1, t2] hold every time fed (memops and process ends)?  Then it
   holds every record's alloc and free times too (timestamps going
   backwards are taken as the latest), so every record is in it. */
int hsi_life_holds(const hsi_life *lt, int64_t t1, int64_t t2);

/*
** The peak of outstanding bytes of every record of `kind` (-1: of every
** kind) over [t1, t2], as query.c's sweep would find it, kept as the
** events came: returns 1 and sets *peak, *peak_ts (t1 when nothing is
** outstanding), and *nrecs the records of that kind, which the caller's
** selection must be.  Returns 0 when [t1, t2] does not hold every event
** fed (the sweep must run).
*/
int hsi_life_peak(const hsi_life *lt, int kind, int64_t t1, int64_t t2, size_t *nrecs,
                  uint64_t *peak, int64_t *peak_ts);

/*
** The instance holding the live heap block (heap, addr), when exactly one
** does; 0 (no instance) when none or several.  For a heap free or
** realloc whose event names no process (no ids, no StackWalk): the block
** it frees says whose it is.  Costs a probe per live instance's heap of
** that handle (the heaps of instances that exited leave: hsi_life_exited).
*/
uint32_t hsi_life_heap_owner(hsi_life *lt, uint64_t heap, uint64_t addr);
/* The process of `instance` ended: its records stay as they are (an exit
   frees nothing), but a free without ids is no longer its
   (hsi_life_heap_owner passes over its blocks). */
void hsi_life_exited(hsi_life *lt, uint32_t instance);

/* The pid of an instance as its memops gave it, HS_NOID if never fed. */
uint32_t hsi_life_pid(const hsi_life *lt, uint32_t instance);

/* Live heap and pool blocks and committed ranges now tracked. */
size_t hsi_life_live(const hsi_life *lt);
/* Bytes held by the tracker (records, maps, trees, scratch). */
size_t hsi_life_memory(const hsi_life *lt);
/* Give back spare column capacity (after the last event). */
void hsi_life_trim(hsi_life *lt);

const char *hsi_kind_name(int kind);     /* "heap", "virtual", "pool"; "?" */
const char *hsi_end_name(int reason);    /* "none", "free", ...; "?" */

#endif
