/*
** memev_tab.h -- the row format of the memory-event layout tables, shared
** by the engine (memev.c) and the four files that hold one provider's
** table each (heap.c, valloc.c, pool.c, snapshot.c).  Internal to those
** five files: the rest of the engine goes through memev.h.
**
** A table is data, one row per (opcode, version), so that the first real
** trace can confirm or correct a layout by editing a row: decoding,
** encoding (the synthetic-trace writer) and the `dump` description all
** read the same rows, and hsi_memev_selfcheck() proves every row packed
** and contiguous at both pointer widths.
**
** Tags as in the format doc: [D: source] documented only, [I] inference.
*/
#ifndef HS_MEMEV_TAB_H
#define HS_MEMEV_TAB_H

#include <stddef.h>
#include <stdint.h>

/* Field kinds.  PTR and SIZE (SIZE_T) are both P bytes, P = the record's
   pointer width; they differ only in how they are shown. */
enum { K_PTR = 1, K_SIZE, K_U32, K_U16, K_U8 };

/* Where a field goes in hsi_memop (M_NONE: shown by describe only). */
enum { M_NONE = 0, M_HEAP, M_ADDR, M_SIZE, M_OLD_ADDR, M_OLD_SIZE, M_FLAGS,
       M_TAG, M_POOLTYPE, M_SESSION, M_SOURCE, M_PID, M_LAST };

/* How describe shows a field. */
enum { S_DEC = 0, S_HEX, S_SOURCE, S_MEMFLAGS, S_TAG, S_POOLTYPE, S_CALLER };

typedef struct field {
  const char *name;        /* key in the describe output */
  uint8_t kind;            /* K_* */
  uint8_t np, k;           /* offset = np * P + k */
  uint8_t dest;            /* M_* */
  uint8_t show;            /* S_* */
  uint8_t opt;             /* 1: may be missing at the end of the payload */
} field;

#define F(name, kind, np, k, dest, show)   { name, kind, np, k, dest, show, 0 }
#define OPT(name, kind, np, k, dest, show) { name, kind, np, k, dest, show, 1 }

/* Which process an event belongs to. */
enum { PID_HDR = 0,           /* header pid (HS_NOID without one) */
       PID_PAYLOAD,           /* the payload's ProcessId (the target process) */
       PID_HDR_ELSE_PAYLOAD };

#define L_PROV 0x01  /* provisional layout: every field optional, never damaged */
#define L_BLOB 0x02  /* M_SIZE bytes of opaque data follow the fields */

typedef struct layout {
  uint16_t op;             /* opcode (kernel) or event id (snapshot provider) */
  uint8_t version;         /* first event version this row describes */
  uint8_t kind;            /* HSI_OP_* */
  uint8_t pid;             /* PID_* */
  uint8_t pad8;            /* tail bytes after the fields at P = 8 (required and written) */
  uint8_t flags;           /* L_* */
  const char *name;
  const field *f;
  uint8_t nf;
} layout;

/* A row's fields; a row may also give `NULL, 0`: a known event whose
   layout is unknown (decoded as its kind with header data only). */
#define FL(a) a, (uint8_t)(sizeof a / sizeof a[0])
#define COUNT(a) (sizeof a / sizeof a[0])

/* One provider's table: rows sorted by opcode, then version ascending. */
typedef struct hsi_memev_table {
  int group;                  /* kernel hook group, or HSI_MEMEV_SNAPSHOT */
  const layout *tab;
  size_t n;
} hsi_memev_table;

extern const hsi_memev_table hsi_heap_table;      /* heap.c: group 0x10 */
extern const hsi_memev_table hsi_valloc_table;    /* valloc.c: group 0x02 */
extern const hsi_memev_table hsi_pool_table;      /* pool.c: group 0x0E */
extern const hsi_memev_table hsi_snapshot_table;  /* snapshot.c: Heap-Snapshot */

#endif
