-- policy.lua -- CI policy: evaluate a rule set (rules/default.lua, or a
-- team's own with --rules) on a trace from a test run; print one line per
-- rule, write a machine-readable report, and exit 1 when an error-severity
-- rule is broken, so the build fails.  Rule format: rules/default.lua.
local report = require "report"
local print = report.print              -- text fits the terminal (report.term)

local usage = [[
usage: heapscript policy TRACE... [OPTIONS]
  --rules FILE|MODULE        rule set: a Lua file, or a module name
                             (default: rules.default)
  --baseline FILE            the run to compare with (a trace, or the JSON of
                             `heapscript leaks --json`), for the rules with
                             no_new_leaks or max_leaked_growth (without it
                             they SKIP)
  --frames N                 frames of the worst stack shown for a broken rule
                             (default 8)
  --symbols FILE             symbol map (default: TRACE.sym beside the trace)
  --json FILE                the report as JSON ("-": standard output, then
                             no text)
  --junit FILE               the results as JUnit XML, one test case per rule
]] .. report.OUTPUT_USAGE .. [[

exit status: 0 all rules hold (warnings allowed); 1 an error rule is broken,
or no rule's limits could be checked (the trace has none of the events they
select); 2 a wrong command line or rule set.
]]

local o = report.options({ rules = "string", json = "string", symbols = "string", frames = "count",
  baseline = "string", junit = "string" },
  { rules = "rules.default", frames = 8 }, { ... }, usage)
if not trace then io.stderr:write(usage); return 2 end
local baseline = require "baseline"
local base
if o.baseline then
  local err
  base, err = baseline.load(o.baseline)
  if not base then io.stderr:write("heapscript: " .. err .. "\n"); return 2 end
  heapscript.symbols(false)
end
report.load_symbols(o.symbols)

local function bad(msg) io.stderr:write("heapscript: " .. o.rules .. ": " .. msg .. "\n"); return 2 end
-- A rule file is code that may arrive with a pull request: one inside the
-- repository being tested (or any, under --sandbox) runs in the sandbox,
-- and so do the functions it returns (docs/SCRIPTS.md, Sandbox).
local sandbox = heapscript.sandbox
local function untrusted(path) return sandbox.enabled or (path ~= nil and sandbox.inside(path) ~= nil) end
local ok, rules
if o.rules:find("[/\\]") or o.rules:match("%.lua$") then
  if not untrusted(o.rules) then
    -- a rule set may require modules beside it: the sandbox reads the rule file's directory
    -- (sandbox.loadfile allows it), and a trusted file's looks there too, after -I and
    -- HEAPSCRIPT_PATH (package.searchers[2]) and after the bundled files ([3]): a file there
    -- named as one of heapscript's own modules (report_formats, report_html, required later)
    -- must not take its place
    local dir = o.rules:match("^(.*)[/\\]") or "."
    if dir == "" then dir = "/" end
    table.insert(package.searchers, 4, function(name)
      local path, tried = package.searchpath(name, dir .. "/?.lua")
      if not path then return tried end
      local chunk, err = loadfile(path)
      if not chunk then error(("error loading module '%s' from file '%s':\n\t%s"):format(name, path, err), 0) end
      return chunk, path
    end)
  end
  local chunk, err = (untrusted(o.rules) and sandbox.loadfile or loadfile)(o.rules)
  if not chunk then io.stderr:write("heapscript: " .. err .. "\n"); return 2 end
  ok, rules = pcall(chunk)
else
  ok, rules = pcall(untrusted(sandbox.find(o.rules)) and sandbox.require or require, o.rules)
end
if not ok then return bad("cannot load the rule set: " .. tostring(rules)) end
if type(rules) ~= "table" then return bad("a rule set returns a list of rules") end

