-- make_examples.lua -- regenerates the example traces and their symbol maps:
--
--   examples/memorytestapp.etl, .sym   heap leak, VirtualAlloc step and spikes
--   examples/notmyfault.etl, .sym      nonpaged pool leak (tag "Leak")
--   examples/memorytestapp-fixed.etl, .sym    the next build of MemoryTestApp: the leak fixed
--   examples/memorytestapp-newleak.etl, .sym  the next build: the old leak and a new one
--   (the baselines of `heapscript diff` and `policy --baseline`)
--
-- MemoryTestApp.exe is a real image: its stacks are at the real return
-- addresses of examples/MemoryTestApp.exe, read from
-- examples/memorytestapp/layout.txt (written by build.lua from the
-- executable and its PDB), and the trace carries the image's DbgID_RSDS
-- record, so heapscript names those frames from examples/MemoryTestApp.pdb.
-- The system DLLs stay made up and named by the .sym map.
--
-- Run from the top of the tree:  ./heapscript examples/make_examples.lua [-- OUTDIR]
-- (OUTDIR defaults to the directory of this script).  The output depends on
-- nothing but this file and the writer: the random numbers come from a
-- fixed-seed generator below, and the logfile header names a fixed file,
-- so tests/lua/test_writer.lua can regenerate the files into a temporary
-- directory and require them to be byte-identical to the shipped ones.
-- examples/README.md documents the scenarios and their exact ground truth;
-- change it together with this file.

local outdir = arg[1] or (arg[0]:match("^(.*)[/\\][^/\\]*$") or ".")

---------------------------------------------------------------- helpers

-- xorshift64*: the same numbers on every platform and Lua build.
local function prng(seed)
  local s = seed
  return function(n)          -- uniform integer in [0, n)
    s = s ~ (s >> 12)
    s = s ~ (s << 25)
    s = s ~ (s >> 27)
    local x = (s * 0x2545F4914F6CDD1D) >> 11
    return x % n
  end
end

-- A module: functions by name with their RVA and size; frames are
-- addresses base + rva + offset, checked to fall inside the function.
local function module(name, base, size, path, funcs)
  local m = { name = name, base = base, size = size, path = path, funcs = funcs, fn = {} }
  for _, f in ipairs(funcs) do
    assert(f[2] + f[3] <= size, name .. "!" .. f[1] .. " outside the image")
    m.fn[f[1]] = f
  end
  return m
end

local function frame(m, fname, off)
  local f = assert(m.fn[fname], m.name .. " has no function " .. fname)
  if m.calls and off ~= 0 then
    -- a real image: the return address of a call in the function: the call
    -- to the function named `off`, or the off-th call (1-based, in code
    -- order) for calls through a register
    for k, c in ipairs(assert(m.calls[fname], m.name .. "!" .. fname .. " makes no call")) do
      if c.callee == off or k == off then return m.base + c.ret end
    end
    error(("%s!%s has no call %s"):format(m.name, fname, tostring(off)))
  end
  assert(off >= 0 and off < f[3], ("%s!%s+0x%x is outside the function"):format(m.name, fname, off))
  return m.base + f[2] + off
end

