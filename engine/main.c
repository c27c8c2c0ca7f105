/*
** main.c -- the heapscript command line: `info`, `dump`, `symbols`
** (sym_cmd.c), and script mode
** (everything else goes to the Lua layer, lua_run.c).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <sys/resource.h>
#endif
#include "heapscript.h"
#include "source.h"
#include "evfilter.h"
#include "damlog.h"
#include "info.h"
#include "lua_run.h"
#include "term.h"
#include "memev.h"
#include "attrib.h"
#include "layoutcheck.h"
#include "procmap.h"
#include "sym_cmd.h"
#include "merge.h"
#include "win_cli.h"
#include "win_live.h"
#include "text.h"
#include "cliargs.h"

/* Help texts stay within 80 columns: they are read on terminals. */
static const char *usage =
  "usage: heapscript [-I DIR]... SCRIPT TRACE... [ARG...]  run a Lua script\n"
  "       heapscript info [--json] TRACE...                what a trace holds\n"
  "       heapscript dump [--jsonl] [FILTER...] TRACE...   one event a line\n"
  "       heapscript symbols [--symbol-path P] [--json] TRACE...\n"
  "                                      each image's PDB: found, where, or why not\n"
  "       heapscript merge -o OUT.etl TRACE...        several traces of one run as\n"
  "                                                one file\n"
  "       heapscript --replay TRACE [--speed N | --fast] [--duration S] SCRIPT\n"
  "       heapscript --live (--pid N | --exe NAME.exe) [--duration S] SCRIPT\n"
  "                                                (Windows)\n"
  "       heapscript record -o TRACE.etl [--circular MB]\n"
  "                         (--pid N | -- PROGRAM ARG...)\n"
  "                                                (Windows)\n"
  "       heapscript --help | --version\n"
  "\n"
  "SCRIPT is a file or a bundled script's name (heapscript --list).  Several\n"
  "TRACE files are merged into one time-ordered stream (as xperf -merge would).\n"
  "A script's options follow its traces: heapscript leaks t.etl --top 10.  After\n"
  "`--` every word goes to the script, for the unusual cases (an argument that\n"
  "names an existing file).  `heapscript --help` tells all about running a\n"
  "script; `heapscript leaks --help` shows the options of the script leaks.\n"
  "Run `heapscript info --help`, `dump --help` or `symbols --help` for their\n"
  "options.\n";

static const char *info_usage =
  "usage: heapscript info [--json] TRACE...\n"
  "Prints the logfile header (logger, OS build, pointer size, CPUs, clock, start,\n"
  "duration), buffers (walked, compressed, damaged, lost), event counts by\n"
  "header type and by provider/id/opcode/version, and the payload lengths of\n"
  "each memory event's layout with the checks of what it decodes (a layout that\n"
  "does not fit is also one line on stderr).  --json prints the figures in the\n"
  "schema of shared/traces/expected/*.json, one object per file (an array for\n"
  "several files).\n"
  "Exit status: 0; 1 if a file was damaged (it is still summarised); 2 if a file\n"
  "cannot be read.\n";

static const char *dump_usage =
  "usage: heapscript dump [--jsonl] [FILTER...] TRACE...\n"
  "One event a line, in timestamp order over all files.  Filters:\n"
  "  --provider GUID|NAME  --opcode N  --id N  --pid N  --tid N\n"
  "  --header-type NAME  (each may be given several times: any of the values\n"
  "  passes; names ignore case)\n"
  "  --kernel | --no-kernel  --from SECONDS  --to SECONDS  --limit N\n"
  "Text columns: time (s from start), cpu, pid, tid, header type,\n"
  "provider/event, id, opcode, version, payload length.  --jsonl keys: provider,\n"
  "opcode, id, version, timestamp_raw, pid, tid (null when the header has none),\n"
  "stack_pid, stack_tid (only for a memory event whose header has no ids: those\n"
  "of its StackWalk), cpu, payload_len, header_type, time, file (1-based, as\n"
  "the scripts' ev.file), buffer, offset, and for heap, VirtualAlloc and pool\n"
  "events `memory`: the decoded fields (heap=, addr=, size=...).  In text, ids\n"
  "taken from the StackWalk end with '*'; --pid/--tid test them when the header\n"
  "has none.  On a terminal a text line longer than its width goes on below,\n"
  "indented, cut at spaces.\n";