-- Each limit: the figure it bounds, and the group fields that figure reads
-- (a rule per stack over 100,000 stacks groups with those alone).
local limits = {
  max_leaked_bytes = { function(s) return s.AIFO.bytes end, "AIFO" },
  max_leaked_count = { function(s) return s.AIFO.count end, "AIFO" },
  max_impacting_bytes = { function(s) return s.impacting end, "impacting" },
  max_peak_bytes = { function(s) return s.peak end, "peak" },
  max_transient_bytes = { function(s) return s.transient end, "transient" },
  max_allocations = { function(s) return s.AIFI.count + s.AIFO.count end, "AIFI", "AIFO" },   -- made in the window (churn)
  max_allocated_bytes = { function(s) return s.size end, "size" },
}
-- (in this order, so that of two limits broken as far, the one a message names is always the same)
local LIMITS = { "max_leaked_bytes", "max_leaked_count", "max_impacting_bytes", "max_peak_bytes", "max_transient_bytes",
                 "max_allocations", "max_allocated_bytes" }
local known = { name = true, select = true, window = true, per = true, check = true, severity = true, why = true,
                no_new_leaks = true, max_leaked_growth = true }
for k in pairs(limits) do known[k] = true end

local PER = { stack = true, free_stack = true, process = true, pid = true, heap = true, tag = true, size = true,
              kind = true, reason = true, class = true }     -- A:group's keys, or a function

-- The rule set checked whole before any rule runs: a rule set that could
-- never fail a build (no rules, rules after a hole, a field of the wrong
-- type or out of range) is bad rules, exit 2, and no report is written
-- from it.  A selection and a window are checked by trace:allocations,
-- which takes them.  Limits are made whole numbers on the way.
local function check_rules()
  local n, count = #rules, 0
  for k in pairs(rules) do
    count = count + 1
    if math.type(k) ~= "integer" or k < 1 or k > n then
      return ("a rule set returns a list of rules; it has the key %s"):format(type(k) == "string" and ("%q"):format(k) or tostring(k))
    end
  end
  if count ~= n then return "a rule set returns a list of rules; it has holes (a nil in it)" end
  if n == 0 then return "the rule set has no rules: it could never fail a build" end
  local names = {}
  for i, r in ipairs(rules) do
    if type(r) ~= "table" or type(r.name) ~= "string" or r.name == "" then return ("rule %d has no name"):format(i) end
    if names[r.name] then return ("two rules are named %s (rules %d and %d)"):format(r.name, names[r.name], i) end
    names[r.name] = i
    for k, v in pairs(r) do
      if not known[k] then return ("rule %s: unknown field %s"):format(r.name, tostring(k)) end
      if limits[k] and (math.type(v) == nil or v ~= v or v < 0 or v >= 2^63) then
        return ("rule %s: %s must be a number from 0 to 2^63, not %s"):format(r.name, k, tostring(v))
      end
    end
    -- the figures are whole bytes and counts: a limit of 2^20 (a float) is 1048576 in every
    -- report, and 1000.5 holds and breaks where 1000 does
    local nlimits = 0
    for lim in pairs(limits) do
      if r[lim] then r[lim], nlimits = math.tointeger(math.floor(r[lim])), nlimits + 1 end
    end
    local g = r.max_leaked_growth
    if g ~= nil and (type(g) ~= "number" or g ~= g or g < 0 or g == math.huge) then
      return ("rule %s: max_leaked_growth is a fraction (0.10 = 10%%) of the baseline's bytes"):format(r.name)
    end
    if r.no_new_leaks ~= nil and type(r.no_new_leaks) ~= "boolean" then
      return ("rule %s: no_new_leaks is true or false, not %s"):format(r.name, tostring(r.no_new_leaks))
    end
    if (r.no_new_leaks or g) and r.per ~= nil and r.per ~= "stack" and r.per ~= "tag" and r.per ~= "process" then
      return ("rule %s: %s compares per stack, tag or process with the baseline, not per %s"):format(r.name,
        g and "max_leaked_growth" or "no_new_leaks", tostring(r.per))
    end
    if r.per ~= nil and not PER[r.per] and type(r.per) ~= "function" then
      return ("rule %s: per is one of stack, free_stack, process, pid, heap, tag, size, kind, reason, class or a "
        .. "function; not %s"):format(r.name, tostring(r.per))
    end
    if r.select ~= nil and type(r.select) ~= "table" then
      return ("rule %s: select is a table of filters (trace:allocations), not a %s"):format(r.name, type(r.select))
    end
    if r.window ~= nil and type(r.window) ~= "table" then
      return ("rule %s: window is {t1, t2} in seconds, not a %s"):format(r.name, type(r.window))
    end
    if r.why ~= nil and type(r.why) ~= "string" then return ("rule %s: why is a string"):format(r.name) end
    if r.check ~= nil and type(r.check) ~= "function" then return ("rule %s: check is a function"):format(r.name) end
    if r.severity ~= nil and r.severity ~= "error" and r.severity ~= "warning" then
      return ("rule %s: severity is \"error\" or \"warning\", not %q"):format(r.name, tostring(r.severity))
    end
    if nlimits == 0 and not r.no_new_leaks and not g and not r.check then
      return ("rule %s: no limit (max_...) and no check function: it could never fail"):format(r.name)
    end
    local sel = {}
    for k, v in pairs(r.select or {}) do sel[k] = v end
    if r.window ~= nil then sel.window = r.window end
    local fine, err = pcall(trace.allocations, trace, sel)
    if not fine then
      return ("rule %s: %s: %s"):format(r.name, r.window ~= nil and "select or window" or "select",
        (tostring(err):gsub("^bad argument #%d+ to '[^']*' %((.*)%)$", "%1")))
    end
  end
