/*
** sym_path.h -- symbol paths and finding the PDB of an image, the way the
** Windows debuggers and symchk do: by the PDB file name, GUID and age that
** the image's RSDS record holds (the trace repeats it in KernelTraceControl
** DbgID_RSDS, procmap.h).
**
** A symbol path is `_NT_SYMBOL_PATH` syntax: elements separated by ';'.
**
**   DIR                     a plain directory: DIR/name.pdb (and DIR read
**                           as a store when it is one, see below)
**   srv*DIR                 a symbol store
**   srv*DIR1*DIR2*URL       each local store, left to right; URLs ignored
**   symsrv*DLL*DIR*...      as srv*, the DLL name skipped
**   cache*DIR               a downstream cache: read as a store
**
** A store (SymStore layout) keeps name.pdb at DIR/name.pdb/KEY/name.pdb,
** KEY being the GUID as 32 uppercase hex digits in the Windows order
** (Data1, Data2, Data3 as numbers, then the 8 bytes of Data4) followed by
** the age in hex.  A store with a file index2.txt in its root is two-tier:
** DIR/na/name.pdb/KEY/name.pdb, "na" being the first two characters of
** the file name.  Both layouts are tried (the two-tier one first when
** index2.txt is there), and a file.ptr in the KEY directory is followed.
** Names are tried as recorded and in lower case (Linux file systems
** compare case).  http:// and https:// elements are parsed and kept so
** that a caller can say, once, that there is no network: nothing is ever
** downloaded.  Compressed store entries (name.pd_) are not read.
**
** Nothing here allocates per lookup except the strings of a result.
*/
#ifndef HS_SYM_PATH_H
#define HS_SYM_PATH_H

#include <stddef.h>
#include <stdint.h>
#include "heapscript.h"

enum { HSI_SP_DIR = 1, HSI_SP_STORE, HSI_SP_URL };

typedef struct hsi_sympath_entry {
  int kind;                  /* HSI_SP_* */
  char *path;                /* directory or URL, as written (blanks trimmed) */
} hsi_sympath_entry;

typedef struct hsi_sympath {
  hsi_sympath_entry *e;
  size_t n, cap;
  size_t nurls;              /* URL elements (ignored when searching) */
} hsi_sympath;

/* Append the elements of `text` (NULL or "" adds nothing) to sp, which
   starts zeroed.  Repeated elements are kept once.  0 or HS_ENOMEM. */
int hsi_sympath_parse(hsi_sympath *sp, const char *text);
/* Append one entry (e.g. the trace's directory). 0 or HS_ENOMEM. */
int hsi_sympath_add(hsi_sympath *sp, int kind, const char *path, size_t len);
void hsi_sympath_free(hsi_sympath *sp);

/* The SymStore key of (guid, age): 32 + up to 8 hex digits and a NUL. */
#define HSI_SYMKEY_LEN 41
void hsi_sym_key(const hs_guid *g, uint32_t age, char out[HSI_SYMKEY_LEN]);

/* The file name of a recorded PDB path ("C:\b\x.pdb" and "/b/x.pdb" -> "x.pdb"). */
const char *hsi_sym_basename(const char *path);

/* What a search found.  Status, best first. */
enum {
  HSI_PDB_FOUND = 1,         /* a PDB whose GUID and age match */
  HSI_PDB_BADAGE,            /* a PDB with the GUID, another age */
  HSI_PDB_BADGUID,           /* a PDB of that name with another GUID */
  HSI_PDB_DAMAGED,           /* a file was there but does not read as a PDB */
  HSI_PDB_UNREADABLE,        /* a file was there but could not be opened or mapped, or is not a
                                regular file, or is compressed (NAME.pd_) */
  HSI_PDB_MISSING,           /* no file anywhere */
  HSI_PDB_NOID               /* the trace gives no PDB identity for the image */
};

struct hsi_pdb;

typedef struct hsi_pdb_search {
  int status;                /* HSI_PDB_* */
  struct hsi_pdb *pdb;       /* the open PDB when FOUND (the caller owns it) */
  char path[1024];           /* FOUND: the file used; else the file the status is about ("" if MISSING) */
  char detail[HS_ERRLEN];    /* BADAGE/BADGUID: what the file has; DAMAGED: the reader's message */
  hs_guid found_guid;        /* BADAGE/BADGUID: the file's identity */
  uint32_t found_age;
  unsigned tried;            /* files looked for */
} hsi_pdb_search;

/*
** Find and open the PDB `recorded` (the name as the RSDS record has it,
** possibly a full Windows or POSIX path) with (guid, age): through the
** entries of sp in order, then the recorded path itself.  Fills *res;
** returns res->status.  Only files whose identity matches are kept open.
*/
int hsi_pdb_find(const hsi_sympath *sp, const char *recorded, const hs_guid *guid, uint32_t age,
                 hsi_pdb_search *res);

#endif
