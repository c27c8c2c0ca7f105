-- test_options.lua -- options where users type them: a script's options
-- after its traces work as they do after `--`; an option's value is never
-- a trace; a file named after the options is a trace; heapscript's own
-- --timeout may follow the traces; `--` still passes anything through.
package.path = "tests/lua/?.lua;tests/corpus/?.lua;" .. package.path
local T = require "testlib"
local json = require "json"
local q, check, eq = T.q, T.check, T.eq
local M, N = "examples/memorytestapp.etl", "examples/notmyfault.etl"

local run = T.run

-- the same report either way
local c1, o1 = run("leaks " .. M .. " --top 1 --kind heap")
local c2, o2 = run("leaks " .. M .. " -- --top 1 --kind heap")
check(c1 == 0 and o1 == o2 and o1:find("#1", 1, true) and not o1:find("#2", 1, true)
      and not o1:find("virtual:", 1, true), "leaks TRACE --top 1 --kind heap = leaks TRACE -- --top 1 --kind heap", o1)
c1, o1 = run("leaks " .. M .. " --kind=heap --top 1")
check(c1 == 0 and o1 == o2, "--name=value after the trace as well")

-- an option's value that names an existing file is the value, not a trace
local jf = T.tmpname()   -- exists (empty)
local code, out, err = run("leaks " .. M .. " --json " .. q(jf) .. " --kind heap")
local f = io.open(jf, "rb")
local ok, r = pcall(json.decode, f:read("a"))
f:close()
check(code == 0 and ok and #r.trace == 1 and r.kinds[1].kind == "heap",
      "--json EXISTING_FILE: written as the report, not opened as a trace", err)

-- a file named after the options is a trace (merged with the first)
local pf = T.tmpname(".lua")
f = io.open(pf, "wb")
f:write('io.write(trace and #trace:files() or 0, " ", table.concat({...}, " "), "\\n")\n')
f:close()
code, out = run(q(pf) .. " " .. M .. " --x 1 " .. N .. " --y")
eq(out, "2 --x 1 --y\n", "SCRIPT A --x 1 B --y: traces A and B, arguments --x 1 --y")
code, out = run(q(pf) .. " " .. M .. " -- " .. N)
eq(out, "1 " .. N .. "\n", "after --, an existing file is the script's argument")
code, out, err = run(q(pf) .. " --x")
check(code == 0 and out == "0 --x\n", "SCRIPT --x without a trace: the script's option, no trace", out .. err)

-- heapscript's own option after the traces
code, out, err = run(q(pf) .. " " .. M .. " --timeout 5 --z")
check(code == 0 and out == "1 --z\n", "--timeout after the trace is heapscript's", out .. err)
code, out, err = run(q(pf) .. " " .. M .. " --timeout")
check(code == 2 and err:find("--timeout needs", 1, true), "--timeout without a value after the trace: usage error", err)

-- every option heapscript takes among the script's arguments: the script
-- never sees it, and the usage text and API.md name it where they say so
local own = { { "-I", "-I tests" }, { "-IDIR", "-Itests" },
              { "--timeout", "--timeout 30" }, { "--memory", "--memory 4096" }, { "--sandbox", "--sandbox" },
              { "--symbol-path", "--symbol-path tests" }, { "--symbol-path", "--symbol-path=tests" } }
local sp = T.tmpname(".lua")
f = io.open(sp, "wb")
f:write('print(#trace:files(), select("#", ...), ...)\n')
f:close()
for _, o in ipairs(own) do
  code, out, err = run(q(sp) .. " " .. M .. " --x " .. o[2] .. " --y")
  check(code == 0 and out == "1\t2\t--x\t--y\n", "SCRIPT TRACE --x " .. o[2] .. " --y: heapscript's, not the script's", out .. err)
end
os.remove(sp)
local _, _, usage = run("--no-such-option")
local api = assert(io.open("docs/API.md", "rb")):read("a")
local said = { usage = usage:gsub("\n", " "):match("file is a trace%.(.-) wherever they are"),
               ["API.md"] = api:gsub("\n", " "):match("naming an existing file is a trace%.(.-) wherever they are") }
for where, text in pairs(said) do
  for _, o in ipairs(own) do
    local name = o[1] == "-IDIR" and "-I" or o[1]
    check(text and text:find(name, 1, true), where .. ": " .. name .. " is heapscript's wherever it is", text)
  end
end

