-- test_allocs.lua -- the allocation API on the shipped example traces
-- (examples/README.md states their ground truth) and on real traces:
-- trace:processes() against the Process events themselves, times that
-- agree with heapscript.Event to the last bit, trace:memory_stats()
-- against the reader, and an analysis that does not disturb a running
-- events() loop.
--
-- The corpus has no heap, VirtualAlloc or pool events; the examples and
-- the synthetic scenarios of tests/unit/test_lua_allocs.c (with
-- tests/lua/allocs_scenarios.lua) cover the allocation figures.
--
-- Run: heapscript tests/lua/test_allocs.lua from the top of the tree.
-- Without the corpus (HEAPSCRIPT_CORPUS, default ../shared/traces) the
-- real-trace part is skipped, unless CI=true.

package.path = "tests/lua/?.lua;tests/corpus/?.lua;" .. package.path
local T = require "testlib"
local check, eq, near, test, raises = T.check, T.eq, T.near, T.test, T.raises
local function class_is(c, count, bytes, name)
  eq(c.count, count, name .. " count")
  eq(c.bytes, bytes, name .. " bytes")
end

---------------------------------------------------------- the examples

local MiB = 1048576

test("examples/memorytestapp.etl: VirtualAlloc", function()
  local t <close> = assert(heapscript.open("examples/memorytestapp.etl"))
  local V = t:allocations{kind = "virtual"}
  eq(#V, 12, "12 regions")
  local s = V:summary()
  class_is(s.AIFO, 2, 20 * MiB, "AIFO")
  class_is(s.AIFI, 10, 100 * MiB, "AIFI")
  eq(s.impacting, 20 * MiB, "impacting")
  eq(s.transient, 100 * MiB, "transient")
  eq(s.peak, 31457280, "peak commit")
  eq(s.peak_time, 11.05, "peak first reached at 11.05 s")
  s = V:summary{10, 20}
  class_is(s.AIFO, 1, 10 * MiB, "[10,20] AIFO")
  class_is(s.AIFI, 5, 50 * MiB, "[10,20] AIFI")
  class_is(s.AOFO, 1, 10 * MiB, "[10,20] AOFO")
  class_is(s.AOFI, 0, 0, "[10,20] AOFI")
  eq(s.impacting, 10 * MiB, "[10,20] impacting")
  local spikes = t:allocations{kind = "virtual", stack = "%+0x1"}   -- frames are module+RVA here
  check(#spikes >= 10, "stack filter without symbols", #spikes)
  heapscript.symbols("examples/memorytestapp.sym")
  spikes = t:allocations{kind = "virtual", stack = "!ManipulateTemporaryBuffer%+"}
  eq(#spikes, 10, "the spikes, by a stack pattern over symbol names")
  local all01, releases = true, 0
  for a in spikes:each() do
    all01 = all01 and a.lifetime == 0.1 and a.reason == "release"
    if a.free_stack and a.free_stack:frame(3) == "MemoryTestApp.exe!ManipulateTemporaryBuffer+0x43 [memorytestapp.c:43]" then
      releases = releases + 1
    end
  end
  check(all01, "each spike is released exactly 0.1 s later")
  eq(releases, 10, "all 10 release stacks (VirtualFree has no tid; heap frees without stacks do not stop it)")
  local steady = t:allocations{kind = "virtual", stack = "InitSteadyState"}
  local a1
  for a in steady:each() do a1 = {a.alloc_time, a.address, a.size, a.pid, a.process} end
  eq(a1[1], 0.5, "steady commit at 0.5 s")
  eq(a1[2], 0x23a5c200000, "steady commit address")
  eq(a1[3], 10 * MiB, "steady commit size")
  eq(a1[4], 5812, "pid from the payload")
  eq(a1[5], "MemoryTestApp.exe", "process")
  heapscript.symbols(false)
end)

test("examples/memorytestapp.etl: heap", function()
  local t <close> = assert(heapscript.open("examples/memorytestapp.etl"))
  heapscript.symbols("examples/memorytestapp.sym")
  local H = t:allocations{kind = "heap"}
  eq(#H, 5000, "5000 blocks")
  local s = H:summary()
  class_is(s.AIFO, 319, 12760, "AIFO: the leak")
  class_is(s.AIFI, 4681, 2832912, "AIFI: balanced traffic")
  eq(s.impacting, 12760, "impacting")
  eq(s.peak, 34840, "peak outstanding heap")
  eq(s.peak_time, 18.54, "peak first reached at 18.54 s")
  eq(#t:allocations{kind = "heap", size = 40}, 644, "644 blocks of 40 bytes")
  local g = H:group("stack", {sort = "impacting", top = 1})[1]
  eq(g.impacting, 12760, "top stack by impacting")
  eq(g.count, 319, "... holds the 319 leaked blocks")
  eq(tostring(g.stack), table.concat({
    "ntdll.dll!RtlpAllocateHeapInternal+0x35c",
    "ntdll.dll!RtlAllocateHeap+0x3e",
    "MemoryTestApp.exe!InnerLoopOperation+0x1f [memorytestapp.c:53]",   -- from examples/MemoryTestApp.pdb
    "MemoryTestApp.exe!RunInnerLoop [memorytestapp.c:111]",             -- an inline level
    "MemoryTestApp.exe!Main+0xa5 [memorytestapp.c:129]",
    "MemoryTestApp.exe!invoke_main+0xf [memorytestapp.c:141]",
    "MemoryTestApp.exe!__scrt_common_main_seh+0xf [memorytestapp.c:147]",
    "MemoryTestApp.exe!mainCRTStartup+0xf [memorytestapp.c:152]",
    "kernel32.dll!BaseThreadInitThunk+0x14",
    "ntdll.dll!RtlUserThreadStart+0x21"}, "\n"), "... with the documented stack")
  eq(#H:group("stack"), 9, "9 heap stacks (the leak and 8 balanced)")
  do -- peaks of the kept groups only (top N by another field) are the peaks of every group
    local all, same, n = {}, 0, 0
    for _, x in ipairs(H:group("stack")) do all[x.key] = x end
    for _, x in ipairs(H:group("stack", {sort = "count", top = 4})) do
      n = n + 1
      if all[x.key].peak == x.peak and all[x.key].peak_time == x.peak_time and x.peak > 0 then same = same + 1 end
    end
    eq(same, 4, "group top 4 by count: the same peaks and peak times as the whole grouping (" .. n .. " groups)")
    local p = H:group("process", {top = 1})[1]
    eq(p.peak, s.peak, "the one process's group: the kind's peak")
    eq(p.peak_time, s.peak_time, "... reached at the same time")
  end
  do -- fields = {...}: the groups carry those figures alone, equal to the whole groups'
    local FIGS = { "count", "bytes", "size", "impacting", "transient", "unknown_size", "before_trace",
                   "before_bytes", "outstanding_start", "outstanding_start_count", "outstanding_end",
                   "outstanding_end_count", "peak", "peak_time" }
    local all = {}
    for _, x in ipairs(H:group("stack")) do all[x.key] = x end
    local lean = H:group("stack", {fields = {"AIFO", "impacting"}})
    eq(#lean, 9, "fields: the same 9 groups")
    local same, extra = 0, {}
    for _, x in ipairs(lean) do
      local a = all[x.key]
      if x.impacting == a.impacting and x.AIFO.count == a.AIFO.count and x.AIFO.bytes == a.AIFO.bytes
         and x.stack == a.stack then same = same + 1 end
      for k in pairs(x) do
        if k ~= "key" and k ~= "stack" and k ~= "AIFO" and k ~= "impacting" then extra[#extra + 1] = k end
      end
    end
    eq(same, 9, "fields AIFO, impacting: the whole groups' figures and stacks")
    eq(table.concat(extra, ","), "", "... and no other field")
    -- each figure alone, peaks too (computed only for the kept groups with top)
    for _, f in ipairs(FIGS) do
      local one = H:group("stack", {fields = {f}, sort = "count", top = 4})
      local ok = #one == 4
      for _, x in ipairs(one) do ok = ok and x[f] == all[x.key][f] and x.allocs == nil and x.AIFI == nil end
      check(ok, "fields {" .. f .. "}, top 4 by count: the whole groups' " .. f)
    end
    local ea = H:group("stack", {fields = {"allocs"}, sort = "count", top = 1})[1]
    eq(#ea.allocs, all[ea.key].count, "fields {allocs}: the group's records")
    eq(ea.allocs:summary().bytes, all[ea.key].bytes, "... the same records")
    eq(ea.count, nil, "... and no count")
    local p = H:group("process", {fields = {}})[1]
    eq(p.process, "MemoryTestApp.exe", "fields {}: the key's own fields stay")
    eq(p.count, nil, "... no figure")
    raises(function() H:group("stack", {fields = {"AIFO", "leaks"}}) end, "unknown field 'leaks'",
      "fields: an unknown name is an error")
    raises(function() H:group("stack", {fields = "AIFO"}) end, "a list of field names expected",
      "fields: a list")
  end
  local i, ok = 0, true
  for a in t:allocations{kind = "heap", outstanding = true}:sorted("alloc_time"):each() do
    ok = ok and a.address == 0x23a5a4a1010 + 0x30 * i and math.abs(a.alloc_time - (0.3 + 0.06 * i)) < 1e-9
       and a.size == 40 and a.heap == 0x23a5a3f0000 and a.source == "LFH"
    i = i + 1
  end
  eq(i, 319, "the leaked blocks")
  check(ok, "leaked block i is at 0x23a5a4a1010 + 0x30 i, allocated at 0.3 + 0.06 i s, 40 bytes, LFH")
  local st = t:memory_stats()
  eq(st.stacks.distinct, 13, "13 distinct stacks")
  eq(st.lifetimes.ops.heap_alloc, 5000, "HeapAlloc events")
  eq(st.lifetimes.ops.heap_free, 4681, "HeapFree events")
  eq(st.lifetimes.heap_free_unknown, 0, "no frees of unknown blocks")
  local ps = t:processes()
  eq(#ps, 1, "one process")
  eq(ps[1].pid, 5812, "pid")
  eq(ps[1].parent, 3904, "parent")
  eq(ps[1].name, "MemoryTestApp.exe", "name")
  heapscript.symbols(false)
end)

test("examples/notmyfault.etl: pool", function()
  local t <close> = assert(heapscript.open("examples/notmyfault.etl"))
  local P = t:allocations()
  local s = P:summary()
  class_is(s.AIFO, 320, 20971520, "AIFO: the leak")
  class_is(s.AIFI, 1320, 1172544, "AIFI")
  eq(s.peak, 20971968, "peak outstanding pool")
  eq(s.peak_time, 20.1875, "peak first reached at 20.1875 s")
  local g = P:group("tag", {sort = "bytes"})
  local tags, bytes = {}, {}
  for k, x in ipairs(g) do tags[k], bytes[k] = x.tag, x.bytes end
  eq(table.concat(tags, ","), "Leak,MmSt,File,Irp ", "tags by bytes")
  eq(table.concat(bytes, ","), "20971520,822784,206400,143360", "bytes by tag")
  local L = t:allocations{tag = "Leak"}
  eq(#L, 320, "tag Leak")
  eq(#L:filter{outstanding = true}, 320, "never freed")
  eq(#t:allocations{stack = "^myfault%.sys"}, 320, "only Leak has myfault.sys frames")
  local first
  for a in L:sorted("alloc_time"):each() do
    first = first or {a.address, a.alloc_time, a.pool_type, a.pid, a.process}
  end
  eq(first[1], 0xffffc30f41200000, "first Leak entry")
  eq(first[2], 0.25, "first Leak at 0.25 s")
  eq(first[3], "NonPaged", "pool type")
  eq(first[4], 6140, "pid")
  eq(first[5], "NotMyFault64.exe", "process")
  -- pool events have no ids in their header: the process is their StackWalk's
  local NMF = t:allocations{kind = "pool", process = "NotMyFault64.exe"}
  eq(#NMF, 640, "process filter: NotMyFault64.exe's Leak and Irp allocations")
  local out = NMF:filter{outstanding = true}
  eq(#out, 320, "... of which the leak is outstanding")
  eq(out:summary().bytes, 20971520, "... 20 MiB")
  local byproc = P:group("process", {sort = "outstanding_end"})
  eq(byproc[1].process, "NotMyFault64.exe", "the leaking process first")
  eq(byproc[2].process, "System", "then System's balanced traffic")
  eq(#byproc, 2, "every pool record has a process")
  eq(t:memory_stats().records_no_process, 0, "no record without a process")
  eq(P:group("tag", {sort = "bytes"})[3].allocs:summary().count, 600, "File allocations")
  heapscript.symbols("examples/notmyfault.sym")
  local st
  for a in L:each() do st = a.stack break end
  eq(st:frame(3), "myfault.sys!MyfaultLeakPool+0x3b", "Leak stack, named")
  eq(st:frame(-1), "ntdll.dll!RtlUserThreadStart+0x21", "... outermost")
  eq(#st, 15, "... 15 frames, kernel first")
  eq(#t:allocations{stack = "!MyfaultLeakPool%+"}, 320, "stack pattern over names")
  heapscript.symbols(false)
  eq(st:frame(3):match("^myfault%.sys%+0x") ~= nil, true, "frames named again when the map is dropped")
  eq(t:memory_stats().stacks.distinct, 5, "5 distinct stacks")
end)

---------------------------------------------------------- real traces

-- the lifetime filter selects in C what a.lifetime tests in Lua, to the
-- last record, on every kind of the examples, in trace:allocations and
-- A:filter, with open ends, a single value, names, and as an empty range
test("lifetime filter", function()
  local ranges = { { 0, 0.001 }, { 0.05, 0.1 }, { 0.1 }, { nil, 0.0005 }, { min = 0.001, max = 1 }, 0.1, { 2, 1 } }
  for _, path in ipairs{ "examples/memorytestapp.etl", "examples/notmyfault.etl" } do
    local t <close> = assert(heapscript.open(path))
    local A = t:allocations{}
    for i, rg in ipairs(ranges) do
      local lo, hi
      if type(rg) == "number" then lo, hi = rg, rg else lo, hi = rg[1] or rg.min or 0, rg[2] or rg.max or math.huge end
      local want = A:where(function(a) local l = a.lifetime; return l ~= nil and l >= lo and l <= hi end)
      local got, got2 = t:allocations{ lifetime = rg }, A:filter{ lifetime = rg }
      local function ids(S) local l = {} for a in S:each() do l[#l + 1] = a.index end return table.concat(l, ",") end
      local same = #got == #want and ids(got) == ids(want) and ids(got2) == ids(want)
      check(same, ("lifetime filter %d on %s: %d records as a.lifetime selects (%d)"):format(i, path, #got, #want))
    end
    check(#t:allocations{ lifetime = { 0, 0.001 }, class = "AIFI" } > 0, path .. ": short-lived records exist")
    local kept = t:allocations{ lifetime = { 0 } }
    check(#t:allocations{ outstanding = true, lifetime = { 0 } } == 0, path .. ": never-freed records have no lifetime")
    check(#kept <= #A, path .. ": a lifetime range selects freed records only")
    raises(function() t:allocations{ lifetime = -1 } end, "not negative", "a negative lifetime raises")
    raises(function() t:allocations{ lifetime = "short" } end, "seconds expected", "a lifetime that is not a number raises")
  end
end)

-- A:sorted(field [, desc]) and A:top(n, field) against a plain Lua sort of
-- what the cursor reads, by the order ALLOCATIONS.md states: unknown sizes
-- and before-trace alloc times lowest; never-freed free times, unknown
-- lifetimes and every other missing field (pid, instance, heap, tag)
-- highest; addresses and heap handles as unsigned numbers; tags bytewise;
-- kinds and reasons in their documented order.  Descending reverses the
-- key order; ties stay in record order either way.
local KIND_ORDER = { heap = 0, virtual = 1, pool = 2 }
local REASON_ORDER = { none = 0, free = 1, realloc = 2, destroy = 3, process_end = 4, decommit = 5,
                       release = 6, reused = 7 }
local LOW, HIGH = {}, {}                 -- missing values that sort first, last
local SORT_KEYS = {
  size = function(a) return a.size == nil and LOW or a.size end,
  alloc_time = function(a) return a.alloc_time == nil and LOW or a.alloc_time end,
  free_time = function(a) return a.free_time == nil and HIGH or a.free_time end,
  lifetime = function(a) return a.lifetime == nil and HIGH or a.lifetime end,
  address = function(a) return { u = a.address } end,
  index = function(a) return a.index end,
  pid = function(a) return a.pid == nil and HIGH or a.pid end,
  instance = function(a) return a.instance == nil and HIGH or a.instance end,
  heap = function(a) return a.heap == nil and HIGH or { u = a.heap } end,
  tag = function(a) return a.tag == nil and HIGH or a.tag end,
  kind = function(a) return assert(KIND_ORDER[a.kind], a.kind) end,
  reason = function(a) return assert(REASON_ORDER[a.reason], a.reason) end,
}

local function key_less(x, y)            -- x < y, both keys of one field
  if x == y then return false end
  if x == LOW or y == HIGH then return true end
  if x == HIGH or y == LOW then return false end
  if type(x) == "table" then return math.ult(x.u, y.u) end
  return x < y
end

local function key_same(x, y)
  if type(x) == "table" and type(y) == "table" then return x.u == y.u end
  return x == y
end

local function check_sorting(A, name)
  local recs = {}
  for a in A:each() do
    local r = { index = a.index }
    for f, k in pairs(SORT_KEYS) do r[f] = k(a) end
    recs[#recs + 1] = r
  end
  local function indexes(S) local l = {} for a in S:each() do l[#l + 1] = a.index end return l end
  local fields = {}
  for f in pairs(SORT_KEYS) do fields[#fields + 1] = f end
  table.sort(fields)
  for _, f in ipairs(fields) do
    for _, desc in ipairs{ false, true } do
      local want = {}
      for i, r in ipairs(recs) do want[i] = r end
      table.sort(want, function(x, y)
        local kx, ky = x[f], y[f]
        if not key_same(kx, ky) then
          if desc then return key_less(ky, kx) end
          return key_less(kx, ky)
        end
        return x.index < y.index
      end)
      for i, r in ipairs(want) do want[i] = r.index end
      local what = ("%s: sorted(%q%s)"):format(name, f, desc and ", true" or "")
      T.list_eq(indexes(A:sorted(f, desc)), want, what)
      if desc then
        for _, n in ipairs{ 1, 3, #recs // 5, #recs } do
          local first = {}
          for i = 1, math.min(n, #want) do first[i] = want[i] end
          T.list_eq(indexes(A:top(n, f)), first, ("%s: top(%d, %q)"):format(name, n, f))
        end
      end
    end
  end
end

-- Heap, VirtualAlloc and pool records of two processes, one pool record
-- that no StackWalk names (no pid, no instance), before-trace records
-- (a heap free and a release of blocks never seen: size unknown, a size),
-- kernel addresses (negative in Lua), two heaps and equal keys for ties.
local function mixed_trace()
  local path = T.tmpname()
  local w = assert(heapscript.writer(path, { cpus = 2 }))
  local K = -0x3CF0C0000000
  w:process { op = "dcstart", pid = 100, ppid = 4, ts = 10, name = "app.exe" }
  w:process { op = "dcstart", pid = 200, ppid = 4, ts = 11, name = "other.exe" }
  w:thread { op = "dcstart", pid = 100, tid = 101, ts = 12 }
  w:thread { op = "dcstart", pid = 200, tid = 201, ts = 13 }
  local stk = { 0x401000, 0x402000 }
  w:pool { op = "alloc", pid = 100, tid = 101, ts = 1000, tag = "Leak", size = 64, entry = K + 0x1000,
           stack = { 0x401100 }, header = "PERFINFO64" }
  w:pool { op = "alloc", pid = 100, tid = 101, ts = 1100, tag = "NoSk", size = 64, entry = K + 0x2000,
           header = "PERFINFO64" }
  w:pool { op = "alloc", pid = 200, tid = 201, ts = 1200, tag = "Abc ", size = 32, entry = K + 0x3000,
           stack = { 0x401100 }, header = "PERFINFO64" }
  w:pool { op = "free", pid = 200, tid = 201, ts = 1300, tag = "Abc ", size = 32, entry = K + 0x3000,
           header = "PERFINFO64" }
  w:heap { op = "alloc", pid = 100, tid = 101, ts = 2000, heap = 0x200000, addr = 0x4000, size = 32, stack = stk }
  w:heap { op = "alloc", pid = 200, tid = 201, ts = 2000, heap = 0x300000, addr = 0x4000, size = 32, stack = stk }
  w:heap { op = "alloc", pid = 100, tid = 101, ts = 2100, heap = 0x200000, addr = 0x5000, size = 64, stack = stk }
  w:heap { op = "free", pid = 100, tid = 101, ts = 2200, heap = 0x200000, addr = 0x5000 }
  w:heap { op = "free", pid = 200, tid = 201, ts = 2300, heap = 0x300000, addr = 0x9000 }  -- never seen
  w:heap { op = "free", pid = 100, tid = 101, ts = 2400, heap = 0x200000, addr = 0x4000 }
  w:virtual { op = "alloc", pid = 100, tid = 101, ts = 3000, addr = 0x800000, size = 0x20000,
              flags = { "reserve", "commit" }, stack = stk }
  w:virtual { op = "free", pid = 100, tid = 101, ts = 3100, addr = 0x808000, size = 0x1000, flags = { "decommit" } }
  w:virtual { op = "free", pid = 200, tid = 201, ts = 3200, addr = 0x700000, size = 0x10000, flags = { "release" } }
  w:process { op = "dcend", pid = 100, ppid = 4, ts = 9000, name = "app.exe" }
  assert(w:close())
  return path
end

test("sorted and top: every field against a plain Lua sort", function()
  local mixed = mixed_trace()
  for _, path in ipairs{ mixed, "examples/memorytestapp.etl", "examples/notmyfault.etl" } do
    local t <close> = assert(heapscript.open(path))
    local A = t:allocations()
    if path == mixed then
      local kinds, noproc, before = {}, 0, 0
      for a in A:each() do
        kinds[a.kind] = true
        if a.instance == nil then noproc = noproc + 1 end
        if a.before_trace then before = before + 1 end
      end
      check(kinds.heap and kinds.virtual and kinds.pool, "the written trace has every kind")
      eq(noproc, 1, "one record without a process (the pool alloc no StackWalk names)")
      check(before >= 2, "before-trace records", before)
    end
    check_sorting(A, path == mixed and "written trace" or path)
    check_sorting(A:filter{ kind = "heap" }, (path == mixed and "written trace" or path) .. " heap")
  end
end)

-- A:group(by) against the cursor: every record of the selection in exactly
-- one group, each group's records all of its key (the same cached Stack
-- for stacks), its count and bytes their tally; and A:group(by, {sort = f})
-- in the order of f (largest first unless desc = false; "key" ascending),
-- ties by key, for every field a group can be sorted by.
local GROUP_BYS = { "stack", "free_stack", "process", "pid", "heap", "tag", "size", "kind", "reason", "class" }
local function of_group(a, g, by)
  if by == "stack" then return (a.stack and a.stack.id or 0) == g.key end
  if by == "free_stack" then return (a.free_stack and a.free_stack.id or 0) == g.key end
  if by == "process" then return a.instance == g.instance end
  if by == "pid" then return a.pid == g.key end
  if by == "class" then return a:class() == g.key end
  return a[by] == g.key
end
local GROUP_SORTS = { "impacting", "bytes", "count", "size", "transient", "peak", "peak_time", "key",
  "outstanding_start", "outstanding_end", "unknown_size", "before_trace", "aifi_count", "aifo_count",
  "aofi_count", "aofo_count", "aifi_bytes", "aifo_bytes", "aofi_bytes", "aofo_bytes" }
local function group_value(g, f)
  local cls, what = f:match("^(a[io]f[io])_(%a+)$")
  if cls then return g[cls:upper()][what] end
  return g[f]
end

local function check_grouping(A, name)
  for _, by in ipairs(GROUP_BYS) do
    local G, seen, total, ok = A:group(by), {}, 0, true
    local keys = {}
    for _, g in ipairs(G) do
      local n, bytes = 0, 0
      local k = g.key == nil and "nil" or g.key
      if keys[k] then ok = false end
      keys[k] = true
      for a in g.allocs:each() do
        n, bytes = n + 1, bytes + (a.size or 0)
        if not of_group(a, g, by) or seen[a.index] then ok = false end
        seen[a.index] = true
      end
      ok = ok and g.count == n and g.bytes == bytes
      total = total + n
    end
    check(ok and total == #A, ("%s: group(%q): %d groups partition the %d records, counts and bytes tally"):format(
      name, by, #G, #A), ("%d of %d records"):format(total, #A))
  end
  for _, by in ipairs{ "size", "stack", "process" } do
    for _, f in ipairs(GROUP_SORTS) do
      for _, desc in ipairs{ true, false } do
        local G = A:group(by, { sort = f, desc = desc })
        local ok = #G == #A:group(by)
        for i = 2, #G do
          local a, b = group_value(G[i - 1], f), group_value(G[i], f)
          if f == "key" then a, b = G[i - 1].key or math.huge, G[i].key or math.huge end
          local before
          if a == b then before = (G[i - 1].key or math.huge) < (G[i].key or math.huge)
          elseif desc then before = a > b else before = a < b end
          ok = ok and before
        end
        check(ok, ("%s: group(%q, {sort = %q, desc = %s}) in order, ties by key"):format(name, by, f, desc))
      end
    end
  end
end

test("group: every key against the cursor, every sort field", function()
  local mixed = mixed_trace()
  for _, path in ipairs{ mixed, "examples/memorytestapp.etl", "examples/notmyfault.etl" } do
    local t <close> = assert(heapscript.open(path))
    local name = path == mixed and "written trace" or path
    check_grouping(t:allocations(), name)
    check_grouping(t:allocations{ window = { 0.0001, 0.0002 } }, name .. " [short window]")
  end
end)

test("trace:scope keeps only what a script asks about", function()
  local all <close> = assert(heapscript.open("examples/memorytestapp.etl"))
  local n_heap, n_virtual = #all:allocations{kind = "heap"}, #all:allocations{kind = "virtual"}
  local t <close> = assert(heapscript.open("examples/memorytestapp.etl"))
  eq(t:scope{kind = "heap"}, t, "scope returns the trace")
  eq(#t:allocations(), n_heap, "scope{kind = heap}: only the heap records exist")
  eq(t:memory_stats().out_of_scope, 22, "the 22 VirtualAlloc events were left out")
  local a = t:allocations{kind = "heap", outstanding = true}:group("stack", {top = 1})[1]
  eq(a.count, 319, "answers inside the scope are unchanged")
  raises(function() t:scope{kind = "pool"} end, "comes before the first", "scope after the analysis is an error")
  local u <close> = assert(heapscript.open("examples/memorytestapp.etl"))
  u:scope{process = "MEMORYTESTAPP.EXE", kind = {"virtual"}}
  eq(#u:allocations(), n_virtual, "scope by process name (ignoring case) and kind list")
  local v <close> = assert(heapscript.open("examples/memorytestapp.etl"))
  v:scope{pid = {1, 2}}
  eq(#v:allocations(), 0, "a pid list that matches nothing keeps nothing")
  local w <close> = assert(heapscript.open("examples/memorytestapp.etl"))
  raises(function() w:scope{colour = 1} end, "unknown scope 'colour'", "unknown scope key")
  raises(function() w:scope{kind = "heapz"} end, "unknown kind 'heapz'", "unknown kind")
  eq(#w:allocations(), n_heap + n_virtual, "a failed scope leaves everything in")
  -- a pool entry allocated in a.exe's context and freed in the System's: scoped to either
  -- process, the answers about it are those without a scope
  local S = 10000000
  local path = T.tmpname(".etl")
  local wr = assert(heapscript.writer(path))
  wr:process { op = "dcstart", pid = 4, ts = 1, name = "System" }
  wr:process { op = "dcstart", pid = 100, ts = 2, name = "a.exe" }
  wr:pool { op = "alloc", pid = 100, tid = 101, ts = 1 * S, tag = "Xfer", size = 100, entry = 0xFFFFC30F41200000 }
  wr:pool { op = "free", pid = 4, tid = 8, ts = 2 * S, tag = "Xfer", size = 100, entry = 0xFFFFC30F41200000 }
  wr:pool { op = "alloc", pid = 4, tid = 8, ts = 3 * S, tag = "Last", size = 1, entry = 0xFFFFC30F41300000 }
  assert(wr:close())
  local function answers(scope, process)
    local t <close> = assert(heapscript.open(path))
    if scope then t:scope(scope) end
    local A = t:allocations { process = process }
    local s = A:summary()
    local r = {}
    for a in A:each() do r[#r + 1] = ("%s %s %s"):format(a.tag, tostring(a.free_time), a.reason) end
    return ("%d records: %s; outstanding %d, before-trace %d"):format(#A, table.concat(r, ", "), s.outstanding_end,
                                                                      s.before_trace)
  end
  for _, p in ipairs { "a.exe", "System" } do
    eq(answers({ process = p }, p), answers(nil, p), "pool, scope{process = " .. p .. "}: the answers without a scope")
    eq(answers({ pid = p == "System" and 4 or 100, kind = "pool" }, p), answers(nil, p), "... and scope{pid =} of it")
  end
  os.remove(path)
end)

-- a pid that starts again without an End (the End lost): its earlier instance ended the tick
-- before, as at an End; what each instance held stays outstanding in that instance (an exit frees
-- nothing: LIFETIMES.md), so none of it is the next instance's
-- One event, one StackWalk, whatever records it makes or ends: a ReAlloc
-- gives its new block its alloc stack and the block it ends its free
-- stack, a commit over pages partly committed gives every piece the
-- stack; and an event at the same (time, thread) right after keeps its own.
test("an event's one stack reaches each record it makes or ends", function()
  local S = 10000000
  local path = T.tmpname(".etl")
  local w = assert(heapscript.writer(path, { cpus = 1 }))
  -- each StackWalk right after its event, on its CPU, at its time (as the kernel writes them)
  w:process { op = "dcstart", pid = 100, ts = 1, name = "a.exe" }
  w:heap { op = "alloc", pid = 100, tid = 101, ts = 1 * S, heap = 0x10000, addr = 0x1000, size = 10, stack = { 0x401000 }, stack_delay = 0 }
  w:heap { op = "alloc", pid = 100, tid = 101, ts = 1 * S + 9, heap = 0x10000, addr = 0x5000, size = 50, stack = { 0x405000 }, stack_delay = 0 }
  -- a ReAlloc moving 0x1000 to 0x2000, an Alloc at the same tick on the same thread
  w:heap { op = "realloc", pid = 100, tid = 101, ts = 2 * S, heap = 0x10000, addr = 0x2000, size = 20,
           old_addr = 0x1000, old_size = 10, stack = { 0x402000 }, stack_delay = 0 }
  w:heap { op = "alloc", pid = 100, tid = 101, ts = 2 * S, heap = 0x10000, addr = 0x3000, size = 30, stack = { 0x403000 }, stack_delay = 0 }
  -- in place, then a Free at its tick
  w:heap { op = "realloc", pid = 100, tid = 101, ts = 3 * S, heap = 0x10000, addr = 0x3000, size = 40,
           old_addr = 0x3000, old_size = 30, stack = { 0x404000 }, stack_delay = 0 }
  w:heap { op = "free", pid = 100, tid = 101, ts = 3 * S, heap = 0x10000, addr = 0x5000, stack = { 0x406000 }, stack_delay = 0 }
  -- a commit of three pages, the middle one committed already: two pieces; a commit at its tick
  w:virtual { op = "alloc", pid = 100, tid = 101, ts = 4 * S, addr = 0x40001000, size = 0x1000, flags = { "commit" },
              stack = { 0x407000 }, stack_delay = 0 }
  w:virtual { op = "alloc", pid = 100, tid = 101, ts = 5 * S, addr = 0x40000000, size = 0x3000, flags = { "commit" },
              stack = { 0x408000 }, stack_delay = 0 }
  w:virtual { op = "alloc", pid = 100, tid = 101, ts = 5 * S, addr = 0x50000000, size = 0x1000, flags = { "commit" },
              stack = { 0x409000 }, stack_delay = 0 }
  assert(w:close())
  local t <close> = assert(heapscript.open(path))
  local got = {}
  for a in t:allocations():each() do
    got[#got + 1] = ("%s 0x%x %s/%s"):format(a.kind, a.address, a.stack and a.stack:frame(1) or "-",
                                             a.free_stack and a.free_stack:frame(1) or "-")
  end
  eq(table.concat(got, "; "), "heap 0x1000 0x401000/0x402000; heap 0x5000 0x405000/0x406000; "
     .. "heap 0x2000 0x402000/-; heap 0x3000 0x403000/0x404000; heap 0x3000 0x404000/-; "
     .. "virtual 0x40001000 0x407000/-; virtual 0x40000000 0x408000/-; virtual 0x40002000 0x408000/-; "
     .. "virtual 0x50000000 0x409000/-", "each record its event's stack")
  t:close()
  os.remove(path)
end)

-- Frees not stack-walked (HeapAlloc and HeapReAlloc stacks only, a common setup): a ReAlloc's
-- StackWalk, which is also its old block's free stack, says nothing of the Frees. It kept them asking
-- for a StackWalk that never came, and a Free at an Alloc's tick on its thread took the Alloc's.
test("a ReAlloc's stack keeps no Free waiting for one", function()
  local path = T.tmpname(".etl")
  local w = assert(heapscript.writer(path))
  w:process { op = "dcstart", pid = 100, ppid = 4, ts = 10, name = "app.exe" }
  w:heap { op = "alloc", pid = 100, tid = 101, ts = 100, heap = 0x10000, addr = 0x9000000, size = 8, stack = { 0x401100 } }
  w:heap { op = "realloc", pid = 100, tid = 101, ts = 200, heap = 0x10000, addr = 0x9100000, old_addr = 0x9000000,
           size = 16, old_size = 8, stack = { 0x401200 } }
  local ts = 1000
  for i = 1, 5000 do                       -- past the probe's 4,096 targets and 100 ms
    w:heap { op = "alloc", pid = 100, tid = 101, ts = ts, heap = 0x10000, addr = 0x100000 + i * 16, size = 16, stack = { 0x401000 } }
    w:heap { op = "free", pid = 100, tid = 101, ts = ts + 500, heap = 0x10000, addr = 0x100000 + i * 16 }
    ts = ts + 1000
  end
  w:heap { op = "alloc", pid = 100, tid = 101, ts = ts, heap = 0x10000, addr = 0x8000000, size = 32, stack = { 0x402000 } }
  w:heap { op = "free", pid = 100, tid = 101, ts = ts + 5000, heap = 0x10000, addr = 0x8000000 }
  w:heap { op = "alloc", pid = 100, tid = 101, ts = ts + 5000, heap = 0x10000, addr = 0x8800000, size = 48, stack = { 0x403000 } }
  assert(w:close())
  local t <close> = assert(heapscript.open(path))
  local got = {}
  for a in t:allocations():each() do
    if a.address >= 0x8000000 then
      got[#got + 1] = ("0x%x %s/%s"):format(a.address, a.stack and a.stack:frame(1) or "-", a.free_stack and a.free_stack:frame(1) or "-")
    end
  end
  eq(table.concat(got, "; "), "0x9000000 0x401100/0x401200; 0x9100000 0x401200/-; 0x8000000 0x402000/-; 0x8800000 0x403000/-",
     "the ReAlloc's stack on both its blocks; the last Alloc keeps its own")
  t:close()
  os.remove(path)
end)

test("a process started again: each instance keeps its own memory", function()
  local S = 10000000
  local path = T.tmpname(".etl")
  local w = assert(heapscript.writer(path))
  w:process { op = "dcstart", pid = 100, ts = 1, name = "a.exe" }
  w:virtual { op = "alloc", pid = 100, tid = 101, ts = 1 * S, addr = 0x40000000, size = 0x1000 }
  w:heap { op = "alloc", pid = 100, tid = 101, ts = 1 * S + 5, heap = 0x10000, addr = 0x1000, size = 10 }
  w:process { op = "end", pid = 100, ts = 2 * S, name = "a.exe" }
  w:process { op = "start", pid = 100, ppid = 1, ts = 3 * S, name = "a.exe" }
  w:virtual { op = "alloc", pid = 100, tid = 111, ts = 4 * S, addr = 0x40000000, size = 0x2000 }
  w:heap { op = "alloc", pid = 100, tid = 111, ts = 4 * S + 5, heap = 0x10000, addr = 0x1000, size = 20 }
  w:process { op = "start", pid = 100, ppid = 1, ts = 5 * S, name = "a.exe" }   -- the End before it lost
  w:heap { op = "alloc", pid = 100, tid = 121, ts = 6 * S, heap = 0x10000, addr = 0x9000, size = 1 }
  assert(w:close())
  local t <close> = assert(heapscript.open(path))
  local got = {}
  for a in t:allocations():each() do
    got[#got + 1] = ("%s %d %d %s %s"):format(a.kind, a.instance, a.size, tostring(a.free_time), a.reason)
  end
  table.sort(got)
  eq(table.concat(got, "; "), "heap 1 10 nil none; heap 2 20 nil none; heap 3 1 nil none; "
     .. "virtual 1 4096 nil none; virtual 2 8192 nil none", "each instance's records in it, outstanding")
  eq(t:memory_stats().process_ends, 2, "two ends counted: the End and the one a Start implied")
  local by = {}
  for _, g in ipairs(t:allocations():group("process")) do by[#by + 1] = ("%d:%d"):format(g.key, g.bytes) end
  table.sort(by)
  eq(table.concat(by, " "), "1:4106 2:8212 3:1", "each instance holds its own")
  t:close()
  os.remove(path)
end)

local corpus = T.corpus
local full = T.exists(corpus .. "/MANIFEST.tsv")   -- else the bundled traces only
if not full then
  local _, code = T.need_corpus("test_allocs real traces (all but the bundled ones)")
  if code ~= 0 then T.done("test_allocs"); return false end
end

-- name, Process Start events, Process End events (counted by hand with trace:events)
local FILES = {
  {"microsoft_perfview__diagsession_diaghub.kernel.1", 18, 3},
  {"microsoft_perfview__net.4.5.2.x64", 1, 1},
  {"microsoft_perfview__net.4.5.x86_PerfViewData", 2, 2},
  {"airbus-cert_etl-parser__ShutdownPerfDiagLogger", 0, 60},
  {"microsoft_perfview__net.4.5.2.x86", 1, 1},                 -- bundled
  {"microsoft_Tx__HTTP_Server", 0, 0},                         -- bundled
}

for _, f in ipairs(FILES) do
  local name, nstart, nend = f[1], f[2], f[3]
  if T.corpus_file(name .. ".etl") then test(name, function()
    local t <close> = assert(heapscript.open(T.corpus_file(name .. ".etl")))
    local ps = t:processes()
    local st = t:memory_stats()
    eq(#ps, st.procmap.instances, name .. ": processes() lists every instance")
    eq(st.events, t:count(), name .. ": the analysis read every record")
    -- each Process Start / End event is an instance's start / end, at the same time
    local starts, ends, found_s, found_e = 0, 0, 0, 0
    for ev in t:events{provider = "Process", opcode = {1, 2}} do
      local pid = ev:u32(ev.pointer_size)
      local field = ev.opcode == 1 and "start" or "end"
      if ev.opcode == 1 then starts = starts + 1 else ends = ends + 1 end
      for _, p in ipairs(ps) do
        if p.pid == pid and p[field] == ev.time then
          if ev.opcode == 1 then found_s = found_s + 1 else found_e = found_e + 1 end
          break
        end
      end
    end
    eq(starts, nstart, name .. ": Process Start events")
    eq(found_s, nstart, name .. ": every Start is an instance's start, to the bit")
    eq(ends, nend, name .. ": Process End events")
    eq(found_e, nend, name .. ": every End is an instance's end, to the bit")
    eq(st.process_ends, nend, name .. ": memory_stats().process_ends")
    for _, p in ipairs(ps) do
      if type(p.instance) ~= "number" or (p.pid and math.type(p.pid) ~= "integer") then
        check(false, name .. ": process entries are well formed", p.instance)
        break
      end
    end
    -- no memory events in the corpus: an empty selection that still answers
    local A = t:allocations()
    eq(#A, 0, name .. ": no allocation records")
    eq(st.memory_events, 0, name .. ": no memory events")
    local first, last
    for ev in t:events() do first = first or ev.time; last = ev.time end
    local w1, w2 = A:window()
    eq(w1, first, name .. ": the whole-trace window starts at the first event's time")
    eq(w2, last, name .. ": ... and ends at the last event's time")
    local s = A:summary()
    eq(s.count + s.bytes + s.peak + s.impacting, 0, name .. ": summary of nothing")
    eq(#A:group("stack"), 0, name .. ": no groups")
    local ser = A:series{points = 3}
    eq(#ser.time, 3, name .. ": series of nothing still has its points")
    eq(ser.time[1], first, name .. ": series starts at the window's start")
  end) end
end

test("the analysis does not move a running events() loop", function()
  local path = T.corpus_file("microsoft_perfview__net.4.5.2.x64.etl")
              or T.corpus_file("microsoft_perfview__net.4.5.2.x86.etl")   -- bundled
  local t <close> = assert(heapscript.open(path))
  local total = t:count()
  local n, built = 0, false
  for ev in t:events() do
    n = n + 1
    if n == 100 then
      t:allocations()   -- builds the analysis: a full pass over the files
      built = true
      check(ev.timestamp ~= nil, "the loop's Event still reads its record")
    end
  end
  check(built, "the analysis was built inside the loop")
  eq(n, total, "the loop still saw every record")
end)

if full then test("images with their PDB identity (net.4.5.2.x64)", function()
  local t <close> = assert(heapscript.open(corpus .. "/microsoft_perfview__net.4.5.2.x64.etl"))
  local ims = t:images()
  local bad, pdbs, ntdll = 0, 0, nil
  for _, im in ipairs(ims) do
    if im.module == "" or im.size <= 0 or not im.path:find("\\", 1, true) then bad = bad + 1 end
    if im.pdb then
      pdbs = pdbs + 1
      if not im.pdb.guid:match("^%x+%-%x+%-%x+%-%x+%-%x+$") or im.pdb.age < 1 then bad = bad + 1 end
      if im.module:lower() == "ntdll.dll" and im.pdb.name == "ntdll.pdb" then ntdll = im end
    end
  end
  check(#ims > 1000, "more than 1000 images", #ims)
  eq(bad, 0, "every image has a module, a size, an NT path; every PDB a GUID and an age")
  check(pdbs > #ims * 0.9, "DbgID_RSDS gives most images their PDB", pdbs)
  check(ntdll and ntdll.pid ~= nil and #t:images(ntdll.pid) < #ims, "images(pid) narrows to one process")
end) end

test("errors on a real trace", function()
  local t <close> = assert(heapscript.open(T.corpus_file("airbus-cert_etl-parser__ShutdownPerfDiagLogger.etl")
                                           or T.corpus_file("microsoft_Tx__HTTP_Server.etl")))
  raises(function() t:allocations{kinds = "heap"} end, "unknown filter 'kinds'", "unknown filter")
  raises(function() t:allocations{tag = "Leaks"} end, "a pool tag has 4 characters", "bad tag length")
  raises(function() t:allocations{class = "AI"} end, "unknown class 'AI'", "bad class")
  eq(#t:allocations{process = "svchost.exe"}, 0, "a process filter on a trace without records")
  t:close()
  raises(function() t:processes() end, "closed trace", "processes() of a closed trace")
  raises(function() t:memory_stats() end, "closed trace", "memory_stats() of a closed trace")
end)

return T.done("test_allocs")
