-- json.lua -- a small JSON decoder on LPeg (stored baselines, the tests): objects become
-- tables, arrays tables with n, null becomes json.null.  Integers stay
-- integers (the figures hold 64-bit FILETIMEs).
local lpeg = require "lpeg"
local P, S, R, C, Cs, Ct, Cg, Cf, Cc, V = lpeg.P, lpeg.S, lpeg.R, lpeg.C, lpeg.Cs, lpeg.Ct, lpeg.Cg, lpeg.Cf, lpeg.Cc, lpeg.V

local M = { null = setmetatable({}, { __tostring = function() return "null" end }) }

local ws = S" \t\r\n"^0
local function tok(p) return ws * p * ws end

local escapes = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }
local hex = R("09", "af", "AF")
local function u8(h) return utf8.char(tonumber(h, 16)) end
-- a surrogate pair (\uD83D\uDE00) is its one character (RFC 8259)
local function pair(h, l)
  return utf8.char(0x10000 + ((tonumber(h, 16) - 0xD800) << 10) + (tonumber(l, 16) - 0xDC00))
end
local hex4 = hex * hex * hex * hex
local high, low = S"dD" * S"89abAB" * hex * hex, S"dD" * S"cdefCDEF" * hex * hex
local str = P'"' * Cs((P"\\u" * C(high) * P"\\u" * C(low) / pair + P"\\" * C(S'"\\/bfnrt') / escapes
  + P"\\u" * C(hex4) / u8 +
  (1 - S'"\\'))^0) * P'"'
local int = P"-"^-1 * (P"0" + R"19" * R"09"^0)
local num = C(int * (P"." * R"09"^1)^-1 * (S"eE" * S"+-"^-1 * R"09"^1)^-1) / function(s)
  return math.tointeger(tonumber(s)) or tonumber(s)
end

local function settable(t, k, v) t[k] = v; return t end

local grammar = P{ "doc",
  doc = ws * V"value" * ws * -1,
  value = str + num + P"true" * Cc(true) + P"false" * Cc(false) + P"null" * Cc(M.null) + V"obj" + V"arr",
  obj = tok"{" * Cf(Ct"" * (Cg(ws * str * tok":" * V"value") * (tok"," * Cg(ws * str * tok":" * V"value"))^0)^-1, settable) * tok"}",
  arr = tok"[" * Ct((ws * V"value" * (tok"," * V"value")^0)^-1) * tok"]",
}

-- The grammar above, in Lua: the tests' reference for the decoder in C.
function M.decode_lpeg(s, level)
  local v = grammar:match(s)
  if v == nil then error("invalid JSON", (level or 1) + 1) end
  return v
end

-- heapscript.json_decode (engine/lua_jsondec.c) gives the same values
-- (tests/lua/test_scripts.lua and tests/fuzz/fuzz_json.c compare them) in
-- a sixth of the time, and errors that say at which byte and what was
-- expected there.  The sandbox's heapscript has only the classes: there,
-- the grammar, whose LPeg backtrack stack stops it sooner on deep nesting
-- (99 nested objects, 199 arrays: "backtrack stack overflow") than the C
-- decoder's 200 levels.
local cdecode = type(heapscript) == "table" and heapscript.json_decode
function M.decode(s)
  if not cdecode then return M.decode_lpeg(s, 2) end
  if type(s) ~= "string" then error("invalid JSON: a string expected, got " .. type(s), 2) end
  local ok, v = pcall(cdecode, s, M.null)
  if not ok then error(v, 2) end
  return v
end

function M.read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return M.decode(s)
end

return M
