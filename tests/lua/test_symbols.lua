-- test_symbols.lua -- symbols in Lua, on the example trace and its real PDB
-- (examples/MemoryTestApp.pdb, found beside the trace): frame text with
-- file:line and inline levels in s:frames(), tostring(s) and s:frame(i);
-- stack filters and patterns (Lua, LPeg, functions) over PDB names;
-- grouping by stack; trace:symbols{path} and trace:symbols(); laziness
-- (a script that asks for no names opens no PDB); frames agree with
-- llvm-symbolizer's answers recorded in examples/memorytestapp/layout.txt.
package.path = "tests/lua/?.lua;tests/corpus/?.lua;" .. package.path
local T = require "testlib"
local lpeg = require "lpeg"
local check, eq = T.check, T.eq
local E = "examples/memorytestapp.etl"

-- llvm-symbolizer's frames per call-site RVA (build.lua recorded them)
local oracle, funcs = {}, {}
for line in io.lines("examples/memorytestapp/layout.txt") do
  local rva, lvl, name, ln, file = line:match("^frame (%S+) (%d+) (%S+) (%d+) (.+)$")
  if rva then
    rva = tonumber(rva)
    oracle[rva] = oracle[rva] or {}
    oracle[rva][tonumber(lvl)] = { name = name, line = tonumber(ln), file = file }
  end
  local fname, frva = line:match("^func (%S+) (%S+) %S+$")
  if fname then funcs[fname] = tonumber(frva) end
end

