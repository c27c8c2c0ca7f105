/*
** sym_cmd.c -- `heapscript symbols TRACE... [--symbol-path P] [--json]`:
** every image identity of the trace (per module, not per process), its
** PDB identity, and whether a matching PDB was found, where, or why not,
** one line per image (docs/SYMBOLS.md).  It reads the trace once into a
** procmap and asks the symbol layer (sym.h), as the scripts do.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapscript.h"
#include "cliargs.h"
#include "damlog.h"
#include "info.h"
#include "term.h"
#include "procmap.h"
#include "sym.h"
#include "osfile.h"
#include "sym_cmd.h"
#include "symmap.h"

static const char *usage =
  "usage: heapscript symbols [--symbol-path P] [--symbols MAP] [--json] TRACE...\n"
  "Lists every image of the trace (once per module identity) with the PDB name, GUID and age\n"
  "the trace records for it, and whether a matching PDB was found: where, or why not\n"
  "(missing, mismatched GUID, mismatched age, damaged with the offset).\n"
  "  --symbol-path P  _NT_SYMBOL_PATH syntax: DIR;srv*STORE;cache*DIR (default: $_NT_SYMBOL_PATH);\n"
  "                   the traces' directories and the recorded PDB path are searched too.\n"
  "                   URLs are ignored: nothing is downloaded.\n"
  "  --symbols MAP    the symbol map for images without a PDB (default: TRACE.sym beside the trace)\n"
  "  --json           one JSON object: {\"images\": [...]} (fields in docs/SYMBOLS.md)\n"
  "Exit status: 0; 1 if a trace had damage that was skipped; 2 if a trace cannot be read.\n";

static void say(void *ud, const char *msg) {
  (void)ud;
  fflush(stdout);
  fprintf(stderr, "heapscript: %s\n", msg);
}


/* Directory of path ("." when it has none) into out. */
static void dir_of(const char *path, char *out, size_t cap) {
  const char *p, *slash = NULL;
  size_t n;
  for (p = path; *p; p++) if (*p == '/' || *p == '\\') slash = p;
  if (!slash) { snprintf(out, cap, "."); return; }
  n = slash == path ? 1 : (size_t)(slash - path);
  if (n >= cap) n = cap - 1;
  memcpy(out, path, n);
  out[n] = '\0';
}

/* NAME.sym beside NAME.etl (any case of .etl), else NAME.sym appended;
   one that cannot be read is said and left out, as the scripts do. */
static hsi_symmap *map_beside(const char *trace) {
  char p[1024], err[HS_ERRLEN];
  size_t n = strlen(trace);
  hsi_symmap *sm = NULL;
  if (n >= 4 && trace[n - 4] == '.' && (trace[n - 3] | 32) == 'e' && (trace[n - 2] | 32) == 't' &&
      (trace[n - 1] | 32) == 'l')
    n -= 4;
  if (n + 5 > sizeof p) return NULL;
  memcpy(p, trace, n);
  memcpy(p + n, ".sym", 5);
  switch (hsi_path_kind(p)) {
    case HSI_PATH_FILE: break;
    case HSI_PATH_NONE: return NULL;
    default:                             /* a FIFO would be opened and waited on for ever */
      fprintf(stderr, "heapscript: ignoring %s: not a regular file\n", p);
      return NULL;
  }
  if (hsi_symmap_load(&sm, p, err, sizeof err) == 0) return sm;
  fprintf(stderr, "heapscript: ignoring %s: %s\n", p, err);
  return NULL;
}

static void status_text(const hsi_sym_image *r, char *out, size_t cap) {
  switch (r->status) {
    case HSI_PDB_FOUND:
      if (*r->damage) snprintf(out, cap, "found %s (damaged in part: %s)", r->path, r->damage);
      else snprintf(out, cap, "found %s", r->path);
      break;
    case HSI_PDB_BADGUID: case HSI_PDB_BADAGE:
      snprintf(out, cap, "%s: %s has %s", hsi_sym_status_name(r->status), r->path,
               strncmp(r->detail, "it has ", 7) == 0 ? r->detail + 7 : r->detail);
      break;
    case HSI_PDB_DAMAGED: case HSI_PDB_UNREADABLE:
      snprintf(out, cap, "%s: %s", hsi_sym_status_name(r->status), r->detail);
      break;
    case HSI_PDB_NOID:
      snprintf(out, cap, "no PDB identity");
      break;
    default:
      snprintf(out, cap, "%s", hsi_sym_status_name(r->status));
      break;
  }
  if (r->status != HSI_PDB_FOUND && r->map_symbols) {
    size_t n = strlen(out);
    snprintf(out + n, cap - n, "; symbol map: %lu name%s", (unsigned long)r->map_symbols,
             r->map_symbols == 1 ? "" : "s");
  }
}