static int open_reader(hs_reader **r, char **paths, int n, hsi_damage_out *dout) {
  char err[HS_ERRLEN];
  hs_reader_opts o;
  hsi_damage_stderr_opts(dout, paths, &o);
  if (hs_reader_open(r, (const char *const *)paths, n, &o, err, sizeof err) != 0) {
    fprintf(stderr, "heapscript: %s\n", err);
    hsi_damage_stderr_done(dout);
    return 2;
  }
  return 0;
}

static int damaged(const hs_reader *r) {
  int i;
  for (i = 0; i < hs_reader_nfiles(r); i++) {
    const hs_file_stats *st = hs_reader_stats(r, i);
    if (st->buffers_damaged || st->records_damaged || st->bytes_trailing) return 1;
  }
  return 0;
}

/* One line on stderr per layout that fits badly. */
static void layout_warnings(const hsi_lcheck *lc, const char *path) {
  size_t i;
  char line[1024];
  for (i = 0; i < hsi_lcheck_count(lc); i++) {
    const hsi_lcheck_row *r = hsi_lcheck_row_at(lc, i);
    if (!r->bad) continue;
    hsi_lcheck_warning(r, line, sizeof line);
    fprintf(stderr, "heapscript: %s: %s\n", path, line);
  }
}

static int cmd_info(int argc, char **argv) {
  int i, json = 0, nfiles = 0, rc = 0;
  char **files = (char **)calloc((size_t)argc + 1, sizeof *files);
  if (!files) return 2;
  for (i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (hsi_cli_trace(argc, argv, &i, files, &nfiles)) continue;
    if (strcmp(a, "--json") == 0) json = 1;
    else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) { fputs(info_usage, stdout); free(files); return 0; }
    else { free(files); return hsi_cli_usage_error("info", info_usage, "unknown option %s", a); }
  }
  if (nfiles == 0) { free(files); return hsi_cli_usage_error("info", info_usage, "no trace given"); }
  if (json && nfiles > 1) printf("[\n");
  for (i = 0; i < nfiles; i++) {
    hs_reader *r;
    hsi_info *in;
    hsi_lcheck *lc;
    hsi_procmap *pm;
    hs_event ev;
    hsi_damage_out dout;
    int n, frc = open_reader(&r, &files[i], 1, &dout);
    if (frc) { rc = frc; continue; }
    in = hsi_info_new();
    lc = hsi_lcheck_new();
    pm = hsi_procmap_new();
    if (!in || !lc || !pm) {
      hsi_info_free(in); hsi_lcheck_free(lc); hsi_procmap_free(pm);
      hs_reader_close(r); hsi_damage_stderr_done(&dout); free(files);
      return 2;
    }
    while ((n = hs_reader_next(r, &ev)) == 1)
      if (hsi_info_add(in, &ev) || hsi_lcheck_feed(lc, pm, &ev)) { n = HS_ENOMEM; break; }
    if (n < 0) { fprintf(stderr, "heapscript: %s: %s\n", files[i], hs_reader_error(r)); rc = 2; }
    hsi_lcheck_finish(lc, pm);
    layout_warnings(lc, files[i]);
    hsi_info_set_layouts(in, lc);
    if (json) {
      if (i) printf(",\n");
      hsi_info_json(in, r, 0, stdout);
    } else {
      if (i) printf("\n");
      hsi_info_text(in, r, 0, stdout);
      hsi_lcheck_text(lc, stdout);
    }
    if (damaged(r) && rc == 0) rc = 1;
    hsi_info_free(in);
    hsi_lcheck_free(lc);
    hsi_procmap_free(pm);
    hs_reader_close(r);
    hsi_damage_stderr_done(&dout);
  }
  if (json && nfiles > 1) printf("]\n");
  free(files);
  return rc;
}

static int parse_num(const char *s, long long *v) {
  char *end;
  *v = strtoll(s, &end, 0);
  return *s && !*end;
}

/*
** dump's text line, made by hand rather than by printf: a trace of millions
** of events is millions of lines (the 750,000 of a written trace into a
** file: 0.88-0.91 -> 0.43-0.53 s; docs/SPEED.md).  The same text as the
** printf formats it replaced (tests/cli/test_dump.sh compares it with
** lines they wrote, tests/unit/test_time.c the seconds with printf's).
*/
typedef struct line { char b[1024]; size_t n; } line;

static void put_c(line *o, char c) { if (o->n < sizeof o->b - 1) o->b[o->n++] = c; }