end

local function describe_group(g, per)
  if per == "stack" then return report.headline(g.stack) end
  if per == "tag" then return "tag '" .. tostring(g.tag) .. "'" end
  if per == "process" or per == "pid" then return ("%s (%s)"):format(g.process or "?", tostring(g.pid)) end
  if per == "heap" then return ("heap 0x%x"):format(g.key or 0) end
  return tostring(g.key)
end

-- What tells a group apart among a rule's violations ("(and N more)"
-- counts groups): the key its baseline limits know it by, when the rule
-- has them, so that a group over a limit and over its baseline is one.
local function group_id(r, g)
  if (r.no_new_leaks or r.max_leaked_growth) and (r.per == nil or r.per == "stack" or r.per == "tag" or r.per == "process") then
    return baseline.group_key(r.per, g)
  end
  return g
end

-- The name of a group compared with the baseline, made only for a broken
-- rule: a stack's headline names its frames.
local function baseline_name(per, key, fig)
  return per == "tag" and ("tag '" .. key .. "'") or fig.headline or key
end

local text = report.text(o)
-- The kinds the trace recorded (has records of): a rule over kinds it
-- never recorded cannot be broken, and must not pass as if it had been
-- checked (heap events come only from a process heap tracing was on for).
local recorded = report.recorded(trace)    -- asked when a limit rule needs it
-- Why a selection's records were never recorded, or nil: the trace has
-- none of its kinds, or none of them for the process it names (heap
-- tracing was on for another one).  Other filters (sizes, classes, a
-- window) may well select nothing in a trace that recorded everything.
-- The second result is true when the reason is a kind not recorded.
local function unrecorded(sel)
  local k = sel.kind
  local kinds = k == nil and report.KINDS or type(k) == "string" and { k } or k
  local any = false
  for _, kind in ipairs(kinds) do if recorded[kind] then any = true end end
  if not any then return ("the trace has no %s events"):format(report.kind_words(kinds)), true end
  if sel.process == nil and sel.pid == nil then return nil end
  if #trace:allocations{ kind = k, process = sel.process, pid = sel.pid } > 0 then return nil end
  return ("the trace has no %s records of %s"):format(report.kind_words(kinds),
    sel.process ~= nil and ("process %s"):format(tostring(sel.process)) or ("pid %s"):format(tostring(sel.pid)))
