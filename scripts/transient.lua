-- transient.lua -- transient spikes: allocations made and released inside
-- the window (WPA Type AIFI) that are large and short-lived, grouped by
-- allocation stack, with their count, sizes, lifetimes and times.
local report = require "report"
local print = report.print              -- text fits the terminal (report.term)

local usage = [[
usage: heapscript transient TRACE... [OPTIONS]
  --kind heap,virtual,pool   kinds to look at (default: virtual,heap)
  --min-size N               smallest allocation that counts as a spike
                             (default 1MiB)
  --max-lifetime S           longest lifetime, in seconds (default 1; 500ms,
                             250us accepted)
  --process NAME, --pid N, --window T1,T2, --top N (default 5),
  --frames N (default 12), --symbols FILE, --json FILE
]] .. report.OUTPUT_USAGE

local o = report.options({ kind = report.KINDS, min_size = "number", max_lifetime = "seconds", process = "pattern",
  pid = "count", window = "window", top = "count", frames = "count", symbols = "string", json = "string" },
  { kind = { "virtual", "heap" }, min_size = 1024 * 1024, max_lifetime = 1, top = 5, frames = 12 },
  { ... }, usage)
if not trace then io.stderr:write(usage); return 2 end
report.load_symbols(o.symbols)
local maxlife = o.max_lifetime
local text = report.text(o)
local out = { min_size = o.min_size, max_lifetime = maxlife, kinds = {} }
report.layouts()
local findings, folded = {}, {}

for _, kind in ipairs(o.kind) do
  local f = report.filters(o)
  f.kind = kind
  f.class = "AIFI"
  -- sizes are whole bytes: --min-size 0.5 means 1 B, and a bound past
  -- every size selects nothing
  f.size = { o.min_size >= math.maxinteger and math.maxinteger or math.ceil(o.min_size), math.maxinteger }
  f.lifetime = { 0, maxlife }
  local spikes = trace:allocations(f)
  local k = { kind = kind, count = #spikes, stacks = {} }
  out.kinds[#out.kinds + 1] = k
  if #spikes > 0 then
    folded[#folded + 1] = { kind = kind, allocs = spikes }
    local s = spikes:summary()
    k.bytes = s.transient
    if text then
      report.heading(("%s: %s of at least %s living at most %g s: %s allocated and released%s")
        :format(kind, report.count(#spikes, "transient allocation"), report.bytes(o.min_size), maxlife,
                report.bytes(s.transient), report.doubtful(kind)))
    end
    for i, g in ipairs(spikes:group("stack", { sort = "transient", top = o.top })) do
      local lmin, lmax, lsum, times, sizes = math.huge, 0, 0, {}, {}
      for a in g.allocs:each() do
        local l = a.lifetime
        if l < lmin then lmin = l end
        if l > lmax then lmax = l end
        lsum = lsum + l
        times[#times + 1] = a.alloc_time
        sizes[a.size] = (sizes[a.size] or 0) + 1
      end
      local sl = {}
      for sz, n in pairs(sizes) do sl[#sl + 1] = { size = sz, count = n } end
      table.sort(sl, function(x, y) return x.size < y.size end)
      local e = { count = g.count, bytes = g.transient, sizes = sl, lifetime_min = lmin, lifetime_max = lmax,
                  lifetime_avg = lsum / g.count, times = times, headline = report.headline(g.stack),
                  frames = report.frames(g.stack) }
      k.stacks[#k.stacks + 1] = e
      local procs = {}
      for _, pg in ipairs(g.allocs:group("process", { fields = {} })) do procs[#procs + 1] = ("%s (%d)"):format(pg.process or "?", pg.pid or 0) end
      findings[#findings + 1] = { type = "AIFI", what = "spike", kind = kind, process = table.concat(procs, ", "),
        headline = e.headline, frames = e.frames, count = g.count, bytes = g.transient, impacting = g.impacting,
        times = times, lifetime = lmax }
      if text then
        local szs = {}
        for _, x in ipairs(sl) do szs[#szs + 1] = ("%d x %s"):format(x.count, report.bytes(x.size)) end
        local ts = {}
        for j = 1, math.min(#times, 10) do ts[j] = ("%.3f"):format(times[j]) end
        print(("  #%d  %s (%s), lifetime %.6f..%.6f s (avg %.6f), at %s%s s")
          :format(i, report.count(g.count, "spike"), table.concat(szs, ", "), lmin, lmax, e.lifetime_avg, table.concat(ts, ", "),
                  #times > 10 and ", ..." or ""))
        report.print_stack(g.stack, "        ", o.frames)
      end
    end
  elseif text then
    print(("%s: no transient allocations of at least %s living at most %g s")
      :format(kind, report.bytes(o.min_size), maxlife))
  end
end
-- the flame view draws the spikes' bytes (allocated and freed), not what is outstanding
report.finish(o, out, { script = "transient", findings = findings, folded = folded, filters = report.filters(o),
                        flame = { "Bytes of the transient spikes by stack", "Spikes by stack" } })
return 0
