-- report_formats.lua -- the report files of the bundled scripts in the
-- formats other tools read: CSV (the columns of WPA's tables), Markdown (a
-- pull-request comment), folded stacks (flamegraph.pl, inferno,
-- speedscope), JUnit XML (CI test results); the HTML page is in
-- report_html.lua.  Scripts call report.emit(o, r), which comes here.
--
-- r, what a script hands over:
--   script    its name ("leaks")
--   title     a line naming what was analysed (default: script and traces)
--   trace     the Trace (default: the global `trace`); filters: report.filters(o)
--   findings  a list of {type = "AIFO"|"AIFI", what = "leak"|"spike"|..., kind,
--             process, headline, frames (innermost first), count, bytes,
--             impacting, times = {t...} | first, last}
--   folded    a list of {kind =, allocs = Allocs} whose bytes by stack are
--             drawn and folded (default: the AIFO records of every kind
--             under the filters: what `leaks` reports)
--   flame     {heading, link} of the page's flame view, when folded is not
--             what is outstanding (default "Outstanding bytes by stack")
--   deltas    the rows of baseline.diff (diff, policy --baseline)
--   no_stack  diff's allocations without a stack, per kind {kind, base, new}
--   rules     policy's results {name, severity, ok, skipped, message, why}
--   table     rows that are no stacks (events' counts): {columns = {"count",
--             ...}, numeric = {true, ...}, rows = {{...}, ...}}; the CSV and
--             the Markdown list these, with the columns of the script's text
local report = require "report"

local F = {}

local write = report.write

-- What the flame view and --folded show: the AIFO records of each kind.
function F.outstanding(r)
  if r.folded then return r.folded end
  local T = r.trace or trace
  local list = {}
  if not T then return list end
  for _, kind in ipairs({ "heap", "virtual", "pool" }) do
    local sel = {}
    for k, v in pairs(r.filters or {}) do sel[k] = v end
    local want = sel.kind
    if want == nil or want == kind or (type(want) == "table" and require("baseline").has(want, kind)) then
      sel.kind = kind
      sel.class = "AIFO"
      local A = T:allocations(sel)
      if #A > 0 then list[#list + 1] = { kind = kind, allocs = A } end
    end
  end
  return list
end

