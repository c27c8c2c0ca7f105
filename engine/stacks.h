/*
** stacks.h -- call stacks: decoding StackWalk records and extended-data
** stack items, matching them to the events they belong to, and interning
** them into small integer ids (ETL-FORMAT.md §4, §6.4).
**
** Interning: identical frame sequences get one id.  Id 0
** (HSI_STACK_UNKNOWN) is "no stack"; real stacks are 1..count.
**
** Matching: the caller feeds every event in timestamp order.  Before
** feeding an event that should get a stack it calls hsi_stacks_want with
** the event's timestamp, pid, tid and its own record index ("target").
** StackWalk parts that arrive later for (EventTimeStamp, thread) are
** attached to that target and joined kernel part first, then user part.
** The joined stack is interned and delivered as (target, stack id)
** through the callback, or collected in the result array when no callback
** is set:
**   - at once, when the stack has reached user space (a user part, or a
**     part whose outermost frame is a user address) and no stack-key
**     reference of the target is still waiting: parts come kernel first,
**     then user (ETL-FORMAT.md §6.4 rule 4), so nothing can follow.  A
**     kernel part arriving after the user part of the same event would
**     find no target (counted unmatched); the corpus has none;
**   - else when the target leaves the window (kernel-only stacks), or
**     when its last waiting key is defined, or at hsi_stacks_finish().
** Targets that get no stack are not delivered: they keep
** HSI_STACK_UNKNOWN, and so do targets with a key reference that was
** never defined (orphans).
**
** Window: a target can receive parts while the newest timestamp fed is
** at most `window` ticks after its own (default HSI_STACKS_WINDOW, one
** second at 10 MHz) and while at most `max_live` targets are open
** (default HSI_STACKS_MAX_LIVE; the oldest leaves first).  Targets still
** waiting for a stack key stay beyond the window until the key is defined
** or hsi_stacks_finish().  Cost: about 50 bytes per open target plus a
** queue of at most 4 x 8 bytes per open target; stacks cost their frames
** once per distinct stack.
*/
#ifndef HS_STACKS_H
#define HS_STACKS_H

#include "heapscript.h"
#include "procmap.h"

#define HSI_STACK_UNKNOWN 0u

/* One second at the 10 MHz QPC of Windows 10+ (and of relogged traces);
   the latest stack seen on the corpus came 97 ms after its event.  Set
   it from hs_time_freq() when the clock differs. */
#define HSI_STACKS_WINDOW   10000000
#define HSI_STACKS_MAX_LIVE (1u << 18)

typedef struct hsi_stacks hsi_stacks;

typedef struct hsi_stack_counts {
  uint64_t targets;          /* hsi_stacks_want calls */
  uint64_t delivered;        /* targets delivered with a stack */
  uint64_t joined;           /* ... whose stack was joined from several parts */
  uint64_t orphaned;         /* targets left unknown: a key reference never resolved */
  uint64_t op32;             /* StackWalk op 32 records */
  uint64_t key_refs;         /* ops 37/38 and STACK_KEY items */
  uint64_t key_defs;         /* ops 34/35/36 */
  uint64_t ext_stacks;       /* STACK_TRACE32/64 items */
  uint64_t ext_keys;         /* STACK_KEY32/64 items */
  uint64_t matched;          /* parts (op 32, key refs, ext items) given to a target */
  uint64_t matched_notid;    /* ... of which matched on timestamp (+pid) alone */
  uint64_t unmatched;        /* parts for which no target was in the window */
  uint64_t ambiguous;        /* parts with several candidate targets */
  uint64_t walked;           /* targets looked at one by one (a thread-less chain of several processes) */
  uint64_t key_resolved;     /* references resolved by a definition at or after them */
  uint64_t key_orphaned;     /* references never resolved (counted by finish) */
  uint64_t key_defs_unused;  /* definitions no reference was waiting for */
  uint64_t damaged;          /* StackWalk records or items too short for their layout */
} hsi_stack_counts;

typedef struct hsi_stack_match {
  uint64_t target;
  uint32_t stack;
} hsi_stack_match;

typedef void (*hsi_stack_fn)(void *ud, uint64_t target, uint32_t stack);

hsi_stacks *hsi_stacks_new(void);
void hsi_stacks_free(hsi_stacks *st);

/* ---- interning */

/* Id of frames[0..n) (innermost first), adding it if new; 0 for n == 0
   and when out of memory (hsi_stacks_nomem then says so). */
