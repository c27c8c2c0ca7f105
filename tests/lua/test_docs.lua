-- test_docs.lua -- every ```lua block of the Lua documentation compiles,
-- every block meant to run runs without an error, and every command line
-- the docs show with its output prints that output.
--
--   docs/API.md, docs/ALLOCATIONS.md, docs/WRITER.md, docs/SCRIPTS.md, docs/SYMBOLS.md
--
-- Each block is compiled with load() under the chunk name
-- "@docs/FILE.md:LINE", LINE being the doc line of the block's first line,
-- so an error "docs/API.md:120:3: ..." is on line 3 of the block that
-- starts at line 120 (the failure line also names the doc line itself).
--
-- A block runs in a fresh environment (reads fall back to _G, globals it
-- sets stay in it) where
--   trace    is examples/memorytestapp.etl, opened with heapscript.open
--            (a fresh Trace per block, closed after it);
--   print, io.write, io.stdout, io.stderr  are captured, not shown
--            (HS_DOCS_VERBOSE=1 shows them);
--   os.exit  raises an error;
--   arg      is {[0] = "docs/FILE.md:LINE"} and `...` is empty.
-- Modules a block requires see the same trace, print and os.exit.  After
-- each block the current symbol map is forgotten, modules it loaded are
-- unloaded, and methods it added to the heapscript classes are removed.
--
-- Markers: comment lines at the top of a block (before its first line of
-- code) may say
--   -- trace: PATH [PATH...]   open these files (merged) as `trace`
--   -- trace: none             `trace` is nil
--   -- no-run: REASON          compile only (a fragment; the reason is required)
--
-- Run from the top of the tree: heapscript tests/lua/test_docs.lua
-- (optionally followed by -- FILE.md... to test some files only).

package.path = "tests/lua/?.lua;tests/corpus/?.lua;" .. package.path
local T = require "testlib"

local files = { ... }
if #files == 0 then files = { "docs/API.md", "docs/ALLOCATIONS.md", "docs/WRITER.md", "docs/SCRIPTS.md", "docs/SYMBOLS.md" } end
local verbose = os.getenv("HS_DOCS_VERBOSE") == "1"
local DEFAULT_TRACE = "examples/memorytestapp.etl"

local real = { print = print, exit = os.exit, write = io.write, stdout = io.stdout, stderr = io.stderr,
               trace = rawget(_G, "trace") }

-- The ```lua blocks of Markdown text: {line = first code line, lines = {...}, code = text}
local function blocks_of(text)
  local list, cur, n = {}, nil, 0
  for line in (text .. "\n"):gmatch("(.-)\n") do
    n = n + 1
    line = line:gsub("\r$", "")
    if cur then
      if line:match("^%s*```%s*$") then
        cur.code = table.concat(cur.lines, "\n") .. "\n"
        list[#list + 1] = cur
        cur = nil
      else
        cur.lines[#cur.lines + 1] = line
      end
    elseif line:match("^%s*```lua%s*$") then
      cur = { line = n + 1, lines = {} }
    end
  end
  if cur then list[#list + 1] = { line = cur.line, unclosed = true, lines = cur.lines, code = "" } end
  return list
end

local function blocks(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local text = f:read("a")
  f:close()
  return blocks_of(text)
end

-- Markers from the leading comment lines of a block.
local function markers(b)
  local m = {}
  for _, l in ipairs(b.lines) do
    if l:match("^%s*$") then goto continue end
    if not l:match("^%s*%-%-") then break end
    do
      local tr = l:match("^%s*%-%-%s*trace:%s*(.-)%s*$")
      if tr then
        if tr == "none" then m.no_trace = true
        else
          m.trace = {}
          for p in tr:gmatch("%S+") do m.trace[#m.trace + 1] = p end
        end
      end
      local nr = l:match("^%s*%-%-%s*no%-run:?%s*(.-)%s*$")
      if nr then m.no_run = nr end
    end
    ::continue::
  end
  return m
end

-- Output of print and io.write, kept while a block runs.
local captured = {}
local function cap_write(...)
  for i = 1, select("#", ...) do captured[#captured + 1] = tostring((select(i, ...))) end
  return true
end
local fake_out = setmetatable({}, { __index = {
  write = function(self, ...) cap_write(...); return self end,
  flush = function(self) return self end,
  close = function() return true end,
  setvbuf = function() return true end,
}, __name = "FILE*", __tostring = function() return "file (captured)" end })
local function cap_print(...)
  local n = select("#", ...)
  for i = 1, n do
    captured[#captured + 1] = tostring((select(i, ...)))
    captured[#captured + 1] = i < n and "\t" or ""
  end
  captured[#captured + 1] = "\n"
end
local function forbidden_exit()
  error("os.exit is not allowed in a doc example (return a value instead)", 2)
end

-- Snapshot and restore of the heapscript module and its class tables, so
-- that a block adding a method does not change the blocks after it.
local function snapshot()
  local s = { pkg = {}, mod = {}, classes = {} }
  for k in pairs(package.loaded) do s.pkg[k] = true end
  for k, v in pairs(heapscript) do
    s.mod[k] = v
    if type(v) == "table" then
      local c = {}
      for kk, vv in pairs(v) do c[kk] = vv end
      s.classes[v] = c
    end
  end
  return s
end
local function restore(s)
  for k in pairs(package.loaded) do if not s.pkg[k] then package.loaded[k] = nil end end
  for k in pairs(heapscript) do if s.mod[k] == nil then heapscript[k] = nil end end
  for k, v in pairs(s.mod) do heapscript[k] = v end
  for t, c in pairs(s.classes) do
    for k in pairs(t) do if c[k] == nil then t[k] = nil end end
    for k, v in pairs(c) do t[k] = v end
  end
end

-- "docs/X.md:120:3: msg" -> doc line 122
local function docline(msg, b, name)
  local n = tostring(msg):match(name:gsub("%p", "%%%0") .. ":(%d+):")
  return n and (b.line + tonumber(n) - 1) or nil
end

local function run_block(path, b)
  local name = path .. ":" .. b.line
  if b.unclosed then return false, "the ```lua block is not closed" end
  local m = markers(b)
  local env = setmetatable({}, { __index = _G })
  local chunk, err = load(b.code, "@" .. name, "t", env)
  if not chunk then return false, err end
  if m.no_run then
    if m.no_run == "" then return false, "-- no-run needs a reason" end
    return true, "compiled only: " .. m.no_run
  end
  local t
  if not m.no_trace then
    local paths = m.trace or { DEFAULT_TRACE }
    local msg
    t, msg = heapscript.open(table.unpack(paths))
    if not t then return false, "cannot open the block's trace: " .. tostring(msg) end
  end
  env.trace = t
  env.arg = { [0] = name }
  local snap = snapshot()
  captured = {}
  _G.trace, _G.print, os.exit, io.write, io.stdout, io.stderr =
    t, cap_print, forbidden_exit, cap_write, fake_out, fake_out
  heapscript.symbols(false)
  local ok, res = xpcall(chunk, debug.traceback)
  _G.trace, _G.print, os.exit, io.write, io.stdout, io.stderr =
    real.trace, real.print, real.exit, real.write, real.stdout, real.stderr
  heapscript.symbols(false)
  restore(snap)
  if t then t:close() end
  collectgarbage()
  if verbose and #captured > 0 then
    real.write((table.concat(captured):gsub("[^\n]*\n?", function(l) return l ~= "" and "    | " .. l or "" end)))
  end
  if not ok then
    local dl = docline(res, b, name)
    res = tostring(res):gsub("\n%s*%[C%]: in function 'xpcall'.*$", "")   -- the harness's own frames
    return false, (dl and ("doc line " .. dl .. ": ") or "") .. res
  end
  return true
end

-- The harness itself: a failing block fails and names its doc line, markers
-- work, os.exit is refused, print is captured.
do
  local doc = table.concat({
    "text",                                           -- 1
    "```lua",                                         -- 2
    "local x = 1",                                    -- 3
    "error('boom')",                                  -- 4
    "```",                                            -- 5
    "```lua",                                         -- 6
    "-- no-run: a fragment",                          -- 7
    "error('not run')",                               -- 8
    "```",                                            -- 9
    "```lua",                                         -- 10
    "-- trace: examples/notmyfault.etl",              -- 11
    "assert(trace:count{provider = 'Pool'} == 2960)", -- 12
    "print('hidden')",                                -- 13
    "```",                                            -- 14
    "```lua",                                         -- 15
    "-- trace: none",                                 -- 16
    "assert(trace == nil)",                           -- 17
    "```",                                            -- 18
    "```lua",                                         -- 19
    "os.exit(0)",                                     -- 20
    "```",                                            -- 21
    "```lua",                                         -- 22
    "local = 1",                                      -- 23
    "```",                                            -- 24
    "```lua",                                         -- 25
    "-- no-run:",                                     -- 26
    "```",                                            -- 27
  }, "\n")
  local b = blocks_of(doc)
  T.check(#b == 7 and b[1].line == 3 and b[3].line == 11, "harness: blocks and their first lines")
  local ok, msg = run_block("self.md", b[1])
  T.check(not ok and msg:find("doc line 4: self.md:3:2: boom", 1, true), "harness: an error fails and names the doc line", msg)
  T.check(select(2, run_block("self.md", b[2])) == "compiled only: a fragment", "harness: -- no-run compiles only")
  ok, msg = run_block("self.md", b[3])
  T.check(ok and table.concat(captured) == "hidden\n", "harness: -- trace: opens that trace; print is captured", msg)
  T.check((run_block("self.md", b[4])), "harness: -- trace: none")
  ok, msg = run_block("self.md", b[5])
  T.check(not ok and msg:find("os.exit is not allowed", 1, true), "harness: os.exit is refused", msg)
  T.check(os.exit == real.exit and print == real.print and io.stdout == real.stdout, "harness: globals restored")
  ok, msg = run_block("self.md", b[6])
  T.check(not ok and msg:find("self.md:23", 1, true), "harness: a syntax error fails", msg)
  T.check(not run_block("self.md", b[7]), "harness: -- no-run needs a reason")
end

local nblocks, nrun, ncompiled = 0, 0, 0
for _, path in ipairs(files) do
  local list, err = blocks(path)
  if not list then
    T.check(false, path, err)
  elseif #list == 0 then
    T.check(false, path, "no ```lua blocks")
  else
    for _, b in ipairs(list) do
      nblocks = nblocks + 1
      local ok, note = run_block(path, b)
      if ok and note then
        ncompiled = ncompiled + 1
        T.check(true, path .. ":" .. b.line .. " # " .. note)
      else
        if ok then nrun = nrun + 1 end
        T.check(ok, path .. ":" .. b.line, note)
      end
    end
  end
end
-- The command lines the docs show with their output ("$ heapscript ..."
-- in a ``` block, then what it prints up to the next "$ " line or the
-- block's end): each is run from the top of the tree, `heapscript` being
-- the binary under test, and must print exactly that (standard output).
-- A line naming a .etl or .lua file that does not exist is an
-- illustration (a CI's own trace), not run.  A line that sends its
-- standard output elsewhere (`> FILE`, `>/dev/null`) is refused: the
-- output it shows (or its empty output) would be checked against nothing.
local function commands_of(text)
  local list, inblock, cur, n = {}, false, nil, 0
  for line in (text .. "\n"):gmatch("(.-)\n") do
    n = n + 1
    line = line:gsub("\r$", "")
    if line:match("^%s*```") then
      if cur then list[#list + 1] = cur; cur = nil end
      inblock = not inblock
    elseif inblock and line:match("^%$ ") then
      if cur then list[#list + 1] = cur; cur = nil end
      if line:match("^%$ heapscript ") then cur = { line = n, cmd = line:sub(3), out = {} } end
    elseif cur then
      cur.out[#cur.out + 1] = line
    end
  end
  return list
end

local function exists(path) local f = io.open(path, "rb"); if f then f:close() end; return f ~= nil end

local ncmd, nshown = 0, 0
for _, path in ipairs(files) do
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  for _, c in ipairs(commands_of(text)) do
    local missing
    for tok in c.cmd:gmatch("[^%s|]+") do
      if tok:match("%.etl$") or tok:match("%.lua$") then
        if not exists(tok) then missing = tok end
      end
    end
    local away = c.cmd:gsub("%d>&?%S*", ""):match(">%s*%S+")
    T.check(not away, ("%s:%d: $ %s keeps its standard output (the doc shows it)"):format(path, c.line, c.cmd),
            away and ("it is sent to " .. away))
    if missing then
      nshown = nshown + 1
    elseif not away then
      ncmd = ncmd + 1
      local p = T.popen(T.bin() .. c.cmd:sub(#"heapscript" + 1) .. " 2>/dev/null")
      local out = p:read("a")
      p:close()
      local want = table.concat(c.out, "\n"):gsub("\n+$", "")
      local got = out:gsub("\r\n", "\n"):gsub("\n+$", "")   -- a CSV's CRLF shows as a line end
      T.check(got == want, ("%s:%d: $ %s prints what the doc shows"):format(path, c.line, c.cmd),
              got ~= want and ("got:\n" .. got) or nil)
    end
  end
end
T.check(ncmd >= 20, "command lines with their output checked", ncmd)
print(("%d blocks: %d ran, %d compiled only; %d command lines checked, %d illustrations"):format(nblocks, nrun,
  ncompiled, ncmd, nshown))
return T.done("test_docs")