end
local by_kind = {}                        -- results skipped for a kind not recorded
local kind_of = {}                         -- result -> the kinds its rule selects (the CSV's Kind)
local left_only, base_left = {}, 0        -- results skipped for kinds a JSON baseline left out (its --kind)
-- The run as a baseline is: the figures of each of its kinds made once,
-- when a rule compared with the baseline first needs them, and summed
-- for every such rule that selects by kind alone (a window or another
-- filter groups the records again).
local run
local out = { rules_file = o.rules, trace = trace:files(), results = {}, failed = 0, warnings = 0 }
local limited, checked = 0, 0             -- rules with limits; those of them checked
report.layouts()
do
  local msg = check_rules()
  if msg then return bad(msg) end
end
for _, r in ipairs(rules) do
  local res = { name = r.name, severity = r.severity or "error", why = r.why, ok = true, violations = {} }
  local k = r.select and r.select.kind
  kind_of[res] = type(k) == "table" and table.concat(k, ",") or k
  local vs_base = r.no_new_leaks or r.max_leaked_growth
  local A, why, kind_missing                -- a limit rule's selection, and why it was never recorded
  if not r.check and not (vs_base and not base) then
    A = trace:allocations(r.select or {})   -- also checks the selection: a bad filter is an error
    why, kind_missing = unrecorded(r.select or {})
  end
  if vs_base and not base then
    res.skipped = true
    res.message = "needs --baseline FILE"
  elseif why then
    res.skipped, res.unrecorded, res.message = true, true, why
    by_kind[res] = kind_missing
  elseif r.check then
    local fine, passed, msg = pcall(r.check, trace, r.select and trace:allocations(r.select) or nil)
    if not fine then return bad(("rule %s: its check failed: %s"):format(r.name, tostring(passed))) end
    if msg ~= nil and type(msg) ~= "string" then
      return bad(("rule %s: its check returned a message that is a %s, not a string"):format(r.name, type(msg)))
    end
    res.ok = not not passed
    res.message = msg
  else
    local groups, fields = {}, {}
    for _, lim in ipairs(LIMITS) do
      local l = limits[lim]
      if r[lim] ~= nil then table.move(l, 2, #l, #fields + 1, fields) end
    end
    if #fields == 0 then                     -- only baseline limits: no group of its own needed
    elseif r.per then groups = A:group(r.per, { window = r.window, fields = fields })
    else groups = { A:summary(r.window) } end
    if r.per == "stack" then
      -- the records without a stack are no call stack of their own: a limit
      -- per stack says nothing of them, and when no record has one (stack
      -- walks not recorded) the rule could not be checked
      local with = {}
      for _, g in ipairs(groups) do if g.stack ~= nil then with[#with + 1] = g end end
      if #with == 0 and #groups > 0 then
        res.skipped, res.unrecorded = true, true
        res.message = "no stack was recorded for its records"
      end
      groups = with
    end
    for _, g in ipairs(groups) do
      for _, lim in ipairs(LIMITS) do
        local l = limits[lim]
        if r[lim] then
          local v = l[1](g)
          if v > r[lim] then
            res.ok = false
            res.violations[#res.violations + 1] = { limit = lim, max = r[lim], value = v,
              group = r.per and describe_group(g, r.per) or "all", stack = r.per == "stack" and report.frames(g.stack) or nil,
              stack_object = r.per == "stack" and g.stack or nil, id = group_id(r, g) }
          end
        end
      end
    end
    -- a kind the run recorded and the baseline did not (heap tracing off then): its every
    -- group would be "new"; it is left out of the comparison, and the result says so.  Only
    -- the kinds both recorded are compared: one neither did is nothing compared, and a rule
    -- left with none is SKIP, not a PASS that compared nothing
    local bsel = r.select or {}
    local brec = vs_base and (base.trace and report.recorded(base.trace) or base.recorded)
    if brec then
      local k = bsel.kind
      -- (a JSON baseline made with leaks --kind says which kinds it holds: another is left out, not unrecorded)
      local made = base.made_kinds
      local keep, miss, left = {}, {}, {}
      for _, kind in ipairs(k == nil and report.KINDS or type(k) == "string" and { k } or k) do
        if recorded[kind] and made and not baseline.has(made, kind) then left[#left + 1] = kind
        elseif recorded[kind] and not brec[kind] then miss[#miss + 1] = kind
        elseif recorded[kind] then keep[#keep + 1] = kind end
      end
      if #miss + #left > 0 then
        local why = {}
        if #miss > 0 then why[1] = ("the baseline has no %s records (not recorded?)"):format(report.kind_words(miss)) end
        if #left > 0 then
          why[#why + 1] = ("%s records are not in the baseline (made with --kind %s)"):format(report.kind_words(left),
            table.concat(made, ","))
        end
        res.note = table.concat(why, "; ") .. ": not compared"
        left_only[res] = #miss == 0
        bsel = {}
        for key, v in pairs(r.select or {}) do bsel[key] = v end
        bsel.kind = keep
        if #keep == 0 then
          vs_base = false
          if #fields == 0 and not res.skipped then res.skipped, res.base_unrecorded, res.message = true, true, res.note end
        end
      end
    end
    if vs_base then
      -- the run's groups against the same groups of the baseline (stable keys: baseline.lua)
      local fine, bf = pcall(base.figures, base, bsel, r.per, r.window)
      if not fine then return bad(("rule %s: %s: %s"):format(r.name, o.baseline, tostring(bf))) end
      run = run or baseline.of_trace(trace, true)
      local cur = run:figures(bsel, r.per, r.window)
      for _, k in ipairs(baseline.sorted_keys(cur)) do
        local c, b = cur[k], bf[k]
        -- per stack, the records without one are no stack (as above): a leak
        -- whose stack walk was lost is not a new leaking stack
        if c.count > 0 and not (r.per == "stack" and k == baseline.NO_STACK) then
          if r.no_new_leaks and (not b or b.count == 0) then
            local name = baseline_name(r.per, k, c)
            res.ok = false
            res.violations[#res.violations + 1] = { limit = "no_new_leaks", max = 0, value = c.bytes, group = name, id = k,
              baseline = 0, stack = c.frames, message = ("%s: a new leak, %s in %s"):format(name,
                report.bytes(c.bytes), report.count(c.count, "allocation")) }
          end
          -- bytes times a decimal fraction, in binary floating point: 100 x 1.15 is
          -- 114.99999999999999, so a group exactly at its limit is given the last bit
          local allowed = math.floor((b and b.bytes or 0) * (1 + (r.max_leaked_growth or 0)) * (1 + 1e-12))
          if r.max_leaked_growth and c.bytes > allowed then
            local name = baseline_name(r.per, k, c)
            res.ok = false
            res.violations[#res.violations + 1] = { limit = "max_leaked_growth", max = allowed, value = c.bytes,
              group = name, id = k, baseline = b and b.bytes or 0, stack = c.frames,
              message = ("%s: leaked %s, baseline %s, limit +%g%%"):format(name, report.bytes(c.bytes),
                report.bytes(b and b.bytes or 0), r.max_leaked_growth * 100) }
          end
        end
      end
    end
    -- worst first; equal ones in the order they were found
    report.stable_sort(res.violations, function(a, b) return a.value - a.max > b.value - b.max end)
    if #res.violations > 0 then
      -- "(and N more)" counts the other groups that broke the rule: a group over two limits is one
      local v, seen, more = res.violations[1], {}, 0
      seen[v.id] = true
      for _, w in ipairs(res.violations) do
        if not seen[w.id] then seen[w.id], more = true, more + 1 end
      end
      res.message = (v.message or ("%s: %s = %d, limit %d"):format(v.group, v.limit:gsub("^max_", ""), v.value, v.max))
        .. (more > 0 and (" (and %d more)"):format(more) or "")
    end
  end
  if not res.ok then
    if res.severity == "error" then out.failed = out.failed + 1 else out.warnings = out.warnings + 1 end
  end
  if text then
    local st = res.skipped and "SKIP" or res.ok and "PASS" or (res.severity == "error" and "FAIL" or "WARN")
    print((("%-5s %-22s %s"):format(st, r.name, (res.ok and not res.skipped) and (res.note or "") or (res.message or r.why or ""))
      :gsub("%s+$", "")))
    if not res.ok then
      if r.why then print("      " .. r.why) end
      local v = res.violations[1]
      if v and (v.stack_object or v.stack) then report.print_stack(v.stack_object or v.stack, "        ", o.frames) end
    end
  end
  for _, v in ipairs(res.violations) do v.stack_object, v.message, v.id = nil, nil, nil end
  if res.skipped then
    out.skipped = (out.skipped or 0) + 1
    if res.unrecorded then out.unrecorded = (out.unrecorded or 0) + 1 end
    if res.base_unrecorded then
      out.base_unrecorded = (out.base_unrecorded or 0) + 1
      if left_only[res] then base_left = base_left + 1 end
    end
  end
  if not r.check then limited = limited + 1 end
  if not r.check and not res.skipped then checked = checked + 1 end
  out.results[#out.results + 1] = res
end
-- Limits were set and none could be checked for want of the events: a
-- trace recorded without heap (or VirtualAlloc, pool) tracing fails the
-- run rather than pass it unchecked.
if limited > 0 and checked == 0 and (out.unrecorded or 0) > 0 then
  local none, reasons, seen, kinds_only = {}, {}, {}, true
  for _, k in ipairs(report.KINDS) do if not recorded[k] then none[#none + 1] = k end end
  for _, res in ipairs(out.results) do
    if res.unrecorded and not seen[res.message] then
      seen[res.message] = true
      reasons[#reasons + 1] = res.message
      kinds_only = kinds_only and by_kind[res] == true
    end
  end
  local why = kinds_only and ("the trace has no %s events"):format(report.kind_words(none))
    or table.concat(reasons, "; ", 1, math.min(#reasons, 2)) .. (#reasons > 2 and "; ..." or "")
  out.unchecked = ("nothing checked: %s (see Recording a trace, README)"):format(why)
end
if text then
  local why, nb = {}, (out.skipped or 0) - (out.unrecorded or 0) - (out.base_unrecorded or 0)
  local several = (out.unrecorded and 1 or 0) + (out.base_unrecorded and 1 or 0) + (nb > 0 and 1 or 0) > 1
  if out.unrecorded then why[#why + 1] = ("%d: nothing of theirs recorded"):format(out.unrecorded) end
  if out.base_unrecorded then
    why[#why + 1] = (several and "%d: " or ""):format(out.base_unrecorded)
      .. (base_left == out.base_unrecorded and "not in the baseline" or "not recorded in the baseline")
  end
  if nb > 0 then why[#why + 1] = (several and "%d: " or ""):format(nb) .. "no --baseline" end
  report.heading(("%s: %d broken, %s%s"):format(report.count(#rules, "rule"), out.failed, report.count(out.warnings, "warning"),
    out.skipped and (", %d skipped (%s)"):format(out.skipped, table.concat(why, "; ")) or ""))
  if out.unchecked then print("FAIL  " .. out.unchecked) end
end
local deltas
if base and (o.markdown or o.html) then   -- the changes against the baseline: only these pages show them
  deltas = baseline.diff(base.groups, baseline.collect(trace, nil, true, run and run.kinds))
end
-- the CSV file's rows: one per broken limit of each rule (a rule with a
-- check of its own, one), the worst first as above; the value of a limit
-- on a count goes in Count, of any other (bytes) in Size
local COUNTS = { max_leaked_count = true, max_allocations = true }
local rows = {}
for _, res in ipairs(out.results) do
  if not res.ok and not res.skipped then
    local ty = res.severity == "error" and "FAIL" or "WARN"
    if #res.violations == 0 then rows[#rows + 1] = { type = ty, what = res.name .. ": " .. (res.message or res.why or "") } end
    for _, v in ipairs(res.violations) do
      local counted = COUNTS[v.limit] == true
      rows[#rows + 1] = { type = ty, kind = kind_of[res], frames = v.stack, count = counted and v.value or nil,
        bytes = not counted and v.value or nil,
        what = ("%s: %s: %s = %s, limit %s"):format(res.name, v.group or "all", v.limit:gsub("^max_", ""), v.value, v.max) }
    end
  end
end
report.finish(o, out, { script = "policy", rules = out.results, rules_file = o.rules, deltas = deltas,
  unchecked = out.unchecked, csv_findings = rows })
return (out.failed > 0 or out.unchecked) and 1 or 0
