-- pool.lua -- kernel pool by tag, as WPA's Pool table and poolmon show it:
-- allocations, frees, bytes outstanding at the end of the window and the
-- peak, per tag and pool type; for the tags that keep growing, the stacks
-- that allocated what stays.
local report = require "report"

local usage = [[
usage: heapscript pool TRACE... [-- OPTIONS]
  --top N          tags listed (default 10), sorted by bytes outstanding at the end
  --stacks N       stacks shown per leaking tag (default 2)
  --tag TAG        one tag only; --window T1,T2; --frames N (default 12); --symbols FILE; --json FILE
]] .. report.OUTPUT_USAGE

local o = report.options({ top = "number", stacks = "number", tag = "string", window = "window",
  frames = "number", symbols = "string", json = "string" }, { top = 10, stacks = 2, frames = 12 }, { ... }, usage)
if not trace then io.stderr:write(usage); return 2 end
report.load_symbols(o.symbols)
local text = report.text(o)
local f = report.filters(o)
f.kind = "pool"
local P = trace:allocations(f)
local out = { tags = {} }
local findings = {}
if #P == 0 then
  if text then print("no pool allocations in this trace") end
  if o.json then report.write_json(o.json, out) end
  report.emit(o, { script = "pool", findings = findings, filters = f })
  return 0
end
local s = P:summary()
if text then
  print(("pool: %d allocations in %.3f..%.3f s; %s outstanding at the end (%+d B), peak %s at %.3f s")
    :format(#P, s.window[1], s.window[2], report.bytes(s.outstanding_end), s.impacting, report.bytes(s.peak),
            s.peak_time or 0))
  print(("  %-6s %-22s %8s %8s %12s %12s %12s"):format("tag", "type", "allocs", "frees", "outstanding", "impacting", "peak"))
end
for _, g in ipairs(P:group("tag", { sort = "outstanding_end", top = o.top })) do
  local types, frees = {}, 0
  for a in g.allocs:each() do
    types[a.pool_type] = true
    if a.free_time then frees = frees + 1 end
  end
  local tl = {}
  for t in pairs(types) do tl[#tl + 1] = t end
  table.sort(tl)
  local e = { tag = g.tag, types = tl, allocs = g.count, frees = frees, outstanding = g.outstanding_end,
              outstanding_count = g.outstanding_end_count, impacting = g.impacting, peak = g.peak, stacks = {} }
  out.tags[#out.tags + 1] = e
  if text then
    print(("  %-6s %-22s %8d %8d %12s %12s %12s"):format("'" .. g.tag .. "'", table.concat(tl, ","), g.count, frees,
      report.bytes(g.outstanding_end), report.bytes(g.impacting), report.bytes(g.peak)))
  end
  if g.impacting > 0 and o.stacks > 0 then
    for i, sg in ipairs(g.allocs:filter{ class = "AIFO" }:group("stack", { sort = "bytes", top = o.stacks })) do
      e.stacks[#e.stacks + 1] = { bytes = sg.bytes, count = sg.count, headline = report.headline(sg.stack),
                                  frames = report.frames(sg.stack) }
      local procs = {}
      for _, pg in ipairs(sg.allocs:group("process")) do procs[#procs + 1] = ("%s (%d)"):format(pg.process or "?", pg.pid or 0) end
      findings[#findings + 1] = { type = "AIFO", what = "pool tag '" .. g.tag .. "'", kind = "pool",
        process = table.concat(procs, ", "), headline = e.stacks[#e.stacks].headline, frames = e.stacks[#e.stacks].frames,
        count = sg.count, bytes = sg.bytes, impacting = sg.impacting, tag = g.tag }
      if text then
        print(("         stack #%d: %s in %d allocations still outstanding"):format(i, report.bytes(sg.bytes), sg.count))
        report.print_stack(sg.stack, "           ", o.frames)
      end
    end
  end
end
if o.json then report.write_json(o.json, out) end
report.emit(o, { script = "pool", findings = findings, filters = f })
return 0
