-- report.lua -- what the bundled scripts share: their options, symbol
-- maps, byte and stack formatting, and JSON output.  A module:
-- `local report = require "report"`.  Team scripts may use it too.
local M = {}
-- Times on the command line (--window, --at) lie within this many seconds
-- of the trace's start: about 31 years, longer than any trace runs.
M.MAX_SECONDS = 1e9

-- A number too large to hold is no number: 1e400 (infinity as a float),
-- 0x10000000000000000 (hex integers wrap around in Lua: 0).
local function finite(n) return n and n == n and n > -math.huge and n < math.huge and n or nil end
local function hex(s)
  local digits = s:match("^%s*0[xX]0*(%x*)%s*$")
  if not digits or #digits > 16 then return nil end
  local n = tonumber("0x" .. (digits == "" and "0" or digits))
  return n >= 0 and n or nil            -- past 0x7fff... it wraps to below 0
end

-- The report options (M.emit writes them), in the order they are checked.
local REPORT_LIST = { "json", "html", "csv", "markdown", "folded", "junit" }
local REPORTS = {}
for _, k in ipairs(REPORT_LIST) do REPORTS[k] = true end

-- A wrong command line: the script's name, msg and its usage on standard
-- error, and exit status 2 (what report.options does with a bad option).
function M.usage_error(msg, usage)
  io.stderr:write(("%s: %s\n%s"):format(arg and arg[0] or "script", msg, usage or ""))
  os.exit(2)
end

