/*
** test_lua_allocs.c -- the allocation API in Lua (lua_alloc.c,
** lua_stack.c) on synthetic traces written with the project's writer.
**
** This file writes the scenario traces into TMPDIR, opens a Lua state
** with the heapscript module as the CLI does, and runs
** tests/lua/allocs_scenarios.lua against them; the Lua side holds the
** hand-computed answers and reports "ok"/"not ok" lines.  Every scenario
** is small enough to compute by hand (see the comments in the Lua file),
** except "big", which checks that a loop over 100k records makes no
** garbage and times the C side.
**
** HS_ALLOCS_BENCH=N (e.g. 1000000) adds a trace of N heap blocks and
** prints how long the analysis, selection, summary, grouping and a
** cursor loop take over it.
*/
#include "unit.h"
#include "heapscript.h"
#include "writer.h"
#include "memev.h"
#include "lua_run.h"

#include <unistd.h>
#include <lualib.h>
#include <lua-lpeg.h>

#define S 10000000LL             /* ticks per second of the default QPC clock */

static char paths[16][512];
static int npaths;

static const char *tmp_path(const char *name) {
  return unit_tmp_path(paths[npaths++], 512, "lua-allocs-%s.etl", name);
}

/* ------------------------------------------------------------ writing */

static hsi_writer *open_writer(const char *name, hsi_writer_opts *o) {
  hsi_writer *w = NULL;
  char err[256];
  hsi_writer_opts def;
  if (!o) {
    memset(&def, 0, sizeof def);
    def.cpus = 2;
    o = &def;
  }
  if (hsi_writer_open(&w, tmp_path(name), o, err, sizeof err) != 0) {
    fprintf(stderr, "cannot write %s: %s\n", name, err);
    CHECK(0);
  }
  return w;
}

/* One memory event through the shared encoder, then its stack if any. */
static void mem(hsi_writer *w, hsi_memop *op, const uint64_t *frames, size_t n) {
  uint8_t pl[128];
  int group, type, hk = HS_HT_SYSTEM64;
  long len = hsi_memev_encode(op, 0, 0, 8, pl, sizeof pl, &group, &type);
  CHECK(len > 0);
  if (group == 0x02) hk = HS_HT_PERFINFO64;   /* VirtualAlloc: no ids in the header */
  CHECK_EQ(hsi_writer_kernel(w, 0, hk, group, type, hsi_memev_version(group, type), op->pid,
                             op->tid, op->ts, pl, (size_t)len), 0);
  if (n) CHECK_EQ(hsi_writer_stack(w, 1, op->ts + 3, op->ts, op->pid, op->tid, frames, n, 8), 0);
}

static void heap_op(hsi_writer *w, int kind, int64_t ts, uint64_t addr, uint64_t size,
                    const uint64_t *frames, size_t n) {
  hsi_memop op;
  memset(&op, 0, sizeof op);
  op.kind = kind; op.ts = ts; op.pid = 1000; op.tid = 1001; op.heap = 0x10000;
  op.addr = addr; op.size = size;
  mem(w, &op, frames, n);
}

#define NTDLL 0x7ff800000000ull
#define APP   0x7ff700000000ull

static void app_process(hsi_writer *w) {
  CHECK_EQ(hsi_writer_process(w, 0, 3, 8, 1000, 4, 100, "app.exe", "app.exe --leak"), 0);
  CHECK_EQ(hsi_writer_image(w, 0, 3, 8, 1000, APP, 0x10000, 101, "\\Device\\HarddiskVolume3\\app.exe"), 0);
  CHECK_EQ(hsi_writer_image(w, 0, 3, 8, 1000, NTDLL, 0x200000, 102, "\\SystemRoot\\System32\\ntdll.dll"), 0);
}

