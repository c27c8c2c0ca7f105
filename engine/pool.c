/*
** pool.c -- the Pool events, kernel group 0x0E (ETL-FORMAT.md §6.3): one
** layout row per (opcode, version) for the table-driven engine in
** memev.c, and how pool tags and POOL_TYPE values are shown.
**
** No trace we have contains these events, so every layout is documented
** only.  Tags: [D: source] documented only, [I] inference.
*/
#include <stdio.h>
#include <string.h>
#include "heapscript.h"
#include "memop.h"
#include "memev.h"
#include "memev_tab.h"

/* ETW_POOL_EVENT, naturally aligned, which here equals packed
   [D: ntwmi, dissect v2]. */

/* PoolAlloc 32 / PoolFree 34: PoolType, Tag, NumberOfBytes, Entry: 8+2P (24/16) */
static const field pool_ev[] = {
  F("pool_type", K_U32,  0, 0, M_POOLTYPE, S_POOLTYPE),
  F("tag",       K_U32,  0, 4, M_TAG,      S_TAG),
  F("size",      K_SIZE, 0, 8, M_SIZE,     S_DEC),
  F("addr",      K_PTR,  1, 8, M_ADDR,     S_HEX),   /* Entry */
};
/* PoolAllocSession 33 / PoolFreeSession 35: + SessionId: 12+2P */
static const field pool_ev_session[] = {
  F("pool_type", K_U32,  0, 0, M_POOLTYPE, S_POOLTYPE),
  F("tag",       K_U32,  0, 4, M_TAG,      S_TAG),
  F("size",      K_SIZE, 0, 8, M_SIZE,     S_DEC),
  F("addr",      K_PTR,  1, 8, M_ADDR,     S_HEX),
  F("session",   K_U32,  2, 8, M_SESSION,  S_DEC),
};

/* 36-47 have no template anywhere; the System Informer ntwmi tags every one
   ETW_POOL_EVENT [D: ntwmi hook comments].  Read provisionally with the 32
   layout, + SessionId for the session variants [I]; no lifetime effect. */
static const layout pool_tab[] = {
  { 32, 2, HSI_OP_POOL_ALLOC, PID_HDR, 0, 0, "PoolAlloc",        FL(pool_ev) },
  { 33, 2, HSI_OP_POOL_ALLOC, PID_HDR, 0, 0, "PoolAllocSession", FL(pool_ev_session) },
  { 34, 2, HSI_OP_POOL_FREE,  PID_HDR, 0, 0, "PoolFree",         FL(pool_ev) },
  { 35, 2, HSI_OP_POOL_FREE,  PID_HDR, 0, 0, "PoolFreeSession",  FL(pool_ev_session) },
  { 36, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "AddPoolPage",               FL(pool_ev) },
  { 37, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "AddPoolPageSession",        FL(pool_ev_session) },
  { 38, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "BigPoolPage",               FL(pool_ev) },
  { 39, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "BigPoolPageSession",        FL(pool_ev_session) },
  { 40, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "PoolSnapDCStart",           FL(pool_ev) },
  { 41, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "PoolSnapDCEnd",             FL(pool_ev) },
  { 42, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "BigPoolSnapDCStart",        FL(pool_ev) },
  { 43, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "BigPoolSnapDCEnd",          FL(pool_ev) },
  { 44, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "PoolSnapSessionDCStart",    FL(pool_ev_session) },
  { 45, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "PoolSnapSessionDCEnd",      FL(pool_ev_session) },
  { 46, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "SessionBigPoolSnapDCStart", FL(pool_ev_session) },
  { 47, 2, HSI_OP_HEAP_OTHER, PID_HDR, 0, L_PROV, "SessionBigPoolSnapDCEnd",   FL(pool_ev_session) },
};

const hsi_memev_table hsi_pool_table = { 0x0E, pool_tab, COUNT(pool_tab) };

void hsi_pool_tag(uint32_t tag, char out[5]) {
  int i;
  for (i = 0; i < 4; i++) {
    unsigned ch = (tag >> (8 * i)) & 0xFF;
    out[i] = ch >= 0x20 && ch < 0x7F ? (char)ch : '.';
  }
  out[4] = 0;
}

/* POOL_TYPE [D: wdm; ntwmi]: base = v & 7, session 0x20, nx 0x200, and ETW
   ORs 0x10000000 (ETW_POOLTRACE_BIGPOOL_MASK) into big-pool events [I]. */
#define POOL_SESSION 0x20u
#define POOL_NX      0x200u
#define POOL_BIG     0x10000000u

char *hsi_pool_type_str(uint32_t type, char *out, size_t cap) {
  static const char *const base[8] = {
    "NonPaged", "Paged", "NonPagedMustSucceed", "DontUseThisType",
    "NonPagedCacheAligned", "PagedCacheAligned", "NonPagedCacheAlignedMustS", "PoolType7"
  };
  const char *b = base[type & 7];
  uint32_t rest = type & ~(7u | POOL_SESSION | POOL_NX | POOL_BIG);
  char x[16] = "";
  if (!out || cap == 0) return out;
  if (rest) snprintf(x, sizeof x, "|0x%lx", (unsigned long)rest);
  if ((type & POOL_NX) && strncmp(b, "NonPaged", 8) == 0)   /* NonPagedNxCacheAligned, as wdm.h */
    snprintf(out, cap, "NonPagedNx%s%s%s%s", b + 8, type & POOL_SESSION ? "Session" : "",
             type & POOL_BIG ? "|Big" : "", x);
  else
    snprintf(out, cap, "%s%s%s%s%s", b, type & POOL_NX ? "Nx" : "", type & POOL_SESSION ? "Session" : "",
             type & POOL_BIG ? "|Big" : "", x);
  return out;
}