-- --help after the trace is the script's
code, out = run("leaks " .. M .. " --help")
check(code == 0 and out:find("usage: heapscript leaks", 1, true), "leaks TRACE --help prints leaks's usage", out)
-- heapscript's own --help says where options go
code, out = run("--help")
check(out:find("--top 10", 1, true) and out:find("--", 1, true), "heapscript --help shows options after the traces and --", out)
-- ... tells all about the script mode (its options before SCRIPT too), and
-- each `heapscript ... --help` it points to works
for _, w in ipairs({ "--symbol-path P", "--list", "--replay TRACE", "--live", "--sandbox", "--memory MB", "HEAPSCRIPT_PATH",
                     "exit status:" }) do
  check(out:find(w, 1, true), "heapscript --help names " .. w, out)
end
local pointed = 0
for cmd in out:gmatch("`heapscript ([^`]-%-%-help)`") do
  pointed = pointed + 1
  local c2, o2, e2 = run(cmd)
  check(c2 == 0 and o2:find("^usage: heapscript"), "heapscript --help points to `heapscript " .. cmd .. "`: it works", o2 .. e2)
end
check(pointed >= 2, "heapscript --help points to other help texts", pointed)

-- every bundled script's help, in a pipe too, fits 80 columns; policy's
-- exit status follows its options; events says what each option does
for _, s in ipairs({ "leaks", "transient", "growth", "pool", "peak", "churn", "policy", "events", "diff" }) do
  code, out = run(s .. " --help")
  local long = out:match("[^\n]" .. ("[^\n]"):rep(80) .. "[^\n]*")
  check(code == 0 and out:find("^usage: heapscript " .. s) and not long, s .. " --help: lines of 80 columns at most", long or out)
end
_, out = run("policy --help")
local last_opt, status_at = 0, nil
for at, line in out:gmatch("()([^\n]*)\n") do
  if line:match("^  %-%-") then last_opt = at end
  if line:match("^exit status:") then status_at = status_at or at end
end
check(status_at and status_at > last_opt, "policy --help: the exit status after the options", out)
_, out = run("events --help")
for _, opt in ipairs({ "--top N", "--provider NAME|GUID", "--symbols FILE", "--json FILE" }) do
  check(out:find("\n  " .. opt:gsub("%p", "%%%0") .. "%s%s+%a"), "events --help: " .. opt .. " and what it does", out)
end

-- counts are whole numbers of 0 or more, sizes numbers of 0 or more; the
-- option is named as typed; nothing reaches the script's Lua as a bad value
for _, c in ipairs{ { "--top -1", "--top: expected a whole number from 0 to 2^53: -1" },
                    { "--top 99999999999999999999", "--top: expected a whole number from 0 to 2^53: 99999999999999999999" },
                    { "--frames 2.5", "--frames: expected a whole number from 0 to 2^53: 2.5" },
                    { "--pid x", "--pid: expected a whole number from 0 to 2^53: x" },
                    { "--min-bytes -5", "--min-bytes: expected a number of 0 or more (64k, 1MiB accepted): -5" },
                    { "--no-such 1", "unknown option --no-such" } } do
  code, out, err = run("leaks " .. M .. " " .. c[1])
  check(code == 2 and err:find("leaks: " .. c[2], 1, true) and out == "", "leaks " .. c[1] .. ": exit 2, " .. c[2], err)
