-- leaks.lua -- what was allocated and never freed: outstanding heap
-- blocks, committed VirtualAlloc ranges and pool entries at the end of
-- the window (the whole trace by default), by kind, then by allocation
-- stack, largest impact first.  WPA: Heap Allocations / VirtualAlloc
-- Commit / Pool, Type = AIFO, grouped by stack, sorted by Impacting Size.
local report = require "report"
local print = report.print              -- text fits the terminal (report.term)

local usage = [[
usage: heapscript leaks TRACE... [OPTIONS]
  --kind heap,virtual,pool   kinds to report (default: all three)
  --process NAME             one process (name or Lua pattern), --pid N
  --tag TAG                  one pool tag
  --window T1,T2             seconds from the trace start (default: the whole
                             trace)
  --top N                    stacks per kind (default 5)
  --frames N                 frames per stack (default 12)
  --min-bytes N              leave out stacks that leaked less (default 0;
                             64k, 1MiB accepted)
  --symbols FILE             symbol map (default: TRACE.sym beside the trace,
                             if present)
  --json FILE                also the report as JSON ("-": standard output,
                             then no text); its "groups" (every leaking stack,
                             tag and process) are a baseline for
                             `heapscript diff` and `policy --baseline`
]] .. report.OUTPUT_USAGE

local o = report.options({ kind = report.KINDS, process = "pattern", pid = "count", tag = "tag",
  window = "window", top = "count", frames = "count", min_bytes = "number", symbols = "string",
  json = "string" }, { top = 5, frames = 12, min_bytes = 0, kind = { "heap", "virtual", "pool" } },
  { ... }, usage)
if not trace then io.stderr:write(usage); return 2 end
report.load_symbols(o.symbols)

local text = report.text(o)
local out = { trace = trace:files(), window = nil, kinds = {} }
local findings = {}
local stats = trace:memory_stats()
local stackless_partly = false          -- a "(no stack)" group of a kind whose other leaks have stacks
report.layouts()

for kind, A in report.kinds(o) do
  do
    local s = A:summary()
    out.window = s.window
    local kept = A:filter{ class = "AIFO" }
    local k = { kind = kind, records = #A, leaked_count = s.AIFO.count, leaked_bytes = s.AIFO.bytes,
                impacting = s.impacting, peak = s.peak, peak_time = s.peak_time,
                outstanding_end = s.outstanding_end, stacks = {} }
    out.kinds[#out.kinds + 1] = k
    if text then
      report.heading(("%s: %s; %d allocated and not freed by %.3f s: %s (impacting %s, peak %s at %.3f s)%s")
        :format(kind, report.count(#A, "record"), s.AIFO.count, s.window[2], report.bytes(s.AIFO.bytes), report.bytes(s.impacting),
                report.bytes(s.peak), s.peak_time or 0, report.doubtful(kind)))
    end
    local groups = kept:group("stack", { sort = "bytes", top = o.top })
    -- every leak without a stack: the kind was recorded without stack walks
    if groups[1] and groups[1].stack == nil and #kept:group("stack", { fields = { "count" } }) == 1 then
      k.no_stacks = true
    end
    for i, g in ipairs(groups) do
      if g.bytes < o.min_bytes then break end
      if g.stack == nil and not k.no_stacks then stackless_partly = true end
      local fa, e = report.add_stack(k, findings, kind, "AIFO", "leak", g, g.bytes)
      if text then
        print(("  #%d  %s in %s (%s), %.3f..%.3f s, %s%s")
          :format(i, report.bytes(g.bytes), report.count(g.count, "allocation"), fa.sizes_text, e.first or 0, e.last or 0,
                  fa.processes_text, report.tags_text(fa)))
        report.print_stack(g.stack, "        ", o.frames)
      end
    end
  end
end

-- frees of blocks the trace never saw allocated, and double frees, of the
-- kinds reported (heap and pool: VirtualAlloc's releases of such ranges
-- are AOFI records)
local function of_kinds(field)
  local n, L = 0, stats.lifetimes or {}
  for _, kind in ipairs(o.kind) do n = n + (L[kind .. "_" .. field] or 0) end
  return n
end
out.notes = {
  frees_of_unknown_blocks = of_kinds("free_unknown"),
  reallocs_of_unknown_blocks = of_kinds("realloc_unknown"),   -- heap's: before-trace records too
  double_frees = of_kinds("double_free"),
  stacks_unmatched = stats.stacks and stats.stacks.unmatched or 0,
  -- events without ids in their header whose StackWalk never came: no process, not guessed
  records_without_process = stats.records_no_process or 0,
}
if text then
  if #out.kinds == 0 then print(report.none(o, report.kind_words(o.kind), o.kind)) end
  local n = out.notes
  if n.frees_of_unknown_blocks > 0 or n.reallocs_of_unknown_blocks > 0 or n.double_frees > 0 then
    -- (the trace's counts: a free of a block never seen, a double free, make no record to select)
    print(("note: %s%s%s of blocks allocated before the trace, %s%s")
      :format((o.process or o.pid or o.tag or o.window) and "in the whole trace, " or "",
              report.count(n.frees_of_unknown_blocks, "free"),
              n.reallocs_of_unknown_blocks > 0 and " and " .. report.count(n.reallocs_of_unknown_blocks, "realloc") or "",
              report.count(n.double_frees, "double free"),
              n.double_frees > 0 and #report.damage() > 0
                and " (the trace is damaged: an allocation lost between two frees of a block reads as a double free)" or ""))
  end
  local said = false
  for _, k in ipairs(out.kinds) do
    if k.no_stacks then
      print(("note: no leaked %s allocation has a stack: recorded without stack walks for them "
        .. "(see Recording a trace, README)"):format(report.kind_words({ k.kind })))
      said = true
    end
  end
  if said and not stackless_partly then report.said_stackless() end   -- else report.finish says why
  if n.records_without_process > 0 then
    print(n.records_without_process == 1
      and "note: 1 record has no process: its event carries no ids and no stack named it"
      or ("note: %d records have no process: their events carry no ids and no stack named them")
        :format(n.records_without_process))
  end
end
local f = report.filters(o)
f.kind = o.kind
-- the selection the groups were made under: a baseline made of a part of
-- a trace is no whole-trace baseline (baseline.load refuses it)
if o.json then out.groups, out.filters = require("baseline").collect(trace, f), f end
report.finish(o, out, { script = "leaks", findings = findings, filters = f })
return 0
