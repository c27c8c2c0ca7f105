/*
** symmap.h -- function names from a symbol map file, for images without
** a PDB (the symbol layer, sym.h, asks the PDB first).  A map names the
** functions of each module by RVA, so that a frame prints as
** `ntdll.dll!RtlAllocateHeap+0x4c` instead of `ntdll.dll+0x9d1ec`.
**
** The format (text, UTF-8, one symbol a line):
**
**   # comment (a line whose first non-blank character is '#')
**   MODULE  RVA  SIZE  NAME
**
**   MODULE  the image's file name as the trace has it ("ntdll.dll"),
**           compared case-insensitively; a name without a '.' also
**           matches that name plus any extension ("ntdll" = "ntdll.dll")
**   RVA     hex (an optional 0x), the function's start relative to the
**           image base
**   SIZE    hex, the function's length in bytes; 0 means "up to the next
**           symbol of the module" (the last one then has no end)
**   NAME    the rest of the line, trailing blanks removed; may contain
**           spaces ("operator new")
**
** Fields are separated by spaces or tabs; blank lines are ignored; CRLF
** line ends are accepted.  Two symbols of one module at the same RVA:
** the first in the file wins.  An address resolves to the symbol with the
** greatest RVA at or below it, if the address is inside that symbol
** (rva <= a < rva + size, when size is not 0).
**
** Memory: one map owns one text arena and two flat arrays; nothing is
** allocated per symbol.  Names returned by the lookups stay valid until
** hsi_symmap_free().
*/
#ifndef HS_SYMMAP_H
#define HS_SYMMAP_H

#include "heapscript.h"

/* Caps on what a map may hold (a damaged or hostile file fails cleanly). */
#define HSI_SYMMAP_MAXLINE   4096u      /* bytes in one line */
#define HSI_SYMMAP_MAXSYMS   (1u << 26) /* symbols in one map */
#define HSI_SYMMAP_MAXFILE   ((size_t)1 << 30)

typedef struct hsi_symmap hsi_symmap;

/*
** Parse the map file at `path`.  Returns 0 and *sm, or a negative HS_E*
** code with *sm NULL and a message in err ("PATH:LINE: what was
** expected") when err is not NULL: HS_EIO (cannot read), HS_EFORMAT (a
** line that does not parse), HS_ENOMEM.
*/
int hsi_symmap_load(hsi_symmap **sm, const char *path, char *err, size_t errlen);
/* The same from memory; `name` is used in messages. */
int hsi_symmap_load_mem(hsi_symmap **sm, const char *text, size_t len, const char *name,
                        char *err, size_t errlen);
void hsi_symmap_free(hsi_symmap *sm);

size_t hsi_symmap_count(const hsi_symmap *sm);       /* symbols kept */
size_t hsi_symmap_nmodules(const hsi_symmap *sm);
/* Module i (0-based) as written in the file, and its symbol count; NULL past the end. */
const char *hsi_symmap_module(const hsi_symmap *sm, size_t i, size_t *nsyms);

/*
** The function containing `rva` in `module` (matched as the format
** says).  Returns 1, *name (valid until free) and *off = rva - start;
** 0 if the map knows nothing there.
*/
int hsi_symmap_lookup(const hsi_symmap *sm, const char *module, uint64_t rva,
                      const char **name, uint64_t *off);

/* Symbols the map has for `module` (matched as the format says); 0 if none. */
size_t hsi_symmap_module_symbols(const hsi_symmap *sm, const char *module);

#endif