-- Frame d of a line (1 = its kind), splitting its text only that far: the
-- icicle looks at the first levels of every line and deeper only where a
-- box is wide enough to draw.
function F.line_frame(l, d)
  local fr = l._fr
  if not fr then fr = {}; l._fr = fr; l._at = 1 end
  local text, at = l.text, l._at
  while #fr < d and at do
    local e = text:find(";", at, true)
    fr[#fr + 1] = text:sub(at, (e or 0) - 1)
    at = e and e + 1
  end
  l._at = at
  return fr[d]
end

-- A line's frames (l.frames), split from its text when first asked for:
-- the folded file needs only the text.
local line_mt = { __index = function(l, k)
  if k ~= "frames" then return nil end
  F.line_frame(l, math.huge)
  rawset(l, "frames", l._fr)
  return l._fr
end }

-- Bytes by stack, root first, kind as the root frame: {{text = "kind;f1;f2",
-- frames = {...}, bytes = n}, ...} sorted by the folded text; the same
-- folded text from two stacks is one line.  Allocs:folded makes a
-- selection's lines, sorted, in C (100,000 stacks are a million frames).
-- Every text of a kind starts with "kind;", so the kinds' lines, taken in
-- the order of those prefixes, are in order; a kind with several
-- selections has its lines sorted again.
function F.stacks(r)
  if r._stacks then return r._stacks end     -- --folded and --html share one
  local of, prefixes = {}, {}
  for _, sel in ipairs(F.outstanding(r)) do
    local p = sel.kind .. ";"
    if not of[p] then of[p] = {}; prefixes[#prefixes + 1] = p end
    table.insert(of[p], sel.allocs)
  end
  heapscript.sort(prefixes)
  local lines, by = {}, {}
  for _, p in ipairs(prefixes) do
    local from = #lines + 1
    for _, allocs in ipairs(of[p]) do
      local texts, bytes = allocs:folded(p:sub(1, -2))
      for i, text in ipairs(texts) do
        local e = by[text]
        if e then e.bytes = e.bytes + bytes[i]
        else
          e = setmetatable({ text = text, bytes = bytes[i] }, line_mt)
          by[text] = e
          lines[#lines + 1] = e
        end
      end
    end
    if #of[p] > 1 then
      local texts = {}
      for i = from, #lines do texts[#texts + 1] = lines[i].text end
      heapscript.sort(texts)
      for i, t in ipairs(texts) do lines[from + i - 1] = by[t] end
    end
  end
  r._stacks = lines
  return lines
end

-- The folded file as a writer for report.write: its lines written one by
-- one into the open file, not joined into one text first.
function F.folded_writer(r)
  local lines = F.stacks(r)
  return function(f)
    for _, l in ipairs(lines) do
      local ok, err = f:write(l.text, " ", math.tointeger(l.bytes), "\n")
      if not ok then return nil, err end
    end
    return true
  end
end

-- The folded file's text.
function F.folded(r)
  local out = {}
  F.folded_writer(r)({ write = function(_, ...)
    for i = 1, select("#", ...) do out[#out + 1] = select(i, ...) end
    return true
  end })
  return table.concat(out)
end

-- CSV (RFC 4180: quotes doubled, CRLF line ends), one row per finding.
local function csvq(v)
  v = v == nil and "" or tostring(v)
  if v:find('[,"\r\n]') then return '"' .. v:gsub('"', '""') .. '"' end
  return v
end

F.CSV_COLUMNS = { "Type", "Process", "Stack", "Count", "Size", "Impacting Size", "Kind", "Finding" }

function F.csv(findings)
  local rows = { table.concat(F.CSV_COLUMNS, ",") }
  for _, x in ipairs(findings or {}) do
    local root = {}
    local fr = x.frames or {}
    for i = #fr, 1, -1 do root[#root + 1] = fr[i] end
    rows[#rows + 1] = table.concat({ csvq(x.type), csvq(x.process), csvq(table.concat(root, ";")), csvq(x.count),
      csvq(x.bytes), csvq(x.impacting), csvq(x.kind), csvq(x.what) }, ",")
  end
  return table.concat(rows, "\r\n") .. "\r\n"
end

-- A script's own table (r.table) as CSV: its columns, capitalised as
-- WPA's are, one row per row.
function F.csv_table(t)
  local head = {}
  for i, c in ipairs(t.columns) do head[i] = csvq(c:sub(1, 1):upper() .. c:sub(2)) end
  local rows = { table.concat(head, ",") }
  for _, row in ipairs(t.rows) do
    local cells = {}
    for i = 1, #t.columns do cells[i] = csvq(row[i]) end
    rows[#rows + 1] = table.concat(cells, ",")
  end
  return table.concat(rows, "\r\n") .. "\r\n"
end

-- Markdown for a pull-request comment: short, the worst first.  A name
-- is bytes from the trace or a symbol map: it becomes UTF-8 (invalid bytes
-- U+FFFD, as in the JUnit file), its line breaks and tabs spaces and its
-- other control characters (C0, DEL, C1) '?', so that a row stays one row.
-- '|' is escaped in both text and code: a GFM table needs it even inside
-- a code span.
local function md_clean(s)
  s = report.utf8(tostring(s or "")):gsub("\r\n", " "):gsub("[\r\n\t]", " "):gsub("[%z\1-\31\127]", "?")
  return (s:gsub("\194[\128-\159]", "?"))
end

-- Text in a cell or a line: also what Markdown would read as HTML ('<b>',
-- '&amp;') or as a code span (a backtick) is escaped; '>' is left as it
-- is ("a -> b"): no tag starts with it and no line of ours does.
local function mdq(s)
  return (md_clean(s):gsub("[\\<&`|]", { ["\\"] = "\\\\", ["<"] = "&lt;", ["&"] = "&amp;", ["`"] = "\\`", ["|"] = "\\|" }))
end

-- A name as a code span: fenced by one backtick more than the longest run
-- of backticks it holds, with a space either side when it holds any
-- (CommonMark strips one each side), so a backtick in a C++ name neither
-- ends the span nor starts another.
local function mdcode(s)
  s = md_clean(s):gsub("|", "\\|")
  local run = 0
  for ticks in s:gmatch("`+") do if #ticks > run then run = #ticks end end
  if run == 0 then return "`" .. s .. "`" end
  local fence = ("`"):rep(run + 1)
  return fence .. " " .. s .. " " .. fence
end

function F.title(r)
  if r.title then return r.title end
  local T = r.trace or trace
  local names = {}
  for _, p in ipairs(T and T:files() or {}) do names[#names + 1] = p:match("[^/\\]+$") end
  return ("%s %s"):format(r.script or "report", table.concat(names, " "))
end

-- What a report file says before its figures, when they are not whole
-- or not sure: the damage skipped (r.damage, report.finish), policy's
-- rules left unchecked for want of events (r.unchecked), the events the
-- recording lost (r.lost) and the kinds whose event layout does not fit
-- the trace (r.doubtful).  A list of
-- {head =, text = "...", items = {...}, case = its JUnit test case,
-- id = its id in the page (one per caveat: "damage", "unchecked", "lost",
-- "doubtful-heap", ...), severity = "error" (the run exits 1 for it) or
-- "warning"}.
function F.caveats(r)
  local out, dmg = {}, r.damage or {}
  if #dmg > 0 then
    out[#out + 1] = { head = "Damaged trace", id = "damage", items = report.damage_lines(dmg), case = "trace damage", severity = "error",
      text = ("%s skipped; the figures leave out what %s held"):format(report.count(#dmg, "damaged part"),
                                                                       #dmg == 1 and "it" or "they") }
  end
  if r.unchecked then
    out[#out + 1] = { head = "Nothing checked", id = "unchecked", items = {}, case = "trace events", severity = "error",
      text = r.unchecked:gsub("^nothing checked: ", "") }
  end
  if r.lost then
    out[#out + 1] = { head = "Lost events", id = "lost", items = {}, case = "lost events", severity = "warning",
      text = report.lost_text(r.lost) }
  end
  local kinds = {}
  for k in pairs(r.doubtful or {}) do kinds[#kinds + 1] = k end
  table.sort(kinds)
  for _, k in ipairs(kinds) do
    out[#out + 1] = { head = "Doubtful", id = "doubtful-" .. k, items = { r.doubtful[k] }, case = "event layouts", severity = "warning",
      text = ("the %s figures: the %s event layout does not fit this trace"):format(k, k) }
  end
  return out
end

function F.markdown(r, top)
  top = top or 10
  local L = { "### heapscript " .. mdq(F.title(r)), "" }
  local failing = false                 -- a caveat the run exits 1 for (damage, nothing checked)
  for _, c in ipairs(F.caveats(r)) do
    if c.severity == "error" then failing = true end
    L[#L + 1] = ("> **%s**: %s"):format(c.head, mdq(c.text))
    for _, it in ipairs(c.items) do L[#L + 1] = "> - " .. mdq(it) end
    L[#L + 1] = ""
  end
  local broken = {}
  for _, x in ipairs(r.rules or {}) do if not x.ok and not x.skipped then broken[#broken + 1] = x end end
  if r.rules then
    local nf, nw = 0, 0
    for _, x in ipairs(broken) do if x.severity == "error" then nf = nf + 1 else nw = nw + 1 end end
    L[#L + 1] = ("**%s**: %s, %d broken, %s"):format((nf > 0 or failing) and "FAIL" or "PASS", report.count(#r.rules, "rule"), nf,
                                                       report.count(nw, "warning"))
    L[#L + 1] = ""
    if #broken > 0 then
      L[#L + 1] = "| rule | severity | what |"
      L[#L + 1] = "| --- | --- | --- |"
      for _, x in ipairs(broken) do
        L[#L + 1] = ("| %s | %s | %s |"):format(mdcode(x.name), mdq(x.severity), mdq(x.message or x.why))
      end
      L[#L + 1] = ""
    end
  end
  if r.deltas then
    local changed = {}
    for _, d in ipairs(r.deltas) do if d.status ~= "unchanged" and d.by == "stack" then changed[#changed + 1] = d end end
    L[#L + 1] = ("**Against the baseline**: %d %s changed"):format(#changed, #changed == 1 and "stack" or "stacks")
    L[#L + 1] = ""
    for _, x in ipairs(r.no_stack or {}) do
      L[#L + 1] = "Without a stack (no stack walk matched): " .. mdq(report.no_stack_text(x, "→"))
      L[#L + 1] = ""
    end
    if #changed > 0 then
      L[#L + 1] = "| change | kind | stack | leaked | Δ | allocations |"
      L[#L + 1] = "| --- | --- | --- | ---: | ---: | ---: |"
      for i, d in ipairs(changed) do
        if i > top then L[#L + 1] = ("| … | | %d more | | | |"):format(#changed - top); break end
        L[#L + 1] = ("| %s | %s | %s | %s → %s | %s%s | %d → %d |"):format(d.status, d.kind, mdcode(d.headline),
          report.bytes(d.base.bytes), report.bytes(d.new.bytes), d.delta >= 0 and "+" or "−",
          report.bytes(math.abs(d.delta)), d.base.count, d.new.count)
      end
      L[#L + 1] = ""
    end
  end
  local fs = r.findings or {}
  if r.table and #r.table.rows > 0 then   -- the script's own columns (events)
    local t, head, rule = r.table, {}, {}
    for i, c in ipairs(t.columns) do head[i] = mdq(c); rule[i] = t.numeric[i] and "---:" or "---" end
    L[#L + 1] = "| " .. table.concat(head, " | ") .. " |"
    L[#L + 1] = "| " .. table.concat(rule, " | ") .. " |"
    for i, row in ipairs(t.rows) do
      if i > top then
        local more = { "…" }
        for j = 2, #t.columns do more[j] = "" end
        more[2] = ("%d rows more"):format(#t.rows - top)
        L[#L + 1] = "| " .. table.concat(more, " | ") .. " |"
        break
      end
      local cells = {}
      for j = 1, #t.columns do
        local v = row[j] == nil and "" or tostring(row[j])
        cells[j] = (t.numeric[j] or v == "") and mdq(v) or mdcode(v)
      end
      L[#L + 1] = "| " .. table.concat(cells, " | ") .. " |"
    end
    L[#L + 1] = ""
  elseif #fs > 0 then
    L[#L + 1] = "| type | kind | process | where | count | size | impacting |"
    L[#L + 1] = "| --- | --- | --- | --- | ---: | ---: | ---: |"
    for i, x in ipairs(fs) do
      if i > top then L[#L + 1] = ("| … | | | %s more | | | |"):format(report.count(#fs - top, "finding")); break end
      L[#L + 1] = ("| %s | %s | %s | %s | %s | %s | %s |"):format(mdq(x.what or x.type), mdq(x.kind), mdq(x.process),
        mdcode(x.headline), x.count or "", report.bytes(x.bytes), x.impacting and report.bytes(x.impacting) or "")
    end
    L[#L + 1] = ""
  elseif not r.rules and not r.deltas then
    L[#L + 1] = "No findings."
    L[#L + 1] = ""
  end
  return table.concat(L, "\n")
end

-- JUnit XML: one testsuite, one testcase per rule; a broken error rule is
-- a <failure>, a broken warning passes with its message in <system-out>,
-- a rule that could not run (a baseline rule without --baseline) is
-- <skipped>.  tests/junit.xsd is the schema the tests validate against.
function F.xml(s)
  -- names that are not UTF-8 as U+FFFD: a JUnit file that is not UTF-8 is refused whole by the CI.
  -- XML 1.0 also refuses characters that are UTF-8 (its Char production): the C0 controls but
  -- tab and line breaks, and U+FFFE and U+FFFF (bytes EF BF BE/BF; surrogates and code points
  -- past U+10FFFF are not UTF-8 to utf8.len, so report.utf8 has replaced them already)
  s = report.utf8(tostring(s or "")):gsub("[%z\1-\8\11\12\14-\31]", "?"):gsub("\239\191[\190\191]", "\u{FFFD}")
  return (s:gsub("[<>&\"']", { ["<"] = "&lt;", [">"] = "&gt;", ["&"] = "&amp;", ['"'] = "&quot;", ["'"] = "&apos;" }))
end

function F.junit(r)
  local rules = {}
  local failures, skipped = 0, 0
  for i, x in ipairs(r.rules or {}) do rules[i] = x end
  -- a damaged trace, or one without the events the rules check, is a
  -- failed case of its own (the run exits 1 for it), a layout that does
  -- not fit a warning: the CI's test view says why
  for _, c in ipairs(F.caveats(r)) do
    rules[#rules + 1] = { name = c.case, ok = false, case = "heapscript", severity = c.severity,
      message = c.head .. ": " .. c.text, caveat = c.items }
  end
  for _, x in ipairs(rules) do
    if x.skipped then skipped = skipped + 1 elseif not x.ok and x.severity == "error" then failures = failures + 1 end
  end
  local name = "heapscript " .. (r.script or "policy")
  local L = { '<?xml version="1.0" encoding="UTF-8"?>',
    ('<testsuites name="%s" tests="%d" failures="%d" errors="0" skipped="%d">'):format(F.xml(name), #rules, failures, skipped),
    ('  <testsuite name="%s" tests="%d" failures="%d" errors="0" skipped="%d">'):format(F.xml(F.title(r)), #rules,
      failures, skipped) }
  for _, x in ipairs(rules) do
    local open = ('    <testcase classname="%s" name="%s"'):format(F.xml(x.case or r.rules_file or "rules"), F.xml(x.name))
    local detail = {}
    if x.why then detail[#detail + 1] = x.why end
    for _, it in ipairs(x.caveat or {}) do detail[#detail + 1] = it end
    for i, v in ipairs(x.violations or {}) do
      if i > 20 then detail[#detail + 1] = ("... %d more"):format(#x.violations - 20); break end
      detail[#detail + 1] = ("%s: %s = %s, limit %s"):format(v.group, v.limit, tostring(v.value), tostring(v.max))
    end
    if x.skipped then
      L[#L + 1] = open .. ">"
      L[#L + 1] = ('      <skipped message="%s"/>'):format(F.xml(x.message))
      L[#L + 1] = "    </testcase>"
    elseif not x.ok and x.severity == "error" then
      L[#L + 1] = open .. ">"
      L[#L + 1] = ('      <failure message="%s" type="%s">%s</failure>'):format(F.xml(x.message or x.why or "broken"),
        F.xml(x.name), F.xml(table.concat(detail, "\n")))
      L[#L + 1] = "    </testcase>"
    elseif not x.ok then
      L[#L + 1] = open .. ">"
      L[#L + 1] = ("      <system-out>WARNING: %s</system-out>"):format(F.xml(table.concat({ x.message or x.why or "",
        table.unpack(x.caveat or {}) }, "\n")))
      L[#L + 1] = "    </testcase>"
    else
      L[#L + 1] = open .. "/>"
    end
  end
  L[#L + 1] = "  </testsuite>"
  L[#L + 1] = "</testsuites>"
  return table.concat(L, "\n") .. "\n"
end

function F.emit(o, r)
  r.trace = r.trace or trace
  r.findings = r.findings or {}
  if o.csv then   -- policy: a row per broken rule; events: its own table
    write(o.csv, r.table and F.csv_table(r.table) or F.csv(r.csv_findings or r.findings))
  end
  if o.markdown then write(o.markdown, F.markdown(r)) end
  if o.folded then write(o.folded, F.folded_writer(r)) end
  if o.junit then write(o.junit, F.junit(r)) end
  if o.html then write(o.html, require("report_html").page(r)) end
end

return F
