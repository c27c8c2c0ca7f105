-- gen_heap.lua -- a large synthetic heap trace for `make bench`.
--
--   heapscript tests/bench/gen_heap.lua -- PATH [EVENTS [COMPRESS [CPUS]]]
--
-- EVENTS heap events (allocations plus frees; default 5,000,000), each
-- allocation followed by its StackWalk record, so the file holds about
-- 1.5 x EVENTS records.  One 64-bit process (pid 3100) with four threads
-- on four CPUs, images in rundown, 10 MHz QPC, about 3 us between events.
-- Traffic: a table of 4096 block slots, each step picks a slot at random
-- and frees the block in it or allocates one into it, so about 2048
-- blocks are live at any time and every freed address is reused; one
-- allocation in 1000 is leaked (never freed, outside the slots).  The
-- last events free every block still in a slot, so exactly the leaked
-- blocks are outstanding at the end.  Sizes 8..4096 bytes; 320 distinct
-- allocation stacks of 6 to 25 frames.
-- COMPRESS is xpress, lznt1 or xpress_huff (default and "none": none).
-- CPUS (default 4): one thread on each CPU, each event on one at random,
-- as a many-core machine's trace has its events in as many streams; the
-- same traffic (and the same file with 4).
--
-- The generator streams: memory stays constant whatever EVENTS is (the
-- writer keeps one buffer per CPU; this script a few tables it reuses),
-- and it prints what it wrote, as "events=N allocs=N frees=N leaked=N
-- stacks=N records=N bytes=N seconds=S".

local path = arg[1]
local nevents = math.tointeger(tonumber(arg[2] or "5000000"))
local compress = arg[3] ~= "none" and arg[3] or nil
local ncpus = math.tointeger(tonumber(arg[4] or "4"))
if not path or not nevents or nevents < 0 or not ncpus or ncpus < 1 or ncpus > 256 then
  io.stderr:write("usage: heapscript tests/bench/gen_heap.lua -- PATH [EVENTS [COMPRESS [CPUS]]]\n")
  return 2
end

local t0 = os.clock()
local SEC = 10000000
local T0 = 36000000000
local PID, HEAP = 3100, 0x000001D7A0000000
local TIDS = { 3104, 3188, 4020, 4452 }
for i = 5, ncpus do TIDS[i] = 4452 + 4 * (i - 4) end
for i = ncpus + 1, 4 do TIDS[i] = nil end
local SLOTS, SLOT_BASE, LEAK_BASE = 4096, 0x000001D7A1000000, 0x000001D7B0000000

-- xorshift64*, fixed seed: the same file every run
local s = 0x6865617073637269
local function rnd(n)
  s = s ~ (s >> 12)
  s = s ~ (s << 25)
  s = s ~ (s >> 27)
  return ((s * 0x2545F4914F6CDD1D) >> 11) % n
end

local images = {
  { base = 0x00007FF612340000, size = 0x80000, path = "\\Device\\HarddiskVolume3\\bench\\heapbench.exe" },
  { base = 0x00007FFB8E3A0000, size = 0x1F8000, path = "\\Device\\HarddiskVolume3\\Windows\\System32\\ntdll.dll" },
  { base = 0x00007FFB8D5F0000, size = 0xBD000, path = "\\Device\\HarddiskVolume3\\Windows\\System32\\kernel32.dll" },
  { base = 0x00007FFB8BC80000, size = 0x2C8000, path = "\\Device\\HarddiskVolume3\\Windows\\System32\\KernelBase.dll" },
  { base = 0x00007FFB8B900000, size = 0x100000, path = "\\Device\\HarddiskVolume3\\Windows\\System32\\ucrtbase.dll" },
}

