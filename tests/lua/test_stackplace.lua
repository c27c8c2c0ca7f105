-- test_stackplace.lua -- grouping by stack (engine/stackplace.c) against a
-- plain model, over random written traces: processes of programs built
-- for one base, an executable at two overlapping bases, DLLs shared or
-- not, kernel frames and frames in no image.  The model keys a record by
-- its stack id and the text of its frames as `a.stack` names them;
-- records of one key are one group, and a stack filter matches the
-- records whose text it finds.  Every stack a process uses lies in
-- images it has (or in none that any process has), as real stacks do.
-- A process's executable or plug-in is now and then replaced by another
-- image at its base (or a.exe moved between its two bases): the same
-- stack id in its next era is another stack (procmap.h, eras).
package.path = "tests/lua/?.lua;" .. package.path
local T = require "testlib"
local check, eq = T.check, T.eq

local function lcg(seed)
  return function(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n end
end

-- the images a process may have at each base: name, base, size (one size a name)
local EXE = { { "a.exe", 0x400000 }, { "b.exe", 0x400000 }, { "a.exe", 0x408000 } }
local PLUG = { "p1.dll", "p2.dll", "p3.dll" }
local SIZE = 0x10000
local UNMAPPED = 0x50000000                -- no image anywhere
local KERNEL = -0x7ffff00000              -- 0xfffff80000100000: drv.sys in the system process
local DIR = "\\Device\\HarddiskVolume3\\app\\"

-- one random trace: its path and, per process, its images over time
local function write(rnd, path)
  local w = assert(heapscript.writer(path))
  local ts = 10
  local function tick() ts = ts + 10; return ts end
  w:process { op = "dcstart", pid = 0, ts = tick(), name = "Idle" }
  w:image { op = "dcstart", pid = 0, base = KERNEL, size = SIZE, ts = tick(), path = "\\SystemRoot\\drv.sys" }
  local procs = {}
  for p = 1, 2 + rnd(4) do
    local pid = 1000 + 4 * p
    local e = EXE[rnd(#EXE) + 1]
    local img = { { name = e[1], base = e[2] } }          -- what it has now, by base
    if rnd(5) > 0 then img[#img + 1] = { name = "common.dll", base = 0x10000000 } end
    if rnd(10) < 7 then img[#img + 1] = { name = PLUG[rnd(#PLUG) + 1], base = 0x20000000 } end
    w:process { op = "dcstart", pid = pid, ts = tick(), name = "p" .. p .. ".exe" }
    for _, im in ipairs(img) do
      w:image { op = "dcstart", pid = pid, base = im.base, size = SIZE, ts = tick(), path = DIR .. im.name }
    end
    w:heap { op = "create", pid = pid, tid = pid + 1, ts = tick(), heap = 0x10000 }
    procs[p] = { pid = pid, img = img }
  end
  -- stacks: frames at an offset from one of the bases, in the kernel, or in no image
  local bases = { 0x400000, 0x10000000, 0x20000000 }
  local stacks = {}
  for s = 1, 8 + rnd(8) do
    local f = {}
    for i = 1, 1 + rnd(4) do
      local k = rnd(10)
      f[i] = k == 0 and KERNEL + 0x100 * (1 + rnd(16)) or k == 1 and UNMAPPED + 0x10 * rnd(16)
             or bases[rnd(#bases) + 1] + 0x1000 * rnd(16) + 0x10 * rnd(4)
    end
    stacks[s] = f
  end
  local function covers(p, a)               -- does process p have an image at user address a now?
    if a < 0 or a >= UNMAPPED then return true end
    for _, im in ipairs(p.img) do if a >= im.base and a < im.base + SIZE then return true end end
    return false
  end
  local function usable(p)                 -- a stack whose frames p has, or nil
    for _ = 1, 20 do
      local st = stacks[rnd(#stacks) + 1]
      local ok = true
      for _, a in ipairs(st) do ok = ok and covers(p, a) end
      if ok then return st end
    end
  end
  local live, addr = {}, 0x1000000
  for _ = 1, 40 + rnd(40) do
    local p = procs[rnd(#procs) + 1]
    local k = rnd(12)
    if k == 11 then                        -- an image replaced at its base: the process's next era
      local im = p.img[1]                  -- the executable, or the plug-in
      if rnd(2) == 0 and p.img[#p.img].base == 0x20000000 then im = p.img[#p.img] end
      local name, base = PLUG[rnd(#PLUG) + 1], im.base
      if im.base ~= 0x20000000 then local e = EXE[rnd(#EXE) + 1]; name, base = e[1], e[2] end
      w:image { op = "unload", pid = p.pid, base = im.base, size = SIZE, ts = tick(), path = DIR .. im.name }
      w:image { op = "load", pid = p.pid, base = base, size = SIZE, ts = tick(), path = DIR .. name }
      im.name, im.base = name, base
    elseif k < 3 and #live > 0 then        -- a free, with a stack of the process
      local j = rnd(#live) + 1
      local b = table.remove(live, j)
      w:heap { op = "free", pid = b.pid, tid = b.pid + 1, ts = tick(), heap = 0x10000, addr = b.addr,
               stack = usable(procs[b.p]) }
    else
      addr = addr + 0x100
      local st = rnd(8) > 0 and usable(p) or nil
      w:heap { op = "alloc", pid = p.pid, tid = p.pid + 1, ts = tick(), heap = 0x10000, addr = addr,
               size = 1 + rnd(100), stack = st }
      for q, pp in ipairs(procs) do if pp == p then live[#live + 1] = { pid = p.pid, addr = addr, p = q } end end
    end
  end
  assert(w:close())
end

-- the model: groups by (stack id, text), as lists of record indices
local eras = 0                             -- stack ids named two ways in one process
local function model(A, field)
  local groups, text, seen = {}, {}, {}
  for a in A:each() do
    local s = a[field]
    local key = "none"
    if s then
      local t = table.concat(s:frames(), "|")
      key = s.id .. "|" .. t
      text[a.index] = t
      local k = s.id .. "@" .. a.pid
      if seen[k] and seen[k] ~= t and seen[k] ~= true then eras = eras + 1; seen[k] = true
      elseif not seen[k] then seen[k] = t end
    end
    groups[key] = groups[key] or {}
    table.insert(groups[key], a.index)
  end
  local out = {}
  for _, ix in pairs(groups) do table.sort(ix); out[#out + 1] = table.concat(ix, ",") end
  table.sort(out)
  return out, text
end

local function grouped(A, by)
  local out, named = {}, true
  for _, g in ipairs(A:group(by)) do
    local ix, s = {}, nil
    for a in g.allocs:each() do
      ix[#ix + 1] = a.index
      if #ix == 1 then s = a[by == "stack" and "stack" or "free_stack"] end   -- the cursor is reused
    end
    table.sort(ix)
    out[#out + 1] = table.concat(ix, ",")
    if g.stack and s then named = named and table.concat(g.stack:frames(), "|") == table.concat(s:frames(), "|") end
  end
  table.sort(out)
  return out, named
end

local splits, rounds = 0, 60
local agree, names, filters = true, true, true
for seed = 1, rounds do
  local rnd = lcg(seed * 7919)
  local path = T.tmpname(".etl")
  write(rnd, path)
  local t <close> = assert(heapscript.open(path))
  local A = t:allocations { kind = "heap" }
  local want, text = model(A, "stack")
  local wantf = model(A, "free_stack")
  local got, named = grouped(A, "stack")
  local gotf, namedf = grouped(A, "free_stack")
  local same = #want == #got and #wantf == #gotf
  for i = 1, #want do same = same and want[i] == got[i] end
  for i = 1, #wantf do same = same and wantf[i] == gotf[i] end
  if not same then
    agree = false
    T.check(false, "seed " .. seed .. ": groups as the model's", table.concat(want, " ") .. "\n  got " .. table.concat(got, " ")
      .. "\n  free " .. table.concat(wantf, " ") .. "\n  got " .. table.concat(gotf, " "))
  end
  names = names and named and namedf
  for _, g in ipairs(A:group("stack")) do if g.key >= 2^32 then splits = splits + 1 end end
  for _, pat in ipairs { "b%.exe", "p2", "common", "drv" } do
    local n = 0
    for _, tx in pairs(text) do if tx:find(pat) then n = n + 1 end end
    local m = #t:allocations { kind = "heap", stack = pat }
    if m ~= n then
      filters = false
      T.check(false, ("seed %d: stack filter %q"):format(seed, pat), ("%d records, the model %d"):format(m, n))
    end
  end
end
check(agree, ("group('stack') and group('free_stack') as the model's on %d random traces"):format(rounds))
check(names, "each group named as its first record's stack")
check(filters, "the stack filter selects what the model's texts hold")
check(splits >= 10, "the random traces split stacks (keys of other programs)", splits)
check(eras >= 10, "... and name one stack id two ways in one process (eras): " .. eras, eras)

return T.done("test_stackplace")