uint32_t hsi_stacks_intern(hsi_stacks *st, const uint64_t *frames, size_t n);
/* Frames of a stack id, *n set; valid until the next call that adds a
   stack (intern, feed, finish) or free.  NULL and *n = 0 for id 0. */
const uint64_t *hsi_stacks_frames(const hsi_stacks *st, uint32_t id, size_t *n);
uint32_t hsi_stacks_count(const hsi_stacks *st);
int hsi_stacks_nomem(const hsi_stacks *st);

/* ---- matching */

void hsi_stacks_on_match(hsi_stacks *st, hsi_stack_fn fn, void *ud);
/* fn (NULL: none) is told of each part matched to a target, when it is
   matched: before the stack is whole and given (a kernel part may wait
   for its user part until the target leaves the window). */
typedef void (*hsi_part_fn)(void *ud, uint64_t target);
void hsi_stacks_on_part(hsi_stacks *st, hsi_part_fn fn, void *ud);
/* The time of the event a StackWalk names (its payload's EventTimeStamp,
   on its file's clock) as targets are registered: on the first file's
   clock when the caller moves the events of a file with another clock
   there (source.h, hsi_rebase); NULL: as it is. */
typedef int64_t (*hsi_ets_fn)(void *ud, const hs_event *walk, int64_t ets);
/* Does ev begin with the EventTimeStamp, StackProcess and StackThread of
   the event it names: a StackWalk (group 0x18 op 32) or a key reference
   (37, 38)?  (The key definitions, 34-36, begin with the key.) */
static inline int hsi_stacks_names_event(const hs_event *ev) {
  return (ev->flags & HS_EVF_KERNEL) && (ev->hook == 0x1820 || ev->hook == 0x1825 || ev->hook == 0x1826);
}
void hsi_stacks_on_clock(hsi_stacks *st, hsi_ets_fn fn, void *ud);
/* window: ticks of the trace clock; max_live: live targets kept. */
void hsi_stacks_set_window(hsi_stacks *st, int64_t window, uint32_t max_live);
/*
** Register a target.  tid HS_NOID (PERFINFO events): matched on the
** timestamp and, when both are known, the pid.  0 or HS_ENOMEM.
*/
int hsi_stacks_want(hsi_stacks *st, int64_t ts, uint32_t pid, uint32_t tid, uint64_t target);
/*
** Feed one event.  Returns 1 if it was a StackWalk record (group 0x18)
** or carried stack ext items, 0 otherwise, HS_ENOMEM.  Ext items attach
** to the target registered for this very event (want before feed).
*/
int hsi_stacks_feed(hsi_stacks *st, const hs_event *ev);
/* Is ev a StackWalk: a kernel one (group 0x18), or a classic one of the
   class (hsi_stacks_walk_provider)? */
int hsi_stacks_walk_provider(const hs_guid *g);
static inline int hsi_stacks_walk(const hs_event *ev) {
  return (ev->flags & HS_EVF_KERNEL) ? (ev->hook >> 8) == 0x18 : hsi_stacks_walk_provider(&ev->provider);
}
/* Is ev a StackWalk or has it ext items (would hsi_stacks_feed read
   more of it than its time)? */
static inline int hsi_stacks_wants(const hs_event *ev) { return (ev->flags & HS_EVF_EXT) || hsi_stacks_walk(ev); }
/* What hsi_stacks_feed does with an event hsi_stacks_wants does not
   want (a heap event, most events of other providers): only its time
   moves the window. */
int hsi_stacks_advance(hsi_stacks *st, int64_t ts);
/* The newest target waits out of the slots for the StackWalk right after
   its event (stacks.c, the hold); the answers are the same either way.
   On by default; tests turn it off to compare. */
void hsi_stacks_set_direct(hsi_stacks *st, int on);
/* End of the trace: deliver what is left; count orphaned references. */
int hsi_stacks_finish(hsi_stacks *st);
/* Results collected when no callback is set, in delivery order. */
const hsi_stack_match *hsi_stacks_results(const hsi_stacks *st, size_t *n);
const hsi_stack_counts *hsi_stacks_counts(const hsi_stacks *st);

/* Kernel-space address for a frame of width ptr (4 or 8) (§6.4 [I]). */
int hsi_addr_is_kernel(uint64_t addr, int ptr);

/* Frame text is the symbol layer's (sym.h): hsi_syms_format. */

#endif