static void put_s(line *o, const char *s) { while (*s) put_c(o, *s++); }

/* "%*ld": v right-aligned in width (0: none) */
static void put_num(line *o, long long v, int width) {
  char t[24], *p = hsi_utoa(v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v, 0, t + sizeof t);
  if (v < 0) *--p = '-';
  for (width -= (int)(t + sizeof t - p); width > 0; width--) put_c(o, ' ');
  for (; p < t + sizeof t; p++) put_c(o, *p);
}

/* "%*.*f" of ns / 1e9 seconds (text.h) */
static void put_secs(line *o, long long ns, int places, int width) {
  char t[64];
  hsi_secs_format(ns, places, width, t);
  put_s(o, t);
}

/* The text line o (its '\n' last) on a terminal of cols columns: cut at
   spaces into lines of at most cols characters, the rest under the header type
   (DUMP_CONT columns in: right of the time), a word wider than that cut
   where it must.  Into a file or a pipe (cols 0), the line as it is. */
#define DUMP_CONT 15
static void put_line(const line *o, int cols) {
  const char *b = o->b;
  size_t n = o->n - 1, pos = 0, lim = (size_t)cols;
  if (cols <= DUMP_CONT + 8 || hsi_term_width(b, n) <= lim) { fwrite(o->b, 1, o->n, stdout); return; }
  for (;;) {
    size_t brk;
    if (hsi_term_width(b + pos, n - pos) <= lim) { fwrite(b + pos, 1, n - pos, stdout); fputc('\n', stdout); return; }
    brk = pos + hsi_term_cut(b + pos, n - pos, lim, 0);
    while (brk > pos && b[brk - 1] == ' ') brk--;     /* no trailing blanks */
    if (brk == pos) brk = pos + hsi_term_take(b + pos, n - pos, lim);   /* blanks only: cannot be */
    fwrite(b + pos, 1, brk - pos, stdout);
    fprintf(stdout, "\n%*s", DUMP_CONT, "");
    for (pos = brk; pos < n && b[pos] == ' '; pos++) ;
    lim = (size_t)cols - DUMP_CONT;
  }
}

/* ev's time in ns from the trace's start, as heapscript.Event's `ns`
   (hsi_timebase_ns): one clock for every file */
