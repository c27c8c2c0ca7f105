/*
** win_live.c -- (Windows only) the live producer: the kernel and heap
** sessions in real time (win_etw.c), consumed with OpenTrace/ProcessTrace
** and EVENT_RECORD callbacks that hand each record to the live store
** through the adapter (evrec.h: hsi_evrec has EVENT_RECORD's layout,
** checked below at compile time).  A watcher thread stops the sessions
** when the store asks (Ctrl-C, --duration, an error, the script's end) or
** the target process exits; Ctrl-Break and closing the console stop them
** too, so no kernel session is left behind.
*/
#ifdef _WIN32
#include "win_etw.h"
#include <evntcons.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "osfile.h"
#include "win_live.h"

/* The adapter reads the callback's EVENT_RECORD through hsi_evrec. */
#define HSI_SAME(a, b) typedef char hsi_check_##a[(offsetof(EVENT_RECORD, b) == offsetof(hsi_evrec, a)) ? 1 : -1]
HSI_SAME(timestamp, EventHeader.TimeStamp);
HSI_SAME(provider_id, EventHeader.ProviderId);
HSI_SAME(opcode, EventHeader.EventDescriptor.Opcode);
HSI_SAME(keyword, EventHeader.EventDescriptor.Keyword);
HSI_SAME(processor_number, BufferContext);
HSI_SAME(extended_data_count, ExtendedDataCount);
HSI_SAME(user_data_length, UserDataLength);
HSI_SAME(extended_data, ExtendedData);
HSI_SAME(user_data, UserData);
typedef char hsi_check_size[sizeof(EVENT_RECORD) == sizeof(hsi_evrec) ? 1 : -1];
typedef char hsi_check_ext[sizeof(EVENT_HEADER_EXTENDED_DATA_ITEM) == sizeof(hsi_evrec_ext) ? 1 : -1];

typedef struct wlive {
  hsi_etw etw;
  hsi_live *s;
  TRACEHANDLE h[2];
  HANDLE consumer, watcher, target;
  unsigned long pid;
} wlive;

static wlive *ctrl_session;       /* the one SetConsoleCtrlHandler stops */

static void WINAPI on_record(PEVENT_RECORD r) {
  wlive *w = (wlive *)r->UserContext;
  hsi_live_event(w->s, (const hsi_evrec *)r);
}

static DWORD WINAPI consume(void *arg) {
  wlive *w = (wlive *)arg;
  ProcessTrace(w->h, 2, NULL, NULL);          /* returns when both sessions stop */
  return 0;
}

static DWORD WINAPI watch(void *arg) {
  wlive *w = (wlive *)arg;
  const char *why = "stopped";
  for (;;) {
    if (hsi_live_stopping(w->s)) break;
    if (w->target && WaitForSingleObject(w->target, 200) == WAIT_OBJECT_0) { why = "target exited"; break; }
    if (!w->target) Sleep(200);
  }
  hsi_etw_stop(&w->etw);
  WaitForSingleObject(w->consumer, INFINITE);
  hsi_live_add_lost(w->s, w->etw.events_lost, w->etw.buffers_lost);
  hsi_live_finish(w->s, why);
  return 0;
}

static BOOL WINAPI on_ctrl(DWORD type) {
  wlive *w = ctrl_session;
  if (!w) return FALSE;
  if (type == CTRL_C_EVENT) { hsi_live_request_stop(w->s, "interrupted"); return TRUE; }
  hsi_etw_stop(&w->etw);          /* Ctrl-Break, console closed, logoff: stop now */
  return FALSE;
}

static int wl_start(void *impl) {
  wlive *w = (wlive *)impl;
  if (!(w->consumer = CreateThread(NULL, 0, consume, w, 0, NULL))) return HS_ENOMEM;
  if (!(w->watcher = CreateThread(NULL, 0, watch, w, 0, NULL))) {
    hsi_etw_stop(&w->etw);
    WaitForSingleObject(w->consumer, INFINITE);
    return HS_ENOMEM;
  }
  return 0;
}

static void wl_close(void *impl) {
  wlive *w = (wlive *)impl;
  if (w->s) hsi_live_request_stop(w->s, "stopped");
  if (w->watcher) { WaitForSingleObject(w->watcher, INFINITE); CloseHandle(w->watcher); }
  else hsi_etw_stop(&w->etw);
  if (w->consumer) CloseHandle(w->consumer);
  if (w->h[0] != INVALID_PROCESSTRACE_HANDLE) CloseTrace(w->h[0]);
  if (w->h[1] != INVALID_PROCESSTRACE_HANDLE) CloseTrace(w->h[1]);
  if (w->target) CloseHandle(w->target);
  if (ctrl_session == w) { SetConsoleCtrlHandler(on_ctrl, FALSE); ctrl_session = NULL; }
  free(w);
}

