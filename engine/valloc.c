/*
** valloc.c -- the Memory (PageFault) group 0x02 events that track memory
** (ETL-FORMAT.md §6.2): VirtualAlloc / VirtualFree and their rundown, and
** the HeapRange events the HeapRange logger writes with the same hooks.
** One layout row per (opcode, version) for the table-driven engine in
** memev.c, and the names of the MEM_* flags.
**
** No trace we have contains these events, so every layout is documented
** only.  Tags: [D: source] documented only, [I] inference.
*/
#include <stdio.h>
#include "heapscript.h"
#include "memop.h"
#include "memev.h"
#include "memev_tab.h"

/* VirtualAlloc 98 / VirtualFree 99 v2 (PERFINFO_VIRTUAL_ALLOC): 2P+8 (24/16)
   [D: ntwmi, pv, dissect, libtrace].  ProcessId is the target process. */
static const field valloc[] = {
  F("addr",  K_PTR,  0, 0, M_ADDR,  S_HEX),
  F("size",  K_SIZE, 1, 0, M_SIZE,  S_DEC),
  F("pid",   K_U32,  2, 0, M_PID,   S_DEC),
  F("flags", K_U32,  2, 4, M_FLAGS, S_MEMFLAGS),
};
/* VirtualAllocDCStart 128 / DCEnd 129: dissect's manifest adds
   CommitSizeInBytes (3P+8); PerfView registers them without a payload.
   We read the 98 layout and take CommitSize when present [I]. */
static const field valloc_dc[] = {
  F("addr",  K_PTR,  0, 0, M_ADDR,  S_HEX),
  F("size",  K_SIZE, 1, 0, M_SIZE,  S_DEC),
  F("pid",   K_U32,  2, 0, M_PID,   S_DEC),
  F("flags", K_U32,  2, 4, M_FLAGS, S_MEMFLAGS),
  OPT("commit_size", K_SIZE, 2, 8, M_OLD_SIZE, S_DEC),
};
/* HeapRangeRundown 100 v2: HeapHandle, HRFlags, HRPid, HRRangeCount (P+12),
   then the ranges, which are not decoded [D: dissect, ntwmi] */
static const field hr_rundown_v2[] = {
  F("heap",        K_PTR, 0, 0, M_HEAP,  S_HEX),
  F("flags",       K_U32, 1, 0, M_FLAGS, S_HEX),
  F("pid",         K_U32, 1, 4, M_PID,   S_DEC),
  F("range_count", K_U32, 1, 8, M_NONE,  S_DEC),
};
/* HeapRangeRundown 100 v3: + Reserved u32 (P+16) */
static const field hr_rundown_v3[] = {
  F("heap",        K_PTR, 0, 0,  M_HEAP,  S_HEX),
  F("flags",       K_U32, 1, 0,  M_FLAGS, S_HEX),
  F("pid",         K_U32, 1, 4,  M_PID,   S_DEC),
  F("range_count", K_U32, 1, 8,  M_NONE,  S_DEC),
  F("reserved",    K_U32, 1, 12, M_NONE,  S_HEX),
};
/* HeapRangeCreate 101: HeapHandle, FirstRangeSize, HRCreateFlags: 2P+4 */
static const field hr_create[] = {
  F("heap",  K_PTR,  0, 0, M_HEAP,  S_HEX),
  F("size",  K_SIZE, 1, 0, M_SIZE,  S_DEC),
  F("flags", K_U32,  2, 0, M_FLAGS, S_HEX),
};
/* HeapRangeReserve 102 / Release 103: HeapHandle, HRAddress, HRSize: 3P */
static const field hr_range[] = {
  F("heap", K_PTR,  0, 0, M_HEAP, S_HEX),
  F("addr", K_PTR,  1, 0, M_ADDR, S_HEX),
  F("size", K_SIZE, 2, 0, M_SIZE, S_DEC),
};
/* HeapRangeDestroy 104: HeapHandle (ETW_HEAP_EVENT_COMMON, as heap.c's
   Destroy): P */
static const field hr_destroy[] = {
  F("heap", K_PTR, 0, 0, M_HEAP, S_HEX),
};

static const layout mem_tab[] = {
  { 98,  2, HSI_OP_VALLOC, PID_PAYLOAD, 0, 0, "VirtualAlloc", FL(valloc) },
  { 99,  2, HSI_OP_VFREE,  PID_PAYLOAD, 0, 0, "VirtualFree",  FL(valloc) },
  /* HeapRange: written with PageFault hooks by the HeapRange logger [D: ntwmi] */
  { 100, 2, HSI_OP_HEAP_OTHER, PID_PAYLOAD, 0, 0, "HeapRangeRundown", FL(hr_rundown_v2) },
  { 100, 3, HSI_OP_HEAP_OTHER, PID_PAYLOAD, 0, 0, "HeapRangeRundown", FL(hr_rundown_v3) },
  { 101, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapRangeCreate",  FL(hr_create) },
  { 102, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapRangeReserve", FL(hr_range) },
  { 103, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapRangeRelease", FL(hr_range) },
  { 104, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, 0, "HeapRangeDestroy", FL(hr_destroy) },
  { 128, 2, HSI_OP_VALLOC_RUNDOWN, PID_PAYLOAD, 0, 0, "VirtualAllocDCStart", FL(valloc_dc) },
  { 129, 2, HSI_OP_VALLOC_RUNDOWN, PID_PAYLOAD, 0, 0, "VirtualAllocDCEnd",   FL(valloc_dc) },
};

const hsi_memev_table hsi_valloc_table = { 0x02, mem_tab, COUNT(mem_tab) };

/* MEM_* [D: winnt].  0x4000 is also MEM_REPLACE_PLACEHOLDER; on these
   events it is shown as DECOMMIT. */
static const struct { uint32_t bit; const char *name; } mem_flags[] = {
  { 0x1, "COALESCE_PLACEHOLDERS" }, { 0x2, "PRESERVE_PLACEHOLDER" },
  { 0x1000, "COMMIT" }, { 0x2000, "RESERVE" }, { 0x4000, "DECOMMIT" }, { 0x8000, "RELEASE" },
  { 0x40000, "RESERVE_PLACEHOLDER" }, { 0x80000, "RESET" }, { 0x100000, "TOP_DOWN" },
  { 0x200000, "WRITE_WATCH" }, { 0x400000, "PHYSICAL" }, { 0x800000, "ROTATE" },
  { 0x1000000, "RESET_UNDO" }, { 0x20000000, "LARGE_PAGES" }, { 0x80000000u, "4MB_PAGES" },
};

char *hsi_mem_flags_str(uint32_t flags, char *out, size_t cap) {
  size_t i, n = 0;
  uint32_t rest = flags;
  int w;
  if (!out || cap == 0) return out;
  out[0] = 0;
  if (flags == 0) { snprintf(out, cap, "0"); return out; }
  for (i = 0; i < COUNT(mem_flags) && n < cap; i++) {
    if (!(flags & mem_flags[i].bit)) continue;
    rest &= ~mem_flags[i].bit;
    w = snprintf(out + n, cap - n, "%s%s", n ? "|" : "", mem_flags[i].name);
    if (w < 0) break;
    n += (size_t)w;
  }
  if (rest && n < cap) snprintf(out + n, cap - n, "%s0x%lx", n ? "|" : "", (unsigned long)rest);
  return out;
}
