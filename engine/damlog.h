/*
** damlog.h -- the damage reports of a run as the user sees them: one
** wording for a report's line, and the reports kept once each.  A
** rewound reader, and the analysis pass's own reader of the same files,
** report the same damage again; a file damaged all through reports it
** hundreds of thousands of times.  Each distinct report (file, offset,
** buffer and wording) is kept once, the first HSI_DAMLOG_MAX of them with
** their wording, the rest counted; the CLI and the scripts print the
** kept ones and one line for the rest.
*/
#ifndef HS_DAMLOG_H
#define HS_DAMLOG_H
#include <stdio.h>
#include "heapscript.h"

#define HSI_DAMLOG_MAX 4096

typedef struct hsi_damage_rec {
  int file;
  uint32_t buffer;
  uint64_t pos;
  char *what;
} hsi_damage_rec;

typedef struct hsi_damlog {
  hsi_damage_rec *e;        /* the kept reports, in the order met */
  size_t n, cap;
  uint64_t total;           /* every report, repeats included */
  uint64_t unlisted;        /* distinct reports past the kept ones */
  uint64_t *seen;           /* every distinct report's key, 0 empty */
  size_t nseen, capseen;
} hsi_damlog;

/* 1: new and kept (show it), 2: new and only counted, 0: seen before.
   No Lua and no output: the reader calls it, from any one thread. */
int hsi_damlog_add(hsi_damlog *l, const hs_damage *d);
/* Every kept report of `from` added to `to` (as hsi_damlog_add), each
   as file `file`, or as its own file when `file` is -1. */
void hsi_damlog_add_all(hsi_damlog *to, const hsi_damlog *from, int file);
/* Free what l holds and empty it. */
void hsi_damlog_free(hsi_damlog *l);

/* The one wording of a skipped damage report, the same whatever ran:
   "heapscript: PATH: offset 0x.. (buffer N): damaged: expected WHAT; skipped". */
void hsi_damage_line(FILE *o, const char *path, const hs_damage *d);
/* Every kept report of l as hsi_damage_line (paths: one per file), then
   the count of the rest, if any.  Returns how many distinct reports. */
size_t hsi_damlog_print(FILE *o, const hsi_damlog *l, const char *const *paths);
/* The count of the distinct reports not kept, if any (path: the first
   file's): "heapscript: PATH: N more damage reports not listed (only the
   first 4096 are kept)". */
void hsi_damlog_more(FILE *o, const hsi_damlog *l, const char *path);

/* A command's damage on stderr: each kept report as it comes
   (hsi_damage_stderr, a reader's on_damage with this as its ud), the
   count of the rest when the walk is over (hsi_damage_stderr_done, which
   frees the log).  paths: the reader's files. */
typedef struct hsi_damage_out {
  char *const *paths;
  hsi_damlog log;
} hsi_damage_out;
void hsi_damage_stderr(void *ud, const hs_damage *d);
/* o emptied for paths, and *ro the reader's options that feed it. */
void hsi_damage_stderr_opts(hsi_damage_out *o, char *const *paths, hs_reader_opts *ro);
/* The distinct reports met (kept and counted), after the line for those
   not kept; o is freed. */
uint64_t hsi_damage_stderr_done(hsi_damage_out *o);
#endif