/*
** heap: the timeline of allocs_scenarios.lua (seconds):
**   r1 100 B @1 stack A, freed @3 with stack F     r2 200 B @2 stack A, freed @6
**   r3 400 B @4 stack B, never freed                r4 800 B @5 stack B, freed @5.5
**   r5 1600 B @7 stack C, never freed
**   @8 a Free of a block never seen (before the trace, size unknown)
**   @9 a lone ReAlloc of a block never seen (old size 50) into 60 B, stack D
**   @10 the last event (a thread rundown)
*/
static void write_heap(void) {
  static const uint64_t A[] = { NTDLL + 0x11234, APP + 0x2000 };
  static const uint64_t B[] = { NTDLL + 0x11234, APP + 0x3000 };
  static const uint64_t C[] = { NTDLL + 0x5555, APP + 0x4000 };
  static const uint64_t D[] = { NTDLL + 0x7777, APP + 0x6000, APP + 0x6100 };
  static const uint64_t F[] = { NTDLL + 0x6000, APP + 0x5000 };
  hsi_memop op;
  hsi_writer *w = open_writer("heap", NULL);
  if (!w) return;
  app_process(w);
  heap_op(w, HSI_OP_HEAP_ALLOC, 1 * S, 0x20000, 100, A, 2);
  heap_op(w, HSI_OP_HEAP_ALLOC, 2 * S, 0x20100, 200, A, 2);
  heap_op(w, HSI_OP_HEAP_FREE, 3 * S, 0x20000, 0, F, 2);
  heap_op(w, HSI_OP_HEAP_ALLOC, 4 * S, 0x20400, 400, B, 2);
  memset(&op, 0, sizeof op);
  op.kind = HSI_OP_HEAP_ALLOC; op.ts = 5 * S; op.pid = 1000; op.tid = 1001; op.heap = 0x10000;
  op.addr = 0x20800; op.size = 800; op.source = 2;   /* LFH */
  mem(w, &op, B, 2);
  heap_op(w, HSI_OP_HEAP_FREE, 5 * S + S / 2, 0x20800, 0, NULL, 0);
  heap_op(w, HSI_OP_HEAP_FREE, 6 * S, 0x20100, 0, NULL, 0);
  heap_op(w, HSI_OP_HEAP_ALLOC, 7 * S, 0x21000, 1600, C, 2);
  heap_op(w, HSI_OP_HEAP_FREE, 8 * S, 0x99990, 0, NULL, 0);
  memset(&op, 0, sizeof op);
  op.kind = HSI_OP_HEAP_REALLOC; op.ts = 9 * S; op.pid = 1000; op.tid = 1002; op.heap = 0x10000;
  op.addr = 0x30000; op.size = 60; op.old_addr = 0x88880; op.old_size = 50;
  mem(w, &op, D, 3);
  CHECK_EQ(hsi_writer_thread(w, 0, 4, 8, 1000, 1001, 0, 10 * S), 0);
  CHECK_EQ(hsi_writer_close(w), 0);
}

/*
** va: pid 200 commits 64 KiB @1, decommits its fifth page @2, commits
** 12 KiB elsewhere @3, decommits 8 KiB it never saw @3.5 (before the
** trace) and releases the first region @4; last event @5.
*/
static void write_va(void) {
  hsi_memop op;
  hsi_writer *w = open_writer("va", NULL);
  if (!w) return;
  CHECK_EQ(hsi_writer_process(w, 0, 3, 8, 200, 4, 10, "va.exe", NULL), 0);
  memset(&op, 0, sizeof op);
  op.pid = 200; op.tid = 201;
  op.kind = HSI_OP_VALLOC; op.ts = 1 * S; op.addr = 0x100000; op.size = 0x10000; op.flags = HS_MEM_COMMIT | HS_MEM_RESERVE;
  mem(w, &op, NULL, 0);
  op.kind = HSI_OP_VFREE; op.ts = 2 * S; op.addr = 0x104000; op.size = 0x1000; op.flags = HS_MEM_DECOMMIT;
  mem(w, &op, NULL, 0);
  op.kind = HSI_OP_VALLOC; op.ts = 3 * S; op.addr = 0x200000; op.size = 0x3000; op.flags = HS_MEM_COMMIT | HS_MEM_RESERVE;
  mem(w, &op, NULL, 0);
  op.kind = HSI_OP_VFREE; op.ts = 3 * S + S / 2; op.addr = 0x300000; op.size = 0x2000; op.flags = HS_MEM_DECOMMIT;
  mem(w, &op, NULL, 0);
  op.kind = HSI_OP_VFREE; op.ts = 4 * S; op.addr = 0x100000; op.size = 0; op.flags = HS_MEM_RELEASE;
  mem(w, &op, NULL, 0);
  CHECK_EQ(hsi_writer_thread(w, 0, 4, 8, 200, 201, 0, 5 * S), 0);
  CHECK_EQ(hsi_writer_close(w), 0);
}