static void dump_line(const hs_event *ev, const hsi_ids *ids, const hs_reader *r, const hsi_timebase *tb,
                      int jsonl, int cols) {
  char g[HS_GUID_STRLEN];
  int ver = (ev->flags & HS_EVF_KERNEL) ? (ev->record[0] | ev->record[1] << 8) : ev->version;
  long long ns = (long long)hsi_timebase_ns(tb, r, ev);
  char mem[256];
  hsi_memev_describe(ev, mem, sizeof mem);      /* "" unless a heap/VirtualAlloc/pool event */
  if (jsonl) {
    const char *hn = hs_header_type_name(ev->header_type);
    line o;
    o.n = 0;
    hs_guid_format(&ev->provider, g);
    put_s(&o, "{\"provider\": \""); put_s(&o, g);
    put_s(&o, "\", \"opcode\": "); put_num(&o, ev->opcode, 0);
    put_s(&o, ", \"id\": "); put_num(&o, ev->id, 0);
    put_s(&o, ", \"version\": "); put_num(&o, ver, 0);
    put_s(&o, ", \"timestamp_raw\": "); put_num(&o, (long long)ev->timestamp, 0);
    if (ev->flags & HS_EVF_HAS_IDS) {
      put_s(&o, ", \"pid\": "); put_num(&o, ev->pid, 0);
      put_s(&o, ", \"tid\": "); put_num(&o, ev->tid, 0);
    } else {
      put_s(&o, ", \"pid\": null, \"tid\": null");
    }
    if (ids->how == HSI_IDS_STACK) {
      put_s(&o, ", \"stack_pid\": "); put_num(&o, ids->pid, 0);
      put_s(&o, ", \"stack_tid\": "); put_num(&o, ids->tid, 0);
    }
    put_s(&o, ", \"cpu\": "); put_num(&o, ev->cpu, 0);
    put_s(&o, ", \"payload_len\": "); put_num(&o, ev->payload_len, 0);
    put_s(&o, ", \"header_type\": \""); put_s(&o, hn ? hn : "?");
    put_s(&o, "\", \"time\": "); put_secs(&o, ns, 9, 0);
    put_s(&o, ", \"file\": "); put_num(&o, ev->file + 1, 0);      /* 1-based, as ev.file (API.md) */
    put_s(&o, ", \"buffer\": "); put_num(&o, ev->buffer, 0);
    put_s(&o, ", \"offset\": "); put_num(&o, ev->offset, 0);
    if (mem[0]) {
      put_s(&o, ", \"memory\": ");
      fwrite(o.b, 1, o.n, stdout);
      o.n = 0;
      hsi_json_str(stdout, mem);
    }
    put_s(&o, "}\n");
    fwrite(o.b, 1, o.n, stdout);
  } else {
    const char *pn = hs_provider_name(&ev->provider), *en = hs_event_name(&ev->provider, ev->opcode);
    const char *hn = hs_header_type_name(ev->header_type);
    line o;
    size_t at;
    o.n = 0;
    put_secs(&o, ns, 7, 14);
    put_c(&o, ' ');
    put_num(&o, ev->cpu, 3);
    put_c(&o, ' ');
    if (ev->flags & HS_EVF_HAS_IDS) {
      put_num(&o, (int32_t)ev->pid, 6);
      put_c(&o, ' ');
      put_num(&o, (int32_t)ev->tid, 6);
    } else if (ids->how == HSI_IDS_STACK) {
      put_num(&o, ids->pid, 5);
      put_s(&o, "* ");
      put_num(&o, ids->tid, 5);
      put_c(&o, '*');
    } else {
      put_s(&o, "     -      -");
    }
    put_c(&o, ' ');
    at = o.n;
    put_s(&o, hn ? hn : "?");             /* every type the reader hands out has a name */
    while (o.n < at + 14) put_c(&o, ' ');
    put_c(&o, ' ');
    if (pn) put_s(&o, pn);
    else { hs_guid_format(&ev->provider, g); put_s(&o, g); }
    if (en) { put_c(&o, '/'); put_s(&o, en); }
    put_s(&o, " id="); put_num(&o, ev->id, 0);
    put_s(&o, " op="); put_num(&o, ev->opcode, 0);
    put_s(&o, " v="); put_num(&o, ver, 0);
    put_s(&o, " len="); put_num(&o, ev->payload_len, 0);
    if (mem[0]) { put_s(&o, "  "); put_s(&o, mem); }
    put_c(&o, '\n');
    put_line(&o, cols);
  }
}

