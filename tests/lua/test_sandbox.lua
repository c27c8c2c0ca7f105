-- test_sandbox.lua -- heapscript.sandbox as a trusted script uses it
-- (docs/SCRIPTS.md, Sandbox): loading a file into the sandbox, require
-- inside it, the repository being tested, and that values coming out of
-- the sandbox keep its environment.  The escapes and the limits are in
-- tests/cli/test_sandbox.sh (they end the process).
package.path = "tests/lua/?.lua;tests/corpus/?.lua;" .. package.path
local T = require "testlib"
local sb = heapscript.sandbox

T.check(type(sb) == "table" and sb.enabled == false, "heapscript.sandbox is there; --sandbox not given")
local roots = sb.roots()
T.check(#roots >= 1 and sb.inside("tests/lua/test_sandbox.lua") == roots[1], "this checkout is the repository being tested", roots[1])
T.check(sb.inside("/") == nil, "/ is outside it")

local dir = T.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir .. "/rules"))
local function write(name, text)
  local f = assert(io.open(dir .. "/" .. name, "w"))
  f:write(text)
  f:close()
end
write("rules/helper.lua", "return { budget = 42, io = rawget(_G, 'io') }")
write("main.lua", [[
local h = require "rules.helper"
x_global = "in the sandbox"
return { budget = h.budget, helper_io = h.io, io = rawget(_G, "io"),
         check = function() return x_global, rawget(os, "execute") end,
         default = #require "rules.default",
         json = require("json").decode('{"a": [1, "x\\n"]}') }
]])
local chunk, err = sb.loadfile(dir .. "/main.lua")
T.check(chunk, "sandbox.loadfile loads a file", err)
if chunk then
  local v = chunk()
  T.check(v.budget == 42 and v.helper_io == nil and v.io == nil, "the file and the module it requires from its directory run sandboxed")
  T.check(v.default == #require "rules.default", "a bundled module loads inside the sandbox too")
  T.check(v.json and v.json.a[1] == 1 and v.json.a[2] == "x\n",
          "the bundled json decodes inside the sandbox (its heapscript has no json_decode: the grammar)")
  local g, exec = v.check()
  T.check(g == "in the sandbox" and exec == nil and rawget(_G, "x_global") == nil,
          "a function from the sandbox, called later, keeps the sandbox's globals")
  T.check(io ~= nil and os.execute ~= nil and string.dump ~= nil, "the trusted script keeps io, os and string.dump")
end
T.check(select(2, pcall(sb.require, "rules.helper")).budget == 42, "sandbox.require shares the sandbox's package.loaded")
T.check(package.loaded["rules.helper"] == nil, "the trusted package.loaded is untouched")
T.check(sb.find("rules.helper") == nil, "sandbox.find looks on -I and HEAPSCRIPT_PATH only")
local bad = sb.loadfile(dir .. "/nope.lua")
T.check(bad == nil, "sandbox.loadfile of a missing file: nil and a message")
write("bc.luac", string.dump(function() return 1 end))
local c2, e2 = sb.loadfile(dir .. "/bc.luac")
T.check(c2 == nil and e2:find("binary chunk", 1, true), "sandbox.loadfile refuses bytecode", e2)
T.check(("x"):rep(3) == "xxx" and ("%d"):format(7) == "7", "string methods still work for the trusted script")
os.execute("rm -rf " .. dir)
return T.done("test_sandbox")