-- Options after `--`: `--name value`, `--flag`, and `--name=value`.
-- spec maps a name to "number", "count", "seconds", "time" (seconds that
-- may be below 0), "string", "tag" (a pool tag of 1 to 4 characters),
-- "pattern" (a valid Lua pattern), "list"
-- (comma separated), a list of words, "window" (T1,T2 in seconds) or
-- "flag"; defaults is a table of values (docs/SCRIPTS.md, report.options).
function M.options(spec, defaults, argv, usage)
  local o = {}
  local own = spec
  spec = {}
  for k, v in pairs(M.OUTPUTS) do spec[k] = v end   -- every script writes these (M.emit)
  for k, v in pairs(own) do spec[k] = v end
  for k, v in pairs(defaults or {}) do o[k] = v end
  local i = 1
  local given = {}                      -- report option -> its value, to refuse it twice
  local function fail(msg) M.usage_error(msg, usage) end
  while i <= #argv do
    local a = argv[i]
    local name, inline = a:match("^%-%-([%w_-]+)=(.*)$")
    name = name or a:match("^%-%-([%w_-]+)$") or (a == "-h" and "help" or nil)
    if not name then fail("unexpected argument " .. a) end
    local flag = "--" .. name          -- as typed, for the messages
    name = name:gsub("-", "_")
    local kind = spec[name]
    if inline and (name == "help" or kind == "flag") then fail(flag .. " takes no value") end
    if name == "help" then
      for l in (usage or ""):gmatch("([^\n]*)\n") do M.print(l) end   -- fitted to the terminal
      os.exit(0)
    end
    -- every script takes --symbol-path: where the images' PDBs are (docs/SYMBOLS.md)
    if name == "symbol_path" and not kind then kind = "string" end
    if not kind then fail("unknown option " .. flag) end
    if kind == "flag" then
      o[name] = true
    else
      local v = inline
      if v == nil then i = i + 1; v = argv[i] end
      if v == nil then fail(flag .. " needs a value") end
      -- a report given twice would keep only the last file, the first asked for never written
      if REPORTS[name] and given[name] then
        fail(("%s given twice (%s and %s): one file per report"):format(flag, given[name], v))
      end
      if type(kind) == "table" then        -- a list of these words, in any case
        local l, ok, seen = {}, {}, {}
        for _, w in ipairs(kind) do ok[w] = true end
        for item in v:gmatch("[^,]+") do
          local w = item:lower()
          if not ok[w] then fail(("%s: %s is none of %s"):format(flag, item, table.concat(kind, ", "))) end
          if not seen[w] then l[#l + 1] = w end   -- once each (heap,heap reported every heap finding twice)
          seen[w] = true
        end
        if #l == 0 then fail(flag .. ": expected one or more of " .. table.concat(kind, ", ")) end
        o[name] = l
      elseif kind == "number" then
        local n = M.parse_size(v)
        if not n then fail(flag .. ": expected a number of 0 or more (64k, 1MiB accepted): " .. v) end
        o[name] = n
      elseif kind == "count" then
        local n
        if v:match("^%s*0[xX]%x+%s*$") then n = hex(v) else n = tonumber(v) end
        n = n and math.tointeger(n)
        if not n or n < 0 or n > 2^53 then fail(flag .. ": expected a whole number from 0 to 2^53: " .. v) end
        o[name] = n
      elseif kind == "seconds" then
        local n = M.parse_seconds(v)
        if not n then fail(flag .. ": expected seconds of 0 or more (0.5, 500ms, 2s accepted): " .. v) end
        o[name] = n
      elseif kind == "time" then           -- a moment: below 0 before the earliest file's start
        local neg, rest = v:match("^%s*(%-?)(.*)$")
        local n = M.parse_seconds(rest)
        if not n or n > M.MAX_SECONDS then
          fail(flag .. ": expected a time in seconds from the trace's start (12.5, 500ms, -3 accepted): " .. v)
        end
        o[name] = neg == "-" and -n or n
      elseif kind == "tag" then            -- a pool tag: "Irp" is "Irp " (report.filters pads it)
        if #v < 1 or #v > 4 then
          fail(("%s: a pool tag has 1 to 4 characters (a shorter one is padded with spaces), '%s' has %d")
            :format(flag, v, #v))
        end
        o[name] = v
      elseif kind == "pattern" then        -- a name or a Lua pattern (--process)
        local ok, msg = pcall(string.find, "", v)
        if not ok then fail(("%s: not a Lua pattern (%s): %s"):format(flag, tostring(msg):gsub("^.-: ", ""), v)) end
        o[name] = v
      elseif kind == "list" then
        local l = {}
        for item in v:gmatch("[^,]+") do l[#l + 1] = item end
        o[name] = l
      elseif kind == "window" then
        local a1, a2 = v:match("^%s*([^,]*),([^,]*)%s*$")
        local t1, t2 = tonumber(a1), tonumber(a2)
        local function finite(t) return t == nil or (t == t and math.abs(t) <= M.MAX_SECONDS) end
        if not a1 or (a1 ~= "" and not t1) or (a2 ~= "" and not t2) or not finite(t1) or not finite(t2) then
          fail(("%s: expected T1,T2 in seconds from the trace's start (within %g s of it): %s"):format(flag, M.MAX_SECONDS, v))
        end
        if t1 and t2 and t1 > t2 then fail(("%s: the start (%g s) is after the end (%g s): %s"):format(flag, t1, t2, v)) end
        o[name] = { t1, t2 }
      else
        o[name] = v
      end
      if REPORTS[name] then given[name] = v end
    end
    i = i + 1
  end
  local dash = {}
  for _, k in ipairs(REPORT_LIST) do
    if o[k] == "-" then dash[#dash + 1] = "--" .. k end
  end
  if #dash > 1 then fail(table.concat(dash, " and ") .. ": only one report can go to standard output") end
  -- the files a report must not be written over (a typo would destroy them):
  -- the baseline, the rule file, the symbol maps (the trace's own files are
  -- asked of at write time, M.write)
  local inputs = {}
  if type(o.baseline) == "string" then
    inputs[#inputs + 1] = { "the --baseline", o.baseline }
    if o.baseline:match("%.[eE][tT][lL]$") then
      inputs[#inputs + 1] = { "the symbol map beside the --baseline", (o.baseline:gsub("%.[eE][tT][lL]$", "") .. ".sym") }
    end
  end
  if type(o.rules) == "string" and (o.rules:find("[/\\]") or o.rules:match("%.lua$")) then  -- a path, not a module
    inputs[#inputs + 1] = { "the --rules file", o.rules }
  end
  if type(o.symbols) == "string" then inputs[#inputs + 1] = { "the --symbols map", o.symbols } end
  for _, p in ipairs(trace and trace:files() or {}) do
    inputs[#inputs + 1] = { "the symbol map beside the trace", (p:gsub("%.[eE][tT][lL]$", "") .. ".sym") }
  end
  -- a report file that cannot be made is said now, not after the analysis:
  -- one not there yet is made, and removed once every report is checked
  -- (one that is there, which may be a pipe, is not opened before its
  -- report is written); two reports naming one file would keep the last
  local made, reports, err = {}, {}, nil
  for _, k in ipairs(REPORT_LIST) do
    local path = o[k]
    local there                          -- (a rename onto itself asks without opening it)
    if type(path) == "string" and path ~= "-" then
      if package.config:sub(1, 1) == "\\" then    -- Windows: no pipe that an open blocks on
        local f = io.open(path, "rb")
        there = f ~= nil
        if f then f:close() end
      else
        there = os.rename(path, path)
        -- a directory renames onto itself too; with a "/" after it only a directory does
        if there and os.rename(path .. "/", path .. "/") then
          err = ("--%s: cannot write %s (Is a directory)"):format(k, path)
          break
        end
      end
      for _, x in ipairs(there and inputs or {}) do
        if heapscript.same_file(path, x[2]) then
          err = ("--%s %s: is %s; a report is written to another file"):format(k, path, x[1])
        end
      end
      -- nor over a PDB, which frames are named from (a typo of the map's name, or of the trace's)
      if there and path:lower():match("%.pdb$") then
        err = ("--%s %s: is a PDB; a report is written to another file"):format(k, path)
      end
      if err then break end
      if not there then
        local f, oerr = io.open(path, "wb")
        if not f then err = ("--%s: cannot write %s (%s)"):format(k, path, tostring(oerr):gsub("^.-: ", "")); break end
        f:close()
        made[#made + 1] = path
      end
      for _, r in ipairs(reports) do
        if r[2] == path or heapscript.same_file(r[2], path) then
          err = ("--%s and --%s: both name %s; one file per report"):format(r[1], k, path)
        end
      end
      if err then break end
      reports[#reports + 1] = { k, path }
    end
  end
  for _, p in ipairs(made) do os.remove(p) end
  if err then fail(err) end
  if o.symbol_path and trace then trace:symbols{path = o.symbol_path} end
  return o
end

-- Whether a script prints its text: not when a report goes to standard
-- output instead (--json -, --csv -, ...).
function M.text(o)
  for _, k in ipairs({ "json", "html", "csv", "markdown", "folded", "junit" }) do
    if o[k] == "-" then return false end
  end
  return true
end

-- "10MiB", "64k", "1e6", "0x100" -> integer bytes (binary suffixes).
function M.parse_size(s)
  s = tostring(s)
  if s:match("^%s*0[xX]%x+%s*$") then return hex(s) end
  local num, suffix = s:match("^%s*(%d*%.?%d+[eE]?%d*)%s*(%a*)%s*$")
  if not num then return nil end
  local n = tonumber(num)
  if not n then return nil end
  local mult = ({ [""] = 1, b = 1, k = 1024, kb = 1024, kib = 1024, m = 2^20, mb = 2^20, mib = 2^20,
                  g = 2^30, gb = 2^30, gib = 2^30 })[suffix:lower()]
  if not mult then return nil end
  n = finite(n * mult)
  return n and (math.tointeger(n) or n)
end

-- "0.5", "500ms", "2s", "250us", "1min" -> seconds (a number of 0 or
-- more), or nil.
function M.parse_seconds(s)
  local num, unit = tostring(s):match("^%s*(%d*%.?%d+[eE]?[-+]?%d*)%s*(%a*)%s*$")
  local n = num and tonumber(num)
  local mult = ({ [""] = 1, s = 1, ms = 1e-3, us = 1e-6, ns = 1e-9, min = 60 })[(unit or ""):lower()]
  if not n or not mult then return nil end
  return finite(n * mult)
end

-- Symbol maps: --symbols FILE, else NAME.sym beside each trace NAME.etl.
function M.load_symbols(path)
  if path then
    local s, err = heapscript.symbols(path)
    if not s then io.stderr:write("heapscript: " .. tostring(err) .. "\n"); os.exit(2) end
    return path
  end
  if not trace then return nil end
  for _, p in ipairs(trace:files()) do
    local sym = p:gsub("%.[eE][tT][lL]$", "") .. ".sym"
    local kind = heapscript.path_kind(sym)
    -- (a FIFO there would be opened and waited on for ever)
    if kind ~= nil and kind ~= "file" then io.stderr:write("heapscript: ignoring " .. sym .. ": not a regular file\n")
    elseif kind then
      local ok, err = heapscript.symbols(sym)
      if ok then return sym end
      io.stderr:write("heapscript: ignoring " .. sym .. ": " .. tostring(err) .. "\n")
    end
  end
  return nil
end

-- The terminal.  On one, text lines fit its width (a long line goes on
-- over indented lines, cut at spaces) and headings are bold; in a pipe or
-- a file the text is plain and unwrapped, so tools and golden files see
-- one line per item.  NO_COLOR (or TERM=dumb) turns the colour off.
M.term = heapscript.terminal and heapscript.terminal() or { columns = 80 }

-- line, cut into pieces of at most `width` columns on a terminal
function M.fit(line, width)
  -- names from a trace are not the terminal's commands: its control characters (ESC, BEL, CR and
  -- the C1 ones, but for tab and line feed) are printed as "?"
  line = line:gsub("[%z\1-\8\11-\31\127]", "?"):gsub("\194[\128-\159]", "?")
  width = width or M.term.columns
  if not M.term.stdout or #line <= width then return { line } end
  local indent = line:match("^%s*")
  local cont = indent .. "    "
  local opt = line:match("^(%s*%-.-%s%s+)%S")     -- "  --top N    what it does": under "what"
  if opt and #opt < width / 2 then cont = (" "):rep(#opt) end
  local out, cur = {}, ""
  for word, sp in line:sub(#indent + 1):gmatch("(%S+)(%s*)") do
    local head = #out == 0 and indent or cont
    if cur ~= "" and #head + #cur + #word > width then
      out[#out + 1] = head .. cur:gsub("%s+$", "")
      cur = ""
    end
    cur = cur .. word .. sp
  end
  out[#out + 1] = (#out == 0 and indent or cont) .. cur:gsub("%s+$", "")
  return out
end

-- print, fitted to the terminal (see M.term); scripts shadow print with it
function M.print(...)
  local parts = table.pack(...)
  for i = 1, parts.n do parts[i] = tostring(parts[i]) end
  for _, l in ipairs(M.fit(table.concat(parts, "\t", 1, parts.n))) do io.stdout:write(l, "\n") end
end

-- a heading: printed as M.print does, in bold when colour is on
function M.heading(line)
  for _, l in ipairs(M.fit(line)) do
    io.stdout:write(M.term.color and ("\27[1m" .. l .. "\27[0m") or l, "\n")
  end
end

-- "1 allocation", "2 allocations": a count and its noun, in the
-- singular for one (plural given when it is not noun .. "s").
function M.count(n, noun, plural)
  return ("%d %s"):format(n, n == 1 and noun or (plural or noun .. "s"))
end

function M.bytes(n)
  if n == nil then return "?" end
  local a = math.abs(n)
  if a >= 2^30 then return ("%.2f GiB"):format(n / 2^30) end
  if a >= 2^20 then return ("%.2f MiB"):format(n / 2^20) end
  if a >= 10 * 1024 then return ("%.1f KiB"):format(n / 1024) end
  return ("%d B"):format(n)
end

-- The frames of a stack (a heapscript.Stack, or a list of frame texts),
-- innermost first, at most max of them.
function M.frames(stack, max)
  if not stack then return {} end
  local f = type(stack) == "table" and stack or stack:frames()
  if max and max <= 0 then return {} end
  if max and #f > max then
    local cut = {}
    for i = 1, max do cut[i] = f[i] end
    cut[#cut + 1] = ("... %d more"):format(#f - max)
    return cut
  end
  return f
end

-- What stands for a stack where the records have none (the C side's
-- folded lines and stable keys write the same text).
M.NO_STACK = "(no stack)"

-- Modules whose frames a printed stack named by module and RVA alone
-- where its headline is (no PDB or symbol map was found for them):
-- report.finish says so once, with where to look.
local unnamed = {}
-- "seen" once a "(no stack)" was printed; "said" when the script said why
-- itself (leaks, per kind): report.finish explains it once otherwise.
local stackless

function M.print_stack(stack, indent, max)
  indent = indent or "      "
  if not stack then
    M.print(indent .. M.NO_STACK)
    stackless = stackless or "seen"
    return
  end
  for _, f in ipairs(M.frames(stack, max)) do M.print(indent .. f) end
  if type(stack) == "userdata" then
    local mod = M.headline(stack):match("^([^!]+)%+0x%x+$")
    if mod then unnamed[mod] = true end
  end
end

-- The script has said itself why its "(no stack)" lines have none.
function M.said_stackless() stackless = "said" end

-- "note: ..." for the modules above, or nil.
function M.unnamed_note()
  local mods = {}
  for m in pairs(unnamed) do mods[#mods + 1] = m end
  if #mods == 0 then return nil end
  table.sort(mods)
  local files = trace and trace.files and trace:files() or {}
  return ("note: frames of %s are named by module and offset only: no matching PDB or symbol map was found "
    .. "for %s (`heapscript symbols %s` says where it looked)"):format(table.concat(mods, ", "),
    #mods == 1 and "it" or "them", files[1] or "TRACE")
end

-- The innermost frame of a stack that is not in a system module: what a
-- person names a stack by ("MemoryTestApp.exe!InnerLoopOperation+0x1f [memorytestapp.c:53]").
local system = { "^ntdll", "^kernelbase", "^kernel32", "^ntoskrnl", "^nt!", "^ucrtbase", "^msvcrt",
                 "^win32k", "^hal%." }
function M.headline(stack)
  if not stack then return M.NO_STACK end
  local frames = stack:frames()
  for _, f in ipairs(frames) do
    local low = f:lower()
    local sys = false
    for _, p in ipairs(system) do if low:find(p) then sys = true; break end end
    if not sys then return f end
  end
  return frames[1] or "(empty stack)"
end

-- JSON, keys sorted, for machine-readable reports (heapscript.json, in C:
-- a report of 100,000 groups is a million values).
function M.json(v, indent)
  return heapscript.json(v, indent)
end

-- Write the text s to a path ("-" = standard output), never over one of
-- the trace's files (a typo would destroy the trace): a file that is the
-- trace, or cannot be opened or written whole, says so on stderr and
-- exits with status 2.  s may be a function(f) that writes the text to
-- the open file and returns true, or nil and a message.
function M.write(path, s)
  local function put(f)
    if type(s) == "function" then return s(f) end
    return f:write(s)
  end
  if path == "-" or path == true then put(io.stdout); return end
  local same = trace and trace.same_file and trace:same_file(path)
  if same then
    io.stderr:write(("heapscript: %s: is the trace %s; a report is written to another file\n"):format(path, same))
    os.exit(2)
  end
  local f, err = io.open(path, "wb")
  if not f then io.stderr:write("heapscript: " .. tostring(err) .. "\n"); os.exit(2) end
  local ok, werr = put(f)
  local closed, cerr = f:close()
  if not ok or not closed then       -- a full disk: a report cut short must not pass for whole
    io.stderr:write(("heapscript: %s: cannot write the report: %s\n"):format(path, tostring(werr or cerr)))
    os.exit(2)
  end
end

-- Write a JSON document to a path ("-" = standard output), as M.write:
-- made straight into the file (heapscript.json with a file), not held
-- whole as a string first.
function M.write_json(path, v)
  M.write(path, function(f)
    local ok, err = heapscript.json(v, "  ", f)
    if ok then ok, err = f:write("\n") end
    return ok, err
  end)
end

-- The damage the reader skipped in the run's traces (the command line's
-- and those read as inputs, such as a baseline: heapscript.input),
-- whatever read them (the script's loops or the analysis behind
-- trace:allocations), as {file = PATH, offset = N, buffer = N, what =
-- "what was expected"}: the lines the run prints on stderr at its end.
function M.damage()
  local out = {}
  for i, d in ipairs((heapscript.damage())) do
    out[i] = { file = d.path, offset = d.offset, buffer = d.buffer, what = d.what }
  end
  return out
end

-- The damage (M.damage) as lines for a report: the first ten, then how
-- many more (the run prints each on stderr).
function M.damage_lines(dmg)
  local l = {}
  for i, d in ipairs(dmg) do
    if i > 10 then l[#l + 1] = ("... and %d more (each is on standard error)"):format(#dmg - 10); break end
    l[i] = ("%s: offset 0x%x (buffer %d): expected %s"):format(d.file, d.offset, d.buffer, d.what)
  end
  return l
end

-- What the recording says it lost: the files' headers (EventsLost,
-- BuffersLost) and the buffers flagged as having lost events; nil when
-- nothing, else {events =, buffers =, flagged_buffers =}.  Heap tracing
-- loses events easily under load, and a lost free leaves its block
-- outstanding: leaks that are none.
function M.lost(T)
  T = T or trace
  if not T or not T.files then return nil end
  local ok, lost = pcall(function()
    local l = { events = 0, buffers = 0, flagged_buffers = 0 }
    for i = 1, #T:files() do
      local h, st = T:header(i), T:stats(i)
      l.events = l.events + (h.events_lost or 0)
      l.buffers = l.buffers + (h.buffers_lost or 0)
      l.flagged_buffers = l.flagged_buffers + (st.buffers_lost_flag or 0)
    end
    return l
  end)
  if not ok or lost.events + lost.buffers + lost.flagged_buffers == 0 then return nil end
  return lost
end

-- The change of summary s in brackets' words: "+12.5 KiB" (its Impacting
-- size, AIFO - AOFI bytes), which is outstanding(t2) - outstanding(t1)
-- unless memory allocated before the trace was freed in the window (AOFI
-- bytes that were never outstanding): then said as what it is.
function M.change_text(s)
  local sign = s.impacting >= 0 and "+" or ""
  if s.impacting == s.outstanding_end - s.outstanding_start then return sign .. M.bytes(s.impacting) end
  return ("impacting %s%s, counting %s freed that was allocated before the trace"):format(sign, M.bytes(s.impacting),
    M.bytes(s.outstanding_end - s.outstanding_start - s.impacting))
end

-- s with every byte that is no part of valid UTF-8 as U+FFFD, as the JSON
-- writer writes it: names from a symbol map, a pool tag, a file name are
-- bytes (report_formats' XML, baseline keys).
function M.utf8(s)
  if utf8.len(s) then return s end
  local out, i = {}, 1
  while i <= #s do
    local n, bad = utf8.len(s, i)
    if n then out[#out + 1] = s:sub(i); break end
    out[#out + 1] = s:sub(i, bad - 1) .. "\u{FFFD}"
    i = bad + 1
  end
  return table.concat(out)
end

-- The kinds trace T has records of, as a table kind -> boolean, each
-- asked of the trace when first read: a kind a trace has none of was most
-- likely not recorded (heap tracing off, a kernel flag left out).
function M.recorded(T)
  return setmetatable({}, { __index = function(t, kind)
    local has = #T:allocations{ kind = kind } > 0
    rawset(t, kind, has)
    return has
  end })
end

-- diff's allocations without a stack of one kind ({kind, base, new}, as
-- its JSON no_stack has them), in a line: "heap 0 B -> 400 B, 0 -> 4
-- allocations", with `arrow` for "->".
function M.no_stack_text(x, arrow)
  arrow = arrow or "->"
  return ("%s %s %s %s, %d %s %d allocations"):format(x.kind, M.bytes(x.base.bytes), arrow, M.bytes(x.new.bytes),
    x.base.count, arrow, x.new.count)
end

-- The sentence that says it.
function M.lost_text(l)
  local parts = {}
  if l.events > 0 then parts[#parts + 1] = M.count(l.events, "event") end
  if l.buffers > 0 then parts[#parts + 1] = M.count(l.buffers, "buffer") end
  local s = #parts > 0 and ("the recording lost %s (its header says)"):format(table.concat(parts, " and ")) or ""
  if l.flagged_buffers > 0 then
    s = s .. (s ~= "" and "; " or "the recording lost events: ")
      .. ("%s marked as having lost events"):format(M.count(l.flagged_buffers, "buffer"))
  end
  return s .. ": a block whose free was lost shows as outstanding"
end

-- The end of every report: layouts that do not fit (report.layouts), the
-- events the recording lost (`lost`), the damage (a report read from a
-- damaged trace says so, in its text and in its JSON: `damaged`,
-- `damage`), then the JSON when asked for, then the report files
-- (report.emit) of r when given.  Call it after the last question to the
-- trace.
-- A --window wholly after the trace's last event (or before its first)
-- is most likely a typo or the wrong trace: what it shows (what was
-- outstanding at its start, or nothing) is said in a note.
local function window_note(o, r)
  if not o.window or (not o.window[1] and not o.window[2]) then return nil end
  local T = r and type(r.trace) == "userdata" and r.trace or trace
  if not T then return nil end
  local ok, t1, t2 = pcall(function() return T:allocations():window() end)
  if not ok or not t1 then return nil end
  local w = ("--window %s,%s"):format(o.window[1] or "", o.window[2] or "")
  if o.window[1] and o.window[1] > t2 then
    return ("note: %s begins after the trace's last event (%.3f s): it shows only what was outstanding then"):format(w, t2)
  elseif o.window[2] and o.window[2] < t1 then
    return ("note: %s ends before the trace's first event (%.3f s): nothing lies in it"):format(w, t1)
  end
  return nil
end

function M.finish(o, out, r)
  local text = M.text(o)
  if text then M.note_doubtful() end
  local wnote = text and window_note(o, r)
  if wnote then M.print(wnote) end
  M.mark_doubtful(out)
  local lost = M.lost()
  out.lost = lost
  if text and lost then M.print("note: " .. M.lost_text(lost)) end
  local unnamed_note = text and M.unnamed_note()
  if unnamed_note then M.print(unnamed_note) end
  if text and stackless == "seen" then
    M.print("note: (no stack) stands for allocations no stack walk was matched to: recorded without stack walks "
      .. "for their events, or the walks were lost (see Recording a trace, README)")
  end
  local dmg = M.damage()
  out.damaged = #dmg > 0
  out.damage = dmg
  if text and #dmg > 0 then
    M.heading(("DAMAGED TRACE: %d damaged part%s skipped; the figures above leave out what %s held:")
      :format(#dmg, #dmg == 1 and " was" or "s were", #dmg == 1 and "it" or "they"))
    for _, line in ipairs(M.damage_lines(dmg)) do M.print("  " .. line) end
  end
  if o.json then M.write_json(o.json, out) end
  if r then
    r.damage, r.doubtful, r.lost = dmg, out.doubtful, lost
    M.emit(o, r)
  end
end

-- Selection filters common to the scripts, from their options.
function M.filters(o)
  local f = {}
  if o.kind then f.kind = o.kind end
  if o.process then f.process = o.process end
  if o.pid then f.pid = o.pid end
  if o.tag then                         -- "Irp" is the tag "Irp "; another length is refused there
    f.tag = (#o.tag >= 1 and #o.tag < 4) and (o.tag .. "   "):sub(1, 4) or o.tag
  end
  if o.window then f.window = o.window end
  return f
end

-- What to say when a selection is empty: "no WHAT allocations in this
-- trace", or, when the options filter by process, pid, tag or window,
-- "no WHAT allocations under --pid 1 (the trace has N of them)": a filter
-- that matches nothing is not a trace without allocations.  When the
-- trace has none of `kinds` at all, the kinds it has are named (with the
-- --kind that shows them, when the script has that option): `leaks
-- --kind heap` on a pool trace has allocations to show.
local KIND_WORDS = { heap = "heap", virtual = "VirtualAlloc", pool = "pool" }

-- "a", "a or b", "a, b or c" (with `last` "or").
local function join(w, last)
  if #w < 2 then return w[1] or "" end
  return table.concat(w, ", ", 1, #w - 1) .. " " .. last .. " " .. w[#w]
end

-- "heap", "heap or pool", "heap, VirtualAlloc or pool": kinds as words.
function M.kind_words(kinds)
  local w = {}
  for i, k in ipairs(kinds) do w[i] = KIND_WORDS[k] or k end
  return join(w, "or")
end

function M.none(o, what, kinds)
  local on = {}
  if o.process then on[#on + 1] = "--process " .. o.process end
  if o.pid then on[#on + 1] = "--pid " .. tostring(o.pid) end
  if o.tag then on[#on + 1] = "--tag " .. o.tag end
  if o.window then
    on[#on + 1] = ("--window %s,%s"):format(o.window[1] or "", o.window[2] or "")
  end
  if not trace then return ("no %s allocations in this trace"):format(what) end
  local n, asked = 0, {}
  for _, kind in ipairs(kinds) do
    n = n + #trace:allocations{ kind = kind }
    asked[kind] = true
  end
  if #on > 0 and n > 0 then
    return ("no %s allocations under %s (the trace has %d of them)"):format(what, table.concat(on, " "), n)
  end
  local has, other = {}, {}
  for _, kind in ipairs(M.KINDS) do
    local c = not asked[kind] and #trace:allocations{ kind = kind } or 0
    if c > 0 then
      has[#has + 1] = ("%d %s"):format(c, KIND_WORDS[kind])
      other[#other + 1] = kind
    end
  end
  local s = ("no %s allocations in this trace"):format(what)
  if #has == 0 then      -- none of any kind: most likely not recorded
    return n == 0 and s .. " (to record them: see Recording a trace, README)" or s
  end
  local list = join(has, "and")
  return ("%s; it has %s allocation%s%s"):format(s, list, list:match("^1 %S+$") and "" or "s",
    o.kind and (" (--kind %s)"):format(table.concat(other, ",")) or "")
end

-- For each kind asked for (o.kind), the non-empty selection of that kind
-- under the common filters: for kind, A in report.kinds(o) do ... end
function M.kinds(o)
  local i = 0
  return function()
    while true do
      i = i + 1
      local kind = o.kind[i]
      if not kind then return nil end
      local f = M.filters(o)
      f.kind = kind
      local A = trace:allocations(f)
      if #A > 0 then return kind, A end
    end
  end
end

-- Memory layouts that do not fit the trace (trace:layout_checks): each is
-- one line on stderr, once per run, and its kind's figures are doubtful.
-- Returns {kind = warning, ...} (empty when everything fits).  The first
-- call decides: `traces`, a list, for a script that reads other traces
-- than `trace` (diff: its two sides), each warning printed once.
local doubtful
function M.layouts(traces)
  if doubtful then return doubtful end
  doubtful = {}
  local said = {}
  for _, T in ipairs(traces or { trace }) do
    for _, r in ipairs(T:layout_checks()) do
      if r.warning and not said[r.warning] then
        said[r.warning] = true
        io.stderr:write("heapscript: ", r.warning, "\n")
        doubtful[r.kind] = doubtful[r.kind] or r.warning
      end
    end
  end
  return doubtful
end

-- " [doubtful: ...]" after a kind's figures in text, "" when they are sound.
function M.doubtful(kind)
  return M.layouts()[kind] and " [doubtful: the " .. kind .. " event layout does not fit this trace]" or ""
end

-- At the end of a text report: one note per kind whose figures are doubtful.
function M.note_doubtful()
  for _, kind in ipairs { "heap", "virtual", "pool" } do
    if M.layouts()[kind] then
      print(("note: %s figures are doubtful: the %s event layout does not fit this trace (see stderr)"):format(kind, kind))
    end
  end
end

-- out.doubtful = {kind = warning} for the JSON report, when a layout does not fit.
function M.mark_doubtful(out)
  if next(M.layouts()) then
    out.doubtful = {}
    for k, w in pairs(M.layouts()) do out.doubtful[k] = w end
  end
  return out
end

-- Sort list (of tables) in place by less, items that compare equal in
-- the order they had, and return it.  table.sort is not stable and picks
-- its pivots at random past 100 items: a report sorted with ties would
-- change from run to run.
function M.stable_sort(list, less)
  local at = {}
  for i, v in ipairs(list) do at[v] = i end
  table.sort(list, function(a, b)
    if less(a, b) then return true end
    if less(b, a) then return false end
    return at[a] < at[b]
  end)
  return list
end

-- First and last alloc time of a selection (nil, nil when none is known).
function M.span(A)
  local first, last
  for a in A:each() do
    local t = a.alloc_time
    if t then
      if not first or t < first then first = t end
      if not last or t > last then last = t end
    end
  end
  return first, last
end

-- A process as the reports name it: "name (pid)"; "?" for a name not
-- known, and no "(pid)" for a record with no process at all (its event
-- carried no ids), rather than "(nil)".
function M.process_label(name, pid)
  name = (name and name ~= "") and name or "?"
  if pid == nil then return name end
  return ("%s (%s)"):format(name, tostring(pid))
end

-- What a group of allocations (A:group's g) holds, for its line and its
-- finding: { sizes, processes ("name (pid)"), tags, each sorted, and first,
-- last: its earliest and latest alloc times }, and its sizes as text
-- ("40 B", "16 B, 32 B" or "12 sizes 16 B..4.0 KiB").
local PROCS_SHOWN = 5
function M.facts(g)
  local sizes, procs, tags = {}, {}, {}
  for a in g.allocs:each() do
    if a.tag then tags[a.tag] = true end
    if a.size then sizes[a.size] = true end
    procs[M.process_label(a.process, a.pid)] = true
  end
  local f = { sizes = {}, processes = {}, tags = {} }
  for t in pairs(tags) do f.tags[#f.tags + 1] = t end
  table.sort(f.tags)
  for sz in pairs(sizes) do f.sizes[#f.sizes + 1] = sz end
  table.sort(f.sizes)
  for p in pairs(procs) do f.processes[#f.processes + 1] = p end
  table.sort(f.processes)
  f.first, f.last = M.span(g.allocs)
  local szl = {}
  for j, sz in ipairs(f.sizes) do szl[j] = M.bytes(sz) end
  f.sizes_text = #szl <= 4 and table.concat(szl, ", ") or ("%d sizes %s..%s"):format(#szl, szl[1], szl[#szl])
  -- the processes for a line of text: the first few, then how many more (a stack of every
  -- process of a million made a line of 22 MB)
  local np = #f.processes
  f.processes_text = np <= PROCS_SHOWN and table.concat(f.processes, ", ")
    or table.concat(f.processes, ", ", 1, PROCS_SHOWN) .. (" and %d more"):format(np - PROCS_SHOWN)
  return f
end

-- A stack group's entry in a script's JSON (its `bytes` as the script
-- counts them), and its finding for the report files (a type, AIFO..., and
-- what it is: "leak", ...); fa is report.facts(g).
function M.stack_entry(g, fa, bytes)
  return { count = g.count, bytes = bytes, sizes = fa.sizes, first = fa.first, last = fa.last,
           processes = fa.processes, tags = fa.tags, headline = M.headline(g.stack), frames = M.frames(g.stack) }
end

function M.stack_finding(kind, type, what, g, fa, e)
  return { type = type, what = what, kind = kind, process = table.concat(fa.processes, ", "), headline = e.headline,
           frames = e.frames, count = g.count, bytes = e.bytes, impacting = g.impacting, first = fa.first,
           last = fa.last }
end

-- A stack group into a script's report: report.facts of it, its entry
-- appended to k.stacks and its finding to findings; returns fa and the
-- entry, for the script's own fields and its line.
function M.add_stack(k, findings, kind, type, what, g, bytes)
  local fa = M.facts(g)
  local e = M.stack_entry(g, fa, bytes)
  k.stacks[#k.stacks + 1] = e
  findings[#findings + 1] = M.stack_finding(kind, type, what, g, fa, e)
  return fa, e
end

-- A share as a stack line shows it: "35%", "<1%".
function M.share(x)
  return x < 0.005 and "<1%" or ("%.0f%%"):format(100 * x)
end

-- ", tag Leak, Irp " after a stack line's processes, or "".
function M.tags_text(fa)
  return #fa.tags > 0 and (", tag " .. table.concat(fa.tags, ", ")) or ""
end

-- The report files every script can write besides its text: a page,
-- a table, a pull-request comment, a flame graph's input.  report.options
-- accepts these options for every spec; a script hands its findings to
-- report.emit at the end (report_formats.lua, report_html.lua).
M.OUTPUTS = { html = "string", csv = "string", markdown = "string", folded = "string" }
-- The kinds a --kind option may name (report.options: a list of words).
M.KINDS = { "heap", "virtual", "pool" }
M.OUTPUT_USAGE = [[
  --html FILE, --csv FILE, --markdown FILE, --folded FILE
                             report files: a page, the findings as CSV, a
                             pull-request summary, bytes by stack for flame
                             graphs ("-": standard output, then no text)
]]

function M.emit(o, r)
  if o.html or o.csv or o.markdown or o.folded or o.junit then
    return require("report_formats").emit(o, r)
  end
end

return M
