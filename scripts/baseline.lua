-- baseline.lua -- comparing a run with a baseline: the keys that name a
-- group the same way in two traces, the leaked figures of every group of
-- a trace, a stored baseline (a trace, or the JSON report of `leaks`), and
-- the differences.  Used by `diff`, `policy --baseline` and `leaks --json`.
-- A module: `local baseline = require "baseline"`.
--
-- Why these keys: addresses move with ASLR and offsets move with every
-- rebuild, so a stack is named by its frames' module and function
-- ("myapp.exe!Parse"), which survive a rebuild.  Without symbols a frame
-- reads "myapp.exe+0x15b7": the module and RVA still survive ASLR (the
-- same build loaded elsewhere) but not a rebuild.  A bare address (no
-- image contained it) is kept as "?", as nothing about it is stable.
-- Processes are matched by image name, never by pid.
local report = require "report"

local M = {}

-- The stable key of one frame text.
function M.frame_key(f)
  f = f:match("^(.-) %[[^%]]*%]$") or f        -- [file:line] from a PDB: lines move in a rebuild
  local mod, fn = f:match("^([^!]+)!(.-)%+0x%x+$")
  if not mod then mod, fn = f:match("^([^!]+)!(.+)$") end
  if mod then return mod:lower() .. "!" .. fn end
  local m2, rva = f:match("^(.-)%+0x(%x+)$")
  if m2 and m2 ~= "" then return m2:lower() .. "+0x" .. rva:lower() end
  if f:match("^0x%x+$") then return "?" end
  return f
end

-- The key of the records without a stack.
M.NO_STACK = report.NO_STACK

-- The frames of a stack as stable keys, root first (the folded order).
function M.root_first(stack)
  if not stack then return { M.NO_STACK } end
  -- Inline levels (from a PDB) are left out of the key: a rebuild may
  -- inline differently, and a build named by a symbol map has none.
  local f, d = stack:frames(), stack.details and stack:details()
  local r = {}
  for i = #f, 1, -1 do
    if not (d and d[i] and d[i].inline) then r[#r + 1] = M.frame_key(f[i]) end
  end
  if #f == 0 then r[1] = "(empty stack)" end
  return r
end

-- The stable key of a stack: its frame keys, root first, ';'-separated.
-- A heapscript.Stack makes it in C from the frames' fields (s:key(), the
-- same rules as frame_key over its text); a table with frames() (a test's
-- stand-in) takes the way through the text.
function M.stack_key(stack)
  if type(stack) == "userdata" then return stack:key() end
  return table.concat(M.root_first(stack), ";")
end

-- The key of a group made by A:group(per) (per: nil, "stack", "tag", "process").
function M.group_key(per, g)
  if per == nil then return "all" end
  if per == "stack" then return M.stack_key(g.stack) end
  if per == "tag" then return g.tag or "?" end
  if per == "process" or per == "pid" then return (g.process or "?"):lower() end
  error("a baseline compares groups per stack, tag or process, not per " .. tostring(per), 0)
end

M.KINDS = { "heap", "virtual", "pool" }
M.PERS = { "stack", "tag", "process" }

local function add(into, k, g, extra)
  local e = into[k]
  if not e then
    e = { count = 0, bytes = 0, impacting = 0 }
    into[k] = e
    for f, v in pairs(extra or {}) do e[f] = v end
  end
  e.count = e.count + g.AIFO.count
  e.bytes = e.bytes + g.AIFO.bytes
  e.impacting = e.impacting + g.impacting
  return e
end

-- A stack's headline and frames are made when first read: a diff of
-- 100,000 unchanged stacks shows none of them, and naming a frame makes
-- a Lua string of it.  The Stack is kept beside the entry, not in it, so
-- that a JSON report of the entry (raw fields) does not hold it.
local stack_of = setmetatable({}, { __mode = "k" })
local lazy = { __index = function(e, k)
  local st = stack_of[e]
  if (k ~= "headline" and k ~= "frames") or st == nil then return nil end
  rawset(e, "headline", report.headline(st or nil))
  rawset(e, "frames", st and st:frames() or {})
  return rawget(e, k)
end }

-- The keys of a figures table, sorted (heapscript.sort): the order they
-- came in when the table was made from sorted keys (per stack), else
-- sorted once and kept.  The table's keys must not change after.
local order_of = setmetatable({}, { __mode = "k" })