/* Columns of s: its UTF-8 characters (hsi_term_width). */
static int width(const char *s) { return (int)hsi_term_width(s, strlen(s)); }

#define COLW 24          /* module and pdb columns at most */
#define FITCAP (4 * COLW + 2)   /* COLW characters of up to 4 bytes each, and the NUL */

/* s cut to w columns (w <= COLW), its last kept character replaced by '~'
   when cut: a table line stays within a terminal whatever the names, and
   a name is cut between two characters, never inside one. */
static const char *fit(const char *s, int w, char *buf) {
  size_t n = strlen(s), k;
  if (width(s) <= w || w < 1 || w > COLW) return s;
  k = hsi_term_take(s, n, (size_t)w - 1);
  memcpy(buf, s, k);
  buf[k] = '~';
  buf[k + 1] = '\0';
  return buf;
}

/* s in a column of w characters, then the two blanks between columns
   (printf's %-*s counts bytes). */
static void cell(const char *s, int w) {
  int k = width(s);
  fputs(s, stdout);
  printf("%*s  ", k < w ? w - k : 0, "");
}

#define MINW 8           /* module and pdb columns at least, when cut for a terminal */
static const char keyhead[] = "GUID+age (symbol store key)";

/* st on lines of at most cols columns, the first after first, the rest
   after ind: cut at a space where one falls in a line's second half,
   else at the width (a path has none; hsi_term_cut). */
static void print_wrapped(const char *st, int cols, const char *first, const char *ind) {
  size_t n = strlen(st);
  while (n > 0) {
    int w = cols - (int)strlen(first), take;
    if (w < 16) w = 16;
    take = (int)hsi_term_cut(st, n, (size_t)w, (size_t)w / 2);
    printf("%s%.*s\n", first, take, st);
    st += take;
    n -= (size_t)take;
    while (*st == ' ') { st++; n--; }
    first = ind;
  }
}

/* s as it may be shown: with no control character (hsi_term_clean), in
   buf (cap bytes, the name cut there) when it had one. */
static const char *shown(const char *s, char *buf, size_t cap) {
  if (!hsi_term_dirty(s, 1)) return s;
  snprintf(buf, cap, "%s", s);
  return hsi_term_clean(buf, 1);         /* (a cell of the table is one line) */
}

/* One line per image.  On a terminal (cols > 0) too narrow for the
   widest line, each image is two lines or more: module, pdb (cut with
   '~' to fit) and key, then its status under them, wrapped. */
