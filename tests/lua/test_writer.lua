-- test_writer.lua -- heapscript.Writer and heapscript.Symbols, and the
-- shipped examples.
--
--   * traces written with heapscript.Writer (64- and 32-bit, each
--     compression format, the old layout, system-time clock, several CPUs,
--     small buffers) read back with heapscript.open: every record's
--     timestamp, CPU, ids, header, descriptor and payload fields, the
--     StackWalk records of memory events, ext stacks;
--   * `heapscript info --json` counts equal what was written;
--   * misuse raises, I/O failures return nil, message; close/__close/__gc;
--   * heapscript.symbols;
--   * examples/*.etl and *.sym are byte-identical to what
--     examples/make_examples.lua writes now, and hold the ground truth
--     examples/README.md states (counts, sizes, times, stacks).
--
-- Run from the top of the tree: heapscript tests/lua/test_writer.lua
-- (HS_BIN names the binary for the `info` subprocess).  Needs no corpus.

package.path = "tests/lua/?.lua;tests/corpus/?.lua;" .. package.path
local T = require "testlib"
local bin = T.bin()
local json = require "json"
local check, eq, test, raises = T.check, T.eq, T.test, T.raises
local q = T.q
local slurp = T.slurp
local function tmpdir()
  local d = T.tmpname()
  os.remove(d)
  assert(os.execute("mkdir " .. q(d)))
  return d
end

local GUID = {
  EventTrace = "68fdd900-4a3e-11d1-84f4-0000f80464e3",
  Process = "3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c",
  Thread = "3d6fa8d1-fe05-11d0-9dda-00c04fd7ba7c",
  PageFault = "3d6fa8d3-fe05-11d0-9dda-00c04fd7ba7c",
  Image = "2cb15d1d-5fc1-11d2-abe1-00a0c911f518",
  Heap = "222962ab-6180-4b88-a825-346b75f2a24a",
  Pool = "0268a8b6-74fd-4302-9dd0-6e8f1795c0cf",
  StackWalk = "def2fe46-7bd6-4b80-bd94-f57fe20d0ce3",
  PerfInfo = "ce1dbfb4-137e-4da6-87b0-3f59aa102cbc",
  Custom = "2e35aaeb-857f-4beb-a418-2e6c0e54d988",
  Mof = "7c8a1b04-5f2d-4e9a-b3a1-0f1e2d3c4b5a",
}

-- `heapscript info --json PATH`, decoded
local function info(path)
  local p = io.popen(q(bin) .. " info --json " .. q(path) .. " 2>" .. T.devnull)
  local s = p:read("a")
  p:close()
  local ok, v = pcall(json.decode, s)
  return ok and v or nil, s
end

-- (provider, opcode, version) -> count from an info --json result
local function by_key(inf)
  local t = {}
  for _, k in ipairs(inf.by_key) do
    t[("%s/%d/%d/%d"):format(k.provider, k.id, k.opcode, k.version)] = k.count
  end
  return t
end

local function same_counts(got, want)
  for k, v in pairs(want) do
    if got[k] ~= v then return false, ("%s: got %s, expected %d"):format(k, tostring(got[k]), v) end
  end
  for k, v in pairs(got) do
    if want[k] == nil then return false, ("%s: %d unexpected"):format(k, v) end
  end
  return true
end

------------------------------------------------------------ round trips

-- Write a varied trace with opts; return the expected records (in the
-- order the reader must deliver them), the path and the writer's stats.
local function write_trace(opts, rounds)
  local path = T.tmpname()
  local P = opts.pointer_size or 8
  local cpus = opts.cpus or 1
  local SP = P                          -- StackWalk frame width: the trace's pointer size
  local HK = P == 8 and "SYSTEM64" or "SYSTEM32"
  local PK = P == 8 and "PERFINFO64" or "PERFINFO32"
  local mask = P == 8 and -1 or 0xFFFFFFFF
  local w = assert(heapscript.writer(path, opts))
  local exp, seq = {}, 0
  local clock = (opts.start_ticks or 0) + 1000
  local function tick() clock = clock + 97 return clock end
  local function want(r)
    seq = seq + 1
    r.seq = seq
    exp[#exp + 1] = r
  end
  local function stackwalk(ets, pid, tid, frames, cpu, sts)
    local f = { { "u64", 0, ets }, { "u32", 8, pid }, { "u32", 12, tid } }
    for i, a in ipairs(frames) do f[#f + 1] = { "ptr", 16 + (i - 1) * SP, a & mask } end
    want { ts = sts, cpu = cpu, header = P == 8 and "PERFINFO64" or "PERFINFO32", provider = GUID.StackWalk,
           opcode = 32, version = 2, len = 16 + #frames * SP, fields = f }
  end
  local function frames(n, base)
    local t = {}
    for i = 1, n do t[i] = (base + i * 0x1111) & mask end
    return t
  end

  -- rundown
  local ts = tick()
  assert(w:process { op = "dcstart", pid = 1000, ppid = 4, ts = ts, name = "app.exe", cmdline = "app.exe --über" })
  want { ts = ts, cpu = 0, header = HK, provider = GUID.Process, opcode = 3, version = 4, pid = 1000, tid = 0,
         fields = { { "u32", P, 1000 }, { "u32", P + 4, 4 }, { "ansi", 2 * P + 24, "app.exe" },
                    { "utf16", 2 * P + 32, "app.exe --über" } } }
  ts = tick()
  assert(w:process { op = "start", pid = 2000, ppid = 1000, ts = ts, name = "child.exe", cpu = cpus - 1 })
  want { ts = ts, cpu = cpus - 1, header = HK, provider = GUID.Process, opcode = 1, version = 4, pid = 1000, tid = 0,
         fields = { { "u32", P, 2000 }, { "u32", P + 4, 1000 }, { "ansi", 2 * P + 24, "child.exe" } } }
  ts = tick()
  assert(w:thread { op = "dcstart", pid = 1000, tid = 1004, ts = ts, start = 0x401000 })
  want { ts = ts, cpu = 0, header = HK, provider = GUID.Thread, opcode = 3, version = 3, pid = 1000, tid = 1004,
         fields = { { "u32", 0, 1000 }, { "u32", 4, 1004 }, { "ptr", 8 + 5 * P, 0x401000 } } }
  ts = tick()
  local base = P == 8 and 0x7ff700000000 or 0x400000
  assert(w:image { op = "load", pid = 1000, base = base, size = 0x20000, ts = ts, path = "\\Device\\X\\app.exe" })
  want { ts = ts, cpu = 0, header = HK, provider = GUID.Image, opcode = 10, version = 3, pid = 1000, tid = 0,
         fields = { { "ptr", 0, base }, { "ptr", P, 0x20000 }, { "u32", 2 * P, 1000 },
                    { "utf16", 3 * P + 32, "\\Device\\X\\app.exe" } } }
  ts = tick()
  assert(w:image { op = "dcstart", pid = 0, base = base + 0x100000, size = 0x1000, ts = ts, path = "k.sys", cpu = cpus - 1 })
  want { ts = ts, cpu = cpus - 1, header = HK, provider = GUID.Image, opcode = 3, version = 3, pid = 0, tid = 0,
         fields = { { "ptr", 0, base + 0x100000 }, { "utf16", 3 * P + 32, "k.sys" } } }

  -- a tie across CPUs: the lower CPU comes first, whatever the write order
  if cpus > 1 then
    ts = tick()
    assert(w:kernel { group = 0x0F, opcode = 46, header = PK, ts = ts, cpu = 1, payload = "B" })
    assert(w:kernel { group = 0x0F, opcode = 46, header = PK, ts = ts, cpu = 0, payload = "A" })
    want { ts = ts, cpu = 1, header = PK, provider = GUID.PerfInfo, opcode = 46, version = 2, len = 1,
           fields = { { "bytes", 0, "B" } } }
    want { ts = ts, cpu = 0, header = PK, provider = GUID.PerfInfo, opcode = 46, version = 2, len = 1,
           fields = { { "bytes", 0, "A" } } }
  end

  local heap = P == 8 and 0x1d0000000 or 0x1d0000
  ts = tick()
  local ok, sts = w:heap { op = "create", pid = 1000, tid = 1004, ts = ts, heap = heap, flags = 0x2,
                           stack = frames(3, base) }
  assert(ok)
  want { ts = ts, cpu = 0, header = HK, provider = GUID.Heap, opcode = 32, version = 3, pid = 1000, tid = 1004,
         len = 4 * P + 4, fields = { { "ptr", 0, heap }, { "u32", P, 2 } } }
  stackwalk(ts, 1000, 1004, frames(3, base), 1 % cpus, sts)
  eq(sts, ts + 3, "heap: the stack is stamped 3 ticks after its event")

  for r = 1, rounds do
    local cpu = r % cpus
    local scpu = (cpu + 1) % cpus
    local addr = heap + 0x1000 + 0x40 * (r % 50)
    local fr = frames(1 + r % 40, base + r)
    -- heap alloc with a stack
    ts = tick()
    ok, sts = w:heap { op = "alloc", pid = 1000, tid = 1004 + r % 3, ts = ts, heap = heap, addr = addr,
                       size = r * 8, source = r % 6, cpu = cpu, stack = fr }
    assert(ok)
    want { ts = ts, cpu = cpu, header = HK, provider = GUID.Heap, opcode = 33, version = 2, pid = 1000,
           tid = 1004 + r % 3, len = 3 * P + 4,
           fields = { { "ptr", 0, heap }, { "ptr", P, r * 8 }, { "ptr", 2 * P, addr }, { "u32", 3 * P, r % 6 } } }
    stackwalk(ts, 1000, 1004 + r % 3, fr, scpu, sts)
    -- realloc without a stack
    ts = tick()
    assert(w:heap { op = "realloc", pid = 1000, tid = 1004, ts = ts, heap = heap, addr = addr + 0x10000,
                    old_addr = addr, size = r * 16, old_size = r * 8, source = 3, cpu = cpu })
    want { ts = ts, cpu = cpu, header = HK, provider = GUID.Heap, opcode = 34, version = 2, pid = 1000, tid = 1004,
           len = 5 * P + 4, fields = { { "ptr", P, addr + 0x10000 }, { "ptr", 2 * P, addr }, { "ptr", 3 * P, r * 16 },
                                       { "ptr", 4 * P, r * 8 }, { "u32", 5 * P, 3 } } }
    -- free
    ts = tick()
    assert(w:heap { op = "free", pid = 1000, tid = 1005, ts = ts, heap = heap, addr = addr + 0x10000, source = 2,
                    cpu = scpu })
    want { ts = ts, cpu = scpu, header = HK, provider = GUID.Heap, opcode = 36, version = 2, pid = 1000, tid = 1005,
           len = 2 * P + 4, fields = { { "ptr", 0, heap }, { "ptr", P, addr + 0x10000 }, { "u32", 2 * P, 2 } } }
    -- VirtualAlloc / VirtualFree: PERFINFO, pid in the payload, the stack's thread from tid
    local va = (P == 8 and 0x20000000000 or 0x20000000) + r * 0x10000
    ts = tick()
    ok, sts = w:virtual { op = "alloc", pid = 1000, tid = 1006, ts = ts, addr = va, size = 0x3000,
                          flags = { "commit", "reserve" }, cpu = cpu, stack = fr }
    assert(ok)
    want { ts = ts, cpu = cpu, header = PK, provider = GUID.PageFault, opcode = 98, version = 2, len = 2 * P + 8,
           fields = { { "ptr", 0, va }, { "ptr", P, 0x3000 }, { "u32", 2 * P, 1000 }, { "u32", 2 * P + 4, 0x3000 } } }
    stackwalk(ts, 1000, 1006, fr, scpu, sts)
    ts = tick()
    assert(w:virtual { op = "free", pid = 1000, ts = ts, addr = va, size = 0x1000,
                       flags = r % 2 == 0 and "decommit" or 0x8000, cpu = cpu })
    want { ts = ts, cpu = cpu, header = PK, provider = GUID.PageFault, opcode = 99, version = 2, len = 2 * P + 8,
           fields = { { "ptr", 0, va }, { "ptr", P, 0x1000 }, { "u32", 2 * P + 4, r % 2 == 0 and 0x4000 or 0x8000 } } }
    -- pool: plain, session, free
    local entry = (P == 8 and -0x3bf000000000 or 0x80000000) + r * 0x100
    ts = tick()
    ok, sts = w:pool { op = "alloc", pid = 4, tid = 8, ts = ts, tag = "Leak", type = "nonpaged", size = 100 + r,
                       entry = entry, cpu = cpu, stack = fr }
    want { ts = ts, cpu = cpu, header = HK, provider = GUID.Pool, opcode = 32, version = 2, pid = 4, tid = 8,
           len = 8 + 2 * P, fields = { { "u32", 0, 0 }, { "u32", 4, 0x6B61654C }, { "ptr", 8, 100 + r },
                                       { "ptr", 8 + P, entry & mask } } }
    stackwalk(ts, 4, 8, fr, scpu, sts)
    ts = tick()
    assert(w:pool { op = "alloc", pid = 4, tid = 8, ts = ts, tag = "Ab", type = "pagedsession", session = 3,
                    size = 64, entry = entry + 0x10, cpu = cpu })
    want { ts = ts, cpu = cpu, header = HK, provider = GUID.Pool, opcode = 33, version = 2, pid = 4, tid = 8,
           len = 12 + 2 * P, fields = { { "u32", 0, 0x21 }, { "u32", 4, 0x20206241 }, { "u32", 8 + 2 * P, 3 } } }
    ts = tick()
    assert(w:pool { op = "free", pid = 4, tid = 8, ts = ts, tag = 0x41424344, type = 1, entry = entry, cpu = cpu })
    want { ts = ts, cpu = cpu, header = HK, provider = GUID.Pool, opcode = 34, version = 2, pid = 4, tid = 8,
           len = 8 + 2 * P, fields = { { "u32", 0, 1 }, { "u32", 4, 0x41424344 }, { "ptr", 8 + P, entry & mask } } }
    -- an EVENT_HEADER record with a stack item and an extra item
    if r % 7 == 0 then
      ts = tick()
      local pl = "payload\0" .. string.rep("x", r)
      local act = string.rep("\1\2", 8)
      assert(w:event { provider = "{" .. GUID.Custom .. "}", id = r, version = 1, opcode = 12, level = 5, task = 3,
                       keyword = math.mininteger | 0x10, pid = 1000, tid = 1004, ts = ts, payload = pl,
                       stack = fr, ext = { { type = 1, data = act }, { type = 18, data = act:sub(1, 8) } }, cpu = cpu })
      want { ts = ts, cpu = cpu, header = P == 8 and "EVENT_HEADER64" or "EVENT_HEADER32", provider = GUID.Custom,
             opcode = 12, version = 1, pid = 1000, tid = 1004, id = r, level = 5, task = 3,
             keyword = math.mininteger | 0x10, len = #pl, fields = { { "bytes", 0, pl } }, stack = fr,
             ext = { P == 8 and "STACK_TRACE64" or "STACK_TRACE32", "RELATED_ACTIVITYID", "STACK_KEY64" } }
      ts = tick()
      assert(w:mof { provider = GUID.Mof, opcode = 7, version = 3, pid = 1000, tid = 1004, ts = ts,
                     payload = "mof", cpu = scpu })
      want { ts = ts, cpu = scpu, header = P == 8 and "FULL_HEADER64" or "FULL_HEADER32", provider = GUID.Mof,
             opcode = 7, version = 3, pid = 1000, tid = 1004, len = 3, fields = { { "bytes", 0, "mof" } } }
      -- an explicit stack, 64-bit frames even in a 32-bit trace (a WOW64 process on x64)
      ts = tick()
      assert(w:stack { ts = ts, event_ts = ts - 50, pid = 1000, tid = 1004, frames = { -0x7ff00000, 0x1234 }, ptr = 8,
                       cpu = cpu })
      want { ts = ts, cpu = cpu, header = "PERFINFO64", provider = GUID.StackWalk, opcode = 32, version = 2, len = 32,
             fields = { { "u64", 0, ts - 50 }, { "u32", 12, 1004 }, { "u64", 16, -0x7ff00000 }, { "u64", 24, 0x1234 } } }
    end
  end
  ts = tick()
  assert(w:heap { op = "destroy", pid = 1000, tid = 1004, ts = ts, heap = heap })
  want { ts = ts, cpu = 0, header = HK, provider = GUID.Heap, opcode = 35, version = 2, pid = 1000, tid = 1004,
         len = P, fields = { { "ptr", 0, heap } } }
  ts = tick()
  assert(w:process { op = "end", pid = 2000, ppid = 1000, ts = ts, name = "child.exe" })
  want { ts = ts, cpu = 0, header = HK, provider = GUID.Process, opcode = 2, version = 4, pid = 2000, tid = 0,
         fields = { { "u32", P, 2000 } } }
  local stats = w:stats()
  assert(w:close())
  table.sort(exp, function(a, b)
    if a.ts ~= b.ts then return a.ts < b.ts end
    if a.cpu ~= b.cpu then return a.cpu < b.cpu end
    return a.seq < b.seq
  end)
  return path, exp, stats
end

-- Compare the trace at path with exp; returns the number of records read
-- and the first few mismatches.
local function read_back(path, exp, P)
  local t = assert(heapscript.open(path))
  local bad, i = {}, 0
  local function same(got, want, what, r)
    if got ~= want and #bad < 5 then
      bad[#bad + 1] = ("record %d (ts %d, seq %d) %s: got %s, expected %s"):format(i, r.ts, r.seq, what,
                                                                                  tostring(got), tostring(want))
    end
  end
  for ev in t:events() do
    if ev.provider == GUID.EventTrace then goto continue end
    i = i + 1
    local r = exp[i]
    if not r then
      same(ev.timestamp, nil, "an extra record", { ts = -1, seq = -1 })
      goto continue
    end
    same(ev.timestamp, r.ts, "timestamp", r)
    same(ev.cpu, r.cpu, "cpu", r)
    same(ev.header_type, r.header, "header_type", r)
    same(ev.provider, r.provider, "provider", r)
    same(ev.opcode, r.opcode, "opcode", r)
    same(ev.version, r.version, "version", r)
    same(ev.pid, r.pid, "pid", r)
    same(ev.tid, r.tid, "tid", r)
    if r.len then same(ev.payload_len, r.len, "payload_len", r) end
    if r.id then same(ev.id, r.id, "id", r) end
    if r.level then same(ev.level, r.level, "level", r) end
    if r.task then same(ev.task, r.task, "task", r) end
    if r.keyword then same(ev.keyword, r.keyword, "keyword", r) end
    for _, f in ipairs(r.fields) do
      same((ev[f[1]](ev, f[2])), f[3], f[1] .. "@" .. f[2], r)
    end
    if r.stack then
      local fr = ev:stack() or {}
      same(#fr, #r.stack, "ext stack length", r)
      for k = 1, #r.stack do same(fr[k], r.stack[k] & (P == 8 and -1 or 0xFFFFFFFF), "ext frame " .. k, r) end
    end
    if r.ext then
      local items = ev:ext()
      same(#items, #r.ext, "ext items", r)
      for k = 1, #r.ext do same(items[k] and items[k].name, r.ext[k], "ext item " .. k, r) end
    end
    ::continue::
  end
  same(i, #exp, "records read", { ts = -1, seq = -1 })
  local h = t:header()
  local st = t:stats()
  t:close()
  return i, bad, h, st
end

local modes = {
  { "64-bit, 4 CPUs, 4 KiB buffers", { cpus = 4, buffer_size = 4096 } },
  { "32-bit, 2 CPUs", { pointer_size = 4, cpus = 2, buffer_size = 8192 } },
  { "64-bit, XPRESS", { cpus = 3, buffer_size = 4096, compress = "xpress" } },
  { "64-bit, LZNT1", { cpus = 2, buffer_size = 4096, compress = "lznt1" } },
  { "64-bit, XPRESS Huffman", { cpus = 2, buffer_size = 4096, compress = "xpress_huff" } },
  { "32-bit, XPRESS", { pointer_size = 4, cpus = 2, buffer_size = 4096, compress = "xpress" } },
  { "32-bit, old layout (Win7)", { pointer_size = 4, cpus = 2, buffer_size = 4096, old_layout = true } },
  { "64-bit, one CPU, system-time clock", { clock_type = "system", start_ticks = 132223104000000000,
                                             buffer_size = 16384 } },
  { "64-bit, 8 CPUs, CPU-cycle clock", { cpus = 8, clock_type = 3, cpu_mhz = 2500, start_ticks = 5000000,
                                         buffer_size = 4096 } },
}

for _, m in ipairs(modes) do
  local label, opts = m[1], m[2]
  test(label, function()
    opts.logger_name = "test " .. label
    local path, exp, stats = write_trace(opts, 120)
    local n, bad, h, st = read_back(path, exp, opts.pointer_size or 8)
    check(#bad == 0 and n == #exp, ("%s: %d records round-trip exactly"):format(label, #exp), bad[1])
    eq(stats.records, #exp, label .. ": w:stats().records counts every record written")
    eq(h.pointer_size, opts.pointer_size or 8, label .. ": header pointer_size")
    eq(h.cpus, opts.cpus or 1, label .. ": header cpus")
    eq(h.compressed, opts.compress ~= nil, label .. ": header compressed")
    eq(h.logger_name, opts.logger_name, label .. ": header logger_name")
    eq(h.buffers_written, st.buffers, label .. ": BuffersWritten equals the buffers walked")
    check(st.buffers > (opts.cpus or 1) + 1, label .. ": several buffers per CPU", st.buffers)
    eq(st.buffers_damaged + st.records_damaged, 0, label .. ": nothing damaged")
    if opts.compress then check(st.buffers_compressed > 0, label .. ": buffers are compressed", st.buffers_compressed) end
    if opts.old_layout then eq(h.version[2], 1, label .. ": old layout reports Windows 6.1") end
    -- info --json counts what was written
    local inf, raw = info(path)
    check(inf ~= nil, label .. ": info --json parses", raw)
    if inf then
      local want = { [GUID.EventTrace .. "/0/0/2"] = 1 }
      for _, r in ipairs(exp) do
        local k = ("%s/%d/%d/%d"):format(r.provider, r.id or 0, r.opcode, r.version)
        want[k] = (want[k] or 0) + 1
      end
      local ok, why = same_counts(by_key(inf), want)
      check(ok, label .. ": info --json by_key equals the records written", why)
      eq(inf.events, #exp + 1, label .. ": info --json events")
      eq(inf.stacks.stackwalk_events, stats.stacks, label .. ": info --json stackwalk_events equals w:stats().stacks")
    end
    os.remove(path)
  end)
end

------------------------------------------------------ misuse and errors

-- info lists (provider, id, opcode, version) in the order of the
-- providers' GUID text: GUIDs that differ in each field, and in each byte
-- of the last eight, written in a shuffled order
test("info orders providers by their GUID text", function()
  local path = T.tmpname()
  local guids = {
    "00000001-0000-0000-0000-000000000000", "00000000-0001-0000-0000-000000000000",
    "00000000-0000-0001-0000-000000000000", "ffffffff-0000-0000-0000-000000000000",
    "0000000a-0000-0000-0000-000000000000", "00000000-00a0-0000-0000-000000000000",
    "00000000-0000-0000-0000-000000000000",
  }
  for b = 1, 8 do                      -- each byte of the last eight alone, 0x01 and 0xa0
    local bytes = { "00", "00", "00", "00", "00", "00", "00", "00" }
    for _, v in ipairs{ "01", "a0" } do
      bytes[b] = v
      guids[#guids + 1] = ("00000000-0000-0000-%s%s-%s"):format(bytes[1], bytes[2], table.concat(bytes, "", 3))
    end
  end
  local order = {}
  for i = 1, #guids do order[i] = guids[i] end
  local seed = 7
  for i = #order, 2, -1 do             -- a fixed shuffle
    seed = (seed * 1103515245 + 12345) % 2147483648
    local j = seed % i + 1
    order[i], order[j] = order[j], order[i]
  end
  local w = assert(heapscript.writer(path, { cpus = 1 }))
  for i, g in ipairs(order) do
    w:event { provider = g, id = 3, ts = 100 + 2 * i, payload = "x", pid = 1, tid = 2 }
    w:event { provider = g, id = 1, ts = 101 + 2 * i, payload = "x", pid = 1, tid = 2 }
  end
  assert(w:close())
  local inf, raw = info(path)
  check(inf ~= nil, "info --json parses", raw)
  if inf then
    local want = {}
    for _, g in ipairs(guids) do want[#want + 1] = g .. "/1"; want[#want + 1] = g .. "/3" end
    table.sort(want)
    local got = {}
    for _, k in ipairs(inf.by_key) do   -- the writer's own header record left out
      if k.provider ~= GUID.EventTrace then got[#got + 1] = k.provider .. "/" .. k.id end
    end
    eq(table.concat(got, " "), table.concat(want, " "), "by_key in the GUIDs' text order")
  end
  os.remove(path)
end)

-- the logfile header fields a copy of another trace keeps (merge): OS version, timer resolution,
-- time zone, boot time, EndTime later than the last record
test("header options", function()
  local path = T.tmpname()
  local tz = string.pack("<i4", 480) .. string.rep("\0", 168)
  local w = assert(heapscript.writer(path, { os_major = 6, os_minor = 1, os_build = 7601, timer_resolution = 10000,
    time_zone = tz, boot_time = 132000000000000000, end_time = 132223105000000000, log_file_mode = 0x11001 }))
  w:process{ op = "dcstart", pid = 1000, ts = 10, name = "app.exe" }
  assert(w:close())
  local t = assert(heapscript.open(path))
  local h = t:header()
  t:close()
  os.remove(path)
  eq(table.concat(h.version, "."), "6.1.1.5", "os version 6.1")
  eq(h.timer_resolution, 10000, "timer resolution")
  eq(h.tz_bias, 480, "time zone bias")
  eq(h.boot_time, 132000000000000000, "boot time")
  eq(h.end_time, 132223105000000000, "end time")
  eq(h.log_file_mode, 0x11001, "log file mode")
  raises(function() heapscript.writer(path, { time_zone = "UTC" }) end, "172 bytes", "a short time_zone raises")
end)

test("writer errors", function()
  local path = T.tmpname()
  local w, err = heapscript.writer("/nonexistent-dir/x.etl")
  check(w == nil and tostring(err):find("/nonexistent-dir/x.etl", 1, true), "an uncreatable file: nil, message", err)
  raises(function() heapscript.writer(path, { pointer_size = 5 }) end, "pointer_size", "pointer_size 5 raises")
  raises(function() heapscript.writer(path, { compress = "zip" }) end, "'zip' is not one of", "unknown compression raises")
  raises(function() heapscript.writer(path, { cpu = 2 }) end, "unknown field 'cpu'", "unknown option raises")
  raises(function() heapscript.writer(path, { cpus = "two" }) end, "integer expected", "a mistyped option raises")
  raises(function() heapscript.writer(path, { group_masks = { 1, 2 } }) end, "8 integers", "group_masks needs 8")
  raises(function() heapscript.writer(path, { old_layout = "yes" }) end, "field 'old_layout': boolean expected, got string",
         "an option that is not a boolean raises")
  raises(function() heapscript.writer(path, { old_layout = true, compress = "xpress" }) end, "Win8",
         "old layout with compression raises")
  w = assert(heapscript.writer(path, { cpus = 2, group_masks = { 0, 0x8040, 0x20, 0, 0, 0, 0, 0 } }))
  eq(getmetatable(w).__name, "heapscript.Writer", "heapscript.writer returns a heapscript.Writer")
  eq(tostring(w), "heapscript.Writer (" .. path .. ")", "__tostring names the file")
  raises(function() w:heap { op = "alloc", pid = 1, ts = 10, sise = 4 } end, "unknown field 'sise'", "a misspelt field raises")
  raises(function() w:heap { op = "malloc", pid = 1, ts = 10 } end, "'malloc' is not one of", "an unknown op raises")
  raises(function() w:heap { op = "alloc", pid = 1 } end, "field 'ts': missing", "a missing ts raises")
  raises(function() w:heap { op = "alloc", pid = 1, ts = 1.5 } end, "field 'ts': integer expected", "a fractional ts raises")
  raises(function() w:heap { op = "alloc", pid = -1, ts = 1 } end, "out of range", "a negative pid raises")
  raises(function() w:heap { op = "alloc", pid = 1, ts = 1, cpu = 2 } end, "out of range", "a cpu beyond cpus raises")
  raises(function() w:heap { op = "alloc", pid = 1, ts = 1, stack = { 1, "x" } } end, "frame 2", "a bad frame raises")
  raises(function() w:pool { op = "alloc", pid = 1, ts = 1, entry = 1, tag = "TooLong" } end, "1 to 4 characters",
         "a long pool tag raises")
  raises(function() w:virtual { op = "alloc", pid = 1, ts = 1, addr = 0, size = 1, flags = { "comit" } } end,
         "unknown flag 'comit'", "an unknown MEM flag raises")
  raises(function() w:event { provider = "Heap", ts = 1 } end, "not a GUID", "a provider that is not a GUID raises")
  raises(function() w:kernel { group = 1, opcode = 2, ts = 1, header = "EVENT_HEADER64" } end, "not a kernel header",
         "a non-kernel header for w:kernel raises")
  raises(function() w:heap { op = "alloc", pid = 1, ts = 1, header = "NOPE" } end, "unknown header type",
         "an unknown header name raises")
  raises(function() w:heap { op = "alloc", pid = 1, ts = 1, [1] = 5 } end, "fields are named, got a number key",
         "a positional field raises")
  raises(function() w:process { op = "start", pid = 1, ts = 1, name = 5 } end, "field 'name': string expected, got number",
         "a name that is not a string raises")
  raises(function() w:virtual { op = "alloc", pid = 1, ts = 1, addr = 0, size = 1, flags = true } end,
         "a number, a flag name or a list of names expected", "MEM flags of another type raise")
  raises(function() w:heap { op = "alloc", pid = 1, ts = 1, opcode = 200 } end, "no layout for this event (opcode 200, version 0)",
         "an opcode no layout has raises")
  -- its StackWalk is stamped stack_delay after it: past 2^63 - 1 that wrapped (UBSan: signed overflow)
  raises(function() w:heap { op = "alloc", pid = 1, ts = math.maxinteger, addr = 0x100, size = 8, stack = { 0x1000 } } end,
         "field 'ts': room after it for its StackWalk's", "a memory event with a stack at the last tick raises")
  -- a kernel record's version word above 0xFF holds the PEBS and PMC bits (ETL-FORMAT §3.3): a memory
  -- event's version is the layout's, 0..255 (256 was written as one PMC counter, and read back as
  -- version 0 with the allocation lost)
  raises(function() w:heap { op = "alloc", pid = 1, ts = 1, version = 256 } end, "field 'version': 256 out of range 0..255",
         "a memory event's version above 255 raises")
  raises(function() w:heap { op = "alloc", pid = 1, ts = 1, stack = { 1 }, stack_ptr = 4, stack_cpu = 1,
                             stack_type = 99 } end, "unknown field 'stack_type'", "an unknown stack field raises")
  assert(w:heap { op = "alloc", pid = 1, tid = 2, ts = 100, addr = 1, size = 2 })
  raises(function() w:heap { op = "alloc", pid = 1, ts = 99 } end, "before the previous record", "a decreasing timestamp raises")
  -- a rejected record leaves the writer usable; a stack is placed after its CPU's last record
  assert(w:heap { op = "alloc", pid = 1, tid = 2, ts = 200, cpu = 1 })
  local ok, sts = w:heap { op = "alloc", pid = 1, tid = 2, ts = 150, cpu = 0, stack = { 6 } }
  eq(ok, true, "an event after a rejected one is written")
  eq(sts, 200, "its stack moves to the stack CPU's last timestamp")
  ok, sts = w:heap { op = "alloc", pid = 1, tid = 2, ts = 300, cpu = 1, stack = { 7 }, stack_cpu = 1, stack_delay = 9 }
  eq(sts, 309, "stack_cpu and stack_delay place the stack")
  eq(w:close(), true, "close returns true")
  eq(w:close(), true, "a second close returns true")
  eq(tostring(w), "heapscript.Writer (" .. path .. ", closed)", "__tostring of a closed writer")
  raises(function() w:heap { op = "alloc", pid = 1, ts = 1000 } end, "closed writer", "a closed writer raises")
  local t = assert(heapscript.open(path))
  eq(t:count(), 2 + 6, "the file holds the header, the Extension record and the 6 accepted records")
  eq(t:count { provider = GUID.EventTrace, opcode = 5 }, 1, "group_masks writes an Extension record")
  t:close()
  -- <close> and __gc close the file
  do
    local w2 <close> = assert(heapscript.writer(path))
    assert(w2:heap { op = "free", pid = 1, ts = 5, addr = 9 })
  end
  t = assert(heapscript.open(path))
  eq(t:count { provider = GUID.Heap }, 1, "<close> finishes the file")
  t:close()
  local w3 = assert(heapscript.writer(path))
  assert(w3:heap { op = "free", pid = 1, ts = 5, addr = 9 })
  w3 = nil
  collectgarbage()
  collectgarbage()
  t = assert(heapscript.open(path))
  eq(t:count { provider = GUID.Heap }, 1, "__gc finishes the file")
  -- a trace open in the script is never written over (it would be cut
  -- short under its reader), by its name or a link; once closed it may be
  local wo, eo = heapscript.writer(path)
  check(wo == nil and tostring(eo):find(path .. ": is the trace " .. path .. ", open in this script", 1, true),
        "a writer over an open trace: nil, message", eo)
  local link = path
  if package.config:sub(1, 1) == "/" then         -- a link (POSIX; Windows: merge's test under Wine)
    link = path .. "-link"
    os.execute("ln -sf " .. q(path) .. " " .. q(link))
    wo, eo = heapscript.writer(link)
    check(wo == nil and tostring(eo):find("is the trace " .. path, 1, true), "a writer over a link to an open trace: nil, message", eo)
  end
  eq(t:count { provider = GUID.Heap }, 1, "the open trace is untouched")
  t:close()
  wo = assert(heapscript.writer(link), "a closed trace may be written over")
  wo:close()
  if link ~= path then os.remove(link) end
  os.remove(path)
  -- an I/O error: nil, message, and it sticks
  local f = io.open("/dev/full", "wb")
  if f then
    f:close()
    local wf = heapscript.writer("/dev/full", { buffer_size = 1024 })
    if wf then
      local r1, e1
      for i = 1, 200 do
        r1, e1 = wf:heap { op = "alloc", pid = 1, ts = i * 10, addr = i, size = 1 }
        if not r1 then break end
      end
      local r2, e2 = wf:close()
      check((r1 == nil and type(e1) == "string") or (r2 == nil and type(e2) == "string"),
            "writing to a full device returns nil, message", tostring(e1) .. " / " .. tostring(e2))
    else
      check(true, "writing to a full device fails at open")
    end
  end
end)

------------------------------------------------------------ symbols

test("symbols", function()
  local path = T.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write("# test map\n", "ntdll.dll 9d1a0 230 RtlAllocateHeap\n", "app 1000 0 Main\n", "app 2000 40 operator new\n")
  f:close()
  heapscript.symbols(false)
  eq(heapscript.symbols(), nil, "no current map at first")
  local s = assert(heapscript.symbols(path))
  eq(getmetatable(s).__name, "heapscript.Symbols", "heapscript.symbols returns a heapscript.Symbols")
  eq(heapscript.symbols(), s, "the loaded map is the current one")
  eq(#s, 3, "#symbols")
  local name, off = s:lookup("NTDLL.dll", 0x9d1a0 + 0x4c)
  check(name == "RtlAllocateHeap" and off == 0x4c, "lookup: name and offset", tostring(name) .. "+" .. tostring(off))
  eq(s:lookup("app.exe", 0x1fff), "Main", "a size-0 symbol reaches the next one; the module matches without extension")
  eq(s:lookup("app.exe", 0x2040), nil, "past the end of a sized symbol: nil")
  eq(s:lookup("other.dll", 0x2000), nil, "an unknown module: nil")
  local mods = s:modules()
  check(#mods == 2 and mods[1].name == "ntdll.dll" and mods[2].symbols == 2, "modules()")
  check(tostring(s):find("3 symbols in 2 modules", 1, true), "__tostring", tostring(s))
  local s2, err = heapscript.symbols("/nonexistent/x.sym")
  check(s2 == nil and err:find("/nonexistent/x.sym", 1, true), "a missing map: nil, message", err)
  eq(heapscript.symbols(), s, "a failed load keeps the current map")
  f = assert(io.open(path, "wb"))
  f:write("a.dll 10 4 f\n", "a.dll zz 4 g\n")
  f:close()
  s2, err = heapscript.symbols(path)
  check(s2 == nil and err:find(path .. ":2: expected the RVA", 1, true), "a bad line: nil, file:line message", err)
  heapscript.symbols(false)
  eq(heapscript.symbols(), nil, "symbols(false) forgets the current map")
  eq(heapscript.symbols(s), s, "symbols(map) makes it current again")
  heapscript.symbols(false)
  raises(function() heapscript.symbols({}) end, "string expected", "symbols({}) raises")
  os.remove(path)
end)

---------------------------------------------------------- the examples

test("examples are what make_examples.lua writes", function()
  local d = tmpdir()
  local p = io.popen(q(bin) .. " examples/make_examples.lua -- " .. q(d) .. " 2>&1")
  local out = p:read("a")
  local ok = p:close()
  check(ok, "make_examples.lua runs", out)
  for _, name in ipairs({ "memorytestapp.etl", "memorytestapp.sym", "notmyfault.etl", "notmyfault.sym",
                         "memorytestapp-fixed.etl", "memorytestapp-fixed.sym",
                         "memorytestapp-newleak.etl", "memorytestapp-newleak.sym" }) do
    local shipped, fresh = slurp("examples/" .. name), slurp(d .. "/" .. name)
    check(shipped ~= nil and shipped == fresh, "examples/" .. name .. " is byte-identical to a fresh run",
          shipped and fresh and ("%d vs %d bytes"):format(#shipped, #fresh) or "missing")
    os.remove(d .. "/" .. name)
  end
  os.remove(d)
end)

-- The event counts examples/README.md gives, keyed as info --json keys them.
local example_counts = {
  ["examples/memorytestapp.etl"] = {
    events = 14744, SYSTEM64 = 9696, PERFINFO64 = 5044, stackwalk = 5022,
    keys = {
      ["b3e675d7-2554-4f18-830b-2762732560de/0/36/2"] = 4,     -- KernelTraceControl DbgID_RSDS
      [GUID.EventTrace .. "/0/0/2"] = 1,
      [GUID.Process .. "/0/3/4"] = 1, [GUID.Process .. "/0/4/4"] = 1,
      [GUID.Thread .. "/0/3/3"] = 2, [GUID.Thread .. "/0/4/3"] = 2,
      [GUID.Image .. "/0/3/3"] = 4, [GUID.Image .. "/0/4/3"] = 4,
      [GUID.PageFault .. "/0/98/2"] = 12, [GUID.PageFault .. "/0/99/2"] = 10,
      [GUID.Heap .. "/0/33/2"] = 5000, [GUID.Heap .. "/0/36/2"] = 4681,
      [GUID.StackWalk .. "/0/32/2"] = 5022,
    },
  },
  ["examples/notmyfault.etl"] = {
    events = 4627, SYSTEM64 = 27, PERFINFO64 = 4600, stackwalk = 1640,
    keys = {
      [GUID.EventTrace .. "/0/0/2"] = 1,
      [GUID.Process .. "/0/3/4"] = 3, [GUID.Process .. "/0/4/4"] = 3,
      [GUID.Thread .. "/0/3/3"] = 4, [GUID.Thread .. "/0/4/3"] = 4,
      [GUID.Image .. "/0/3/3"] = 6, [GUID.Image .. "/0/4/3"] = 6,
      [GUID.Pool .. "/0/32/2"] = 1640, [GUID.Pool .. "/0/34/2"] = 1320,
      [GUID.StackWalk .. "/0/32/2"] = 1640,
    },
  },
}

for path, want in pairs(example_counts) do
  test("info --json " .. path, function()
    local inf, raw = info(path)
    check(inf ~= nil, path .. ": info --json parses", raw)
    if not inf then return end
    eq(inf.events, want.events, path .. ": events")
    eq(inf.by_header_type.SYSTEM64, want.SYSTEM64, path .. ": SYSTEM64 records")
    eq(inf.by_header_type.PERFINFO64, want.PERFINFO64, path .. ": PERFINFO64 records")
    eq(inf.stacks.stackwalk_events, want.stackwalk, path .. ": StackWalk records")
    local ok, why = same_counts(by_key(inf), want.keys)
    check(ok, path .. ": counts by provider/opcode/version", why)
    eq(inf.buffers.damaged, 0, path .. ": no damaged buffers")
  end)
end

-- Images of each pid from the rundown, for naming frames with a map.
local function images(t)
  local img = {}
  for ev in t:events { provider = "Image", opcode = 3 } do
    local P = ev.pointer_size
    local pid = ev:u32(2 * P)
    local path = ev:utf16(3 * P + 32)
    img[pid] = img[pid] or {}
    table.insert(img[pid], { base = ev:ptr(0), size = ev:ptr(P), module = path:match("[^\\]*$") })
  end
  return img
end

-- MemoryTestApp.exe's functions as build.lua read them from its PDB
-- (examples/memorytestapp/layout.txt), as a second map, so that this test
-- does not depend on the PDB reader (test_sym.c and test_symbols.sh do).
local function layout_map()
  local path = T.tmpname()
  local f = assert(io.open(path, "w"))
  for line in io.lines("examples/memorytestapp/layout.txt") do
    local name, rva, size = line:match("^func (%S+) (%S+) (%S+)$")
    if name then f:write(("MemoryTestApp.exe %x %x %s\n"):format(tonumber(rva), tonumber(size), name)) end
  end
  f:close()
  local current = heapscript.symbols()
  local m = assert(heapscript.symbols(path))
  heapscript.symbols(current or false)
  os.remove(path)
  return m
end

local function symbolize(img, sym, pid, addr)
  for _, list in ipairs({ img[pid] or {}, img[0] or {} }) do
    for _, m in ipairs(list) do
      if math.ult(addr - m.base, m.size) then
        local name, off = sym:lookup(m.module, addr - m.base)
        if not name and sym.app then name, off = sym.app:lookup(m.module, addr - m.base) end
        return m.module .. "!" .. (name or "?") .. (off and off ~= 0 and ("+0x%x"):format(off) or "")
      end
    end
  end
  return ("0x%x"):format(addr)
end

-- StackWalk records by (event timestamp, thread): innermost frame first.
local function stacks_of(t)
  local st = {}
  for ev in t:events { provider = "StackWalk", opcode = 32 } do
    local fr = {}
    for o = 16, ev.payload_len - 8, 8 do fr[#fr + 1] = ev:u64(o) end
    st[ev:u64(0) .. "/" .. ev:u32(12)] = fr
  end
  return st
end

test("examples/memorytestapp.etl ground truth", function()
  local t = assert(heapscript.open("examples/memorytestapp.etl"))
  local map = assert(heapscript.symbols("examples/memorytestapp.sym"))
  local sym = { app = layout_map(), lookup = function(_, ...) return map:lookup(...) end }
  local h = t:header()
  check(h.pointer_size == 8 and h.cpus == 4 and h.perf_freq == 10000000 and h.compressed and h.clock_type == 1,
        "memorytestapp: 64-bit, 4 CPUs, QPC 10 MHz, compressed")
  eq(h.compression, 3, "memorytestapp: XPRESS")
  local T0 = h.header_ts
  eq(T0, 72000000000, "memorytestapp: starts at QPC 72,000,000,000")
  local img, st = images(t), stacks_of(t)
  -- heap: what stays allocated
  local live, allocs, frees, peak, peak_ts, bytes = {}, 0, 0, 0, 0, 0
  local freed_bytes, n40 = 0, 0
  for ev in t:events { provider = "Heap" } do
    if ev.opcode == 33 then
      allocs = allocs + 1
      if ev:ptr(8) == 40 then n40 = n40 + 1 end
      live[ev:ptr(16)] = { size = ev:ptr(8), ts = ev.timestamp, tid = ev.tid }
      bytes = bytes + ev:ptr(8)
      if bytes > peak then peak, peak_ts = bytes, ev.timestamp - T0 end
    elseif ev.opcode == 36 then
      frees = frees + 1
      local b = live[ev:ptr(8)]
      bytes = bytes - b.size
      freed_bytes = freed_bytes + b.size
      live[ev:ptr(8)] = nil
    end
  end
  eq(allocs, 5000, "memorytestapp: 5000 heap allocations")
  eq(frees, 4681, "memorytestapp: 4681 heap frees, each of a block allocated in the trace")
  eq(freed_bytes, 2832912, "memorytestapp: the balanced blocks hold 2,832,912 bytes")
  eq(n40, 644, "memorytestapp: 644 allocations of 40 bytes in all")
  local n, leaked, times, stack_ok = 0, 0, {}, true
  for _, b in pairs(live) do
    n = n + 1
    leaked = leaked + b.size
    times[#times + 1] = b.ts - T0
    local fr = st[b.ts .. "/" .. b.tid]
    local s = fr and (symbolize(img, sym, 5812, fr[2]) .. " < " .. symbolize(img, sym, 5812, fr[3]) .. " < " ..
                      symbolize(img, sym, 5812, fr[4]))
    if s ~= "ntdll.dll!RtlAllocateHeap+0x3e < MemoryTestApp.exe!InnerLoopOperation+0x1f < MemoryTestApp.exe!Main+0xa5" then
      stack_ok = s or "no stack"
    end
  end
  table.sort(times)
  eq(n, 319, "memorytestapp: 319 blocks never freed")
  eq(leaked, 319 * 40, "memorytestapp: all of them 40 bytes")
  check(times[1] == 3000000 and times[319] == 3000000 + 318 * 600000, "memorytestapp: leaks every 60 ms from 0.3 s")
  check(stack_ok == true, "memorytestapp: leaks come from Main > InnerLoopOperation > RtlAllocateHeap", stack_ok)
  check(peak == 34840 and peak_ts == 185400000, "memorytestapp: heap peak 34,840 bytes at 18.54 s",
        peak .. " at " .. peak_ts)
  -- VirtualAlloc
  local regions, commits, releases, spikes = {}, 0, 0, {}
  local committed, vpeak, vpeak_ts = 0, 0, 0
  local fields_ok = true
  for ev in t:events { provider = "PageFault", opcode = { 98, 99 } } do
    local addr, size = ev:ptr(0), ev:ptr(8)
    if ev:u32(16) ~= 5812 or size ~= 10485760 or ev:u32(20) ~= (ev.opcode == 98 and 0x3000 or 0x8000) then
      fields_ok = false
    end
    if ev.opcode == 98 then
      commits = commits + 1
      regions[addr] = ev.timestamp
      committed = committed + size
      if committed > vpeak then vpeak, vpeak_ts = committed, ev.timestamp - T0 end
    else
      releases = releases + 1
      spikes[#spikes + 1] = { regions[addr] - T0, ev.timestamp - regions[addr] }
      regions[addr] = nil
      committed = committed - size
    end
  end
  check(fields_ok, "memorytestapp: every VirtualAlloc/Free is 10 MiB of pid 5812, COMMIT|RESERVE or RELEASE")
  eq(commits, 12, "memorytestapp: 12 VirtualAlloc commits")
  eq(releases, 10, "memorytestapp: 10 releases")
  local left = {}
  for a, ts in pairs(regions) do left[#left + 1] = ts - T0 end
  table.sort(left)
  check(#left == 2 and left[1] == 5000000 and left[2] == 100000000, "memorytestapp: 20 MiB stays committed (0.5 s, 10 s)")
  local spikes_ok = #spikes == 10
  for k, s in ipairs(spikes) do
    if s[1] ~= 15500000 + (k - 1) * 19000000 or s[2] ~= 1000000 then spikes_ok = false end
  end
  check(spikes_ok, "memorytestapp: spikes at 1.55 + 1.9k s, 100 ms each")
  check(vpeak == 31457280 and vpeak_ts == 110500000, "memorytestapp: commit peak 30 MiB at 11.05 s")
  -- the stacks of the two steady commits
  local names, list = {}, {}
  for ev in t:events { provider = "PageFault", opcode = 98 } do
    local fr = st[ev.timestamp .. "/5816"]
    local name = fr and symbolize(img, sym, 5812, fr[3]) or "no stack"
    names[name] = (names[name] or 0) + 1
    list[#list + 1] = ("%.2f %s"):format((ev.timestamp - T0) / 1e7, name)
  end
  check(names["MemoryTestApp.exe!InitSteadyState+0x23"] == 1 and names["MemoryTestApp.exe!StepUpMemory+0x23"] == 1
        and names["MemoryTestApp.exe!ManipulateTemporaryBuffer+0x23"] == 10 and list[1]:find("InitSteadyState"),
        "memorytestapp: commit stacks: InitSteadyState (0.5 s), StepUpMemory, 10 x ManipulateTemporaryBuffer",
        table.concat(list, ", "))
  t:close()
  heapscript.symbols(false)
end)

test("examples/notmyfault.etl ground truth", function()
  local t = assert(heapscript.open("examples/notmyfault.etl"))
  local sym = assert(heapscript.symbols("examples/notmyfault.sym"))
  local h = t:header()
  check(h.pointer_size == 8 and h.cpus == 4 and not h.compressed and h.logger_name == "NT Kernel Logger",
        "notmyfault: 64-bit, 4 CPUs, NT Kernel Logger, not compressed")
  local T0 = h.header_ts
  local img, st = images(t), stacks_of(t)
  local live, by_tag, allocs, frees, unknown_frees = {}, {}, 0, 0, 0
  local tag_bytes, tag_types, out, peak, peak_ts = {}, {}, 0, 0, 0
  local headers, stack_ids = {}, 0
  for ev in t:events { provider = "Pool" } do
    local tag = ev:bytes(4, 4)
    -- as the kernel writes them: no ids in the header; those of the StackWalk
    headers[ev.header_type .. (ev.pid and "+ids" or "")] = true
    if ev.stack_pid then stack_ids = stack_ids + 1 end
    if ev.opcode == 32 then
      allocs = allocs + 1
      live[ev:ptr(16)] = { tag = tag, size = ev:ptr(8), type = ev:u32(0), ts = ev.timestamp, tid = ev.stack_tid,
                           pid = ev.stack_pid }
      by_tag[tag] = (by_tag[tag] or 0) + 1
      tag_bytes[tag] = (tag_bytes[tag] or 0) + ev:ptr(8)
      local ty = ev:u32(0)
      if tag_types[tag] == nil then tag_types[tag] = ty elseif tag_types[tag] ~= ty then tag_types[tag] = "mixed" end
      out = out + ev:ptr(8)
      if out > peak then peak, peak_ts = out, ev.timestamp - T0 end
    else
      out = out - (live[ev:ptr(16)] and live[ev:ptr(16)].size or 0)
      frees = frees + 1
      if not live[ev:ptr(16)] then unknown_frees = unknown_frees + 1 end
      live[ev:ptr(16)] = nil
    end
  end
  eq(unknown_frees, 0, "notmyfault: every free is of an entry allocated in the trace")
  check(headers.PERFINFO64 and next(headers, "PERFINFO64") == nil and next(headers) == "PERFINFO64",
        "notmyfault: pool events have PERFINFO64 headers without ids")
  eq(stack_ids, 1640, "notmyfault: every allocation names its process and thread through its StackWalk")
  eq(allocs, 1640, "notmyfault: 1640 pool allocations")
  eq(frees, 1320, "notmyfault: 1320 pool frees")
  check(by_tag.Leak == 320 and by_tag["Irp "] == 320 and by_tag.File == 600 and by_tag.MmSt == 400,
        "notmyfault: allocations by tag: Leak 320, Irp 320, File 600, MmSt 400")
  check(tag_bytes.Leak == 20971520 and tag_bytes["Irp "] == 143360 and tag_bytes.File == 206400
        and tag_bytes.MmSt == 822784, "notmyfault: bytes by tag: 20,971,520 / 143,360 / 206,400 / 822,784")
  check(tag_types.Leak == 0 and tag_types["Irp "] == 0 and tag_types.File == 0x200 and tag_types.MmSt == 1,
        "notmyfault: pool types by tag: NonPaged, NonPaged, NonPagedNx, Paged")
  check(peak == 20971968 and peak_ts == 201875000, "notmyfault: pool peak 20,971,968 bytes at 20.1875 s",
        peak .. " at " .. peak_ts)
  local n, bytes, ok, times, stack_ok = 0, 0, true, {}, true
  for _, b in pairs(live) do
    n = n + 1
    bytes = bytes + b.size
    if b.tag ~= "Leak" or b.type ~= 0 or b.size ~= 65536 or b.pid ~= 6140 or b.tid ~= 6412 then ok = false end
    times[#times + 1] = b.ts - T0
    local fr = st[b.ts .. "/" .. b.tid]
    local s = fr and (symbolize(img, sym, 6140, fr[2]) .. " < " .. symbolize(img, sym, 6140, fr[3]))
    if s ~= "ntoskrnl.exe!ExAllocatePoolWithTag+0x5d < myfault.sys!MyfaultLeakPool+0x3b" then stack_ok = s or "no stack" end
  end
  table.sort(times)
  eq(n, 320, "notmyfault: 320 allocations never freed")
  eq(bytes, 20971520, "notmyfault: 20 MiB outstanding")
  check(ok, "notmyfault: all of them Leak, NonPaged, 64 KiB, NotMyFault64.exe thread 6412")
  check(times[1] == 2500000 and times[320] == 2500000 + 319 * 625000, "notmyfault: one every 62.5 ms from 0.25 s")
  check(stack_ok == true, "notmyfault: leaks come from myfault.sys!MyfaultLeakPool > ExAllocatePoolWithTag", stack_ok)
  t:close()
  heapscript.symbols(false)
end)

-- heapscript merge of two runs with their own clocks, CPU counts, losses
-- and extended items: the merged file reads as the two files read together
test("merge: two files, two clocks, one file", function()
  local d = tmpdir()
  local S = 132223104000000000
  local A, B, M = d .. "/a.etl", d .. "/b.etl", d .. "/m.etl"
  local P = "b1a2c3d4-0000-4000-8000-000000000001"
  -- A starts a second after B, its clock 10 MHz on 2 CPUs; B's 3 MHz on 4
  for _, f in ipairs{ { A, { cpus = 2, perf_freq = 10000000, start_time = S + 10000000, events_lost = 3 }, 1000 },
                      { B, { cpus = 4, perf_freq = 3000000, start_time = S, events_lost = 5 }, 2000 } } do
    local w = assert(heapscript.writer(f[1], f[2]))
    local pid, freq = f[3], f[2].perf_freq
    w:process{op = "dcstart", pid = pid, ts = 10, name = "app.exe"}
    for i = 1, 40 do
      local ts = freq // 100 * i                             -- every 10 ms
      w:heap{op = "alloc", pid = pid, tid = pid + 4, ts = ts, cpu = i % f[2].cpus, heap = 0x5000,
             addr = 0x20000 + 64 * i, size = i}
      w:event{provider = P, id = i, opcode = 1, pid = pid, tid = pid + 4, ts = ts + 1, cpu = (i + 1) % f[2].cpus,
              payload = string.pack("<I4", pid + i), stack = { 0x7ff700001000 + i }, ext = { { type = 9, data = string.pack("<I4", i) } }}
    end
    assert(w:close())
  end
  local code, _, err = T.run("merge -o " .. q(M) .. " " .. q(A) .. " " .. q(B))
  eq(code, 0, "merge: exit 0", err)
  local tm <close> = assert(heapscript.open(M))
  local tp <close> = assert(heapscript.open(A, B))
  local h = tm:header()
  check(h.cpus == 4 and h.events_lost == 8 and h.start_time == S and h.perf_freq == 10000000,
        "the header: the most CPUs, the losses summed, the earlier start, the first file's clock",
        ("%d %d %d %d"):format(h.cpus, h.events_lost, h.start_time, h.perf_freq))
  local function list(t)
    local l = {}
    for ev in t:events() do
      if not (ev.opcode == 0 and ev.id == 0 and ev.provider == "68fdd900-4a3e-11d1-84f4-0000f80464e3") then
        local items = {}
        for _, it in ipairs(ev.header_type:find("EVENT_HEADER") and ev:ext() or {}) do
          items[#items + 1] = it.type .. "=" .. (it.data and it.data:gsub(".", function(c) return ("%02x"):format(c:byte()) end) or "")
        end
        l[#l + 1] = table.concat({ ev.provider, ev.id, ev.opcode, ev.pid, ev.tid, ev.cpu, ("%.7f"):format(ev.time),
                                   ev:bytes(0), table.concat(items, ",") }, "|")
      end
    end
    return l
  end
  local lm, lp = list(tm), list(tp)
  local first
  for i = 1, math.max(#lm, #lp) do if lm[i] ~= lp[i] then first = i; break end end
  check(#lm == #lp and #lm > 160 and not first, "every record the same: ids, CPU, time, payload, extended items",
        first and ("%d of %d/%d: %s | %s"):format(first, #lm, #lp, lm[first], lp[first]) or #lm)
  os.execute("rm -rf " .. q(d))
end)

-- Tables are read raw: an __index that makes a fresh string for time_zone, and collects garbage
-- when asked for a later field, handed the writer a string already freed (ASan: heap-use-after-free
-- in write_header_buffer, under make SANITIZE=1 test); now no __index runs at all
test("options are read without __index", function()
  local path = T.tmpname(".etl")
  local opts = setmetatable({}, { __index = function(_, k)
    if k == "time_zone" then return string.pack("<i4", 480) .. string.rep("\1", 168) end
    if k == "group_masks" then collectgarbage("collect"); collectgarbage("collect") end
  end })
  local w = assert(heapscript.writer(path, opts))
  w:process(setmetatable({ op = "dcstart", pid = 7, ts = 10 }, { __index = function(_, k)
    if k == "name" then return ("x"):rep(40) .. "%d" end
    if k == "cpu" then collectgarbage("collect") end
  end }))
  assert(w:close())
  local t <close> = assert(heapscript.open(path))
  eq(t:header().tz_bias, 0, "time_zone from __index is not read")
  t:close()
  os.remove(path)
end)

return T.done("test_writer")