function M.sorted_keys(fig)
  local keys = order_of[fig]
  if not keys then
    keys = {}
    for k in pairs(fig) do keys[#keys + 1] = k end
    heapscript.sort(keys)
    order_of[fig] = keys
  end
  return keys
end

local function named_by(e, st)
  stack_of[e] = st or false
  return setmetatable(e, lazy)
end

-- The leaked figures of a selection A (one kind) per group, by the
-- stable key: { [key] = {count =, bytes =, impacting = [, headline, frames]} }.
-- count and bytes are AIFO; impacting is AIFO - AOFI bytes.  Groups that
-- kept nothing and freed nothing from before are left out.
-- Keys as a stored (JSON) baseline has them: a byte of no valid UTF-8 is
-- U+FFFD there (report.utf8), so a run's own keys are too, or a run would
-- never match its own baseline.  Two keys made one add up.
local function utf8_keys(out)
  local bad
  for k in pairs(out) do if not utf8.len(k) then bad = bad or {}; bad[#bad + 1] = k end end
  if not bad then return out end
  for _, k in ipairs(bad) do
    local e, c = out[k], report.utf8(k)
    out[k] = nil
    local x = out[c]
    if x then
      x.count, x.bytes, x.impacting = x.count + e.count, x.bytes + e.bytes, (x.impacting or 0) + (e.impacting or 0)
    else
      out[c] = e
    end
  end
  order_of[out] = nil                      -- sorted again when asked
  return out
end

function M.figures(A, per, with_frames, window)
  local out = {}
  if per == nil then
    local s = A:summary(window)
    if s.AIFO.count > 0 or s.impacting ~= 0 then add(out, "all", s) end
    return out
  end
  if per == "stack" and type(A) == "userdata" then
    -- in C (A:stack_figures): the same groups, keys and sums, without a
    -- group table or a Stack per stack, and the keys already sorted
    local keys, entries, stacks = A:stack_figures(window, with_frames)
    for i, k in ipairs(keys) do
      local e = entries[i]
      out[k] = e
      if with_frames then named_by(e, stacks[i]) end
    end
    order_of[out] = keys
    return utf8_keys(out)
  end
  -- only the figures kept: a table of every summary figure per group
  -- would cost 1.4 KB each (100,000 stacks: 140 MB and a second)
  for _, g in ipairs(A:group(per, { window = window, fields = { "AIFO", "impacting" } })) do
    if g.AIFO.count > 0 or g.impacting ~= 0 then
      local k = M.group_key(per, g)
      local e = add(out, k, g)
      if per == "process" then e.headline = g.process end
      if per == "stack" and with_frames and stack_of[e] == nil then named_by(e, g.stack) end
    end
  end
  return utf8_keys(out)
end

-- Where the figures of one kind per group are kept (cache, a Baseline's
-- kinds): collect fills the table that Baseline:kind_figures reads.
local function kind_id(kind, per) return kind .. "\0" .. per end

-- Every group of a trace under filters f (report.filters): a list of
-- {kind, by, key, count, bytes, impacting [, headline, frames]}, by kind,
-- then stacks, tags, processes, each by key.  What `leaks --json` stores
-- under "groups" and what `diff` compares.
function M.collect(T, f, with_frames, cache)
  local list = {}
  for _, kind in ipairs(M.KINDS) do
    local sel = {}
    for k, v in pairs(f or {}) do sel[k] = v end
    if sel.kind == nil or sel.kind == kind or (type(sel.kind) == "table" and M.has(sel.kind, kind)) then
      sel.kind = kind
      local A = T:allocations(sel)
      if #A > 0 then
        for _, per in ipairs(M.PERS) do
          if per ~= "tag" or kind == "pool" then
            local id = kind_id(kind, per)
            local fig = cache and cache[id] or M.figures(A, per, with_frames)
            if cache then cache[id] = fig end
            local keys = M.sorted_keys(fig)
            for _, k in ipairs(keys) do      -- the figures' entry itself, named: no copy of 100,000 of them
              local e = fig[k]
              e.kind, e.by, e.key = kind, per, k
              list[#list + 1] = e
            end
          end
        end
      end
    end
  end
  return list
end

function M.has(list, v)
  for _, x in ipairs(list) do if x == v then return true end end
  return false
end

-- The symbol map beside a trace file (NAME.sym), loaded, or nil.
function M.symbols_beside(path)
  local sym = path:gsub("%.[eE][tT][lL]$", "") .. ".sym"
  local kind = heapscript.path_kind(sym)
  if kind == nil then return nil end
  -- (a FIFO there would be opened and waited on for ever)
  if kind ~= "file" then io.stderr:write("heapscript: ignoring " .. sym .. ": not a regular file\n"); return nil end
  local s, err = heapscript.symbols(sym)
  if not s then io.stderr:write("heapscript: ignoring " .. sym .. ": " .. tostring(err) .. "\n") end
  return s or nil
end

-- A stored baseline: path is a trace (.etl: opened, with NAME.sym beside
-- it) or a JSON report with "groups" (leaks --json).  Returns an object
--   b.path, b.trace (nil for JSON), b.groups (the list of M.collect)
--   b:figures(select, per) -> { [key] = {count, bytes, impacting} }
-- or nil, message.  Loading a trace baseline makes its map current:
-- the caller makes its own current again (heapscript.symbols(sym)).
function M.load(path, f)
  local b = { path = path }
  -- read once: the baseline may come through a pipe (--baseline <(git show main:base.json))
  local head = io.open(path, "rb")
  if not head then return nil, path .. ": cannot open the baseline" end
  local first = head:read(64) or ""
  first = first:gsub("^\239\187\191", "")   -- a UTF-8 byte order mark (PowerShell's Out-File writes one)
  if first:match("^%s*[{%[]") or path:lower():match("%.json$") then   -- JSON, or a file named as such
    local json = require "json"
    local text = first .. (head:read("a") or "")
    head:close()
    local ok, v = pcall(json.decode, text)
    if not ok then return nil, path .. ": " .. tostring(v):gsub("^invalid JSON", "not valid JSON") end
    if type(v) ~= "table" or type(v.groups) ~= "table" then
      return nil, path .. ": a JSON baseline is the report of `heapscript leaks --json` (it has \"groups\"); this one has none"
    end
    if v.damaged == true then    -- its figures leave out what the damage held: said, as a caveat
      local n = type(v.damage) == "table" and #v.damage or 0
      io.stderr:write(("heapscript: %s: a report made from a damaged trace (%s skipped): the baseline's figures "
        .. "leave out what the damage held\n"):format(path, n == 1 and "1 damaged part" or n .. " damaged parts"))
    end
    -- a baseline made of a part of a trace (leaks --process, --pid, --tag, --window): compared
    -- with a whole run, each group outside that part would read as new
    local filters = type(v.filters) == "table" and v.filters or {}
    for _, name in ipairs { "process", "pid", "tag", "window" } do
      local x = filters[name]
      if x ~= nil then
        if type(x) == "table" then x = ("%s,%s"):format(x[1] or "", x[2] or "") end
        return nil, ("%s: made with --%s %s (leaks --json): a JSON baseline holds whole-trace figures by kind; "
          .. "make it without --process, --pid, --tag and --window"):format(path, name, tostring(x))
      end
    end
    -- the kinds it was made with (leaks --kind): one left out is not in it, rather than not recorded
    if type(filters.kind) == "table" then
      b.made_kinds = {}
      for _, k in ipairs(filters.kind) do if type(k) == "string" then b.made_kinds[#b.made_kinds + 1] = k end end
    end
    if type(v.kinds) == "table" then         -- the kinds its run had records of, when it says
      b.recorded = {}
      for _, k in ipairs(v.kinds) do
        if type(k) == "table" and type(k.kind) == "string" and (tonumber(k.records) or 0) > 0 then b.recorded[k.kind] = true end
      end
    end
    b.groups = {}
    for i, g in ipairs(v.groups) do
      if type(g) ~= "table" or type(g.kind) ~= "string" or type(g.by) ~= "string" or type(g.key) ~= "string"
         or math.type(g.count) ~= "integer" or math.type(g.bytes) ~= "integer" then
        return nil, ("%s: groups[%d]: expected kind, by, key, count and bytes"):format(path, i)
      end
      -- counts and bytes of leaks: none below 0, and none near 2^63, where a sum of two wraps
      if g.count < 0 or g.bytes < 0 or g.count >= 2^53 or g.bytes >= 2^53 then
        return nil, ("%s: groups[%d]: expected a count and bytes from 0 to 2^53, found %d and %d"):format(path, i, g.count, g.bytes)
      end
      b.groups[i] = { kind = g.kind, by = g.by, key = g.key, count = g.count, bytes = g.bytes,
                      impacting = math.tointeger(g.impacting) or 0, headline = type(g.headline) == "string" and g.headline or nil }
    end
  else
    local seekable = head:seek("set", 0) ~= nil
    head:close()
    if not seekable then return nil, path .. ": a baseline that is not JSON is a trace, and a trace is read from a file, not a pipe" end
    local T, err = heapscript.open(path)
    if not T then return nil, tostring(err) end
    heapscript.input(T)                       -- its damage is the run's: on stderr, exit 1, in the report
    heapscript.symbols(false)
    M.symbols_beside(path)
    b = M.of_trace(T, false, path)
    -- its groups, for a diff; collected whole, they are also the figures
    -- of each kind, summed for a rule's selection by kind
    b.groups = M.collect(T, f, true, (f == nil or next(f) == nil) and b.kinds or nil)
    return b
  end
  return setmetatable(b, { __index = M.Baseline })
end

-- A trace already open as a Baseline (the run itself, to be compared
-- with one), under the symbol map current now.  with_frames: the stacks
-- of its figures name their frames when a report reads them.
function M.of_trace(T, with_frames, path)
  local b = { path = path, trace = T, with_frames = with_frames, kinds = {} }
  b.symbols = heapscript.symbols()            -- nil: the frames are named without a map
  return setmetatable(b, { __index = M.Baseline })
end

M.Baseline = {}

-- Adds fig's count, bytes and impacting to out[key], made when missing:
-- the entry, and whether it is new.
local function sum_into(out, key, fig)
  local e, new = out[key], false
  if not e then e = { count = 0, bytes = 0, impacting = 0 }; out[key] = e; new = true end
  e.count = e.count + fig.count
  e.bytes = e.bytes + fig.bytes
  e.impacting = e.impacting + fig.impacting
  return e, new
end

-- Call fn under the Baseline's symbol map.
local function under_map(self, fn, ...)
  local cur = heapscript.symbols()
  heapscript.symbols(self.symbols or false)
  local r = fn(...)
  if cur then heapscript.symbols(cur) else heapscript.symbols(false) end
  return r
end

-- The figures of one kind of a trace baseline's records, per group
-- (per "process" for nil), made once: every rule that selects by kind
-- alone sums them.
function M.Baseline:kind_figures(kind, per)
  local id = kind_id(kind, per or "process")
  local fig = self.kinds[id]
  if not fig then
    fig = under_map(self, M.figures, self.trace:allocations({ kind = kind }), per or "process", self.with_frames)
    self.kinds[id] = fig
  end
  return fig
end

-- Figures of the baseline for a rule's select and per.  A trace baseline
-- is selected exactly as the run is; a JSON one holds groups by kind, so
-- only select.kind can be applied (anything else is an error).
function M.Baseline:figures(select, per, window)
  select = select or {}
  if per ~= nil and per ~= "stack" and per ~= "tag" and per ~= "process" then
    error("a baseline compares per stack, tag or process, not per " .. tostring(per), 0)
  end
  -- A selection by kind over the whole trace is the sum of its kinds'
  -- figures, each made once: not grouped from the records again for
  -- every rule.  Any other selection, or a window, groups its records.
  local only_kind = next(select) == nil or (next(select) == "kind" and next(select, "kind") == nil)
  if self.trace and only_kind and window == nil then
    local kinds = select.kind
    if type(kinds) == "string" then kinds = { kinds } end
    local plain                  -- where the sum below is kept for the next rule
    if per ~= nil then
      -- one kind with groups (a trace of heap events alone): its figures
      -- as they are, shared, not copied; a loaded baseline's (whose
      -- stacks would be named lazily, under whatever map is current then)
      -- as the plain sum below, made once for every rule that asks
      local only
      for _, kind in ipairs(M.KINDS) do
        if (kinds == nil or M.has(kinds, kind)) and next(self:kind_figures(kind, per)) ~= nil then
          if only then only = false; break end
          only = kind
        end
      end
      if only == nil then return {} end
      if only and self.with_frames then return self:kind_figures(only, per) end
      if only then
        self.plain = self.plain or {}
        plain = kind_id(only, per)
        if self.plain[plain] then return self.plain[plain] end
      end
    end
    local out, summed = {}, 0
    for _, kind in ipairs(M.KINDS) do
      if kinds == nil or M.has(kinds, kind) then
        summed = summed + 1
        for k, g in pairs(self:kind_figures(kind, per)) do
          local e, new = sum_into(out, per == nil and "all" or k, g)
          if new then
            if per == "process" then e.headline = rawget(g, "headline") end
            if self.with_frames and stack_of[g] ~= nil then named_by(e, stack_of[g]) end
          end
        end
      end
    end
    if summed > 1 then             -- a group whose kinds cancel out kept nothing, as M.figures leaves it out
      for k, e in pairs(out) do
        if e.count == 0 and e.impacting == 0 then out[k] = nil end
      end
    end
    if plain then self.plain[plain] = out end
    return out
  end
  if self.trace then
    return under_map(self, M.figures, self.trace:allocations(select), per, self.with_frames, window)
  end
  if window then error("a JSON baseline holds the whole trace: a rule's window needs a trace as the baseline", 0) end
  for k in pairs(select) do
    if k ~= "kind" then
      error(("a JSON baseline holds groups by kind only: select.%s needs a trace as the baseline"):format(k), 0)
    end
  end
  local kinds = select.kind
  if type(kinds) == "string" then kinds = { kinds } end
  local out = {}
  for _, g in ipairs(self.groups) do
    if (kinds == nil or M.has(kinds, g.kind)) and g.by == (per or "process") then
      sum_into(out, per == nil and "all" or g.key, g)
    end
  end
  return out
end

-- The differences between two lists of groups (M.collect): a list of
-- {kind, by, key, status, base, new, delta (bytes), headline, frames},
-- base and new each the side's group (count, bytes, impacting; a zero
-- one where the side has none), status "new", "grew", "shrank",
-- "vanished" or "unchanged", sorted by by, then largest change first.
-- A row's headline and frames are the new side's group's, else the base
-- side's, else made of its key; made when first read (only the rows a
-- report shows are).
local zero = { count = 0, bytes = 0, impacting = 0 }
local lazy_row = { __index = function(r, k)
  if k ~= "headline" and k ~= "frames" then return nil end
  local b, n = rawget(r, "base"), rawget(r, "new")
  local g = n ~= zero and n.headline and n or b ~= zero and b.headline and b or nil
  rawset(r, "headline", g and g.headline or (r.by == "stack" and M.headline_of_key(r.key) or r.key))
  rawset(r, "frames", g and g.frames)
  return rawget(r, k)
end }

function M.diff(base, new)
  local idx, rows = {}, {}
  local function row(g, side)
    local by = idx[g.kind]                    -- rows by kind, by and key: no key text made
    if not by then by = {}; idx[g.kind] = by end
    local keys = by[g.by]
    if not keys then keys = {}; by[g.by] = keys end
    local r = keys[g.key]
    if not r then
      r = setmetatable({ kind = g.kind, by = g.by, key = g.key, base = zero, new = zero }, lazy_row)
      keys[g.key] = r
      rows[#rows + 1] = r
    end
    r[side] = g                               -- the group itself: one table a row, not four
  end
  for _, g in ipairs(base) do row(g, "base") end
  for _, g in ipairs(new) do row(g, "new") end
  for _, r in ipairs(rows) do
    local b, n = r.base, r.new
    r.delta = n.bytes - b.bytes
    if b.count == 0 and n.count > 0 then r.status = "new"
    elseif n.count == 0 and b.count > 0 then r.status = "vanished"
    elseif n.bytes > b.bytes or (n.bytes == b.bytes and n.count > b.count) then r.status = "grew"
    elseif n.bytes < b.bytes or n.count < b.count then r.status = "shrank"
    else r.status = "unchanged" end
  end
  -- by, then largest change first, then kind and key.  Rows whose bytes
  -- did not change (most of them, between two runs of one build) are
  -- ordered by kind, then by key alone, sorted in C (heapscript.sort): a
  -- comparator in Lua would be called two million times for 100,000.
  local order = { stack = 1, tag = 2, process = 3 }
  local moved = {}
  for _, r in ipairs(rows) do if r.delta ~= 0 then moved[#moved + 1] = r end end
  table.sort(moved, function(x, y)
    if x.by ~= y.by then return (order[x.by] or 9) < (order[y.by] or 9) end
    local ax, ay = math.abs(x.delta), math.abs(y.delta)
    if ax ~= ay then return ax > ay end
    if x.kind ~= y.kind then return x.kind < y.kind end
    return x.key < y.key
  end)
  local function names(t)
    local l = {}
    for k in pairs(t) do l[#l + 1] = k end
    return heapscript.sort(l)
  end
  local kinds = names(idx)
  local out, m = {}, 1
  for o = 1, 9 do
    while moved[m] and (order[moved[m].by] or 9) == o do out[#out + 1] = moved[m]; m = m + 1 end
    for _, kind in ipairs(kinds) do           -- the unchanged rows of this order, from idx
      for _, by in ipairs(names(idx[kind])) do
        if (order[by] or 9) == o then
          local rs, keys = idx[kind][by], {}
          for k, r in pairs(rs) do if r.delta == 0 then keys[#keys + 1] = k end end
          for _, k in ipairs(heapscript.sort(keys)) do out[#out + 1] = rs[k] end
        end
      end
    end
  end
  return out
end

-- A headline for a stack known only by its key (a JSON baseline).
function M.headline_of_key(key)
  local frames = {}
  for f in key:gmatch("[^;]+") do table.insert(frames, 1, f) end
  local fake = { frames = function() return frames end }
  return report.headline(fake)
end

return M
