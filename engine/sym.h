/*
** sym.h -- the one home of symbols: (process instance, address, time)
** into frames, and frames into text.  Stacks, the Lua classes and the
** `symbols` command ask this layer; procmap.h only says which image holds
** an address and knows nothing of names.
**
** Two sources, tried in this order for each address:
**   1. the image's PDB (pdb.h), found by the PDB name, GUID and age that
**      the trace records for the image (sym_path.h says where it looks);
**   2. a symbol map (symmap.h), for images without a PDB.
** Without either a frame is "module+0xRVA", and "0xADDRESS" outside every
** image.
**
** Laziness.  Nothing is searched or opened until an address of an image is
** asked for: a PDB is looked for once per image identity (the PDB name,
** GUID and age; or the module name, timestamp and size of an image without
** one), on the first address of it, and kept open.  Each distinct address
** is resolved once per image identity and its frames cached; a script that
** never asks for a name costs nothing (hsi_syms_stats counts the work).
**
** Frame text (docs/SYMBOLS.md):
**   module!Function+0xoff [file:line]   the function containing the address;
**                                       "+0xoff" left out when 0, " [...]"
**                                       when the PDB has no line there; the
**                                       file's base name (hsi_symframe.file
**                                       has the path as the PDB records it)
**   module!Inlinee [file:line]          an inline level; no offset: inlined
**                                       code has no start of its own
**   module+0xRVA                        no name known
**   0x7ff812345678                      no image holds the address
** An address expands to one frame per inline level, innermost first, then
** the function: as llvm-symbolizer and WPA show them.
**
** Strings handed out (hsi_symframe fields, report fields) stay valid until
** hsi_syms_free, or until the path or map changes (hsi_syms_generation).
*/
#ifndef HS_SYM_H
#define HS_SYM_H

#include "heapscript.h"
#include "procmap.h"
#include "sym_path.h"

struct hsi_symmap;

typedef struct hsi_syms hsi_syms;

/* Frame kinds. */
enum { HSI_SYMF_ADDR = 0, HSI_SYMF_RVA, HSI_SYMF_FUNC, HSI_SYMF_INLINE };

typedef struct hsi_symframe {
  int kind;                  /* HSI_SYMF_* */
  const char *module;        /* "" for HSI_SYMF_ADDR */
  const char *name;          /* FUNC/INLINE: the function; else NULL */
  const char *file;          /* source file as the PDB names it, or NULL */
  uint32_t line;             /* 0 when unknown */
  uint64_t off;              /* FUNC: offset in the function; RVA: the RVA; ADDR: the address */
} hsi_symframe;

/* Most inline levels kept for one address (deeper ones are dropped, the
   function itself always kept). */
#define HSI_SYM_MAXDEPTH 16

typedef struct hsi_sym_stats {
  uint64_t lookups;          /* hsi_syms_resolve calls */
  uint64_t addresses;        /* distinct (image identity, RVA) looked up in a PDB or
                                the map (an image with neither: its RVA, no lookup) */
  uint64_t pdb_searches;     /* image identities whose PDB was looked for */
  uint64_t pdb_opened;       /* ... and found (open) */
  uint64_t files_tried;      /* candidate paths looked at */
  uint64_t from_pdb, from_map, unnamed;   /* addresses by source */
} hsi_sym_stats;

hsi_syms *hsi_syms_new(const hsi_procmap *pm);
void hsi_syms_free(hsi_syms *sy);

/*
** Where PDBs are looked for: the elements of `path` (_NT_SYMBOL_PATH
** syntax; NULL for none), then each directory given by hsi_syms_add_dir
** (the traces' own), then the recorded path.  Setting either forgets the
** PDBs found so far and every cached frame.  0 or HS_ENOMEM.
*/
int hsi_syms_set_path(hsi_syms *sy, const char *path);
int hsi_syms_add_dir(hsi_syms *sy, const char *dir);
/* The symbol map used for images without a PDB (NULL: none); not owned.
   A different map forgets the cached frames. */
void hsi_syms_set_map(hsi_syms *sy, const struct hsi_symmap *sm);
/* Bumped whenever cached frames are forgotten: text made before is stale. */
uint32_t hsi_syms_generation(const hsi_syms *sy);

/*
** Messages a person should see once (a URL ignored: no network; a PDB
** that does not match; a damaged PDB), as "symbols: ..." without a
** newline.  Each distinct message is given once.  fn NULL: none.
*/
void hsi_syms_on_message(hsi_syms *sy, void (*fn)(void *ud, const char *msg), void *ud);

/* The frames of addr as process instance inst saw it at ts, innermost
   first: at least 1 (cap >= 1), at most cap. */
int hsi_syms_resolve(hsi_syms *sy, uint32_t inst, uint64_t addr, int64_t ts, hsi_symframe *out, int cap);

/* One frame as text; writes at most cap bytes with the NUL and returns
   the length of the whole text (as snprintf). */
size_t hsi_symframe_format(const hsi_symframe *f, char *out, size_t cap);
/* The frame as flame graphs name it (the folded format): no source file,
   no offset inside a named function, ';' written as ':'; as above. */
size_t hsi_symframe_flame(const hsi_symframe *f, char *out, size_t cap);
/* The frame's stable key, which survives ASLR and, named from a PDB or a
   map, a rebuild: "module!Function" (the module lower-cased; no offset, no
   source file), "module+0xrva" without a function, "?" for an address no
   image holds.  What scripts/baseline.lua's frame_key makes of the text. */
size_t hsi_symframe_key(const hsi_symframe *f, char *out, size_t cap);
/* Every frame of addr as text, joined by '\n'; as hsi_symframe_format. */
size_t hsi_syms_format(hsi_syms *sy, uint32_t inst, uint64_t addr, int64_t ts, char *out, size_t cap);

const hsi_sym_stats *hsi_syms_stats(const hsi_syms *sy);

/* ------------------------------------------------------------ report */

/* One image identity of the trace, as `heapscript symbols` lists it. */
typedef struct hsi_sym_image {
  const char *module;        /* the image's file name ("ntdll.dll") */
  const char *pdb_name;      /* as recorded (may be a full path); "" without an identity */
  hs_guid guid;
  uint32_t age;
  int has_id;                /* the trace gave a PDB identity (DbgID_RSDS) */
  int status;                /* HSI_PDB_* (sym_path.h) */
  const char *path;          /* FOUND: the PDB used; else the file the status is about, or "" */
  const char *detail;        /* BADAGE/BADGUID: what that file has; DAMAGED: where it is damaged */
  const char *damage;        /* FOUND: the first damage met while reading it, or "" */
  size_t map_symbols;        /* symbols the symbol map has for the module (0: none) */
  uint32_t processes;        /* process instances that loaded it */
} hsi_sym_image;

/*
** Every image identity of the procmap, in order of first load, each
** searched for now (this opens PDBs).  Returns how many; *out valid until
** the next call that changes the path or map, or free.  HS_ENOMEM.
*/
long hsi_syms_report(hsi_syms *sy, const hsi_sym_image **out);

/* Status as a word: "found", "mismatched age", ... */
const char *hsi_sym_status_name(int status);

#endif
