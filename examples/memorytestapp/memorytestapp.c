/*
** memorytestapp.c -- the program behind examples/memorytestapp.etl: the
** shape of Microsoft's "Track User Mode Process Allocations" exercise
** (MemoryTestApp.exe).  It is built with clang and lld into a real x64
** executable and PDB (build.sh), whose function addresses and source
** lines the example trace's stacks use.  It is never run: the trace is
** written by make_examples.lua.
**
** No C runtime: the entry point and the two frames the MSVC CRT puts
** below main (invoke_main, __scrt_common_main_seh) are written here, so
** the stacks read as they do on Windows and the image stays small.
** Every function is noinline, so each call site is a real return address.
** RunInnerLoop is inlined into Main on purpose: the leak's stack then
** has an inline frame between InnerLoopOperation and Main.
*/
#include <windows.h>

#define NOINLINE __attribute__((noinline))
#define INLINE static inline __attribute__((always_inline))

static volatile LONG g_sink;
static HANDLE g_heap;

NOINLINE static void *InitSteadyState(void) {
  void *p = VirtualAlloc(NULL, 10u << 20, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
  g_sink += p != NULL;
  return p;
}

NOINLINE static void *StepUpMemory(void) {
  void *p = VirtualAlloc(NULL, 10u << 20, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
  g_sink += p != NULL;
  return p;
}

NOINLINE static void ManipulateTemporaryBuffer(void) {
  char *p = (char *)VirtualAlloc(NULL, 10u << 20, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
  if (p) {
    p[0] = 1;
    g_sink += p[0];
    VirtualFree(p, 0, MEM_RELEASE);
  }
}

NOINLINE static void Operation1(void) {
  ManipulateTemporaryBuffer();
  g_sink++;
}

/* The leak: a 40-byte block per call, never freed. */
NOINLINE static void *InnerLoopOperation(int n) {
  void *p = HeapAlloc(g_heap, 0, (SIZE_T)n * 8);
  g_sink++;
  return p;
}

NOINLINE static void ParseRecord(int kind) {
  void *a = HeapAlloc(g_heap, 0, 64);
  g_sink++;
  void *b = HeapAlloc(g_heap, 0, (SIZE_T)kind * 16);
  HeapFree(g_heap, 0, b);
  HeapFree(g_heap, 0, a);
}

NOINLINE static void FormatReport(int lines) {
  char *text = (char *)HeapAlloc(g_heap, 0, 256);
  g_sink++;
  char *line = (char *)HeapAlloc(g_heap, 0, (SIZE_T)lines * 32);
  HeapFree(g_heap, 0, line);
  HeapFree(g_heap, 0, text);
}

NOINLINE static void BuildLookupTable(int n) {
  void *keys = HeapAlloc(g_heap, 0, (SIZE_T)n * 8);
  g_sink++;
  void *values = HeapAlloc(g_heap, 0, (SIZE_T)n * 16);
  g_sink++;
  void *index = HeapAlloc(g_heap, 0, (SIZE_T)n * 4);
  HeapFree(g_heap, 0, index);
  HeapFree(g_heap, 0, values);
  HeapFree(g_heap, 0, keys);
}

NOINLINE static void CopyWorkItem(int n) {
  void *copy = HeapAlloc(g_heap, 0, (SIZE_T)n);
  g_sink++;
  HeapFree(g_heap, 0, copy);
}

NOINLINE static void ProcessWorkItem(int n) {
  BuildLookupTable(n);
  g_sink++;
  CopyWorkItem(n);
  g_sink++;
}

NOINLINE static DWORD WINAPI WorkerThreadProc(LPVOID arg) {
  int i;
  for (i = 0; i < 1000; i++) {
    ProcessWorkItem(i + (int)(INT_PTR)arg);
    g_sink++;
  }
  return 0;
}

/* The leaking loop, inlined into Main. */
INLINE void RunInnerLoop(int count) {
  int i;
  for (i = 0; i < count; i++) {
    InnerLoopOperation(5);
    Sleep(60);
  }
}

NOINLINE static int Main(void) {
  int i;
  HANDLE worker;
  g_heap = GetProcessHeap();
  worker = CreateThread(NULL, 0, WorkerThreadProc, NULL, 0, NULL);
  InitSteadyState();
  for (i = 0; i < 10; i++) {
    Operation1();
    g_sink++;
  }
  for (i = 0; i < 4681; i++) {
    ParseRecord(i & 7);
    g_sink++;
  }
  RunInnerLoop(319);
  for (i = 0; i < 100; i++) {
    FormatReport(i);
    g_sink++;
  }
  StepUpMemory();
  WaitForSingleObject(worker, INFINITE);
  return 0;
}

NOINLINE static int invoke_main(void) {
  int r = Main();
  g_sink++;
  return r;
}

NOINLINE static int __scrt_common_main_seh(void) {
  int r = invoke_main();
  g_sink++;
  return r;
}

void mainCRTStartup(void) {
  ExitProcess((UINT)__scrt_common_main_seh());
}
