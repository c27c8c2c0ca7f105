/*
** pdb.h -- a reader of program databases (MSF 7.00 PDB files), the
** symbols that Microsoft's linker and lld-link write beside a Windows
** image: function names, their code ranges, source lines and inline
** sites, for an address given as an RVA in the image.
**
** The file is mapped, never read whole.  Opening reads the MSF superblock,
** the stream directory, the PDB info stream and the DBI headers; publics,
** each module's symbols and lines are read on first need.  Damage met
** after open is never fatal: it is recorded once (hsi_pdb_error) and the
** address resolves as far as the undamaged parts allow.
**
** Identity.  An image's RSDS record (CodeView debug directory entry)
** holds a GUID and an age.  The GUID is the PDB info stream's; the age to
** compare is the DBI stream's age, not the info stream's.  Checked with
** llvm-pdbutil and llvm-readobj on the real PDBs beside their images:
** crash_with_srcsrv.pdb (pdbstr added a source-server stream after the
** link) has info age 4, DBI age 1, and crash.exe's RSDS says 1; lld-link's
** softokn3.pdb and WriteArgument.pdb have info age 2, DBI age 1, RSDS 1;
** where both agree (MSVC without later edits) the RSDS age is that one.
** hsi_pdb_identity returns the DBI age (the info age without a DBI stream).
** llvm-pdbutil dump --summary prints the info age.
**
** Frames, as llvm-symbolizer --inlining (LLVM 14's native reader) shows
** them, which tests/cli/test_pdb_oracle.sh checks on every function:
**  - the outermost frame is the top-level procedure (S_GPROC32/S_LPROC32)
**    of the module that the section contributions give the address to,
**    named as the procedure record names it (undecorated: "Class::method",
**    no arguments); where identical functions were folded to one address,
**    the first in that module's symbols;
**  - with no procedure there (a module without /Zi, assembler, FASTLINK),
**    the nearest public symbol at or before the address, named as the PDB
**    has it: decorated ("?f@@YAXH@Z", and "_f" for x86 C functions, which
**    llvm-symbolizer shows as "f"); start_rva is the public's;
**  - inline levels from S_INLINESITE, names from the IPI (LF_FUNC_ID with
**    its scope, LF_MFUNC_ID with its class from the TPI: "ns::f",
**    "Class<int>::m"), also for MSVC's cross-module ids (high bit set);
**    an inline frame's start_rva is the start of the inline site's code
**    range that holds the address (llvm-symbolizer prints no offsets for
**    PDBs: this is ours);
**  - lines from the module's C13 line table for the outermost frame, from
**    the inlinee's line (DEBUG_S_INLINEELINES) plus the binary
**    annotations' line program for inline frames (the line of the last
**    row at or before the address, as LLVM 15 and the debuggers read it;
**    llvm-symbolizer 14 names the next row's inside a row, see pdb_sym.c).
** Where a function's line subsection has blocks of several files, lines
** follow the rows' own addresses; llvm-symbolizer 14 answers there from
** whichever block it sorted first (see pdb_line.c), so there the oracle
** test compares names with it and lines with the line table as
** llvm-pdbutil dump -l prints it.  Folded functions sharing code: the
** first procedure and the first line subsection of the module count.
*/
#ifndef HS_PDB_H
#define HS_PDB_H
#include <stddef.h>
#include <stdint.h>
#include "heapscript.h"           /* hs_guid, HS_E* codes */

typedef struct hsi_pdb hsi_pdb;

typedef struct hsi_pdb_frame {
  const char *name;     /* function or inlinee name; valid until hsi_pdb_close */
  uint32_t start_rva;   /* start of the function (for the outermost frame) or of the inline
                           site's code range containing the address; offset = rva - start_rva */
  const char *file;     /* source file as the PDB names it, NULL if unknown */
  uint32_t line;        /* 0 if unknown */
  int from_public;      /* the name is a public symbol's (no procedure holds the address):
                           decorated as the linker saw it (x86: "_f", "_f@8", "@f@8") */
} hsi_pdb_frame;

/* 0, or a negative HS_E* code with "PATH: offset 0x...: what was expected"
   in err.  The file is mapped, not read whole. */
int  hsi_pdb_open(hsi_pdb **p, const char *path, char *err, size_t errlen);
/* The same over bytes the caller keeps alive until hsi_pdb_close; name is
   used in messages. */
int  hsi_pdb_open_mem(hsi_pdb **p, const void *data, size_t len, const char *name, char *err, size_t errlen);
void hsi_pdb_close(hsi_pdb *p);
/* The identity an image's RSDS record must match: the info stream's GUID
   and the DBI stream's age (see above). */
void hsi_pdb_identity(const hsi_pdb *p, hs_guid *guid, uint32_t *age);
/* Frames at rva: the innermost inline level first, the containing function last.
   Returns how many were written (0: nothing known). Damage met lazily is never fatal:
   it is recorded once (hsi_pdb_error) and the address resolves as far as it can.
   With fewer than cap levels, the innermost ones are kept and the function is
   always last.  A frame whose function is unknown but whose line is has name "". */
int  hsi_pdb_lookup(hsi_pdb *p, uint64_t rva, hsi_pdb_frame *out, int cap);
/* Inline frames' lines as llvm-symbolizer 14 reads the annotations (for
   every PDB of the process, from then on): for the oracle test alone. */
void hsi_pdb_lines_llvm14(int on);
/* "" or "PATH: offset 0x...: what was expected" (the first damage met). */
const char *hsi_pdb_error(const hsi_pdb *p);

/* ---- Added after the first interface (listings, for tests and tools) ---- */

/* IMAGE_FILE_MACHINE_* of the DBI header (0x14c x86, 0x8664 x64; 0 if none):
   x86 C publics carry a leading '_' that a caller may want to drop. */
uint16_t hsi_pdb_machine(const hsi_pdb *p);

/* Both ages, for messages that explain a mismatch: the info stream's and
   the DBI stream's (0 when the PDB has no DBI stream). */
void hsi_pdb_ages(const hsi_pdb *p, uint32_t *info_age, uint32_t *dbi_age);

typedef struct hsi_pdb_sym {
  const char *name;     /* valid until hsi_pdb_close */
  uint32_t rva;         /* 0xFFFFFFFF: in no known section */
  uint32_t size;        /* functions: code size; publics: 0 */
  uint16_t segment;     /* as the PDB says: section number and offset */
  uint32_t offset;
  uint32_t flags;       /* publics: CV_PUBSYMFLAGS (1 code, 2 function, 4 managed, 8 MSIL) */
} hsi_pdb_sym;

/* The public symbols (S_PUB32), sorted by rva.  Reads them on first call. */
uint32_t hsi_pdb_public_count(hsi_pdb *p);
int hsi_pdb_public(hsi_pdb *p, uint32_t i, hsi_pdb_sym *s);      /* 1, or 0 past the end */
/* Every top-level procedure of every module, sorted by rva.  Reads all
   modules on first call: for tools and tests, lookups never need it. */
uint32_t hsi_pdb_function_count(hsi_pdb *p);
int hsi_pdb_function(hsi_pdb *p, uint32_t i, hsi_pdb_sym *s);
#endif
