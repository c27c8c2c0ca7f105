-- allocs_scenarios.lua -- the allocation API (trace:allocations,
-- heapscript.Allocs, heapscript.Alloc, heapscript.Stack, trace:processes,
-- trace:memory_stats) against synthetic traces with hand-computed answers.
--
-- Run by tests/unit/test_lua_allocs.c, which writes the traces with the
-- project's writer and sets SCENARIOS = {heap=, va=, pool=, pids=, qpc=,
-- systime=, cycles=, big=} to their paths.  The C file's comments say
-- what each trace holds; the expected figures below follow from them and
-- from shared/docs/LIFETIMES.md.  Returns passed, failed.

local S = assert(SCENARIOS, "run me through tests/unit/test_lua_allocs.c")
local lpeg = require "lpeg"

package.path = "tests/lua/?.lua;tests/corpus/?.lua;" .. package.path
local TL = require "testlib"
TL.quiet = true                      -- the C driver prints the count; failures print themselves
local check, eq, list_eq, raises, test = TL.check, TL.eq, TL.list_eq, TL.raises, TL.test

-- Values of one field over a selection, in its order (nil shown as false).
local function column(A, field)
  local t = {}
  for a in A:each() do
    local v = a[field]
    if v == nil then v = false end
    t[#t + 1] = v
  end
  return t
end

local function class_is(got, count, bytes, name)
  eq(got.count, count, name .. ".count")
  eq(got.bytes, bytes, name .. ".bytes")
end

------------------------------------------------------------------ heap

-- r1 100 B @1-3 (stack A, free stack F), r2 200 B @2-6 (A), r3 400 B @4- (B),
-- r4 800 B @5-5.5 (B, LFH), r5 1600 B @7- (C), rB: free @8 of a block never
-- seen (size unknown), rR_old: 50 B ended @9 by a lone ReAlloc (before the
-- trace), rR_new: its 60 B block @9- (stack D).  Trace: 0 .. 10 s.
local T = assert(heapscript.open(S.heap))

test("heap: selection basics", function()
  local A = T:allocations()
  eq(getmetatable(A).__name, "heapscript.Allocs", "allocations() returns a heapscript.Allocs")
  eq(#A, 8, "#A: every record")
  eq(A:count(), 8, "A:count()")
  eq(tostring(A), "heapscript.Allocs (8 records)", "tostring(A)")
  local t1, t2 = A:window()
  eq(t1, 0.0, "window starts at the first event (the logfile header)")
  eq(t2, 10.0, "window ends at the last event")
  eq(#T:allocations{}, 8, "allocations{} is allocations()")
  check(rawequal(T:allocations(), T:allocations()) == false, "each call makes a new selection")
end)

test("heap: summary of the whole trace", function()
  local s = T:allocations():summary()
  eq(s.count, 8, "count")
  eq(s.bytes, 3210, "bytes (known sizes only)")
  eq(s.size, 3160, "size: allocated in the window")
  eq(s.impacting, 2010, "impacting = AIFO - AOFI")
  eq(s.transient, 1100, "transient = AIFI")
  class_is(s.AIFI, 3, 1100, "AIFI")
  class_is(s.AIFO, 3, 2060, "AIFO")
  class_is(s.AOFI, 2, 50, "AOFI (the two before-trace blocks)")
  class_is(s.AOFO, 0, 0, "AOFO is empty over the whole trace")
  eq(s.unknown_size, 1, "unknown_size")
  eq(s.before_trace, 2, "before_trace")
  eq(s.before_bytes, 50, "before_bytes")
  eq(s.outstanding_start, 0, "outstanding_start")
  eq(s.outstanding_end, 2060, "outstanding_end")
  eq(s.outstanding_end_count, 3, "outstanding_end_count")
  eq(s.peak, 2060, "peak")
  eq(s.peak_time, 9.0, "peak_time")
  list_eq(s.window, {0.0, 10.0}, "summary.window")
end)

test("heap: summary of windows", function()
  local A = T:allocations()
  local s = A:summary{2, 5}
  eq(s.count, 6, "[2,5] count (r5 and rR_new are after it)")
  class_is(s.AIFI, 0, 0, "[2,5] AIFI")
  class_is(s.AIFO, 3, 1400, "[2,5] AIFO: r2, r3, r4 (both ends inclusive)")
  class_is(s.AOFI, 1, 100, "[2,5] AOFI: r1")
  class_is(s.AOFO, 2, 50, "[2,5] AOFO: the before-trace blocks")
  eq(s.impacting, 1300, "[2,5] impacting")
  eq(s.transient, 0, "[2,5] transient")
  eq(s.size, 1400, "[2,5] size")
  eq(s.outstanding_start, 100, "[2,5] outstanding just before 2 s")
  eq(s.outstanding_end, 1400, "[2,5] outstanding at 5 s")
  eq(s.outstanding_end - s.outstanding_start, s.impacting, "[2,5] impacting = change of outstanding")
  eq(s.peak, 1400, "[2,5] peak")
  eq(s.peak_time, 5.0, "[2,5] peak_time")
  s = A:summary{3, 6}
  class_is(s.AOFI, 2, 300, "[3,6] AOFI: r1 freed at 3, r2 at 6")
  class_is(s.AIFI, 1, 800, "[3,6] AIFI: r4")
  class_is(s.AIFO, 1, 400, "[3,6] AIFO: r3")
  eq(s.impacting, 100, "[3,6] impacting")
  eq(s.transient, 800, "[3,6] transient")
  s = A:summary{from = 5.5, to = 5.5}
  class_is(s.AOFI, 1, 800, "[5.5,5.5] AOFI: r4 freed at 5.5 ({from=, to=} form)")
  s = A:summary{5.2, 5.3}
  eq(s.count, 5, "[5.2,5.3] holds no event: only what is alive across it")
  eq(s.AOFO.count, 5, "... all AOFO (r2, r3, r4 and the two before the trace)")
  eq(#T:allocations{window = {5.25, 5.25}}, 5, "window {t, t} between events: the same")
  s = A:summary{nil, 1}
  class_is(s.AIFO, 1, 100, "[start,1] AIFO: r1 (nil end = the trace's edge)")
  local p, pt = A:peak()
  eq(p, 2060, "peak()")
  eq(pt, 9.0, "peak() time")
  p, pt = A:peak{2, 5}
  eq(p, 1400, "peak{2,5}")
  eq(pt, 5.0, "peak{2,5} time")
end)

test("heap: outstanding and series", function()
  local A = T:allocations()
  local b, n = A:outstanding(5)
  eq(b, 1400, "outstanding(5) bytes")
  eq(n, 3, "outstanding(5) count")
  b, n = A:outstanding(5.5)
  eq(b, 600, "outstanding(5.5): r4 is freed at 5.5 (alloc <= t < free)")
  eq(n, 2, "outstanding(5.5) count")
  b, n = A:outstanding()
  eq(b, 2060, "outstanding() at the end of the window")
  b, n = A:outstanding(0.5)
  eq(b, 0, "outstanding(0.5)")
  local s = A:series{points = 0}
  list_eq(s.time, {0, 1, 2, 3, 4, 5, 5.5, 6, 7, 9}, "series every change: time")
  list_eq(s.bytes, {0, 100, 300, 200, 600, 1400, 600, 400, 2000, 2060}, "series every change: bytes")
  list_eq(s.count, {0, 1, 2, 1, 2, 3, 2, 1, 2, 3}, "series every change: count")
  s = A:series{points = 3}
  list_eq(s.time, {0, 5, 10}, "series of 3 points: time")
  list_eq(s.bytes, {0, 1400, 2060}, "series of 3 points: bytes")
  s = A:series{points = 3, window = {2, 4}}
  list_eq(s.bytes, {300, 200, 600}, "series over [2,4]")
  eq(#A:series().time, 100, "series() has 100 points by default")
  -- peaks: five columns of 2 s, each its highest (1400 at 5 s, gone by 5.5 s, still shows)
  s = A:series{points = 5, peaks = true}
  list_eq(s.time, {1, 3, 5, 7, 9}, "series of 5 columns: their middles")
  list_eq(s.bytes, {100, 300, 1400, 2000, 2060}, "series of 5 columns: the highest bytes in each")
  list_eq(s.count, {1, 2, 3, 2, 3}, "series of 5 columns: the highest count in each")
  -- a column with no change holds the level carried into it
  s = A:series{points = 4, window = {6.5, 10.5}, peaks = true}
  list_eq(s.bytes, {2000, 2000, 2060, 2060}, "columns without a change hold the level")
  raises(function() A:series{points = 0, peaks = true} end, "needs points of 1 or more", "peaks without columns")
end)

test("heap: the cursor", function()
  local A = T:allocations()
  local first, same, n = nil, true, 0
  local rows = {}
  for a in A:each() do
    n = n + 1
    if not first then first = a elseif not rawequal(first, a) then same = false end
    rows[a.address] = {
      kind = a.kind, pid = a.pid, process = a.process, instance = a.instance, heap = a.heap,
      size = a.size, alloc_time = a.alloc_time, free_time = a.free_time, lifetime = a.lifetime,
      reason = a.reason, before_trace = a.before_trace, size_unknown = a.size_unknown,
      realloc = a.realloc, source = a.source, tag = a.tag, pool_type = a.pool_type,
      stack = a.stack, free_stack = a.free_stack, index = a.index, split = a.split,
      cls = a:class(), cls25 = a:class(2, 5), cls45 = a:class(4, 5),
    }
  end
  eq(n, 8, "each() visits every record")
  check(same, "each() yields one reused cursor")
  eq(getmetatable(first).__name, "heapscript.Alloc", "the cursor is a heapscript.Alloc")
  raises(function() return first.size end, "outside its loop", "the cursor after its loop")
  eq(tostring(first), "heapscript.Alloc (no current record)", "tostring of a finished cursor")
  -- where() and group() by a function, ended by an error in the function: their cursor has no record
  -- either (it kept showing the record it stopped at)
  local kept
  check(not pcall(A.where, A, function(a) kept = a; error("stop") end), "an error in where's function propagates")
  raises(function() return kept.size end, "outside its loop", "where's cursor after an error")
  kept = nil
  check(not pcall(A.group, A, function(a) kept = a; error("stop") end), "an error in group's key function propagates")
  raises(function() return kept.size end, "outside its loop", "group's cursor after an error")
  local r1 = rows[0x20000]
  eq(r1.kind, "heap", "r1.kind")
  eq(r1.pid, 1000, "r1.pid")
  eq(r1.process, "app.exe", "r1.process")
  eq(math.type(r1.instance), "integer", "r1.instance")
  eq(r1.heap, 0x10000, "r1.heap")
  eq(r1.size, 100, "r1.size")
  eq(r1.alloc_time, 1.0, "r1.alloc_time")
  eq(r1.free_time, 3.0, "r1.free_time")
  eq(r1.lifetime, 2.0, "r1.lifetime")
  eq(r1.reason, "free", "r1.reason")
  eq(r1.before_trace, false, "r1.before_trace")
  eq(r1.size_unknown, false, "r1.size_unknown")
  eq(r1.realloc, false, "r1.realloc")
  eq(r1.split, false, "r1.split")
  eq(r1.source, nil, "r1.source: not logged")
  eq(r1.tag, nil, "r1.tag: heap records have none")
  eq(r1.pool_type, nil, "r1.pool_type")
  eq(r1.cls, "AIFI", "r1:class() over the selection's window")
  eq(r1.cls25, "AOFI", "r1:class(2, 5)")
  eq(r1.cls45, nil, "r1:class(4, 5): not in that window")
  eq(math.type(r1.index), "integer", "r1.index")
  eq(tostring(r1.stack), "ntdll.dll+0x11234\napp.exe+0x2000", "r1.stack")
  eq(tostring(r1.free_stack), "ntdll.dll+0x6000\napp.exe+0x5000", "r1.free_stack")
  local r2 = rows[0x20100]
  check(rawequal(r1.stack, r2.stack), "records with one stack share one Stack object")
  eq(r2.free_stack, nil, "r2.free_stack: its free had no stack")
  local r4 = rows[0x20800]
  eq(r4.source, "LFH", "r4.source")
  eq(r4.lifetime, 0.5, "r4.lifetime")
  local rB = rows[0x99990]
  eq(rB.size, nil, "before-trace Free: size nil")
  eq(rB.size_unknown, true, "before-trace Free: size_unknown")
  eq(rB.before_trace, true, "before-trace Free: before_trace")
  eq(rB.alloc_time, nil, "before-trace Free: alloc_time nil")
  eq(rB.free_time, 8.0, "before-trace Free: free_time")
  eq(rB.lifetime, nil, "before-trace Free: lifetime nil")
  eq(rB.stack, nil, "before-trace Free: no alloc stack")
  local old, new = rows[0x88880], rows[0x30000]
  eq(old.size, 50, "lone ReAlloc of an unknown block: old size known")
  eq(old.reason, "realloc", "... ended by the ReAlloc")
  eq(old.before_trace, true, "... before the trace")
  eq(new.realloc, true, "the new block has realloc = true")
  eq(new.free_time, nil, "the new block is never freed")
  eq(new.reason, "none", "reason 'none' when never freed")
  eq(#new.stack, 3, "the new block has the ReAlloc's stack")
  check(old.free_stack ~= nil and rawequal(old.free_stack, new.stack),
        "... and the block it ended has it as its free stack", tostring(old.free_stack))
  -- break keeps the cursor on its record; the cursor is read-only
  local kept
  for a in A:each() do if a.size == 400 then kept = a break end end
  eq(kept.size, 400, "after break the cursor still shows its record")
  eq(tostring(kept):match("^heapscript.Alloc %(#%d+ heap, 400 bytes at 0x20400%)$") ~= nil, true,
     "tostring of a cursor")
  raises(function() kept.size = 1 end, "read-only", "cursor fields cannot be assigned")
  raises(function() return kept.sizee end, "no field or method 'sizee'", "a misspelt field is an error")
  -- two loops at once have their own cursors
  local pairs_seen = 0
  for a in A:filter{size = {100, 200}}:each() do
    for b in A:filter{size = 400}:each() do
      if a.size ~= b.size then pairs_seen = pairs_seen + 1 end
    end
  end
  eq(pairs_seen, 2, "nested loops do not share a cursor")
end)

test("heap: Stack", function()
  local A = T:allocations{size = 100}
  local s
  for a in A:each() do s = a.stack end
  eq(getmetatable(s).__name, "heapscript.Stack", "a.stack is a heapscript.Stack")
  eq(math.type(s.id), "integer", "s.id")
  eq(#s, 2, "#s")
  list_eq(s:frames(), {"ntdll.dll+0x11234", "app.exe+0x2000"}, "s:frames(), innermost first")
  check(s:frames() ~= s:frames(), "s:frames() returns a new table each call")
  eq(s:frame(1), "ntdll.dll+0x11234", "s:frame(1)")
  eq(s:frame(-1), "app.exe+0x2000", "s:frame(-1): the outermost")
  eq(s:frame(3), nil, "s:frame(3): past the end")
  eq(s:addresses()[1], 0x7ff800011234, "s:addresses()")
  eq(s:contains("app.exe+0x2"), true, "s:contains (plain text)")
  eq(s:contains("app.exe+0x3"), false, "s:contains, no")
  eq(s:contains("%."), false, "s:contains is not a pattern")
  eq(s:matches("^app%.exe%+0x2000$"), true, "s:matches with a Lua pattern")
  eq(s:matches("^kernel"), false, "s:matches, no")
  eq(s:matches(lpeg.P"ntdll.dll+0x1"), true, "s:matches with an LPeg pattern")
  eq(s:matches(function(f) return f:sub(1, 3) == "app" end), true, "s:matches with a function")
  raises(function() s:matches(42) end, "pattern expected", "s:matches(42) is an error")
  raises(function() s.id = 3 end, "read-only", "Stack fields cannot be assigned")
  local s2
  for a in T:allocations{size = 200}:each() do s2 = a.stack end
  check(s == s2, "Stacks of the same id and process compare equal")
end)

test("heap: group", function()
  local A = T:allocations()
  local g = A:group("stack", {sort = "impacting", top = 3})
  eq(#g, 3, "group by stack, top 3")
  eq(g[1].stack:frame(2), "app.exe+0x4000", "1st by impacting: stack C")
  eq(g[1].impacting, 1600, "1st impacting")
  eq(g[1].key, g[1].stack.id, "key is the stack id")
  eq(g[2].stack:frame(2), "app.exe+0x3000", "2nd: stack B")
  eq(g[2].impacting, 400, "2nd impacting")
  eq(g[2].count, 2, "2nd count")
  eq(g[2].bytes, 1200, "2nd bytes")
  eq(g[2].transient, 800, "2nd transient")
  class_is(g[2].AIFO, 1, 400, "2nd AIFO")
  class_is(g[2].AIFI, 1, 800, "2nd AIFI")
  eq(g[2].peak, 1200, "2nd peak: r3 and r4 live together at 5")
  eq(g[2].peak_time, 5.0, "2nd peak_time")
  eq(#g[2].allocs, 2, "group.allocs holds its records")
  eq(g[2].allocs:summary().bytes, 1200, "group.allocs:summary()")
  list_eq(column(g[2].allocs, "size"), {400, 800}, "group.allocs in record order")
  eq(g[3].stack:frame(3), "app.exe+0x6100", "3rd: stack D")
  eq(g[3].impacting, 60, "3rd impacting")

  g = A:group("stack", {sort = "bytes"})
  eq(#g, 5, "five stacks, unknown included")
  list_eq({g[1].bytes, g[2].bytes, g[3].bytes, g[4].bytes, g[5].bytes}, {1600, 1200, 300, 60, 50},
          "sorted by bytes, largest first")
  eq(g[5].key, 0, "the unknown stack has key 0")
  eq(g[5].stack, nil, "... and no Stack")
  g = A:group("stack", {sort = "bytes", desc = false})
  eq(g[1].bytes, 50, "desc = false: smallest first")
  g = A:group("stack")
  local total = 0
  for _, x in ipairs(g) do total = total + x.count end
  eq(total, 8, "without sort: every group, in order of first appearance")

  local function bykey(groups)
    local t = {}
    for _, x in ipairs(groups) do t[x.key == nil and "nil" or x.key] = x end
    return t
  end
  g = bykey(A:group("reason"))
  eq(g.free.count, 4, "by reason: free")
  eq(g.none.count, 3, "by reason: none")
  eq(g.realloc.count, 1, "by reason: realloc")
  g = bykey(A:group("class"))
  eq(g.AIFI.count, 3, "by class: AIFI")
  eq(g.AIFO.count, 3, "by class: AIFO")
  eq(g.AOFI.count, 2, "by class: AOFI")
  g = A:group("class", {window = {2, 5}, sort = "count"})
  list_eq({g[1].key, g[2].key, g[3].key}, {"AIFO", "AOFO", "AOFI"}, "by class over [2,5], by count")
  g = A:group("kind")
  eq(#g, 1, "by kind: one group")
  eq(g[1].key, "heap", "by kind: key")
  eq(A:group("kind", {window = {2, 5}})[1].count, 6, "group with a window counts only its records")
  g = bykey(A:group("size"))
  eq(g[800].count, 1, "by size: 800")
  eq(g["nil"].count, 1, "by size: unknown size has no key")
  g = A:group("heap")
  eq(g[1].key, 0x10000, "by heap")
  g = A:group("pid")
  eq(g[1].key, 1000, "by pid: key")
  eq(g[1].process, "app.exe", "by pid: process")
  g = A:group("process")
  eq(g[1].process, "app.exe", "by process: process")
  eq(g[1].pid, 1000, "by process: pid")
  eq(g[1].key, g[1].instance, "by process: key is the instance")
  g = A:group("tag")
  eq(#g, 1, "by tag over heap records: one group")
  eq(g[1].key, nil, "... without a key")

  -- a Lua function: called once per record (nil leaves it out), keys interned
  local calls = 0
  g = A:group(function(a)
    calls = calls + 1
    if not a.size then return nil end
    return a.size >= 400 and "big" or "small"
  end, {sort = "count"})
  eq(calls, 8, "the key function runs once per record")
  eq(#g, 2, "function keys: two groups (nil left out)")
  eq(g[1].key, "small", "function keys: 'small' has the most")
  eq(g[1].count, 4, "function keys: small count")
  eq(g[2].bytes, 2800, "function keys: big bytes")
  eq(#g[2].allocs, 3, "function keys: big allocs")
  g = bykey(A:group(function(a) return a.before_trace end))
  eq(g[true].count, 2, "boolean keys: true")
  eq(g[false].count, 6, "boolean keys: false")
  eq(#A:group(function() return nil end), 0, "no keys, no groups")
end)

test("heap: filters", function()
  local A = T:allocations()
  eq(#A:where(function(a) return (a.size or 0) >= 400 end), 3, "where")
  eq(A:where(function(a) return (a.size or 0) >= 400 end):summary().bytes, 2800, "where():summary()")
  eq(#A:where(function() return false end), 0, "where, nothing")
  local function n(f) return #T:allocations(f) end
  eq(n{reason = "realloc"}, 1, "reason = realloc")
  eq(n{reason = {"free"}}, 4, "reason = {free}")
  eq(n{reason = {"free", "realloc"}}, 5, "reason = {free, realloc}")
  eq(n{outstanding = true}, 3, "outstanding = true")
  eq(n{outstanding = false}, 5, "outstanding = false")
  eq(n{outstanding = true, reason = "free"}, 0, "outstanding and reason free: nothing")
  eq(n{before_trace = true}, 2, "before_trace = true")
  eq(n{before_trace = false}, 6, "before_trace = false")
  eq(n{size_unknown = true}, 1, "size_unknown = true")
  eq(n{realloc = true}, 1, "realloc = true")
  eq(n{size = {100, 400}}, 3, "size = {100, 400}")
  eq(n{size = 800}, 1, "size = 800")
  eq(n{size = {min = 1000}}, 1, "size = {min = 1000}")
  eq(n{size = {nil, 60}}, 2, "size = {nil, 60}: unknown sizes are left out")
  eq(n{size = {500, 100}}, 0, "size = {500, 100}: empty range")
  eq(n{class = "AIFO"}, 3, "class = AIFO")
  eq(n{class = {"aifi", "AOFI"}}, 5, "class = {aifi, AOFI}")
  eq(n{kind = "pool"}, 0, "kind = pool")
  eq(n{kind = {"heap", "virtual"}}, 8, "kind = {heap, virtual}")
  eq(n{heap = 0x10000}, 8, "heap")
  eq(n{heap = 0x20000}, 0, "heap, other")
  eq(n{pid = 1000}, 8, "pid")
  eq(n{pid = 999}, 0, "pid, other")
  eq(n{process = "app.exe"}, 8, "process, exact")
  eq(n{process = "APP.EXE"}, 8, "process, exact ignoring case")
  eq(n{process = "app.*"}, 8, "process, pattern")
  eq(n{process = "pp%.exe"}, 0, "process, a pattern must match the whole name")
  eq(n{window = {2, 5}}, 6, "window = {2, 5}")
  eq(n{window = {2, 5}, class = "AIFO"}, 3, "window and class")
  local W = A:filter{window = {2, 5}}
  eq(#W, 6, "A:filter{window}")
  local t1, t2 = W:window()
  eq(t1, 2.0, "the sub-selection's window: start")
  eq(t2, 5.0, "the sub-selection's window: end")
  eq(W:summary().impacting, 1300, "summary() over the sub-selection's window")
  eq(#W:filter{class = "AIFO"}, 3, "filters run in the sub-selection's window")
  eq(#A:filter{kind = "heap"}:filter{size = {0, 300}}, 4, "chained filters")
  list_eq(column(A:sorted("size", true):filter{class = "AIFO"}, "size"), {1600, 400, 60},
          "filter keeps the selection's order")

  -- stack patterns: run once per distinct stack, never per record
  eq(n{stack = "app%.exe%+0x3000"}, 2, "stack = Lua pattern")
  eq(n{stack = lpeg.P"ntdll.dll+0x5555"}, 1, "stack = LPeg pattern")
  eq(n{stack = function(f) return f == "app.exe+0x6100" end}, 1, "stack = function")
  eq(n{stack = "ntdll"}, 6, "stack = 'ntdll': every record with a known stack")
  eq(n{free_stack = "app%.exe%+0x5000"}, 1, "free_stack")
  local calls = 0
  eq(n{stack = function() calls = calls + 1 return false end}, 0, "a pattern that never matches")
  eq(calls, 9, "... ran on each frame of the 4 distinct alloc stacks once (2+2+2+3)")
  eq(#A:filter{stack = "app%.exe%+0x2000", size = 200}, 1, "stack with other filters")
end)

test("heap: sorted and top", function()
  local A = T:allocations()
  list_eq(column(A:sorted("size"), "size"), {false, 50, 60, 100, 200, 400, 800, 1600},
          "sorted by size: unknown first")
  list_eq(column(A:sorted("size", true), "size"), {1600, 800, 400, 200, 100, 60, 50, false},
          "sorted by size, descending")
  list_eq(column(A:top(3), "size"), {1600, 800, 400}, "top(3): largest sizes")
  list_eq(column(A:top(2, "alloc_time"), "alloc_time"), {9.0, 7.0}, "top(2, alloc_time): latest")
  local L = column(A:sorted("lifetime"), "lifetime")
  list_eq({L[1], L[2], L[3]}, {0.5, 2.0, 4.0}, "sorted by lifetime: known ones first")
  eq(#A:top(0), 0, "top(0)")
  eq(#A:top(100), 8, "top(n > #A)")
  local addrs = column(A:sorted("address"), "address")
  local ok = true
  for i = 2, #addrs do ok = ok and addrs[i - 1] < addrs[i] end
  check(ok, "sorted by address")
end)

test("heap: processes and memory_stats", function()
  local ps = T:processes()
  eq(#ps, 1, "one process instance")
  eq(ps[1].pid, 1000, "pid")
  eq(ps[1].name, "app.exe", "name")
  eq(ps[1].cmdline, "app.exe --leak", "cmdline")
  eq(ps[1].start, nil, "start: running before the trace (rundown)")
  eq(ps[1]["end"], nil, "end: not seen ending")
  eq(ps[1].instance, 1, "instance")
  local st = T:memory_stats()
  eq(st.records, 8, "records")
  eq(st.memory_events, 10, "memory events")
  eq(st.lifetimes.ops.heap_alloc, 5, "ops.heap_alloc")
  eq(st.lifetimes.ops.heap_free, 4, "ops.heap_free")
  eq(st.lifetimes.ops.heap_realloc, 1, "ops.heap_realloc")
  eq(st.lifetimes.heap_free_unknown, 1, "frees of unknown blocks")
  eq(st.lifetimes.heap_realloc_unknown, 1, "reallocs of unknown blocks")
  eq(st.lifetimes.heap_double_free, 0, "double frees")
  eq(st.lifetimes.before_records, 2, "before-trace records")
  eq(st.stacks.distinct, 5, "distinct stacks (A, B, C, D, F)")
  eq(st.stacks.delivered, 7, "stacks delivered to records")
  eq(st.procmap.instances, 1, "procmap.instances")
  eq(st.first_time, 0.0, "first_time")
  eq(st.last_time, 10.0, "last_time")
end)

test("heap: extending the classes", function()
  function heapscript.Allocs.total(A) return A:summary().bytes end
  eq(T:allocations():total(), 3210, "a method added to heapscript.Allocs")
  heapscript.Allocs.total = nil
  function heapscript.Alloc.kib(a) return (a.size or 0) / 1024 end
  local k
  for a in T:allocations{size = 1600}:each() do k = a:kib() end
  eq(k, 1600 / 1024, "a method added to heapscript.Alloc")
  function heapscript.Stack.top(s) return s:frame(1) end
  for a in T:allocations{size = 1600}:each() do k = a.stack:top() end
  eq(k, "ntdll.dll+0x5555", "a method added to heapscript.Stack")
end)

test("heap: errors", function()
  local A = T:allocations()
  raises(function() T:allocations{sizes = 1} end, "unknown filter 'sizes'", "unknown filter")
  raises(function() T:allocations{class = "AIFX"} end, "unknown class 'AIFX' (known: AIFI", "bad class")
  raises(function() T:allocations{kind = "stack"} end, "unknown kind 'stack'", "bad kind")
  raises(function() T:allocations{reason = "gone"} end, "unknown reason 'gone'", "bad reason")
  raises(function() T:allocations{tag = "Le"} end, "a pool tag has 4 characters, 'Le' has 2", "bad tag length")
  raises(function() T:allocations{tag = {}} end, "4-character pool tag expected", "bad tag type")
  raises(function() T:allocations{window = {5, 2}} end, "start is after the end", "reversed window")
  -- one end given past the other's default (the trace runs 0..10 s): that moment, not reversed
  local w1, w2 = T:allocations{window = {100, nil}}:window()
  check(w1 == 100 and w2 == 100, "window {100, nil} on a 10 s trace: 100..100", w1, w2)
  w1, w2 = T:allocations{window = {nil, -1}}:window()
  check(w1 == -1 and w2 == -1, "window {nil, -1}: -1..-1", w1, w2)
  eq(T:allocations{window = {100, nil}}:summary().peak_time, 100.0, "... its peak is at that moment")
  raises(function() T:allocations{window = "x"} end, "window: {t1, t2}", "window of the wrong type")
  raises(function() T:allocations{window = {"a"}} end, "seconds expected", "window of strings")
  raises(function() T:allocations{pid = "x"} end, "filter 'pid': integer expected", "pid of the wrong type")
  raises(function() T:allocations{size = -1} end, "not negative", "negative size")
  raises(function() T:allocations{stack = 42} end, "LPeg pattern or function expected", "stack of the wrong type")
  raises(function() T:allocations(5) end, "filters: table expected", "filters not a table")
  raises(function() T:allocations{2} end, "filters are named", "positional filter")
  raises(function() T:allocations{kind = {}} end, "empty list", "empty list")
  raises(function() T:allocations{before_trace = 1} end, "boolean expected", "boolean filter")
  raises(function() T:allocations{process = "["} end, "malformed pattern", "bad process pattern")
  raises(function() A:group("colour") end, "unknown key 'colour'", "group by an unknown key")
  raises(function() A:group("stack", {sort = "weight"}) end, "unknown field 'weight'", "sort by an unknown field")
  raises(function() A:group("stack", {colour = 1}) end, "unknown option 'colour'", "unknown group option")
  raises(function() A:group("stack", {top = -1}) end, "non-negative", "negative top")
  raises(function() A:sorted("weight") end, "unknown record field 'weight'", "sorted by an unknown field")
  raises(function() A:top(-1) end, "not be negative", "top(-1)")
  raises(function() A:series{pts = 3} end, "unknown option 'pts'", "unknown series option")
  raises(function() A:summary("x") end, "window", "summary of a bad window")
  raises(function() A:outstanding("x") end, "seconds expected", "outstanding at a bad time")
  -- errors raised by the script's own functions, with C scratch live: nothing leaks
  -- (the sanitizer build checks)
  raises(function() A:where(function(a) if a.size == 800 then error("boom") end end) end, "boom",
         "error inside where()")
  raises(function() A:group(function(a) if a.size == 800 then error("bang") end return 1 end) end, "bang",
         "error inside group()")
  raises(function() A:group(function() return 0 / 0 end) end, "NaN", "NaN key")
  raises(function() A:filter{stack = function() error("pat") end} end, "pat", "error inside a stack pattern")
  raises(function() A:filter{stack = "[x"} end, "malformed pattern", "malformed stack pattern")
  local t2 = assert(heapscript.open(S.heap))
  local B = t2:allocations()
  t2:close()
  raises(function() t2:allocations() end, "closed trace", "allocations() of a closed trace")
  eq(B:summary().count, 8, "a selection outlives the close of its trace")
end)

-------------------------------------------------------------- VirtualAlloc

test("va: partial decommit pieces", function()
  local t = assert(heapscript.open(S.va))
  local A = t:allocations{kind = "virtual"}
  eq(#A, 5, "five records: three pieces of the 64 KiB commit, 12 KiB, 8 KiB before the trace")
  local V = A:sorted("address")
  list_eq(column(V, "address"), {0x100000, 0x104000, 0x105000, 0x200000, 0x300000}, "addresses")
  list_eq(column(V, "size"), {0x4000, 0x1000, 0xB000, 0x3000, 0x2000}, "sizes")
  list_eq(column(V, "reason"), {"release", "decommit", "release", "none", "decommit"}, "reasons")
  list_eq(column(V, "alloc_time"), {1.0, 1.0, 1.0, 3.0, false}, "alloc times: pieces keep the commit's")
  list_eq(column(V, "free_time"), {4.0, 2.0, 4.0, false, 3.5}, "free times")
  list_eq(column(V, "before_trace"), {false, false, false, false, true}, "before_trace")
  list_eq(column(V, "pid"), {200, 200, 200, 200, 200}, "pid from the payload")
  list_eq(column(V, "process"), {"va.exe", "va.exe", "va.exe", "va.exe", "va.exe"}, "process")
  local splits = 0
  for a in A:each() do if a.split then splits = splits + 1 end end
  check(splits > 0, "pieces are marked split", splits)
  local s = A:summary()
  eq(s.bytes, 0x15000, "bytes")
  class_is(s.AIFI, 3, 0x10000, "AIFI: the three pieces")
  class_is(s.AIFO, 1, 0x3000, "AIFO")
  class_is(s.AOFI, 1, 0x2000, "AOFI: the before-trace decommit")
  eq(s.impacting, 0x1000, "impacting")
  eq(s.peak, 0x12000, "peak: 60 KiB + 12 KiB")
  eq(s.peak_time, 3.0, "peak_time")
  eq(#t:allocations{reason = "decommit", before_trace = false}, 1, "the decommitted page")
  local g = {}
  for _, x in ipairs(A:group("reason")) do g[x.key] = x end
  eq(g.release.bytes, 0xF000, "by reason: release")
  eq(g.decommit.count, 2, "by reason: decommit")
  eq(g.none.bytes, 0x3000, "by reason: none")
  local st = t:memory_stats()
  eq(st.lifetimes.vm_decommit_unknown, 1, "vm_decommit_unknown")
  eq(st.lifetimes.vm_decommit_unknown_bytes, 0x2000, "vm_decommit_unknown_bytes")
  check(st.lifetimes.vm_splits >= 1, "vm_splits", st.lifetimes.vm_splits)
  t:close()
end)

------------------------------------------------------------------- pool

test("pool: tags", function()
  local t = assert(heapscript.open(S.pool))
  local A = t:allocations()
  eq(#A, 4, "four pool records")
  local L = t:allocations{tag = "Leak"}
  eq(#L, 2, "tag = Leak")
  eq(L:summary().bytes, 300, "Leak bytes")
  eq(L:outstanding(), 300, "Leak outstanding at the end")
  eq(#t:allocations{tag = string.unpack("<I4", "Leak")}, 2, "tag as its integer")
  eq(#t:allocations{tag = "Ntfs"}, 2, "tag = Ntfs")
  eq(#t:allocations{tag = "Ntfs", before_trace = true}, 1, "Ntfs before the trace")
  eq(#t:allocations{tag = "Leak", outstanding = true}, 2, "Leak never freed")
  eq(#t:allocations{tag = "None"}, 0, "an absent tag")
  eq(#t:allocations{kind = "heap"}, 0, "kind = heap")
  eq(#t:allocations{kind = {"pool", "heap"}}, 4, "kind = {pool, heap}")
  local V = A:sorted("alloc_time")
  list_eq(column(V, "tag"), {"Ntfs", "Leak", "Leak", "Ntfs"}, "cursor tag")
  list_eq(column(V, "pool_type"), {"Paged", "NonPaged", "NonPagedNx", "Paged"}, "cursor pool_type")
  list_eq(column(V, "size"), {32, 100, 200, 64}, "pool sizes (the before-trace free carries one)")
  list_eq(column(V, "kind"), {"pool", "pool", "pool", "pool"}, "kind")
  list_eq(column(V, "heap"), {false, false, false, false}, "heap is nil for pool")
  list_eq(column(V, "process"), {"System", "System", "System", "System"}, "process")
  list_eq(column(A:sorted("tag"), "tag"), {"Leak", "Leak", "Ntfs", "Ntfs"}, "sorted by tag")
  list_eq(column(A:sorted("tag", true), "tag"), {"Ntfs", "Ntfs", "Leak", "Leak"}, "sorted by tag, descending")
  local addr
  for a in L:each() do addr = addr or a.address end
  eq(addr, 0xffffa00000001000, "kernel addresses are (negative) integers")
  local g = A:group("tag", {sort = "bytes"})
  eq(#g, 2, "by tag: two groups")
  eq(g[1].key, "Leak", "by tag: key")
  eq(g[1].tag, "Leak", "by tag: tag")
  eq(g[1].bytes, 300, "by tag: Leak bytes")
  eq(g[2].bytes, 96, "by tag: Ntfs bytes")
  eq(g[1].impacting, 300, "by tag: Leak impacting")
  eq(g[1].stack, nil, "no stack field unless grouped by stack")
  local s
  for a in L:each() do s = a.stack end
  eq(s:frame(1), "ntoskrnl.exe+0x101000", "kernel frames are named by the system images")
  eq(#t:allocations{stack = "^ntoskrnl"}, 2, "stack filter on kernel frames")
  t:close()
end)

------------------------------------------------------------- pid reuse

test("pids: process instances", function()
  local t = assert(heapscript.open(S.pids))
  local A = t:allocations()
  eq(#A, 3, "three records")
  local ps, by = t:processes(), {}
  eq(#ps, 3, "three instances")
  for _, p in ipairs(ps) do by[p.name] = p end
  eq(by["a.exe"].pid, 500, "a.exe pid")
  eq(by["a.exe"].start, 1.0, "a.exe start")
  eq(by["a.exe"]["end"], 3.0, "a.exe end")
  eq(by["b.exe"].pid, 500, "b.exe reuses the pid")
  eq(by["b.exe"].start, 4.0, "b.exe start")
  eq(by["b.exe"]["end"], nil, "b.exe end")
  eq(by["c.exe"].start, nil, "c.exe started before the trace")
  eq(by["c.exe"].cmdline, "c.exe /x", "c.exe cmdline")
  check(by["a.exe"].instance ~= by["b.exe"].instance, "a.exe and b.exe are two instances")
  local g = {}
  for _, x in ipairs(A:group("process")) do g[x.process] = x end
  eq(g["a.exe"].count, 1, "by process: a.exe")
  eq(g["a.exe"].bytes, 10, "by process: a.exe bytes")
  eq(g["a.exe"].key, by["a.exe"].instance, "by process: key is the instance")
  eq(g["a.exe"].pid, 500, "by process: pid")
  eq(g["b.exe"].bytes, 20, "by process: b.exe bytes")
  eq(g["c.exe"].bytes, 30, "by process: c.exe bytes")
  local gp = A:group("pid", {sort = "key"})
  eq(#gp, 2, "by pid: two groups")
  eq(gp[1].key, 500, "by pid: 500 first")
  eq(gp[1].count, 2, "by pid: both instances of 500")
  eq(gp[1].bytes, 30, "by pid: 500 bytes")
  eq(gp[2].key, 600, "by pid: 600")
  local a = t:allocations{process = "a.exe"}
  eq(#a, 1, "process = a.exe")
  -- a process's exit frees nothing (LIFETIMES.md: a heap block ends at its Free, a ReAlloc or its
  -- heap's HeapDestroy): a.exe's block, never freed, is outstanding, a leak as WPA's AIFO has it
  list_eq(column(a, "reason"), {"none"}, "a.exe's block outlives its process's End")
  list_eq(column(a, "free_time"), {false}, "... never freed")
  eq(#t:allocations{pid = 500}, 2, "pid = 500")
  eq(#t:allocations{pid = {500, 600}}, 3, "pid = {500, 600}")
  eq(#t:allocations{instance = by["a.exe"].instance}, 1, "instance")
  eq(#t:allocations{process = {"a.exe", "c.exe"}}, 2, "process list")
  eq(#t:allocations{process = "[ab]%.exe"}, 2, "process pattern")
  eq(#t:allocations{process = "exe"}, 0, "process: no partial match")
  eq(#t:allocations{pid = 500, process = "b.exe"}, 1, "pid and process intersect")
  eq(#t:allocations{pid = 600, process = "b.exe"}, 0, "pid and process: nothing")
  local st = t:memory_stats()
  eq(st.lifetimes.process_end_ended, 0, "process_end_ended: none")
  eq(st.process_ends, 1, "process_ends: a.exe's End counted")
  t:close()
end)

--------------------------------------------------------- times and clocks

-- Heap blocks at these tick offsets from the clock's zero, one per record.
local OFFSETS = {1, 7, 1234567, 1234568, 98765431, 3000000001, 3000000002}

local function clock(name, freq)
  test("clock " .. name .. ": times and the round trip", function()
    local t = assert(heapscript.open(S[name]))
    local A = t:allocations()
    eq(#A, #OFFSETS, name .. ": records")
    -- seconds as hs_time_ns computes them: whole ns, truncated
    local want = {}
    for i, off in ipairs(OFFSETS) do want[i] = (off * 1000000000 // freq) / 1e9 end
    list_eq(column(A:sorted("alloc_time"), "alloc_time"), want, name .. ": alloc_time = ticks / freq")
    -- the same numbers as heapscript.Event's time for the same events
    local evtimes = {}
    for ev in t:events() do evtimes[ev.time] = true end
    local all = true
    for a in A:each() do all = all and evtimes[a.alloc_time] == true end
    check(all, name .. ": every alloc_time is the time of an event")
    -- a window of one time holds exactly the records shown at that time
    local ok, detail = true, nil
    for a in A:each() do
      local s, idx, n = a.alloc_time, a.index, 0
      for i = 1, #want do if want[i] == s then n = n + 1 end end
      local B = t:allocations{window = {s, s}, class = {"AIFI", "AIFO"}}
      local found = false
      for b in B:each() do found = found or b.index == idx end
      if #B ~= n or not found then ok, detail = false, ("%s: %d records, expected %d"):format(s, #B, n) end
    end
    check(ok, name .. ": window {t, t} holds exactly the records at t", detail)
    local w1 = A:window()
    eq(w1, 0.0, name .. ": the trace starts at 0")
    t:close()
  end)
end
clock("qpc", 3579545)
test("clock qpc: a window between two ticks", function()
  local t = assert(heapscript.open(S.qpc))
  -- ticks 1 and 2 are at 279 ns and 558 ns: [300 ns, 400 ns] holds no tick
  local A = t:allocations{window = {300e-9, 400e-9}}
  eq(#A, 1, "only the record allocated before it and alive after it")
  eq(A:summary().AOFO.count, 1, "... which is AOFO")
  eq(#A:series{points = 5}.time, 5, "a series over it")
  t:close()
end)
clock("systime", 10000000)
clock("cycles", 2995000000)

---------------------------------------------------------------- 100k

test("big: 100k records, no garbage per record", function()
  local t = assert(heapscript.open(S.big))
  local A = t:allocations()
  eq(#A, 100000, "records")
  local s = A:summary()
  eq(s.bytes, 5050000, "bytes: 1000 x (1 + ... + 100)")
  class_is(s.AIFI, 50000, 2500000, "AIFI: the even ones")
  class_is(s.AIFO, 50000, 2550000, "AIFO: the odd ones")
  collectgarbage()
  collectgarbage("stop")
  local before = collectgarbage("count")
  local n, sum = 0, 0
  for a in A:each() do
    n = n + 1
    sum = sum + a.size
    local _ = a.alloc_time, a.free_time, a.kind, a.process, a.pid, a.reason, a.before_trace,
              a.address, a.heap, a.stack, a.lifetime, a.index
  end
  local grown = collectgarbage("count") - before
  collectgarbage("restart")
  eq(n, 100000, "each() over 100k")
  eq(sum, 5050000, "sum of sizes through the cursor")
  check(grown < 64, "a loop over 100k records reading 13 fields allocates < 64 KiB", ("%.1f KiB"):format(grown))
  local g = A:group("size")
  eq(#g, 100, "by size: 100 groups")
  eq(g[1].count, 1000, "by size: 1000 each")
  g = A:group("stack", {sort = "count", top = 3})
  eq(#g, 3, "by stack, top 3")
  eq(g[1].count, 6250, "by stack: 100000 / 16")
  eq(#A:filter{stack = "app%.exe%+0x1010$"}, 6250, "stack filter over 100k")
  eq(#A:filter{size = {1, 10}, class = "AIFO"}, 5000, "size and class over 100k")
  -- top(n) for a small n keeps a heap instead of sorting: same answer as sorted()
  local top, sorted = column(A:top(1000, "size"), "index"), column(A:sorted("size", true), "index")
  local same = #top == 1000
  for i = 1, 1000 do same = same and top[i] == sorted[i] end
  check(same, "top(1000) equals the first 1000 of sorted(size, desc), ties in record order")
  list_eq(column(A:top(3, "size"), "index"), {100, 200, 300}, "top(3): the first three of size 100")
  list_eq(column(A:top(2, "alloc_time"), "index"), {100000, 99999}, "top(2, alloc_time)")
  t:close()
end)

T:close()
print(("allocs_scenarios: %d passed, %d failed"):format(TL.passed, TL.failed))
return TL.passed, TL.failed
