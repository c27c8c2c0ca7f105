/*
** win_etw.h -- (Windows only) what win_live.c and win_record.c share: the
** two sessions a heap trace needs, started and always stopped.
**   the kernel logger ("NT Kernel Logger"): process, thread and image
**     events (with their rundown at start), VirtualAlloc and pool events,
**     stacks on the memory events;
**   a heap session: the Heap provider for one process (by pid) or for the
**     next start of an executable (Image File Execution Options
**     TracingFlags, set before and restored after), with stacks.
*/
#ifndef HS_WIN_ETW_H
#define HS_WIN_ETW_H
#ifdef _WIN32
#ifndef _WIN32_WINNT
#define _WIN32_WINNT 0x0603       /* EnableTraceEx2 filters: Windows 8.1 */
#endif
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <evntprov.h>
#include <evntrace.h>
#include <evntcons.h>
#include <stddef.h>

typedef struct hsi_etw {
  TRACEHANDLE kernel, heap;        /* session handles (0: not started) */
  EVENT_TRACE_PROPERTIES *kprops, *hprops;
  wchar_t ifeo_exe[MAX_PATH];      /* TracingFlags set for this image ("" none) */
  DWORD ifeo_old;                  /* its value before */
  int ifeo_had;                    /* whether there was one */
  ULONG events_lost, buffers_lost; /* from the stop */
} hsi_etw;

#define HSI_HEAP_SESSION L"heapscript heap"

/*
** Start both sessions.  kfile/hfile: the .etl files (record), or NULL for
** real time (live).  circular_mb > 0: circular files of that size.  pid or
** exe (NAME.exe) names the heap target.  0, or -1 with one line in err.
*/
int hsi_etw_start(hsi_etw *e, const wchar_t *kfile, const wchar_t *hfile, unsigned circular_mb,
                  unsigned long pid, const char *exe, char *err, size_t errlen);
/* Stop what was started and restore TracingFlags; safe to call twice. */
void hsi_etw_stop(hsi_etw *e);
#endif
#endif