static void print_text(const hsi_sym_image *rep, long n, int cols) {
  long i;
  int wm = 6, wp = 3, wk = (int)strlen(keyhead), counts[8] = { 0 }, stacked = 0, widest = 0;
  char key[HSI_SYMKEY_LEN], st[2600], b1[FITCAP], b2[FITCAP], c1[1024], c2[1024];
  size_t sn;
  for (i = 0; i < n; i++) {
    int a = width(shown(rep[i].module, c1, sizeof c1)), b = width(shown(hsi_sym_basename(rep[i].pdb_name), c2, sizeof c2));
    if (a > wm) wm = a > COLW ? COLW : a;
    if (b > wp) wp = b > COLW ? COLW : b;
    if (rep[i].has_id) {               /* 32 hex digits of the GUID and 1 to 8 of the age */
      hsi_sym_key(&rep[i].guid, rep[i].age, key);
      if ((int)strlen(key) > wk) wk = (int)strlen(key);
    }
    status_text(&rep[i], st, sizeof st);
    hsi_term_clean(st, 0);
    if (width(st) > widest) widest = width(st);
  }
  if (cols > 0 && wm + 2 + wp + 2 + wk + 2 + widest > cols) {
    stacked = 1;
    while (wm + 2 + wp + 2 + wk > cols && (wm > MINW || wp > MINW)) {
      if (wm >= wp && wm > MINW) wm--;
      else wp--;
    }
  }
  if (stacked) printf("%-*s  %-*s  %s\n    status\n", wm, "module", wp, "pdb", keyhead);
  else printf("%-*s  %-*s  %-*s  %s\n", wm, "module", wp, "pdb", wk, keyhead, "status");
  for (i = 0; i < n; i++) {
    const hsi_sym_image *r = &rep[i];
    const char *m = fit(shown(r->module, c1, sizeof c1), wm, b1);
    const char *p = fit(r->has_id ? shown(hsi_sym_basename(r->pdb_name), c2, sizeof c2) : "-", wp, b2);
    if (r->has_id) hsi_sym_key(&r->guid, r->age, key);
    else snprintf(key, sizeof key, "-");
    status_text(r, st, sizeof st);
    hsi_term_clean(st, 0);
    cell(m, wm);
    cell(p, wp);
    if (stacked) {
      printf("%s\n", key);
      print_wrapped(st, cols, "    ", "    ");
    } else {
      printf("%-*s  %s\n", wk, key, st);
    }
    if (r->status >= 0 && r->status < 8) counts[r->status]++;
  }
  /* the summary: wrapped on a terminal too */
  sn = (size_t)snprintf(st, sizeof st, "%ld images: %d with their PDB", n, counts[HSI_PDB_FOUND]);
  if (counts[HSI_PDB_MISSING]) sn += (size_t)snprintf(st + sn, sizeof st - sn, ", %d missing", counts[HSI_PDB_MISSING]);
  if (counts[HSI_PDB_BADGUID] + counts[HSI_PDB_BADAGE])
    sn += (size_t)snprintf(st + sn, sizeof st - sn, ", %d mismatched", counts[HSI_PDB_BADGUID] + counts[HSI_PDB_BADAGE]);
  if (counts[HSI_PDB_DAMAGED]) sn += (size_t)snprintf(st + sn, sizeof st - sn, ", %d damaged", counts[HSI_PDB_DAMAGED]);
  if (counts[HSI_PDB_UNREADABLE])
    sn += (size_t)snprintf(st + sn, sizeof st - sn, ", %d unreadable", counts[HSI_PDB_UNREADABLE]);
  if (counts[HSI_PDB_NOID]) snprintf(st + sn, sizeof st - sn, ", %d without a PDB identity", counts[HSI_PDB_NOID]);
  if (cols > 0) print_wrapped(st, cols, "", "  ");
  else printf("%s\n", st);
}

static void jstr(const char *k, const char *v, int comma) {
  printf("\"%s\": ", k);
  hsi_json_str(stdout, v);
  if (comma) printf(", ");
}

static void print_json(const hsi_sym_image *rep, long n) {
  long i;
  printf("{\"images\": [");
  for (i = 0; i < n; i++) {
    const hsi_sym_image *r = &rep[i];
    printf("%s\n  {", i ? "," : "");
    jstr("module", r->module, 1);
    if (r->has_id) {
      char g[HS_GUID_STRLEN], key[HSI_SYMKEY_LEN];
      hs_guid_format(&r->guid, g);
      hsi_sym_key(&r->guid, r->age, key);
      printf("\"pdb\": {");
      jstr("name", r->pdb_name, 1);
      jstr("guid", g, 1);
      printf("\"age\": %lu, ", (unsigned long)r->age);
      jstr("key", key, 0);
      printf("}, ");
    } else {
      printf("\"pdb\": null, ");
    }
    jstr("status", hsi_sym_status_name(r->status), 1);
    jstr("path", r->path, 1);
    jstr("detail", r->detail, 1);
    jstr("damage", r->damage, 1);
    printf("\"map_symbols\": %lu, \"processes\": %lu}", (unsigned long)r->map_symbols, (unsigned long)r->processes);
  }
  printf("\n]}\n");
}