#define TAG(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)

/*
** pool: in System (pid 4): "Leak" 100 B @1 and 200 B @2 never freed;
** "Ntfs" 64 B @3 freed @4; @5 a free of an "Ntfs" entry never seen
** (32 B, before the trace); NonPagedNx 0x200 for the second Leak.
*/
static void write_pool(void) {
  static const uint64_t K[] = { 0xfffff80000101000ull, 0xfffff80000102000ull };
  hsi_memop op;
  hsi_writer *w = open_writer("pool", NULL);
  if (!w) return;
  CHECK_EQ(hsi_writer_process(w, 0, 3, 8, 4, 0, 10, "System", NULL), 0);
  /* kernel images are listed under pid 0, as image rundowns have them */
  CHECK_EQ(hsi_writer_image(w, 0, 3, 8, 0, 0xfffff80000000000ull, 0x1000000, 11, "\\SystemRoot\\system32\\ntoskrnl.exe"), 0);
  memset(&op, 0, sizeof op);
  op.pid = 4; op.tid = 8;
  op.kind = HSI_OP_POOL_ALLOC; op.ts = 1 * S; op.addr = 0xffffa00000001000ull; op.size = 100; op.tag = TAG('L', 'e', 'a', 'k');
  mem(w, &op, K, 2);
  op.ts = 2 * S; op.addr = 0xffffa00000002000ull; op.size = 200; op.pool_type = 0x200;
  mem(w, &op, K, 2);
  op.ts = 3 * S; op.addr = 0xffffa00000003000ull; op.size = 64; op.tag = TAG('N', 't', 'f', 's'); op.pool_type = 1;
  mem(w, &op, NULL, 0);
  op.kind = HSI_OP_POOL_FREE; op.ts = 4 * S; op.size = 0;
  mem(w, &op, NULL, 0);
  op.ts = 5 * S; op.addr = 0xffffa00000009000ull; op.size = 32;
  mem(w, &op, NULL, 0);
  CHECK_EQ(hsi_writer_close(w), 0);
}

/*
** pids: pid 500 is a.exe from @1 to @3 (its 10 B block ends with it),
** then b.exe from @4 (20 B @5, never freed); pid 600 c.exe was running
** before the trace (30 B @6).
*/
static void write_pids(void) {
  hsi_memop op;
  hsi_writer *w = open_writer("pids", NULL);
  if (!w) return;
  CHECK_EQ(hsi_writer_process(w, 0, 3, 8, 600, 4, 10, "c.exe", "c.exe /x"), 0);
  CHECK_EQ(hsi_writer_process(w, 0, 1, 8, 500, 4, 1 * S, "a.exe", "a.exe"), 0);
  memset(&op, 0, sizeof op);
  op.kind = HSI_OP_HEAP_ALLOC; op.pid = 500; op.tid = 501; op.heap = 0x50000;
  op.ts = 2 * S; op.addr = 0x60000; op.size = 10;
  mem(w, &op, NULL, 0);
  CHECK_EQ(hsi_writer_process(w, 0, 2, 8, 500, 4, 3 * S, "a.exe", "a.exe"), 0);
  CHECK_EQ(hsi_writer_process(w, 0, 1, 8, 500, 4, 4 * S, "b.exe", "b.exe"), 0);
  op.ts = 5 * S; op.addr = 0x60000; op.size = 20;
  mem(w, &op, NULL, 0);
  op.pid = 600; op.tid = 601; op.ts = 6 * S; op.addr = 0x70000; op.size = 30;
  mem(w, &op, NULL, 0);
  CHECK_EQ(hsi_writer_close(w), 0);
}