end
-- seconds with their units, and words from a list: a value that is none
-- is refused, never replaced by the default
for _, c in ipairs{ { "transient", "--max-lifetime abc", "--max-lifetime: expected seconds of 0 or more (0.5, 500ms, 2s accepted): abc" },
                    { "transient", "--max-lifetime -1", "--max-lifetime: expected seconds of 0 or more (0.5, 500ms, 2s accepted): -1" },
                    { "growth", "--step-span 1x", "--step-span: expected seconds of 0 or more (0.5, 500ms, 2s accepted): 1x" },
                    { "growth", "--baseline soon", "--baseline: expected seconds of 0 or more (0.5, 500ms, 2s accepted): soon" },
                    { "leaks", "--kind heap,bogus", "--kind: bogus is none of heap, virtual, pool" },
                    { "leaks", "--kind ,", "--kind: expected one or more of heap, virtual, pool" },
                    { "leaks", "--window 5,1", "--window: the start (5 s) is after the end (1 s): 5,1" },
                    -- too large to hold: infinity as a float, a hex integer that wraps around
                    { "transient", "--max-lifetime 1e400", "--max-lifetime: expected seconds of 0 or more (0.5, 500ms, 2s accepted): 1e400" },
                    { "transient", "--min-size 1e400", "--min-size: expected a number of 0 or more (64k, 1MiB accepted): 1e400" },
                    { "transient", "--min-size 1e308g", "--min-size: expected a number of 0 or more (64k, 1MiB accepted): 1e308g" },
                    { "transient", "--min-size 0x8000000000000000", "--min-size: expected a number of 0 or more (64k, 1MiB accepted): 0x8000000000000000" },
                    { "churn", "--short 1e400", "--short: expected seconds of 0 or more (0.5, 500ms, 2s accepted): 1e400" },
                    { "growth", "--min-rate 1e400", "--min-rate: expected a number of 0 or more (64k, 1MiB accepted): 1e400" },
                    { "leaks", "--top 0x10000000000000000", "--top: expected a whole number from 0 to 2^53: 0x10000000000000000" },
                    { "leaks", "--window 1e309,", "--window: expected T1,T2 in seconds from the trace's start (within 1e+09 s of it): 1e309," },
                    { "leaks", "--window 1e30,2e30", "--window: expected T1,T2 in seconds from the trace's start (within 1e+09 s of it): 1e30,2e30" } } do
  code, out, err = run(c[1] .. " " .. M .. " " .. c[2])
  check(code == 2 and err:find(c[1] .. ": " .. c[3], 1, true) and out == "", c[1] .. " " .. c[2] .. ": exit 2, " .. c[3], err)
end
-- a word given twice in a list is one: --kind heap,HEAP reported every heap finding twice
code, out = run("leaks " .. M .. " --kind heap,HEAP")
local _, heads = out:gsub("\nheap: ", "")
check(code == 0 and out:match("^heap: ") and heads == 0, "leaks --kind heap,HEAP: one heap report", out)
-- a flag takes no value: --all=0 does not turn it off, nor does --all=xyz turn it on
for _, v in ipairs({ "0", "false", "xyz", "" }) do
  code, out, err = run("diff " .. M .. " examples/memorytestapp-newleak.etl --all=" .. v)
  check(code == 2 and err:find("diff: --all takes no value", 1, true) and out == "", "diff --all=" .. v .. ": exit 2", err)
