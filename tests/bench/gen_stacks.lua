-- gen_stacks.lua -- a trace of N heap blocks (default 100,000), each kept
-- to the end and each with its own 8-frame stack under 50 roots: the worst
-- case for the report files (every stack distinct), used by
-- tests/lua/test_reports.lua and `make bench`.
--   heapscript tests/bench/gen_stacks.lua -- OUT.etl [N]
local path, n = arg[1], tonumber(arg[2] or 100000)
assert(path, "usage: heapscript tests/bench/gen_stacks.lua -- OUT.etl [N]")
local w = assert(heapscript.writer(path, { cpus = 1, perf_freq = 10000000, start_ticks = 1000000 }))
w:process { op = "dcstart", pid = 100, ppid = 4, ts = 1000100, name = "many.exe" }
w:image { op = "dcstart", pid = 100, base = 0x140000000, size = 0x1000000, ts = 1000200, path = "C:\\many.exe" }
for i = 1, n do
  local st = {}
  for d = 1, 8 do st[d] = 0x140001000 + ((i * 7919 + d * 104729) % 0xF00000) end
  st[8] = 0x140001000 + i % 50          -- 50 roots
  assert(w:heap { op = "alloc", pid = 100, tid = 104, ts = 1001000 + i * 100, heap = 0x10000,
                  addr = 0x20000000 + i * 64, size = 32 + i % 64, stack = st })
end
assert(w:close())
