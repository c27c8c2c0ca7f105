/*
** pdb_int.h -- the PDB reader's insides, shared by its files:
**   pdb_msf.c   the MSF 7.00 container: superblock, directory, streams
**   pdb_dbi.c   the PDB info stream, /names, the DBI stream (modules,
**               section contributions, section headers)
**   pdb_sym.c   publics, module procedures, inline sites, IPI/TPI names
**   pdb_line.c  C13 line tables (DEBUG_S_LINES, FILECHKSMS, INLINEELINES)
**   pdb.c       open/close and the address lookup
** Not for use outside these files.
*/
#ifndef HS_PDB_INT_H
#define HS_PDB_INT_H
#include <stddef.h>
#include <stdint.h>
#include "heapscript.h"
#include "mapfile.h"
#include "pdb.h"
#include "chunks.h"

/* Caps on counts read from the file: far above anything a linker writes,
   low enough that a damaged count cannot make us allocate gigabytes. */
#define PDB_MAX_STREAMS   (1u << 20)
#define PDB_MAX_SECTIONS  65535u
#define PDB_MAX_MODULES   65535u

/* One stream, contiguous in memory: a view into the mapping when its
   blocks follow each other in the file (lld writes most that way), else a
   copy assembled from its blocks (owned, freed at close). */
typedef struct pdb_stream {
  const uint8_t *p;
  uint32_t n;
  uint32_t index;     /* MSF stream number, for messages */
  uint8_t *owned;
} pdb_stream;

typedef struct pdb_msf {
  const uint8_t *data;
  uint64_t size;
  uint32_t bs;            /* block size */
  uint32_t nblocks;
  uint32_t nstreams;
  uint8_t *dir;           /* the directory, assembled (owned) */
  uint32_t dirlen;
  uint64_t dir_at;         /* file offset of the directory's first byte */
  const uint8_t *sizes;   /* nstreams u32 stream sizes inside dir */
  uint32_t *first;        /* per stream: index of its first block number in dir's block list */
  const uint8_t *blocks;  /* the block numbers inside dir */
  const hsi_map *map;     /* the file's map, whose lost pages a stream checks; NULL in memory */
} pdb_msf;

/* A procedure (S_GPROC32/S_LPROC32 and the _ID forms), top level only.
   Here and in pdb_line, pdb_contrib, pdb_public the rva comes first:
   hsi_pdb_upper searches all of them. */
typedef struct pdb_proc {
  uint32_t rva, len;
  uint32_t rec;           /* offset of the record in the module stream */
  uint32_t end;           /* offset of its S_END */
  const char *name;
  uint16_t seg;
  uint32_t off;
} pdb_proc;

/* One row of a module line table.  Sorted by rva; a terminal row ends a
   line block (addresses at or past it have no line until the next row). */
typedef struct pdb_line {
  uint32_t rva;
  uint32_t line;          /* 24 bits in the file */
  uint32_t file;          /* offset into the module's FILECHKSMS subsection */
  uint32_t seq;           /* order of appearance: the sort key after rva */
} pdb_line;
#define PDB_LINE_END 0xFFFFFFFFu   /* line value of a terminal row */

typedef struct pdb_module {
  uint16_t stream;        /* 0xFFFF: none */
  uint32_t symbytes, c11bytes, c13bytes;
  uint32_t dbi_off;       /* offset of its ModInfo in the DBI stream (messages) */
  const char *name;
  int state;              /* 0 unread, 1 read, -1 damaged/absent */
  pdb_stream s;
  pdb_proc *procs; uint32_t nprocs;
  pdb_line *lines; uint32_t nlines;
  const uint8_t *chk; uint32_t nchk;     /* FILECHKSMS subsection */
  struct pdb_inlinee *inls; uint32_t ninls;   /* DEBUG_S_INLINEELINES rows, sorted by id */
  const uint8_t *xmi; uint32_t nxmi;     /* DEBUG_S_CROSSSCOPEIMPORTS: ids this module uses from others */
  const uint8_t *xme; uint32_t nxme;     /* DEBUG_S_CROSSSCOPEEXPORTS: (local id, IPI index) pairs */
} pdb_module;

typedef struct pdb_inlinee { uint32_t id, chk, line, seq; } pdb_inlinee;

typedef struct pdb_contrib { uint32_t rva, end; uint16_t mod; } pdb_contrib;

typedef struct pdb_public {
  uint32_t rva;
  uint32_t flags;
  uint16_t seg;
  uint32_t off;
  const char *name;
} pdb_public;

/* Type index -> record offset, for TPI and IPI (built on first need). */
typedef struct pdb_types {
  int state;              /* 0 unread, 1 read, -1 absent/damaged */
  pdb_stream s;
  uint32_t begin, end;    /* type index range */
  uint32_t *off;          /* end-begin offsets into s */
} pdb_types;

