-- pool.lua -- kernel pool by tag, as WPA's Pool table and poolmon show it:
-- allocations, frees, bytes outstanding at the end of the window and the
-- peak, per tag and pool type; for the tags that keep growing, the stacks
-- that allocated what stays.
local report = require "report"
local print = report.print              -- text fits the terminal (report.term)

local usage = [[
usage: heapscript pool TRACE... [OPTIONS]
  --top N                    tags listed (default 10), sorted by bytes
                             outstanding at the end
  --stacks N                 stacks shown per leaking tag (default 2)
  --tag TAG                  one tag only
  --window T1,T2, --frames N (default 12), --symbols FILE, --json FILE
]] .. report.OUTPUT_USAGE

local o = report.options({ top = "count", stacks = "count", tag = "tag", window = "window",
  frames = "count", symbols = "string", json = "string" }, { top = 10, stacks = 2, frames = 12 }, { ... }, usage)
if not trace then io.stderr:write(usage); return 2 end
report.load_symbols(o.symbols)
local text = report.text(o)
local f = report.filters(o)
f.kind = "pool"
local P = trace:allocations(f)
report.layouts()
local out = { tags = {} }
local findings = {}
if #P == 0 then
  if text then print(report.none(o, "pool", { "pool" })) end
  report.finish(o, out, { script = "pool", findings = findings, filters = f })
  return 0
end
local s = P:summary()
if text then
  -- as poolmon counts them: allocations made in the window, frees made in it (of entries
  -- allocated before it or before the trace too)
  report.heading(("pool: %s and %s in %.3f..%.3f s; %s outstanding at the end (%s), peak %s at %.3f s%s")
    :format(report.count(s.AIFI.count + s.AIFO.count, "allocation"), report.count(s.AIFI.count + s.AOFI.count, "free"),
            s.window[1], s.window[2], report.bytes(s.outstanding_end), report.change_text(s),
            report.bytes(s.peak),
            s.peak_time or 0, report.doubtful("pool")))
  report.heading(("  %-6s %-14s %7s %7s %11s %11s %11s"):format("tag", "type", "allocs", "frees", "outstanding", "impacting", "peak"))
end
-- Who allocated what stays: the process from the records; the thread from
-- the pool event itself, since records keep none: its header's, or for a
-- kernel pool event without ids the StackWalk's (ev.stack_tid).
local function ns(t) return math.floor(t * 1e9 + 0.5) end
local function who(e)
  if not e.process then return "" end
  return (", %s (%d)%s"):format(e.process, e.pid, e.thread and (" thread " .. e.thread) or "")
end
local rows, wanted, nwanted = {}, {}, 0
for _, g in ipairs(P:group("tag", { sort = "outstanding_end", top = o.top })) do
  local types, frees = {}, g.AIFI.count + g.AOFI.count   -- freed in the window
  for a in g.allocs:each() do types[a.pool_type] = true end
  local tl = {}
  for t in pairs(types) do tl[#tl + 1] = t end
  table.sort(tl)
  local e = { tag = g.tag, types = tl, allocs = g.AIFI.count + g.AIFO.count, frees = frees, outstanding = g.outstanding_end,
              outstanding_count = g.outstanding_end_count, impacting = g.impacting, peak = g.peak, stacks = {} }
  out.tags[#out.tags + 1] = e
  local row = { g = g, e = e, tl = tl, frees = frees, stacks = {} }
  rows[#rows + 1] = row
  if g.impacting > 0 and o.stacks > 0 then
    for _, sg in ipairs(g.allocs:filter{ class = "AIFO" }:group("stack", { sort = "bytes", top = o.stacks })) do
      local se = { bytes = sg.bytes, count = sg.count, headline = report.headline(sg.stack),
                   frames = report.frames(sg.stack) }
      local procs = sg.allocs:group("process", { sort = "bytes" })
      if procs[1] and procs[1].process then
        se.process, se.pid = procs[1].process, procs[1].pid
        for a in procs[1].allocs:each() do
          local k = ns(a.alloc_time)
          if not wanted[k] then wanted[k] = {}; nwanted = nwanted + 1 end
          table.insert(wanted[k], { se = se, pid = a.pid })
          break
        end
      end
      e.stacks[#e.stacks + 1] = se
      local procs = {}
      for _, pg in ipairs(sg.allocs:group("process", { fields = {} })) do procs[#procs + 1] = ("%s (%d)"):format(pg.process or "?", pg.pid or 0) end
      findings[#findings + 1] = { type = "AIFO", what = "pool tag '" .. g.tag .. "'", kind = "pool",
        process = table.concat(procs, ", "), headline = se.headline, frames = se.frames,
        count = sg.count, bytes = sg.bytes, impacting = sg.impacting, tag = g.tag }
      row.stacks[#row.stacks + 1] = { sg = sg, se = se }
    end
  end
end
-- Only the events at those times reach Lua (the ns filter, 32 times a walk):
-- a walk of every pool event in Lua took longer than the whole analysis.
if nwanted > 0 then
  local times = {}
  for k in pairs(wanted) do times[#times + 1] = k end
  table.sort(times)
  for i = 1, #times, 32 do
    for ev in trace:events { provider = "Pool", ns = table.move(times, i, math.min(i + 31, #times), 1, {}) } do
      for _, x in ipairs(wanted[ev.ns]) do
        if not x.se.thread and (ev.pid or ev.stack_pid) == x.pid then x.se.thread = ev.tid or ev.stack_tid end
      end
    end
  end
end
for _, row in ipairs(rows) do
  local g = row.g
  if text then
    print(("  %-6s %-14s %7d %7d %11s %11s %11s"):format("'" .. g.tag .. "'", table.concat(row.tl, ","), row.e.allocs,
      row.frees, report.bytes(g.outstanding_end), report.bytes(g.impacting), report.bytes(g.peak)))
    for i, s in ipairs(row.stacks) do
      print(("         stack #%d: %s in %s still outstanding%s"):format(i, report.bytes(s.sg.bytes),
        report.count(s.sg.count, "allocation"), who(s.se)))
      report.print_stack(s.sg.stack, "           ", o.frames)
    end
  end
end
report.finish(o, out, { script = "pool", findings = findings, filters = f })
return 0
