-- churn.lua -- which call stacks allocate the most often: the
-- allocations made in the window (WPA Types AIFI and AIFO together), by
-- allocation stack, the most allocations first (--sort bytes: the most
-- bytes), with how many were freed in the window, how many of those
-- lived no longer than --short, and how many were kept; the flame view
-- of --html and --folded draw the bytes allocated.  WPA: Heap
-- Allocations by Stack sorted by Count; heaptrack: the most allocations,
-- and the temporary ones (here by lifetime, not by what came between).
local report = require "report"
local print = report.print              -- text fits the terminal (report.term)

local usage = [[
usage: heapscript churn TRACE... [OPTIONS]
  --kind heap,virtual,pool   kinds to report (default: heap)
  --sort count|bytes         the stacks with the most allocations (default)
                             or bytes first
  --short S                  lifetime up to which a freed allocation is
                             short-lived (default 1ms; 250us, 0.5 accepted)
  --process NAME, --pid N, --tag TAG, --window T1,T2, --top N (default 5),
  --frames N (default 12), --symbols FILE, --json FILE
]] .. report.OUTPUT_USAGE

local o = report.options({ kind = report.KINDS, sort = { "count", "bytes" }, short = "seconds",
  process = "pattern", pid = "count", tag = "tag", window = "window", top = "count", frames = "count",
  symbols = "string", json = "string" },
  { kind = { "heap" }, sort = { "count" }, short = 0.001, top = 5, frames = 12 }, { ... }, usage)
if not trace then io.stderr:write(usage); return 2 end
if #o.sort > 1 then io.stderr:write("churn: --sort: one of count, bytes\n", usage); return 2 end
local by_bytes = o.sort[1] == "bytes"
report.load_symbols(o.symbols)

local text = report.text(o)
local out = { trace = trace:files(), window = nil, sort = o.sort[1], short = o.short, kinds = {} }
local findings, folded = {}, {}
report.layouts()

-- Of a selection: its records freed in the window within --short of
-- their allocation.
local function short_lived(A)
  return #A:filter{ class = "AIFI", lifetime = { 0, o.short } }
end

for kind, A in report.kinds(o) do
  local made = A:filter{ class = { "AIFI", "AIFO" } }
  local s = made:summary()
  out.window = s.window
  local k = { kind = kind, count = s.AIFI.count + s.AIFO.count, bytes = s.size, freed = s.AIFI.count,
              kept = s.AIFO.count, stacks = {} }
  out.kinds[#out.kinds + 1] = k
  folded[#folded + 1] = { kind = kind, allocs = made }   -- the flame view: bytes allocated, by stack
  local quick = short_lived(made)
  k.short = quick
  if text then
    report.heading(("%s: %s in %.3f..%.3f s, %s; %d freed in it (%d within %g s), %d kept%s")
      :format(kind, report.count(k.count, "allocation"), s.window[1], s.window[2], report.bytes(k.bytes), k.freed, quick, o.short, k.kept,
              report.doubtful(kind)))
  end
  for i, g in ipairs(made:group("stack", { sort = by_bytes and "size" or "count", top = o.top })) do
    local fa, e = report.add_stack(k, findings, kind, "AI", "allocation churn", g, g.size)
    e.freed, e.short, e.kept = g.AIFI.count, short_lived(g.allocs), g.AIFO.count
    e.share = k.count > 0 and g.count / k.count or 0
    if text then
      print(("  #%d  %s (%s), %s (%s), %.3f..%.3f s; %d freed (%d within %g s), %d kept, %s%s")
        :format(i, report.count(g.count, "allocation"), report.share(e.share), report.bytes(g.size), fa.sizes_text, e.first or 0, e.last or 0,
                e.freed, e.short, o.short, e.kept, fa.processes_text, report.tags_text(fa)))
      report.print_stack(g.stack, "        ", o.frames)
    end
  end
end

if text and #out.kinds == 0 then print(report.none(o, report.kind_words(o.kind), o.kind)) end
report.finish(o, out, { script = "churn", findings = findings, folded = folded, filters = report.filters(o),
                        flame = { "Bytes allocated by stack", "Allocated by stack" } })
return 0
