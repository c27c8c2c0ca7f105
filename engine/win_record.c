/*
** win_record.c -- (Windows only) `heapscript record`: the kernel and heap
** sessions in file mode (win_etw.c) for a process by pid or a program
** started here, stopped when it exits or on Ctrl-C, TracingFlags restored.
** The two session files (OUT.kernel.etl, OUT.heap.etl) are merged into
** OUT as xperf -merge does (merge.c), then removed.
*/
#ifdef _WIN32
#include "win_etw.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "osfile.h"
#include "win_live.h"
#include "merge.h"
#include "damlog.h"

static const char *usage =
  "usage: heapscript record -o TRACE.etl [--circular MB] (--pid N | -- PROGRAM [ARG...])\n"
  "Records what the analyses need: the kernel session (processes, threads, images, VirtualAlloc,\n"
  "pool, stacks) and heap tracing of the target (by pid, or PROGRAM started here with the Image\n"
  "File Execution Options TracingFlags set before and restored after).  Stops when the target\n"
  "exits or on Ctrl-C.  The two sessions' files are merged into TRACE.etl (as xperf -merge does).\n"
  "--circular MB keeps only the last MB of each session.  Needs administrator rights.\n";

static volatile LONG stop_flag;
static hsi_etw *ctrl_etw;

static BOOL WINAPI on_ctrl(DWORD type) {
  if (type == CTRL_C_EVENT) { InterlockedExchange(&stop_flag, 1); return TRUE; }
  if (ctrl_etw) hsi_etw_stop(ctrl_etw);
  return FALSE;
}

int hsi_win_record(int argc, char **argv) {
  const char *out = NULL;
  unsigned long pid = 0;
  unsigned circ = 0;
  int i, prog = -1;
  char err[512], kpath[1024], hpath[1024];
  wchar_t *wk, *wh;
  hsi_etw e;
  HANDLE target = NULL;
  PROCESS_INFORMATION pi;
  for (i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) { fputs(usage, stdout); return 0; }
    else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) out = argv[++i];
    else if (strcmp(argv[i], "--pid") == 0 && i + 1 < argc) pid = strtoul(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--circular") == 0 && i + 1 < argc) circ = (unsigned)strtoul(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--") == 0) { prog = i + 1; break; }
    else { fprintf(stderr, "heapscript record: unknown option %s\n%s", argv[i], usage); return 2; }
  }
  if (!out || (!pid && (prog < 0 || prog >= argc)) || (pid && prog >= 0)) { fputs(usage, stderr); return 2; }
  snprintf(kpath, sizeof kpath, "%.*s.kernel.etl", (int)(strlen(out) > 4 && !strcmp(out + strlen(out) - 4, ".etl") ? strlen(out) - 4 : strlen(out)), out);
  snprintf(hpath, sizeof hpath, "%.*s.heap.etl", (int)(strlen(out) > 4 && !strcmp(out + strlen(out) - 4, ".etl") ? strlen(out) - 4 : strlen(out)), out);
  wk = hsi_wide(kpath); wh = hsi_wide(hpath);
  if (!wk || !wh) { free(wk); free(wh); fprintf(stderr, "heapscript record: bad path %s\n", out); return 2; }
  if (pid && !(target = OpenProcess(SYNCHRONIZE, FALSE, (DWORD)pid))) {
    fprintf(stderr, "heapscript record: no process %lu (or no right to open it)\n", pid);
    free(wk); free(wh); return 2;
  }
  if (hsi_etw_start(&e, wk, wh, circ, pid, pid ? NULL : argv[prog], err, sizeof err) != 0) {
    fprintf(stderr, "heapscript record: %s\n", err);
    if (target) CloseHandle(target);
    free(wk); free(wh); return 2;
  }
  ctrl_etw = &e;
  SetConsoleCtrlHandler(on_ctrl, TRUE);
  if (!pid) {
    /* the command line of PROGRAM ARGS, each quoted */
    size_t len = 1;
    char *cmd;
    wchar_t *wcmd;
    STARTUPINFOW si;
    for (i = prog; i < argc; i++) len += 2 * strlen(argv[i]) + 3;
    if (!(cmd = (char *)malloc(len))) { hsi_etw_stop(&e); return 2; }
    cmd[0] = 0;
    for (i = prog; i < argc; i++) {           /* quoted only when needed, as the C runtime parses */
      const char *a = argv[i];
      int q = !*a || strpbrk(a, " \t\"") != NULL;
      char *p = cmd + strlen(cmd);
      if (i > prog) *p++ = ' ';
      if (q) *p++ = '"';
      for (; *a; a++) { if (*a == '"') *p++ = '\\'; *p++ = *a; }
      if (q) *p++ = '"';
      *p = 0;
    }
    wcmd = hsi_wide(cmd);
    free(cmd);
    memset(&si, 0, sizeof si); si.cb = sizeof si;
    if (!wcmd || !CreateProcessW(NULL, wcmd, NULL, NULL, FALSE, 0, NULL, NULL, &si, &pi)) {
      fprintf(stderr, "heapscript record: cannot start %s (Windows error %lu)\n", argv[prog], (unsigned long)GetLastError());
      free(wcmd); hsi_etw_stop(&e); free(wk); free(wh); return 2;
    }
    free(wcmd);
    CloseHandle(pi.hThread);
    target = pi.hProcess;
  }
  while (!stop_flag && WaitForSingleObject(target, 200) == WAIT_TIMEOUT) ;
  hsi_etw_stop(&e);
  SetConsoleCtrlHandler(on_ctrl, FALSE);
  CloseHandle(target);
  if (!hsi_is_file(kpath) || !hsi_is_file(hpath)) {     /* Wine: the session calls are stubs */
    fprintf(stderr, "heapscript record: the sessions wrote no %s: ETW recording does not work here\n",
            hsi_is_file(kpath) ? hpath : kpath);
    free(wk); free(wh);
    return 2;
  }
  {
    char *both[2];
    hsi_merge_counts mc;
    hsi_damage_out dout;
    hs_reader_opts ro;
    uint64_t skipped;
    both[0] = kpath; both[1] = hpath;
    hsi_damage_stderr_opts(&dout, both, &ro);
    if (hsi_merge((const char *const *)both, 2, out, &ro, &mc, err, sizeof err) < 0) {
      fprintf(stderr, "heapscript record: merging the sessions failed: %s (kept %s and %s)\n", err, kpath, hpath);
      hsi_damage_stderr_done(&dout);
      free(wk); free(wh);
      return 2;
    }
    skipped = hsi_damage_stderr_done(&dout);
    if (!skipped) {              /* damaged sessions are kept, to be looked at */
      hsi_remove(kpath);
      hsi_remove(hpath);
    }
    fprintf(stderr, "heapscript record: %s; %lu events and %lu buffers lost; wrote %s (%llu records)%s%s%s%s\n",
            stop_flag ? "interrupted" : "the target exited", (unsigned long)e.events_lost,
            (unsigned long)e.buffers_lost, out, (unsigned long long)mc.records,
            skipped ? "; the sessions had damaged parts, skipped (above); kept " : "",
            skipped ? kpath : "", skipped ? " and " : "", skipped ? hpath : "");
    free(wk); free(wh);
    return skipped ? 1 : 0;
  }
}
#else
typedef int hsi_win_record_unused;   /* ISO C: a translation unit is not empty */
#endif
