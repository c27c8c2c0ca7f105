-- events.lua -- what a trace holds: events counted by provider, id and
-- opcode, most frequent first.
--
--   heapscript events TRACE... [--top N] [--provider NAME|GUID] [--json FILE]
--
-- Uses only the documented API (docs/API.md): trace:tally counts the
-- records in C, with the filters of trace:events.
local report = require "report"
local usage = [==[
usage: heapscript events TRACE... [OPTIONS]
  --top N                    the N most frequent kinds of event only
                             (default: all)
  --provider NAME|GUID       one provider's events: a name such as Heap or
                             Pool, or a GUID (default: every provider)
  --symbols FILE             symbol map for the report files' frames
                             (default: TRACE.sym beside the trace, if present)
  --json FILE                the counts as JSON ("-": standard output, then
                             no text)
]==] .. report.OUTPUT_USAGE
-- options from `arg` (not `...`), so that require "events" from a script
-- reads that script's arguments, as it always has
local argv = {}
for i = 1, arg and #arg or 0 do argv[i] = arg[i] end
if argv[1] == "-h" then io.stdout:write(usage); return 0 end
local print = report.print              -- text fits the terminal (report.term)
local o = report.options({ top = "count", provider = "string", json = "string", symbols = "string" }, {}, argv, usage)
local top, provider = o.top, o.provider
if not trace then
  io.stderr:write("events.lua: no trace given\nusage: heapscript events TRACE...\n")
  return 2
end
report.load_symbols(o.symbols)          -- the report files' frames, as the other scripts name them

local ok, tally, total = pcall(trace.tally, trace, {provider = provider})
if not ok then                          -- a provider no name or GUID: the command line's fault
  local msg = tostring(tally):match("%(filter 'provider': (.*)%)$")   -- bad argument #1 to 'tally' (...)
  if msg then report.usage_error("--provider: " .. msg, usage) end
  error(tally, 0)
end
local rows = {}
for i, r in ipairs(tally) do
  rows[i] = { provider = r.provider_name or r.provider, guid = r.provider, id = r.id, opcode = r.opcode,
              name = r.name or "", count = r.count }
end
report.stable_sort(rows, function(a, b)   -- ties (two versions of an event) as tallied
  if a.count ~= b.count then return a.count > b.count end
  if a.provider ~= b.provider then return a.provider < b.provider end
  if a.id ~= b.id then return a.id < b.id end
  return a.opcode < b.opcode
end)

local shown, findings = {}, {}
for n, r in ipairs(rows) do
  if top and n > top then break end
  shown[n] = r
  findings[n] = { what = "events", type = r.provider, headline = ("%s %d/%d %s"):format(r.provider, r.id, r.opcode, r.name),
                  count = r.count }
end
if report.text(o) then
  local w = #"provider"
  for _, r in ipairs(shown) do if #r.provider > w then w = #r.provider end end
  local fmt = "%10s  %-" .. w .. "s  %5s  %6s  %s"
  print(string.format(fmt, "count", "provider", "id", "opcode", "event"))
  for _, r in ipairs(shown) do print(string.format(fmt, r.count, r.provider, r.id, r.opcode, r.name)) end
  print(string.format("%10d  events, %s, %s", total, report.count(#rows, "kind"), report.count(#trace:files(), "file")))
end
-- the CSV and the Markdown carry the text's columns (a finding has no id, opcode or event)
local tbl = { columns = { "count", "provider", "id", "opcode", "event" }, numeric = { true, false, true, true, false },
              rows = {} }
for n, r in ipairs(shown) do tbl.rows[n] = { r.count, r.provider, r.id, r.opcode, r.name } end
report.finish(o, { trace = trace:files(), events = total, kinds = #rows, rows = shown },
  { script = "events", findings = findings, table = tbl })
