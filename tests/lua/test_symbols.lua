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

return T.done("test_symbols")