static int cmd_dump(int argc, char **argv) {
  hsi_evfilter f;
  hs_reader *r;
  hs_event ev;
  hsi_attrib *at;
  hsi_ids ids;
  hsi_damage_out dout;
  char **files = (char **)calloc((size_t)argc + 1, sizeof *files);
  hsi_timebase tb = { NULL, 0 };
  int i, n, nfiles = 0, jsonl = 0, rc, cols = hsi_term_columns();   /* text on a terminal fits it */
  uint64_t shown = 0;
  if (!files) return 2;
  hsi_evfilter_init(&f);
  for (i = 0; i < argc; i++) {
    const char *a = argv[i], *val = NULL, *eq;
    char name[16];
    long long v;
    int ok;
    if (hsi_cli_trace(argc, argv, &i, files, &nfiles)) continue;
    /* --limit=1 as --limit 1, as the scripts take their options */
    if (a[0] == '-' && a[1] == '-' && (eq = strchr(a, '=')) != NULL && (size_t)(eq - a) < sizeof name) {
      memcpy(name, a, (size_t)(eq - a));
      name[eq - a] = '\0';
      a = name;
      val = eq + 1;
      if (!strcmp(a, "--jsonl") || !strcmp(a, "--kernel") || !strcmp(a, "--no-kernel") || !strcmp(a, "--help")) {
        free(files);
        return hsi_cli_usage_error("dump", dump_usage, "%s takes no value", a);
      }
    }
    if (strcmp(a, "--jsonl") == 0) { jsonl = 1; continue; }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) { fputs(dump_usage, stdout); free(files); return 0; }
    if (strcmp(a, "--kernel") == 0 || strcmp(a, "--no-kernel") == 0) {
      f.kernel = a[2] == 'k'; continue;
    }
    if (strcmp(a, "--provider") && strcmp(a, "--header-type") && strcmp(a, "--from") && strcmp(a, "--to") &&
        strcmp(a, "--opcode") && strcmp(a, "--id") && strcmp(a, "--pid") && strcmp(a, "--tid") &&
        strcmp(a, "--limit")) {
      free(files);
      return hsi_cli_usage_error("dump", dump_usage, "unknown option %s", a);
    }
    if (!val) {
      if (i + 1 >= argc) { free(files); return hsi_cli_usage_error("dump", dump_usage, "%s needs a value", a); }
      val = argv[++i];
    }
    if (strcmp(a, "--provider") == 0) ok = hsi_evfilter_provider(&f, val) == 0;
    else if (strcmp(a, "--header-type") == 0) ok = hsi_evfilter_header_type(&f, val) == 0;
    else if (strcmp(a, "--from") == 0 || strcmp(a, "--to") == 0) {
      char *end;
      double s = strtod(val, &end);
      /* as the scripts' --window and --at (report.MAX_SECONDS): a record
         may be stamped before its file's start, so below 0 too */
      ok = *val && !*end && s >= -1e9 && s <= 1e9;
      if (!ok) ;
      else if (a[2] == 'f') { f.from_ns = (int64_t)(s * 1e9); f.from_set = 1; }
      else { f.to_ns = (int64_t)(s * 1e9); f.to_set = 1; }
    } else if (!(ok = parse_num(val, &v))) ;
    else if (strcmp(a, "--opcode") == 0) ok = hsi_evfilter_add(&f.opcode, v, 0xFF) == 0;
    else if (strcmp(a, "--id") == 0) ok = hsi_evfilter_add(&f.id, v, 0xFFFF) == 0;
    else if (strcmp(a, "--pid") == 0) ok = hsi_evfilter_add(&f.pid, v, 0xFFFFFFFF) == 0;
    else if (strcmp(a, "--tid") == 0) ok = hsi_evfilter_add(&f.tid, v, 0xFFFFFFFF) == 0;
    else { f.limit = v; ok = v >= 0; }            /* --limit */
    if (!ok) {
      const char *why = strcmp(a, "--provider") == 0 ? "neither a GUID nor a provider name"
                      : strcmp(a, "--header-type") == 0 ? "not a header type's name"
                      : strcmp(a, "--from") == 0 || strcmp(a, "--to") == 0 ? "expected seconds from the trace's start (within 1e+09 s of it)"
                      : strcmp(a, "--limit") == 0 ? "expected a count of 0 or more"
                      : "expected a number in the field's range";
      free(files);
      return hsi_cli_usage_error("dump", dump_usage, "bad option %s %s: %s", a, val, why);
    }
  }
  if (nfiles == 0) {
    free(files);
    return hsi_cli_usage_error("dump", dump_usage, "no trace given");
  }
  if (f.from_set && f.to_set && f.from_ns > f.to_ns) {
    fprintf(stderr, "heapscript dump: --from is after --to\n%s", dump_usage);
    free(files);
    return 2;
  }
  if ((rc = open_reader(&r, files, nfiles, &dout)) != 0) { free(files); return rc; }
  {
    char msg[HS_ERRLEN];
    if (hsi_reader_twice(r, msg, sizeof msg)) {   /* its every event would be printed twice */
      fprintf(stderr, "heapscript dump: %s\n", msg);
      hs_reader_close(r); hsi_damage_stderr_done(&dout); free(files); return 2;
    }
  }
  /* events without ids show those of their StackWalk (attrib.h); times
     count from the earliest file's start */
  if (hsi_timebase_init(&tb, r) != 0 || !(at = hsi_attrib_new(hsi_attrib_reader_src, r))) {
    hsi_timebase_free(&tb); hs_reader_close(r); hsi_damage_stderr_done(&dout); free(files); return 2;
  }
  while ((n = hsi_attrib_next(at, &ev, &ids)) == 1) {
    if (f.limit >= 0 && (int64_t)shown >= f.limit) break;
    if (!hsi_evfilter_match(&f, &ev, &ids,
                            hsi_evfilter_timed(&f) ? hsi_timebase_ns(&tb, r, &ev) : 0))
      continue;
    dump_line(&ev, &ids, r, &tb, jsonl, cols);
    shown++;
  }
  hsi_attrib_free(at);
  hsi_timebase_free(&tb);
  rc = n < 0 ? 2 : damaged(r) ? 1 : 0;
  hs_reader_close(r);
  hsi_damage_stderr_done(&dout);
  free(files);
  return rc;
}

static const char merge_usage[] = "usage: heapscript merge -o OUT.etl TRACE...\n";