/*
** Clocks for the time round trip: heap blocks at awkward tick values,
** including two one tick apart, under a given clock.
*/
static void write_clock(const char *name, int clock_type, int64_t freq, uint32_t mhz, int64_t start_ticks) {
  hsi_writer_opts o;
  hsi_writer *w;
  int64_t base, t[] = { 1, 7, 1234567, 1234568, 98765431, 3000000001LL, 3000000002LL };
  size_t i;
  memset(&o, 0, sizeof o);
  o.cpus = 2;
  o.clock_type = clock_type;
  o.perf_freq = freq;
  o.cpu_mhz = mhz;
  o.start_ticks = start_ticks;
  w = open_writer(name, &o);
  if (!w) return;
  base = clock_type == 2 ? 132223104000000000LL : start_ticks;
  for (i = 0; i < sizeof t / sizeof t[0]; i++) {
    hsi_memop op;
    memset(&op, 0, sizeof op);
    op.kind = HSI_OP_HEAP_ALLOC; op.pid = 700; op.tid = 701; op.heap = 0x10000;
    op.ts = base + t[i]; op.addr = 0x1000 + 0x100 * (uint64_t)i; op.size = 16 + i;
    mem(w, &op, NULL, 0);
  }
  CHECK_EQ(hsi_writer_close(w), 0);
}

/*
** big: n heap blocks of 1..100 bytes (i % 100 + 1), one every 10 ticks,
** the even ones freed 5 ticks after their alloc, with one of 16 stacks.
*/
static void write_big(const char *name, long n) {
  hsi_writer_opts o;
  hsi_writer *w;
  long i;
  uint64_t fr[2];
  memset(&o, 0, sizeof o);
  o.cpus = 2;
  o.buffer_size = 1 << 20;
  w = open_writer(name, &o);
  if (!w) return;
  app_process(w);
  for (i = 0; i < n; i++) {
    int64_t ts = 1000 + 10 * (int64_t)i;
    fr[0] = NTDLL + 0x11234;
    fr[1] = APP + 0x1000 + 0x10 * (uint64_t)(i % 16);
    heap_op(w, HSI_OP_HEAP_ALLOC, ts, 0x1000000 + 0x100 * (uint64_t)i, (uint64_t)(i % 100 + 1), fr, 2);
    if (i % 2 == 0) heap_op(w, HSI_OP_HEAP_FREE, ts + 5, 0x1000000 + 0x100 * (uint64_t)i, 0, NULL, 0);
  }
  CHECK_EQ(hsi_writer_close(w), 0);
}

/* ------------------------------------------------------------ running */

static int msghandler(lua_State *L) {
  luaL_traceback(L, L, lua_tostring(L, 1) ? lua_tostring(L, 1) : "(error object)", 1);
  return 1;
}

/* A Lua state set up as the CLI sets one up (lua_run.c pmain). */
static lua_State *new_state(void) {
  lua_State *L = luaL_newstate();
  if (!L) return NULL;
  luaL_openlibs(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_lpeg);
  lua_setfield(L, -2, "lpeg");
  lua_pop(L, 1);
  luaL_requiref(L, "heapscript", hsi_lua_open_module, 1);
  lua_pop(L, 1);
  return L;
}