int hsi_sym_cmd(int argc, char **argv) {
  char err[HS_ERRLEN], dir[1024];
  const char *sympath = getenv("_NT_SYMBOL_PATH"), *mappath = NULL;
  char **files = (char **)calloc((size_t)argc + 1, sizeof *files);
  int i, n, nfiles = 0, json = 0, rc = 0;
  hs_reader *r = NULL;
  hs_reader_opts o;
  hsi_damage_out dout;
  hs_event ev;
  hsi_procmap *pm = NULL;
  hsi_syms *sy = NULL;
  hsi_symmap *sm = NULL;
  const hsi_sym_image *rep;
  long k;
  if (!files) return 2;
  for (i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (hsi_cli_trace(argc, argv, &i, files, &nfiles)) continue;
    if (strcmp(a, "--json") == 0) json = 1;
    else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) { fputs(usage, stdout); free(files); return 0; }
    else if (strcmp(a, "--symbol-path") == 0 || strcmp(a, "--symbols") == 0) {
      if (i + 1 >= argc) { free(files); return hsi_cli_usage_error("symbols", usage, "%s needs a value", a); }
      if (strcmp(a, "--symbol-path") == 0) sympath = argv[++i]; else mappath = argv[++i];
    } else if (strncmp(a, "--symbol-path=", 14) == 0) sympath = a + 14;
    else if (strncmp(a, "--symbols=", 10) == 0) mappath = a + 10;
    else { free(files); return hsi_cli_usage_error("symbols", usage, "unknown option %s", a); }
  }
  if (nfiles == 0) {
    /* `symbols --symbol-path T.etl`: the trace went as the option's value */
    const char *opt = argc >= 2 ? argv[argc - 2] : "";
    free(files);
    if (strcmp(opt, "--symbol-path") == 0 || strcmp(opt, "--symbols") == 0)
      return hsi_cli_usage_error("symbols", usage, "no trace given: %s took %s as its value", opt, argv[argc - 1]);
    return hsi_cli_usage_error("symbols", usage, "no trace given");
  }
  hsi_damage_stderr_opts(&dout, files, &o);
  if (hs_reader_open(&r, (const char *const *)files, nfiles, &o, err, sizeof err) != 0) {
    fprintf(stderr, "heapscript: %s\n", err);
    hsi_damlog_free(&dout.log);
    free(files);
    return 2;
  }
  if (!(pm = hsi_procmap_new()) || !(sy = hsi_syms_new(pm))) { rc = 2; goto done; }
  while ((n = hs_reader_next(r, &ev)) == 1)
    if (hsi_procmap_feed(pm, &ev) < 0) { n = HS_ENOMEM; break; }
  if (n < 0) {
    fprintf(stderr, "heapscript: %s\n", n == HS_ENOMEM ? "out of memory" : hs_reader_error(r));
    rc = 2;
    goto done;
  }
  for (i = 0; i < hs_reader_nfiles(r); i++) {
    const hs_file_stats *st = hs_reader_stats(r, i);
    if (st->buffers_damaged || st->records_damaged || st->bytes_trailing) rc = 1;
  }
  if (mappath) {
    if (hsi_symmap_load(&sm, mappath, err, sizeof err) < 0) {
      fprintf(stderr, "heapscript: %s\n", err);
      rc = 2;
      goto done;
    }
  } else {
    for (i = 0; i < nfiles && !sm; i++) sm = map_beside(files[i]);
  }
  hsi_syms_set_map(sy, sm);
  hsi_syms_on_message(sy, say, NULL);
  for (i = 0; i < nfiles; i++) {
    dir_of(files[i], dir, sizeof dir);
    if (hsi_syms_add_dir(sy, dir) < 0) { rc = 2; goto done; }
  }
  if (hsi_syms_set_path(sy, sympath) < 0) { rc = 2; goto done; }
  /* the table says what each image found: messages would repeat it */
  hsi_syms_on_message(sy, NULL, NULL);
  if ((k = hsi_syms_report(sy, &rep)) < 0) { fprintf(stderr, "heapscript: out of memory\n"); rc = 2; goto done; }
  if (json) print_json(rep, k);
  else print_text(rep, k, hsi_term_columns());
done:
  hsi_syms_free(sy);
  hsi_symmap_free(sm);
  hsi_procmap_free(pm);
  hs_reader_close(r);
  hsi_damage_stderr_done(&dout);
  free(files);
  return rc;
}