-- examples/memorytestapp/layout.txt: the real image's functions, call sites and PDB identity.
local function read_layout(path)
  local L = { funcs = {}, calls = {} }
  for line in assert(io.lines(path)) do
    local kind, rest = line:match("^(%a+) (.*)$")
    if kind == "image" then
      L.size = tonumber(rest)
    elseif kind == "rsds" then
      L.guid, L.age, L.pdb = rest:match("^(%S+) (%d+) (.+)$")
      L.age = tonumber(L.age)
    elseif kind == "func" then
      local name, rva, size = rest:match("^(%S+) (%S+) (%S+)$")
      L.funcs[#L.funcs + 1] = { name, tonumber(rva), tonumber(size) }
    elseif kind == "call" then
      local caller, callee, ret = rest:match("^(%S+) (%S+) (%S+)$")
      L.calls[caller] = L.calls[caller] or {}
      table.insert(L.calls[caller], { callee = callee, ret = tonumber(ret) })
    end
  end
  return L
end

-- KernelTraceControl DbgID_RSDS (ETL-FORMAT.md §6.8): ImageBase, ProcessId, GUID, Age, PDB name.
local KTC = "b3e675d7-2554-4f18-830b-2762732560de"
local function rsds_payload(base, pid, guid, age, name)
  local h = guid:gsub("-", "")
  local d4 = {}
  for i = 17, 31, 2 do d4[#d4 + 1] = string.char(tonumber(h:sub(i, i + 1), 16)) end
  return string.pack("<I8I4I4I2I2", base, pid, tonumber(h:sub(1, 8), 16), tonumber(h:sub(9, 12), 16),
                     tonumber(h:sub(13, 16), 16)) .. table.concat(d4) .. string.pack("<I4z", age, name)
end

-- A stack from {module, function, offset} triples, innermost first.
local function stack(spec)
  local t = {}
  for i, s in ipairs(spec) do t[i] = frame(s[1], s[2], s[3]) end
  return t
end

local function write_sym(path, title, modules)
  local f = assert(io.open(path, "wb"))
  f:write("# ", title, "\n")
  f:write("# format: MODULE RVA SIZE NAME (hex RVA and size; engine/symmap.h)\n")
  for _, m in ipairs(modules) do
    if m.rsds then goto continue end    -- a real image: named by its PDB
    local list = {}
    for i, fn in ipairs(m.funcs) do list[i] = fn end
    table.sort(list, function(a, b) return a[2] < b[2] end)
    f:write("\n")
    for _, fn in ipairs(list) do
      f:write(("%-18s %08x %06x %s\n"):format(m.name, fn[2], fn[3], fn[1]))
    end
    ::continue::
  end
  assert(f:close())
end

-- Event times on a grid of G ticks, each slot used once, so that any two
-- events are at least G ticks apart and a stack written STACK ticks after
-- its event never lands after the next record of the CPU it goes to.
local G = 50
local function timeline()
  local used = {}
  return function(t, exact)     -- ticks relative to the trace start
    local k = t // G
    if exact then
      assert(t % G == 0 and not used[k], "fixed event time taken or off the grid: " .. t)
    else
      while used[k] do k = k + 1 end
    end
    used[k] = true
    return k * G
  end
end

-- Counting wrapper around a heapscript.Writer, for the summary.
local function counted(w)
  local n = {}
  local c = setmetatable({ counts = n }, { __index = function(_, k)
    return function(_, t)
      local key = k .. ":" .. tostring(t.op)
      n[key] = (n[key] or 0) + 1
      if t.stack then n.stack = (n.stack or 0) + 1 end
      return assert(w[k](w, t))
    end
  end })
  c.close = function() return assert(w:close()) end
  return c
end

local function summary(name, c, lines)
  print(name .. ":")
  local keys = {}
  for k in pairs(c.counts) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do print(("  %-20s %d"):format(k, c.counts[k])) end
  for _, l in ipairs(lines) do print("  " .. l) end
end

local MiB = 1024 * 1024

---------------------------------------------------- memorytestapp.etl

-- Microsoft's "Track User Mode Process Allocations" exercise: one x64
-- process, MemoryTestApp.exe, traced for 20 s with heap tracing, VirtualAlloc
-- and stacks, merged and compressed (XPRESS) as `xperf -merge -compress` does.
--
-- variant: nil for the example itself; "fixed" or "newleak" for the next
-- build of the app, rebuilt (its functions moved 0x40 bytes, the image
-- loaded elsewhere, the call sites of the leak at other offsets), so that
-- only names, never addresses or offsets, match the first build's stacks.
-- "fixed" frees the 319 blocks 30 ms after allocating them; "newleak"
-- keeps the old leak and adds CacheRecord, which keeps a 96-byte block
-- every 250 ms from 2 s.  Nothing else changes but times of the balanced
-- traffic by a few ticks where slots are taken.
local function memorytestapp(variant)
  local T0 = 72000000000                    -- QPC at the trace start: 2 h of uptime at 10 MHz
  local SEC = 10000000
  local PID, MAIN, WORKER = 5812, 5816, 7240
  local HEAP = 0x0000023A5A3F0000

  local layout = read_layout((arg[0]:match("^(.*)[/\\][^/\\]*$") or ".") .. "/memorytestapp/layout.txt")
  local funcs, calls, base, size = layout.funcs, layout.calls, 0x00007FF6A1B40000, layout.size
  if variant then
    -- the next build: every function 0x40 further on, loaded elsewhere, and
    -- (for "newleak") CacheRecord after the last function, called from Main;
    -- its PDB is not shipped, so its .sym names it
    local top = 0
    funcs, calls = {}, {}
    for i, f in ipairs(layout.funcs) do
      funcs[i] = { f[1], f[2] + 0x40, f[3] }
      top = math.max(top, f[2] + 0x40 + f[3])
    end
    for fn, l in pairs(layout.calls) do
      calls[fn] = {}
      for k, c in ipairs(l) do calls[fn][k] = { callee = c.callee, ret = c.ret + 0x40 } end
    end
    local cache = (top + 0xF) & ~0xF
    funcs[#funcs + 1] = { "CacheRecord", cache, 0x80 }
    calls.CacheRecord = { { callee = "HeapAlloc", ret = cache + 0x3C } }
    for _, c in ipairs(calls.Main) do
      if c.callee == "InnerLoopOperation" then
        table.insert(calls.Main, { callee = "CacheRecord", ret = c.ret + 0xC })
        break
      end
    end
    base, size = 0x00007FF7B2C50000, size + 0x1000
  end
  local app = module("MemoryTestApp.exe", base, size,
    "\\Device\\HarddiskVolume3\\Users\\tester\\source\\MemoryTestApp\\x64\\Release\\MemoryTestApp.exe",
    funcs)
  app.calls = calls
  app.rsds = not variant and layout or nil
  local ntdll = module("ntdll.dll", 0x00007FFB8E3A0000, 0x1F8000,
    "\\Device\\HarddiskVolume3\\Windows\\System32\\ntdll.dll", {
      { "RtlUserThreadStart", 0x52630, 0x50 },
      { "RtlFreeHeap", 0x2D8C0, 0x110 },
      { "RtlAllocateHeap", 0x3A6F0, 0xB0 },
      { "RtlpAllocateHeapInternal", 0x3A7A0, 0xE60 },
      { "NtAllocateVirtualMemory", 0x9D2B0, 0x20 },
      { "NtFreeVirtualMemory", 0x9D370, 0x20 },
    })
  local kernelbase = module("KernelBase.dll", 0x00007FFB8BC80000, 0x2C8000,
    "\\Device\\HarddiskVolume3\\Windows\\System32\\KernelBase.dll", {
      { "VirtualFree", 0x29A80, 0x90 },
      { "VirtualAlloc", 0x2C4E0, 0xA0 },
    })
  local kernel32 = module("kernel32.dll", 0x00007FFB8D5F0000, 0xBD000,
    "\\Device\\HarddiskVolume3\\Windows\\System32\\kernel32.dll", {
      { "BaseThreadInitThunk", 0x17020, 0x30 },
    })
  -- made-up PDB identities of the system DLLs: their PDBs are not shipped
  ntdll.pdb_guid, ntdll.pdb_name = "1EB9FACB-04EA-273B-B4BA-52C8D4BE6B0D", "ntdll.pdb"
  kernelbase.pdb_guid, kernelbase.pdb_name = "7A9F1C1E-43D3-4C2B-9E63-4F0A8E8D5B21", "kernelbase.pdb"
  kernel32.pdb_guid, kernel32.pdb_name = "C3E7B0A2-5D61-4E87-A1F4-0B96D2C47E18", "kernel32.pdb"
  local modules = { app, ntdll, kernelbase, kernel32 }

  -- stacks, innermost first
  -- app frames: { app, function, k } is the return address of the k-th call in the function
  local main_tail = { { app, "invoke_main", "Main" }, { app, "__scrt_common_main_seh", "invoke_main" },
                      { app, "mainCRTStartup", "__scrt_common_main_seh" },
                      { kernel32, "BaseThreadInitThunk", 0x14 }, { ntdll, "RtlUserThreadStart", 0x21 } }
  local worker_tail = { { app, "WorkerThreadProc", "ProcessWorkItem" },
                        { kernel32, "BaseThreadInitThunk", 0x14 }, { ntdll, "RtlUserThreadStart", 0x21 } }
  local heap_head = { { ntdll, "RtlpAllocateHeapInternal", 0x35C }, { ntdll, "RtlAllocateHeap", 0x3E } }
  local function build(head, middle, tail)
    local s = {}
    for _, p in ipairs({ head, middle, tail }) do for _, f in ipairs(p) do s[#s + 1] = f end end
    return stack(s)
  end
  local valloc_head = { { ntdll, "NtAllocateVirtualMemory", 0x14 }, { kernelbase, "VirtualAlloc", 0x5C } }
  local vfree_head = { { ntdll, "NtFreeVirtualMemory", 0x14 }, { kernelbase, "VirtualFree", 0x3E } }
  local steady_stack = build(valloc_head, { { app, "InitSteadyState", "VirtualAlloc" }, { app, "Main", "InitSteadyState" } }, main_tail)
  local step_stack = build(valloc_head, { { app, "StepUpMemory", "VirtualAlloc" }, { app, "Main", "StepUpMemory" } }, main_tail)
  local spike_alloc_stack = build(valloc_head, { { app, "ManipulateTemporaryBuffer", "VirtualAlloc" },
                                                 { app, "Operation1", "ManipulateTemporaryBuffer" },
                                                 { app, "Main", "Operation1" } }, main_tail)
  local spike_free_stack = build(vfree_head, { { app, "ManipulateTemporaryBuffer", "VirtualFree" },
                                               { app, "Operation1", "ManipulateTemporaryBuffer" },
                                               { app, "Main", "Operation1" } }, main_tail)
  local leak_stack = build(heap_head, { { app, "InnerLoopOperation", "HeapAlloc" }, { app, "Main", "InnerLoopOperation" } }, main_tail)
  -- call sites of the balanced heap traffic: {thread, stack, weight}
  local sites = {}
  local function site(tid, middle, weight)
    sites[#sites + 1] = { tid = tid, stack = build(heap_head, middle, tid == MAIN and main_tail or worker_tail),
                          weight = weight }
  end
  site(MAIN, { { app, "ParseRecord", 1 }, { app, "Main", "ParseRecord" } }, 6)
  site(MAIN, { { app, "ParseRecord", 2 }, { app, "Main", "ParseRecord" } }, 3)
  site(MAIN, { { app, "FormatReport", 1 }, { app, "Main", "FormatReport" } }, 4)
  site(MAIN, { { app, "FormatReport", 2 }, { app, "Main", "FormatReport" } }, 2)
  site(WORKER, { { app, "BuildLookupTable", 1 }, { app, "ProcessWorkItem", "BuildLookupTable" } }, 5)
  site(WORKER, { { app, "BuildLookupTable", 2 }, { app, "ProcessWorkItem", "BuildLookupTable" } }, 3)
  site(WORKER, { { app, "BuildLookupTable", 3 }, { app, "ProcessWorkItem", "BuildLookupTable" } }, 1)
  site(WORKER, { { app, "CopyWorkItem", "HeapAlloc" }, { app, "ProcessWorkItem", "CopyWorkItem" } }, 4)
  local total_weight = 0
  for _, s in ipairs(sites) do total_weight = total_weight + s.weight end
  local sizes = { 16, 24, 32, 40, 48, 64, 96, 128, 200, 256, 512, 1024, 2048, 4000 }

  local rnd = prng(0x4D656D5465737441)      -- "MemTestA"
  local at = timeline()
  local ev = {}
  local function add(e) ev[#ev + 1] = e end

  -- VirtualAlloc: steady commit, the step halfway, ten transient spikes
  local A_STEADY, A_STEP, A_SPIKE = 0x0000023A5C200000, 0x0000023A5CC00000, 0x0000023A5E000000
  add { ts = at(SEC // 2, true), kind = "virtual", op = "alloc", addr = A_STEADY, size = 10 * MiB, stack = steady_stack }
  add { ts = at(10 * SEC, true), kind = "virtual", op = "alloc", addr = A_STEP, size = 10 * MiB, stack = step_stack }
  for k = 0, 9 do
    local t = 155 * SEC // 100 + k * 19 * SEC // 10
    add { ts = at(t, true), kind = "virtual", op = "alloc", addr = A_SPIKE, size = 10 * MiB, stack = spike_alloc_stack }
    add { ts = at(t + SEC // 10, true), kind = "virtual", op = "free", addr = A_SPIKE, size = 10 * MiB,
          stack = spike_free_stack }
  end
  -- 319 leaked 40-byte blocks, one every 60 ms from 0.3 s
  for i = 0, 318 do
    local t = 3 * SEC // 10 + i * 600000
    add { ts = at(t, true), kind = "halloc", size = 40, addr = 0x0000023A5A4A1010 + i * 0x30,
          tid = MAIN, stack = leak_stack }
    if variant == "fixed" then
      add { ts = at(t + 300000), kind = "hfree", addr = 0x0000023A5A4A1010 + i * 0x30, size = 40, tid = MAIN }
    end
  end
  if variant == "newleak" then
    local cache_stack = build(heap_head, { { app, "CacheRecord", "HeapAlloc" }, { app, "Main", "CacheRecord" } }, main_tail)
    for j = 0, 71 do
      add { ts = at(2 * SEC + j * SEC // 4), kind = "halloc", size = 96, addr = 0x0000023A5A4B9010 + j * 0x70,
            tid = MAIN, stack = cache_stack }
    end
  end
  -- balanced traffic: 4681 blocks, all freed before 19.9 s
  for pair = 1, 4681 do
    local w = rnd(total_weight)
    local s
    for _, x in ipairs(sites) do
      if w < x.weight then s = x break end
      w = w - x.weight
    end
    -- one call to rnd per statement: Lua leaves the order of operands open
    local f = rnd(8)
    local life = 2000 + f * rnd(250000)                   -- 0.2 ms .. ~175 ms
    local ta = at(2 * SEC // 10 + rnd(195 * SEC // 10 - life))
    local size = sizes[1 + rnd(#sizes)]
    add { ts = ta, kind = "halloc", pair = pair, size = size, tid = s.tid, stack = s.stack }
    add { ts = at(ta + life), kind = "hfree", pair = pair, tid = s.tid }
  end
  table.sort(ev, function(a, b) return a.ts < b.ts end)

  local name = "memorytestapp" .. (variant and ("-" .. variant) or "")
  local w = counted(assert(heapscript.writer(outdir .. "/" .. name .. ".etl", {
    cpus = 4, os_build = 19045, perf_freq = SEC, start_time = 133232598000000000, start_ticks = T0,
    compress = "xpress", logger_name = "Relogger",
    log_file_name = "C:\\Users\\tester\\traces\\" .. name .. ".etl",
  })))

  -- rundown at the start
  local rt = T0 + 1000
  local function r() rt = rt + G return rt end
  w:process { op = "dcstart", pid = PID, ppid = 3904, ts = r(), name = "MemoryTestApp.exe",
              cmdline = "\"C:\\Users\\tester\\source\\MemoryTestApp\\x64\\Release\\MemoryTestApp.exe\"" }
  w:thread { op = "dcstart", pid = PID, tid = MAIN, ts = r(), start = frame(app, "mainCRTStartup", 0) }
  w:thread { op = "dcstart", pid = PID, tid = WORKER, ts = r(), start = frame(app, "WorkerThreadProc", 0) }
  for _, m in ipairs(modules) do
    local ts = r()
    w:image { op = "dcstart", pid = PID, base = m.base, size = m.size, ts = ts, path = m.path }
    -- the PDB identity, as the merge step adds it beside the image record (§6.8)
    local id = m.rsds or { guid = m.pdb_guid, age = 1, pdb = m.pdb_name }
    if id.guid then
      w:mof { provider = KTC, opcode = 36, version = 2, pid = PID, tid = MAIN, ts = ts,
              payload = rsds_payload(m.base, PID, id.guid, id.age, id.pdb) }
    end
  end

  -- the events, addresses of the balanced traffic given in time order
  -- (LIFO reuse of freed slots, as a heap does)
  local free_slots, nslots, pair_addr = {}, 0, {}
  local live, peak, peak_ts, bal_bytes = 0, 0, 0, 0
  local vlive, vpeak, vpeak_ts = 0, 0, 0
  for _, e in ipairs(ev) do
    local ts, cpu = T0 + e.ts, rnd(4)
    if e.kind == "virtual" then
      w:virtual { op = e.op, pid = PID, tid = MAIN, ts = ts, addr = e.addr, size = e.size,
                  flags = e.op == "alloc" and { "commit", "reserve" } or { "release" }, cpu = cpu, stack = e.stack }
      vlive = vlive + (e.op == "alloc" and e.size or -e.size)
      if vlive > vpeak then vpeak, vpeak_ts = vlive, e.ts end
    elseif e.kind == "halloc" then
      local addr = e.addr
      if not addr then
        addr = table.remove(free_slots)
        if not addr then
          addr = 0x0000023A5A600000 + nslots * 0x1010
          nslots = nslots + 1
        end
        pair_addr[e.pair] = { addr, e.size }
        bal_bytes = bal_bytes + e.size
      end
      w:heap { op = "alloc", pid = PID, tid = e.tid, ts = ts, heap = HEAP, addr = addr, size = e.size, source = 2,
               cpu = cpu, stack = e.stack }
      live = live + e.size
      if live > peak then peak, peak_ts = live, e.ts end
    elseif e.addr then                    -- a fixed leak: the block freed, its slot not reused
      w:heap { op = "free", pid = PID, tid = e.tid, ts = ts, heap = HEAP, addr = e.addr, source = 2, cpu = cpu }
      live = live - e.size
    else
      local a = pair_addr[e.pair]
      w:heap { op = "free", pid = PID, tid = e.tid, ts = ts, heap = HEAP, addr = a[1], source = 2, cpu = cpu }
      free_slots[#free_slots + 1] = a[1]
      live = live - a[2]
    end
  end

  -- rundown at the stop
  rt = T0 + 20 * SEC
  w:process { op = "dcend", pid = PID, ppid = 3904, ts = r(), name = "MemoryTestApp.exe",
              cmdline = "\"C:\\Users\\tester\\source\\MemoryTestApp\\x64\\Release\\MemoryTestApp.exe\"" }
  w:thread { op = "dcend", pid = PID, tid = MAIN, ts = r(), start = frame(app, "mainCRTStartup", 0) }
  w:thread { op = "dcend", pid = PID, tid = WORKER, ts = r(), start = frame(app, "WorkerThreadProc", 0) }
  for _, m in ipairs(modules) do
    w:image { op = "dcend", pid = PID, base = m.base, size = m.size, ts = r(), path = m.path }
  end
  w:close()
  write_sym(outdir .. "/" .. name .. ".sym", name .. ".sym -- symbols for " .. name .. ".etl", modules)
  summary(name .. ".etl", w, {
    ("balanced heap traffic: %d bytes in 4681 blocks, %d address slots"):format(bal_bytes, nslots),
    ("heap outstanding peak: %d bytes at %d ticks after the start"):format(peak, peak_ts),
    ("VirtualAlloc commit peak: %d bytes at %d ticks after the start"):format(vpeak, vpeak_ts),
  })
end

------------------------------------------------------- notmyfault.etl

-- Sysinternals NotMyFault leaking nonpaged pool through its driver
-- myfault.sys at 1 MiB a second (16 allocations of 64 KiB, tag "Leak"),
-- among balanced pool traffic of other tags; a kernel logger's own file
-- (NT Kernel Logger, not compressed).
local function notmyfault()
  local T0 = 54000000000                    -- 1.5 h of uptime at 10 MHz
  local SEC = 10000000
  local PID, UI, LEAKER = 6140, 6144, 6412
  local SYS_FILE, SYS_MMST = 212, 380

  local nt = module("ntoskrnl.exe", 0xFFFFF80547A00000, 0x1046000, "\\SystemRoot\\system32\\ntoskrnl.exe", {
    { "ExFreeHeapPool", 0x25C6A0, 0x4F0 },
    { "ExAllocateHeapPool", 0x25CB90, 0x9A0 },
    { "ExAllocatePoolWithTag", 0x9B1030, 0x90 },
    { "IofCallDriver", 0x2F4B20, 0x70 },
    { "IoAllocateIrpEx", 0x2E1D90, 0x2A0 },
    { "IopSynchronousServiceTail", 0x6D1F40, 0x250 },
    { "IopXxxControlFile", 0x6D2190, 0xD30 },
    { "NtDeviceIoControlFile", 0x6D2EC0, 0x60 },
    { "ObpAllocateObject", 0x6F5A10, 0x4C0 },
    { "ObCreateObjectEx", 0x6F5ED0, 0x1F0 },
    { "IopAllocRealFileObject", 0x6F7C20, 0x180 },
    { "IopParseDevice", 0x6F8A40, 0x1820 },
    { "ObpLookupObjectName", 0x6FB2A0, 0xB80 },
    { "ObOpenObjectByNameEx", 0x6FC560, 0x2A0 },
    { "IopCreateFile", 0x6FD1B0, 0x8C0 },
    { "IoCreateFileEx", 0x6FDA70, 0x110 },
    { "MiAllocatePrototypePtes", 0x7A3E40, 0x210 },
    { "MiCreateDataFileMap", 0x7A4050, 0x3A0 },
    { "MiCreateNewSection", 0x7A43F0, 0x5E0 },
    { "MmCreateSection", 0x7A49D0, 0x230 },
    { "ExpWorkerThread", 0x2A5E80, 0x3C0 },
    { "PspSystemThreadStartup", 0x355F30, 0x60 },
    { "KiStartSystemThread", 0x403AC0, 0x30 },
    { "KiSystemServiceCopyEnd", 0x40F5B0, 0x40 },
  })
  local myfault = module("myfault.sys", 0xFFFFF8055D4A0000, 0x9000,
    "\\??\\C:\\Tools\\Sysinternals\\myfault.sys", {
      { "MyfaultDeviceControl", 0x1010, 0x2D0 },
      { "MyfaultLeakPool", 0x12E0, 0x80 },
      { "DriverEntry", 0x5000, 0x120 },
    })
  local app = module("NotMyFault64.exe", 0x00007FF7C2D10000, 0x6A000,
    "\\Device\\HarddiskVolume3\\Tools\\Sysinternals\\NotMyFault64.exe", {
      { "LeakThreadProc", 0x3A40, 0xE0 },
      { "WinMain", 0x1200, 0x3A0 },
    })
  local ntdll = module("ntdll.dll", 0x00007FFC6A1E0000, 0x1F8000,
    "\\Device\\HarddiskVolume3\\Windows\\System32\\ntdll.dll", {
      { "RtlUserThreadStart", 0x52630, 0x50 },
      { "NtDeviceIoControlFile", 0x9CF30, 0x20 },
    })
  local kernelbase = module("KernelBase.dll", 0x00007FFC67AC0000, 0x2C8000,
    "\\Device\\HarddiskVolume3\\Windows\\System32\\KernelBase.dll", {
      { "DeviceIoControl", 0x3B8F0, 0x110 },
    })
  local kernel32 = module("kernel32.dll", 0x00007FFC68F30000, 0xBD000,
    "\\Device\\HarddiskVolume3\\Windows\\System32\\kernel32.dll", {
      { "BaseThreadInitThunk", 0x17020, 0x30 },
      { "DeviceIoControlImplementation", 0x1B7A0, 0xB0 },
    })
  local kernel_images = { nt, myfault }
  local user_images = { app, ntdll, kernelbase, kernel32 }

  local pool_head = { { nt, "ExAllocateHeapPool", 0x2F2 }, { nt, "ExAllocatePoolWithTag", 0x5D } }
  local ioctl = { { nt, "IopXxxControlFile", 0x62A }, { nt, "NtDeviceIoControlFile", 0x56 },
                  { nt, "KiSystemServiceCopyEnd", 0x25 }, { ntdll, "NtDeviceIoControlFile", 0x14 },
                  { kernelbase, "DeviceIoControl", 0x6B }, { kernel32, "DeviceIoControlImplementation", 0x81 },
                  { app, "LeakThreadProc", 0x9E }, { kernel32, "BaseThreadInitThunk", 0x14 },
                  { ntdll, "RtlUserThreadStart", 0x21 } }
  local system_tail = { { nt, "ExpWorkerThread", 0x105 }, { nt, "PspSystemThreadStartup", 0x55 },
                        { nt, "KiStartSystemThread", 0x28 } }
  local function build(...)
    local s = {}
    for _, p in ipairs({ ... }) do for _, f in ipairs(p) do s[#s + 1] = f end end
    return stack(s)
  end
  local leak_stack = build(pool_head, { { myfault, "MyfaultLeakPool", 0x3B }, { myfault, "MyfaultDeviceControl", 0x11A },
                                        { nt, "IofCallDriver", 0x55 }, { nt, "IopSynchronousServiceTail", 0x1A8 } },
                           ioctl)
  local irp_stack = build(pool_head, { { nt, "IoAllocateIrpEx", 0x8E } }, ioctl)
  local file_stacks = {}
  for i, off in ipairs({ 0x1C4, 0x2B9 }) do
    file_stacks[i] = build(pool_head, { { nt, "ObpAllocateObject", 0x134 }, { nt, "ObCreateObjectEx", 0xD2 },
                                        { nt, "IopAllocRealFileObject", 0x6A }, { nt, "IopParseDevice", 0x6B1 },
                                        { nt, "ObpLookupObjectName", off }, { nt, "ObOpenObjectByNameEx", 0x1FA },
                                        { nt, "IopCreateFile", 0x3FC }, { nt, "IoCreateFileEx", 0xE7 } },
                           system_tail)
  end
  local mmst_stack = build(pool_head, { { nt, "MiAllocatePrototypePtes", 0x48 }, { nt, "MiCreateDataFileMap", 0x1D3 },
                                        { nt, "MiCreateNewSection", 0x2E5 }, { nt, "MmCreateSection", 0x1A2 } },
                           system_tail)

  local rnd = prng(0x4E6F744D79466C74)      -- "NotMyFlt"
  local at = timeline()
  local ev = {}
  local function add(e) ev[#ev + 1] = e end

  -- the leak: 320 x 64 KiB nonpaged, tag Leak, every 62.5 ms from 0.25 s;
  -- each DeviceIoControl also allocates and frees an IRP around it
  for i = 0, 319 do
    local t = SEC // 4 + i * 625000
    add { ts = at(t - 150, true), kind = "alloc", tag = "Irp ", type = "nonpaged", size = 0x1C0, irp = i,
          pid = PID, tid = LEAKER, stack = irp_stack }
    add { ts = at(t, true), kind = "alloc", tag = "Leak", type = "nonpaged", size = 0x10000,
          entry = -0x3CF0BEE00000 + i * 0x10000, pid = PID, tid = LEAKER, stack = leak_stack }
    add { ts = at(t + 400, true), kind = "free", irp = i, pid = PID, tid = LEAKER }
  end
  -- balanced traffic of System worker threads
  local pair = 0
  local function traffic(n, tag, ptype, tid, sizes, stacks)
    for _ = 1, n do
      pair = pair + 1
      local f = rnd(6)
      local life = 500 + f * rnd(400000)
      local ta = at(SEC // 10 + rnd(20 * SEC - life - SEC // 10))
      local size = sizes[1 + rnd(#sizes)]
      local stk = stacks[1 + rnd(#stacks)]
      add { ts = ta, kind = "alloc", tag = tag, type = ptype, size = size, pair = pair,
            pid = 4, tid = tid, stack = stk }
      add { ts = at(ta + life), kind = "free", pair = pair, pid = 4, tid = tid }
    end
  end
  traffic(600, "File", "nonpagednx", SYS_FILE, { 0x158 }, file_stacks)
  traffic(400, "MmSt", "paged", SYS_MMST, { 0x80, 0x100, 0x1C0, 0x400, 0xC00, 0x2000 }, { mmst_stack })
  table.sort(ev, function(a, b) return a.ts < b.ts end)

  local w = counted(assert(heapscript.writer(outdir .. "/notmyfault.etl", {
    cpus = 4, os_build = 19045, perf_freq = SEC, start_time = 133232763000000000, start_ticks = T0,
    logger_name = "NT Kernel Logger", log_file_name = "C:\\Users\\tester\\traces\\notmyfault.etl",
  })))

  local rt = T0 + 1000
  local function r() rt = rt + G return rt end
  local function rundown(op)
    w:process { op = op, pid = 0, ppid = 0, ts = r(), name = "Idle" }
    w:process { op = op, pid = 4, ppid = 0, ts = r(), name = "System" }
    w:process { op = op, pid = PID, ppid = 4012, ts = r(), name = "NotMyFault64.exe",
                cmdline = "\"C:\\Tools\\Sysinternals\\NotMyFault64.exe\"" }
    w:thread { op = op, pid = 4, tid = SYS_FILE, ts = r(), start = frame(nt, "ExpWorkerThread", 0) }
    w:thread { op = op, pid = 4, tid = SYS_MMST, ts = r(), start = frame(nt, "ExpWorkerThread", 0) }
    w:thread { op = op, pid = PID, tid = UI, ts = r(), start = frame(app, "WinMain", 0) }
    w:thread { op = op, pid = PID, tid = LEAKER, ts = r(), start = frame(app, "LeakThreadProc", 0) }
    for _, m in ipairs(kernel_images) do
      w:image { op = op, pid = 0, base = m.base, size = m.size, ts = r(), path = m.path }
    end
    for _, m in ipairs(user_images) do
      w:image { op = op, pid = PID, base = m.base, size = m.size, ts = r(), path = m.path }
    end
  end
  rundown("dcstart")

  -- entries of the balanced traffic: LIFO reuse of freed ones, by pool
  local slots = { nonpagednx = { next = -0x3CF0C1000000, step = 0x160, free = {} },
                  nonpaged = { next = -0x3CF0C0800000, step = 0x1D0, free = {} },
                  paged = { next = -0x5A7F3E000000, step = 0x2010, free = {} } }
  local held = {}                   -- pair or irp -> {entry, tag, type, size}
  local live, peak, peak_ts = 0, 0, 0
  for _, e in ipairs(ev) do
    local ts, cpu = T0 + e.ts, rnd(4)
    if e.kind == "alloc" then
      local entry = e.entry
      if not entry then
        local s = slots[e.type]
        entry = table.remove(s.free)
        if not entry then entry = s.next; s.next = s.next + s.step end
        held[e.pair or ("irp" .. e.irp)] = { entry, e.tag, e.type, e.size }
      end
      -- as the kernel writes them: a PERFINFO header without ids; the
      -- StackWalk after the event names the process and thread
      w:pool { op = "alloc", pid = e.pid, tid = e.tid, ts = ts, tag = e.tag, type = e.type, size = e.size,
               entry = entry, cpu = cpu, stack = e.stack, header = "PERFINFO64" }
      live = live + e.size
      if live > peak then peak, peak_ts = live, e.ts end
    else
      local key = e.pair or ("irp" .. e.irp)
      local h = held[key]
      held[key] = nil
      w:pool { op = "free", pid = e.pid, tid = e.tid, ts = ts, tag = h[2], type = h[3], size = h[4],
               entry = h[1], cpu = cpu, header = "PERFINFO64" }
      local s = slots[h[3]]
      s.free[#s.free + 1] = h[1]
      live = live - h[4]
    end
  end

  rt = T0 + 205 * SEC // 10
  rundown("dcend")
  w:close()
  local all = {}
  for _, m in ipairs(kernel_images) do all[#all + 1] = m end
  for _, m in ipairs(user_images) do all[#all + 1] = m end
  write_sym(outdir .. "/notmyfault.sym", "notmyfault.sym -- symbols for notmyfault.etl", all)
  summary("notmyfault.etl", w, {
    ("pool outstanding peak: %d bytes at %d ticks after the start"):format(peak, peak_ts),
  })
end

memorytestapp()
notmyfault()
memorytestapp("fixed")
memorytestapp("newleak")
