-- test_event.lua -- heapscript.Event: fields against the samples settled
-- in shared/traces/expected/*.json, payload readers on records whose
-- layout is known (the logfile header, Process and Image rundown), the
-- out-of-range rule, strings, SIDs, extended data items and stacks.
--
-- Run: heapscript tests/lua/test_event.lua.  Without the corpus
-- (HEAPSCRIPT_CORPUS, default ../shared/traces) the test is skipped,
-- unless CI=true.

package.path = "tests/lua/?.lua;tests/corpus/?.lua;" .. package.path
local T = require "testlib"
local corpus = T.corpus
local full = T.exists(corpus .. "/MANIFEST.tsv")
if not full then
  local _, code = T.need_corpus("test_event (all but the bundled traces)")
  if code ~= 0 then return code end
end
local check, eq, test, raises = T.check, T.eq, T.test, T.raises
local function oor(name, v, msg)
  check(v == nil and msg == "out of range", name .. " -> nil, 'out of range'", tostring(v) .. ", " .. tostring(msg))
end

local SHUTDOWN = corpus .. "/airbus-cert_etl-parser__ShutdownPerfDiagLogger.etl"
local PAGED = corpus .. "/microsoft_perfview__diagsession_diaghub.user_paged.1.etl"
local RUNONCE = corpus .. "/danyquenneville_Dany-Quenneville__ExplorerStartupLog_RunOnce.etl"
local EVENTTRACE = "68fdd900-4a3e-11d1-84f4-0000f80464e3"

-- the first record: the logfile header (ETL-FORMAT.md §2.2) --------------------
if full then  -- these read traces of the full corpus only
test("logfile header record", function()
  local t <close> = assert(heapscript.open(SHUTDOWN))
  local h = t:header()
  local it = t:events { provider = EVENTTRACE, opcode = 0 }
  local ev = it()
  eq(getmetatable(ev).__name, "heapscript.Event", "the loop yields a heapscript.Event")
  eq(ev.provider, EVENTTRACE, "ev.provider is the lower-case GUID")
  eq(ev.provider_name, "EventTrace", "ev.provider_name")
  eq(type(ev.name), "string", "ev.name of the header record is known")
  eq(ev.opcode, 0, "ev.opcode")
  eq(ev.id, 0, "ev.id of a kernel record")
  eq(ev.version, 2, "ev.version")
  eq(ev.header_type, "SYSTEM64", "ev.header_type")
  eq(ev.kernel, true, "ev.kernel")
  eq(ev.pointer_size, 8, "ev.pointer_size")
  eq(ev.file, 1, "ev.file is 1-based")
  eq(ev.buffer, 0, "ev.buffer of the first record")
  eq(ev.timestamp, h.header_ts, "ev.timestamp is the header_ts")
  eq(ev.ns, 0, "ev.ns of the header record is 0")
  eq(ev.time, 0.0, "ev.time of the header record is 0")
  eq(ev.filetime, h.start_time, "ev.filetime of the header record is the start_time")
  check(ev.date:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d+Z$"), "ev.date is ISO 8601", ev.date)
  check(ev.record_len >= ev.payload_len + 0x20, "ev.record_len covers header and payload")
  eq(math.type(ev.keyword), "integer", "ev.keyword")
  for _, k in ipairs { "level", "task", "cpu", "offset", "hook", "channel", "flags", "header_flags", "ext_len", "buffer_pos" } do
    eq(math.type(ev[k]), "integer", "ev." .. k .. " is an integer")
  end

  local len = ev.payload_len
  eq(ev:u32(0), h.buffer_size, "u32 @0 = BufferSize")
  eq(ev:u32(8), h.os_build, "u32 @8 = ProviderVersion (os_build)")
  eq(ev:u32(0x0C), h.cpus, "u32 @0x0C = NumberOfProcessors")
  eq(ev:i64(0x10), h.end_time, "i64 @0x10 = EndTime")
  eq(ev:u32(0x24), h.buffers_written, "u32 @0x24 = BuffersWritten")
  eq(ev:u32(0x2C), h.pointer_size, "u32 @0x2C = PointerSize")
  eq(ev:i64(0x100), h.perf_freq, "i64 @0x100 = PerfFreq")
  eq(ev:i64(0x108), h.start_time, "i64 @0x108 = StartTime")
  eq(ev:u32(0x110), h.clock_type, "u32 @0x110 = ReservedFlags (clock_type)")
  local name, nx = ev:utf16(0x118)
  eq(name, h.logger_name, "utf16 @0x118 = LoggerName")
  eq(nx, 0x118 + 2 * (#name + 1), "utf16 returns the offset after the NUL")
  local file, nx2 = ev:utf16(nx)
  eq(file, h.log_file_name, "the next utf16 = LogFileName")
  check(nx2 <= len, "the next offset stays inside the payload", nx2)
  eq(ev:utf16(0x118, 4), "Pe", "utf16(off, nbytes) reads nbytes")
  eq(ev:utf16(0x118, 0), "", "utf16(off, 0) is empty")

  -- widths agree with one another (little-endian)
  eq(ev:u16(0), ev:u8(0) + 256 * ev:u8(1), "u16 = two u8")
  eq(ev:u32(0), ev:u16(0) + 65536 * ev:u16(2), "u32 = two u16")
  eq(ev:u64(0x10), ev:u32(0x10) | (ev:u32(0x14) << 32), "u64 = two u32")
  eq(ev:ptr(0x10), ev:u64(0x10), "ptr is 8 bytes in a 64-bit record")
  local signed_ok = true
  for off = 0, len - 4 do
    local u8, u16, u32 = ev:u8(off), ev:u16(off), ev:u32(off)
    if ev:i8(off) ~= (u8 >= 0x80 and u8 - 0x100 or u8) or
       ev:i16(off) ~= (u16 >= 0x8000 and u16 - 0x10000 or u16) or
       ev:i32(off) ~= (u32 >= 0x80000000 and u32 - 0x100000000 or u32) then signed_ok = false end
  end
  check(signed_ok, "i8/i16/i32 are the two's complement of u8/u16/u32 at every offset")
  eq(ev:bytes(0, 4), string.pack("<I4", h.buffer_size), "bytes(0, 4)")
  eq(#ev:bytes(0), len, "bytes(0) is the whole payload")
  eq(ev:bytes(len), "", "bytes(len) is empty")
  local g = ev:guid(0x28)
  local a, b, c = string.unpack("<I4I2I2", ev:bytes(0x28, 8))
  local tail = ev:bytes(0x30, 8):gsub(".", function(ch) return ("%02x"):format(ch:byte()) end)
  eq(g, ("%08x-%04x-%04x-%s-%s"):format(a, b, c, tail:sub(1, 4), tail:sub(5)), "guid(off) formats the 16 bytes")

  -- bounds
  check(ev:u32(len - 4) ~= nil, "u32 of the last 4 bytes")
  oor("u32(len - 3)", ev:u32(len - 3))
  oor("u8(len)", ev:u8(len))
  oor("u64(len - 7)", ev:u64(len - 7))
  oor("guid(len - 15)", ev:guid(len - 15))
  oor("u32(1e6)", ev:u32(1000000))
  oor("bytes(len + 1)", ev:bytes(len + 1))
  oor("bytes(0, len + 1)", ev:bytes(0, len + 1))
  oor("utf16(len)", ev:utf16(len))
  oor("ansi(len)", ev:ansi(len))
  oor("utf16(0, len + 2)", ev:utf16(0, len + 2))
  raises(function() ev:u32(-1) end, "negative offset", "a negative offset is an error")
  raises(function() ev:u32(1.5) end, "number has no integer representation", "a fractional offset is an error")
  raises(function() ev:u32() end, "number expected", "a missing offset is an error")

  -- the Event as a value
  raises(function() return ev.no_such_field end, "no field or method 'no_such_field'", "an unknown field is an error")
  raises(function() ev.pid = 1 end, "read-only", "fields cannot be assigned")
  check(tostring(ev):find("heapscript.Event (EventTrace opcode 0", 1, true), "__tostring", tostring(ev))
  function heapscript.Event.hook_hex(e) return ("0x%04x"):format(e.hook) end
  eq(ev:hook_hex(), "0x0000", "a method added to heapscript.Event works")
  heapscript.Event.hook_hex = nil
end)

test("32-bit header record", function()
  -- expected/...ExplorerStartupLog_RunOnce.json: pointer_size 4, perf_freq 974511;
  -- in a 32-bit header PerfFreq is at 0xF8 and StartTime at 0x100
  local t <close> = assert(heapscript.open(RUNONCE))
  local h = t:header()
  for ev in t:events { provider = EVENTTRACE, opcode = 0 } do
    eq(ev.pointer_size, 4, "32-bit: ev.pointer_size")
    eq(ev.header_type, "SYSTEM32", "32-bit: ev.header_type")
    eq(ev:ptr(0x38), ev:u32(0x38), "32-bit: ptr is 4 bytes")
    eq(ev:i64(0xF8), 974511, "32-bit: i64 @0xF8 = PerfFreq")
    eq(ev:i64(0x100), h.start_time, "32-bit: i64 @0x100 = StartTime")
    eq(ev:utf16(0x110), "ExplorerStartupLog_RunOnce", "32-bit: utf16 @0x110 = LoggerName")
  end
end)

-- kernel payloads: Process and Image rundown (ETL-FORMAT.md §6.5, §6.7) ------
test("Process rundown: sid, ansi, utf16", function()
  local t <close> = assert(heapscript.open(SHUTDOWN))
  local n, exact, names, system_sid = 0, 0, {}, nil
  for ev in t:events { provider = "Process", opcode = 3 } do  -- DCStart v4
    local sid, o1 = ev:sid(2 * 8 + 20)
    local image, o2 = ev:ansi(o1)
    local _, o3 = ev:utf16(o2)       -- CommandLine
    local _, o4 = ev:utf16(o3)       -- PackageFullName
    local _, o5 = ev:utf16(o4)       -- ApplicationId
    n = n + 1
    if o5 == ev.payload_len then exact = exact + 1 end
    names[image] = true
    if ev:u32(8) == 4 then system_sid = sid end
  end
  eq(n, 94, "94 Process DCStart records")
  eq(exact, 94, "sid + ansi + 3 utf16 end exactly at the payload end in every record")
  check(names.System and names["smss.exe"] and names["csrss.exe"], "ansi reads the image names")
  eq(system_sid, "S-1-5-18", "sid of the System process")
  -- ansi(off, n) and an ANSI string that runs to the end of the payload
  for ev in t:events { provider = "Process", opcode = 3, limit = 1 } do
    local _, o1 = ev:sid(36)
    local s, nx = ev:ansi(o1, 4)
    eq(#s, 4, "ansi(off, n) reads n bytes")
    eq(nx, o1 + 4, "ansi(off, n) next offset")
  end
end)

test("Image rundown: ptr and utf16 file names", function()
  local t <close> = assert(heapscript.open(SHUTDOWN))
  local n, exact, dev = 0, 0, 0
  for ev in t:events { provider = "Image", opcode = 3 } do  -- DCStart v3, P = 8
    local name, nx = ev:utf16(3 * 8 + 32)
    n = n + 1
    if nx == ev.payload_len then exact = exact + 1 end
    if name:find("^\\") then dev = dev + 1 end
    if n == 1 then
      eq(ev:ptr(0), ev:u64(0), "ImageBase through ptr")
      check(ev:ptr(8) > 0, "ImageSize > 0", ev:ptr(8))
    end
  end
  eq(n, 6745, "6745 Image DCStart records")
  eq(exact, n, "FileName ends exactly at the payload end")
  check(dev > n / 2, "file names are NT paths", dev)
end)
end  -- full

-- fields against the settled samples -------------------------------------------
local function sample_test(name)
  test("samples of " .. name, function()
    -- the samples' positions and values, read from the JSON with patterns
    local f = assert(io.open(T.corpus_file("expected/" .. name .. ".json"), "rb"))
    local text = f:read("a")
    f:close()
    local samples = {}
    local body = text:match('"samples"%s*:%s*(%b[])')
    for obj in body:gmatch("%b{}") do
      local s = {}
      for k, v in obj:gmatch('"([%w_]+)"%s*:%s*("?[^,"}]*"?)') do
        if v == "null" then s[k] = false
        else s[k] = v:match('^"(.*)"$') or math.tointeger(tonumber(v)) end
      end
      samples[#samples + 1] = s
    end
    local pos = {}
    local posbody = text:match('"sample_positions"%s*:%s*(%b[])')
    for b, o in posbody:gmatch("%[%s*(%d+)%s*,%s*(%d+)%s*%]") do pos[#pos + 1] = { tonumber(b), tonumber(o) } end
    eq(#pos, #samples, name .. ": one position per sample")
    local want = {}
    for i, p in ipairs(pos) do want[p[1] * 2 ^ 32 + p[2]] = samples[i] end
    local t <close> = assert(heapscript.open(T.corpus_file(name .. ".etl")))
    local found, bad = 0, {}
    for ev in t:events() do
      local s = want[ev.buffer * 2 ^ 32 + ev.offset]
      if s then
        found = found + 1
        local got = { provider = ev.provider, opcode = ev.opcode, id = ev.id, version = ev.version,
                      timestamp_raw = ev.timestamp, pid = ev.pid or false, tid = ev.tid or false,
                      cpu = ev.cpu, payload_len = ev.payload_len }
        for k, v in pairs(got) do
          if s[k] ~= v then bad[#bad + 1] = ("buffer %d offset %d: %s = %s, expected %s"):format(ev.buffer, ev.offset, k, tostring(v), tostring(s[k])) end
        end
      end
    end
    eq(found, #samples, name .. ": every sample found at its buffer and offset")
    check(#bad == 0, name .. ": fields equal the samples", table.concat(bad, "; ", 1, math.min(#bad, 4)))
  end)
end
if full then
sample_test("airbus-cert_etl-parser__ShutdownPerfDiagLogger")
sample_test("microsoft_perfview__diagsession_diaghub.user_paged.1")
sample_test("google_syzygy__sawbuck_log_lib_test_data__image_data_64_v2.7979ca8")
end
-- the bundled traces, in every clone: compressed and 32-bit, old layout, stacks
sample_test("microsoft_perfview__smallEtlFile")
sample_test("microsoft_Tx__HTTP_Server")
sample_test("microsoft_perfview__net.4.5.2.x86")

-- extended data items and stacks -----------------------------------------------
if full then
test("ext and stack", function()
  -- expected/...user_paged.1.json: ext_items_by_type RELATED_ACTIVITYID 8,
  -- STACK_TRACE64 176, EVENT_SCHEMA_TL 256, PROV_TRAITS 276
  local t <close> = assert(heapscript.open(PAGED))
  local bytype, stacks, frames, bad, noext = {}, 0, 0, 0, 0
  for ev in t:events() do
    local items, damaged = ev:ext()
    if damaged then bad = bad + 1 end
    if #items == 0 then
      noext = noext + 1
      if ev:stack() ~= nil then bad = bad + 1 end
    end
    for _, it in ipairs(items) do
      bytype[it.name or it.type] = (bytype[it.name or it.type] or 0) + 1
      if type(it.size) ~= "number" then bad = bad + 1 end
    end
    local st, match = ev:stack()
    if st then
      stacks = stacks + 1
      frames = frames + #st
      if math.type(match) ~= "integer" or #st == 0 or math.type(st[1]) ~= "integer" then bad = bad + 1 end
    end
  end
  eq(bytype.RELATED_ACTIVITYID, 8, "ext(): RELATED_ACTIVITYID items")
  eq(bytype.STACK_TRACE64, 176, "ext(): STACK_TRACE64 items")
  eq(bytype.EVENT_SCHEMA_TL, 256, "ext(): EVENT_SCHEMA_TL items")
  eq(bytype.PROV_TRAITS, 276, "ext(): PROV_TRAITS items")
  eq(stacks, 176, "stack() returns a table for each record with a stack item")
  check(frames > stacks, "stacks have frames", frames)
  eq(bad, 0, "ext() items and stack() frames are well formed; no stack without ext items")
  check(noext > 0, "records without ext items give ext() = {}")
end)
end

return T.done("test_event")
