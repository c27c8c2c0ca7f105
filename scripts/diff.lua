-- diff.lua -- compare a run with a baseline: what leaks now that did not
-- (new), leaks more (grew), less (shrank) or no longer (vanished), by
-- allocation stack, by pool tag and by process, for each kind.  The
-- figures are those of `leaks` (AIFO count and bytes, Impacting Size) on
-- each side.  Stacks are matched by module and function, so a rebuilt
-- binary still matches (see baseline.lua).
--
--   heapscript diff BASE.etl NEW.etl [-- OPTIONS]
--   heapscript diff NEW.etl -- --baseline BASE.json|BASE.etl [OPTIONS]
local report = require "report"
local print = report.print              -- text fits the terminal (report.term)
local baseline = require "baseline"

local usage = [[
usage: heapscript diff BASE.etl NEW.etl [-- OPTIONS]
       heapscript diff NEW.etl -- --baseline FILE [OPTIONS]
  --baseline FILE            the baseline: a trace, or the JSON report of
                             `heapscript leaks --json`
  --kind heap,virtual,pool   kinds compared (default: all three)
  --process NAME, --pid N, --tag TAG, --window T1,T2
                             selection, the same on both sides
  --by stack,tag,process     groupings shown (default: all three)
  --all                      also list the groups that did not change
  --top N                    groups listed per grouping (default 10)
  --frames N                 frames shown per new or grown stack (default 6)
  --symbols FILE             symbol map of NEW (default: NEW.sym beside it);
                             BASE uses BASE.sym
  --json FILE                the differences as JSON ("-": standard output,
                             then no text)
]] .. report.OUTPUT_USAGE

local o = report.options({ baseline = "string", kind = report.KINDS, process = "pattern", pid = "count", tag = "tag",
  window = "window", by = { "stack", "tag", "process" }, all = "flag", top = "count", frames = "count", symbols = "string",
  json = "string" }, { kind = { "heap", "virtual", "pool" }, by = { "stack", "tag", "process" }, top = 10, frames = 6 },
  { ... }, usage)
if not trace then io.stderr:write(usage); return 2 end

local files = trace:files()
local base_path, new_path
if o.baseline then
  if #files ~= 1 then io.stderr:write("heapscript: diff: with --baseline, give one trace (the new run)\n"); return 2 end
  base_path, new_path = o.baseline, files[1]
else
  if #files ~= 2 then
    io.stderr:write("heapscript: diff: give two traces, BASE and NEW (or NEW and --baseline FILE)\n" .. usage)
    return 2
  end
  base_path, new_path = files[1], files[2]
end

local f = report.filters(o)
f.kind = o.kind
local base, err = baseline.load(base_path, f)
if not base then io.stderr:write("heapscript: " .. err .. "\n"); return 2 end
if not base.trace then
  -- a JSON baseline holds what `leaks` selected when it was made: only its kinds can be chosen here
  if o.process or o.pid or o.tag or o.window then
    io.stderr:write("heapscript: diff: " .. base_path .. " is a JSON baseline: --process, --pid, --tag and "
      .. "--window need a trace as the baseline\n")
    return 2
  end
  local kept = {}
  for _, g in ipairs(base.groups) do if baseline.has(o.kind, g.kind) then kept[#kept + 1] = g end end
  base.groups = kept
end

-- the new run opened on its own: the merged `trace` would mix both runs
local N = trace
if #files == 2 then N = assert(heapscript.open(new_path)) end
heapscript.symbols(false)
if o.symbols then report.load_symbols(o.symbols) else baseline.symbols_beside(new_path) end
local new = baseline.collect(N, f, true)
local rows = baseline.diff(base.groups, new)
-- The records without a stack (none was recorded for them, or their
-- walks were lost) are no call stack: their group is shown apart, not
-- counted or listed as a stack that is new, grew or vanished (as policy
-- leaves them out of its comparison per stack).
local stackless, kept = {}, {}
for _, r in ipairs(rows) do
  if r.by == "stack" and r.key == baseline.NO_STACK then stackless[#stackless + 1] = r else kept[#kept + 1] = r end
end
rows = kept
report.layouts(base.trace and { base.trace, N } or { N })   -- the two sides' layouts (a JSON baseline has none)

local text = report.text(o)
local out = { base = base_path, new = new_path, counts = {}, groups = {} }
-- a side's figures as the report gives them (a row holds the side's group)
local function figures(g) return { count = g.count, bytes = g.bytes, impacting = g.impacting } end
local shown = {}
for _, by in ipairs(o.by) do shown[by] = true end
local labels = { stack = "stacks", tag = "pool tags", process = "processes" }

-- A table's row: change, kind, delta and three pairs "base -> new" (leaked
-- bytes, count, impacting), each column as wide as its widest cell in the
-- rows listed, so that the table fits 80 columns with the figures of most
-- runs.  On a terminal too narrow for it, each row is two lines instead,
-- the figures named (a table wrapped at its spaces would no longer read as one).
local function cells(r)
  local sign = r.delta >= 0 and "+" or "-"
  return { r.status, r.kind, sign .. report.bytes(math.abs(r.delta)),
    { report.bytes(r.base.bytes), report.bytes(r.new.bytes) }, { tostring(r.base.count), tostring(r.new.count) },
    { report.bytes(r.base.impacting), report.bytes(r.new.impacting) } }
