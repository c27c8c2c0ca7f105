-- test_layouts.lua -- memory events whose payloads do not fit the layout
-- they are decoded with are reported by `info`, by every bundled script
-- (one line on stderr; reports mark the kind's figures doubtful) and by
-- trace:layout_checks(); a correct trace reports nothing.  The payloads
-- are written byte by byte (w:kernel), so each case is exactly what a
-- differing Windows build would write.
package.path = "tests/lua/?.lua;" .. package.path
local T = require "testlib"
local check, eq, test = T.check, T.eq, T.test

local N, PID = 50, 100
local HEAP, KBASE = 0x250000, -0x3CF0C0000000

-- variant: "good", "newer" (HeapAlloc v3 with 8 more bytes), "shifted"
-- (PoolAlloc fields 4 bytes later), "narrow" (32-bit HeapAlloc payloads in
-- 64-bit headers), "badpid" (VirtualAlloc naming a process the trace does not)
local function write(variant)
  local path = T.tmpname()
  local w = assert(heapscript.writer(path, { cpus = 1, pointer_size = 8 }))
  w:process { op = "dcstart", pid = PID, ppid = 4, ts = 10, name = "app.exe" }
  local ts = 100
  for i = 1, N do
    local addr, size = 0x10000 + i * 0x40, 24 + i
    local hv, hp = 2, string.pack("<I8I8I8I4", HEAP, size, addr, 2)
    if variant == "newer" then hv, hp = 3, hp .. string.pack("<I8", 0x1234) end
    if variant == "narrow" then hp = string.pack("<I4I4I4I4", HEAP, size, addr, 2) end
    w:kernel { group = 0x10, opcode = 33, version = hv, pid = PID, tid = 101, ts = ts, payload = hp }
    local pp = string.pack("<I4I4I8i8", 0, string.unpack("<I4", "Leak"), 256, KBASE + i * 0x100)
    if variant == "shifted" then pp = string.pack("<I4", 0) .. pp end
    w:kernel { group = 0x0E, opcode = 32, version = 2, header = "PERFINFO64", ts = ts + 1, payload = pp }
    w:kernel { group = 0x02, opcode = 98, version = 2, header = "PERFINFO64", ts = ts + 2,
               payload = string.pack("<I8I8I4I4", 0x7000000 + i * 0x10000, 0x10000,
                                     variant == "badpid" and 999 or PID, 0x3000) }
    ts = ts + 10
  end
  assert(w:close())
  return path
end

local function run(cmd)
  local err = T.tmpname()
  local f = io.popen(cmd .. " 2>" .. T.q(err))
  local out = f:read("a")
  local _, _, rc = f:close()
  local e = io.open(err):read("a")
  os.remove(err)
  return out, e, rc
end

local function count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end

local HS = T.bin()
local SCRIPTS = { "leaks", "transient", "growth", "pool", "peak", "churn", "policy", "events", "diff" }
local expect = {
  newer = { event = "HeapAlloc", version = 3, kind = "heap", check = "length", len = "36 %(50%)" },
  shifted = { event = "PoolAlloc", version = 2, kind = "pool", check = "tag", len = "28 %(50%)" },
  narrow = { event = "HeapAlloc", version = 2, kind = "heap", check = "short", len = "16 %(50%)" },
  badpid = { event = "VirtualAlloc", version = 2, kind = "virtual", check = "pid", len = "24 %(50%)" },
}

test("info on a trace without memory events says so", function()
  local path = T.tmpname(".etl")
  local w = assert(heapscript.writer(path))
  w:process{op = "dcstart", pid = 1000, ts = 10, name = "app.exe"}
  assert(w:close())
  local out, _, rc = run(HS .. " info " .. T.q(path))
  eq(rc, 0, "exit status 0")
  check(out:find("memory events: none (to record them: see Recording a trace, README)", 1, true)
        and not out:find("memory layouts", 1, true), "one line instead of the listing", out)
  out = run(HS .. " info " .. T.q(write("good")))
  check(not out:find("memory events: none", 1, true), "not on a trace with them")
  os.remove(path)
end)

-- A layout keeps the first 8 payload lengths it meets and counts the
-- rest: HeapAlloc v3 payloads of 12 lengths, 5 events each, none of which
-- the v2 row explains.
test("more payload lengths than a row keeps: the first 8 listed, the others counted", function()
  local path = T.tmpname()
  local w = assert(heapscript.writer(path, { cpus = 1, pointer_size = 8 }))
  w:process { op = "dcstart", pid = PID, ppid = 4, ts = 10, name = "app.exe" }
  local ts = 100
  for k = 0, 11 do
    for i = 1, 5 do
      local hp = string.pack("<I8I8I8I4", HEAP, 32, 0x10000 + (k * 5 + i) * 0x40, 2) .. ("\0"):rep(4 + 8 * k)
      w:kernel { group = 0x10, opcode = 33, version = 3, pid = PID, tid = 101, ts = ts, payload = hp }
      ts = ts + 10
    end
  end
  assert(w:close())
  local t <close> = assert(heapscript.open(path))
  local rows = t:layout_checks()
  eq(#rows, 1, "one layout")
  local r = rows[1]
  local n = 0
  for len, events in pairs(r.lengths) do
    n = n + 1
    check(len >= 32 and len <= 32 + 8 * 7 and events == 5, "a length kept: " .. len .. " seen " .. events .. " times")
  end
  eq(n, 8, "8 lengths kept")
  eq(r.other_lengths, 20, "the other 4 lengths' 20 events counted")
  eq(r.failed.length, 60, "every event's length is unexplained, kept or not")
  eq(r.fits, false, "the layout does not fit")
  local out = run(HS .. " info " .. T.q(path))
  check(out:find("lengths 32 %(5%), 40 %(5%).-, 88 %(5%), others %(20%)"), "info lists them, then the others",
        out:match("memory layouts.*"))
  local js = run(HS .. " info --json " .. T.q(path))
  check(js:find('"other_lengths": 20', 1, true), "info --json: other_lengths")
  os.remove(path)
end)

for _, variant in ipairs { "good", "newer", "shifted", "narrow", "badpid" } do
  local path = write(variant)
  local x = expect[variant]

  test(variant .. ": info", function()
    local out, err, rc = run(HS .. " info " .. T.q(path))
    eq(rc, 0, "exit status 0 (a warning, not damage)")
    check(out:find("memory layouts", 1, true), "info lists the memory layouts")
    check(out:find("PoolAlloc +v2  P8 +50  lengths " .. (variant == "shifted" and "28" or "24") .. " %(50%)"),
          "info lists the lengths seen per memory event", out:match("memory layouts.*"))
    if not x then
      eq(err, "", "a correct trace: nothing on stderr")
      check(not out:find("DOES NOT FIT", 1, true), "every layout fits")
      return
    end
    eq(count(err, "layout does not fit"), 1, "one line on stderr")
    check(err:find(x.event .. " v" .. x.version, 1, true) and err:find("payload lengths " .. x.len)
          and err:find(x.check .. " 50", 1, true) and err:find(x.kind .. " figures are doubtful", 1, true),
          "it names the event, version, lengths and failed checks", err)
    check(out:find(x.event .. " +v" .. x.version .. " +P8 +50 +lengths " .. x.len .. ".*DOES NOT FIT"),
          "the listing says which does not fit", out:match("memory layouts.*"))
    local js = run(HS .. " info --json " .. T.q(path))
    check(js:find('"event": "' .. x.event .. '", "hook": %d+, "version": ' .. x.version .. '.-"fits": false'),
          "info --json: fits false")
  end)

  for _, s in ipairs(SCRIPTS) do
    test(variant .. ": " .. s, function()
      -- diff: the trace against itself, both sides misfit: still one line
      local args = s == "diff" and T.q(path) .. " " .. T.q(path) or T.q(path)
      local out, err = run(HS .. " " .. s .. " " .. args)
      if not x then
        check(not err:find("layout does not fit", 1, true), s .. ": nothing reported", err)
        check(not out:find("doubtful", 1, true), s .. ": nothing doubtful")
        return
      end
      eq(count(err, "layout does not fit"), 1, s .. ": one line on stderr")
      check(err:find(x.event .. " v" .. x.version, 1, true), s .. ": naming the event and version", err)
      check(out:find("doubtful", 1, true) or out:find("does not fit", 1, true), s .. ": the report says so", out)
      if s ~= "events" then
        local js, err2 = run(HS .. " " .. s .. " " .. args .. " -- --json -")
        check(js:find('"doubtful": {%s*"' .. x.kind .. '": "layout does not fit'), s .. ": JSON marks the kind doubtful",
              js:sub(1, 300))
        eq(count(err2, "layout does not fit"), 1, s .. " --json: the line on stderr too")
      end
      if s == "leaks" then   -- the report files say it before their figures
        local md = run(HS .. " leaks " .. T.q(path) .. " -- --markdown -")
        check(md:find("> **Doubtful**: the " .. x.kind .. " figures: the " .. x.kind
                      .. " event layout does not fit this trace", 1, true), "leaks --markdown: the kind is doubtful", md:sub(1, 300))
      end
    end)
  end

  test(variant .. ": trace:layout_checks()", function()
    local t <close> = assert(heapscript.open(path))
    local rows, bad = t:layout_checks(), {}
    eq(#rows, 3, "three layouts used")
    for _, r in ipairs(rows) do
      if not r.fits then bad[#bad + 1] = r end
      eq(r.events, N, r.event .. ": events")
    end
    eq(t:memory_stats().layouts_misfit, #bad, "memory_stats().layouts_misfit")
    if not x then eq(#bad, 0, "every layout fits"); return end
    eq(#bad, 1, "one layout does not fit")
    local r = bad[1]
    check(r.event == x.event and r.version == x.version and r.kind == x.kind, "it is " .. x.event)
    eq(r.failed[x.check], N, "check " .. x.check .. " failed for every event")
    check(r.warning and r.warning:find("layout does not fit", 1, true), "with its warning line")
  end)
  -- an unfiltered trace:tally gathers the checks on its way (the events
  -- script): trace:layout_checks then gives the analysis's rows without
  -- building it, so trace:scope may still follow
  test(variant .. ": trace:layout_checks() after trace:tally(), without the analysis", function()
    local function dump(v)
      if type(v) ~= "table" then return tostring(v) end
      local ks, out = {}, {}
      for k in pairs(v) do ks[#ks + 1] = k end
      table.sort(ks, function(p, q) return tostring(p) < tostring(q) end)
      for _, k in ipairs(ks) do out[#out + 1] = tostring(k) .. "=" .. dump(v[k]) end
      return "{" .. table.concat(out, ",") .. "}"
    end
    local a <close> = assert(heapscript.open(path))
    local b <close> = assert(heapscript.open(path))
    a:tally{}
    local ra, rb = dump(a:layout_checks()), dump(b:layout_checks())
    eq(ra, rb, "the same rows as the analysis makes")
    check(pcall(a.scope, a, { kind = "heap" }), "no analysis was built: trace:scope still comes first")
    local c <close> = assert(heapscript.open(path))
    c:tally{ provider = "Heap" }                      -- a filtered tally sees part: the analysis answers
    eq(dump(c:layout_checks()), rb, "after a filtered tally: the analysis's rows")
  end)
  os.remove(path)
end

return T.done("test_layouts")
