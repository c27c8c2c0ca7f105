-- report.lua -- what the bundled scripts share: their options, symbol
-- maps, byte and stack formatting, and JSON output.  A module:
-- `local report = require "report"`.  Team scripts may use it too.
local M = {}

-- Options after `--`: `--name value`, `--flag`, and `--name=value`.
-- spec maps a name to "number", "string", "list" (comma separated),
-- "window" (T1,T2 in seconds) or "flag"; defaults is a table of values.
function M.options(spec, defaults, argv, usage)
  local o = {}
  for k, v in pairs(defaults or {}) do o[k] = v end
  local i = 1
  local function fail(msg)
    io.stderr:write(("%s: %s\n%s"):format(arg and arg[0] or "script", msg, usage or ""))
    os.exit(2)
  end
  while i <= #argv do
    local a = argv[i]
    local name, inline = a:match("^%-%-([%w_-]+)=(.*)$")
    name = name or a:match("^%-%-([%w_-]+)$")
    if not name then fail("unexpected argument " .. a) end
    name = name:gsub("-", "_")
    local kind = spec[name]
    if name == "help" then io.stdout:write(usage or ""); os.exit(0) end
    -- every script takes --symbol-path: where the images' PDBs are (docs/SYMBOLS.md)
    if name == "symbol_path" and not kind then kind = "string" end
    if not kind then fail("unknown option --" .. name) end
    if kind == "flag" then
      o[name] = true
    else
      local v = inline
      if v == nil then i = i + 1; v = argv[i] end
      if v == nil then fail("--" .. name .. " needs a value") end
      if kind == "number" then
        local n = M.parse_size(v)
        if not n then fail("--" .. name .. ": not a number: " .. v) end
        o[name] = n
      elseif kind == "list" then
        local l = {}
        for item in v:gmatch("[^,]+") do l[#l + 1] = item end
        o[name] = l
      elseif kind == "window" then
        local a1, a2 = v:match("^%s*([^,]*),([^,]*)%s*$")
        local t1, t2 = tonumber(a1), tonumber(a2)
        if not a1 or (a1 ~= "" and not t1) or (a2 ~= "" and not t2) then
          fail("--" .. name .. ": expected T1,T2 in seconds: " .. v)
        end
        o[name] = { t1, t2 }
      else
        o[name] = v
      end
    end
    i = i + 1
  end
  if o.symbol_path and trace then trace:symbols{path = o.symbol_path} end
  return o
end

-- "10MiB", "64k", "1e6", "0x100" -> integer bytes (binary suffixes).
function M.parse_size(s)
  s = tostring(s)
  if s:match("^%s*0[xX]%x+%s*$") then return tonumber(s) end
  local num, suffix = s:match("^%s*(%d*%.?%d+[eE]?%d*)%s*(%a*)%s*$")
  if not num then return nil end
  local n = tonumber(num)
  if not n then return nil end
  local mult = ({ [""] = 1, b = 1, k = 1024, kb = 1024, kib = 1024, m = 2^20, mb = 2^20, mib = 2^20,
                  g = 2^30, gb = 2^30, gib = 2^30 })[suffix:lower()]
  if not mult then return nil end
  n = n * mult
  return math.tointeger(n) or n
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
    local f = io.open(sym, "r")
    if f then
      f:close()
      local ok, err = heapscript.symbols(sym)
      if ok then return sym end
      io.stderr:write("heapscript: ignoring " .. sym .. ": " .. tostring(err) .. "\n")
    end
  end
  return nil
end

function M.bytes(n)
  if n == nil then return "?" end
  local a = math.abs(n)
  if a >= 2^30 then return ("%.2f GiB"):format(n / 2^30) end
  if a >= 2^20 then return ("%.2f MiB"):format(n / 2^20) end
  if a >= 10 * 1024 then return ("%.1f KiB"):format(n / 1024) end
  return ("%d B"):format(n)
end

-- The frames of a stack, innermost first, at most max of them.
function M.frames(stack, max)
  if not stack then return {} end
  local f = stack:frames()
  if max and max <= 0 then return {} end
  if max and #f > max then
    local cut = {}
    for i = 1, max do cut[i] = f[i] end
    cut[#cut + 1] = ("... %d more"):format(#f - max)
    return cut
  end
  return f
end

function M.print_stack(stack, indent, max)
  indent = indent or "      "
  if not stack then print(indent .. "(no stack)"); return end
  for _, f in ipairs(M.frames(stack, max)) do print(indent .. f) end
end

-- The innermost frame of a stack that is not in a system module: what a
-- person names a stack by ("MemoryTestApp.exe!InnerLoopOperation+0x1f [memorytestapp.c:53]").
local system = { "^ntdll", "^kernelbase", "^kernel32", "^ntoskrnl", "^nt!", "^ucrtbase", "^msvcrt",
                 "^win32k", "^hal%." }
function M.headline(stack)
  if not stack then return "(no stack)" end
  local frames = stack:frames()
  for _, f in ipairs(frames) do
    local low = f:lower()
    local sys = false
    for _, p in ipairs(system) do if low:find(p) then sys = true; break end end
    if not sys then return f end
  end
  return frames[1] or "(empty stack)"
end

-- JSON, keys sorted, for machine-readable reports.
local function esc(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return ({ ['"'] = '\\"', ['\\'] = '\\\\', ['\n'] = '\\n', ['\t'] = '\\t', ['\r'] = '\\r' })[c]
      or ("\\u%04x"):format(c:byte())
  end) .. '"'
end

function M.json(v, indent, cur)
  indent = indent or ""
  cur = cur or ""
  local t = type(v)
  if t == "nil" then return "null" end
  if t == "boolean" then return tostring(v) end
  if t == "number" then
    if math.type(v) == "integer" then return tostring(v) end
    if v ~= v or v == math.huge or v == -math.huge then return "null" end
    return ("%.17g"):format(v)                -- round-trips every double
  end
  if t == "string" then return esc(v) end
  if t == "userdata" then return esc(tostring(v)) end
  local nl, inner = indent ~= "" and "\n" or "", cur .. indent
  local sep = indent ~= "" and ": " or ":"
  local npairs = 0
  for _ in pairs(v) do npairs = npairs + 1 end
  if npairs == #v then                        -- a list (or empty): keys would be lost otherwise
    local parts = {}
    for i = 1, #v do parts[i] = inner .. M.json(v[i], indent, inner) end
    if #parts == 0 then return "[]" end
    return "[" .. nl .. table.concat(parts, "," .. nl) .. nl .. cur .. "]"
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do
    local val = v[k]
    if val == nil then val = v[tonumber(k)] end
    parts[#parts + 1] = inner .. esc(k) .. sep .. M.json(val, indent, inner)
  end
  return "{" .. nl .. table.concat(parts, "," .. nl) .. nl .. cur .. "}"
end

-- Write a JSON document to a path ("-" = standard output).
function M.write_json(path, v)
  local s = M.json(v, "  ") .. "\n"
  if path == "-" or path == true then io.stdout:write(s); return end
  local f, err = io.open(path, "w")
  if not f then io.stderr:write("heapscript: " .. err .. "\n"); os.exit(2) end
  f:write(s)
  f:close()
end

-- Selection filters common to the scripts, from their options.
function M.filters(o)
  local f = {}
  if o.kind then f.kind = o.kind end
  if o.process then f.process = o.process end
  if o.pid then f.pid = o.pid end
  if o.tag then f.tag = (o.tag .. "    "):sub(1, 4) end   -- "Irp" is the tag "Irp "
  if o.window then f.window = o.window end
  return f
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

return M