static void run_scenarios(const char *const *names, int n) {
  const char *dir = getenv("HS_SRCDIR");
  char script[1024];
  lua_State *L = new_state();
  int i, st;
  CHECK(L != NULL);
  if (!L) return;
  snprintf(script, sizeof script, "%s/tests/lua/allocs_scenarios.lua", dir && *dir ? dir : ".");
  lua_createtable(L, 0, n);
  for (i = 0; i < n; i++) {
    lua_pushstring(L, paths[i]);
    lua_setfield(L, -2, names[i]);
  }
  lua_setglobal(L, "SCENARIOS");
  lua_pushcfunction(L, msghandler);
  st = luaL_loadfile(L, script);
  if (st == LUA_OK) st = lua_pcall(L, 0, 2, 1);
  if (st != LUA_OK) {
    fprintf(stderr, "%s\n", lua_tostring(L, -1));
    CHECK(0);
  } else {
    lua_Integer passed = lua_tointeger(L, -2), failed = lua_tointeger(L, -1);
    printf("allocs_scenarios.lua: %d passed, %d failed\n", (int)passed, (int)failed);
    CHECK(passed > 100);
    CHECK_EQ(failed, 0);
  }
  lua_close(L);   /* runs every __gc: the sanitizer build sees any leak */
}

/* HS_ALLOCS_BENCH=N: time the C side over N records. */
static void bench(long n) {
  lua_State *L = new_state();
  const char *p;
  int st;
  write_big("bench", n);
  p = paths[npaths - 1];
  lua_pushstring(L, p);
  lua_setglobal(L, "BENCH");
  st = luaL_dostring(L,
    "local t0 = os.clock()\n"
    "local tr = assert(heapscript.open(BENCH))\n"
    "local function lap(what) local t = os.clock(); print(('%-34s %8.3f s'):format(what, t - t0)); t0 = t end\n"
    "local A = tr:allocations() lap('analysis + allocations{}: ' .. #A)\n"
    "local s = A:summary() lap('summary (with peak)')\n"
    "local g = A:group('stack', {sort = 'impacting'}) lap('group by stack: ' .. #g)\n"
    "g = A:group('size', {sort = 'bytes', top = 10}) lap('group by size, top 10')\n"
    "local F = A:filter{size = {50, 60}, class = 'AIFO'} lap('filter size+class: ' .. #F)\n"
    "F = A:filter{stack = 'app%.exe%+0x1010'} lap('filter by stack pattern: ' .. #F)\n"
    "local n, b = 0, 0 for a in A:each() do b = b + a.size end lap('each() reading size')\n"
    "local W = A:where(function(a) return a.size > 50 end) lap('where(fn): ' .. #W)\n"
    "g = A:group(function(a) return a.size % 7 end) lap('group(fn): ' .. #g)\n"
    "local T = A:top(10) lap('top(10) by size')\n"
    "local ser = A:series{points = 0} lap('series every change: ' .. #ser.time)\n");
  if (st != LUA_OK) fprintf(stderr, "bench: %s\n", lua_tostring(L, -1));
  lua_close(L);
  remove(p);
}

TEST(scenarios) {
  static const char *const names[] = { "heap", "va", "pool", "pids", "qpc", "systime", "cycles", "big" };
  int i;
  write_heap();
  write_va();
  write_pool();
  write_pids();
  write_clock("qpc", 1, 3579545, 0, 123456789);
  write_clock("systime", 2, 0, 0, 0);
  write_clock("cycles", 3, 0, 2995, 5000000000LL);
  write_big("big", 100000);
  if (!unit_failed) run_scenarios(names, 8);
  for (i = 0; i < npaths; i++) remove(paths[i]);
}

int main(void) {
  const char *b = getenv("HS_ALLOCS_BENCH");
  RUN(scenarios);
  if (b && atol(b) > 0) bench(atol(b));
  return UNIT_DONE();
}
