/*
** win_etw.c -- (Windows only) starting and stopping the kernel and heap
** sessions (see win_etw.h).  Values are the documented ones of
** evntrace.h/evntprov.h; the group masks are those `info` reads back
** from a trace's Extension records (masks[1] 0x40 pool, 0x8000
** VirtualAlloc).
*/
#ifdef _WIN32
#include "win_etw.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include "osfile.h"

#ifndef EVENT_FILTER_TYPE_PID
#define EVENT_FILTER_TYPE_PID 0x80000004
#endif
#ifndef EVENT_FILTER_TYPE_EXECUTABLE_NAME
#define EVENT_FILTER_TYPE_EXECUTABLE_NAME 0x80000008
#endif

static const GUID heap_guid = {0x222962ab, 0x6180, 0x4b88, {0xa8, 0x25, 0x34, 0x6b, 0x75, 0xf2, 0xa2, 0x4a}};
static const GUID pagefault_guid = {0x3d6fa8d3, 0xfe05, 0x11d0, {0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}};
static const GUID pool_guid = {0x0268a8b6, 0x74fd, 0x4302, {0x9d, 0xd0, 0x6e, 0x8f, 0x17, 0x95, 0xc0, 0xcf}};
static const GUID kernel_ctl = {0x9e814aad, 0x3204, 0x11d2, {0x9a, 0x82, 0x00, 0x60, 0x08, 0xa8, 0x69, 0x39}};

#define IFEO L"SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Image File Execution Options\\"

static EVENT_TRACE_PROPERTIES *props(const wchar_t *file, unsigned circular_mb) {
  size_t sz = sizeof(EVENT_TRACE_PROPERTIES) + 2 * 1024 * sizeof(wchar_t);
  EVENT_TRACE_PROPERTIES *p = (EVENT_TRACE_PROPERTIES *)calloc(1, sz);
  if (!p) return NULL;
  p->Wnode.BufferSize = (ULONG)sz;
  p->Wnode.Flags = WNODE_FLAG_TRACED_GUID;
  p->Wnode.ClientContext = 1;                        /* QPC clock */
  p->BufferSize = 1024;                              /* KiB: heap events come fast */
  p->MinimumBuffers = 64;
  p->MaximumBuffers = 1024;
  p->FlushTimer = 1;                                 /* real-time consumers see events within 1 s */
  p->LoggerNameOffset = sizeof(EVENT_TRACE_PROPERTIES);
  if (file) {
    p->LogFileNameOffset = (ULONG)(sizeof(EVENT_TRACE_PROPERTIES) + 1024 * sizeof(wchar_t));
    wcsncpy((wchar_t *)((char *)p + p->LogFileNameOffset), file, 1023);
    p->LogFileMode = circular_mb ? EVENT_TRACE_FILE_MODE_CIRCULAR : EVENT_TRACE_FILE_MODE_SEQUENTIAL;
    p->MaximumFileSize = circular_mb;
  } else {
    p->LogFileMode = EVENT_TRACE_REAL_TIME_MODE;
  }
  return p;
}

static void say(char *err, size_t errlen, ULONG rc, const char *what) {
  if (rc == ERROR_ACCESS_DENIED)
    snprintf(err, errlen, "starting the %s needs administrator rights: run heapscript from an elevated "
             "prompt (Run as administrator), or as a member of Performance Log Users", what);
  else if (rc == ERROR_ALREADY_EXISTS)
    snprintf(err, errlen, "the %s is already running (another tool, or a session left behind): stop it "
             "with `logman stop \"%s\" -ets` and try again", what,
             strcmp(what, "kernel session") == 0 ? "NT Kernel Logger" : "heapscript heap");
  else
    snprintf(err, errlen, "cannot start the %s (Windows error %lu)", what, (unsigned long)rc);
}

static void ifeo_set(hsi_etw *e, const char *exe) {
  HKEY k;
  wchar_t key[MAX_PATH + 128], *w = hsi_wide(exe);
  DWORD one = 1, sz = sizeof e->ifeo_old;
  const char *base = exe;
  if (!w) return;
  free(w);
  if (strrchr(base, '\\')) base = strrchr(base, '\\') + 1;
  if (!(w = hsi_wide(base))) return;
  wcsncpy(e->ifeo_exe, w, MAX_PATH - 1);
  free(w);
  swprintf(key, sizeof key / sizeof key[0], L"%ls%ls", IFEO, e->ifeo_exe);
  if (RegCreateKeyExW(HKEY_LOCAL_MACHINE, key, 0, NULL, 0, KEY_READ | KEY_WRITE, NULL, &k, NULL) != ERROR_SUCCESS) {
    e->ifeo_exe[0] = 0;
    return;
  }
  e->ifeo_had = RegQueryValueExW(k, L"TracingFlags", NULL, NULL, (LPBYTE)&e->ifeo_old, &sz) == ERROR_SUCCESS;
  RegSetValueExW(k, L"TracingFlags", 0, REG_DWORD, (const BYTE *)&one, sizeof one);
  RegCloseKey(k);
}

static void ifeo_restore(hsi_etw *e) {
  HKEY k;
  wchar_t key[MAX_PATH + 128];
  if (!e->ifeo_exe[0]) return;
  swprintf(key, sizeof key / sizeof key[0], L"%ls%ls", IFEO, e->ifeo_exe);
  if (RegOpenKeyExW(HKEY_LOCAL_MACHINE, key, 0, KEY_WRITE, &k) == ERROR_SUCCESS) {
    if (e->ifeo_had) RegSetValueExW(k, L"TracingFlags", 0, REG_DWORD, (const BYTE *)&e->ifeo_old, sizeof e->ifeo_old);
    else RegDeleteValueW(k, L"TracingFlags");
    RegCloseKey(k);
  }
  e->ifeo_exe[0] = 0;
}