/* Inlinee id -> composed name cache (open addressing). */
/* key: the IPI index, or (module index + 1) << 32 | id for a module's
   cross-module id (high bit set), which means something else in each module */
typedef struct pdb_iname { uint64_t key; const char *name; } pdb_iname;


struct hsi_pdb {
  char *path;
  hsi_map map;
  int mapped;
  pdb_msf msf;
  char err[HS_ERRLEN];
  hs_guid guid;
  uint32_t info_age, dbi_age;
  int has_dbi;
  uint16_t machine;
  /* the named streams we use */
  uint32_t names_stream;      /* /names, 0 if none */
  pdb_stream names;           /* read at open when present */
  /* DBI */
  pdb_stream dbi;
  uint16_t gsi_stream, psi_stream, symrec_stream;
  uint32_t *sec_rva; uint32_t nsec;     /* section index - 1 -> VirtualAddress */
  pdb_module *mods; uint32_t nmods;
  pdb_contrib *contribs; uint32_t ncontribs;
  /* publics, on first need */
  int pub_state;
  pdb_stream symrec, psi;
  pdb_public *pubs; uint32_t npubs;
  /* every procedure, on first need of hsi_pdb_function */
  int allprocs_state;
  pdb_proc **allprocs; uint32_t nallprocs;
  /* type streams */
  pdb_types tpi, ipi;
  pdb_iname *inames; uint32_t ninames, capinames;
  hsi_chunks arena;
};

/* pdb_msf.c */
int  hsi_msf_open(pdb_msf *m, const uint8_t *data, uint64_t size, const char *name, char *err, size_t errlen);
void hsi_msf_close(pdb_msf *m);
int  hsi_msf_exists(const pdb_msf *m, uint32_t idx);
/* 0, or HS_EFORMAT with the message (file offsets) in err. */
int  hsi_msf_stream(pdb_msf *m, uint32_t idx, pdb_stream *s, const char *name, char *err, size_t errlen);
void hsi_stream_free(pdb_stream *s);
/* The file offset of byte off of stream idx (for messages). */
uint64_t hsi_msf_fileoff(const pdb_msf *m, uint32_t idx, uint32_t off);

/* pdb.c: records the first damage met after open ("PATH: offset 0x..: ..."). */
void hsi_pdb_damage(hsi_pdb *p, const pdb_stream *s, uint32_t off, const char *fmt, ...)
#ifdef __GNUC__
  __attribute__((format(printf, 4, 5)))
#endif
  ;
void *hsi_pdb_alloc(hsi_pdb *p, size_t n);     /* arena, freed at close */
/* In an array sorted by rva whose elements start with their u32 rva: how
   many start at or before rva (the index after the last such element). */
uint32_t hsi_pdb_upper(const void *v, uint32_t n, size_t size, uint32_t rva);
/* section:offset -> rva; 0 with *ok = 0 when the section is unknown */
uint32_t hsi_pdb_rva(const hsi_pdb *p, uint16_t seg, uint32_t off, int *ok);

/* pdb_dbi.c */
int  hsi_pdb_read_info(hsi_pdb *p, char *err, size_t errlen);
int  hsi_pdb_read_dbi(hsi_pdb *p, char *err, size_t errlen);
const char *hsi_pdb_string(hsi_pdb *p, uint32_t off);    /* /names; NULL if none */
int hsi_pdb_module_at(const hsi_pdb *p, uint32_t rva);  /* module index or -1 */

/* pdb_sym.c */
int  hsi_pdb_load_module(hsi_pdb *p, uint32_t mi);       /* 1 usable, 0 not */
int  hsi_pdb_load_publics(hsi_pdb *p);                   /* 1 usable, 0 not */
const pdb_proc *hsi_pdb_proc_at(const pdb_module *m, uint32_t rva);
const pdb_public *hsi_pdb_public_at(const hsi_pdb *p, uint32_t rva);
/* Inline frames of proc pr at rva, innermost first: names and start rvas,
   lines filled by pdb_line.c.  Returns the count written. */
int  hsi_pdb_inline_frames(hsi_pdb *p, pdb_module *m, const pdb_proc *pr, uint32_t rva,
                           hsi_pdb_frame *out, int cap);
void hsi_pdb_free_types(hsi_pdb *p);

/* pdb_line.c */
int  hsi_pdb_load_lines(hsi_pdb *p, pdb_module *m);       /* parses the C13 subsections */
/* line and file at rva from the module's line table; 1 if found */
int  hsi_pdb_line_at(hsi_pdb *p, pdb_module *m, uint32_t rva, uint32_t *line, const char **file);
const char *hsi_pdb_chk_file(hsi_pdb *p, pdb_module *m, uint32_t chkoff);
/* base line and file of an inlinee from DEBUG_S_INLINEELINES; 1 if found */
int  hsi_pdb_inlinee_line(hsi_pdb *p, pdb_module *m, uint32_t inlinee, uint32_t *line, uint32_t *chk);

#endif
