-- test_cli.lua -- script mode of the command line, run as a child process:
-- errors carry the script's file:line, exit codes, bundled scripts and
-- their override by -I / HEAPSCRIPT_PATH, require, lpeg, arg.
--
-- Run: heapscript tests/lua/test_cli.lua   (HS_BIN names the binary;
-- otherwise the program this script runs under).  Tests that need a
-- trace use the corpus (HEAPSCRIPT_CORPUS, default ../shared/traces) and
-- are skipped without it, unless CI=true.

package.path = "tests/lua/?.lua;tests/corpus/?.lua;" .. package.path
local T = require "testlib"
local corpus = T.corpus
local small = T.corpus_file("microsoft_perfview__diagsession_diaghub.user_injected.1.etl")  -- bundled
local have_corpus = small ~= nil
if not have_corpus and os.getenv("CI") == "true" then
  print("not ok - corpus missing at " .. corpus .. " and CI=true")
  os.exit(1)
end
local bin = T.bin()
local check, eq, skip, test, q = T.check, T.eq, T.skip, T.test, T.q

-- run a shell command line; returns exit code, stdout, stderr
local errfile = T.tmpname()
local function run(cmdline, env)
  local p = io.popen((env or "") .. " " .. cmdline .. " 2>" .. q(errfile))
  local out = p:read("a")
  local _, _, code = p:close()
  local f = io.open(errfile, "rb")
  local err = f:read("a")
  f:close()
  return code, out, err
end
local function hs(args, env) return run(q(bin) .. " " .. args, env) end