int hsi_etw_start(hsi_etw *e, const wchar_t *kfile, const wchar_t *hfile, unsigned circular_mb,
                  unsigned long pid, const char *exe, char *err, size_t errlen) {
  ULONG rc, masks[8];
  CLASSIC_EVENT_ID stacks[5];
  ENABLE_TRACE_PARAMETERS ep;
  EVENT_FILTER_DESCRIPTOR fd;
  wchar_t *wexe = NULL;
  ULONG upid = (ULONG)pid;
  memset(e, 0, sizeof *e);
  if (!(e->kprops = props(kfile, circular_mb)) || !(e->hprops = props(hfile, circular_mb))) {
    snprintf(err, errlen, "out of memory");
    hsi_etw_stop(e);
    return -1;
  }
  e->kprops->Wnode.Guid = kernel_ctl;
  e->kprops->EnableFlags = EVENT_TRACE_FLAG_PROCESS | EVENT_TRACE_FLAG_THREAD | EVENT_TRACE_FLAG_IMAGE_LOAD |
                           EVENT_TRACE_FLAG_VIRTUAL_ALLOC;
  if ((rc = StartTraceW(&e->kernel, KERNEL_LOGGER_NAMEW, e->kprops)) != ERROR_SUCCESS) {
    e->kernel = 0;
    say(err, errlen, rc, "kernel session");
    hsi_etw_stop(e);
    return -1;
  }
  /* pool and VirtualAlloc through the group masks; stacks on the memory events */
  memset(masks, 0, sizeof masks);
  masks[0] = e->kprops->EnableFlags;
  masks[1] = 0x40 | 0x8000;
  TraceSetInformation(e->kernel, TraceSystemTraceEnableFlagsInfo, masks, sizeof masks);
  memset(stacks, 0, sizeof stacks);
  stacks[0].EventGuid = pagefault_guid; stacks[0].Type = 98;      /* VirtualAlloc */
  stacks[1].EventGuid = pagefault_guid; stacks[1].Type = 99;      /* VirtualFree */
  stacks[2].EventGuid = pool_guid; stacks[2].Type = 32;           /* pool alloc */
  stacks[3].EventGuid = pool_guid; stacks[3].Type = 33;           /* session pool alloc */
  stacks[4].EventGuid = pool_guid; stacks[4].Type = 34;           /* pool free */
  TraceSetInformation(e->kernel, TraceStackTracingInfo, stacks, sizeof stacks);

  if ((rc = StartTraceW(&e->heap, HSI_HEAP_SESSION, e->hprops)) != ERROR_SUCCESS) {
    e->heap = 0;
    say(err, errlen, rc, "heap session");
    hsi_etw_stop(e);
    return -1;
  }
  memset(&ep, 0, sizeof ep);
  memset(&fd, 0, sizeof fd);
  ep.Version = ENABLE_TRACE_PARAMETERS_VERSION_2;
  ep.EnableProperty = EVENT_ENABLE_PROPERTY_STACK_TRACE;
  if (pid) {
    fd.Ptr = (ULONGLONG)(uintptr_t)&upid; fd.Size = sizeof upid; fd.Type = EVENT_FILTER_TYPE_PID;
  } else if (exe) {
    ifeo_set(e, exe);                                /* heap tracing at the next start of exe */
    if ((wexe = hsi_wide(exe)) != NULL) {
      fd.Ptr = (ULONGLONG)(uintptr_t)wexe;
      fd.Size = (ULONG)((wcslen(wexe) + 1) * sizeof(wchar_t));
      fd.Type = EVENT_FILTER_TYPE_EXECUTABLE_NAME;
    }
  }
  if (fd.Size) { ep.EnableFilterDesc = &fd; ep.FilterDescCount = 1; }
  rc = EnableTraceEx2(e->heap, &heap_guid, EVENT_CONTROL_CODE_ENABLE_PROVIDER, TRACE_LEVEL_VERBOSE,
                      ~0ULL, 0, 0, &ep);
  free(wexe);
  if (rc != ERROR_SUCCESS) {
    snprintf(err, errlen, "cannot enable heap tracing%s (Windows error %lu)",
             pid ? " for that process (does it exist?)" : "", (unsigned long)rc);
    hsi_etw_stop(e);
    return -1;
  }
  return 0;
}

static void stop_one(TRACEHANDLE *h, EVENT_TRACE_PROPERTIES *p, hsi_etw *e) {
  if (!*h || !p) return;
  if (ControlTraceW(*h, NULL, p, EVENT_TRACE_CONTROL_STOP) == ERROR_SUCCESS) {
    e->events_lost += p->EventsLost;
    e->buffers_lost += p->LogBuffersLost + p->RealTimeBuffersLost;
  }
  *h = 0;
}

void hsi_etw_stop(hsi_etw *e) {
  if (e->heap) EnableTraceEx2(e->heap, &heap_guid, EVENT_CONTROL_CODE_DISABLE_PROVIDER, 0, 0, 0, 0, NULL);
  stop_one(&e->heap, e->hprops, e);
  stop_one(&e->kernel, e->kprops, e);
  ifeo_restore(e);
  free(e->kprops); free(e->hprops);
  e->kprops = e->hprops = NULL;
}
#else
typedef int hsi_win_etw_unused;   /* ISO C: a translation unit is not empty */
#endif