/* The session's clock and figures, as a file's logfile header gives them. */
static void logfile_of(const TRACE_LOGFILE_HEADER *h, hs_logfile *lf) {
  LARGE_INTEGER now;
  memset(lf, 0, sizeof *lf);
  QueryPerformanceCounter(&now);
  lf->buffer_size = h->BufferSize;
  lf->os_build = h->ProviderVersion;
  lf->cpus = h->NumberOfProcessors;
  lf->timer_resolution = h->TimerResolution;
  lf->pointer_size = h->PointerSize ? h->PointerSize : 8;
  lf->cpu_mhz = h->CpuSpeedInMHz;
  lf->perf_freq = h->PerfFreq.QuadPart;
  lf->start_time = h->StartTime.QuadPart;
  lf->boot_time = h->BootTime.QuadPart;
  lf->clock_type = 1;                                /* QPC: ClientContext 1 */
  lf->header_ts = now.QuadPart;                      /* the session's start in its clock */
  snprintf(lf->logger_name, sizeof lf->logger_name, "heapscript live");
}

int hsi_win_live_open(const hsi_live_opts *o, hsi_live **store, hsi_live_producer *prod,
                      char *err, size_t errlen) {
  EVENT_TRACE_LOGFILEW lg[2];
  hs_logfile lf;
  wlive *w = (wlive *)calloc(1, sizeof *w);
  int i;
  *store = NULL;
  if (!w) { snprintf(err, errlen, "out of memory"); return HS_ENOMEM; }
  w->h[0] = w->h[1] = INVALID_PROCESSTRACE_HANDLE;
  if (!o->pid && !o->exe) {
    snprintf(err, errlen, "--live needs a target: --pid N, or --exe NAME.exe for its next start");
    free(w);
    return HS_EARG;
  }
  if (o->pid && !(w->target = OpenProcess(SYNCHRONIZE, FALSE, (DWORD)o->pid))) {
    snprintf(err, errlen, "no process %ld to trace (or no right to open it)", o->pid);
    free(w);
    return HS_EARG;
  }
  if (hsi_etw_start(&w->etw, NULL, NULL, 0, (unsigned long)o->pid, o->exe, err, errlen) != 0) {
    if (w->target) CloseHandle(w->target);
    free(w);
    return HS_EIO;
  }
  ctrl_session = w;
  SetConsoleCtrlHandler(on_ctrl, TRUE);
  memset(lg, 0, sizeof lg);
  lg[0].LoggerName = (LPWSTR)KERNEL_LOGGER_NAMEW;
  lg[1].LoggerName = (LPWSTR)HSI_HEAP_SESSION;
  for (i = 0; i < 2; i++) {
    lg[i].ProcessTraceMode = PROCESS_TRACE_MODE_REAL_TIME | PROCESS_TRACE_MODE_EVENT_RECORD |
                             PROCESS_TRACE_MODE_RAW_TIMESTAMP;
    lg[i].EventRecordCallback = on_record;
    lg[i].Context = w;
    if ((w->h[i] = OpenTraceW(&lg[i])) == INVALID_PROCESSTRACE_HANDLE) {
      DWORD e = GetLastError();
      if (e == ERROR_ACCESS_DENIED)
        snprintf(err, errlen, "reading the %s session needs administrator rights: run heapscript from an "
                 "elevated prompt (Run as administrator)", i ? "heap" : "kernel");
      else
        snprintf(err, errlen, "cannot read the %s session (Windows error %lu)", i ? "heap" : "kernel",
                 (unsigned long)e);
      wl_close(w);
      return HS_EIO;
    }
  }
  logfile_of(&lg[0].LogfileHeader, &lf);
  if (!(w->s = hsi_live_new(&lf, o->pid ? "live session (pid)" : "live session (exe)"))) {
    snprintf(err, errlen, "out of memory");
    wl_close(w);
    return HS_ENOMEM;
  }
  prod->impl = w;
  prod->start = wl_start;
  prod->close = wl_close;
  *store = w->s;
  return 0;
}
#else
typedef int hsi_win_live_unused;   /* ISO C: a translation unit is not empty */
#endif
