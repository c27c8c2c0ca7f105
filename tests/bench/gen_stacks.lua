-- gen_stacks.lua -- a trace of N heap blocks (default 100,000), each kept
-- to the end and each with its own 8-frame stack under 50 roots: the worst
-- case for the report files (every stack distinct), used by
-- tests/lua/test_reports.lua and `make bench`.  With P processes (default
-- 1), P instances of the same program (many.exe at one base) each
-- allocate every one of the N stacks once: N * P blocks, N stacks seen in
-- P processes each (a browser's or a service's worker processes).
--   heapscript tests/bench/gen_stacks.lua -- OUT.etl [N [P]]
local path, n, np = arg[1], tonumber(arg[2] or 100000), tonumber(arg[3] or 1)
assert(path, "usage: heapscript tests/bench/gen_stacks.lua -- OUT.etl [N [P]]")
local w = assert(heapscript.writer(path, { cpus = 1, perf_freq = 10000000, start_ticks = 1000000 }))
local function pid(p) return 100 + (p - 1) * 4 end
for p = 1, np do
  local at = 1000100 + (p - 1) * 2      -- the first process's rundown as it always was
  w:process { op = "dcstart", pid = pid(p), ppid = 4, ts = at, name = "many.exe" }
  w:image { op = "dcstart", pid = pid(p), base = 0x140000000, size = 0x1000000, ts = at + (np == 1 and 100 or 1),
            path = "C:\\many.exe" }
end
local ts = 1001000
for i = 1, n do
  local st = {}
  for d = 1, 8 do st[d] = 0x140001000 + ((i * 7919 + d * 104729) % 0xF00000) end
  st[8] = 0x140001000 + i % 50          -- 50 roots
  for p = 1, np do
    ts = ts + 100
    assert(w:heap { op = "alloc", pid = pid(p), tid = pid(p) + 4, ts = ts, heap = 0x10000,
                    addr = 0x20000000 + (i * np + p - 1) * 64, size = 32 + i % 64, stack = st })
  end
end
assert(w:close())
