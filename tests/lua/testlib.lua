-- testlib.lua -- what the Lua tests share: ok/not ok lines and their
-- count, the corpus location and its skip rule, the binary for
-- subprocesses, shell quoting.  Each test starts with
--   package.path = "tests/lua/?.lua;tests/corpus/?.lua;" .. package.path
--   local T = require "testlib"
-- and ends with `return T.done("name")` (false, so exit 1, on any failure).
local T = { passed = 0, failed = 0, skipped = 0, quiet = false }

T.corpus = os.getenv("HEAPSCRIPT_CORPUS") or "../shared/traces"
-- the real traces copied into the repository (tests/corpus/traces/README.md): in every clone
T.bundled = "tests/corpus/traces"

function T.exists(p)
  local f = io.open(p, "rb")
  if f then f:close() end
  return f ~= nil
end

-- The path of a corpus file (rel: "NAME.etl", "expected/NAME.json") in the
-- full corpus, else among the bundled traces; nil when neither has it.
function T.corpus_file(rel)
  for _, d in ipairs{ T.corpus, T.bundled } do
    if T.exists(d .. "/" .. rel) then return d .. "/" .. rel end
  end
  return nil
end

-- true when the corpus is there; otherwise prints why and returns false
-- and the exit code: 0 (skip) normally, 1 when CI=true.
function T.need_corpus(name)
  if T.exists(T.corpus .. "/MANIFEST.tsv") then return true end
  if os.getenv("CI") == "true" then
    print("not ok - corpus missing at " .. T.corpus .. " and CI=true")
    return false, 1
  end
  print("SKIP " .. name .. ": no corpus at " .. T.corpus .. " (set HEAPSCRIPT_CORPUS)")
  return false, 0
end

function T.check(cond, name, detail)
  if cond then
    T.passed = T.passed + 1
    if not T.quiet then print("ok - " .. name) end
  else
    T.failed = T.failed + 1
    print("not ok - " .. name .. (detail ~= nil and (": " .. tostring(detail)) or ""))
  end
  return cond
end

function T.eq(got, want, name)
  return T.check(got == want, name, ("got %s, expected %s"):format(tostring(got), tostring(want)))
end

function T.near(got, want, name, eps)
  return T.check(type(got) == "number" and math.abs(got - want) < (eps or 1e-9), name,
                 ("got %s, expected %s"):format(tostring(got), tostring(want)))
end

function T.list_eq(got, want, name)
  local ok = #got == #want
  for i = 1, math.max(#got, #want) do ok = ok and got[i] == want[i] end
  local function show(t)
    local s = {}
    for i = 1, #t do s[i] = tostring(t[i]) end
    return "{" .. table.concat(s, ", ") .. "}"
  end
  return T.check(ok, name, ("got %s, expected %s"):format(show(got), show(want)))
end

function T.skip(name, why)
  T.skipped = T.skipped + 1
  print("ok - " .. name .. " # SKIP " .. why)
end

-- Run fn; an error in it is one failure named after the test.
function T.test(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if not ok then T.check(false, name .. " (raised)", err) end
end

-- fn must raise an error whose message contains text.
function T.raises(fn, text, name)
  local ok, err = pcall(fn)
  return T.check(not ok and tostring(err):find(text, 1, true) ~= nil, name, ok and "no error" or err)
end

-- The heapscript binary running this test (HS_BIN, else arg[-n]).
function T.bin()
  local b = os.getenv("HS_BIN")
  if b then return b end
  local i = -1
  while arg and arg[i - 1] do i = i - 1 end
  return arg and arg[i] or "./heapscript"
end

-- Windows (the .exe under Wine or on Windows): io.popen runs cmd.exe, which
-- quotes with " and has NUL for /dev/null.
T.windows = package.config:sub(1, 1) == "\\"
T.devnull = T.windows and "NUL" or "/dev/null"
if T.windows then
  -- cmd /c drops the first and the last quote of a command line that
  -- starts with one ("a b" "c" would run `a b" "c`): one more pair around
  -- the whole line keeps the quoting the tests wrote.
  local popen, execute = io.popen, os.execute
  io.popen = function(cmd, mode) return popen('"' .. cmd .. '"', mode) end
  os.execute = function(cmd) if cmd == nil then return execute() end return execute('"' .. cmd .. '"') end
end

function T.q(s)
  if T.windows then return '"' .. tostring(s) .. '"' end
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- io.popen, tried again when it cannot start the command (under Wine,
-- cmd.exe now and then fails to start while earlier children end).
function T.popen(cmd)
  for _ = 1, 5 do
    local p = io.popen(cmd)
    if p then return p end
    local t = os.time() + 1
    while os.time() < t do end                 -- a second for the others to end
  end
  return assert(io.popen(cmd))
end

-- A fresh temporary name, removed by T.done (with what a test made under
-- it, when it made a directory there).  With a suffix ("x.etl"), the name
-- os.tmpname created is kept until then, so that no other test takes it.
local made = {}
function T.tmpname(suffix)
  local base = os.tmpname()
  made[#made + 1] = base
  if not suffix then return base end
  made[#made + 1] = base .. suffix
  return base .. suffix
end

local function remove_all()
  for i = #made, 1, -1 do
    local p = made[i]
    if not os.remove(p) and os.rename(p, p) and not T.windows then   -- a directory
      os.execute("rm -rf " .. T.q(p))
    end
  end
  made = {}
end

-- Run the binary with args (a shell fragment, already quoted): exit code, stdout, stderr.
function T.run(args)
  local ef = os.tmpname()
  local p = T.popen(T.q(T.bin()) .. " " .. args .. " 2>" .. T.q(ef))
  local out = p:read("a")
  local _, _, code = p:close()
  local f = io.open(ef, "rb")
  local err = f and f:read("a") or ""
  if f then f:close() end
  os.remove(ef)
  return code, out, err
end

-- A file's bytes, or nil.
function T.slurp(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

-- Run the binary with args (a shell fragment): its output (stdout and
-- stderr together) and exit code.
function T.run_all(args)
  local p = T.popen(T.bin() .. " " .. args .. " 2>&1")
  local out = p:read("a")
  local _, _, code = p:close()
  return out, code
end

-- Run a script with `--json -` appended: the decoded report (nil if the
-- output is not JSON), the exit code and the raw output.
function T.report(args)
  local out, code = T.run_all(args .. " --json -")
  local ok, v = pcall(require("json").decode, out)
  return ok and v or nil, code, out
end

function T.done(name)
  remove_all()
  print(("%s: %d passed, %d failed%s"):format(name, T.passed, T.failed,
        T.skipped > 0 and (", %d skipped"):format(T.skipped) or ""))
  return T.failed == 0
end

return T
