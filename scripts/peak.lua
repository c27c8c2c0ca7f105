-- peak.lua -- what held the memory at its peak: for each kind, the moment
-- in the window when the bytes outstanding were highest, and the
-- allocations live then (made at or before it, not freed by it), by
-- allocation stack, largest first; their bytes add up to the peak.
-- WPA: the outstanding-size graph at its highest point, the selection
-- from the trace's start to there, Type AIFO, grouped by stack (heaptrack
-- calls these the peak's contributions).  --at T: the same at any moment.
local report = require "report"
local print = report.print              -- text fits the terminal (report.term)

local usage = [[
usage: heapscript peak TRACE... [OPTIONS]
  --kind heap,virtual,pool   kinds to report (default: all three)
  --process NAME             one process (name or Lua pattern), --pid N
  --tag TAG                  one pool tag
  --window T1,T2             where to look for the peak, in seconds from the
                             trace start (default: the whole trace); what is
                             live at the peak may be older
  --at T                     what is live at T seconds instead (500ms, 12.5
                             accepted; times count from the earliest file's
                             start: below 0 is before it)
  --top N                    stacks per kind (default 5)
  --frames N                 frames per stack (default 12)
  --symbols FILE             symbol map (default: TRACE.sym beside the trace,
                             if present)
  --json FILE                also the report as JSON ("-": standard output,
                             then no text)
]] .. report.OUTPUT_USAGE

local o = report.options({ kind = report.KINDS, process = "pattern", pid = "count", tag = "tag",
  window = "window", at = "time", top = "count", frames = "count", symbols = "string", json = "string" },
  { top = 5, frames = 12, kind = { "heap", "virtual", "pool" } }, { ... }, usage)
if not trace then io.stderr:write(usage); return 2 end
report.load_symbols(o.symbols)

local text = report.text(o)
local out = { trace = trace:files(), window = nil, kinds = {} }
local findings, folded = {}, {}
report.layouts()

for kind, A in report.kinds(o) do
  local s = A:summary()
  out.window = s.window
  local k = { kind = kind, records = #A, peak = s.peak, peak_time = s.peak_time, at = o.at, stacks = {} }
  out.kinds[#out.kinds + 1] = k
  -- live at t: allocated from the trace's start to t, and freed after it
  -- or never (Outstanding at time t, LIFETIMES.md)
  local t = o.at or (s.peak_time and s.peak > 0 and s.peak_time) or nil
  local live, held
  if t then
    local f = report.filters(o)
    f.kind = kind
    -- from the trace's first event, which is before 0 when a trace merged
    -- in started before the first file (its peak may be there too); a
    -- moment before it has nothing live
    f.window = { math.min(0, (trace:allocations{ kind = kind }:window()), t), t }
    f.class = "AIFO"
    live = trace:allocations(f)
    held = live:summary().AIFO
  end
  if not held or held.count == 0 then
    if text then
      report.heading((o.at and ("%s: %s; nothing live at %.3f s%s"):format(kind, report.count(#A, "record"), o.at, report.doubtful(kind)))
        or ("%s: %s; nothing outstanding in %.3f..%.3f s%s"):format(kind, report.count(#A, "record"), s.window[1], s.window[2],
                                                                          report.doubtful(kind)))
    end
  else
    k.live_count, k.live_bytes = held.count, held.bytes
    folded[#folded + 1] = { kind = kind, allocs = live }
    if text and o.at then
      report.heading(("%s: %s; %s live at %.3f s in %s (peak %s at %.3f s)%s")
        :format(kind, report.count(#A, "record"), report.bytes(held.bytes), o.at, report.count(held.count, "allocation"), report.bytes(s.peak), s.peak_time or 0,
                report.doubtful(kind)))
    elseif text then
      report.heading(("%s: %s; peak %s at %.3f s (in %.3f..%.3f s), held by %s%s")
        :format(kind, report.count(#A, "record"), report.bytes(s.peak), s.peak_time, s.window[1], s.window[2],
                report.count(held.count, "allocation"),
                report.doubtful(kind)))
      if held.bytes ~= s.peak then      -- they are one figure; say so if they ever are not
        print(("  (the allocations live at %.3f s hold %s, not the peak's %s)")
          :format(s.peak_time, report.bytes(held.bytes), report.bytes(s.peak)))
      end
    end
    for i, g in ipairs(live:group("stack", { sort = "bytes", top = o.top })) do
      local fa, e = report.add_stack(k, findings, kind, "AIFO", o.at and "live at the time" or "held at the peak",
                                     g, g.bytes)
      e.share = g.bytes / held.bytes
      if text then
        print(("  #%d  %s (%s) in %s (%s), made %.3f..%.3f s, %s%s")
          :format(i, report.bytes(g.bytes), report.share(e.share), report.count(g.count, "allocation"), fa.sizes_text, e.first or 0, e.last or 0,
                  fa.processes_text, report.tags_text(fa)))
        report.print_stack(g.stack, "        ", o.frames)
      end
    end
  end
end

if text and #out.kinds == 0 then print(report.none(o, report.kind_words(o.kind), o.kind)) end
report.finish(o, out, { script = "peak", findings = findings, folded = folded, filters = report.filters(o),
                        flame = o.at and { ("Bytes live at %.3f s by stack"):format(o.at), "Live at the time by stack" }
                                     or { "Bytes live at the peak by stack", "Live at the peak by stack" } })
return 0