-- 320 stacks: ntdll heap frames, ucrtbase malloc, 2..21 application frames,
-- the thread start frames
local stacks = {}
for i = 1, 320 do
  local app, nt, k32, crt = images[1], images[2], images[3], images[5]
  local st = { nt.base + 0x3A7A0 + 0x35C, nt.base + 0x3A6F0 + 0x3E, crt.base + 0x1B0A0 + 0x19 }
  for _ = 1, 2 + rnd(20) do st[#st + 1] = app.base + 0x1000 + rnd(0x7E000) end
  st[#st + 1] = k32.base + 0x17020 + 0x14
  st[#st + 1] = nt.base + 0x52630 + 0x21
  stacks[i] = st
end

local w = assert(heapscript.writer(path, {
  cpus = #TIDS, start_ticks = T0, compress = compress, logger_name = "heapscript bench",
  log_file_name = "C:\\bench\\heap.etl",
}))

local ts = T0 + 1000
assert(w:process { op = "dcstart", pid = PID, ppid = 1000, ts = ts, name = "heapbench.exe", cmdline = "heapbench.exe" })
for i, tid in ipairs(TIDS) do
  ts = ts + 10
  assert(w:thread { op = "dcstart", pid = PID, tid = tid, ts = ts, start = images[1].base + 0x1000 * i })
end
for _, m in ipairs(images) do
  ts = ts + 10
  assert(w:image { op = "dcstart", pid = PID, base = m.base, size = m.size, ts = ts, path = m.path })
end

-- one table per kind, reused for every call: no garbage per event
local A = { op = "alloc", pid = PID, tid = 0, ts = 0, heap = HEAP, addr = 0, size = 0, source = 2, cpu = 0,
            stack = stacks[1] }
local F = { op = "free", pid = PID, tid = 0, ts = 0, heap = HEAP, addr = 0, source = 2, cpu = 0 }
local slot_tid = {}                  -- 0: empty, else the index of the allocating thread
for i = 1, SLOTS do slot_tid[i] = 0 end
local allocs, frees, leaked, live = 0, 0, 0, 0
ts = T0 + SEC // 10

local function free(i)
  local k = slot_tid[i] - 1
  ts = ts + 20 + rnd(40)
  F.ts, F.tid, F.cpu, F.addr = ts, TIDS[k + 1], k, SLOT_BASE + (i - 1) * 0x1000
  assert(w:heap(F))
  slot_tid[i] = 0
  frees = frees + 1
  live = live - 1
end

-- every live block will take one more event (its free at the end), so
-- run while that total is short of nevents; the last allocation, when
-- only one event is left, is a leak
while allocs + frees + live < nevents do
  local i = 1 + rnd(SLOTS)
  if slot_tid[i] ~= 0 then
    free(i)
  else
    local k = rnd(#TIDS)
    local size = 8 + rnd(4089)
    ts = ts + 20 + rnd(40)
    A.ts, A.tid, A.cpu, A.size = ts, TIDS[k + 1], k, size
    A.stack = stacks[1 + rnd(#stacks)]
    if rnd(1000) == 0 or allocs + frees + live + 1 == nevents then
      A.addr = LEAK_BASE + leaked * 0x1010
      leaked = leaked + 1
    else
      A.addr = SLOT_BASE + (i - 1) * 0x1000
      slot_tid[i] = k + 1
      live = live + 1
    end
    assert(w:heap(A))
    allocs = allocs + 1
  end
end
for i = 1, SLOTS do
  if slot_tid[i] ~= 0 then free(i) end
end

ts = ts + SEC // 10
assert(w:process { op = "dcend", pid = PID, ppid = 1000, ts = ts, name = "heapbench.exe", cmdline = "heapbench.exe" })
local st = w:stats()
assert(w:close())
local f = assert(io.open(path, "rb"))
local bytes = f:seek("end")
f:close()
print(("events=%d allocs=%d frees=%d leaked=%d stacks=%d records=%d bytes=%d seconds=%.1f"):format(
  nevents, allocs, frees, leaked, st.stacks, st.records, bytes, os.clock() - t0))
