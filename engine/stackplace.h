/*
** stackplace.h -- one stack id, more than one program.
**
** A stack id (stacks.h) names a sequence of return addresses, whatever
** process they came from.  Which code an address is depends on the
** images loaded in the process: two programs built for one base (32-bit
** executables at 0x400000, 64-bit ones at 0x140000000 without ASLR, or
** two ASLR bases that happen to agree) give equal addresses for different
** functions.  Grouped by id alone, their records would be added together
** and named after one of them.
**
** hsi_stack_keys gives each record of a selection the key to group its
** stack by: the id when the images holding its frames are those of the
** first record in the selection with that id, and id + k * 2^32 for the
** k-th other set of images.  The images of a (stack id, process
** instance) are looked up once, at the time of its first record in the
** selection, as a Stack names its frames (lua_stack.c); an image is
** known by its file name, base, size, checksum and link timestamp, so
** the same DLL at the same base in many processes is one placement.  Only an id
** seen in more than one instance is looked up at all, and only when one
** of its user frames lies where the trace's images disagree (two images
** of different identity, or sizes, over one address in any processes at
** any times), and processes with the same images there share one
** lookup; kernel frames are named from the system process whatever
** the process, so they never part two.  A frame where one process has
** an image and another none is taken as the same code.  Within one
** instance, a record in another era (procmap.h: an image loaded over a
** range another image of it held before) is looked up as if it were
** another instance: one stack id in two eras is two placements when a
** frame lies where the images changed.
*/
#ifndef HS_STACKPLACE_H
#define HS_STACKPLACE_H

#include <stddef.h>
#include <stdint.h>
#include "lifetime.h"
#include "procmap.h"
#include "stacks.h"

/* keys[i] for record idx[i]'s stack (which: HSI_STACK_ALLOC or
   HSI_STACK_FREE): 0 for none.  Returns how many ids had more than one
   placement (0: every key is the stack id), or -1 when out of memory.
   With keys NULL only whether any had: 1 or 0 (it stops at the first). */
long hsi_stack_keys(const hsi_recs *R, const hsi_stacks *st, const hsi_procmap *pm,
                    const uint32_t *idx, size_t n, int which, uint64_t *keys);

/* The stack id of a key. */
static inline uint32_t hsi_stack_key_id(uint64_t key) { return (uint32_t)key; }

#endif
