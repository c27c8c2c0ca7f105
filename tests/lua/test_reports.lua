-- test_reports.lua -- comparing with a baseline and the report files:
-- the stable keys of baseline.lua, `heapscript diff` on the example and
-- its next build (the leak fixed; a new leak), from a trace and from a
-- stored JSON baseline, `policy --baseline` rules passing and failing,
-- bad baselines, the folded file's totals against the reports, the CSV
-- rows, and the HTML page's caps on a trace of 100,000 stacks.
-- (Golden files: tests/cli/test_formats.sh; the page in Chromium:
-- tests/cli/test_html.sh.)
package.path = "tests/lua/?.lua;tests/corpus/?.lua;" .. package.path
local T = require "testlib"
local json = require "json"
local baseline = require "baseline"
local q = T.q
local check, eq = T.check, T.eq

local run, report, slurp = T.run_all, T.report, T.slurp
local M, FIXED, NEW = "examples/memorytestapp.etl", "examples/memorytestapp-fixed.etl", "examples/memorytestapp-newleak.etl"
local tmp = T.tmpname()
os.remove(tmp)
os.execute("mkdir -p " .. q(tmp))

T.test("stable keys", function()
  eq(baseline.frame_key("MemoryTestApp.exe!InnerLoopOperation+0x27"), "memorytestapp.exe!InnerLoopOperation", "symbol: offset dropped")
  eq(baseline.frame_key("ntdll.dll!RtlUserThreadStart"), "ntdll.dll!RtlUserThreadStart", "symbol without offset")
  eq(baseline.frame_key("app.exe!operator new+0x1f"), "app.exe!operator new", "a name with a space")
  eq(baseline.frame_key("MemoryTestApp.exe+0x15B7"), "memorytestapp.exe+0x15b7", "no symbol: module and RVA")
  eq(baseline.frame_key("0xfffff8055d4a1000"), "?", "a bare address has no stable key")
  local fake = { frames = function() return { "a.dll!Leaf+0x1", "b.exe!Main+0x20" } end }
  eq(baseline.stack_key(fake), "b.exe!Main;a.dll!Leaf", "stack key: root first")
  eq(baseline.headline_of_key("ntdll.dll!RtlUserThreadStart;app.exe!Main;ntdll.dll!RtlAllocateHeap"), "app.exe!Main",
     "headline of a stored key skips system modules")
end)

-- A Stack's key is made in C (s:key()) from the frames' fields: it must be
-- what frame_key makes of the frame text, on every kind of frame.
local function text_key(stack) return table.concat(baseline.root_first(stack), ";") end

