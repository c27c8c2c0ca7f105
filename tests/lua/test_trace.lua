-- test_trace.lua -- heapscript.open and heapscript.Trace: header, files,
-- stats, damage, close/__close/__gc/__tostring, merged files, and the
-- rules of trace:events (one reused Event, rewinding, invalidation).
--
-- Run: heapscript tests/lua/test_trace.lua.  Figures come from
-- shared/traces/expected/*.json; without the corpus (HEAPSCRIPT_CORPUS,
-- default ../shared/traces) the test is skipped, unless CI=true.

package.path = "tests/lua/?.lua;tests/corpus/?.lua;" .. package.path
local T = require "testlib"
local corpus = T.corpus
local full = T.exists(corpus .. "/MANIFEST.tsv")
if not full then
  local _, code = T.need_corpus("test_trace (all but the bundled traces)")
  if code ~= 0 then return code end
end
local check, eq, test, raises = T.check, T.eq, T.test, T.raises

local INJECTED = T.corpus_file("microsoft_perfview__diagsession_diaghub.user_injected.1.etl")  -- bundled
local KERNEL1 = corpus .. "/microsoft_perfview__diagsession_diaghub.kernel.1.etl"
local SHUTDOWN = corpus .. "/airbus-cert_etl-parser__ShutdownPerfDiagLogger.etl"
local RUNONCE = corpus .. "/danyquenneville_Dany-Quenneville__ExplorerStartupLog_RunOnce.etl"

if full then  -- these read traces of the full corpus; the rest the bundled user_injected.1
test("open", function()
  local t, err = heapscript.open("/nonexistent/x.etl")
  check(t == nil and type(err) == "string" and err:find("/nonexistent/x.etl", 1, true),
        "open of a missing file: nil, message naming it", err)
  t, err = heapscript.open(corpus .. "/dollydoll_histories__ExplorerStartupLog.etl")
  check(t == nil and err:find("ExplorerStartupLog.etl", 1, true) and err:find("offset", 1, true),
        "open of the damaged corpus file: nil, message with file and offset", err)
  raises(function() heapscript.open() end, "at least one path", "open() without a path is an error")
  -- a NUL byte would cut the name where the system reads it: another file opened, or written
  raises(function() heapscript.open("examples/memorytestapp.etl\0junk") end, "a file name with a NUL byte",
         "open() of a name with a NUL byte is an error")
  raises(function() heapscript.writer(T.tmpname() .. "\0x") end, "a file name with a NUL byte",
         "writer() of a name with a NUL byte is an error")
  raises(function() heapscript.same_file("a\0b", "a") end, "a file name with a NUL byte", "same_file too")
  t = assert(heapscript.open(INJECTED))
  eq(getmetatable(t).__name, "heapscript.Trace", "open returns a heapscript.Trace")
  eq(tostring(t), "heapscript.Trace (" .. INJECTED .. ")", "__tostring names the file")
  eq(t:close(), true, "close returns true")
  eq(t:close(), true, "close twice is allowed")
  eq(tostring(t), "heapscript.Trace (closed)", "__tostring of a closed trace")
  raises(function() t:header() end, "closed trace", "header() of a closed trace is an error")
  raises(function() t:events() end, "closed trace", "events() of a closed trace is an error")
  raises(function() t:same_file("x") end, "closed trace", "same_file() of a closed trace is an error")
  raises(function() t:session() end, "closed trace", "session() of a closed trace is an error")
end)

test("header", function()
  -- expected/airbus-cert_etl-parser__ShutdownPerfDiagLogger.json "header"
  local t = assert(heapscript.open(SHUTDOWN))
  local h = t:header()
  local want = {
    logger_name = "PerfDiag Logger", os_build = 18362, pointer_size = 8, cpus = 2,
    buffers_written = 49, buffer_size = 65536, compressed = false, clock_type = 1,
    perf_freq = 10000000, start_time = 132273542277445790, end_time = 132273837534159885,
    events_lost = 0, buffers_lost = 0,
  }
  for k, v in pairs(want) do eq(h[k], v, "header()." .. k) end
  eq(type(h.log_file_mode), "number", "header().log_file_mode")
  eq(#h.version, 4, "header().version has 4 bytes")
  eq(h.compression, 0, "header().compression is 0 when uncompressed")
  eq(h.path, SHUTDOWN, "header().path")
  eq(type(h.header_ts), "number", "header().header_ts")
  eq(t:header(1).os_build, 18362, "header(1) is the first file")
  raises(function() t:header(2) end, "no such file", "header(2) of a one-file trace is an error")
  t:close()
  -- a 32-bit trace (expected/...ExplorerStartupLog_RunOnce.json)
  t = assert(heapscript.open(RUNONCE))
  h = t:header()
  eq(h.pointer_size, 4, "32-bit trace: pointer_size 4")
  eq(h.perf_freq, 974511, "32-bit trace: perf_freq")
  eq(h.logger_name, "ExplorerStartupLog_RunOnce", "32-bit trace: logger_name")
  t:close()
end)

test("stats and damage on a sound file", function()
  local t <close> = assert(heapscript.open(SHUTDOWN))
  eq(t:count(), 17078, "count() of all records = expected events")
  local s = t:stats()
  eq(s.records, 17078, "stats().records after a full pass")
  eq(s.buffers_damaged, 0, "stats().buffers_damaged")
  eq(s.records_damaged, 0, "stats().records_damaged")
  eq(s.first_damage_pos, nil, "stats().first_damage_pos is nil without damage")
  eq(type(s.file_size), "number", "stats().file_size")
  local list, total = t:damage()
  check(type(list) == "table" and #list == 0 and total == 0, "damage() is empty", total)
end)
end  -- full

test("damage of a damaged copy", function()
  -- a copy of a two-buffer file whose second buffer header is overwritten
  local f = assert(io.open(INJECTED, "rb"))
  local data = f:read("a")
  f:close()
  local bad = T.tmpname()
  f = assert(io.open(bad, "wb"))
  f:write(data:sub(1, 65536), string.rep("\xEE", 0x48), data:sub(65536 + 0x48 + 1))
  f:close()
  local t, err = heapscript.open(bad)
  if not t then
    check(err:find(bad, 1, true), "damaged copy refused with a message naming it", err)
  else
    local n = t:count()
    local list, total = t:damage()
    check(n < 4, "damaged copy: records of the damaged buffer are not delivered", n)
    check(#list >= 1 and total >= #list, "damaged copy: damage() lists the damage", total)
    local d = list[1] or {}
    eq(d.file, 1, "damage().file is 1-based")
    check(type(d.pos) == "number" and type(d.buffer) == "number" and type(d.what) == "string",
          "damage() items have pos, buffer, what", d.what)
    check(t:stats().buffers_damaged >= 1 or t:stats().bytes_trailing > 0, "stats() counts the damage")
    t:count()
    local list2 = t:damage()
    eq(#list2, #list, "a second pass does not store the same damage twice")
    t:close()
    eq(#t:damage(), #list, "damage() still answers after close()")
  end
  os.remove(bad)
end)

test("__close and __gc", function()
  local keep
  do
    local t <close> = assert(heapscript.open(INJECTED))
    keep = t
    eq(t:count(), 4, "to-be-closed trace works in its block")
  end
  eq(tostring(keep), "heapscript.Trace (closed)", "<close> closed the trace at the end of the block")
  for _ = 1, 50 do heapscript.open(INJECTED) end
  collectgarbage()
  collectgarbage()
  check(true, "50 unreferenced traces collected without a crash")
end)

if full then
test("merged files", function()
  -- expected: kernel.1 16335 events, user_injected.1 4 events
  local t = assert(heapscript.open(KERNEL1, INJECTED))
  local files = t:files()
  check(#files == 2 and files[1] == KERNEL1 and files[2] == INJECTED, "files() lists both paths in order")
  eq(t:header(2).buffers_written, 2, "header(2) is the second file's")
  local per, n, last, ordered = { 0, 0 }, 0, nil, true
  for ev in t:events() do
    per[ev.file] = per[ev.file] + 1
    n = n + 1
    if last and ev.timestamp < last then ordered = false end
    last = ev.timestamp
  end
  eq(n, 16339, "merged: every record of both files")
  check(per[1] == 16335 and per[2] == 4, "merged: ev.file is 1-based and counts per file match", per[1] .. "/" .. per[2])
  check(ordered, "merged: one stream ordered by timestamp")
  eq(t:stats(2).records, 4, "stats(2) is the second file's")
  check(tostring(t):find("and 1 more", 1, true), "__tostring of a merged trace", tostring(t))
  -- times share one origin: the earlier file starts at 0
  local first = {}
  for ev in t:events() do
    if not first[ev.file] then first[ev.file] = ev.ns end  -- the value: ev changes
    if first[1] and first[2] then break end
  end
  local h1, h2 = t:header(1), t:header(2)
  eq(first[1], 0, "merged: the earlier file's header record is at ns 0")
  -- one clock (QPC of one boot): the later file's header is where its ticks put it on the first file's
  -- clock, as its records' alloc_time and the merged file have it; its StartTime would put it 36.3 us
  -- later (the two stamps of a header are not taken at one instant)
  eq(first[2], (h2.header_ts - h1.header_ts) * 1000000000 // h1.perf_freq, "merged: the later file's start is its ticks'")
  check(math.abs(first[2] - (h2.start_time - h1.start_time) * 100) < 100000, "... within 0.1 ms of its StartTime's")
  t:close()
end)
end

test("one reused Event", function()
  local t = assert(heapscript.open(INJECTED))
  local seen, prev, same = {}, nil, true
  for ev in t:events() do
    if prev and rawequal(prev, ev) == false then same = false end
    prev = ev
    seen[#seen + 1] = ev.timestamp
  end
  check(same, "the loop hands out the same Event object every step")
  eq(#seen, 4, "4 records")
  -- after the loop the Event has no record
  local ok, err = pcall(function() return prev.pid end)
  check(not ok and err:find("loop has ended", 1, true), "an Event after its loop ended: error", err)
  -- after break it still shows the record the loop stopped on
  local kept
  for ev in t:events() do kept = ev; break end
  eq(kept.timestamp, seen[1], "after break the Event shows the record the loop stopped on")
  -- kept across steps, it shows the current record
  local first
  local steps = 0
  for ev in t:events() do
    steps = steps + 1
    if steps == 1 then first = ev end
    if steps == 3 then eq(first.timestamp, seen[3], "a kept Event shows the current record") end
  end
  -- a loop started later invalidates the earlier one
  local it = t:events()
  local ev = it()
  eq(ev.timestamp, seen[1], "manual stepping: first record")
  local it2 = t:events{ limit = 1 }
  eq(it2().timestamp, seen[1], "a second loop starts from the beginning")
  raises(function() it() end, "newer trace:events()", "the older loop then raises an error")
  t:close()
  raises(function() it2() end, "trace closed", "a loop of a closed trace raises an error")
  raises(function() return ev.pid end, "closed trace", "an Event of a closed trace raises an error")
end)

-- trace:tally counts in C what a loop over trace:events counts in Lua:
-- every (provider, id, opcode) once, in the order first met, with the
-- Event's provider_name and name, under the same filters
local function lua_tally(t, filter)
  local rows, at, total = {}, {}, 0
  for ev in t:events(filter) do
    local k = ev.provider .. "/" .. ev.id .. "/" .. ev.opcode
    local r = at[k]
    if not r then
      r = { provider = ev.provider, provider_name = ev.provider_name, id = ev.id, opcode = ev.opcode,
            name = ev.name, count = 0 }
      rows[#rows + 1] = r
      at[k] = r
    end
    r.count = r.count + 1
    total = total + 1
  end
  return rows, total
end

test("tally", function()
  local files = { INJECTED, "examples/memorytestapp.etl", "examples/notmyfault.etl" }
  if full then files[#files + 1] = KERNEL1; files[#files + 1] = RUNONCE; files[#files + 1] = SHUTDOWN end
  for _, path in ipairs(files) do
    local t = assert(heapscript.open(path))
    for _, filter in ipairs{ {}, { provider = "StackWalk" }, { kernel = false }, { limit = 100, opcode = { 3, 33 } } } do
      local want, wn = lua_tally(t, filter)
      local got, gn = t:tally(filter)
      local same = #got == #want and gn == wn
      for i = 1, #want do
        local a, b = got[i] or {}, want[i]
        for _, k in ipairs{ "provider", "provider_name", "id", "opcode", "name", "count" } do
          if a[k] ~= b[k] then same = ("row %d %s: %s, loop %s"):format(i, k, tostring(a[k]), tostring(b[k])) end
        end
      end
      check(same == true, ("tally = the loop's counts: %s %s"):format(path:match("[^/]*$"), next(filter) or "all"),
            same)
    end
    t:close()
  end
  local t = assert(heapscript.open("examples/memorytestapp.etl"))
  local rows, n = t:tally{ provider = "Heap" }
  eq(n, t:count{ provider = "Heap" }, "tally's total is count's")
  local allocs = 0
  for _, r in ipairs(rows) do if r.opcode == 33 then allocs = r.count end end
  eq(allocs, 5000, "the example's 5,000 HeapAlloc records")
  raises(function() t:tally{ bogus = 1 } end, "unknown filter 'bogus'", "tally takes the filters of events")
  t:close()
  raises(function() t:tally() end, "closed trace", "tally of a closed trace raises")
end)

test("Trace methods are extensible", function()
  function heapscript.Trace.first_timestamp(tr)
    for ev in tr:events{ limit = 1 } do return ev.timestamp end
  end
  local t = assert(heapscript.open(INJECTED))
  eq(t:first_timestamp(), 13780215107, "a method added to heapscript.Trace works")
  heapscript.Trace.first_timestamp = nil
  t:close()
end)

-- Files with different clocks (here 10 MHz and 3 MHz QPC, B started 2 s
-- after A): the reader merges them on FILETIME, and the analysis counts
-- every time in the first file's clock, whichever file is first.  A second
-- file's raw ticks were read in the first's clock (the example and a 2011
-- corpus trace: 4,681 of the example's 5,000 heap records fell out of the
-- default window).
test("files of different clocks", function()
  local dir = T.tmpname()
  os.remove(dir)
  local pa, pb = dir .. "-a.etl", dir .. "-b.etl"
  local X = 133200000000000000                      -- a FILETIME of 2023
  local w = assert(heapscript.writer(pa, { perf_freq = 10000000, start_time = X, start_ticks = 0, cpus = 1 }))
  for k = 1, 10 do
    assert(w:heap { op = "alloc", pid = 100, tid = 101, ts = k * 10000000, heap = 0x10000, addr = 0xA000 + 16 * k, size = 16 })
    if k <= 5 then assert(w:heap { op = "free", pid = 100, tid = 101, ts = k * 10000000 + 5000000, heap = 0x10000, addr = 0xA000 + 16 * k }) end
  end
  w:close()
  w = assert(heapscript.writer(pb, { perf_freq = 3000000, start_time = X + 20000000, start_ticks = 1000, cpus = 1 }))
  for k = 1, 4 do
    assert(w:heap { op = "alloc", pid = 200, tid = 201, ts = 1000 + k * 3000000, heap = 0x20000, addr = 0xB000 + 16 * k, size = 32 })
    if k == 1 then assert(w:heap { op = "free", pid = 200, tid = 201, ts = 1000 + 4500000, heap = 0x20000, addr = 0xB000 + 16 }) end
  end
  w:close()
  for _, order in ipairs{ { pa, pb, "A, B" }, { pb, pa, "B, A" } } do
    local t <close> = assert(heapscript.open(order[1], order[2]))
    local A = t:allocations{ kind = "heap" }
    eq(#A, 14, order[3] .. ": every record of both files")
    eq(A:summary().AIFO.count, 8, order[3] .. ": 5 of A's and 3 of B's outstanding at the end")
    local at, life = {}, {}
    for a in A:each() do at[a.address] = a.alloc_time; life[a.address] = a.lifetime end
    local ok = true
    for k = 1, 10 do ok = ok and math.abs(at[0xA000 + 16 * k] - k) < 1e-6 end
    for k = 1, 4 do ok = ok and math.abs(at[0xB000 + 16 * k] - (2 + k)) < 1e-6 end
    check(ok, order[3] .. ": A's allocations at k s, B's at 2 + k s from A's start", at[0xA000 + 16], at[0xB000 + 16])
    check(math.abs(life[0xB000 + 16] - 0.5) < 1e-6 and math.abs(life[0xA000 + 16] - 0.5) < 1e-6,
          order[3] .. ": lifetimes in seconds of either clock", life[0xB000 + 16], life[0xA000 + 16])
  end
  -- merged into one file (B's clock, B first): the same records at the same
  -- times from the earliest start; none left out (A's were refused as
  -- going back in time, read in B's clock)
  local pm = dir .. "-m.etl"
  local code, _, err = T.run("merge -o " .. T.q(pm) .. " " .. T.q(pb) .. " " .. T.q(pa))
  check(code == 0 and err:find("20 records from 2 files", 1, true) and err:find("0 left out", 1, true),
        "merge of the two: every record", err)
  local t <close> = assert(heapscript.open(pm))
  local at = {}
  for a in t:allocations{ kind = "heap" }:each() do at[a.address] = a.alloc_time end
  local ok = true
  for k = 1, 10 do ok = ok and at[0xA000 + 16 * k] and math.abs(at[0xA000 + 16 * k] - k) < 1e-6 end
  for k = 1, 4 do ok = ok and at[0xB000 + 16 * k] and math.abs(at[0xB000 + 16 * k] - (2 + k)) < 1e-6 end
  check(ok, "the merged file: A's at k s, B's at 2 + k s from its start", at[0xA000 + 16], at[0xB000 + 16])
  os.remove(pa); os.remove(pb); os.remove(pm)
end)

-- Two files read together: an event's time is its allocation's alloc_time to the last bit, in either
-- order, whether the files share a clock whose StartTimes disagree by 0.5 s with their ticks (the
-- events of the second were 0.5 s later than their records) or have two clocks (the second's
-- records were 100 ns steps, its events not)
test("an event's time is its record's, files together", function()
  local S = 132223104000000000
  local function write(path, o, pid, base, allocs)
    local w = assert(heapscript.writer(path, o))
    w:process { op = "dcstart", pid = pid, ts = o.start_ticks + 10, name = "p" .. pid .. ".exe" }
    for i, ts in ipairs(allocs) do
      w:heap { op = "alloc", pid = pid, tid = pid + 4, ts = ts, cpu = i % 2, heap = 0x10000, addr = base + 16 * i, size = 16 }
    end
    assert(w:close())
  end
  local a, b, c = T.tmpname(".etl"), T.tmpname(".etl"), T.tmpname(".etl")
  write(a, { start_time = S, start_ticks = 1000, cpus = 2 }, 100, 0x10000, { 20000000, 20000007, 30000001 })
  write(b, { start_time = S + 15000000, start_ticks = 10000000, cpus = 2 }, 200, 0x20000, { 20000003, 25000009, 25000010 })
  local f = 3579545
  write(c, { start_time = S + 36000000000, start_ticks = 5000000000000, perf_freq = f, cpus = 2 }, 300, 0x30000,
        { 5000000000000 + f + 1, 5000000000000 + f + 8, 5000000000000 + 2 * f + 3 })
  for _, files in ipairs { { a, b }, { b, a }, { a, c }, { c, a } } do
    local t <close> = assert(heapscript.open(files[1], files[2]))
    local times, n, same = {}, 0, 0
    for ev in t:events { provider = "Heap" } do times[#times + 1] = ev.time end
    for r in t:allocations():sorted("alloc_time"):each() do
      n = n + 1
      if r.alloc_time == times[n] then same = same + 1 end
    end
    eq(same .. "/" .. n, "6/6", "alloc_time == ev.time, " .. (files[1] == a and "a" or files[1] == b and "b" or "c") .. " first")
  end
  os.remove(a); os.remove(b); os.remove(c)
end)

return T.done("test_trace")