end
code, out, err = run("leaks " .. M .. " --help=yes")
check(code == 2 and err:find("leaks: --help takes no value", 1, true) and out == "", "leaks --help=yes: exit 2", err)
code, out, err = run("diff " .. M .. " examples/memorytestapp-newleak.etl --all")
check(code == 0 and out:find("\n  unchanged +heap "), "diff --all alone: on (the unchanged stacks listed)", err)
code, out, err = run("diff " .. M .. " examples/memorytestapp-newleak.etl --by bogus")
check(code == 2 and err:find("diff: --by: bogus is none of stack, tag, process", 1, true), "diff --by bogus: exit 2", err)
local _, a = run("transient " .. M .. " --max-lifetime 150ms --kind virtual")
local _, b = run("transient " .. M .. " --max-lifetime 0.15 --kind Virtual")
check(a == b and a:find("living at most 0.15 s", 1, true) and a:find("^virtual:"), "150ms = 0.15; Virtual = virtual", a)
_, a = run("growth " .. M .. " --baseline 2s --step-span 500ms")
_, b = run("growth " .. M .. " --baseline 2 --step-span 0.5")
check(a == b and #a > 0, "growth: 2s = 2, 500ms = 0.5", a)

-- a size's suffix b is bytes, with or without a space (docs/SCRIPTS.md, Options)
_, a = run("transient " .. M .. " --min-size 100B --kind heap")
_, b = run("transient " .. M .. " --min-size 100 --kind heap")
check(a == b and a:find("of at least 100 B ", 1, true), "--min-size 100B = 100 bytes", a)
_, a = run("transient " .. M .. " --min-size " .. q("100 b") .. " --kind heap")
check(a == b, "--min-size '100 b' = 100 bytes", a)

code, out = run("leaks " .. M .. " --top 1e1 --kind heap")
check(code == 0 and out:find("#1", 1, true), "--top 1e1: a whole number", out)
code, out = run("pool " .. N .. " --top 0x2")
check(code == 0 and out:find("'Irp '", 1, true) and not out:find("'File'", 1, true), "pool --top 0x2: two tags", out)

-- a pool tag has 1 to 4 characters, a shorter one padded with spaces; one
-- longer or empty is refused, not cut to its first four or padded to "    "
for _, c in ipairs({ { "leaks", "LeakXYZW", 8 }, { "pool", "", 0 }, { "peak", "Leak ", 5 }, { "churn", "", 0 },
                     { "diff", "Irp_x", 5 } }) do
  local args = c[1] == "diff" and (N .. " " .. N) or N
  code, out, err = run(c[1] .. " " .. args .. " --tag " .. q(c[2]))
  local want = ("%s: --tag: a pool tag has 1 to 4 characters (a shorter one is padded with spaces), '%s' has %d")
    :format(c[1], c[2], c[3])
  check(code == 2 and err:find(want, 1, true) and out == "", c[1] .. " --tag '" .. c[2] .. "': exit 2", err)
end
_, a = run("pool " .. N .. " --tag Irp")
_, b = run("pool " .. N .. " --tag " .. q("Irp "))
check(a == b and a:find("'Irp '", 1, true), "pool --tag Irp = --tag 'Irp '", a)
code, out = run("leaks " .. N .. " --tag Leak --top 1")
check(code == 0 and out:find("tag Leak", 1, true), "leaks --tag Leak", out)

-- a filter that matches nothing is not a trace without allocations
code, out = run("leaks " .. M .. " --pid 1")
eq(out, "no heap, VirtualAlloc or pool allocations under --pid 1 (the trace has 5012 of them)\n", "leaks --pid 1")
code, out = run("pool " .. N .. " --tag Zzzz --window 1,")
eq(out, "no pool allocations under --tag Zzzz --window 1, (the trace has 1640 of them)\n", "pool --tag --window")
-- and a trace without the kinds asked for says which it has (and the
-- --kind that shows them, when the script has that option)
code, out = run("pool " .. M)
eq(out, "no pool allocations in this trace; it has 5000 heap and 12 VirtualAlloc allocations\n",
   "pool on a trace without pool events")
code, out = run("leaks " .. N .. " --kind heap")
eq(out, "no heap allocations in this trace; it has 1640 pool allocations (--kind pool)\n", "leaks --kind heap, pool trace")
code, out = run("churn " .. N)
eq(out, "no heap allocations in this trace; it has 1640 pool allocations (--kind pool)\n", "churn (heap by default), pool trace")
code, out = run("peak " .. N .. " --kind virtual,heap")
eq(out, "no VirtualAlloc or heap allocations in this trace; it has 1640 pool allocations (--kind pool)\n",
   "peak --kind virtual,heap, pool trace")
-- a report file that cannot be written: said before anything is analysed or printed
code, out, err = run("leaks " .. M .. " --json /nonexistent/dir/x.json")
check(code == 2 and out == "" and err:find("leaks: --json: cannot write /nonexistent/dir/x.json (No such file or directory)", 1, true),
      "--json into a directory that is not there: exit 2 at once", err)
code, out, err = run("policy " .. M .. " --junit /nonexistent/j.xml")
check(code == 2 and out == "" and err:find("policy: --junit: cannot write /nonexistent/j.xml", 1, true),
      "--junit likewise", err)
-- a report file that is there already is not opened before its report is written: a named pipe
-- with a reader gets the report (opened early, it blocked, or gave its reader an early end)
local fifo, got = T.tmpname(), T.tmpname()
os.remove(fifo)
if os.execute("mkfifo " .. fifo .. " 2>/dev/null") then
  code = os.execute(("(cat %s > %s &) ; timeout 60 %s leaks %s --json %s > /dev/null; sleep 0.2")
    :format(fifo, got, T.bin(), M, fifo))
  local f = io.open(got, "rb")
  local j = f and f:read("a") or ""
  if f then f:close() end
  check(code and j:find('"kinds"', 1, true), "--json into a named pipe: the report, no hang", j:sub(1, 80))
  -- a JSON baseline read from a pipe (--baseline <(git show main:base.json)): read once, no hang;
  -- a trace from a pipe is refused by name; a byte order mark is no part of the JSON
  local bj = T.tmpname(".json")
  run("leaks " .. M .. " --json " .. q(bj))
  local res = T.tmpname()
  code = os.execute(("(cat %s > %s &) ; timeout 60 %s policy %s --baseline %s > %s 2>&1; sleep 0.2")
    :format(q(bj), fifo, T.bin(), M, fifo, res))
  local r = io.open(res, "rb"):read("a")
  check(r:find("7 rules: 1 broken", 1, true) and not r:find("no --baseline", 1, true),
        "--baseline from a named pipe: read once, the rules compared", r)
  os.execute(("(cat %s > %s &) ; timeout 60 %s policy %s --baseline %s > %s 2>&1; sleep 0.2")
    :format(M, fifo, T.bin(), M, fifo, res))
  r = io.open(res, "rb"):read("a")
  check(r:find("a trace is read from a file, not a pipe", 1, true), "... a trace from a pipe: refused by name", r)
  local bom = T.tmpname(".json")
  local f = io.open(bom, "wb"); f:write("\239\187\191" .. io.open(bj, "rb"):read("a")); f:close()
  code, out, err = run("policy " .. M .. " --baseline " .. q(bom))
  check(code == 1 and out:find("7 rules: 1 broken", 1, true), "--baseline with a UTF-8 byte order mark: read", err)
  os.remove(fifo); os.remove(bj); os.remove(res); os.remove(bom)
else
  T.skip("--json into a named pipe", "mkfifo not available")
end
os.remove(got)
-- a baseline that is not JSON, or JSON without groups, is said to be so (not read as a trace)
local nj = T.tmpname(".json")
local f = assert(io.open(nj, "w")); f:write("not json at all"); f:close()
code, out, err = run("diff " .. M .. " --baseline " .. nj)
check(code == 2 and err:find(nj .. ": not valid JSON", 1, true), "diff --baseline of a .json that is not JSON", err)
f = assert(io.open(nj, "w")); f:write("[]"); f:close()
code, out, err = run("diff " .. M .. " --baseline " .. nj)
check(code == 2 and err:find("a JSON baseline is the report of `heapscript leaks --json`", 1, true),
      "... of a JSON list", err)
os.remove(nj)
code, out = run("growth " .. M .. " --process nosuch")
eq(out, "no VirtualAlloc, heap or pool allocations under --process nosuch (the trace has 5012 of them)\n",
   "growth --process of no process: said, not a silent report")
code, out = run("growth " .. N .. " --kind heap")
eq(out, "no heap allocations in this trace; it has 1640 pool allocations (--kind pool)\n", "growth --kind heap, pool trace")
code, out = run("leaks " .. N .. " --kind heap --pid 1")
eq(out, "no heap allocations in this trace; it has 1640 pool allocations (--kind pool)\n",
   "leaks --kind heap --pid 1, pool trace: the kind is what is missing")

os.remove(jf); os.remove(pf)
-- --process takes a name or a Lua pattern: a malformed one is the user's
-- mistake, said as such (exit 2), not a traceback of the script
for _, s in ipairs({ "leaks", "peak", "churn", "growth", "transient", "diff" }) do
  code, out, err = run(s .. " " .. M .. " --process " .. q("["))
  check(code == 2 and err:find("--process: not a Lua pattern (malformed pattern (missing ']')): [", 1, true)
        and not err:find("traceback", 1, true), s .. " --process '[': a clear error, exit 2", err)
end
code, out = run("leaks " .. M .. " --process " .. q("Memory.*") .. " --kind heap --top 1")
check(code == 0 and out:find("319 allocated and not freed", 1, true), "leaks --process with a valid pattern", out)

-- report.options' "list" kind, for team scripts: comma-separated words
local lf = T.tmpname(".lua")
f = io.open(lf, "wb")
f:write('local report = require "report"\n',
        'local o = report.options({ only = "list" }, { only = { "x" } }, { ... }, "usage: list.lua [--only A,B]")\n',
        'io.write(#o.only, ":", table.concat(o.only, "|"), "\\n")\n')
f:close()
code, out, err = run(q(lf) .. " " .. M .. " --only heap,,pool,")
check(code == 0 and out == "2:heap|pool\n", "a list option: its words, empty ones dropped", out .. err)
code, out = run(q(lf) .. " " .. M)
check(code == 0 and out == "1:x\n", "a list option's default", out)
os.remove(lf)

-- a symbol map beside the trace that cannot be read is named and left out
local base = T.tmpname()               -- base.etl and base.sym beside it, written with io (Windows too)
f = assert(io.open(M, "rb"))
local bytes = f:read("a")
f:close()
f = assert(io.open(base .. ".etl", "wb"))
f:write(bytes)
f:close()
f = assert(io.open(base .. ".sym", "wb"))
f:write("this is not a symbol map\n")
f:close()
code, out, err = run("leaks " .. q(base .. ".etl") .. " --kind heap --top 1")
check(code == 0 and err:find("heapscript: ignoring " .. base .. ".sym: ", 1, true)
      and out:find("319 allocated and not freed", 1, true) and out:find("MemoryTestApp.exe+0x", 1, true),
      "a bad .sym beside the trace: a warning naming it, frames left as module+offset", err .. out)
os.remove(base .. ".etl")
os.remove(base .. ".sym")

-- rule files: a rule without a name, a negative growth limit
local rf = T.tmpname(".lua")
for _, case in ipairs {
  { 'return { { select = { kind = "heap" }, max_leaked_bytes = 1 } }', "rule 1 has no name" },
  { 'return { { name = "g", per = "stack", max_leaked_growth = -1 } }',
    "rule g: max_leaked_growth is a fraction (0.10 = 10%) of the baseline's bytes" },
  -- a rule set that could never fail a build, or a rule whose values would raise later
  { 'return {}', "the rule set has no rules: it could never fail a build" },
  { 'return { rules = { { name = "a", max_leaked_bytes = 1 } } }', 'a rule set returns a list of rules; it has the key "rules"' },
  { 'return { { name = "a", max_leaked_bytes = 1 }, nil, { name = "b", max_leaked_bytes = 1 } }', "it has holes" },
  { 'return { { name = "a", max_leaked_bytes = 1 }, { name = "a", max_peak_bytes = 1 } }', "two rules are named a (rules 1 and 2)" },
  { 'return { { name = "a", max_leaked_bytes = 0/0 } }', "rule a: max_leaked_bytes must be a number from 0 to 2^63" },
  { 'return { { name = "a", max_leaked_growth = 0/0 } }', "rule a: max_leaked_growth is a fraction" },
  { 'return { { name = "a", no_new_leaks = "no" } }', "rule a: no_new_leaks is true or false, not no" },
  { 'return { { name = "a", per = "stak", max_leaked_bytes = 1 } }', "rule a: per is one of stack," },
  { 'return { { name = "a", select = { kind = "heep" }, max_leaked_bytes = 1 } }', "rule a: select: filter 'kind': unknown kind 'heep'" },
  { 'return { { name = "a", select = "heap", max_leaked_bytes = 1 } }', "rule a: select is a table of filters" },
  { 'return { { name = "a", window = { 5, 2 }, max_leaked_bytes = 1 } }', "rule a: select or window: window: the start is after the end" },
  { 'return { { name = "a", why = { 1 }, max_leaked_bytes = 1 } }', "rule a: why is a string" },
  { 'return { { name = "a", check = function() return false, {} end } }', "rule a: its check returned a message that is a table" },
} do
  f = io.open(rf, "wb")
  f:write(case[1])
  f:close()
  code, out, err = run("policy " .. M .. " --rules " .. q(rf))
  check(code == 2 and err:find(case[2], 1, true), "policy --rules: " .. case[2] .. " (exit 2)", err)
end
-- a report never goes over the --baseline (a trace or a stored JSON): refused before anything runs
do
  local bt, bj = T.tmpname(".etl"), T.tmpname(".json")
  local src, dst = assert(io.open(M, "rb")), assert(io.open(bt, "wb"))   -- (no cp under Wine)
  dst:write(src:read("a")); src:close(); dst:close()
  run("leaks " .. M .. " --json " .. q(bj))
  for _, c in ipairs { { "policy", bt, "--html" }, { "diff", bt, "--json" }, { "policy", bj, "--json" } } do
    local before = io.open(c[2], "rb"):read("a")
    code, out, err = run(c[1] .. " " .. M .. " --baseline " .. q(c[2]) .. " " .. c[3] .. " " .. q(c[2]))
    check(code == 2 and err:find(c[3] .. " " .. c[2] .. ": is the --baseline", 1, true)
          and io.open(c[2], "rb"):read("a") == before, c[1] .. " " .. c[3] .. " onto its --baseline: refused, the file intact", err)
  end
  os.remove(bt); os.remove(bj)
end
-- a limit of 2^20 (a float) is 1048576 in every report; 1000.5 holds and breaks where 1000 does
f = io.open(rf, "wb")
f:write('return { { name = "mib", max_leaked_bytes = 2^20 }, { name = "half", max_leaked_bytes = 1000.5 } }')
f:close()
code, out, err = run("policy " .. M .. " --rules " .. q(rf) .. " --junit - ")
check(code == 1 and out:find("limit 1000\"", 1, true) and not out:find("1048576.0", 1, true)
      and not out:find("1000.5", 1, true), "policy: whole-number limits in the JUnit file", out .. err)
os.remove(rf)
return T.done("test_options")