do -- laziness: allocations, counts and grouping without names open nothing
  local t <close> = assert(heapscript.open(E))
  local H = t:allocations{kind = "heap"}
  local g = H:group("stack", {sort = "impacting", top = 3})
  eq(#g, 3, "grouping by stack needs no names")
  local st = t:memory_stats().symbols
  eq(st.pdb_searches, 0, "no PDB searched before a name is asked for")
  eq(st.lookups, 0, "no address resolved")
  local _ = g[1].stack:frame(1)
  st = t:memory_stats().symbols
  eq(st.pdb_searches, 3, "naming a stack searches the PDBs of its images: ntdll, MemoryTestApp.exe, kernel32 (not KernelBase)")
  eq(st.pdb_opened, 1, "... MemoryTestApp.pdb found beside the trace and opened")
  local n = st.addresses
  local _ = tostring(g[1].stack) .. tostring(g[2].stack)
  st = t:memory_stats().symbols
  eq(st.pdb_searches, 3, "one search per image identity")
  check(st.addresses > n, "more distinct addresses resolved", st.addresses)
  local again = st.addresses
  local _ = tostring(g[1].stack)
  eq(t:memory_stats().symbols.addresses, again, "a stack's frames are named once (cached)")
end

do -- frame text, inline levels, patterns
  local t <close> = assert(heapscript.open(E))
  heapscript.symbols("examples/memorytestapp.sym")
  local g = t:allocations{kind = "heap", outstanding = true}:group("stack")[1]
  local s = g.stack
  eq(#s, 9, "#s counts addresses")
  local f = s:frames()
  eq(#f, 10, "s:frames() has one more: the inline level")
  eq(f[3], "MemoryTestApp.exe!InnerLoopOperation+0x1f [memorytestapp.c:53]", "a function from the PDB, file:line")
  eq(f[4], "MemoryTestApp.exe!RunInnerLoop [memorytestapp.c:111]", "the inline level: no offset, its line")
  eq(f[5], "MemoryTestApp.exe!Main+0xa5 [memorytestapp.c:129]", "the function it is inlined into: the call site's line")
  eq(s:frame(4), f[4], "s:frame(i) counts frames")
  eq(s:frame(-1), "ntdll.dll!RtlUserThreadStart+0x21", "s:frame(-1): the outermost")
  eq(select(2, tostring(s):gsub("\n", "")), 9, "tostring(s): one line per frame")
  check(s:matches("!InnerLoopOperation%+") and s:matches(lpeg.P"MemoryTestApp.exe!RunInnerLoop [") and s:contains("[memorytestapp.c:53]"),
        "s:matches / s:contains over PDB names and lines")
  check(not s:matches("!ParseRecord"), "s:matches: no")
  local A = t:allocations{kind = "heap"}
  eq(#A:filter{stack = "!InnerLoopOperation"}, 319, "stack = Lua pattern over a PDB name")
  eq(#A:filter{stack = lpeg.P"MemoryTestApp.exe!RunInnerLoop"}, 319, "stack = LPeg pattern over an inline frame")
  eq(#A:filter{stack = "%[memorytestapp%.c:5[9]%]"}, #A:filter{stack = "!ParseRecord%+0x27 "}, "stack = pattern over file:line")
  eq(#t:allocations{kind = "heap", stack = function(fr) return fr:find("BuildLookupTable", 1, true) ~= nil end}
     + #t:allocations{kind = "heap", stack = "!CopyWorkItem"}, #t:allocations{kind = "heap", stack = "!WorkerThreadProc"},
     "stack = function: the worker's allocations are BuildLookupTable's and CopyWorkItem's")
  -- every call site of the example resolves as llvm-symbolizer says
  local sites, agree = 0, 0
  for a in t:allocations{kind = "heap"}:each() do
    local st = a.stack
    if st and sites < 200 then
      local addrs, k = st:addresses(), 1
      local fr = st:frames()
      for _, addr in ipairs(addrs) do
        local rva = addr - 0x7FF6A1B40000
        local want = oracle[rva]
        if want then
          sites = sites + 1
          local ok = true
          for lvl, w in ipairs(want) do
            local text = fr[k + lvl - 1] or ""
            local base = w.file:match("[^\\/]*$")
            ok = ok and text:find("!" .. w.name, 1, true) and text:find("[" .. base .. ":" .. w.line .. "]", 1, true)
            if lvl == #want then
              ok = ok and text:find(("+0x%x "):format(rva - funcs[w.name]), 1, true)
            end
          end
          if ok then agree = agree + 1 end
          k = k + #want
        elseif math.ult(addr - 0x7FF6A1B40000, 0x6000) then
          sites = sites + 1                    -- an app frame llvm-symbolizer was not asked about
        else
          k = k + 1
        end
      end
    end
  end
  check(sites > 100 and agree == sites, "app frames equal llvm-symbolizer's (name, offset, file, line, inline levels)",
        agree .. " of " .. sites)
  heapscript.symbols(false)
end

do -- trace:symbols(): the report; trace:symbols{path}: where to look
  local t <close> = assert(heapscript.open(E))
  local rep = t:symbols()
  eq(#rep, 4, "four image identities")
  eq(rep[1].module, "MemoryTestApp.exe", "the app first")
  eq(rep[1].status, "found", "its PDB found")
  eq(rep[1].path, "examples/MemoryTestApp.pdb", "... beside the trace")
  eq(rep[1].pdb.key, "73530E7B1169D7AF4C4C44205044422E1", "the symbol store key")
  eq(rep[1].pdb.age, 1, "age")
  eq(rep[1].processes, 1, "one process loaded it")
  eq(rep[1].map_symbols, 0, "no current symbol map: no names from one")
  eq(rep[2].status, "missing", "ntdll: no PDB")
  local d = T.tmpname()
  os.remove(d)
  os.execute("mkdir -p " .. d .. "/s/MemoryTestApp.pdb/73530E7B1169D7AF4C4C44205044422E1 " .. d .. "/away")
  os.execute("cp examples/MemoryTestApp.pdb " .. d .. "/s/MemoryTestApp.pdb/73530E7B1169D7AF4C4C44205044422E1/")
  os.execute("cp " .. E .. " " .. d .. "/away/")
  local t2 <close> = assert(heapscript.open(d .. "/away/memorytestapp.etl"))
  local g = t2:allocations{kind = "heap", outstanding = true}:group("stack")[1]
  eq(g.stack:frame(3), "MemoryTestApp.exe+0x14bf", "away from its PDB: unnamed")
  eq(t2:symbols{path = "srv*" .. d .. "/s"}, t2, "trace:symbols{path} returns the trace")
  eq(g.stack:frame(3), "MemoryTestApp.exe!InnerLoopOperation+0x1f [memorytestapp.c:53]", "named again through the store")
  eq(t2:symbols()[1].path, d .. "/s/MemoryTestApp.pdb/73530E7B1169D7AF4C4C44205044422E1/MemoryTestApp.pdb", "the PDB used")
  t2:symbols{path = false}
  eq(g.stack:frame(3), "MemoryTestApp.exe+0x14bf", "path = false: back to the default")
  T.raises(function() t2:symbols{paths = "x"} end, "unknown option 'paths'", "unknown option")
  T.raises(function() t2:symbols{path = 1 > 0} end, "a symbol path string or false", "bad path")
  os.execute("rm -rf " .. d)
end

do -- s:flame(): the folded format's frames, root first, as the Lua rule below names them
  -- the rule in Lua, the oracle: no +0xOFFSET or [file:line] after a
  -- function name (every call site of a function is one box), no ';'
  local F = {}
  function F.flame_frame(f)
    f = f:match("^(.-) %[[^%]]*%]$") or f
    if f:find("!", 1, true) then f = f:match("^(.-)%+0x%x+$") or f end
    if f:find(";", 1, true) then f = f:gsub(";", ":") end
    return f
  end
  local t <close> = assert(heapscript.open(E))
  local map = T.tmpname()
  local fh = assert(io.open(map, "w"))
  -- a name with ';' (the folded separator) and one with " [" in it
  -- and one longer than the 256 bytes a frame is first formatted into
  local long = "Long" .. string.rep("x", 400) .. "End"
  fh:write("ntdll.dll 0003a6f0 0000b0 Rtl;AllocateHeap\nntdll.dll 00052630 000040 RtlUserThreadStart [x]\n"
           .. "kernel32.dll 00017020 000040 " .. long .. "\n")
  fh:close()
  heapscript.symbols(map)
  local n, same = 0, 0
  local first
  for a in t:allocations{kind = "heap"}:each() do
    local st = a.stack
    if st then
      local f, fr = st:frames(), {}
      for i = #f, 1, -1 do fr[#fr + 1] = F.flame_frame(f[i]) end
      n = n + 1
      if st:flame() == table.concat(fr, ";") then same = same + 1 end
      if not first and st:contains("!InnerLoopOperation") then first = st end
    end
    if n == 300 then break end
  end
  eq(same, n, "s:flame() = the frames made flame frames, root first, joined by ';' (" .. n .. " stacks)")
  local fl = first:flame()
  check(fl:find("MemoryTestApp.exe!RunInnerLoop;MemoryTestApp.exe!InnerLoopOperation;", 1, true),
        "a PDB function without +0x or [file:line]; the inline level kept", fl)
  check(fl:find("ntdll.dll!Rtl:AllocateHeap", 1, true) and not fl:find("Rtl;", 1, true), "';' in a name is written ':'", fl)
  check(fl:find("^ntdll%.dll!RtlUserThreadStart %[x%];kernel32"), "the root first (a name's own \" [x]\" is no file:line)", fl)
  check(fl:find(";kernel32.dll!" .. long .. ";MemoryTestApp", 1, true), "a 400-byte name whole", #fl)
  local _, seps = fl:gsub(";", "")
  eq(seps, #first:frames() - 1, "one ';' between frames")
  -- s:key(), the stable key, under the same map: what baseline.frame_key
  -- makes of each frame's text (module lower-cased, no offset, no inline level)
  local baseline = require "baseline"
  local keyed, agree = 0, 0
  for a in t:allocations{kind = "heap"}:each() do
    local st = a.stack
    if st then
      keyed = keyed + 1
      if st:key() == table.concat(baseline.root_first(st), ";") then agree = agree + 1 end
    end
    if keyed == 300 then break end
  end
  eq(agree, keyed, "s:key() = the text's stable key under a symbol map (" .. keyed .. " stacks)")
  local key = first:key()
  check(key:find("^ntdll%.dll!RtlUserThreadStart %[x%];kernel32%.dll!" .. long .. ";memorytestapp%.exe!"),
        "a map's names, a 400-byte one whole, ' [x]' part of a name", key)
  check(key:find("ntdll.dll!Rtl;AllocateHeap", 1, true) and not key:find("RunInnerLoop", 1, true),
        "';' in a name kept as the text has it; the inline level left out", key)
  heapscript.symbols(false)
  os.remove(map)
end

do -- one stack id, different programs: equal addresses in processes whose
   -- images there differ are grouped, filtered and named apart
  local path, map = os.tmpname(), os.tmpname()
  local w = assert(heapscript.writer(path))
  local H = 0x10000
  local EXE, DLL = "\\Device\\HarddiskVolume3\\app\\", "\\Device\\HarddiskVolume3\\Windows\\common.dll"
  local function exe(pid, name, size, no_dll)
    local ts = pid // 100                -- 10 .. 80: in order on the one CPU
    w:process{op = "dcstart", pid = pid, ts = ts, name = name}
    w:image{op = "dcstart", pid = pid, base = 0x400000, size = size, ts = ts + 1, path = EXE .. name}
    if not no_dll then w:image{op = "dcstart", pid = pid, base = 0x10000000, size = 0x20000, ts = ts + 2, path = DLL} end
    w:heap{op = "create", pid = pid, tid = pid + 4, ts = ts + 3, heap = H}
  end
  w:process{op = "dcstart", pid = 0, ts = 5, name = "Idle"}
  w:image{op = "dcstart", pid = 0, base = -0x7ffff00000, size = 0x10000, ts = 6,   -- 0xfffff80000100000
          path = "\\SystemRoot\\system32\\drivers\\drv.sys"}
  exe(1000, "a.exe", 0x10000, true)    -- common.dll loaded later (ts 450)
  exe(2000, "b.exe", 0x10000)          -- another program at the same base
  exe(3000, "a.exe", 0x10000)          -- a.exe again: the same program
  exe(4000, "a.exe", 0x12000)          -- another build of a.exe (its size differs)
  exe(5000, "host.exe", 0x10000)       -- a.exe's image there, then b.exe's
  w:image{op = "dcstart", pid = 1000, base = 0x20000000, size = 0x10000, ts = 55, path = EXE .. "plug1.dll"}
  w:image{op = "dcstart", pid = 2000, base = 0x20000000, size = 0x10000, ts = 56, path = EXE .. "plug2.dll"}
  w:image{op = "dcstart", pid = 3000, base = 0x20000000, size = 0x10000, ts = 57, path = EXE .. "plug1.dll"}
  w:image{op = "dcstart", pid = 5000, base = 0x400000, size = 0x10000, ts = 60, path = EXE .. "a.exe"}
  exe(6100, "a.exe", 0x10000, true)    -- a.exe alone, b.exe alone, and a host that goes from b.exe to a.exe
  exe(7000, "b.exe", 0x10000, true)
  exe(8000, "b.exe", 0x10000, true)
  exe(9000, "a.exe", 0x10000, true)    -- a.exe, then b.exe at its base: one process, two eras
  -- shared.dll: its link timestamp in two processes' records, none in a third's (a rundown that
  -- lacks it): one image.  other.dll: two builds, and a record without a timestamp: which is not known
  for i, pid in ipairs {1000, 2000, 3000} do
    w:image{op = "dcstart", pid = pid, base = 0x30000000, size = 0x10000, ts = 94 + i, path = EXE .. "shared.dll",
            checksum = pid == 2000 and 0 or 0x2222, tds = pid == 2000 and 0 or 0x11111111}
    w:image{op = "dcstart", pid = pid, base = 0x38000000, size = 0x10000, ts = 94 + i, path = EXE .. "other.dll",
            tds = pid == 1000 and 0x5A or pid == 2000 and 0x5B or 0}
  end
  local S, C, X = {0x401234, 0x402000}, {0x10001000, 0x10002000}, {0x10001000, 0x401234}
  local function alloc(pid, ts, addr, size, stack)
    w:heap{op = "alloc", pid = pid, tid = pid + 4, ts = ts, heap = H, addr = addr, size = size, stack = stack}
  end
  local function free(pid, ts, addr, stack) w:heap{op = "free", pid = pid, tid = pid + 4, ts = ts, heap = H, addr = addr, stack = stack} end
  alloc(1000, 100, 0x20000, 40, S)
  alloc(2000, 200, 0x20000, 4000, S)
  alloc(2000, 250, 0x50000, 5, S)      -- (id, instance) known: no second lookup
  alloc(3000, 300, 0x20000, 60, S)
  alloc(4000, 400, 0x20000, 700, S)
  w:image{op = "load", pid = 1000, base = 0x10000000, size = 0x20000, ts = 450, path = DLL}
  alloc(1000, 500, 0x30000, 8, C)      -- common.dll's frames only: one program, two processes
  alloc(2000, 600, 0x30000, 16, C)
  alloc(2000, 700, 0x40000, 32, C)
  free(2000, 800, 0x40000, S)
  alloc(1000, 900, 0x40000, 64, C)
  free(1000, 1000, 0x40000, S)
  alloc(1000, 1010, 0x60000, 1, X)     -- common.dll, then the program: apart by the program
  alloc(2000, 1020, 0x60000, 2, X)
  alloc(3000, 1030, 0x60000, 4, X)
  local K = {-0x7ffff00000 + 0x1000, -0x7ffff00000 + 0x2000}
  alloc(1000, 1040, 0x80000, 256, K)   -- a driver's frames alone: one group in every process
  alloc(2000, 1050, 0x80000, 512, K)
  alloc(1000, 1060, 0x90000, 1024, {0x400000})   -- at the very start of the images that disagree
  alloc(2000, 1070, 0x90000, 2048, {0x400000})
  alloc(1000, 1080, 0xA0000, 4096, {0x411000})   -- past a.exe's end, inside its other build
  alloc(4000, 1090, 0xA0000, 8192, {0x411000})
  alloc(1000, 1094, 0xB0000, 3, {0x20001000})   -- two DLLs of one size at one base: only their names differ
  alloc(2000, 1097, 0xB0000, 6, {0x20001000})
  alloc(5000, 1100, 0x70000, 128)      -- freed after b.exe took a.exe's place in host.exe
  local S2 = {0x401500, 0x402500}      -- each host with the program it had then, not with the other
  alloc(6100, 1110, 0xC0000, 11, S2)
  alloc(7000, 1120, 0xC0000, 13, S2)
  alloc(5000, 1130, 0xD0000, 17, S2)   -- host.exe while it has a.exe
  alloc(8000, 1140, 0xC0000, 19, S2)   -- 8000 while it has b.exe
  w:image{op = "unload", pid = 5000, base = 0x400000, size = 0x10000, ts = 1150, path = EXE .. "a.exe"}
  w:image{op = "load", pid = 5000, base = 0x400000, size = 0x10000, ts = 1160, path = EXE .. "b.exe"}
  w:image{op = "unload", pid = 8000, base = 0x400000, size = 0x10000, ts = 1170, path = EXE .. "b.exe"}
  w:image{op = "load", pid = 8000, base = 0x400000, size = 0x10000, ts = 1180, path = EXE .. "a.exe"}
  free(5000, 1200, 0x70000, S)
  local S3 = {0x401600, 0x402600}
  alloc(9000, 1210, 0xE0000, 21, S3)   -- a.exe's code
  local N = {0x30001000, 0x30002000}  -- where no process has an image
  alloc(9000, 1215, 0xE1000, 37, N)
  w:image{op = "unload", pid = 9000, base = 0x400000, size = 0x10000, ts = 1220, path = EXE .. "a.exe"}
  w:image{op = "load", pid = 9000, base = 0x400000, size = 0x10000, ts = 1230, path = EXE .. "b.exe"}
  alloc(9000, 1240, 0xE2000, 22, S3)   -- the same addresses, b.exe's code now
  alloc(9000, 1245, 0xE3000, 38, N)    -- ... in both eras alike
  free(9000, 1250, 0xE0000, S3)        -- a.exe's block freed through b.exe's code
  for i, pid in ipairs {1000, 2000, 3000} do
    alloc(pid, 1300 + 20 * i, 0xF0000, 1000 * i, {0x30001100, 0x30002200})
    alloc(pid, 1310 + 20 * i, 0xF1000, 10000 * i, {0x38001100})
  end
  assert(w:close())
  local f = assert(io.open(map, "w"))
  f:write("a.exe 1200 100 a_alloc\na.exe 2000 100 a_main\nb.exe 1200 100 b_alloc\nb.exe 2000 100 b_main\n",
          "common.dll 1000 100 c_alloc\ncommon.dll 2000 100 c_main\n")
  f:close()
  heapscript.symbols(map)
  local t <close> = assert(heapscript.open(path))
  local A = t:allocations{kind = "heap"}
  local by, keys = {}, {}
  for _, g in ipairs(A:group("stack")) do
    local p = {}
    for _, q in ipairs(g.allocs:group("process", {sort = "key"})) do p[#p + 1] = q.pid end
    local name = g.stack and g.stack:frame(1) .. " " .. (g.stack:frame(2) or "?") or "none"
    by[name .. " " .. table.concat(p, ",")] = g.bytes
    keys[#keys + 1] = g.key
  end
  local want = {
    ["a.exe!a_alloc+0x34 a.exe!a_main 1000,3000"] = 100,     -- a.exe's own stack in both a.exe processes
    ["b.exe!b_alloc+0x34 b.exe!b_main 2000"] = 4005,         -- the same addresses in b.exe
    ["a.exe!a_alloc+0x34 a.exe!a_main 4000"] = 700,          -- ... in the other build of a.exe
    ["common.dll!c_alloc common.dll!c_main 1000,2000"] = 120, -- common.dll alone: one program
    ["common.dll!c_alloc a.exe!a_alloc+0x34 1000,3000"] = 5,  -- common.dll then a.exe
    ["common.dll!c_alloc b.exe!b_alloc+0x34 2000"] = 2,       -- ... then b.exe
    ["drv.sys+0x1000 drv.sys+0x2000 1000,2000"] = 768,       -- the kernel's frames: one program
    ["none 5000"] = 128,
    ["a.exe+0x0 ? 1000"] = 1024, ["b.exe+0x0 ? 2000"] = 2048,
    ["0x411000 ? 1000"] = 4096, ["a.exe+0x11000 ? 4000"] = 8192,
    ["plug1.dll+0x1000 ? 1000"] = 3, ["plug2.dll+0x1000 ? 2000"] = 6,
    ["a.exe+0x1500 a.exe+0x2500 5000,6100"] = 28, ["b.exe+0x1500 b.exe+0x2500 7000,8000"] = 32,
    ["a.exe+0x1600 a.exe+0x2600 9000"] = 21, ["b.exe+0x1600 b.exe+0x2600 9000"] = 22,   -- apart by era
    ["0x30001000 0x30002000 9000"] = 75,  -- no image changed there: one group over both eras
    ["shared.dll+0x1100 shared.dll+0x2200 1000,2000,3000"] = 6000,   -- a timestamp missing: one image
    ["other.dll+0x1100 ? 1000"] = 10000, ["other.dll+0x1100 ? 2000"] = 20000,  -- two builds, and a record
    ["other.dll+0x1100 ? 3000"] = 30000,                                  -- that could be either
  }
  for k, v in pairs(want) do eq(by[k], v, "by stack: " .. k) end
  for k, v in pairs(by) do check(want[k] == v, "no other group", k) end
  check(keys[1] < 2^32 and keys[2] >= 2^32 and keys[2] % 2^32 == keys[1],
        "the first program's key is the stack id, another's id + k * 2^32", keys[2])
  local fs = {}
  for _, g in ipairs(A:group("free_stack")) do
    if g.stack then fs[g.stack:frame(1)] = (fs[g.stack:frame(1)] or 0) + g.bytes end
  end
  eq(fs["b.exe+0x1600"], 21, "a free stack named by the era of the free")
  do
    local r = {}
    for a in t:allocations{pid = 9000}:each() do r[a.size] = {stack = a.stack, free_stack = a.free_stack} end
    check(r[21].stack and r[22].stack and r[21].stack ~= r[22].stack,
          "one stack id in two eras of a process: two Stacks")
    eq(r[21].stack:frame(1), "a.exe+0x1600", "... the first named by a.exe")
    eq(r[22].stack:frame(1), "b.exe+0x1600", "... the second by b.exe")
    eq(r[21].free_stack:frame(1), "b.exe+0x1600", "... and the free by the era it was taken in")
    eq(r[38].stack:frame(1), r[37].stack:frame(1), "a stack no change touched: named alike in both eras")
    eq(#t:allocations{pid = 9000, stack = "b%.exe"}, 1, "a stack filter sees each era's names")
    eq(#t:allocations{pid = 9000, free_stack = "b%.exe"}, 1, "... a free-stack filter too")
  end
  eq(fs["a.exe!a_alloc+0x34"], 64, "free stacks apart the same way: a.exe freed 64 bytes")
  eq(fs["b.exe!b_alloc+0x34"], 160, "... b.exe 32, and host.exe 128 once b.exe was its image at the free")
  eq(#t:allocations{stack = "b_alloc"}, 3, "a stack filter sees b.exe's names in b.exe")
  eq(#t:allocations{stack = "a_alloc"}, 5, "... and a.exe's in a.exe, both builds")
  eq(#t:allocations{free_stack = "b_alloc"}, 2, "a free-stack filter too")
  local ft, fb = A:folded("heap")
  local fold = {}
  for i, text in ipairs(ft) do fold[text] = fb[i] end
  eq(fold["heap;b.exe!b_main;b.exe!b_alloc"], 4005, "a folded line of b.exe's own")
  eq(fold["heap;a.exe!a_main;a.exe!a_alloc"], 800, "... and one of a.exe's (both builds: one text)")
  eq(fold["heap;common.dll!c_main;common.dll!c_alloc"], 120, "... and one of common.dll's over both processes")
  local fk, e = A:stack_figures()
  local fig = {}
  for i, k in ipairs(fk) do fig[k] = e[i].bytes end
  eq(fig["b.exe!b_main;b.exe!b_alloc"], 4005, "a baseline's figures apart by program")
  eq(fig["a.exe!a_main;a.exe!a_alloc"], 800, "... the same names of both builds summed by their key")
  heapscript.symbols(false)
  os.remove(path)
  os.remove(map)
end

return T.done("test_symbols")