static int cmd_merge(int argc, char **argv) {
  const char *out = NULL;
  char err[HS_ERRLEN];
  hsi_merge_counts c;
  hsi_damage_out dout;
  hs_reader_opts ro;
  uint64_t skipped;
  int i, n = 0;
  char **in = (char **)calloc((size_t)argc + 1, sizeof *in);
  if (!in) return 2;
  for (i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (hsi_cli_trace(argc, argv, &i, in, &n)) continue;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      printf("%s"
             "Writes the traces of one run (e.g. the kernel and heap sessions of `heapscript record`)\n"
             "as one .etl in time order, as xperf -merge does; WPP records are left out (counted).\n",
             merge_usage);
      free(in); return 0;
    } else if (strcmp(a, "-o") == 0) {
      const char *why = i + 1 >= argc ? "-o needs an output file and at least one trace"
                      : out ? "-o given twice: the traces are merged into one file"
                      : strcmp(argv[i + 1], "-") == 0 ? "-o -: a trace is written to a file, not to standard output"
                      : NULL;
      if (why) { free(in); return hsi_cli_usage_error("merge", merge_usage, "%s", why); }
      out = argv[++i];
    } else {
      free(in);
      return hsi_cli_usage_error("merge", merge_usage, "unknown option %s", a);
    }
  }
  if (!out || n == 0) {
    free(in);
    return hsi_cli_usage_error("merge", merge_usage, "%s", !out ? "no output file: -o OUT.etl is needed"
                                                              : "no trace given");
  }
  /* damage in the inputs: a line each as met, left out of the new file, exit 1 */
  hsi_damage_stderr_opts(&dout, in, &ro);
  if (hsi_merge((const char *const *)in, n, out, &ro, &c, err, sizeof err) < 0) {
    fprintf(stderr, "heapscript merge: %s\n", err);
    hsi_damage_stderr_done(&dout);
    free(in); return 2;
  }
  skipped = hsi_damage_stderr_done(&dout);
  fprintf(stderr, "heapscript merge: %s: %llu records from %d file%s (%llu logfile header%s replaced, %llu left out",
          out, (unsigned long long)c.records, n, n == 1 ? "" : "s", (unsigned long long)c.headers,
          c.headers == 1 ? "" : "s", (unsigned long long)c.left_out);
  if (c.moved)   /* (files of other clocks meet within FILETIME's 100 ns) */
    fprintf(stderr, ", %llu moved up to 100 ns later to keep their CPU's order", (unsigned long long)c.moved);
  fprintf(stderr, ")%s\n", skipped ? "; damaged parts of the inputs were skipped (above)" : "");
  free(in);
  return skipped ? 1 : 0;
}

/* The command's status, unless standard output could not be written. */
static int run_cmd(int argc, char **argv) {
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    fputs(usage, stdout);
    fputs("\nRunning a script:\n\n", stdout);
    hsi_lua_usage(stdout);
    return 0;
  }
  if (strcmp(argv[1], "--version") == 0) { printf("heapscript %s\n", HS_VERSION); return 0; }
  if (strcmp(argv[1], "info") == 0) return cmd_info(argc - 2, argv + 2);
  if (strcmp(argv[1], "dump") == 0) return cmd_dump(argc - 2, argv + 2);
  if (strcmp(argv[1], "symbols") == 0) return hsi_sym_cmd(argc - 2, argv + 2);
  if (strcmp(argv[1], "merge") == 0) return cmd_merge(argc - 2, argv + 2);
  if (strcmp(argv[1], "record") == 0) {
#ifdef _WIN32
    return hsi_win_record(argc - 2, argv + 2);
#else
    fprintf(stderr, "heapscript record: needs Windows (ETW sessions); record there, then read the .etl here\n");
    return 2;
#endif
  }
  return hsi_lua_cli(argc, argv);
}

/* Every PDB found stays open (its view and the guard of its pages need
   the file): a trace of a whole system names a thousand of them, past the
   usual soft limit of 1024 descriptors.  The soft limit goes up to the
   hard one, as a tool that opens many files does. */
static void more_files(void) {
#ifndef _WIN32
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &rl);
  }
#endif
}

int main(int argc, char **argv) {
#ifdef _WIN32
  hsi_win_init(&argc, &argv);        /* UTF-8 arguments, LF output */
#endif
  more_files();
  if (argc < 2) { fputs(usage, stderr); return 2; }
  return hsi_out_status(run_cmd(argc, argv));
}
