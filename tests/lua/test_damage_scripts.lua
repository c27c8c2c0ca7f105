-- test_damage_scripts.lua -- no silent damage: truncated and damaged
-- copies of both example traces (made here, in a temp dir) run through
-- every bundled script.  Each run must print on stderr the same damage
-- lines as `heapscript info` (file, offset, what was expected), exit 1,
-- and say in its text and in its JSON that the trace was damaged and
-- where.  The sound originals must do none of that.
package.path = "tests/lua/?.lua;tests/corpus/?.lua;" .. package.path
local T = require "testlib"
local json = require "json"
local q, check, eq, test = T.q, T.check, T.eq, T.test

local dir = T.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. q(dir)))

local function slurp(p)
  local f = assert(io.open(p, "rb"))
  local s = f:read("a")
  f:close()
  return s
end
local function spit(p, s)
  local f = assert(io.open(p, "wb"))
  f:write(s)
  f:close()
end
local run = T.run   -- exit code, stdout, stderr
-- the damage lines of a stderr text, sorted
local function damage_lines(err)
  local l = {}
  for line in err:gmatch("[^\n]+") do
    if line:find(": damaged: expected ", 1, true) then l[#l + 1] = line end
  end
  table.sort(l)
  return l
end
-- file offsets of the buffers of an ETL file (BufferSize chain)
local function buffers(s)
  local pos, list = 0, {}
  while pos + 8 <= #s do
    list[#list + 1] = pos
    local size = string.unpack("<I4", s, pos + 1)
    if size == 0 then break end
    pos = pos + size
  end
  return list
end
local function patch(s, at, bytes) return s:sub(1, at) .. bytes .. s:sub(at + #bytes + 1) end

-- the damaged copies: each example truncated inside a buffer, a buffer
-- header overwritten, and (uncompressed) a record size broken or
-- (compressed) a compressed stream corrupted
local copies = {}
for _, ex in ipairs{ "memorytestapp", "notmyfault" } do
  local s = slurp("examples/" .. ex .. ".etl")
  local sym = slurp("examples/" .. ex .. ".sym")
  local b = buffers(s)
  local function add(tag, data)
    local p = ("%s/%s-%s.etl"):format(dir, ex, tag)
    spit(p, data)
    spit(p:gsub("%.etl$", ".sym"), sym)
    copies[#copies + 1] = p
  end
  add("truncated", s:sub(1, b[#b - 2] + 3000))
  add("header", patch(s, b[4], ("\255"):rep(8)))
  if ex == "notmyfault" then
    add("record", patch(s, b[4] + 0x48 + 4, "\1\0"))      -- the first record of buffer 3: Size 1
  else
    add("stream", patch(s, b[6] + 0x60, ("\255"):rep(16))) -- inside buffer 5's compressed data
  end
end

-- policy with rules that always hold: its exit status then tells only the damage
local rules = dir .. "/pass.lua"
spit(rules, 'return { { name = "holds", check = function() return true end } }\n')
local scripts = {
  leaks = "", transient = "", growth = "", pool = "", events = "", peak = "", churn = "", policy = "--rules " .. q(rules),
}
local names = { "leaks", "transient", "growth", "pool", "peak", "churn", "policy", "events" }

for _, path in ipairs(copies) do
  local icode, _, ierr = run("info " .. q(path))
  local want = damage_lines(ierr)
  check(icode == 1 and #want >= 1, path .. ": info reports the damage", ierr)
  local first = want[1] and want[1]:match("offset (0x%x+)")
  for _, s in ipairs(names) do
    local opts = scripts[s]
    test(s .. " on " .. path, function()
      local code, out, err = run(s .. " " .. q(path) .. (opts ~= "" and " -- " .. opts or ""))
      eq(code, 1, s .. " " .. path .. ": exit 1")
      T.list_eq(damage_lines(err), want, s .. " " .. path .. ": stderr has info's damage lines")
      check(out:find("DAMAGED TRACE", 1, true) and out:find(path .. ": offset " .. first, 1, true),
            s .. " " .. path .. ": the text report says the trace is damaged, and where", out:sub(-600))
      local jf = dir .. "/r.json"
      os.remove(jf)
      code = run(s .. " " .. q(path) .. " -- " .. opts .. " --json " .. q(jf))
      eq(code, 1, s .. " " .. path .. " --json: exit 1")
      local ok, r = pcall(json.decode, slurp(jf))
      check(ok and r.damaged == true and #r.damage == #want, s .. " " .. path .. ": JSON damaged and the list",
            ok and #r.damage or r)
      local d = ok and r.damage[1] or {}
      check(d.file == path and ("0x%x"):format(d.offset or -1) == first and type(d.buffer) == "number"
            and type(d.what) == "string" and d.what ~= "", s .. " " .. path .. ": JSON damage names file, offset, what",
            ok and json.encode and "" or "")
    end)
  end
end

-- two runs compared: a damaged trace as diff's base, as its new run, as
-- diff's and policy's --baseline (a trace the script opens itself): each
-- run prints info's damage lines, exits 1, and its text and JSON say so
for _, path in ipairs(copies) do
  local sound = "examples/" .. path:match("/([%a]+)%-[%a]+%.etl$") .. ".etl"
  local _, _, ierr = run("info " .. q(path))
  local want = damage_lines(ierr)
  local first = want[1] and want[1]:match("offset (0x%x+)")
  for _, v in ipairs{ { "diff base", "diff " .. q(path) .. " " .. sound },
                      { "diff new", "diff " .. sound .. " " .. q(path) },
                      { "diff --baseline", "diff " .. sound .. " --baseline " .. q(path) },
                      { "policy --baseline", "policy " .. sound .. " --rules " .. q(rules) .. " --baseline " .. q(path) } } do
    test(v[1] .. " " .. path, function()
      local code, out, err = run(v[2])
      eq(code, 1, v[1] .. " " .. path .. ": exit 1")
      T.list_eq(damage_lines(err), want, v[1] .. " " .. path .. ": stderr has info's damage lines")
      check(out:find("DAMAGED TRACE", 1, true) and out:find(path .. ": offset " .. first, 1, true),
            v[1] .. " " .. path .. ": the text report says the trace is damaged, and where", out:sub(-600))
      local jf = dir .. "/r.json"
      os.remove(jf)
      eq(run(v[2] .. " --json " .. q(jf)), 1, v[1] .. " " .. path .. " --json: exit 1")
      local ok, r = pcall(json.decode, slurp(jf))
      check(ok and r.damaged == true and #r.damage == #want and r.damage[1].file == path,
            v[1] .. " " .. path .. ": JSON damaged, the list, the file", ok and #r.damage or r)
    end)
  end
end
-- a JSON baseline made from a damaged trace: the run is sound (exit 0),
-- and stderr says the baseline's figures leave something out
do
  local bj, sj = dir .. "/damaged-base.json", dir .. "/sound-base.json"
  run("leaks " .. q(copies[#copies]) .. " --json " .. q(bj))
  run("leaks examples/notmyfault.etl --json " .. q(sj))
  for _, s in ipairs{ "diff", "policy" } do
    local code, _, err = run(s .. " examples/notmyfault.etl --baseline " .. q(bj))
    check(code == (s == "policy" and 1 or 0) and #damage_lines(err) == 0
          and err:find(bj .. ": a report made from a damaged trace (1 damaged part skipped)", 1, true),
          s .. " --baseline a damaged trace's JSON: said on stderr, not the run's damage", code .. err)
    code, _, err = run(s .. " examples/notmyfault.etl --baseline " .. q(sj))
    check(not err:find("damaged", 1, true), s .. " --baseline a sound JSON: nothing said", err)
  end
end
for _, ex in ipairs{ "examples/memorytestapp.etl", "examples/notmyfault.etl" } do
  local jf = dir .. "/r.json"
  local code, out, err = run("diff " .. ex .. " " .. ex .. " --json " .. q(jf))
  local ok, r = pcall(json.decode, slurp(jf))
  check(code == 0 and err == "" and not out:find("DAMAGED", 1, true) and ok and r.damaged == false,
        "diff " .. ex .. " against itself: sound, exit 0, JSON damaged = false", code .. err)
end

-- the sound originals: exit 0, nothing on stderr, JSON says not damaged
for _, ex in ipairs{ "examples/memorytestapp.etl", "examples/notmyfault.etl" } do
  for _, s in ipairs(names) do
    local opts = scripts[s]
    local jf = dir .. "/r.json"
    local code, out, err = run(s .. " " .. ex .. " -- " .. opts .. " --json " .. q(jf))
    eq(code, 0, s .. " " .. ex .. ": sound trace, exit 0")
    eq(#damage_lines(err), 0, s .. " " .. ex .. ": no damage lines")
    check(not out:find("DAMAGED", 1, true), s .. " " .. ex .. ": the text says nothing of damage")
    local ok, r = pcall(json.decode, slurp(jf))
    check(ok and r.damaged == false and #r.damage == 0, s .. " " .. ex .. ": JSON damaged = false")
  end
end

-- a user's script: the status it returns stays, an error stays 1, os.exit(0)
-- becomes 1, and the damage met only by the analysis pass is reported
local rec = copies[#copies]            -- notmyfault with a broken record: found only while reading
local function script(text)
  local p = dir .. "/s.lua"
  spit(p, text)
  return p
end
local code, out, err = run(q(script("print(#trace:allocations{}, #(trace:damage()))\n")) .. " " .. q(rec))
check(code == 1 and out:match("^%d+\t(%d+)") == "1" and #damage_lines(err) == 1,
      "a script asking only trace:allocations: the analysis pass's damage is listed and reported, exit 1",
      code .. " " .. out .. err)
code, out, err = run(q(script("trace:allocations{}; return 3\n")) .. " " .. q(rec))
check(code == 3 and #damage_lines(err) == 1, "a script's own status (3) stays, the damage is printed", code)
code, out, err = run(q(script("trace:allocations{}; error('boom')\n")) .. " " .. q(rec))
check(code == 1 and err:find("boom", 1, true) and #damage_lines(err) == 1, "a failing script: exit 1, its error and the damage", err)
code, out, err = run(q(script("trace:allocations{}; os.exit(0)\n")) .. " " .. q(rec))
check(code == 1 and #damage_lines(err) == 1, "os.exit(0) after damage: exit 1 and the damage lines", code .. err)
code, out, err = run(q(script("trace:allocations{}; os.exit(true)\n")) .. " examples/notmyfault.etl")
check(code == 0 and err == "", "os.exit(true) on a sound trace: exit 0, silent", code .. err)
code, out, err = run(q(script("trace = nil; collectgarbage(); return 0\n")) .. " " .. q(copies[1]))
check(code == 1 and #damage_lines(err) >= 1, "a script that drops `trace`: the damage is still reported", code .. err)

-- the default rules on a damaged trace: its double frees may be
-- allocations lost between two frees, and the rule's message says so
code, out = run("policy " .. q(rec))
check(code == 1 and out:find("double frees (the trace is damaged: an allocation lost between two frees of a block reads "
      .. "as a double free)", 1, true), "policy on a damaged trace: the double frees are qualified", out)
-- leaks' note counts the double frees and unknown frees of the kinds it
-- reports (pool here), qualified the same way
code, out = run("leaks " .. q(rec) .. " --top 1")
local nu, nd = out:match("note: (%d+) frees? of blocks allocated before the trace, (%d+) double frees %(the trace is damaged")
check(code == 1 and tonumber(nd or 0) > 0 and tonumber(nu or 0) > 0, "leaks on a damaged pool trace: its pool double frees are noted, qualified", out)
code, out = run("leaks " .. q(rec) .. " --json -")
local j = json.decode(out)
check(j and j.notes.double_frees == tonumber(nd) and j.notes.frees_of_unknown_blocks == tonumber(nu), "leaks --json: the same notes", out)
code, out = run("leaks " .. q(rec) .. " --kind heap")
check(code == 1 and not out:find("double free", 1, true), "leaks --kind heap: the pool's double frees are not the heap's", out)
code, out = run("policy examples/notmyfault.etl")
check(out:find("PASS  no-double-free", 1, true) and not out:find("damaged", 1, true), "policy on the sound original", out)

-- a trace the script opens is its own business, unless it is one of the
-- run's inputs (heapscript.input): then its damage is the run's
local opened = "local T = assert(heapscript.open(" .. ("%q"):format(rec) .. ")); assert(#T:allocations{} > 0)\n"
code, out, err = run(q(script(opened .. "print(#(heapscript.damage()))\n")) .. " examples/memorytestapp.etl")
check(code == 0 and out == "0\n" and #damage_lines(err) == 0, "a trace opened by the script: not the run's damage", code .. out .. err)
code, out, err = run(q(script(opened .. "heapscript.input(T); T = nil; collectgarbage()\n"
                              .. "local l, n = heapscript.damage(); print(#l, n > 0, l[1].path)\n")) .. " examples/memorytestapp.etl")
check(code == 1 and out == ("1\ttrue\t%s\n"):format(rec) and #damage_lines(err) == 1,
      "heapscript.input: its damage is listed and reported, exit 1, after the collector freed it", code .. out .. err)

-- the command line's trace needs no walk of its own when other traces
-- read all of its files (as diff reads its two): the file removed after
-- another trace read it through (and was collected), trace:damage() still
-- has its record damage, which only reading finds
local gone = dir .. "/gone.etl"
spit(gone, slurp(rec))
code, out, err = run(q(script("local T = assert(heapscript.open(" .. ("%q"):format(gone) .. "))\n"
                              .. "assert(#T:allocations{} > 0); T = nil; collectgarbage()\n"
                              .. "os.remove(" .. ("%q"):format(gone) .. ")\nprint(#(trace:damage()))\n")) .. " " .. q(gone))
check(code == 1 and out == "1\n" and #damage_lines(err) == 1,
      "the command line's files read through by another trace: their damage without a walk of its own", code .. out .. err)

-- more damage than is kept: a sound trace followed by 5,000 blocks of 200
-- bytes, each a short empty buffer at byte 3 and garbage after it (each
-- block one damage, the 3 bytes before the first one more: 5,001).  The
-- script's trace and the analysis pass's reader both meet all of it: the
-- first 4,096 are listed once, the rest counted once, not once a reader.
do
  local seed = slurp("tests/fuzz/corpus/seed-64.etl")
  local block = ("\0"):rep(3) .. string.pack("<I4", 0x48) .. ("\0"):rep(0x2C) .. string.pack("<I4", 0x48)
                .. ("\0"):rep(2) .. string.pack("<I2", 1) .. ("\0"):rep(200 - 3 - 0x38)
  assert(#block == 200)
  local p = dir .. "/many.etl"
  spit(p, seed .. block:rep(5000))
  local icode, iout = run("info --json " .. q(p))
  local dmg = tonumber(iout:match('"damaged": (%d+)'))
  eq(icode, 1, "5,001 damages: info exits 1")
  eq(dmg, 5001, "5,001 damages: info counts them")
  local code, out, err = run(q(script("local l, total = trace:damage(); print(#trace:allocations{}, #l, total)\n"))
                             .. " " .. q(p))
  local n, listed, total = out:match("^(%d+)\t(%d+)\t(%d+)")
  eq(code, 1, "5,001 damages: the script exits 1")
  eq(listed, "4096", "5,001 damages: trace:damage() lists the first 4,096")
  check(tonumber(total) >= 5001, "5,001 damages: its total counts every report", total)
  eq(#damage_lines(err), 4096, "5,001 damages: 4,096 lines on stderr")
  check(err:find(": 905 more damage reports not listed (only the first 4096 are kept)", 1, true),
        "5,001 damages: the 905 not listed are counted once", err:sub(-300))
  local _, sout = run(q(script("print(#trace:allocations{})\n")) .. " tests/fuzz/corpus/seed-64.etl")
  eq(n, sout:match("^(%d+)"), "5,001 damages: the sound part's allocations, all of them")
end

-- a trace cut short after it was opened (another program rewriting it):
-- its buffers past the new end are damage, never a SIGBUS from reading
-- the mapping past the end of the file.  1 MiB buffers over 20 CPUs are
-- mapped (too many to read into slots); 64 KiB ones are read, and their
-- short reads used to fall back to the mapping; compressed ones inflate
-- from what is read (random frames keep that file above 4 MiB).  A file
-- under 4 MiB is read whole when it is opened: cut later, it is walked
-- as it was, every event and no damage.
local lcg = 1
local function frame() lcg = lcg * 6364136223846793005 + 1442695040888963407; return lcg & 0x7FFFFFFFFFFF end
for _, v in ipairs{ { "mapped", { cpus = 20, buffer_size = 1 << 20 }, 6000, 3 },
                    { "read", { cpus = 2, buffer_size = 65536 }, 40000, 3 },
                    { "compressed", { cpus = 2, buffer_size = 65536, compress = "xpress" }, 18000, 32 },
                    { "small", { cpus = 2, buffer_size = 65536 }, 6000, 3 } } do
  local p = ("%s/cut-%s.etl"):format(dir, v[1])
  local w = assert(heapscript.writer(p, v[2]))
  for i = 1, v[3] do
    local stack = { 0x401000 + i, 0x402000, 0x403000 }
    for k = 4, v[4] do stack[k] = frame() end
    assert(w:heap { op = "alloc", pid = 100, tid = 101, ts = 1000 + 10 * i, heap = 0x10000, addr = 0x20000 + 16 * i,
                    size = 16, cpu = i % v[2].cpus, stack = stack })
  end
  w:close()
  local whole = slurp(p)
  local t = assert(heapscript.open(p))
  spit(p, whole:sub(1, #whole // 3))                -- cut to a third, the trace open
  local n = 0
  local ok, err = pcall(function() for _ in t:events() do n = n + 1 end end)
  local list = t:damage()
  local cut = 0
  for _, d in ipairs(list) do if d.what:find("the file was cut short after it was opened", 1, true) then cut = cut + 1 end end
  if v[1] == "small" then
    check(ok and n == 2 * v[3] + 1 and #list == 0 and #whole < 4 << 20,
          "small: a trace under 4 MiB cut short while open is walked as it was opened",
          tostring(err) .. " " .. n .. " events, " .. #list .. " damaged, " .. #whole .. " bytes")
  else
    check(ok and n > 0 and n < 2 * v[3] + 1 and cut >= 1 and #whole >= 4 << 20,
          v[1] .. ": a trace cut short while open: its lost buffers are damage",
          tostring(err) .. " " .. n .. " events, " .. cut .. " cut, " .. #whole .. " bytes")
  end
  t:close()
end

-- two files of 2.5 MiB each are one trace of 5 MiB: not read whole (its
-- memory would grow with the number of files), so one cut while open
-- loses its buffers past the cut as above
do
  local paths, sizes = {}, {}
  for f = 1, 2 do
    paths[f] = ("%s/pair-%d.etl"):format(dir, f)
    local w = assert(heapscript.writer(paths[f], { cpus = 2, buffer_size = 65536 }))
    for i = 1, 20000 do
      assert(w:heap { op = "alloc", pid = 100, tid = 101, ts = 1000 * f + 10 * i, heap = 0x10000,
                      addr = 0x20000 + 16 * i + f, size = 16, cpu = i % 2, stack = { 0x401000 + i, 0x402000 } })
    end
    w:close()
    sizes[f] = #slurp(paths[f])
  end
  local whole = slurp(paths[2])
  local t = assert(heapscript.open(paths[1], paths[2]))
  spit(paths[2], whole:sub(1, #whole // 3))
  local n, cut = 0, 0
  local ok, err = pcall(function() for _ in t:events() do n = n + 1 end end)
  for _, d in ipairs(t:damage()) do if d.what:find("the file was cut short after it was opened", 1, true) then cut = cut + 1 end end
  check(ok and cut >= 1 and sizes[1] < 4 << 20 and sizes[1] + sizes[2] >= 4 << 20,
        "two files under 4 MiB, over it together: not read whole, the cut one's lost buffers are damage",
        tostring(err) .. " " .. n .. " events, " .. cut .. " cut, " .. sizes[1] .. " + " .. sizes[2] .. " bytes")
  t:close()
end

-- more damage than a report lists: the first ten, then how many more (each
-- is on standard error, and in the JSON)
do
  local p = dir .. "/twelve.etl"
  local w = assert(heapscript.writer(p, { cpus = 1, buffer_size = 65536 }))
  w:process{op = "dcstart", pid = 100, ts = 10, name = "app.exe"}
  for i = 1, 20000 do
    assert(w:heap { op = "alloc", pid = 100, tid = 101, ts = 1000 + 10 * i, heap = 0x10000, addr = 0x20000 + 16 * i,
                    size = 16, stack = { 0x401000 + i, 0x402000, 0x403000 } })
  end
  w:close()
  local s = slurp(p)
  local b = buffers(s)
  for i = 3, 14 do s = patch(s, b[i] + 0x48 + 4, "\1\0") end    -- twelve buffers, their first record: Size 1
  spit(p, s)
  local _, _, ierr = run("info " .. q(p))
  local want = damage_lines(ierr)
  local code, out, err = run("leaks " .. q(p))
  local listed = 0
  for line in out:gmatch("[^\n]+") do if line:find("^  " .. p:gsub("%p", "%%%0") .. ": offset 0x") then listed = listed + 1 end end
  check(#want == 12 and code == 1 and #damage_lines(err) == 12 and listed == 10
        and out:find("\n  ... and 2 more (each is on standard error)\n", 1, true),
        "twelve damaged buffers: ten listed in the report, the two others counted", out:sub(-900))
  local jf = dir .. "/twelve.json"
  run("leaks " .. q(p) .. " --json " .. q(jf))
  local ok, r = pcall(json.decode, slurp(jf))
  check(ok and #r.damage == 12, "and all twelve in the JSON", ok and #r.damage or r)
end

os.execute("rm -rf " .. q(dir))
return T.done("test_damage_scripts")