local tmpfiles = {}
local function tmpscript(text)
  local name = T.tmpname(".lua")
  local f = assert(io.open(name, "wb"))
  f:write(text)
  f:close()
  tmpfiles[#tmpfiles + 1] = name
  return name
end
local tmpdir = T.tmpname()
os.remove(tmpdir)
local function mkfile(path, text)
  os.execute("mkdir -p " .. q(path:match("^(.*)/[^/]*$")))
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

-- errors carry file:line and a traceback --------------------------------
test("runtime error", function()
  local s = tmpscript("local x = 1\n\nlocal function f() error('boom') end\nf()\n")
  local code, _, err = hs(q(s))
  eq(code, 1, "runtime error: exit 1")
  check(err:find("heapscript: " .. s .. ":3: boom", 1, true), "runtime error: 'heapscript: FILE:3: boom'", err)
  check(err:find("stack traceback:", 1, true), "runtime error: traceback printed", err)
  check(err:find(s .. ":4: in main chunk", 1, true), "runtime error: traceback names the caller line", err)
end)

test("syntax error", function()
  local s = tmpscript("local a = 1\nlocal b = = 2\n")
  local code, _, err = hs(q(s))
  eq(code, 1, "syntax error: exit 1")
  check(err:find("heapscript: " .. s .. ":2:", 1, true), "syntax error: 'heapscript: FILE:2:'", err)
end)

test("error object", function()
  local code, _, err = hs(q(tmpscript("error({})\n")))
  eq(code, 1, "error with a table: exit 1")
  check(err:find("error object is a table value", 1, true), "error with a table: says so", err)
  code, _, err = hs(q(tmpscript("error(setmetatable({}, {__tostring = function() return 'mine' end}))\n")))
  check(code == 1 and err:find("heapscript: mine", 1, true), "error object with __tostring", err)
end)

test("error in a required module", function()
  mkfile(tmpdir .. "/req/badmod.lua", "local t = {}\nfunction t.f() error('inside') end\nreturn t\n")
  local s = tmpscript("local m = require 'badmod'\nm.f()\n")
  local code, _, err = hs("-I " .. q(tmpdir .. "/req") .. " " .. q(s))
  eq(code, 1, "module error: exit 1")
  check(err:find(tmpdir .. "/req/badmod.lua:2: inside", 1, true), "module error: names the module file:line", err)
end)

-- exit codes --------------------------------------------------------------
test("exit codes", function()
  eq((hs(q(tmpscript("return 7\n")))), 7, "return 7 -> exit 7")
  eq((hs(q(tmpscript("return 0\n")))), 0, "return 0 -> exit 0")
  eq((hs(q(tmpscript("return false\n")))), 1, "return false -> exit 1")
  eq((hs(q(tmpscript("return true\n")))), 0, "return true -> exit 0")
  eq((hs(q(tmpscript("print('x')\n")))), 0, "no return -> exit 0")
  eq((hs(q(tmpscript("return 'text'\n")))), 0, "return a string -> exit 0")
  eq((hs(q(tmpscript("os.exit(5)\n")))), 5, "os.exit(5) -> exit 5")
  eq((hs(q(tmpscript("os.exit(false)\n")))), 1, "os.exit(false) -> exit 1")
  local code, out = hs(q(tmpscript("io.write('flushed') os.exit(3, true)\n")))
  check(code == 3 and out == "flushed", "os.exit(3, true) closes the state and flushes", out)
end)

test("exit codes with a damaged trace", function()
  -- the first 100000 bytes of a sound trace: it ends inside a buffer
  local f = assert(io.open("examples/notmyfault.etl", "rb"))
  local cut = tmpscript("")
  local g = assert(io.open(cut, "wb"))
  g:write(f:read(100000))
  g:close()
  f:close()
  eq((hs(q(tmpscript("return 0\n")) .. " " .. q(cut))), 1, "damaged trace, return 0 -> exit 1")
  eq((hs(q(tmpscript("return 3\n")) .. " " .. q(cut))), 3, "damaged trace, return 3 -> exit 3 (the script's own status stays)")
end)

test("usage errors", function()
  local code, _, err = hs("no-such-script-xyz")
  eq(code, 2, "missing script: exit 2")
  check(err:find("cannot find script 'no-such-script-xyz'", 1, true), "missing script: message", err)
  check(err:find("no bundled 'scripts/no-such-script-xyz.lua'", 1, true), "missing script: lists the places tried", err)
  code = hs("-I")
  eq(code, 2, "-I without a directory: exit 2")
  code = hs("--no-such-option x.lua")
  eq(code, 2, "unknown option: exit 2")
  code, _, err = hs("--live --pid 0 x.lua")
  check(code == 2 and err:find("option --pid: bad value '0'", 1, true), "--pid 0: exit 2, a bad value", err)
end)

test("trace that cannot be opened", function()
  local s = tmpscript("print('ran')\n")
  local code, out, err = hs(q(s) .. " /nonexistent/dir/x.etl")
  eq(code, 2, "missing trace: exit 2")
  check(out == "", "missing trace: the script does not run", out)
  check(err:find("/nonexistent/dir/x.etl", 1, true), "missing trace: message names the file", err)
  local junk = T.tmpname()
  local f = io.open(junk, "wb")
  f:write(string.rep(" ", 8192))
  f:close()
  code, out, err = hs(q(s) .. " " .. q(junk))
  os.remove(junk)
  eq(code, 2, "junk trace: exit 2")
  check(err:find(junk, 1, true) and err:find("offset", 1, true), "junk trace: message names the file and the offset", err)
end)

-- the script's environment ------------------------------------------------
test("arg and varargs", function()
  local s = tmpscript("print(arg[0], #arg, arg[1], arg[2], select('#', ...), trace, ...)\n")
  local code, out = hs(q(s) .. " -- one 'two words'")
  eq(code, 0, "args: exit 0")
  eq(out, s .. "\t2\tone\ttwo words\t2\tnil\tone\ttwo words\n", "arg[0], arg[i] and ... hold SCRIPT and the ARGs; trace is nil")
  s = tmpscript("print(arg[-1], arg[-2], arg[-3] ~= nil, arg[-4], #arg)\n")
  code, out = hs("-I " .. q(tmpdir) .. " " .. q(s) .. " --symbol-path=" .. q(tmpdir))
  eq(out, tmpdir .. "\t-I\ttrue\tnil\t0\n",
     "arg[-1], arg[-2]: the options before SCRIPT, arg[-3] the program; --symbol-path=P after SCRIPT is heapscript's")
end)

test("lpeg and heapscript preloaded", function()
  local lpeg = require "lpeg"
  local digits = lpeg.C(lpeg.R("09") ^ 1)
  eq(digits:match("2024-"), "2024", "require 'lpeg' works")
  eq(require "heapscript", heapscript, "require 'heapscript' is the global heapscript")
  eq(type(heapscript.open), "function", "heapscript.open exists")
  eq(type(heapscript.version), "string", "heapscript.version is a string")
end)

-- bundled scripts and the search path --------------------------------------
-- A test run recorded to its end: the program exits, the trace goes on. What it never freed is its
-- leak (an exit frees nothing: LIFETIMES.md; WPA's AIFO): leaks and growth report it, policy fails,
-- transient and churn do not call it released. It ended at the Process End, and leaks said 0 B.
test("a program that exits inside the trace: its leaks", function()
  local S = 10000000
  local path = T.tmpname(".etl")
  local w = assert(heapscript.writer(path))
  w:process { op = "start", pid = 1000, ppid = 4, ts = 1 * S // 10, name = "app.exe" }
  local ev = {}   -- 200 blocks never freed, 100 freed at once, a commit never released; in time order
  for i = 0, 199 do
    ev[#ev + 1] = { S // 2 + i * 400000, "alloc", 0x100000 + i * 0x1000, 512 }
  end
  for i = 0, 99 do
    ev[#ev + 1] = { 6 * S // 10 + i * 500000 + 50000, "alloc", 0x900000, 64 }
    ev[#ev + 1] = { 6 * S // 10 + i * 500000 + 150000, "free", 0x900000 }
  end
  ev[#ev + 1] = { 3 * S + 7, "commit" }
  table.sort(ev, function(a, b) return a[1] < b[1] end)
  for _, e in ipairs(ev) do
    if e[2] == "commit" then
      w:virtual { op = "alloc", pid = 1000, tid = 1004, ts = e[1], addr = 0x40000000, size = 0x400000 }
    else
      w:heap { op = e[2], pid = 1000, tid = 1004, ts = e[1], heap = 0x10000, addr = e[3], size = e[4],
               stack = e[4] == 512 and { 0x7ff700001010 } or nil }
    end
  end
  w:process { op = "end", pid = 1000, ppid = 4, ts = 10 * S, name = "app.exe" }
  w:process { op = "dcend", pid = 4, ts = 12 * S, name = "System" }
  assert(w:close())
  local code, out = hs("leaks " .. q(path))
  check(code == 0 and out:find("heap: 300 records; 200 allocated and not freed by 12.000 s: 100.0 KiB", 1, true)
        and out:find("virtual: 1 record; 1 allocated and not freed by 12.000 s: 4.00 MiB", 1, true),
        "leaks: the heap blocks and the commit the program never freed", out)
  code, out = hs("transient " .. q(path) .. " --min-size 256 --max-lifetime 20")
  check(code == 0 and not out:find("512 B", 1, true), "transient: they were not released", out)
  code, out = hs("policy " .. q(path))
  check(code == 1 and out:find("heap-repeated-leak", 1, true), "policy: the leak breaks the build (200 blocks of one stack)", out)
  os.remove(path)
end)

test("bundled script lookup", function()
  local code, out, err = hs("--list")
  eq(code, 0, "--list: exit 0")
  check(out:find("scripts/events.lua", 1, true), "--list names scripts/events.lua", out)
  -- without a trace, events.lua says so and returns 2: it was found
  for _, name in ipairs { "events", "events.lua" } do
    code, out, err = hs(name)
    check(code == 2 and err:find("events.lua: no trace given", 1, true),
          "bundled script found by the name '" .. name .. "'", ("exit %s: %s"):format(code, err))
  end
  if have_corpus then
    code, out = hs("events " .. q(small))
    eq(code, 0, "heapscript events TRACE: exit 0")
    check(out:find("4  events, 4 kinds, 1 file\n", 1, true), "heapscript events TRACE: counts 4 events", out)
  else
    skip("heapscript events TRACE", "no corpus")
  end
end)

test("bundled chunk names", function()
  -- an error raised on behalf of bundled code points into the bundled file (events.lua, or the
  -- report.lua it calls first)
  local s = tmpscript([[
trace = setmetatable({}, {__index = function() error("fake trace", 2) end})
arg = {}
require "events"
]])
  local code, _, err = hs(q(s))
  eq(code, 1, "error in a bundled module: exit 1")
  check(err:match("heapscript: scripts/[%w_]+%.lua:%d+: fake trace"), "bundled chunk is named scripts/NAME.lua", err)
end)

test("-I and HEAPSCRIPT_PATH override bundled scripts", function()
  local d1, d2 = tmpdir .. "/one", tmpdir .. "/two"
  mkfile(d1 .. "/events.lua", "print('from one') return 0\n")
  mkfile(d2 .. "/events.lua", "print('from two') return 0\n")
  local code, out = hs("-I " .. q(d1) .. " events")
  check(code == 0 and out == "from one\n", "-I DIR overrides a bundled script", out)
  code, out = hs("-I" .. q(d1) .. " events.lua")
  check(code == 0 and out == "from one\n", "-IDIR works too", out)
  code, out = hs("events", "HEAPSCRIPT_PATH=" .. q(d2))
  check(code == 0 and out == "from two\n", "HEAPSCRIPT_PATH overrides a bundled script", out)
  code, out = hs("-I " .. q(d1) .. " events", "HEAPSCRIPT_PATH=" .. q(d2))
  check(code == 0 and out == "from one\n", "-I comes before HEAPSCRIPT_PATH", out)
  code, out = hs("-I /nonexistent events", "HEAPSCRIPT_PATH=" .. q("/nonexistent:" .. d2))
  check(code == 0 and out == "from two\n", "HEAPSCRIPT_PATH split on ':'", out)
  code, out = hs("events", "HEAPSCRIPT_PATH=" .. q("/nonexistent;" .. d2 .. ";"))
  check(code == 0 and out == "from two\n", "HEAPSCRIPT_PATH split on ';'", out)
  -- a directory given with a trailing '\\' (Windows) is joined without a '/'; on
  -- Linux the name is one file, "bs\\back.lua"; for heapscript.exe (under Wine,
  -- HS_WINE) it is bs/back.lua
  local bs = (T.windows or os.getenv("HS_WINE") == "1") and "/bs/" or "/bs\\"
  mkfile(tmpdir .. bs .. "back.lua", "print('from bs') return 0\n")
  code, out = hs("-I " .. q(tmpdir .. "/bs\\") .. " back")
  check(code == 0 and out == "from bs\n", "-I DIR\\ finds DIR\\back.lua", out)
end)

test("require through the search path", function()
  local d = tmpdir .. "/mods"
  mkfile(d .. "/rules/mine.lua", "return {value = 42, where = ...}\n")
  mkfile(d .. "/events.lua", "return 'overridden'\n")
  local s = tmpscript([[
local m, extra = require "rules.mine"
print(m.value, m.where, extra)
print((require "events"))
local ok, err = pcall(require, "no.such.module")
print(ok, err:find("no bundled 'scripts/no/such/module.lua'", 1, true) ~= nil)
]])
  local code, out, err = hs("-I " .. q(d) .. " " .. q(s))
  eq(code, 0, "require: exit 0 (" .. err .. ")")
  local want = ("42\trules.mine\t%s/rules/mine.lua\noverridden\nfalse\ttrue\n"):format(d)
  eq(out, want, "require 'rules.mine' from -I DIR, override of a bundled module, missing-module message")
  -- the bundled module itself (events.lua returns 2 without a trace)
  s = tmpscript("local r, where = require 'events'\nprint(r, where)\n")
  code, out = hs(q(s))
  check(code == 0 and out == "2\tscripts/events.lua\n", "require 'events' loads the bundled file", out)
end)

-- a user's mistakes and extreme values: said where they were made, never
-- undefined behaviour (the SANITIZE=1 build aborts on it: a failed check)
test("mistakes said at the script's line, extremes held", function()
  local ex = q("examples/memorytestapp.etl")
  local s = tmpscript("local A = trace:allocations{kind = 'heap'}\n"
    .. "local ok, e = pcall(function() return trace:allocations{process = '['} end) print(e)\n"
    .. "ok, e = pcall(function() return trace:allocations{stack = '[a'} end) print(e)\n"
    .. "local st for a in A:each() do st = a.stack if st then break end end\n"
    .. "ok, e = pcall(function() return st:matches('%') end) print(e)\n"
    .. "ok, e = pcall(function() return A:group(function() return 0/0 end) end) print(e)\n"
    .. "local s, p = A:series{window = {1e10, 1e11}, points = 2}, A:series{window = {1e10, 1e11}, points = 2, peaks = true}\n"
    .. "print(s.time[1] == p.time[1] and p.time[1] > 0)\n"
    .. "s = A:series{window = {1e300, 1e301}, points = 3} print(s.time[1] == s.time[3] and s.time[3] < 1e9)\n")
  local code, out, err = hs(q(s) .. " " .. ex)
  eq(code, 0, "exit 0 (" .. err .. ")")
  local l = {}
  for line in out:gmatch("[^\n]+") do l[#l + 1] = line end
  check((l[1] or ""):find(s .. ":2: bad argument #1 to 'allocations' (filter 'process': malformed pattern", 1, true),
        "a malformed process pattern, at the script's line", l[1])
  check((l[2] or ""):find(s .. ":3: stack pattern '[a': malformed pattern", 1, true), "... a stack filter's", l[2])
  check((l[3] or ""):find(s .. ":5: stack pattern '%': malformed pattern", 1, true), "... s:matches'", l[3])
  check((l[4] or ""):find(s .. ":6: bad argument #1 to 'group' (group by a function: it returned NaN", 1, true),
        "a key function's NaN", l[4])
  eq(l[5], "true", "a series after the trace: its times the same either way, and late")
  eq(l[6], "true", "a series whose both ends are past every time: the trace's last moment, not inf")
  code, out, err = hs("events " .. ex .. " --provider nosuch")
  check(code == 2 and err:find("events: --provider: 'nosuch' is neither a GUID nor a provider name\n", 1, true)
        and not err:find("traceback", 1, true), "events --provider of no provider: a usage error, exit 2", err)
  code, out, err = hs("leaks " .. ex .. " --window 1e30,2e30")
  check(code == 2 and err:find("--window: expected T1,T2", 1, true), "a window no trace reaches: exit 2", err)
  -- a window past the trace's last event, or before its first: a note says what it shows
  for _, script in ipairs { "leaks", "transient", "growth", "peak", "churn", "pool" } do
    code, out = hs(script .. " " .. ex .. " --window 100,200")
    check(code == 0 and out:find("note: --window 100,200 begins after the trace's last event (20.000 s)", 1, true),
          script .. " --window past the end: a note", out)
  end
  code, out = hs("leaks " .. ex .. " --window=-10,-5")
  check(code == 0 and out:find("note: --window -10,-5 ends before the trace's first event (0.000 s): nothing lies in it", 1, true),
        "... before the start: a note", out)
  code, out = hs("leaks " .. ex .. " --window 19,200")
  check(code == 0 and not out:find("note: --window", 1, true), "... a window that overlaps the trace: no note", out)
  code, out, err = hs("peak " .. ex .. " --at 1e30")
  check(code == 2 and err:find("--at: expected a time", 1, true), "... a moment: exit 2", err)
  -- a trace where the script goes, a bundled module run as a script, -h
  code, out, err = hs(ex)
  check(code == 2 and err:find("examples/memorytestapp.etl is a trace, not a script: name a script first", 1, true),
        "a trace given as the script: said, exit 2", err)
  code, out, err = hs("baseline " .. ex)
  check(code == 2 and out == "" and err:find("baseline is a module for scripts (require \"baseline\"), not a script to run", 1, true),
        "a bundled module run as a script: said, exit 2", err)
  code, out = hs("leaks " .. ex .. " -h")
  check(code == 0 and out:find("^usage: heapscript leaks"), "-h is --help", out)
  -- one trace twice (one path twice, or a copy): refused when read as one, not counted twice;
  -- a script that reads each file on its own (diff) may be given one twice
  local copy = T.tmpname(".etl")
  assert(os.execute("cp examples/memorytestapp.etl " .. q(copy)))
  for _, other in ipairs { ex, q(copy) } do
    for _, script in ipairs { "leaks", "events" } do
      code, out, err = hs(script .. " " .. ex .. " " .. other)
      check(code == 2 and out == "" and err:find("^heapscript: [^\n]*the same trace as examples/memorytestapp.etl, given twice[^\n]*\n$"),
            "one trace given twice: refused as a usage error, one line, exit 2 (" .. script .. " " .. other .. ")", err)
    end
    code, out, err = hs("dump " .. ex .. " " .. other)
    check(code == 2 and out == "" and err:find("the same trace as examples/memorytestapp.etl, given twice", 1, true),
          "... by dump, which printed every event twice (" .. other .. ")", err)
  end
  s = tmpscript("local t = heapscript.open('examples/memorytestapp.etl', " .. ("%q"):format(copy) .. ")\n"
    .. "print(pcall(t.allocations, t)) print(pcall(t.count, t))\n" .. "t:count()\n")
  code, out, err = hs(q(s))
  check(code == 1 and select(2, out:gsub("false\t[^\n]*the same trace as examples/memorytestapp.etl, given twice", "")) == 2
        and err:find("%.lua:3: [^\n]*the same trace as examples/memorytestapp%.etl"),
        "... by the analysis and by a walk of heapscript.open's trace: the script's error, at its line", out .. err)
  code, out, err = hs("diff " .. ex .. " " .. q(copy))
  check(code == 0 and out:find("stacks: ", 1, true) and not err:find("given twice", 1, true),
        "diff of a trace and its copy: each read on its own", err)
  os.remove(copy)
  -- records stamped before their file's header (a stream out of order): inside the trace's window
  local early = T.tmpname(".etl")
  s = tmpscript(([[
local w = assert(heapscript.writer(%q, {start_ticks = 1000000}))
w:heap{op = "alloc", pid = 1000, tid = 1004, ts = 10, heap = 1, addr = 0x20000, size = 40}
w:heap{op = "free",  pid = 1000, tid = 1004, ts = 20, heap = 1, addr = 0x20000}
w:heap{op = "alloc", pid = 1000, tid = 1004, ts = 30, heap = 1, addr = 0x30000, size = 8}
assert(w:close())
local t <close> = assert(heapscript.open(%q))
local A = t:allocations()
local t1, t2 = A:window()
local ms = t:memory_stats()
print(#A, t1 < t2, ms.first_time < ms.last_time, A:summary().count)
]]):format(early, early))
  code, out, err = hs(q(s))
  eq(out, "2\ttrue\ttrue\t2\n", "records before their file's header: in the whole trace's window (" .. err .. ")")
  os.remove(early)
  -- a writer's clock at the ends of int64 (a stamp of math.maxinteger, a start of math.mininteger)
  local etl = T.tmpname(".etl")
  s = tmpscript(([[
local w = assert(heapscript.writer(%q, {start_ticks = math.mininteger}))
w:heap{op = "alloc", pid = 1000, tid = 1004, ts = 1, heap = 1, addr = 0x10000, size = 8}
w:heap{op = "alloc", pid = 1000, tid = 1004, ts = math.maxinteger, heap = 1, addr = 0x90000, size = 1}
print(w:close())
]]):format(etl))
  code, out, err = hs(q(s))
  check(code == 0 and out == "true\n", "a writer's clock at the ends of int64: no overflow", err)
  -- ... and rates the writer takes (a clock of 10^15 ticks a second, cycles at 4 GHz)
  for _, opt in ipairs { "perf_freq = 10^15", "clock_type = 'cycles', cpu_mhz = 4000000000" } do
    s = tmpscript(("local w = assert(heapscript.writer(%q, {%s}))\n"):format(etl, opt:gsub("10%^15", "1000000000000000"))
      .. "w:heap{op = 'alloc', pid = 1, tid = 2, ts = 1 << 40, heap = 1, addr = 0x10000, size = 8}\nprint(w:close())\n")
    code, out, err = hs(q(s))
    check(code == 0 and out == "true\n", "a writer at " .. opt .. ": no overflow", err)
  end
  -- records with no time (WPP MESSAGE without the time option) are no damage, whatever the clock
  -- says; a header whose rate is 0 bounds no record's time (the rate the clock falls back to
  -- would misplace them)
  s = tmpscript(([[
local path, patch = %q, ...
local w = assert(heapscript.writer(path, {start_ticks = 10000000000000, perf_freq = 987654321}))
for i = 1, 2 do w:kernel{group = 0x0f, opcode = 2, pid = 4, tid = 8, ts = 10000000000000 + i, payload = "MSG" .. i .. "-no-time-at-all"} end
for i = 1, 5 do
  w:heap{op = "alloc", pid = 1000, tid = 1004, ts = 10000000000000 + 987654321 * 20 * i, heap = 1, addr = 0x10000 * i, size = 8}
end
assert(w:close())
local f = assert(io.open(path, "r+b"))
local b = f:read("a")
if patch == "message" then
  for i = 1, 2 do
    local at = assert(b:find("MSG" .. i, 1, true)) - 32       -- the SYSTEM64 header before the payload
    local size = string.unpack("<I2", b, at + 4)
    f:seek("set", at - 1)
    f:write(string.pack("<I2BBI2I2", size, 0, 0x90, 1, 0))   -- a MESSAGE record: id 1, no options
  end
else
  local at = assert(b:find(string.pack("<i8", 987654321), 1, true))
  f:seek("set", at - 1)
  f:write(string.pack("<i8", 0))
end
f:close()
local t <close> = assert(heapscript.open(path))
local d = t:damage()
print(t:count(), #t:allocations{kind = "heap"}, #d, d[1] and d[1].what or "")
]]):format(etl))
  for _, patch in ipairs { "message", "rate" } do
    code, out, err = hs(q(s) .. " -- " .. patch)
    -- no rate: the records all read (no bounds on their times), and the header's field said once
    local want = patch == "rate" and "^%d+\t5\t1\tPerfFreq above 0 for its clock, found 0 %(times read at 10 MHz%)\n$"
                 or "^%d+\t5\t0\t\n$"
    check(code == 0 and out:match(want), "records of " .. patch .. " patched: every one read"
          .. (patch == "rate" and "; the header's PerfFreq 0 is damage" or ", no damage"), out .. err)
  end
  -- two traces alike in their headers (a writer's defaults) are two traces, not one given twice
  local t2 = T.tmpname(".etl")
  s = tmpscript(([[
for i, path in ipairs { %q, %q } do
  local w = assert(heapscript.writer(path))
  w:heap{op = "alloc", pid = 1000 * i, tid = 1004, ts = 10, heap = 1, addr = 0x10000 * i, size = 8 * i}
  assert(w:close())
end
local t <close> = assert(heapscript.open(%q, %q))
print(#t:allocations())
]]):format(etl, t2, etl, t2))
  code, out, err = hs(q(s))
  check(code == 0 and out == "2\n", "two traces alike in their headers: read together", err)
  os.remove(t2)
  -- sizes past 16 TiB (a damaged event's): taken as 16 TiB, the sums and the peaks within int64
  s = tmpscript(([[
local w = assert(heapscript.writer(%q))
for i = 1, 3 do
  w:heap{op = "alloc", pid = 1000, tid = 1004, ts = i, heap = 1, addr = 0x10000 * i, size = math.maxinteger}
end
w:heap{op = "free", pid = 1000, tid = 1004, ts = 4, heap = 1, addr = 0x10000}
w:heap{op = "alloc", pid = 1000, tid = 1004, ts = 5, heap = 1, addr = 0x90000, size = 1}
assert(w:close())
local t <close> = assert(heapscript.open(%q))
local A = t:allocations{kind = "heap"}
local sum = A:summary()
local g = A:group("heap", {sort = "peak"})
print(#A, sum.count, #g, g[1].peak == 3 * 2^44, sum.bytes == 3 * 2^44 + 1)
]]):format(etl, etl))
  code, out, err = hs(q(s))
  eq(code, 0, "extreme sizes: exit 0 (" .. err .. ")")
  eq(out, "4\t4\t1\ttrue\ttrue\n", "... the records counted; sizes past 16 TiB taken as 16 TiB, sums and peaks within int64")
  os.remove(etl)
end)

-- done ---------------------------------------------------------------------
for _, name in ipairs(tmpfiles) do
  os.remove(name)
  os.remove((name:gsub("%.lua$", "")))
end
os.execute("rm -rf " .. q(tmpdir))
os.remove(errfile)
return T.done("test_cli")
