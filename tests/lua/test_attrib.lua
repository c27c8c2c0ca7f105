-- test_attrib.lua -- memory events whose header has no pid/tid (kernel pool
-- events; heap and VirtualAlloc written with a PERFINFO header) take them
-- from the StackWalk matched to them, for every use; pre-trace releases are
-- records.  Traces written with the project's writer, at 32 and 64 bits.
package.path = "tests/lua/?.lua;" .. package.path
local T = require "testlib"
local check, eq, test = T.check, T.eq, T.test

local APP, OTHER = 100, 200
local A1, A2, A3 = 0x1000, 0x2000, 0x3000          -- pool entries (offsets from a kernel base)

--[[ The trace, cpus 2, events on CPU 0, their StackWalks on CPU 1 three
ticks later (the writer's default), a SYSTEM event with ids of another
process in between:
  1000  PoolAlloc  'Leak' 64 KiB  app.exe thread 101    stack   never freed
  2000  PoolAlloc  'Oth ' 256 B   other.exe thread 201  stack   freed at 2500 (no stack)
  4000  PoolAlloc  'NoSk' 128 B   app.exe               NO stack: no process
  4500  HeapAlloc  0x4000 32 B    app.exe thread 102    stack
  5000  HeapAlloc  0x5000 64 B    app.exe thread 102    stack  \
  5010  HeapFree   0x4000         app.exe thread 102    stack   > one moving realloc
  5020  HeapReAlloc 0x4000->0x5000 app.exe thread 102   stack  /
  5500  HeapAlloc  0x6000 16 B    app.exe thread 102    stack
  5600  HeapFree   0x6000         NO stack: the block it frees names app.exe
  6000  VirtualFree RELEASE 0x700000 64 KiB (never seen: before the trace)  stack
  6100  VirtualAlloc RESERVE 0x800000 128 KiB, 6200 its RELEASE: nothing      stacks
All memory events have PERFINFO headers. ]]
-- A trace at P bytes a pointer on 2 CPUs: app.exe (thread app_tid) and
-- other.exe (thread 201) from the rundown, the events body(w) writes,
-- app.exe's DCEnd at 9000.  Returns its path.
local function trace(P, app_tid, body)
  local path = T.tmpname()
  local w = assert(heapscript.writer(path, { cpus = 2, pointer_size = P }))
  w:process { op = "dcstart", pid = APP, ppid = 4, ts = 10, name = "app.exe" }
  w:process { op = "dcstart", pid = OTHER, ppid = 4, ts = 11, name = "other.exe" }
  w:thread { op = "dcstart", pid = APP, tid = app_tid, ts = 12 }
  w:thread { op = "dcstart", pid = OTHER, tid = 201, ts = 13 }
  body(w)
  w:process { op = "dcend", pid = APP, ppid = 4, ts = 9000, name = "app.exe" }
  assert(w:close())
  return path
end

local function write(P)
  local H = P == 8 and "PERFINFO64" or "PERFINFO32"
  local K = P == 8 and -0x3CF0C0000000 or 0x81000000  -- kernel pool base
  return trace(P, 101, function(w)
    local ustk, kstk = { 0x401000, 0x402000 }, { 0x401100 }
    w:pool { op = "alloc", pid = APP, tid = 101, ts = 1000, tag = "Leak", size = 65536, entry = K + A1,
             stack = kstk, header = H }
    -- another process's event with ids between the event and its stack
    w:heap { op = "alloc", pid = OTHER, tid = 201, ts = 1001, heap = 0x90000, addr = 0x91000, size = 8 }
    w:pool { op = "alloc", pid = OTHER, tid = 201, ts = 2000, tag = "Oth", size = 256, entry = K + A2,
             stack = kstk, header = H }
    w:pool { op = "free", pid = OTHER, tid = 201, ts = 2500, tag = "Oth", size = 256, entry = K + A2, header = H }
    w:pool { op = "alloc", pid = APP, tid = 101, ts = 4000, tag = "NoSk", size = 128, entry = K + A3, header = H }
    local hp = 0x200000
    w:heap { op = "alloc", pid = APP, tid = 102, ts = 4500, heap = hp, addr = 0x4000, size = 32,
             stack = ustk, header = H }
    w:heap { op = "alloc", pid = APP, tid = 102, ts = 5000, heap = hp, addr = 0x5000, size = 64,
             stack = ustk, header = H }
    w:heap { op = "free", pid = APP, tid = 102, ts = 5010, heap = hp, addr = 0x4000, stack = ustk, header = H }
    w:heap { op = "realloc", pid = APP, tid = 102, ts = 5020, heap = hp, addr = 0x5000, size = 64, old_addr = 0x4000,
             old_size = 32, stack = ustk, header = H }
    w:heap { op = "alloc", pid = APP, tid = 102, ts = 5500, heap = hp, addr = 0x6000, size = 16,
             stack = ustk, header = H }
    w:heap { op = "free", pid = APP, tid = 102, ts = 5600, heap = hp, addr = 0x6000, header = H }
    w:virtual { op = "free", pid = APP, tid = 101, ts = 6000, addr = 0x700000, size = 0x10000, flags = { "release" },
                stack = ustk }
    w:virtual { op = "alloc", pid = APP, tid = 101, ts = 6100, addr = 0x800000, size = 0x20000, flags = { "reserve" },
                stack = ustk }
    w:virtual { op = "free", pid = APP, tid = 101, ts = 6200, addr = 0x800000, size = 0x20000, flags = { "release" },
                stack = ustk }
  end)
end

for _, P in ipairs { 8, 4 } do
  local path = write(P)
  local name = ("%d-bit: "):format(P * 8)

  test(name .. "pool records name their process through the StackWalk", function()
    local t <close> = assert(heapscript.open(path))
    local app = t:allocations { kind = "pool", process = "app.exe" }
    eq(#app, 1, "app.exe's pool: the leak only (the one without a stack has no process)")
    for a in app:each() do
      eq(a.tag, "Leak", "its tag")
      eq(a.pid, APP, "its pid")
      eq(a.free_time, nil, "never freed")
      eq(#a.stack, 1, "its stack")
    end
    eq(#t:allocations { kind = "pool", pid = OTHER }, 1, "pid filter")
    local g = t:allocations { kind = "pool" }:group("process", { sort = "bytes" })
    eq(#g, 3, "groups: app.exe, other.exe, no process")
    eq(g[1].process, "app.exe", "the leaking process first")
    local none = 0
    for _, x in ipairs(g) do if x.process == nil then none = x.count end end
    eq(none, 1, "one record without a process")
    local s = t:memory_stats()
    eq(s.records_no_process, 1, "memory_stats: records without a process")
    eq(s.ids_from_stack, 10, "memory_stats: events given their StackWalk's ids (2 pool, 5 heap, 3 virtual)")
    eq(s.ids_missing, 3, "memory_stats: events without ids or stack (two frees, the unstacked alloc)")
    eq(s.ids_from_block, 1, "memory_stats: the heap free found its process through its block")
  end)

  test(name .. "the moving-realloc summary is recognised on heap events without a thread id", function()
    local t <close> = assert(heapscript.open(path))
    local L = t:memory_stats().lifetimes
    eq(L.heap_realloc_summary, 1, "summary recognised")
    eq(L.heap_realloc_lone, 0, "not counted as a lone realloc")
    eq(L.heap_double_free, 0, "no double free")
    local H = t:allocations { kind = "heap", process = "app.exe" }:sorted("alloc_time")
    eq(#H, 3, "three app.exe heap records: the old block, the new one, the 16 B one")
    eq(#t:allocations { kind = "heap", before_trace = true }, 0, "the unstacked free found its block")
    eq(#t:allocations { kind = "heap", reason = "free", process = "app.exe" }, 1, "... and freed it")
    local r = {}
    for a in H:each() do r[#r + 1] = { a.size, a.reason, a.realloc } end
    check(r[1][1] == 32 and r[1][2] == "realloc", "old block ended by the realloc")
    check(r[2][1] == 64 and r[2][3] == true, "new block flagged as a realloc's")
  end)

  -- the usual setup stack-walks allocations, not frees: the Free between has no thread, so it was
  -- never in the thread's history; the ReAlloc was counted again (a double free, a block reused)
  test(name .. "the moving-realloc summary whose Free had no StackWalk", function()
    local H = P == 8 and "PERFINFO64" or "PERFINFO32"
    local p2 = trace(P, 102, function(w)
      local ustk, hp = { 0x401000, 0x402000 }, 0x200000
      w:heap { op = "alloc", pid = APP, tid = 102, ts = 4500, heap = hp, addr = 0x4000, size = 32, stack = ustk, header = H }
      w:heap { op = "alloc", pid = APP, tid = 102, ts = 5000, heap = hp, addr = 0x5000, size = 64, stack = ustk, header = H }
      w:heap { op = "free", pid = APP, tid = 102, ts = 5010, heap = hp, addr = 0x4000, header = H }
      w:heap { op = "realloc", pid = APP, tid = 102, ts = 5020, heap = hp, addr = 0x5000, size = 64, old_addr = 0x4000,
               old_size = 32, stack = ustk, header = H }
      -- Free first, then the Alloc
      w:heap { op = "alloc", pid = APP, tid = 102, ts = 6000, heap = hp, addr = 0x7000, size = 8, stack = ustk, header = H }
      w:heap { op = "free", pid = APP, tid = 102, ts = 6010, heap = hp, addr = 0x7000, header = H }
      w:heap { op = "alloc", pid = APP, tid = 102, ts = 6020, heap = hp, addr = 0x8000, size = 16, stack = ustk, header = H }
      w:heap { op = "realloc", pid = APP, tid = 102, ts = 6030, heap = hp, addr = 0x8000, size = 16, old_addr = 0x7000,
               old_size = 8, stack = ustk, header = H }
    end)
    local t <close> = assert(heapscript.open(p2))
    local L = t:memory_stats().lifetimes
    eq(L.heap_realloc_summary, 2, "both summaries recognised")
    eq(L.heap_realloc_lone, 0, "none counted as a lone realloc")
    eq(L.heap_double_free, 0, "no double free")
    eq(L.heap_alloc_over_live, 0, "no block reused")
    local got = {}
    for a in t:allocations { kind = "heap" }:sorted("alloc_time"):each() do
      got[#got + 1] = ("%d %s %s"):format(a.size, a.reason, tostring(a.realloc))
    end
    eq(table.concat(got, "; "), "32 realloc false; 64 none true; 8 realloc false; 16 none true", "four records, as two moves")
    t:close()
    os.remove(p2)
  end)

  test(name .. "a release of memory the trace never saw is an AOFI record", function()
    local t <close> = assert(heapscript.open(path))
    local V = t:allocations { kind = "virtual", class = "AOFI" }
    eq(#V, 1, "one AOFI record (the release in a reservation of the trace makes none)")
    for a in V:each() do
      eq(a.address, 0x700000, "its address")
      eq(a.size, 0x10000, "the size the event carries")
      eq(a.before_trace, true, "allocated before the trace")
      eq(a.reason, "release", "ended by the release")
      eq(a.process, "app.exe", "in its process")
    end
    eq(#t:allocations { kind = "virtual" }, 1, "no other VirtualAlloc record")
    eq(t:memory_stats().lifetimes.vm_release_unknown_bytes, 0x10000, "counted")
  end)

  test(name .. "events and filters see the StackWalk's ids, marked as derived", function()
    local t <close> = assert(heapscript.open(path))
    local seen = {}
    for ev in t:events { provider = "Pool" } do
      seen[#seen + 1] = { ev.pid, ev.tid, ev.stack_pid, ev.stack_tid }
    end
    eq(#seen, 4, "four pool events")
    check(seen[1][1] == nil and seen[1][2] == nil, "header ids stay nil")
    check(seen[1][3] == APP and seen[1][4] == 101, "stack_pid/stack_tid of the first")
    check(seen[2][3] == OTHER and seen[2][4] == 201, "... of the second")
    check(seen[3][3] == nil and seen[4][3] == nil, "no stack, no ids")
    eq(t:count { provider = "Pool", pid = APP }, 1, "pid filter tests the derived ids")
    eq(t:count { provider = "Heap", tid = 102 }, 5, "tid filter too (not the free without a stack)")
    eq(t:count { provider = "Heap", pid = OTHER }, 1, "a header pid still matches")
    local order = {}
    for ev in t:events() do order[#order + 1] = ev.timestamp end
    local sorted = true
    for i = 2, #order do if order[i] < order[i - 1] then sorted = false end end
    check(sorted, "the stream keeps its order")
  end)

  test(name .. "dump shows stack_pid/stack_tid and filters on them", function()
    local hs = T.bin()
    local f = io.popen(hs .. " dump --jsonl --provider Pool " .. T.q(path))
    local first = f:read("l")
    f:close()
    check(first:find('"pid": null, "tid": null, "stack_pid": ' .. APP .. ', "stack_tid": 101,', 1, true),
          "jsonl: header ids null, stack ids given", first)
    f = io.popen(hs .. " dump --pid " .. APP .. " --provider Pool " .. T.q(path))
    local lines = {}
    for l in f:lines() do lines[#lines + 1] = l end
    f:close()
    eq(#lines, 1, "dump --pid selects by the derived pid")
    check(lines[1] and lines[1]:find("  100*   101* ", 1, true), "text marks derived ids with *", lines[1])
  end)

  test(name .. "leaks says how many records have no process", function()
    local f = io.popen(T.bin() .. " leaks " .. T.q(path) .. " -- --kind pool")
    local out = f:read("a")
    f:close()
    check(out:find("note: 1 record has no process: its event carries no ids", 1, true), "a note line", out)
    f = io.popen(T.bin() .. " leaks " .. T.q(path) .. " -- --kind pool --json -")
    out = f:read("a")
    f:close()
    check(out:find('"records_without_process": 1', 1, true), "in the JSON notes")
  end)

  test(name .. "trace:scope selects by the derived process", function()
    local t <close> = assert(heapscript.open(path))
    t:scope { process = "other.exe" }
    -- pool records are kept whatever the scope's process (an entry is often freed in another's context)
    eq(#t:allocations { kind = "pool" }, 3, "every pool record")
    eq(#t:allocations { kind = "pool", process = "other.exe" }, 1, "of which one is other.exe's, by the derived process")
    eq(#t:allocations { kind = "heap" }, 1, "and its heap record (the free found app.exe's block: out of scope)")
  end)
  os.remove(path)
end

--[[ Three cases of the same rule's edges, one trace (64-bit), all memory
events with PERFINFO headers:
  100  VirtualAlloc COMMIT 0x900000 32 KiB, target app.exe, its StackWalk
       names other.exe thread 201 (VirtualAllocEx from another process):
       the record stays in app.exe, the payload's process
  200  HeapAlloc 0xA000 48 B app.exe thread 102 (stack); 300 HeapReAlloc
       0xA000 -> 0xB000 with no stack: the old block names app.exe
  400  VirtualAlloc RESERVE 0xC00000 256 KiB, 410 and 420 COMMITs of 64 KiB
       at its start and at +128 KiB, 500 its RELEASE with a stack: two records
       ended by one event, so neither gets that stack as its free stack ]]
local function write_edges()
  local H = "PERFINFO64"
  return trace(8, 102, function(w)
    local ustk = { 0x401000, 0x402000 }
    w:virtual { op = "alloc", pid = APP, ts = 100, addr = 0x900000, size = 0x8000, flags = { "commit", "reserve" } }
    w:stack { ts = 103, event_ts = 100, pid = OTHER, tid = 201, frames = ustk, cpu = 1 }
    w:heap { op = "alloc", pid = APP, tid = 102, ts = 200, heap = 0x200000, addr = 0xA000, size = 48,
             stack = ustk, header = H }
    w:heap { op = "realloc", pid = APP, tid = 102, ts = 300, heap = 0x200000, addr = 0xB000, size = 96,
             old_addr = 0xA000, old_size = 48, header = H }
    w:virtual { op = "alloc", pid = APP, tid = 102, ts = 400, addr = 0xC00000, size = 0x40000, flags = { "reserve" },
                stack = ustk }
    w:virtual { op = "alloc", pid = APP, tid = 102, ts = 410, addr = 0xC00000, size = 0x10000, flags = { "commit" },
                stack = ustk }
    w:virtual { op = "alloc", pid = APP, tid = 102, ts = 420, addr = 0xC20000, size = 0x10000, flags = { "commit" },
                stack = ustk }
    w:virtual { op = "free", pid = APP, tid = 102, ts = 500, addr = 0xC00000, size = 0x40000, flags = { "release" },
                stack = ustk }
  end)
end

do
  local path = write_edges()
  test("edges: a VirtualAlloc stays in its payload's process, whoever's StackWalk names it", function()
    local t <close> = assert(heapscript.open(path))
    local V = t:allocations { kind = "virtual", size = 0x8000 }
    eq(#V, 1, "the commit's record")
    for a in V:each() do
      eq(a.process, "app.exe", "the target process")
      eq(a.pid, APP, "its pid")
    end
    eq(#t:allocations { kind = "virtual", process = "other.exe" }, 0, "nothing in the caller's process")
  end)
  test("edges: an unstacked realloc takes the process of the block it moves", function()
    local t <close> = assert(heapscript.open(path))
    local s = t:memory_stats()
    eq(s.ids_from_block, 1, "found through its old block")
    eq(s.records_no_process, 0, "every record has a process")
    local H = t:allocations { kind = "heap", process = "app.exe" }:sorted("alloc_time")
    eq(#H, 2, "the old block and the new one, both app.exe's")
    local r = {}
    for a in H:each() do r[#r + 1] = { reason = a.reason, address = a.address } end
    eq(r[1].reason, "realloc", "the old block ended by the realloc")
    eq(r[2].address, 0xB000, "the new block")
  end)
  test("edges: a release that ends two records gives neither its stack as their free stack", function()
    local t <close> = assert(heapscript.open(path))
    local R = t:allocations { kind = "virtual", reason = "release" }
    eq(#R, 2, "two commits ended by the release")
    for a in R:each() do
      check(a.stack ~= nil, "its alloc stack")
      eq(a.free_stack, nil, "no free stack")
    end
  end)
  os.remove(path)
end

-- VirtualAllocEx: injector.exe (200) commits in target.exe (100); the StackWalk is the caller's, and
-- its frame lies in injector.exe, loaded in 200 alone. The record is the target's; its stack is
-- named with the caller's images (it printed a bare address), and groups with injector's own commit.
-- VirtualFreeEx the same: injector releases it, and the free stack is named by injector's images
-- (it printed a bare address), while target.exe's own release of its own block is named by its own
test("VirtualAllocEx, VirtualFreeEx: the target's record, its stacks named by the caller's images", function()
  local S = 10000000
  local path = T.tmpname(".etl")
  local w = assert(heapscript.writer(path))
  w:process { op = "dcstart", pid = 100, ts = 1, name = "target.exe" }
  w:process { op = "dcstart", pid = 200, ts = 2, name = "injector.exe" }
  w:image { op = "dcstart", pid = 200, base = 0x7FF600000000, size = 0x10000, ts = 3, path = "\\Device\\HarddiskVolume3\\inj\\injector.exe" }
  w:image { op = "dcstart", pid = 100, base = 0x7FF700000000, size = 0x10000, ts = 4, path = "\\Device\\HarddiskVolume3\\t\\target.exe" }
  w:virtual { op = "alloc", pid = 100, tid = 201, ts = 1 * S, addr = 0x40000000, size = 0x10000 }
  w:stack { ts = 1 * S + 3, event_ts = 1 * S, pid = 200, tid = 201, frames = { 0x7FF600001234 } }
  w:virtual { op = "alloc", pid = 200, tid = 201, ts = 2 * S, addr = 0x50000000, size = 0x10000 }
  w:stack { ts = 2 * S + 3, event_ts = 2 * S, pid = 200, tid = 201, frames = { 0x7FF600001234 } }
  -- VirtualFreeEx: injector releases the target's range; target.exe frees its own block
  w:virtual { op = "free", pid = 100, tid = 201, ts = 3 * S, addr = 0x40000000, size = 0x10000, flags = { "release" } }
  w:stack { ts = 3 * S + 3, event_ts = 3 * S, pid = 200, tid = 201, frames = { 0x7FF600005678 } }
  w:virtual { op = "alloc", pid = 100, tid = 101, ts = 4 * S, addr = 0x60000000, size = 0x10000 }
  w:stack { ts = 4 * S + 3, event_ts = 4 * S, pid = 100, tid = 101, frames = { 0x7FF700001111 } }
  w:virtual { op = "free", pid = 100, tid = 101, ts = 5 * S, addr = 0x60000000, size = 0x10000, flags = { "release" } }
  w:stack { ts = 5 * S + 3, event_ts = 5 * S, pid = 100, tid = 101, frames = { 0x7FF700002222 } }
  assert(w:close())
  local t <close> = assert(heapscript.open(path))
  local got = {}
  for a in t:allocations():sorted("alloc_time"):each() do
    got[#got + 1] = a.process .. " " .. a.stack:frame(1) .. (a.free_stack and " / " .. a.free_stack:frame(1) or "")
  end
  eq(table.concat(got, "; "), "target.exe injector.exe+0x1234 / injector.exe+0x5678; injector.exe injector.exe+0x1234; "
     .. "target.exe target.exe+0x1111 / target.exe+0x2222",
     "each record in its process, each frame named by the images of the process that ran it")
  local g = t:allocations():group("stack")
  eq(#g, 2, "two stacks: injector's code, in both processes, and target.exe's own")
  t:close()
  os.remove(path)
end)

-- An event with ids and one without at one tick, on two CPUs, the one with ids first: the first
-- StackWalk naming that event's thread is its own; the event without ids takes the next one that
-- names its own thread (another thread's), or, from the same thread, the second that names it.
test("one tick, an event with ids before one without", function()
  for _, same in ipairs { false, true } do
    local path = T.tmpname()
    local w = assert(heapscript.writer(path, { cpus = 2 }))
    w:process { op = "dcstart", pid = APP, ppid = 4, ts = 10, name = "app.exe" }
    w:process { op = "dcstart", pid = OTHER, ppid = 4, ts = 11, name = "other.exe" }
    w:heap { op = "alloc", pid = APP, tid = 101, ts = 5000, heap = 0x10000, addr = 0x200000, size = 40,
             stack = { 0x7ff700001000 }, cpu = 0, stack_cpu = 0 }
    w:pool { op = "alloc", pid = same and APP or OTHER, tid = same and 101 or 201, ts = 5000, tag = "Tick", size = 100,
             entry = -0x3cf0aee00000, header = "PERFINFO64", stack = { 0x7ff700002000 }, cpu = 1, stack_cpu = 1 }
    assert(w:close())
    local t <close> = assert(heapscript.open(path))
    local got = {}
    for a in t:allocations():each() do
      got[a.kind] = ("%s %s"):format(a.pid, a.stack and ("%x"):format(a.stack:addresses()[1]) or "nostack")
    end
    eq(got.heap, APP .. " 7ff700001000", "the event with ids keeps its own stack" .. (same and " (one thread)" or ""))
    eq(got.pool, (same and APP or OTHER) .. " 7ff700002000",
       "the event without ids takes its own StackWalk's ids" .. (same and ", the second of its thread" or ", another thread's"))
    t:close()
    os.remove(path)
  end
end)

-- Several events without ids at one tick, on different CPUs, some without a StackWalk: each
-- StackWalk goes to the waiting event on its CPU (where the kernel writes it), or of its process (a
-- VirtualAlloc names one); it went to the first waiting, whose process and stack it then took
test("one tick, several events without ids: each StackWalk to its own", function()
  for _, P in ipairs { 4, 8 } do
    local path = T.tmpname()
    local w = assert(heapscript.writer(path, { cpus = 4, pointer_size = P }))
    w:process { op = "dcstart", pid = APP, ppid = 4, ts = 10, name = "app.exe" }
    w:process { op = "dcstart", pid = OTHER, ppid = 4, ts = 11, name = "other.exe" }
    -- VirtualAlloc of both processes at 5000; only other.exe's has a StackWalk (on another CPU)
    w:virtual { op = "alloc", pid = APP, tid = 101, ts = 5000, addr = 0x100000, size = 0x1000,
                flags = { "commit" }, header = "PERFINFO" .. P * 8, cpu = 0 }
    w:virtual { op = "alloc", pid = OTHER, tid = 201, ts = 5000, addr = 0x200000, size = 0x2000,
                flags = { "commit" }, header = "PERFINFO" .. P * 8, cpu = 1, stack = { 0x402000 }, stack_cpu = 3 }
    -- HeapAlloc of both at 6000: no pid in the payload; app.exe's StackWalk alone, on its CPU
    w:heap { op = "alloc", pid = OTHER, tid = 201, ts = 6000, heap = 0x10000, addr = 0x3000, size = 30,
             header = "PERFINFO" .. P * 8, cpu = 1 }
    w:heap { op = "alloc", pid = APP, tid = 101, ts = 6000, heap = 0x10000, addr = 0x4000, size = 40,
             header = "PERFINFO" .. P * 8, cpu = 2, stack = { 0x404000 }, stack_cpu = 2 }
    assert(w:close())
    local t <close> = assert(heapscript.open(path))
    local got = {}
    for a in t:allocations():each() do
      got[#got + 1] = ("%s 0x%x %s"):format(tostring(a.pid), a.address, a.stack and a.stack:frame(1) or "-")
    end
    table.sort(got)
    eq(table.concat(got, "; "), ("%d 0x100000 -; %d 0x4000 0x404000; %d 0x200000 0x402000; nil 0x3000 -")
       :format(APP, APP, OTHER), ("each StackWalk to its own event (%d-bit)"):format(P * 8))
    t:close()
    os.remove(path)
  end
end)

-- A StackWalk in two parts (its kernel frames, then its user frames, one record each at the event's
-- time, ETL-FORMAT.md 6.4): the user part is the same event's, even once that event, its ids given
-- by the kernel part, has been handed on; it went to the next event waiting at that tick, which took
-- the other process and lost its own StackWalk
test("one tick, a StackWalk in two parts: both parts one event's", function()
  for _, kind in ipairs { "heap", "virtual" } do
    local path = T.tmpname()
    local w = assert(heapscript.writer(path, { cpus = 2 }))
    w:process { op = "dcstart", pid = APP, ppid = 4, ts = 10, name = "app.exe" }
    w:process { op = "dcstart", pid = OTHER, ppid = 4, ts = 11, name = "other.exe" }
    for i, p in ipairs { APP, OTHER } do
      local e = { op = "alloc", pid = p, tid = p + 1, ts = 6000, header = "PERFINFO64", cpu = i - 1 }
      if kind == "heap" then e.heap, e.addr, e.size = 0x10000, 0x1000 * i, 16 * i
      else e.addr, e.size, e.flags = 0x100000 * i, 0x1000 * i, { "commit" } end
      w[kind](w, e)
    end
    w:stack { ts = 6003, event_ts = 6000, pid = APP, tid = APP + 1, frames = { -0x7ff00000000 + 0x1000 }, cpu = 0 }
    w:stack { ts = 6004, event_ts = 6000, pid = APP, tid = APP + 1, frames = { 0x7FF700001010 }, cpu = 0 }
    w:stack { ts = 6005, event_ts = 6000, pid = OTHER, tid = OTHER + 1, frames = { 0x7FF800003030 }, cpu = 1 }
    assert(w:close())
    local t <close> = assert(heapscript.open(path))
    local got = {}
    for a in t:allocations():each() do
      got[#got + 1] = ("%s %d"):format(tostring(a.pid), a.stack and #a.stack:addresses() or 0)
    end
    table.sort(got)
    eq(table.concat(got, "; "), ("%d 2; %d 1"):format(APP, OTHER), kind .. ": app.exe's two parts, other.exe's own")
    t:close()
    os.remove(path)
  end
end)

-- A heap free without ids or stack goes to the one live block it frees: not a block of a process
-- that has exited (its memory stays outstanding, a leak, but it frees nothing). a.exe's block at
-- one address and heap outlived a.exe, so b.exe's free found two owners and became a record of
-- no process, and b.exe's block a leak
test("a free without ids: not the block of a process that exited", function()
  local path = T.tmpname(".etl")
  local w = assert(heapscript.writer(path, { cpus = 1 }))
  w:process { op = "dcstart", pid = 100, ppid = 4, ts = 10, name = "a.exe" }
  w:heap { op = "alloc", pid = 100, tid = 101, ts = 1000, heap = 0x200000, addr = 0x6000, size = 32 }
  w:process { op = "end", pid = 100, ppid = 4, ts = 2000, name = "a.exe" }
  w:process { op = "start", pid = 200, ppid = 4, ts = 2500, name = "b.exe" }
  w:heap { op = "alloc", pid = 200, tid = 201, ts = 3000, heap = 0x200000, addr = 0x6000, size = 64 }
  w:heap { op = "free", pid = 200, tid = 201, ts = 4000, heap = 0x200000, addr = 0x6000, header = "PERFINFO64" }
  w:process { op = "dcend", pid = 200, ppid = 4, ts = 9000, name = "b.exe" }
  assert(w:close())
  local t <close> = assert(heapscript.open(path))
  local got = {}
  for a in t:allocations():sorted("alloc_time"):each() do got[#got + 1] = ("%s %d %s"):format(a.process, a.size, a.reason) end
  eq(table.concat(got, "; "), "a.exe 32 none; b.exe 64 free", "b.exe's block freed; a.exe's outstanding, its leak")
  eq(t:memory_stats().ids_from_block, 1, "the free's process from the block it frees")
  t:close()
  os.remove(path)
end)

return T.done("test_attrib")