T.test("s:key() is the text's stable key: module and RVA, a bare address", function()
  local path = tmp .. "/keys.etl"
  local w = assert(heapscript.writer(path))
  w:process{op = "dcstart", pid = 1000, ts = 10, name = "App.EXE"}
  w:image{op = "dcstart", pid = 1000, base = 0x7ff700000000, size = 0x10000, ts = 20,
          path = "\\Device\\HarddiskVolume3\\app\\App.EXE"}
  w:heap{op = "alloc", pid = 1000, tid = 1004, ts = 100, addr = 0x20000, size = 40,
         stack = {0xfffff8055d4a1000, 0x7ff70000ABCD, 0x7ff700000000}}
  assert(w:close())
  local t <close> = assert(heapscript.open(path))
  local keys = {}
  for a in t:allocations():each() do
    if a.stack then
      keys[#keys + 1] = baseline.stack_key(a.stack)
      eq(keys[#keys], text_key(a.stack), "C key = text key " .. #keys)
    end
  end
  eq(keys[1], "app.exe+0x0;app.exe+0xabcd;?", "root first, the module lower-cased, RVA in lower-case hex, '?' for no image")
  os.remove(path)
end)

T.test("s:key() on the example: PDB names, inline levels left out, as the text says", function()
  local t <close> = assert(heapscript.open(M))
  local n, inl = 0, 0
  for _, g in ipairs(t:allocations():group("stack")) do
    if g.stack then
      n = n + 1
      eq(g.stack:key(), text_key(g.stack), "C key = text key, stack " .. n)
      for _, d in ipairs(g.stack:details()) do if d.inline then inl = inl + 1 end end
    end
  end
  check(n >= 10 and inl > 0, "every stack of the example, some with inline levels", n .. " stacks, " .. inl .. " inline")
  local k = t:allocations{kind = "heap", outstanding = true}:group("stack")[1].stack:key()
  check(k:find("memorytestapp.exe!Main;memorytestapp.exe!InnerLoopOperation;", 1, true),
        "a PDB function without offset or line; the inline level (RunInnerLoop) left out", k)
end)

T.test("baseline.diff: status by bytes, then by count; largest change first", function()
  local function g(key, count, bytes) return { kind = "heap", by = "stack", key = key, count = count, bytes = bytes, impacting = bytes } end
  local rows = baseline.diff(
    { g("same-bytes-more", 2, 100), g("same-bytes-fewer", 4, 100), g("same", 1, 10), g("big", 1, 10), g("gone", 3, 30) },
    { g("same-bytes-more", 3, 100), g("same-bytes-fewer", 2, 100), g("same", 1, 10), g("big", 1, 5000), g("new", 1, 700) })
  local by = {}
  for i, r in ipairs(rows) do by[r.key] = r; r.i = i end
  eq(by["same-bytes-more"].status, "grew", "as many bytes in more blocks: grew")
  eq(by["same-bytes-fewer"].status, "shrank", "as many bytes in fewer blocks: shrank")
  eq(by.same.status, "unchanged", "the same: unchanged")
  eq(by.new.status, "new", "new")
  eq(by.gone.status, "vanished", "vanished")
  check(by.big.i == 1 and by.new.i == 2 and by.gone.i == 3 and by.big.delta == 4990,
        "largest change first: +4,990, +700, -30")
  -- the order in full: by stack, tag, process; then the size of the change;
  -- then kind and key (rows of no change in bytes, whatever their status)
  local function k(kind, grp, key, bytes) return { kind = kind, by = grp, key = key, count = 1, bytes = bytes, impacting = bytes } end
  rows = baseline.diff(
    { k("pool", "process", "a.exe", 5), k("heap", "tag", "x", 1), k("virtual", "stack", "s1", 7), k("heap", "stack", "s2", 7),
      k("pool", "stack", "s0", 7), k("heap", "stack", "s3", 9), k("pool", "tag", "Irp ", 3), k("heap", "stack", "s4", 1) },
    { k("pool", "process", "a.exe", 5), k("heap", "tag", "x", 1), k("virtual", "stack", "s1", 7), k("heap", "stack", "s2", 7),
      k("pool", "stack", "s0", 7), k("heap", "stack", "s3", 8), k("pool", "tag", "Irp ", 4), k("heap", "stack", "s4", 2),
      k("heap", "process", "b.exe", 1) })
  local got = {}
  for i, r in ipairs(rows) do got[i] = r.by .. ":" .. r.kind .. ":" .. r.key end
  eq(table.concat(got, " "), "stack:heap:s3 stack:heap:s4 stack:heap:s2 stack:pool:s0 stack:virtual:s1 "
     .. "tag:pool:Irp  tag:heap:x process:heap:b.exe process:pool:a.exe", "the whole order of a diff's rows")
end)

-- changed rows of a diff report, by grouping
local function changed(r, by)
  local l = {}
  for _, g in ipairs(r.groups) do if g.by == by and g.status ~= "unchanged" then l[#l + 1] = g end end
  return l
end

local base_json = tmp .. "/base.json"
T.test("diff: the leak fixed", function()
  local r, code, raw = report("diff " .. M .. " " .. FIXED .. " --")
  check(r and code == 0, "diff exits 0", raw)
  local c = changed(r, "stack")
  eq(#c, 1, "exactly one stack changed")
  local g = c[1] or {}
  check(g.status == "vanished" and g.kind == "heap" and g.base.count == 319 and g.base.bytes == 12760
        and g.new.count == 0 and g.new.bytes == 0 and g.delta == -12760 and g.base.impacting == 12760,
        "the 319 x 40 B leak vanished", raw)
  check((g.headline or ""):find("InnerLoopOperation", 1, true), "named by its headline", g.headline)
  eq(r.counts.stack.unchanged, 2, "the two VirtualAlloc stacks match across the rebuild")
end)

T.test("diff: a kind one side did not record is said, not read as leaks fixed or come", function()
  local N2 = "examples/notmyfault.etl"      -- pool only; the example heap and VirtualAlloc only
  local r, code, raw = report("diff " .. M .. " " .. N2 .. " --")
  local u = r and r.unrecorded or {}
  check(code == 0 and u.base and #u.base == 1 and u.base[1] == "pool" and u.new and #u.new == 2
        and u.new[1] == "heap" and u.new[2] == "virtual", "JSON: BASE has no pool, NEW no heap or VirtualAlloc", raw)
  local out = run("diff " .. M .. " " .. N2)
  check(out:find("note: NEW has no heap or VirtualAlloc records at all (not recorded?): the groups of those kinds "
                 .. "show as vanished for that, not because a leak was fixed", 1, true)
        and out:find("note: BASE has no pool records at all (not recorded?): the groups of that kind show as new", 1, true),
        "the text says both", out)
  local b = tmp .. "/mt.json"
  run("leaks " .. M .. " -- --json " .. q(b))
  r, code, raw = report("diff " .. N2 .. " -- --baseline " .. q(b))
  u = r and r.unrecorded or {}
  check(code == 0 and u.base and u.base[1] == "pool" and u.new and #u.new == 2, "a JSON baseline's kinds say what it recorded", raw)
  local f = assert(io.open(b, "rb"))
  local v = json.decode(f:read("a"))
  f:close()
  v.kinds = nil                              -- a baseline that does not say its kinds is not judged
  f = assert(io.open(b, "wb"))
  f:write(heapscript.json(v))
  f:close()
  r, code, raw = report("diff " .. N2 .. " -- --baseline " .. q(b))
  u = r and r.unrecorded or {}
  check(code == 0 and u.base == nil and u.new and #u.new == 2, "without its kinds, only NEW is judged", raw)
  r, code, raw = report("diff " .. M .. " " .. FIXED .. " --")
  check(code == 0 and r and r.unrecorded == nil, "both sides with the same kinds: nothing said", raw)
  check(not run("diff " .. M .. " " .. FIXED):find("note:", 1, true), "... nor in the text")
end)

T.test("diff: allocations without a stack are shown apart, not as a stack that came or went", function()
  -- BASE: ten leaks with one stack; NEW: four of them without a stack walk
  local function write(path, stackless)
    local w = assert(heapscript.writer(path))
    local base = 0x7ff700000000
    w:process{op = "dcstart", pid = 1000, ts = 10, name = "app.exe"}
    w:image{op = "dcstart", pid = 1000, base = base, size = 0x100000, ts = 20, path = "\\Device\\HarddiskVolume3\\app\\app.exe"}
    for i = 1, 10 do
      w:heap{op = "alloc", pid = 1000, tid = 1004, ts = 100 + 10 * i, heap = 0x5000, addr = 0x20000 + 0x100 * i, size = 100,
             stack = i > stackless and { base + 0x1234, base + 0x2000 } or nil}
    end
    assert(w:close())
  end
  local B, N2 = tmp .. "/ns-base.etl", tmp .. "/ns-new.etl"
  write(B, 0)
  write(N2, 4)
  local r, code, raw = report("diff " .. q(B) .. " " .. q(N2) .. " -- --all")
  local c = r and r.counts.stack or {}
  check(code == 0 and c.new == 0 and c.shrank == 1 and c.unchanged == 0, "one stack shrank, none new", raw)
  local keyed = false
  for _, g in ipairs(r and r.groups or {}) do keyed = keyed or g.key == "(no stack)" end
  check(not keyed, "no group keyed '(no stack)'", raw)
  local ns = r and r.no_stack or {}
  check(#ns == 1 and ns[1].kind == "heap" and ns[1].base.bytes == 0 and ns[1].new.bytes == 400 and ns[1].new.count == 4
        and ns[1].delta == 400, "JSON: no_stack, 0 B -> 400 B in 4 allocations", raw)
  local out = run("diff " .. q(B) .. " " .. q(N2))
  check(out:find("stacks: 0 new, 0 grew, 1 shrank, 0 vanished, 0 unchanged\n", 1, true)
        and out:find("  without a stack: heap 0 B -> 400 B, 0 -> 4 allocations (no stack walk matched)\n", 1, true)
        and not out:find("            (no stack)", 1, true), "the text: a line of its own", out)
  local md = run("diff " .. q(B) .. " " .. q(N2) .. " -- --markdown -")
  check(md:find("**Against the baseline**: 1 stack changed\n\nWithout a stack (no stack walk matched): heap 0 B → 400 B, "
                .. "0 → 4 allocations\n\n| change |", 1, true)
        and not md:find("(no stack)`", 1, true), "Markdown: one stack changed, the stackless ones apart", md)
  local page = tmp .. "/ns.html"
  run("diff " .. q(B) .. " " .. q(N2) .. " -- --html " .. q(page))
  local html = slurp(page) or ""
  check(html:find("Without a stack (no stack walk matched): heap 0 B → 400 B, 0 → 4 allocations", 1, true),
        "the page: under Against the baseline", #html)
  -- from a JSON baseline the other way: NEW's stackless leaks gone
  local b = tmp .. "/ns.json"
  run("leaks " .. q(N2) .. " -- --json " .. q(b))
  r, code, raw = report("diff " .. q(B) .. " -- --baseline " .. q(b))
  ns = r and r.no_stack or {}
  check(code == 0 and r.counts.stack.vanished == 0 and r.counts.stack.grew == 1 and #ns == 1 and ns[1].base.count == 4
        and ns[1].new.count == 0, "a JSON baseline's stackless group: apart too", raw)
  r = report("diff " .. M .. " " .. FIXED .. " --")
  check(r and r.no_stack == nil, "traces whose leaks all have stacks: no no_stack")
end)

T.test("diff: a new leak, the old one matched across the rebuild", function()
  local r, code, raw = report("diff " .. M .. " " .. NEW .. " -- --all")
  check(r and code == 0, "diff exits 0", raw)
  local c = changed(r, "stack")
  eq(#c, 1, "exactly one stack changed")
  local g = c[1] or {}
  check(g.status == "new" and g.kind == "heap" and g.new.count == 72 and g.new.bytes == 72 * 96 and g.base.count == 0,
        "the new leak: 72 x 96 B", raw)
  check((g.headline or ""):find("CacheRecord", 1, true), "named CacheRecord", g.headline)
  local old
  for _, x in ipairs(r.groups) do if x.by == "stack" and x.key:find("InnerLoopOperation", 1, true) then old = x end end
  check(old and old.status == "unchanged" and old.base.count == 319 and old.new.count == 319,
        "the old leak (other offsets and base address) is the same group", old and old.status)
  local p
  for _, x in ipairs(changed(r, "process")) do p = x end
  check(p and p.status == "grew" and p.delta == 6912 and p.headline == "MemoryTestApp.exe", "the process grew by 6912 B")
  local txt = run("diff " .. M .. " " .. NEW)
  check(txt:find("stacks: 1 new, 0 grew, 0 shrank, 0 vanished, 3 unchanged", 1, true)
        and txt:find("MemoryTestApp.exe!CacheRecord+0x3c", 1, true), "diff text", txt)
  for line in txt:gmatch("[^\n]+") do
    if #line > 100 or line:find("%s$") then check(false, "diff text fits 100 columns, no trailing blanks", line) break end
  end
end)

T.test("diff --by: only the groupings asked for", function()
  local r, code, raw = report("diff " .. M .. " " .. NEW .. " -- --by process --all")
  check(r and code == 0 and r.counts.process and not r.counts.stack and not r.counts.tag, "diff --by process: its counts alone", raw)
  local only = r and #r.groups > 0
  for _, g in ipairs(r and r.groups or {}) do only = only and g.by == "process" end
  check(only, "diff --by process: its groups alone", raw)
end)

T.test("diff without symbols: module and RVA match the same build, not a rebuild", function()
  for _, n in ipairs({ "a", "b", "c" }) do
    local src = n == "c" and FIXED or M
    local f = assert(io.open(tmp .. "/" .. n .. ".etl", "wb"))
    f:write(slurp(src))
    f:close()
  end
  local r = report("diff " .. q(tmp .. "/a.etl") .. " " .. q(tmp .. "/b.etl") .. " --")
  check(r and r.counts.stack.unchanged == 3 and #r.groups == 0, "two copies of one build: every stack matches")
  r = report("diff " .. q(tmp .. "/a.etl") .. " " .. q(tmp .. "/c.etl") .. " --")
  check(r and r.counts.stack.unchanged == 0 and r.counts.stack.vanished == 3 and r.counts.stack.new == 2,
        "a rebuild without symbols matches nothing (the reason to give each trace its map)")
end)

T.test("diff: a stored JSON baseline gives the same answer", function()
  local _, code = run("leaks " .. M .. " -- --json " .. q(base_json))
  eq(code, 0, "leaks --json writes the baseline")
  local b = json.read(base_json)
  check(type(b.groups) == "table" and #b.groups == 5, "leaks --json has its groups (heap: 1 stack, 1 process; virtual: 2 stacks, 1 process)", #(b.groups or {}))
  for _, case in ipairs({ { FIXED, "vanished", 319 }, { NEW, "new", 72 } }) do
    local r, c2, raw = report("diff " .. case[1] .. " -- --baseline " .. q(base_json))
    check(r and c2 == 0, "diff --baseline JSON exits 0", raw)
    local c = r and changed(r, "stack") or {}
    check(#c == 1 and c[1].status == case[2] and (c[1].base.count + c[1].new.count) == case[3],
          "JSON baseline: " .. case[2], raw)
  end
  local rk = report("diff " .. NEW .. " -- --kind heap --all --baseline " .. q(base_json))
  local kinds = {}
  for _, g in ipairs(rk and rk.groups or {}) do kinds[g.kind] = true end
  check(rk and kinds.heap and not kinds.virtual, "--kind heap leaves the JSON baseline's other kinds out")
  local out, c3 = run("diff " .. NEW .. " -- --window 0,5 --baseline " .. q(base_json))
  check(c3 == 2 and out:find("need a trace as the baseline", 1, true), "--window with a JSON baseline exits 2", out)
  out, c3 = run("diff " .. M .. " " .. NEW .. " -- --baseline " .. q(base_json))
  check(c3 == 2 and out:find("give one trace", 1, true), "--baseline with two traces exits 2", out)
  out, c3 = run("diff " .. M)
  check(c3 == 2 and out:find("give two traces", 1, true), "one trace and no baseline exits 2", out)
end)

T.test("bad baselines", function()
  local cases = {
    { tmp .. "/missing.json", "cannot open the baseline" },
    { tmp .. "/nogroups.json", "has \"groups\"", '{"kinds": []}' },
    { tmp .. "/broken.json", "not valid JSON", '{"groups": [' },
    { tmp .. "/badgroup.json", "groups[1]: expected kind, by, key, count and bytes", '{"groups": [{"kind": "heap"}]}' },
    -- a negative figure, or two near 2^63 whose sum wraps below 0 (a group read as grown)
    { tmp .. "/negative.json", "groups[1]: expected a count and bytes from 0 to 2^53, found -5 and -100",
      '{"groups": [{"kind": "heap", "by": "stack", "key": "a", "count": -5, "bytes": -100}]}' },
    { tmp .. "/huge.json", "groups[2]: expected a count and bytes from 0 to 2^53",
      '{"groups": [{"kind": "heap", "by": "stack", "key": "a", "count": 1, "bytes": 1}, '
      .. '{"kind": "heap", "by": "stack", "key": "a", "count": 1, "bytes": 9223372036854775807}]}' },
    { tmp .. "/notatrace.etl", "not an ETL file", "this is not a trace at all, but long enough to look at ........" },
  }
  for _, c in ipairs(cases) do
    if c[3] then local f = assert(io.open(c[1], "wb")); f:write(c[3]); f:close() end
    local out, code = run("diff " .. M .. " -- --baseline " .. q(c[1]))
    check(code == 2 and out:find(c[2], 1, true) and out:find(c[1], 1, true), "diff: " .. c[2] .. " (exit 2, names the file)", out)
    out, code = run("policy " .. M .. " -- --baseline " .. q(c[1]))
    check(code == 2 and out:find(c[2], 1, true), "policy: " .. c[2] .. " (exit 2)", out)
  end
end)

T.test("a trace baseline's figures: summed from its kinds' as grouped from its records", function()
  -- a trace baseline (loaded, or the run itself: baseline.of_trace) answers
  -- a selection by kind by summing the figures of each kind, made once
  -- (a loaded one's while collecting its groups); with a window or
  -- another filter it groups its records again
  for _, path in ipairs({ NEW, "examples/notmyfault.etl" }) do
    local loaded = assert(baseline.load(path))
    local tr = loaded.trace
    local run = baseline.of_trace(tr, true)
    check(loaded.kinds[(path == NEW and "heap" or "pool") .. "\0stack"] ~= nil,
          path .. ": collecting the groups made the figures of a kind")
    for _, b in ipairs({ loaded, run }) do
      local n = 0
      for _, sel in ipairs({ {}, { kind = "heap" }, { kind = { "heap", "virtual" } }, { kind = "pool" } }) do
        for _, per in ipairs({ "stack", "tag", "process", false }) do
          local got = b:figures(sel, per or nil)
          local want = baseline.figures(tr:allocations(sel), per or nil, true)
          local same = true
          for k, e in pairs(want) do
            local g = got[k]
            same = same and g ~= nil and g.count == e.count and g.bytes == e.bytes and g.impacting == e.impacting
            -- the run's stacks are named as the grouped ones are; a loaded baseline's are not named
            if per == "stack" then same = same and g.headline == (b == run and e.headline or nil) end
            if per == "process" then same = same and g.headline == e.headline end
          end
          for k in pairs(got) do same = same and want[k] ~= nil end
          n = n + (same and 1 or 0)
          if not same then
            check(false, path .. (b == run and " (the run)" or "") .. ": figures of " .. tostring(sel.kind)
                  .. " per " .. tostring(per))
          end
        end
      end
      eq(n, 16, path .. (b == run and " (the run)" or "") .. ": 16 selections and groupings, each the same either way")
      check(b.kinds["heap\0stack"] ~= nil and b.kinds["pool\0tag"] ~= nil and b.kinds["virtual\0process"] ~= nil,
            path .. ": each kind's figures kept, to be summed again")
    end
    local b = loaded
    if path == NEW then
      -- one kind selected (or only one with groups): a loaded baseline's
      -- plain copy of its figures, made once for every rule that asks
      local h1 = b:figures({ kind = "heap" }, "stack")
      check(rawequal(h1, b:figures({ kind = { "heap", "pool" } }, "stack")) and next(h1) ~= nil,
            "a loaded baseline: one copy of a kind's figures for every rule")
      local _, e = next(h1)
      check(getmetatable(e) == nil and e.headline == nil, "a plain copy: no stack named later, under another map")
    end
    -- a stack whose heap and virtual records cancel out kept nothing over
    -- both kinds: left out of their sum, as grouping both kinds leaves it
    local fake = setmetatable({ trace = tr, kinds = {
      ["heap\0stack"] = { s = { count = 0, bytes = 0, impacting = -4096 } },
      ["virtual\0stack"] = { s = { count = 0, bytes = 0, impacting = 4096 } }, ["pool\0stack"] = {} } },
      { __index = baseline.Baseline })
    check(fake:figures({}, "stack").s == nil and fake:figures({ kind = "heap" }, "stack").s.impacting == -4096,
          "kinds that cancel out leave the group out of their sum")
    local w = b:figures({ kind = "heap" }, "stack", { 0, 1 })
    local want = baseline.figures(tr:allocations{ kind = "heap" }, "stack", false, { 0, 1 })
    local wn, gn = 0, 0
    for _ in pairs(want) do wn = wn + 1 end
    for _ in pairs(w) do gn = gn + 1 end
    eq(gn, wn, path .. ": a window groups the records again")
  end
end)

T.test("policy --baseline", function()
  local rules = tmp .. "/base-rules.lua"
  local f = assert(io.open(rules, "w"))
  f:write([[
return {
  { name = "no-new-leak", select = { kind = "heap" }, per = "stack", no_new_leaks = true },
  { name = "growth-10", per = "stack", max_leaked_growth = 0.10 },
  { name = "process-growth", select = { kind = "heap" }, per = "process", max_leaked_growth = 0.6 },
}
]])
  f:close()
  for _, b in ipairs({ M, base_json }) do
    local r, code, raw = report("policy " .. FIXED .. " -- --rules " .. q(rules) .. " --baseline " .. q(b))
    check(r and code == 0 and r.failed == 0, "the fixed build passes against " .. b, raw)
    r, code, raw = report("policy " .. NEW .. " -- --rules " .. q(rules) .. " --baseline " .. q(b))
    check(r and code == 1 and r.failed == 2, "the new leak fails two rules against " .. b, raw)
    if r then
      check(not r.results[1].ok and r.results[1].violations[1].group:find("CacheRecord", 1, true)
            and r.results[1].violations[1].value == 6912, "no-new-leak names CacheRecord", raw)
      check(not r.results[2].ok and #r.results[2].violations == 1, "growth-10: one stack over", raw)
      check(r.results[3].ok, "process-growth: 12760 -> 19672 B is within +60%", raw)
    end
  end
  local out, code = run("policy " .. M .. " -- --rules " .. q(rules))
  check(code == 0 and select(2, out:gsub("SKIP ", "")) == 3 and out:find("3 skipped (no --baseline)", 1, true),
        "without --baseline the rules are skipped", out)
  f = assert(io.open(rules, "w"))
  f:write('return { { name = "x", select = { kind = "heap", process = "MemoryTestApp.exe" }, per = "stack", no_new_leaks = true } }\n')
  f:close()
  out, code = run("policy " .. NEW .. " -- --rules " .. q(rules) .. " --baseline " .. q(base_json))
  check(code == 2 and out:find("needs a trace as the baseline", 1, true), "a JSON baseline cannot select by process", out)
  out, code = run("policy " .. NEW .. " -- --rules " .. q(rules) .. " --baseline " .. M)
  check(code == 1, "a trace baseline can", out)
  f = assert(io.open(rules, "w"))
  f:write('return { { name = "x", per = "heap", no_new_leaks = true } }\n')
  f:close()
  out, code = run("policy " .. NEW .. " -- --rules " .. q(rules) .. " --baseline " .. M)
  check(code == 2 and out:find("per stack, tag or process", 1, true), "per heap cannot be compared", out)
end)

-- the folded file adds up to what the report says
local function folded_total(path)
  local total, lines, bad = 0, 0, nil
  for line in (slurp(path) or ""):gmatch("[^\n]+") do
    local n = line:match(" (%d+)$")
    if not (n and not line:find("^;") and line:find(";", 1, true)) then bad = bad or line end
    total, lines = total + tonumber(n or 0), lines + 1
  end
  check(bad == nil, path .. ": every line is frames;...;frames BYTES", bad)
  return total, lines
end

T.test("folded totals equal the reports", function()
  for _, tr in ipairs({ M, "examples/notmyfault.etl", NEW }) do
    local fp = tmp .. "/l.folded"
    local r = report("leaks " .. tr .. " -- --folded " .. q(fp))
    local want = 0
    for _, k in ipairs(r and r.kinds or {}) do want = want + k.leaked_bytes end
    local got, n = folded_total(fp)
    check(want > 0 and got == want, ("leaks %s: folded total %d = leaked bytes %d"):format(tr, got, want))
    check(n == (tr == M and 3 or tr == NEW and 4 or 1), "leaks " .. tr .. ": one line per stack", n)
  end
  local fp = tmp .. "/t.folded"
  local r = report("transient " .. M .. " -- --folded " .. q(fp))
  local got = folded_total(fp)
  check(r and got == r.kinds[1].bytes and got == 100 * 2^20, "transient: folded total = the spikes' bytes", got)
end)

T.test("a folded line's frames: split as far as asked, or whole", function()
  package.path = "scripts/?.lua;" .. package.path
  local F = require "report_formats"
  local r = { trace = assert(heapscript.open(M)) }
  local lines = F.stacks(r)
  check(#lines == 3, "three leaking stacks", #lines)
  local l = lines[1]
  local whole = {}
  for f in l.text:gmatch("[^;]+") do whole[#whole + 1] = f end
  eq(F.line_frame(l, 1), "heap", "frame 1: the kind")
  eq(F.line_frame(l, 3), whole[3], "frame 3")
  eq(F.line_frame(l, 2), whole[2], "frame 2, after 3")
  eq(F.line_frame(l, #whole + 1), nil, "past the last: nil")
  eq(#l.frames, #whole, "l.frames: every frame")
  eq(table.concat(l.frames, ";"), l.text, "and they make the text")
  eq(F.line_frame(lines[2], 2), lines[2].frames[2], "the same either way")
end)

-- What A:folded(prefix) gives, made in Lua from each record's Stack as
-- report_formats did before it was made in C: bytes by (stack, process),
-- named by s:flame(), equal texts one line, sorted bytewise.
local function folded_ref(A, prefix)
  local per, by, texts = {}, {}, {}
  for a in A:each() do
    local sz = a.size
    if sz and sz > 0 then
      local st = a.stack or false
      per[st] = (per[st] or 0) + sz
    end
  end
  for st, bytes in pairs(per) do
    local f = st and st:flame() or ""
    local text = prefix .. ";" .. (f ~= "" and f or "(no stack)")
    if not by[text] then texts[#texts + 1] = text end
    by[text] = (by[text] or 0) + bytes
  end
  heapscript.sort(texts)
  local bytes = {}
  for i, t in ipairs(texts) do bytes[i] = by[t] end
  return texts, bytes
end

local function same_lists(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

T.test("A:folded: bytes by stack, named, merged and sorted in C", function()
  local path = tmp .. "/folded.etl"
  local w = assert(heapscript.writer(path))
  local base = 0x7ff700000000
  for i, pid in ipairs({ 1000, 2000, 3000 }) do
    w:process{op = "dcstart", pid = pid, ts = 20 * i, name = pid == 3000 and "other.exe" or "app.exe"}
    w:image{op = "dcstart", pid = pid, base = base, size = 0x100000, ts = 20 * i + 10,
            path = pid == 3000 and "\\Device\\HarddiskVolume3\\app\\other.dll" or "\\Device\\HarddiskVolume3\\app\\app.exe"}
  end
  local deep = {}
  for i = 1, 1200 do deep[i] = base + 0x10000 + i * 0x101 end  -- 1,200 frames: over 16 KB of text
  local ts = 100
  local function alloc(pid, addr, size, stack)
    ts = ts + 10
    w:heap{op = "alloc", pid = pid, tid = pid + 4, ts = ts, heap = 0x5000, addr = addr, size = size, stack = stack}
  end
  alloc(1000, 0x20000, 100, { base + 0x1234, base + 0x2000 })
  alloc(1000, 0x20100, 200, { base + 0x1234, base + 0x2000 })    -- the same stack
  alloc(1000, 0x20200, 40, { base + 0x1234, base + 0x3000 })
  alloc(1000, 0x20300, 0, { base + 0x9999 })                      -- zero bytes: left out
  alloc(1000, 0x20400, 8)                                         -- no stack
  alloc(1000, 0x20500, 1, deep)
  alloc(2000, 0x20000, 7, { base + 0x1234, base + 0x2000 })      -- another process, the same text
  alloc(3000, 0x20000, 5, { base + 0x1234, base + 0x2000 })      -- the same addresses in another image: its own text
  ts = ts + 10
  w:heap{op = "free", pid = 1000, tid = 1004, ts = ts, heap = 0x5000, addr = 0x90000}   -- size unknown: left out
  assert(w:close())
  local t <close> = assert(heapscript.open(path))
  local A = t:allocations{kind = "heap"}
  local texts, bytes = A:folded("heap")
  local dtext
  for a in A:each() do if a.size == 1 then dtext = "heap;" .. a.stack:flame() end end
  check(#dtext > 16384, "the deep stack's text is longer than the first room made for it", #dtext)
  local want = { "heap;(no stack)", "heap;app.exe+0x2000;app.exe+0x1234", "heap;app.exe+0x3000;app.exe+0x1234", dtext,
                 "heap;other.dll+0x2000;other.dll+0x1234" }
  heapscript.sort(want)
  local wb = {}
  for i, x in ipairs(want) do
    wb[i] = x == "heap;(no stack)" and 8 or x:find("other.dll", 1, true) and 5 or x:find("0x2000;", 1, true) and 307
            or x:find("0x3000", 1, true) and 40 or 1
  end
  check(same_lists(texts, want), "one line per text: the two processes' equal stacks merged, the third's own, no zero or unknown size",
        table.concat(texts, "\n"):sub(1, 400))
  check(same_lists(bytes, wb), "their bytes: 100 + 200 + 7, 40, 8, 1, 5", table.concat(bytes, ","))
  check(require("report").NO_STACK == "(no stack)" and baseline.NO_STACK == "(no stack)",
        "the text for no stack is one: the C side's folded lines, report's and the baselines' keys")
  local rt, rb = folded_ref(A, "heap")
  check(same_lists(texts, rt) and same_lists(bytes, rb), "the same as made in Lua from each record's Stack")
  local e1, e2 = t:allocations{kind = "pool"}:folded("pool")
  eq(#e1 + #e2, 0, "an empty selection: two empty lists")
  local x = A:folded("x;y")
  eq(x[1]:sub(1, 4), "x;y;", "the prefix is written as given")
  t:close()
  -- more stacks than the first room for lines
  w = assert(heapscript.writer(path))
  w:process{op = "dcstart", pid = 1000, ts = 10, name = "app.exe"}
  w:image{op = "dcstart", pid = 1000, base = base, size = 0x100000, ts = 20, path = "\\Device\\HarddiskVolume3\\app\\app.exe"}
  for i = 1, 500 do
    w:heap{op = "alloc", pid = 1000, tid = 1004, ts = 100 + 10 * i, heap = 0x5000, addr = 0x100000 + 16 * i, size = i,
           stack = { base + 0x1000 + 4 * (i % 250), base + 0x2000 }}   -- 250 stacks, two records each
  end
  assert(w:close())
  local t2 <close> = assert(heapscript.open(path))
  local B = t2:allocations()
  local bt, bb = B:folded("heap")
  local rt, rb = folded_ref(B, "heap")
  local sum = 0
  for _, v in ipairs(bb) do sum = sum + v end
  check(#bt == 250 and sum == 500 * 501 // 2, "250 lines, every byte", #bt .. " lines, " .. sum)
  check(same_lists(bt, rt) and same_lists(bb, rb), "the same as made in Lua")
  t2:close()
  -- one stack in 700 processes, each with its own module at those addresses:
  -- 700 lines of one stack id (the table of (stack, process) lines grows),
  -- each process's records under its own text
  w = assert(heapscript.writer(path))
  for p = 1, 700 do
    local pid = 1000 + 4 * p
    w:process{op = "dcstart", pid = pid, ts = 10 + p, name = "app.exe"}
    w:image{op = "dcstart", pid = pid, base = base, size = 0x100000, ts = 10 + p,
            path = ("\\Device\\HarddiskVolume3\\app\\m%d.dll"):format(p)}
  end
  for p = 1, 700 do
    local pid = 1000 + 4 * p
    for k = 0, 1 do
      w:heap{op = "alloc", pid = pid, tid = pid + 1, ts = 10000 + 10 * (2 * p + k), heap = 0x5000,
             addr = 0x100000 + 16 * (2 * p + k), size = p, stack = { base + 0x1000, base + 0x2000 }}
    end
  end
  assert(w:close())
  local t3 <close> = assert(heapscript.open(path))
  local P = t3:allocations()
  local pt, pb = P:folded("heap")
  local ok = #pt == 700
  for i, text in ipairs(pt) do
    local p = tonumber(text:match("^heap;m(%d+)%.dll%+0x2000;m%d+%.dll%+0x1000$"))
    ok = ok and p ~= nil and pb[i] == 2 * p
  end
  check(ok, "700 processes' lines of one stack id, each its own text and bytes", #pt .. " lines")
  rt, rb = folded_ref(P, "heap")
  check(same_lists(pt, rt) and same_lists(pb, rb), "the same as made in Lua")
  t3:close()
  os.remove(path)
end)

T.test("A:folded on the examples and corpus traces: as made in Lua", function()
  local traces = { M, FIXED, NEW, "examples/notmyfault.etl" }
  local C = os.getenv("HEAPSCRIPT_CORPUS") or "../shared/traces"
  for _, name in ipairs({ "Siemens-Healthineers_ETWAnalyzer__TraceLoggingTester.etl" }) do
    local f = io.open(C .. "/" .. name, "rb")
    if f then f:close(); traces[#traces + 1] = C .. "/" .. name end
  end
  local n = 0
  for _, tr in ipairs(traces) do
    local t <close> = assert(heapscript.open(tr))
    for _, sel in ipairs({ {}, { class = "AIFO" }, { kind = "virtual" }, { kind = "pool" } }) do
      local A = t:allocations(sel)
      local texts, bytes = A:folded("k")
      local rt, rb = folded_ref(A, "k")
      n = n + #texts
      check(same_lists(texts, rt) and same_lists(bytes, rb), tr .. ": A:folded = the Lua lines", #texts .. " / " .. #rt)
    end
  end
  check(n > 20, "lines compared", n)
end)

-- What A:stack_figures gives, made in Lua as baseline.figures did before
-- it was made in C: A:group("stack") kept where it leaked or freed from
-- before, named by s:key(), equal keys summed, the first group's Stack.
local function stack_figures_ref(A, window)
  local out, keys = {}, {}
  for _, g in ipairs(A:group("stack", { window = window, fields = { "AIFO", "impacting" } })) do
    if g.AIFO.count > 0 or g.impacting ~= 0 then
      local k = g.stack and g.stack:key() or "(no stack)"
      local e = out[k]
      if not e then
        e = { count = 0, bytes = 0, impacting = 0, stack = g.stack or false }
        out[k] = e
        keys[#keys + 1] = k
      end
      e.count, e.bytes, e.impacting = e.count + g.AIFO.count, e.bytes + g.AIFO.bytes, e.impacting + g.impacting
    end
  end
  heapscript.sort(keys)
  return keys, out
end

-- A:stack_figures(window, stacks) against the Lua groups: "" when the same.
local function stack_figures_differ(A, window)
  local keys, entries, stacks = A:stack_figures(window, true)
  local k2, e2 = A:stack_figures(window)
  local rk, ref = stack_figures_ref(A, window)
  if not same_lists(keys, rk) then return ("keys: %d against %d"):format(#keys, #rk) end
  if not same_lists(k2, rk) or #e2 ~= #entries then return "keys without stacks" end
  for i, k in ipairs(keys) do
    local e, r = entries[i], ref[k]
    if e.count ~= r.count or e.bytes ~= r.bytes or e.impacting ~= r.impacting
        or e2[i].count ~= r.count or e2[i].bytes ~= r.bytes or e2[i].impacting ~= r.impacting then
      return ("%s: %d %d %d against %d %d %d"):format(k, e.count, e.bytes, e.impacting, r.count, r.bytes, r.impacting)
    end
    if not rawequal(stacks[i], r.stack) then return k .. ": another Stack" end
    local n = 0
    for _ in pairs(e) do n = n + 1 end
    if n ~= 3 then return k .. ": fields other than count, bytes and impacting" end
  end
  return ""
end

T.test("A:stack_figures: baseline's figures per stack in C, as grouped and keyed in Lua", function()
  local path = tmp .. "/sfig.etl"
  local w = assert(heapscript.writer(path))
  local base = 0x7ff700000000
  w:process{op = "dcstart", pid = 1000, ts = 10, name = "app.exe"}
  w:image{op = "dcstart", pid = 1000, base = base, size = 0x100000, ts = 20, path = "\\Device\\HarddiskVolume3\\app\\app.exe"}
  local deep = {}
  for i = 1, 1200 do deep[i] = base + 0x10000 + i * 0x101 end  -- a key of over 16 KB
  local ts = 100
  local function op(o, addr, size, stack)
    ts = ts + 10
    w:heap{op = o, pid = 1000, tid = 1004, ts = ts, heap = 0x5000, addr = addr, size = size, stack = stack}
  end
  op("free", 0x90000)                                   -- allocated before the trace: impacting < 0, nothing kept
  op("alloc", 0x30000, 64, { base + 0x5000 })           -- freed at the end: in a window after it, AOFI alone
  op("alloc", 0x20000, 100, { base + 0x1234, base + 0x2000 })
  op("alloc", 0x20300, 8)                               -- no stack
  op("alloc", 0x20400, 1, deep)
  op("alloc", 0x20600, 3, { 0x2222 })                   -- one frame in no image: the key "?"
  op("alloc", 0x20500, 50, { base + 0x3000 })
  op("free", 0x20500)                                   -- freed: kept nothing, left out
  for i = 1, 3000 do                                    -- many stacks: more than the Lua stack's room
    if i % 150 == 0 then                                -- among them, an address in no image: "?", twenty
      op("alloc", 0x100000 + 16 * i, i, { 0x1111 + 0x10 * i, base + 0x2000 })   -- stacks of one key
    else
      op("alloc", 0x100000 + 16 * i, i, { base + 0x4000 + 4 * i, base + 0x2000 })
    end
  end
  op("free", 0x30000)
  assert(w:close())
  local t <close> = assert(heapscript.open(path))
  local A = t:allocations{kind = "heap"}
  -- in a coroutine's small Lua stack, the trace's cache of Stacks made
  -- but these stacks not in it: naming them leaves the Lua stack as it was
  -- (a slot left behind per stack overran it)
  A:group("stack", { top = 1 })
  eq(coroutine.wrap(function() return #A:stack_figures() end)(), 2985, "in a coroutine, before their Stacks are made")
  local keys, entries, stacks = A:stack_figures(nil, true)
  local at = {}
  for i, k in ipairs(keys) do at[k] = i end
  local q2 = at["app.exe+0x2000;?"]
  check(q2 and entries[q2].count == 20 and entries[q2].bytes == 150 * 210, "twenty stacks of one key: one entry, summed")
  check(at["?"] and entries[at["?"]].bytes == 3 and at["(empty stack)"] == nil, "one frame in no image: the key '?', one character")
  local ns = at["(no stack)"]
  check(ns and entries[ns].bytes == 8 and stacks[ns] == false, "records without a stack: '(no stack)', no Stack")
  local dk
  for k in pairs(at) do if #k > 16384 then dk = k end end
  check(dk ~= nil and entries[at[dk]].bytes == 1, "the deep stack's key, longer than the first room for it")
  check(at["app.exe+0x3000"] == nil, "a stack that kept nothing is left out")
  eq(#keys, 2980 + 4 + 1, "2,980 stacks, the one of a frame in no image, the first one, the merged one, the deep one, no stack (the free of a block from before too)")
  eq(stack_figures_differ(A), "", "the same as grouped and keyed in Lua")
  eq(stack_figures_differ(A, { 0, 0.0000120 }), "", "and in a window")
  -- a window after 0x30000 was allocated, to its free: that stack kept
  -- nothing there but freed 64 bytes from before (impacting -64)
  local after
  for a in A:each() do if a.address == 0x20000 then after = a.alloc_time end end
  local wk, we = A:stack_figures({ after, select(2, t:allocations():window()) })
  local i5
  for i, k in ipairs(wk) do if k == "app.exe+0x5000" then i5 = i end end
  check(i5 and we[i5].count == 0 and we[i5].bytes == 0 and we[i5].impacting == -64,
        "a stack that only freed what was allocated before the window: kept, impacting -64")
  eq(stack_figures_differ(A, { after, select(2, t:allocations():window()) }), "", "and in that window as in Lua")
  local k0, e0 = t:allocations{kind = "pool"}:stack_figures()
  eq(#k0 + #e0, 0, "an empty selection: empty lists")
  t:close()
  os.remove(path)
  -- the examples and Siemens' trace, whole and in a window
  local traces = { M, FIXED, NEW, "examples/notmyfault.etl" }
  local C = os.getenv("HEAPSCRIPT_CORPUS") or "../shared/traces"
  local f = io.open(C .. "/Siemens-Healthineers_ETWAnalyzer__TraceLoggingTester.etl", "rb")
  if f then f:close(); traces[#traces + 1] = C .. "/Siemens-Healthineers_ETWAnalyzer__TraceLoggingTester.etl" end
  local n = 0
  for _, tr in ipairs(traces) do
    local t2 <close> = assert(heapscript.open(tr))
    for _, kind in ipairs({ "heap", "virtual", "pool" }) do
      local B = t2:allocations{ kind = kind }
      local w1, w2 = t2:allocations():window()
      for _, win in ipairs({ false, { w1, (w1 + w2) / 2 } }) do
        eq(stack_figures_differ(B, win or nil), "", ("%s %s%s: as in Lua"):format(tr, kind, win and " (a window)" or ""))
        n = n + #B:stack_figures(win or nil)
      end
    end
  end
  check(n > 20, "keys compared", n)
end)

T.test("baseline.sorted_keys: the figures' keys sorted once, or in the order they came", function()
  local fig = { b = 1, a = 2, ["a;b"] = 3, ["B"] = 4 }
  local k = baseline.sorted_keys(fig)
  check(same_lists(k, { "B", "a", "a;b", "b" }), "bytewise", table.concat(k, ","))
  check(rawequal(baseline.sorted_keys(fig), k), "kept for the next rule")
  local t <close> = assert(heapscript.open(NEW))
  local A = t:allocations{ kind = "heap" }
  local f2 = baseline.figures(A, "stack")
  local n = 0
  for _ in pairs(f2) do n = n + 1 end
  check(n > 1 and same_lists(baseline.sorted_keys(f2), (A:stack_figures())), "per stack: the order A:stack_figures gave")
end)

T.test("report files: a kind's lines from two selections are merged and sorted again", function()
  package.path = "scripts/?.lua;" .. package.path
  local F = require "report_formats"
  local t <close> = assert(heapscript.open(M))
  local H = t:allocations{kind = "heap"}
  local r = { folded = { { kind = "virtual", allocs = t:allocations{kind = "virtual"} },
                         { kind = "heap", allocs = H:filter{ class = "AIFO" } },
                         { kind = "heap", allocs = H } } }
  local texts, by = {}, {}
  for _, sel in ipairs(r.folded) do
    local tx, b = folded_ref(sel.allocs, sel.kind)
    for i, x in ipairs(tx) do
      if not by[x] then texts[#texts + 1] = x end
      by[x] = (by[x] or 0) + b[i]
    end
  end
  heapscript.sort(texts)
  local lines = F.stacks(r)
  local got, gb, wb = {}, {}, {}
  for i, l in ipairs(lines) do got[i] = l.text; gb[i] = l.bytes end
  for i, x in ipairs(texts) do wb[i] = by[x] end
  check(#texts >= 5 and same_lists(got, texts), "every text once, in order", #got .. " / " .. #texts)
  check(same_lists(gb, wb), "each with the bytes of both selections")
end)

T.test("events the recording lost are said in the text, the JSON and the report files", function()
  local path = tmp .. "/lost.etl"
  local w = assert(heapscript.writer(path, { events_lost = 7, buffers_lost = 1 }))
  w:process{op = "dcstart", pid = 1000, ts = 10, name = "app.exe"}
  w:heap{op = "alloc", pid = 1000, tid = 1004, ts = 100, heap = 0x5000, addr = 0x20000, size = 40}
  assert(w:close())
  local out, code = run("leaks " .. q(path))
  check(code == 0 and out:find("note: the recording lost 7 events and 1 buffer (its header says): a block whose free "
                               .. "was lost shows as outstanding", 1, true), "leaks: a note, exit 0", out)
  local r = report("leaks " .. q(path))
  local l = r and r.lost or {}
  check(l.events == 7 and l.buffers == 1 and l.flagged_buffers == 0, "JSON: lost", r and r.lost)
  local md = run("leaks " .. q(path) .. " --markdown -")
  check(md:find("> **Lost events**: the recording lost 7 events", 1, true), "Markdown: a caveat", md)
  local ju = run("policy " .. q(path) .. " --junit -")
  check(ju:find('<testcase classname="heapscript" name="lost events">', 1, true) and ju:find('failures="0"', 1, true),
        "JUnit: a case of its own, not a failure", ju)
  out = run("leaks " .. M)
  r = report("leaks " .. M)
  check(not out:find("lost", 1, true) and r and r.lost == nil, "a trace that lost nothing: nothing said")
  -- buffers flagged as having lost events (BufferFlag 0x2, 0x4), the
  -- header's counts zero: what the reader counts is what the report says
  w = assert(heapscript.writer(path, { cpus = 2, buffer_flags = 0x2 }))
  w:process{op = "dcstart", pid = 1000, ts = 10, name = "app.exe"}
  w:heap{op = "alloc", pid = 1000, tid = 1004, ts = 100, heap = 0x5000, addr = 0x20000, size = 40, cpu = 0}
  w:heap{op = "alloc", pid = 1000, tid = 1008, ts = 110, heap = 0x5000, addr = 0x20100, size = 40, cpu = 1}
  assert(w:close())
  local t <close> = assert(heapscript.open(path))
  local flagged = t:stats(1).buffers_lost_flag
  t:close()
  eq(flagged, 2, "the reader counts each CPU's flagged buffer")
  out, code = run("leaks " .. q(path))
  check(code == 0 and out:find("note: the recording lost events: 2 buffers marked as having lost events: a block "
                               .. "whose free was lost shows as outstanding", 1, true), "leaks: the flagged buffers, exit 0", out)
  r = report("leaks " .. q(path))
  l = r and r.lost or {}
  check(l.events == 0 and l.buffers == 0 and l.flagged_buffers == 2, "JSON: lost.flagged_buffers", r and r.lost)
  out = run("info " .. q(path))
  check(out:find("0 damaged, 2 flagged lost", 1, true), "info counts them", out)
  local fine, msg = pcall(heapscript.writer, path, { buffer_flags = 0x40 })
  check(not fine and tostring(msg):find("only 0x2, 0x4, 0x8 and 0x10", 1, true), "a flag the writer sets itself: an error", msg)
end)

T.test("report files escape what they quote; JUnit counts errors, not warnings", function()
  local F = require "report_formats"
  local csv = F.csv({ { type = "AIFO", process = 'a "b", c', frames = { "x" }, count = 1, bytes = 2, what = "leak" } })
  check(csv:find('\r\nAIFO,"a ""b"", c",x,1,2,,,leak\r\n', 1, true), "CSV: a field with a quote and a comma, RFC 4180", csv)
  local md = F.markdown({ title = "t", findings = { { what = "leak", kind = "heap", process = "p|q", headline = "f", count = 1, bytes = 2 } } })
  check(md:find("| p\\|q |", 1, true), "Markdown: a | in a cell is escaped", md)
  local v = {}
  for i = 1, 25 do v[i] = { group = "g" .. i, limit = "max_leaked_bytes", value = i, max = 0 } end
  local xml = F.junit({ title = "t", rules = {
    { name = "e", severity = "error", ok = false, message = "broken", violations = v },
    { name = "w", severity = "warning", ok = false, message = "soft" },
    { name = "s", severity = "error", ok = true, skipped = true, message = "needs --baseline FILE" },
    { name = "p", severity = "error", ok = true } } })
  check(xml:find('<testsuites name="heapscript policy" tests="4" failures="1" errors="0" skipped="1">', 1, true),
        "JUnit: a broken warning is no failure", xml)
  check(xml:find("<system-out>WARNING: soft</system-out>", 1, true), "JUnit: the warning's message in system-out", xml)
  check(xml:find("g20: max_leaked_bytes = 20, limit 0\n... 5 more</failure>", 1, true) and not xml:find("g21:", 1, true),
        "JUnit: 20 violations listed, then how many more", xml)
end)

T.test("CSV: one row per finding, the WPA columns", function()
  local cp = tmp .. "/l.csv"
  local r = report("leaks " .. M .. " -- --csv " .. q(cp))
  local rows = {}
  for line in (slurp(cp) or ""):gmatch("([^\r\n]*)\r\n") do rows[#rows + 1] = line end
  eq(rows[1], "Type,Process,Stack,Count,Size,Impacting Size,Kind,Finding", "the header")
  local n = 0
  for _, k in ipairs(r and r.kinds or {}) do n = n + #k.stacks end
  eq(#rows - 1, n, "one row per stack reported")
  check(rows[2] and rows[2]:find("^AIFO,MemoryTestApp.exe %(5812%),ntdll.dll!RtlUserThreadStart%+0x21;.-InnerLoopOperation%+0x1f %[memorytestapp.c:53%];"
        .. ".-,319,12760,12760,heap,leak$"), "the first row", rows[2])
end)

T.test("policy's CSV: a row for each broken limit", function()
  local out, code = run("policy examples/memorytestapp-newleak.etl --baseline " .. M .. " --csv -")
  local rows = {}
  for l in out:gmatch("([^\r\n]+)\r\n") do rows[#rows + 1] = l end
  check(code == 1 and #rows == 4, "policy --csv: the header and 3 rows (3 broken limits)", out)
  check((rows[2] or ""):find("^FAIL,,ntdll%.dll!RtlUserThreadStart.-,319,,,heap,\"heap%-repeated%-leak: ") ~= nil,
        "... the repeated leak: its stack, its count, its kind", rows[2])
  check((rows[3] or ""):find("^FAIL,.-,,6912,,heap,\"no%-new%-leak%-stack: MemoryTestApp%.exe!CacheRecord") ~= nil,
        "... the new leaking stack: its bytes", rows[3])
  -- a limit on a count puts its value in Count, on bytes in Size, whatever the limit's name says
  local rf = tmp .. "/csvlim.lua"
  local f = assert(io.open(rf, "w"))
  f:write([[return { { name = "al", select = { kind = "heap" }, max_allocations = 1 },
                     { name = "lc", select = { kind = "heap" }, max_leaked_count = 1 },
                     { name = "ab", select = { kind = "heap" }, max_allocated_bytes = 1 } }]])
  f:close()
  out, code = run("policy " .. M .. " -- --rules " .. q(rf) .. " --csv -")
  local by = {}
  for l in out:gmatch("([^\r\n]+)\r\n") do
    local name = l:match(',"(%a+): ')
    if name then by[name] = l end
  end
  check(code == 1 and (by.al or ""):find("^FAIL,,,5000,,,heap,") ~= nil, "... max_allocations' value in Count", by.al)
  check((by.lc or ""):find("^FAIL,,,319,,,heap,") ~= nil, "... max_leaked_count's in Count", by.lc)
  check((by.ab or ""):find("^FAIL,,,,%d+,,heap,") ~= nil, "... max_allocated_bytes' in Size", by.ab)
end)

T.test("events' CSV and Markdown carry the text's columns: count, provider, id, opcode, event", function()
  local out, code = run("events " .. M .. " -- --csv -")
  local rows = {}
  for l in out:gmatch("([^\r\n]+)\r\n") do rows[#rows + 1] = l end
  check(code == 0 and rows[1] == "Count,Provider,Id,Opcode,Event", "events --csv: the text's columns", rows[1])
  check(rows[3] == "5000,Heap,0,33,HeapAlloc" and rows[4] == "4681,Heap,0,36,HeapFree" and #rows == 14,
        "events --csv: a row per event with its name, id and opcode (the two Heap rows told apart)", out)
  out, code = run("events " .. M .. " -- --markdown -")
  check(code == 0 and out:find("| count | provider | id | opcode | event |", 1, true)
        and out:find("| 5000 | `Heap` | 0 | 33 | `HeapAlloc` |", 1, true) and not out:find("?", 1, true),
        "events --markdown: the text's columns, no size of '?'", out)
  check(out:find("| … | 3 rows more |", 1, true), "events --markdown: the rows past ten counted", out)
end)

T.test("a report on standard output replaces the text", function()
  local out, code = run("leaks " .. M .. " -- --csv -")
  check(code == 0 and out:sub(1, 11) == "Type,Proces" and not out:find("allocated and not freed", 1, true),
        "leaks --csv -: the CSV alone", out:sub(1, 200))
  out, code = run("events " .. M .. " -- --markdown -")
  check(code == 0 and out:find("^### heapscript events memorytestapp.etl") and not out:find("events, 12 kinds", 1, true),
        "events --markdown -: the Markdown alone", out:sub(1, 200))
  out, code = run("leaks " .. M .. " -- --csv - --folded -")
  check(code == 2 and out:find("--csv and --folded: only one report can go to standard output", 1, true),
        "two reports on standard output: exit 2", out:sub(1, 200))
  out, code = run("leaks " .. M .. " -- --html " .. q(tmp .. "/no/such/dir/x.html"))
  check(code == 2 and out:find("no/such/dir/x.html", 1, true), "an unwritable report file: exit 2, named", out)
end)

T.test("a report never replaces its trace", function()
  local copy, link = tmp .. "/own.etl", tmp .. "/own-link.etl"
  local orig = slurp(M)
  local f = assert(io.open(copy, "wb")); f:write(orig); f:close()
  os.execute("cp examples/memorytestapp.sym " .. q(tmp .. "/own.sym"))
  os.execute("ln -s " .. q(copy) .. " " .. q(link) .. " 2>" .. (package.config:sub(1, 1) == "\\" and "NUL" or "/dev/null"))
  local linked = slurp(link) == orig             -- no ln (Windows): the cases through a link are left out
  for _, case in ipairs{ { "leaks", "--json", copy }, { "leaks", "--html", link }, { "transient", "--folded", copy },
                         { "policy", "--junit", copy }, { "leaks", "--csv", link } } do
    local s, opt, out_path = case[1], case[2], case[3]
    if out_path == link and not linked then goto next end
    local out, code = run(s .. " " .. q(copy) .. " -- " .. opt .. " " .. q(out_path))
    eq(code, 2, s .. " " .. opt .. " onto the trace: exit 2")
    check(out:find(out_path .. ": is the trace " .. copy .. "; a report is written to another file", 1, true),
          s .. " " .. opt .. " onto the trace: says so", out:sub(-300))
    check(slurp(copy) == orig, s .. " " .. opt .. " onto the trace: the trace is unchanged")
    ::next::
  end
  local out, code = run("leaks " .. q(copy) .. " -- --json " .. q(tmp .. "/own.json"))
  check(code == 0 and (slurp(tmp .. "/own.json") or ""):find('"groups"', 1, true), "another path: written", out:sub(1, 200))
end)

T.test("two reports never name one file, nor a report the rule file or a symbol map", function()
  local one = tmp .. "/one.out"
  -- two options naming one file, as typed or spelled another way, kept only the last report written
  for _, c in ipairs { { "--json " .. q(one) .. " --junit " .. q(one), "--json and --junit: both name " .. one },
                       { "--csv " .. q(one) .. " --markdown " .. q(tmp .. "/./one.out"), "--csv and --markdown: both name" },
                       { "--json " .. q(one) .. " --json " .. q(tmp .. "/two.out"), "--json given twice (" .. one .. " and " } } do
    os.remove(one)
    local out, code = run("policy " .. M .. " -- " .. c[1])
    check(code == 2 and out:find(c[2], 1, true) and not T.exists(one), "policy " .. c[1] .. ": exit 2, said, nothing left",
          out:sub(1, 300))
  end
  -- the rule file, a --symbols map, the map beside the trace and the one beside a --baseline trace
  local dir = tmp .. "/inputs"
  os.execute("mkdir " .. q(dir))
  local trace, rules, sym = dir .. "/t.etl", dir .. "/r.lua", dir .. "/m.sym"
  local function copy(from, to)             -- (not cp: the Windows build runs this under Wine's cmd)
    local w = assert(io.open(to, "wb")); w:write(assert(slurp(from))); w:close()
  end
  copy(M, trace); copy("examples/memorytestapp.sym", dir .. "/t.sym"); copy("examples/memorytestapp.sym", sym)
  local f = assert(io.open(rules, "w")); f:write("return { { name = 'r', max_leaked_bytes = 1 } }\n"); f:close()
  for _, c in ipairs { { "--rules " .. q(rules) .. " --json " .. q(rules), rules, "the --rules file" },
                       { "--symbols " .. q(sym) .. " --csv " .. q(sym), sym, "the --symbols map" },
                       { "--junit " .. q(dir .. "/t.sym"), dir .. "/t.sym", "the symbol map beside the trace" } } do
    local before = slurp(c[2])
    local out, code = run("policy " .. q(trace) .. " -- " .. c[1])
    check(code == 2 and out:find(": is " .. c[3] .. "; a report is written to another file", 1, true)
          and slurp(c[2]) == before, "policy " .. c[1] .. ": exit 2, " .. c[3] .. " unchanged", out:sub(1, 300))
  end
  -- nor over a PDB (the one frames are named from, beside the trace)
  copy("examples/MemoryTestApp.pdb", dir .. "/MemoryTestApp.pdb")
  local pdb = slurp(dir .. "/MemoryTestApp.pdb")
  local pout, pcode = run("leaks " .. q(trace) .. " -- --json " .. q(dir .. "/MemoryTestApp.pdb"))
  check(pcode == 2 and pout:find(": is a PDB; a report is written to another file", 1, true)
        and slurp(dir .. "/MemoryTestApp.pdb") == pdb, "leaks --json over a PDB: exit 2, the PDB unchanged", pout:sub(1, 300))
  local before = slurp(dir .. "/t.sym")
  local out, code = run("policy " .. NEW .. " -- --baseline " .. q(trace) .. " --html " .. q(dir .. "/t.sym"))
  check(code == 2 and out:find("is the symbol map beside the --baseline", 1, true) and slurp(dir .. "/t.sym") == before,
        "policy --baseline TRACE --html its map: exit 2, unchanged", out:sub(1, 300))
end)

T.test("HTML chart labels of a short window differ", function()
  local hp = tmp .. "/short.html"
  local out, code = run("leaks " .. M .. " -- --window 1,1.015 --html " .. q(hp))
  local labels = {}
  for l in (slurp(hp) or ""):gmatch(">([%d.]+) s</text>") do labels[#labels + 1] = l end
  check(code == 0 and table.concat(labels, " ", 1, 4) == "1.000 1.005 1.010 1.015",
        "a 15 ms window: its time labels in ms, at round steps (not all 1.0 s)", table.concat(labels, " ") .. out)
end)

T.test("HTML axes: round steps, one unit per axis; the transient page's flame view is the spikes'", function()
  local hp = tmp .. "/axes.html"
  local out, code = run("transient " .. M .. " -- --html " .. q(hp))
  local page = slurp(hp) or ""
  local charts = {}
  for svg in page:gmatch('<figure class="chart".-</figure>') do
    local l = {}
    for t in svg:gmatch('text%-anchor="[a-z]+">([^<]*)</text>') do l[#l + 1] = t end
    charts[#charts + 1] = table.concat(l, " | ")
  end
  eq(charts[1], "0 KiB | 10 KiB | 20 KiB | 30 KiB | 0 s | 5 s | 10 s | 15 s | 20 s", "heap: KiB in tens, seconds in fives")
  eq(charts[2], "0 MiB | 10 MiB | 20 MiB | 30 MiB | 0 s | 5 s | 10 s | 15 s | 20 s", "virtual: MiB only")
  check(code == 0 and page:find("<h2>Bytes of the transient spikes by stack</h2>", 1, true)
        and not page:find("Outstanding bytes by stack", 1, true), "the icicle is headed as what it draws", out)
  local H = require "report_html"
  local got = {}
  for _, t in ipairs(H.byte_ticks(20070)) do got[#got + 1] = t[2] end
  eq(table.concat(got, " | "), "0 KiB | 5 KiB | 10 KiB | 15 KiB", "19.6 KiB: KiB throughout, not 10028 B")
  got = {}
  for _, t in ipairs(H.time_ticks(0, 1.37)) do got[#got + 1] = t[2] end
  eq(table.concat(got, " | "), "0.0 s | 0.5 s | 1.0 s", "1.37 s: steps of 0.5 s, not 0.27")
end)

T.test("HTML of 100,000 stacks stays small", function()
  local gen = "tests/bench/gen_stacks.lua"
  local tr = tmp .. "/many.etl"
  local out, code = run(q(gen) .. " -- " .. q(tr))
  eq(code, 0, "the writer makes 100,000 stacks " .. out)
  local hp, fp = tmp .. "/many.html", tmp .. "/many.folded"
  out, code = run("leaks " .. q(tr) .. " -- --top 3 --html " .. q(hp) .. " --folded " .. q(fp))
  check(code == 0, "leaks --html --folded", out:sub(1, 300))
  local page = slurp(hp) or ""
  local _, rects = page:gsub("<rect ", "")
  local _, points = page:gsub("<polyline ", "")
  check(#page > 0 and #page < 200 * 1024, "the page is under 200 KiB", #page)
  check(rects > 1 and rects <= 2000, "the icicle draws at most 2000 boxes", rects)
  check(points == 1, "one chart", points)
  local total, lines = folded_total(fp)
  eq(lines, 100000, "the folded file has every stack")
  local want = 0
  for i = 1, 100000 do want = want + 32 + i % 64 end
  eq(total, want, "and every byte")
  -- against a baseline: the first 500 changed groups of each grouping, and how many more
  local dp = tmp .. "/many-diff.html"
  out, code = run("diff examples/memorytestapp.etl " .. q(tr) .. " -- --html " .. q(dp))
  page = slurp(dp) or ""
  local _, stacks = page:gsub("<td>stack</td>", "")
  local _, procs = page:gsub("<td>process</td>", "")
  check(code == 0 and stacks == 500 and procs >= 2
        and tonumber(page:match("(%d+) more changed groups not listed %(the first 500 of each grouping are; see %-%-json%)%.")
                     or 0) == 100003 - 500,
        "diff --html of 100,000 new stacks: 500 listed, the processes too, the rest counted", stacks .. " " .. procs)
end)

-- A small trace for the report writers: process 10 (o.exe, unless name is
-- false: a process with no name and no start event) allocating blocks
-- {size, ts (100 ns units), frame address} on the heap.
local function blocks_trace(path, blocks, name)
  local w = assert(heapscript.writer(path))
  if name ~= false then
    w:process{op = "dcstart", pid = 10, ts = 1, name = name or "o.exe"}
    w:image{op = "dcstart", pid = 10, base = 0x7ff700000000, size = 0x10000, ts = 2, path = "o.exe"}
  end
  for i, b in ipairs(blocks) do
    w:heap{op = "alloc", pid = b.pid or 10, tid = 11, ts = b[2], heap = 1, addr = 0x100000 + i * 0x100, size = b[1],
           stack = {b[3] or 0x7ff700001000}}
  end
  assert(w:close())
  return path
end

-- the sort keys (data-v) of the findings' cells, row by row
local function cell_keys(page)
  local rows = {}
  for row in page:gmatch('<tr id="f%d+">(.-)</tr>') do
    local v = {}
    for k in row:gmatch('data%-v="([^"]*)"') do v[#v + 1] = k end
    rows[#rows + 1] = v
  end
  return rows
end

T.test("HTML: times a few ms apart sort by the whole time", function()
  local tr = blocks_trace(tmp .. "/close.etl", { { 50, 30000, 0x7ff700002000 }, { 100, 70000, 0x7ff700001000 } })
  local hp = tmp .. "/close.html"
  local out, code = run("leaks " .. q(tr) .. " -- --html " .. q(hp))
  local rows = cell_keys(slurp(hp) or "")
  check(code == 0 and #rows == 2 and tonumber(rows[1][4]) and tonumber(rows[2][4])
        and math.abs(tonumber(rows[1][4]) - 0.007) < 1e-9 and math.abs(tonumber(rows[2][4]) - 0.003) < 1e-9,
        "the Time column's data-v: 0.007 and 0.003, not both 0.00",
        (rows[1] and rows[1][4] or "?") .. " " .. (rows[2] and rows[2][4] or "?") .. out)
end)

T.test("Markdown: names with line breaks, backticks, HTML and bytes that are not UTF-8 stay in their row", function()
  local tr = tmp .. "/md.etl"
  local w = assert(heapscript.writer(tr))
  local names = { "cr\rlf\r\n.exe", "<b>bold</b>&amp;|pipe.exe", "caf\xe9\x01\x7f.exe" }
  for i, name in ipairs(names) do
    w:process{op = "dcstart", pid = 10 + i, ts = 2 * i, name = name}
    w:image{op = "dcstart", pid = 10 + i, base = 0x7ff700000000, size = 0x10000, ts = 2 * i + 1,
            path = i == 2 and "Drv`Alloc``x`.dll" or "o.exe"}
  end
  for i = 1, #names do
    w:heap{op = "alloc", pid = 10 + i, tid = 1, ts = 1000 + 100 * i, heap = 1, addr = 0x1000 * i, size = 10 * i,
           stack = {0x7ff700000000 + 0x1000 * i}}
  end
  assert(w:close())
  -- a symbol map in Latin-1, with control characters: its names are bytes
  local f = assert(io.open(tmp .. "/md.sym", "wb"))
  f:write("o.exe 3000 100 Gr\xf6\xdf\x01Leak\x7f\n")
  f:close()
  local md, code = run("leaks " .. q(tr) .. " -- --markdown -")
  local rows = {}
  for l in md:gmatch("[^\n]*") do if l:find("^| leak") then rows[#rows + 1] = l end end
  check(code == 0 and #rows == 3, "three rows, each on its line", md)
  check(not md:find("[\r%z\1-\8\11-\31\127]"), "no control character left (\\r, \\1, DEL)", md)
  check(utf8.len(md) and md:find("`o.exe!Gr\u{FFFD}\u{FFFD}?Leak?`", 1, true), "not UTF-8: U+FFFD, as in the JUnit file", md)
  check(md:find("| &lt;b>bold&lt;/b>&amp;amp;\\|pipe.exe (12) |", 1, true), "HTML and '&' in a cell escaped", md)
  check(md:find("| ``` Drv`Alloc``x`.dll+0x2000 ``` |", 1, true), "a code span fenced past the name's backticks", md)
  if os.execute("command -v cmark-gfm >/dev/null 2>&1") then
    local f = assert(io.open(tmp .. "/md.md", "wb")); f:write(md); f:close()
    local p = assert(io.popen("cmark-gfm -e table " .. q(tmp .. "/md.md")))
    local html = p:read("a"); p:close()
    local _, trs = html:gsub("<tr>", "")
    local _, bold = html:gsub("<b>", "")
    check(trs == 4 and bold == 0 and html:find("<code>Drv`Alloc``x`.dll+0x2000</code>", 1, true),
          "cmark-gfm: a header and three rows, no <b>, the name in one code span", html)
  end
end)

T.test("a record with no process is '?', not '? (nil)', in the text, the Markdown and the page", function()
  local tr = tmp .. "/nopid.etl"
  local w = assert(heapscript.writer(tr))
  -- pid 0xFFFFFFFF: the event names no process
  w:pool{op = "alloc", pid = 0xFFFFFFFF, tid = 212, ts = 1000, tag = "Leak", size = 65536, entry = 0xffffc30f41200000,
         stack = {0xfffff8055d4a1000}}
  assert(w:close())
  local hp = tmp .. "/nopid.html"
  local text, code = run("leaks " .. q(tr) .. " -- --html " .. q(hp))
  local md = run("leaks " .. q(tr) .. " -- --markdown -")
  local page = slurp(hp) or ""
  check(code == 0 and text:find("0.000..0.000 s, ?, tag Leak", 1, true) and not text:find("nil", 1, true), "the text", text)
  check(md:find("| leak | pool | ? |", 1, true) and not md:find("nil", 1, true), "the Markdown", md)
  check(page:find("pool — ?: peak 64.0 KiB", 1, true) and not page:find("(nil)", 1, true), "the page's chart", #page)
end)

T.test("HTML: each warning box has an id of its own", function()
  -- no allocation and lost events: policy says Nothing checked and Lost events
  local tr = tmp .. "/emptylost.etl"
  local w = assert(heapscript.writer(tr, { events_lost = 3 }))
  w:process{op = "dcstart", pid = 10, ts = 1, name = "o.exe"}
  assert(w:close())
  local hp = tmp .. "/emptylost.html"
  local out, code = run("policy " .. q(tr) .. " -- --html " .. q(hp))
  local page, ids, seen, dup = slurp(hp) or "", {}, {}, false
  for id in page:gmatch('<div class="caveat" id="([^"]*)"') do
    ids[#ids + 1] = id
    dup = dup or seen[id]
    seen[id] = true
  end
  check(code == 1 and table.concat(ids, " ") == "unchecked lost" and not dup, "two boxes: unchecked, lost",
        table.concat(ids, " ") .. out)
end)

T.test("HTML: icicle labels are cut by characters, not bytes", function()
  -- 90 and 10 blocks of 100 B: the second box is 120 of 1200 units wide,
  -- room for 19 characters, so 18 and an ellipsis
  local blocks = {}
  for i = 1, 100 do blocks[i] = { 100, 1000 * i, i <= 90 and 0x7ff700001000 or 0x7ff700002000 } end
  local tr = blocks_trace(tmp .. "/utf.etl", blocks)
  local f = assert(io.open(tmp .. "/utf.sym", "wb"))
  f:write("o.exe 1000 100 ОченьДлинноеИмяФункции\n", "o.exe 2000 100 XВыделитьПамятьДляБуфераОбработкиЗапросов\n")
  f:close()
  local hp = tmp .. "/utf.html"
  local out, code = run("leaks " .. q(tr) .. " -- --html " .. q(hp))
  local page = slurp(hp) or ""
  local labels = {}
  for l in page:gmatch('<svg class="flame".-</svg>') do
    for t in l:gmatch("<text[^>]*>([^<]*)</text>") do labels[#labels + 1] = t end
  end
  check(code == 0 and utf8.len(page) and not page:find("\u{FFFD}", 1, true), "no character cut in two", out)
  check(labels[4] == "o.exe!XВыделитьПам…", "the narrow box: 18 characters and '…', as a name in ASCII would get",
        table.concat(labels, " | "))
end)

T.test("report.stable_sort: ties keep their order past table.sort's 100 items", function()
  local report = require "report"
  local list = {}
  for i = 1, 1000 do list[i] = { v = i % 7, i = i } end
  report.stable_sort(list, function(a, b) return a.v > b.v end)
  local ok = #list == 1000
  for k = 2, #list do
    local a, b = list[k - 1], list[k]
    ok = ok and (a.v > b.v or (a.v == b.v and a.i < b.i))
  end
  check(ok, "by v, largest first, then in the order they had")
end)

T.test("policy: violations of equal weight keep the order they were found in, run after run", function()
  -- 300 stacks of one allocation each: a per-stack limit of 0 allocations
  -- is broken 300 times by 1.  table.sort alone is not stable and picks
  -- its pivots at random past 100 items.
  local tr, rules = tmp .. "/ties.etl", tmp .. "/ties.lua"
  local out, code = run(q("tests/bench/gen_stacks.lua") .. " -- " .. q(tr) .. " 300")
  eq(code, 0, "the writer makes 300 stacks " .. out)
  local f = assert(io.open(rules, "w"))
  f:write('return { { name = "one-each", per = "stack", max_allocations = 0 } }\n')
  f:close()
  local first
  for round = 1, 3 do
    local r, c, raw = report("policy " .. q(tr) .. " -- --rules " .. q(rules) .. " --frames 1")
    eq(c, 1, "the rule is broken")
    local vs = r and r.results[1].violations or {}
    eq(#vs, 300, "once a stack")
    local ok = true
    for i, v in ipairs(vs) do   -- gen_stacks.lua's innermost frame of allocation i
      ok = ok and v.value == 1 and v.stack[1] == ("many.exe+0x%x"):format(0x1000 + (i * 7919 + 104729) % 0xF00000)
    end
    check(ok, "round " .. round .. ": in the order of the allocations")
    if first then eq(raw, first, "round " .. round .. ": the same report") end
    first = first or raw
  end
end)

os.execute("rm -rf " .. q(tmp))
return T.done("test_reports")