end
local HEAD = { "change", "kind", "delta", "leaked base -> new", "count", "impacting" }
local layouts = setmetatable({}, { __mode = "k" })
local function layout(listed)
  if layouts[listed] then return layouts[listed] end
  local w = { #HEAD[1], #HEAD[2], #HEAD[3], {}, {}, {} }
  for _, r in ipairs(listed) do
    local c = cells(r)
    for i = 1, 3 do w[i] = math.max(w[i], #c[i]) end
    for i = 4, 6 do
      w[i][1] = math.max(w[i][1] or 0, #c[i][1])
      w[i][2] = math.max(w[i][2] or 0, #c[i][2])
    end
  end
  for i = 4, 6 do   -- a pair's header wider than its cells widens the new side
    w[i][2] = math.max(w[i][2], #HEAD[i] - w[i][1] - 4)
  end
  local width = 2 + w[1] + 2 + w[2] + 2 + w[3]
  for i = 4, 6 do width = width + 2 + w[i][1] + 4 + w[i][2] end
  local l = { w = w, stacked = report.term.stdout and width > report.term.columns }
  layouts[listed] = l
  return l
end
local function line(l, c)
  local w = l.w
  local parts = { ("  %-" .. w[1] .. "s  %-" .. w[2] .. "s  %" .. w[3] .. "s"):format(c[1], c[2], c[3]) }
  for i = 4, 6 do
    if type(c[i]) == "table" then
      parts[#parts + 1] = ("%" .. w[i][1] .. "s -> %-" .. w[i][2] .. "s"):format(c[i][1], c[i][2])
    else   -- a header: centred over the whole pair
      local pad = (w[i][1] + 4 + w[i][2] - #c[i]) // 2
      parts[#parts + 1] = ("%-" .. (w[i][1] + 4 + w[i][2]) .. "s"):format((" "):rep(pad) .. c[i])
    end
  end
  return (table.concat(parts, "  "):gsub("%s+$", ""))
end
local function print_row(r, listed)
  local l = layout(listed)
  local c = cells(r)
  if l.stacked then
    print(("  %s %s %s: leaked %s -> %s"):format(c[1], c[2], c[3], c[4][1], c[4][2]))
    print(("      count %s -> %s, impacting %s -> %s"):format(c[5][1], c[5][2], c[6][1], c[6][2]))
    return
  end
  if r == listed[1] then print(line(l, HEAD)) end
  print(line(l, c))
end

for _, by in ipairs({ "stack", "tag", "process" }) do
  if shown[by] then
    local c = { new = 0, grew = 0, shrank = 0, vanished = 0, unchanged = 0 }
    out.counts[by] = c
    for _, r in ipairs(rows) do if r.by == by then c[r.status] = c[r.status] + 1 end end
    if text then
      print(("%s: %d new, %d grew, %d shrank, %d vanished, %d unchanged"):format(labels[by], c.new, c.grew, c.shrank,
        c.vanished, c.unchanged))
    end
    local n, listed = 0, {}
    for _, r in ipairs(rows) do
      if r.by == by and (o.all or r.status ~= "unchanged") then
        n = n + 1
        out.groups[#out.groups + 1] = { kind = r.kind, by = r.by, key = r.key, status = r.status, delta = r.delta,
          base = figures(r.base), new = figures(r.new), headline = r.headline, frames = r.frames }
        if n <= o.top then listed[#listed + 1] = r end
      end
    end
    if text then
      for _, r in ipairs(listed) do
        print_row(r, listed)
        print("            " .. (by == "tag" and ("tag '" .. r.key .. "'") or r.headline))
        if by == "stack" and (r.status == "new" or r.status == "grew") and r.frames then
          report.print_stack(r.frames, "              ", o.frames)
        end
      end
    end
    if text and n > o.top then print(("  ... %d more (--top)"):format(n - o.top)) end
    if by == "stack" then
      for _, r in ipairs(stackless) do
        local x = { kind = r.kind, delta = r.delta, base = figures(r.base), new = figures(r.new) }
        out.no_stack = out.no_stack or {}
        out.no_stack[#out.no_stack + 1] = x
        if text then report.print("  without a stack: " .. report.no_stack_text(x) .. " (no stack walk matched)") end
      end
    end
  end
end

-- A kind one side has no records of at all (not recorded: heap tracing
-- off, a kernel flag left out) makes every group of it new or vanished
-- for that alone, not because a leak came or was fixed: said, per side.
local sides = { base = base.trace and report.recorded(base.trace) or base.recorded, new = report.recorded(N) }
local has = { base = {}, new = {} }          -- kinds with groups, per side
for _, g in ipairs(base.groups) do has.base[g.kind] = true end
for _, g in ipairs(new) do has.new[g.kind] = true end
for _, side in ipairs({ "base", "new" }) do
  local other = side == "base" and "new" or "base"
  for _, k in ipairs(o.kind) do
    if sides[side] and not sides[side][k] and has[other][k] then
      out.unrecorded = out.unrecorded or {}
      out.unrecorded[side] = out.unrecorded[side] or {}
      table.insert(out.unrecorded[side], k)
    end
  end
end
if text and out.unrecorded then
  for _, side in ipairs({ "base", "new" }) do
    local ks = out.unrecorded[side]
    if ks then
      -- (a JSON baseline made with leaks --kind says which kinds it holds: the others were left out)
      local made = side == "base" and base.made_kinds
      print(("note: %s has no %s records at all (%s): the groups of %s show as %s for that, "
        .. "not because a leak %s"):format(side == "base" and "BASE" or "NEW", report.kind_words(ks),
          made and ("made with --kind " .. table.concat(made, ",")) or "not recorded?",
          #ks == 1 and "that kind" or "those kinds", side == "base" and "new" or "vanished",
          side == "base" and "came" or "was fixed"))
    end
  end
end

report.finish(o, out, { script = "diff", trace = N, filters = f, deltas = out.groups, no_stack = out.no_stack,
                        title = ("diff %s -> %s"):format(base_path, new_path) })
return 0
