-- test_filters.lua -- trace:events / trace:count filters, and the Event
-- key fields, against the figures in shared/traces/expected/*.json:
-- a tally by (provider, opcode, id, version) made through the Lua API
-- must equal `by_key`, and a filtered count must equal the sum of the
-- matching `by_key` rows.
--
-- Run: heapscript tests/lua/test_filters.lua.  Without the corpus
-- (HEAPSCRIPT_CORPUS, default ../shared/traces) the test is skipped,
-- unless CI=true.

package.path = "tests/lua/?.lua;tests/corpus/?.lua;" .. package.path
local T = require "testlib"
local corpus = T.corpus
local full = T.exists(corpus .. "/MANIFEST.tsv")  -- else only the bundled traces (T.bundled) are read
if not full and os.getenv("CI") == "true" then
  print("not ok - corpus missing at " .. corpus .. " and CI=true")
  return 1
end
if not full then print("SKIP test_filters: no full corpus at " .. corpus .. ": the bundled traces only") end
local check, eq, test, raises = T.check, T.eq, T.test, T.raises

local json = require "json"
local function expected(name)
  return json.read(T.corpus_file("expected/" .. name .. ".json"))
end

local function keystr(provider, opcode, id, version)
  return ("%s op %d id %d v %d"):format(provider, opcode, id, version)
end

-- the whole tally through the API ------------------------------------------
local FILES = {
  "airbus-cert_etl-parser__ShutdownPerfDiagLogger",           -- SYSTEM64 + PERFINFO64, kernel
  "microsoft_perfview__diagsession_diaghub.kernel.1",         -- kernel + one EVENT_HEADER
  "microsoft_perfview__diagsession_diaghub.user_paged.1",     -- EVENT_HEADER64, ext items
  "danyquenneville_Dany-Quenneville__ExplorerStartupLog_RunOnce", -- 32-bit
  "google_syzygy__sawbuck_log_lib_test_data__image_data_64_v2.7979ca8", -- FULL_HEADER32
  "jtbraun_pyetw__out",                                       -- FULL_HEADER64
  "Alan-Jowett_sonde__test",                                  -- buffer-0 tail repeats
  "microsoft_Tx__Process",
  "microsoft_perfview__smallEtlFile",                         -- compressed, 32-bit
  "microsoft_perfview__net.4.5.2.x86",                        -- compressed, stacks (bundled)
  "microsoft_Tx__HTTP_Server",                                -- old layout (bundled)
}

for _, name in ipairs(FILES) do
  if not T.corpus_file(name .. ".etl") then goto next end
  test(name, function()
    local e = expected(name)
    local t, err = heapscript.open(T.corpus_file(name .. ".etl"))
    if not t then return check(false, name .. ": opens", err) end
    local tally, byht, n = {}, {}, 0
    for ev in t:events() do
      local k = keystr(ev.provider, ev.opcode, ev.id, ev.version)
      tally[k] = (tally[k] or 0) + 1
      byht[ev.header_type] = (byht[ev.header_type] or 0) + 1
      n = n + 1
    end
    eq(n, e.events, name .. ": number of records")
    local bad = {}
    for _, row in ipairs(e.by_key) do
      local k = keystr(row.provider, row.opcode, row.id, row.version)
      if tally[k] ~= row.count then bad[#bad + 1] = ("%s: %s, expected %d"):format(k, tostring(tally[k]), row.count) end
      tally[k] = nil
    end
    for k, c in pairs(tally) do bad[#bad + 1] = ("%s: %d, expected none"):format(k, c) end
    check(#bad == 0, name .. ": tally by provider/opcode/id/version = by_key", table.concat(bad, "; ", 1, math.min(#bad, 5)))
    local ok = true
    for ht, c in pairs(e.by_header_type) do
      if byht[ht] ~= c then ok = false end
      byht[ht] = nil
    end
    check(ok and next(byht) == nil, name .. ": tally by header_type = by_header_type")
    -- every by_key row as a filter
    bad = {}
    for _, row in ipairs(e.by_key) do
      local c = t:count { provider = row.provider, opcode = row.opcode, id = row.id }
      local want = 0
      for _, r2 in ipairs(e.by_key) do
        if r2.provider == row.provider and r2.opcode == row.opcode and r2.id == row.id then want = want + r2.count end
      end
      if c ~= want then bad[#bad + 1] = ("%s op %d id %d: %d, expected %d"):format(row.provider, row.opcode, row.id, c, want) end
    end
    check(#bad == 0, name .. ": count{provider, opcode, id} for every key", table.concat(bad, "; ", 1, math.min(#bad, 5)))
    for ht, c in pairs(e.by_header_type) do
      eq(t:count { header_type = ht }, c, name .. ": count{header_type = '" .. ht .. "'}")
    end
    t:close()
  end)
  ::next::
end

-- filters one by one, on the kernel trace -------------------------------------
local IMAGE = "2cb15d1d-5fc1-11d2-abe1-00a0c911f518"
local PROCESS = "3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c"
local THREAD = "3d6fa8d1-fe05-11d0-9dda-00c04fd7ba7c"

if full then test("filters", function()
  -- expected/airbus-cert_etl-parser__ShutdownPerfDiagLogger.json by_key:
  -- Image op 2: 4791, op 3: 6745, op 4: 2145, op 10: 72, op 33: 1, op 34: 1
  local t <close> = assert(heapscript.open(corpus .. "/airbus-cert_etl-parser__ShutdownPerfDiagLogger.etl"))
  local image = 4791 + 6745 + 2145 + 72 + 1 + 1
  eq(t:count(), 17078, "count() with no filter")
  eq(t:count {}, 17078, "count{} with an empty filter")
  eq(t:count { provider = IMAGE }, image, "provider = GUID")
  eq(t:count { provider = "{" .. IMAGE .. "}" }, image, "provider = {GUID} with braces")
  eq(t:count { provider = "Image" }, image, "provider = name")
  eq(t:count { provider = "image" }, image, "provider name ignores case")
  eq(t:count { provider = { "Image", PROCESS } }, image + 60 + 94 + 37 + 60 + 5, "provider = list of name and GUID")
  raises(function() t:count { provider = "NoSuchProvider" } end, "neither a GUID nor a provider name",
         "an unknown provider name is an error (it could never match)")
  eq(t:count { provider = IMAGE, opcode = 3 }, 6745, "provider + opcode")
  eq(t:count { provider = IMAGE, opcode = { 2, 3 } }, 4791 + 6745, "opcode = list")
  eq(t:count { provider = IMAGE, id = 0 }, image, "id = 0 for kernel records")
  eq(t:count { id = 1 }, 0, "id = 1 matches nothing in a kernel trace")
  eq(t:count { header_type = "PERFINFO64" }, 8645, "header_type = name")
  eq(t:count { header_type = { "PERFINFO64", "SYSTEM64" } }, 17078, "header_type = list")
  eq(t:count { header_type = 0x11 }, 8645, "header_type = number")
  eq(t:count { kernel = true }, 17078, "kernel = true")
  eq(t:count { kernel = false }, 0, "kernel = false")
  eq(t:count { limit = 10 }, 10, "limit = 10")
  eq(t:count { limit = 0 }, 0, "limit = 0")
  local n = 0
  for _ in t:events { provider = IMAGE, limit = 5 } do n = n + 1 end
  eq(n, 5, "events{limit = 5} yields 5")
  n = 0
  for ev in t:events { provider = "Thread", opcode = 1 } do
    n = n + 1
    if ev.provider ~= THREAD or ev.opcode ~= 1 then n = -1e9 end
  end
  eq(n, 350, "events{provider, opcode} yields only matching records")

  -- pid and tid against a tally made in Lua
  local pids, tids, noid, odd = {}, {}, 0, 0
  local times = {}
  for ev in t:events() do
    local pid, tid = ev.pid, ev.tid
    if pid == nil then
      noid = noid + 1
      if not ev.header_type:find("PERFINFO", 1, true) or tid ~= nil then odd = odd + 1 end
    else
      pids[pid] = (pids[pid] or 0) + 1
      tids[tid] = (tids[tid] or 0) + 1
    end
    times[#times + 1] = ev.ns
  end
  eq(noid, 8645, "records without ids are the PERFINFO ones")
  eq(odd, 0, "pid and tid are nil together, and only on PERFINFO records")
  local top = {}
  for pid, c in pairs(pids) do top[#top + 1] = { pid, c } end
  table.sort(top, function(a, b) return a[2] > b[2] end)
  for i = 1, math.min(3, #top) do
    eq(t:count { pid = top[i][1] }, top[i][2], "pid = " .. top[i][1])
  end
  eq(t:count { pid = { top[1][1], top[2][1] } }, top[1][2] + top[2][2], "pid = list")
  local sometid, c = next(tids)
  eq(t:count { tid = sometid }, c, "tid = " .. sometid)

  -- from / to, seconds since the start, both ends inclusive
  -- boundaries between records, a quarter and three quarters of the way in
  local a, b = (times[4000] + 0.5) / 1e9, (times[12000] + 0.5) / 1e9
  local inside, before = 0, 0
  for ev in t:events() do
    if ev.ns >= a * 1e9 and ev.ns <= b * 1e9 then inside = inside + 1 end
    if ev.ns <= a * 1e9 then before = before + 1 end
  end
  check(inside > 0 and inside < 17078, "the window holds some records", inside)
  eq(t:count { from = a, to = b }, inside, "from / to")
  eq(t:count { to = a }, before, "to only")
  eq(t:count { from = a }, 17078 - before + t:count { from = a, to = a }, "from only")
  eq(t:count { from = 0 }, 17078, "from = 0 includes the header record")
  -- time filter and the event's own time agree
  local ok = true
  for ev in t:events { from = a, to = b } do
    if ev.time < a - 1e-6 or ev.time > b + 1e-6 then ok = false end
  end
  check(ok, "ev.time of filtered records lies in [from, to]")
end) end

test("filter errors", function()
  local t <close> = assert(heapscript.open(T.corpus_file("microsoft_perfview__diagsession_diaghub.user_injected.1.etl")))
  raises(function() t:count { opcodes = 1 } end, "unknown filter 'opcodes'", "an unknown filter name is an error")
  raises(function() t:count { opcode = "x" } end, "integer expected", "opcode must be an integer")
  raises(function() t:count { opcode = 256 } end, "out of range", "opcode beyond 255 is an error")
  raises(function() t:count { header_type = "NOPE" } end, "unknown header type", "an unknown header type is an error")
  raises(function() t:count { kernel = 1 } end, "boolean", "kernel must be a boolean")
  raises(function() t:count { provider = 5 } end, "string expected", "provider must be a string")
  raises(function() t:count { provider = {} } end, "empty list", "an empty list is an error")
  raises(function() t:count { limit = -1 } end, "non-negative", "a negative limit is an error")
  -- a name holding a NUL byte was read cut there: "Process\0junk" counted Process's events
  for _, f in ipairs { { provider = "Process\0junk" }, { header_type = "SYSTEM64\0x" } } do
    local k = next(f)
    raises(function() t:count(f) end, "filter '" .. k .. "': a name with a NUL byte in it", k .. " with a NUL byte is an error")
  end
  local e <close> = assert(heapscript.open("examples/memorytestapp.etl"))
  raises(function() return e:allocations { kind = "heap\0junk" } end, "filter 'kind': a name with a NUL byte in it",
         "an allocations kind with a NUL byte is an error")
  raises(function() return e:allocations { process = "MemoryTestApp.exe\0junk" } end,
         "filter 'process': a name with a NUL byte in it", "a process with a NUL byte is an error")
  raises(function() return e:symbols { path = "/tmp\0x" } end, "a symbol path with a NUL byte", "a symbol path with a NUL byte")
  local ops = {}
  for i = 1, 32 do ops[i] = i - 1 end
  eq(t:count { provider = IMAGE, opcode = ops }, t:count { provider = IMAGE }, "32 values in one list are taken")
  ops[33] = 32
  raises(function() t:count { opcode = ops } end, "more than 32 values", "a 33rd value is an error")
  raises(function() t:count { from = "soon" } end, "seconds", "from must be a number")
  raises(function() t:count { to = 0 / 0 } end, "NaN is not a time", "to = NaN is an error")
  raises(function() for _ in t:events { pid = "x" } do end end, "bad argument #1 to 'events' (filter 'pid'",
         "a filter's error names the function and its argument, as allocations' do")
  local all = t:count()
  eq(t:count { to = 1e300 }, all, "to far past the end (1e300 s, as a window's end may be): every record")
  eq(t:count { from = -math.huge }, all, "from = -inf: every record")
  eq(t:count { from = 1e300 }, 0, "from far past the end: none")
  raises(function() t:count { 1 } end, "named", "a positional filter is an error")
  raises(function() t:events(5) end, "table expected", "the filter must be a table")
end)

-- exact times (ns): what pool.lua uses to find the events of a few records
-- without a walk of every event in Lua
test("ns filter", function()
  local t <close> = assert(heapscript.open("examples/notmyfault.etl"))
  local all, by_ns = {}, {}
  for ev in t:events() do
    all[#all + 1] = { ns = ev.ns, provider = ev.provider_name }
    by_ns[ev.ns] = (by_ns[ev.ns] or 0) + 1
  end
  check(#all > 100, "the example has events", #all)
  local pick, want, seen = {}, 0, {}
  for i = 1, #all, #all // 31 do
    local ns = all[i].ns
    if not seen[ns] and #pick < 32 then pick[#pick + 1] = ns; seen[ns] = true; want = want + by_ns[ns] end
  end
  eq(#pick, 32, "32 distinct times picked")
  eq(t:count { ns = pick }, want, "count{ns = list}: every event at those times")
  local got, ok = 0, true
  for ev in t:events { ns = pick } do
    got = got + 1
    if not seen[ev.ns] then ok = false end
  end
  check(ok and got == want, "events{ns = list} gives only events at those times", got, want)
  eq(t:count { ns = pick[5] }, by_ns[pick[5]], "a single time")
  local pool = 0
  for _, e in ipairs(all) do if seen[e.ns] and e.provider == "Pool" then pool = pool + 1 end end
  check(pool > 0 and pool < want, "some of those events are pool events", pool)
  eq(t:count { ns = pick, provider = "Pool" }, pool, "with a provider")
  eq(t:count { ns = -1 }, 0, "a time no event has")
  local a = all[#all // 2].ns
  eq(t:count { ns = pick, to = a / 1e9 }, (function()
    local n = 0
    for _, e in ipairs(all) do if seen[e.ns] and e.ns <= a then n = n + 1 end end
    return n
  end)(), "with to")
  raises(function() t:count { ns = 1.5 } end, "integer expected", "ns must be an integer")
  local many = { table.unpack(pick) }
  many[33] = 0
  raises(function() t:count { ns = many } end, "more than 32 values", "a 33rd time is an error")
end)

-- windows reaching far outside the trace: the records of the whole trace
-- or none, never an overflow converting their ends (make SANITIZE=1 test
-- runs this under UBSan, which used to stop at timeconv.c's scale)
test("windows far outside the trace", function()
  local t <close> = assert(heapscript.open("examples/memorytestapp.etl"))
  local all = #t:allocations{}
  for _, w in ipairs{ { -1e300, 1e300 }, { -1 / 0, 1 / 0 }, { -1e300, nil }, { nil, 1e300 } } do
    local A = t:allocations{ window = w }
    eq(#A, all, ("window {%s, %s}: every record"):format(tostring(w[1]), tostring(w[2])))
    local s = A:summary(w)
    check(s.count == all and s.window[1] <= 0 and s.window[2] >= 20, "its summary", s.window[1], s.window[2])
    local S = A:series{ points = 4, window = w }
    check(#S.time == 4 and S.time[1] == 0 and S.time[4] > 19 and S.time[4] < 21 and S.bytes[4] > 0,
          "its series spans the trace, not all time", S.time[1], S.time[4])
  end
  for _, w in ipairs{ { 1e300, 2e300 }, { -2e300, -1e300 } } do
    local A = t:allocations{ window = w }
    check(A:summary(w).AIFO.count == 0, ("window {%g, %g}: nothing outstanding in it"):format(w[1], w[2]))
  end
end)

return T.done("test_filters")
