-- growth.lua -- steady-state growth: memory that is allocated and stays.
-- Of the allocations never freed in the window (WPA Type AIFO), by
-- allocation stack: a *step* is a stack whose kept bytes all arrive
-- within a short span (a cache, a buffer pool, a new working set); a
-- *steady leak* is a stack that keeps adding over the window, with its
-- rate.  Steps in the first part of the window are the baseline.
local report = require "report"
local print = report.print              -- text fits the terminal (report.term)

local usage = [[
usage: heapscript growth TRACE... [OPTIONS]
  --kind heap,virtual,pool   kinds (default: virtual,heap,pool)
  --min-step N               smallest step reported (default 1MiB)
  --step-span S              a step arrives within S seconds (default 1)
  --baseline S               steps before S seconds into the window are the
                             baseline (default: the first 5% of the window)
  --min-rate N               smallest steady growth reported, bytes/s
                             (default 1)
  --process NAME, --pid N, --window T1,T2, --frames N (default 10),
  --symbols FILE, --json FILE
]] .. report.OUTPUT_USAGE

local o = report.options({ kind = report.KINDS, min_step = "number", step_span = "seconds", baseline = "seconds",
  min_rate = "number", process = "pattern", pid = "count", window = "window", frames = "count",
  symbols = "string", json = "string" },
  { kind = { "virtual", "heap", "pool" }, min_step = 1024 * 1024, step_span = 1, min_rate = 1, frames = 10 },
  { ... }, usage)
if not trace then io.stderr:write(usage); return 2 end
report.load_symbols(o.symbols)
local span = o.step_span
local text = report.text(o)
local out = { kinds = {} }
report.layouts()
local findings = {}

for kind, A in report.kinds(o) do
  do
    local s = A:summary()
    local t1, t2 = s.window[1], s.window[2]
    local base_end = t1 + (o.baseline or (t2 - t1) * 0.05)   -- seconds into the window
    local kept = A:filter{ class = "AIFO" }
    local k = { kind = kind, start = s.outstanding_start, ["end"] = s.outstanding_end, growth = s.impacting,
                window = s.window, baseline = {}, steps = {}, steady = {},
                in_flight = { bytes = 0, count = 0, stacks = 0 }, below = 0 }
    -- A stack that frees in the window at least as many blocks as it keeps, and keeps only blocks
    -- of the last quarter of its allocations, turns its memory over (a cache that evicts, a queue,
    -- a sawtooth caught mid-cycle): what it holds at the end is in flight, not growth.  One that
    -- mostly frees but keeps blocks from all along (a path that leaks now and then) still grows.
    local made = {}
    for _, g in ipairs(A:group("stack", { fields = { "AIFI", "allocs" } })) do made[g.key] = g end
    local function in_flight(g, kept_first)
      local m = made[g.key]
      if not m or m.AIFI.count < g.count then return false end
      local f, l = report.span(m.allocs)
      return f ~= nil and kept_first >= f + (l - f) * 0.75
    end
    out.kinds[#out.kinds + 1] = k
    -- a stack's frames are named only when it is kept: a trace of 100,000
    -- leaking stacks would otherwise name every frame of each
    local function keep(list, e)
      e.headline, e.frames = report.headline(e.stack), report.frames(e.stack)
      list[#list + 1] = e
    end
    for _, g in ipairs(kept:group("stack", { sort = "bytes", fields = { "bytes", "count", "allocs" } })) do
      local first, last = report.span(g.allocs)
      local e = { bytes = g.bytes, count = g.count, first = first, last = last, stack = g.stack, allocs = g.allocs }
      if last - first <= span then
        if g.bytes >= o.min_step then keep(first < base_end and k.baseline or k.steps, e)
        else k.below = k.below + g.bytes end
      elseif in_flight(g, first) then
        k.in_flight.bytes, k.in_flight.count = k.in_flight.bytes + g.bytes, k.in_flight.count + g.count
        k.in_flight.stacks = k.in_flight.stacks + 1
      else
        e.rate = g.bytes / (last - first)
        if e.rate >= o.min_rate then keep(k.steady, e) else k.below = k.below + g.bytes end
      end
    end
    local function by_first(x, y) return x.first < y.first end
    report.stable_sort(k.steps, by_first)       -- steps at one time: by bytes, as grouped
    report.stable_sort(k.baseline, by_first)
    if text then
      report.heading(("%s: %s outstanding at %.3f s, %s at %.3f s (%s)%s"):format(kind, report.bytes(s.outstanding_start), t1,
        report.bytes(s.outstanding_end), t2, report.change_text(s), report.doubtful(kind)))
      local level = s.outstanding_start
      for _, e in ipairs(k.baseline) do
        level = level + e.bytes
        print(("  baseline %s at %.3f s from %s"):format(report.bytes(e.bytes), e.first, e.headline))
      end
      for _, e in ipairs(k.steps) do
        level = level + e.bytes
        print(("  step +%s at %.3f s (%s) from %s, kept to the end: level %s")
          :format(report.bytes(e.bytes), e.first, report.count(e.count, "allocation"), e.headline, report.bytes(level)))
        report.print_stack(e.stack, "        ", o.frames)
      end
      for _, e in ipairs(k.steady) do
        print(("  steady growth %s/s: %s in %s from %.3f to %.3f s, from %s")
          :format(report.bytes(math.floor(e.rate + 0.5)), report.bytes(e.bytes), report.count(e.count, "allocation"), e.first, e.last, e.headline))
        report.print_stack(e.stack, "        ", o.frames)
      end
      if k.in_flight.count > 0 then
        print(("  in flight at the end, not growth: %s in %s (%s, each freeing as many as it keeps, late ones)")
          :format(report.bytes(k.in_flight.bytes), report.count(k.in_flight.count, "allocation"),
                  report.count(k.in_flight.stacks, "stack")))
      end
      if #k.steps == 0 and #k.steady == 0 then
        print((#k.baseline > 0 and "  no growth beyond the baseline" or "  no step or steady growth")
          .. (k.below > 0 and (" (%s kept in smaller steps than --min-step or slower than --min-rate)")
                :format(report.bytes(k.below)) or ""))
      end
    end
    for what, l in pairs{ baseline = k.baseline, step = k.steps, ["steady growth"] = k.steady } do
      for _, e in ipairs(l) do
        local procs = {}
        for _, pg in ipairs(e.allocs:group("process", { fields = {} })) do procs[#procs + 1] = ("%s (%d)"):format(pg.process or "?", pg.pid or 0) end
        findings[#findings + 1] = { type = "AIFO", what = what, kind = kind, process = table.concat(procs, ", "),
          headline = e.headline, frames = e.frames, count = e.count, bytes = e.bytes, impacting = e.bytes,
          first = e.first, last = e.last, times = what == "step" and { e.first } or nil, rate = e.rate }
        e.stack, e.allocs = nil, nil
      end
    end
  end
end
if text and #out.kinds == 0 then print(report.none(o, report.kind_words(o.kind), o.kind)) end
local order = { step = 1, ["steady growth"] = 2, baseline = 3 }
report.stable_sort(findings, function(x, y)
  if x.kind ~= y.kind then return x.kind < y.kind end
  if x.what ~= y.what then return order[x.what] < order[y.what] end
  return (x.first or 0) < (y.first or 0)
end)
local f = report.filters(o)
f.kind = o.kind
report.finish(o, out, { script = "growth", findings = findings, filters = f })
return 0
