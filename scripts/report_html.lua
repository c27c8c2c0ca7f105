-- report_html.lua -- the report of a script as one self-contained HTML
-- page: outstanding memory over time per kind and process (SVG), the
-- findings' spikes and steps marked on those charts and linked to their
-- rows, the findings as sortable tables with expandable stacks, the
-- rules and the baseline when there are some, and an icicle of the
-- outstanding bytes by stack.  No network and no file but this one: the
-- styles and the script are inline, and a Content-Security-Policy forbids
-- anything else.  What is drawn is aggregated and capped first (points
-- per chart, charts, rows, boxes of the icicle), so a trace with 100,000
-- stacks gives a page of the same size as one with ten.
--
-- page(r) takes what report.emit gets (report_formats.lua) and returns the text.
local report = require "report"
local F = require "report_formats"

local H = {}

H.POINTS = 240          -- samples per chart
H.CHARTS = 6            -- processes charted per kind, the largest peaks first
H.ROWS = 500            -- findings listed
H.BOXES = 2000          -- boxes of the icicle
H.MIN_FRACTION = 0.002  -- the smallest box drawn, as a fraction of the whole
H.DEPTH = 48            -- rows of the icicle

local esc = F.xml

-- A cell's sort key (data-v): the whole number, not the text the cell
-- shows, so times 1 ms apart sort in their order.
local function num(v)
  if math.type(v) == "integer" then return tostring(v) end
  return ("%.17g"):format(v)
end

local CSS = [[
body{font:14px/1.4 system-ui,sans-serif;margin:0 24px 40px;color:#222;background:#fff}
h1{font-size:20px;margin:16px 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
nav a{margin-right:14px}.meta{color:#555}
figure{margin:10px 0}figcaption{font-weight:600;margin-bottom:2px}
svg text{font:11px system-ui,sans-serif;fill:#333}
.line{fill:none;stroke:#1f6fb2;stroke-width:1.5}.area{fill:#1f6fb2;opacity:.12}
.axis{stroke:#999;stroke-width:1}.grid{stroke:#eee;stroke-width:1}
.mark line{stroke-width:1.5}.mark.spike line{stroke:#d9480f}.mark.step line{stroke:#2b8a3e}
.mark.spike path{fill:#d9480f}.mark.step path{fill:#2b8a3e}
table{border-collapse:collapse;width:100%;margin:6px 0}h3{font-size:15px;margin:14px 0 4px}
th,td{border-bottom:1px solid #e4e4e4;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f4f4f4;cursor:pointer;user-select:none;white-space:nowrap}
.wide{overflow-x:auto;max-width:100%}.wide>table{margin:0}
code,summary,pre{overflow-wrap:anywhere}td{overflow-wrap:break-word}pre{white-space:pre-wrap}
td.stack{min-width:16em}figure.chart svg{min-width:880px}svg.flame{min-width:1060px}
@media (max-width:600px){body{margin:0 8px 30px}nav a{display:inline-block;margin:0 10px 4px 0}}
th.n{text-align:right}th.asc:after{content:" \25B2"}th.desc:after{content:" \25BC"}
td.n{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
tr:target{background:#fff3bf}pre{margin:4px 0;font-size:12px}
details summary{cursor:pointer}code{font-size:12px}
.new,.grew,.FAIL{color:#c92a2a;font-weight:600}.vanished,.shrank,.PASS{color:#2b8a3e}.WARN,.SKIP{color:#e67700}
.flame rect{stroke:#fff;stroke-width:.5}.flame text{font-size:10px;fill:#111;pointer-events:none}
#selfcheck{color:#888;font-size:11px;margin-top:30px}
.caveat{border-left:4px solid #c92a2a;background:#fff5f5;padding:6px 10px;margin:10px 0}
.caveat ul{margin:4px 0;padding-left:20px}.caveat li{font-size:12px}
]]

-- Sorting and a self-check the tests read back (--dump-dom): counts of
-- what was drawn, or the first error.
local JS = [[
(function(){
"use strict";
function val(td){var v=td.getAttribute("data-v");return v===null?td.textContent.trim().toLowerCase():parseFloat(v);}
function sortBy(th){
  var table=th.closest("table"),body=table.tBodies[0],i=Array.prototype.indexOf.call(th.parentNode.children,th);
  var asc=!th.classList.contains("asc");
  Array.prototype.forEach.call(th.parentNode.children,function(h){h.classList.remove("asc","desc");});
  th.classList.add(asc?"asc":"desc");
  var rows=Array.prototype.slice.call(body.rows);
  rows.sort(function(a,b){var x=val(a.cells[i]),y=val(b.cells[i]);if(x<y)return asc?-1:1;if(x>y)return asc?1:-1;return 0;});
  rows.forEach(function(r){body.appendChild(r);});
}
document.querySelectorAll("table.sortable th").forEach(function(th){th.addEventListener("click",function(){sortBy(th);});});
var out=document.getElementById("selfcheck");
try{
  var charts=document.querySelectorAll("figure.chart svg polyline.line").length;
  var findings=document.querySelectorAll("#findings tbody tr").length;
  var marks=document.querySelectorAll("g.mark").length;
  var boxes=document.querySelectorAll("svg.flame rect").length;
  var broken=0;
  document.querySelectorAll("g.mark a").forEach(function(a){if(!document.getElementById(a.getAttribute("href").slice(1)))broken++;});
  var th=document.querySelector("#findings th[data-sort=count]"),unsorted=0;
  if(th){
    /* sort as a click does, check the order, then put the rows back: the
       page opens in the report's own order (the text's, the CSV's), with
       no column marked as sorted */
    var body=th.closest("table").tBodies[0],kept=Array.prototype.slice.call(body.rows);
    sortBy(th);sortBy(th);   /* ascending, then descending */
    var col=Array.prototype.indexOf.call(th.parentNode.children,th),prev=Infinity;
    Array.prototype.forEach.call(body.rows,function(r){
      var v=val(r.cells[col]);if(v>prev)unsorted++;prev=v;});
    kept.forEach(function(r){body.appendChild(r);});
    Array.prototype.forEach.call(th.parentNode.children,function(h){h.classList.remove("asc","desc");});
  }
  /* the page must not run off the window: wide tables and charts scroll
     in their own box; hidden counts the findings' figures past the right
     edge of the window (none at a desktop width) */
  var over=document.documentElement.scrollWidth-document.documentElement.clientWidth,hidden=0;
  document.querySelectorAll("#findings td.n").forEach(function(td){if(td.getBoundingClientRect().right>window.innerWidth)hidden++;});
  var bad=broken?"broken-links="+broken:unsorted?"unsorted="+unsorted:over>0?"overflow="+over:"ok";
  out.textContent="selfcheck "+bad+" charts="+charts+" findings="+findings+" marks="+marks+" boxes="+boxes+" hidden="+hidden;
}catch(e){out.textContent="selfcheck error: "+e;}
})();
]]

-- ------------------------------------------------------------ charts

-- The processes of a kind as chart subjects: {label, pid, allocs, peak}
local function subjects(T, filters, kind)
  local sel = {}
  for k, v in pairs(filters or {}) do sel[k] = v end
  local want = sel.kind
  if want ~= nil and want ~= kind and not (type(want) == "table" and require("baseline").has(want, kind)) then return {} end
  sel.kind = kind
  sel.class = nil
  local A = T:allocations(sel)
  if #A == 0 then return {} end
  local list = {}
  -- (the charted processes alone, with the figures they draw: every process with every figure
  -- took 1.6 GB more than the report itself on a million processes)
  for _, g in ipairs(A:group("process", { sort = "peak", top = H.CHARTS, fields = { "peak", "peak_time", "allocs" } })) do
    if #list >= H.CHARTS then break end
    list[#list + 1] = { label = report.process_label(g.process, g.pid), process = g.process, pid = g.pid,
                        allocs = g.allocs, peak = g.peak, peak_time = g.peak_time }
  end
  return list
end

local W, CH, ML, MR, MT, MB = 1000, 150, 70, 12, 8, 22

-- A round step for an axis: the smallest of 1, 2 and 5 times a power of
-- ten that is at least raw, and the decimals it needs.
local function round_step(raw)
  if not (raw > 0) then return 1, 0 end
  local mag = 10 ^ math.floor(math.log(raw, 10))
  local step = 10 * mag
  for _, m in ipairs({ 1, 2, 5 }) do
    if m * mag >= raw * (1 - 1e-9) then step = m * mag; break end
  end
  return step, math.max(0, -math.floor(math.log(step, 10) + 1e-9))
end
H.round_step = round_step

-- The byte axis in one unit (that of its top): {bytes, label} at round steps.
local UNITS = { { 2 ^ 30, "GiB" }, { 2 ^ 20, "MiB" }, { 2 ^ 10, "KiB" }, { 1, "B" } }
function H.byte_ticks(ymax)
  local size, name = 1, "B"
  for _, u in ipairs(UNITS) do
    if ymax >= u[1] then size, name = u[1], u[2]; break end
  end
  local step, places = round_step(ymax / size / 5)
  if name == "B" and step < 1 then step, places = 1, 0 end
  local out = {}
  for k = 0, math.floor(ymax / size / step + 1e-9) do
    out[#out + 1] = { k * step * size, ("%." .. places .. "f %s"):format(k * step, name) }
  end
  return out
end

-- The time axis: {time, label} at round steps within t1..t2.
function H.time_ticks(t1, t2)
  local step, places = round_step((t2 - t1) / 5)
  local out = {}
  for k = math.ceil(t1 / step - 1e-9), math.floor(t2 / step + 1e-9) do
    local t = k * step
    out[#out + 1] = { t, ("%." .. places .. "f s"):format(t) }
  end
  return out
end

local function chart(kind, s, marks, t1, t2)
  -- the highest level in each of H.POINTS columns (series' peaks): a
  -- spike shorter than a column still reaches its height
  local cols = s.allocs:series{ points = H.POINTS, window = { t1, t2 }, peaks = true }
  local span = (t2 - t1) > 0 and (t2 - t1) or 1
  local ser = { time = {}, bytes = cols.bytes }
  local ymax = 0
  for c = 0, H.POINTS - 1 do
    ser.time[c + 1] = t1 + span * (c + 0.5) / H.POINTS
    if cols.bytes[c + 1] > ymax then ymax = cols.bytes[c + 1] end
  end
  if ymax == 0 then ymax = 1 end
  local function X(t) return ML + (t - t1) / span * (W - ML - MR) end
  local function Y(b) return MT + (1 - b / ymax) * (CH - MT - MB) end
  local pts = {}
  for i = 1, #ser.time do
    pts[#pts + 1] = ("%.1f,%.1f"):format(X(ser.time[i]), Y(ser.bytes[i]))
  end
  local o = {}
  o[#o + 1] = ('<figure class="chart" data-kind="%s" data-process="%s"><figcaption>%s — %s: peak %s at %.3f s</figcaption>')
    :format(esc(kind), esc(s.label), esc(kind), esc(s.label), esc(report.bytes(s.peak)), s.peak_time or 0)
  o[#o + 1] = ('<div class="wide"><svg viewBox="0 0 %d %d" width="100%%" role="img" aria-label="%s bytes outstanding over time">')
    :format(W, CH, esc(kind))
  -- round steps (1, 2, 5 x 10^n), one unit per axis
  for _, tick in ipairs(H.byte_ticks(ymax)) do
    local b = tick[1]
    o[#o + 1] = ('<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/><text x="%d" y="%.1f" text-anchor="end">%s</text>')
      :format(ML, W - MR, Y(b), Y(b), ML - 4, Y(b) + 4, esc(tick[2]))
  end
  for _, tick in ipairs(H.time_ticks(t1, t1 + span)) do
    local x = X(tick[1])
    o[#o + 1] = ('<text x="%.1f" y="%d" text-anchor="%s">%s</text>'):format(x, CH - 6,
      x - ML < 25 and "start" or W - MR - x < 25 and "end" or "middle", tick[2])
  end
  o[#o + 1] = ('<line class="axis" x1="%d" x2="%d" y1="%d" y2="%d"/>'):format(ML, W - MR, CH - MB, CH - MB)
  if #pts > 0 then
    o[#o + 1] = ('<polygon class="area" points="%.1f,%d %s %.1f,%d"/>'):format(X(ser.time[1]), CH - MB,
      table.concat(pts, " "), X(ser.time[#ser.time]), CH - MB)
    o[#o + 1] = ('<polyline class="line" points="%s"/>'):format(table.concat(pts, " "))
  end
  for _, m in ipairs(marks) do
    if m.time >= t1 and m.time <= t2 then
      local x = X(m.time)
      o[#o + 1] = ('<g class="mark %s"><a href="#%s"><title>%s at %.3f s: %s</title><line x1="%.1f" x2="%.1f" y1="%d" y2="%d"/>'
        .. '<path d="M%.1f %d l-5 -8 h10 z"/></a></g>'):format(m.class, m.id, esc(m.what), m.time, esc(m.headline),
        x, x, MT, CH - MB, x, MT + 8)
    end
  end
  o[#o + 1] = "</svg></div></figure>"
  return table.concat(o, "\n")
end

-- ------------------------------------------------------------ icicle

local function hue(name)
  local mod = name:match("^([^!+]+)") or name
  local h = 0
  for i = 1, #mod do h = (h * 31 + mod:byte(i)) % 360 end
  return h
end

-- The icicle is built top-down from the lines of F.stacks, splitting
-- only the boxes that will be drawn: lines under a box too small to draw
-- are never looked at again, so 100,000 distinct stacks cost about two
-- passes over them, not a tree of every frame.
function H.icicle(lines)
  local total, line_frame = 0, F.line_frame
  for _, l in ipairs(lines) do total = total + l.bytes end
  if total == 0 then return "<p>Nothing outstanding.</p>", 0 end
  local min = total * H.MIN_FRACTION
  -- The children of the box holding lines idx at depth d that are wide
  -- enough to draw, with their lines: their bytes summed first, so that
  -- a box under the smallest drawn (most of them, over many stacks) costs
  -- no table and no list.
  local function split(idx, d)
    local sum, names = {}, {}
    for _, i in ipairs(idx) do
      local l = lines[i]
      local f = line_frame(l, d)
      if f then
        local b = sum[f]
        if not b then names[#names + 1] = f; b = 0 end
        sum[f] = b + l.bytes
      end
    end
    local kids, order = {}, {}
    for _, f in ipairs(names) do
      if sum[f] >= min then
        local k = { name = f, bytes = sum[f], idx = {} }
        kids[f] = k
        order[#order + 1] = k
      end
    end
    if #order > 0 then
      for _, i in ipairs(idx) do
        local k = kids[line_frame(lines[i], d) or false]   -- split already: kept in the line
        if k then k.idx[#k.idx + 1] = i end
      end
    end
    return order
  end
  local all = {}
  for i = 1, #lines do all[i] = i end
  local root = { name = "all", bytes = total, idx = all }
  local RH, FW = 17, 1200
  local boxes, o, depth = 0, {}, 0
  local function draw(n, x, d)
    if boxes >= H.BOXES then return end
    local w = n.bytes / root.bytes * FW
    boxes = boxes + 1
    if d > depth then depth = d end
    -- room and cut in characters, not bytes: a cut inside a character
    -- would show U+FFFD, and a name in Cyrillic would get half the room
    local label = report.utf8(n.name)
    local room = math.floor(w / 6.2)
    local chars = utf8.len(label)
    local shown = chars <= room and label or (room > 3 and label:sub(1, utf8.offset(label, room) - 1) .. "…" or "")
    o[#o + 1] = ('<g><title>%s\n%s (%.1f%%)</title><rect x="%.2f" y="%d" width="%.2f" height="%d" fill="hsl(%d,60%%,%d%%)"/>%s</g>')
      :format(esc(n.name), esc(report.bytes(n.bytes)), n.bytes / root.bytes * 100, x, d * RH, w, RH - 1, hue(n.name),
        d == 0 and 85 or 72, shown ~= "" and ('<text x="%.2f" y="%d">%s</text>'):format(x + 3, d * RH + 12, esc(shown)) or "")
    if d >= H.DEPTH then return end
    local wide = split(n.idx, d + 1)     -- only the boxes wide enough to draw need sorting
    n.idx = nil
    table.sort(wide, function(a, b) if a.bytes ~= b.bytes then return a.bytes > b.bytes end return a.name < b.name end)
    local cx = x
    for _, k in ipairs(wide) do
      draw(k, cx, d + 1)
      cx = cx + k.bytes / root.bytes * FW
    end
  end
  draw(root, 0, 0)
  return ('<div class="wide"><svg class="flame" viewBox="0 0 %d %d" width="100%%" role="img" aria-label="outstanding bytes by stack">%s</svg></div>')
    :format(FW, (depth + 1) * RH, table.concat(o)), boxes
end

-- ------------------------------------------------------------ the page

local function findings_table(fs)
  local o = { '<div class="wide"><table class="sortable" id="findings-table"><thead><tr><th>Finding</th><th>Type</th><th>Kind</th><th>Process</th>'
    .. '<th>Stack</th><th data-sort="count">Count</th><th data-sort="bytes">Size</th><th data-sort="impacting">Impacting Size</th>'
    .. '<th data-sort="time">Time (s)</th></tr></thead><tbody>' }
  for i, x in ipairs(fs) do
    if i > H.ROWS then break end
    local frames = {}
    for j, f in ipairs(x.frames or {}) do frames[j] = esc(f) end
    local t = x.times and x.times[1] or x.first
    o[#o + 1] = ('<tr id="f%d"><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class="stack"><details><summary><code>%s</code></summary>'
      .. '<pre>%s</pre></details></td><td class="n" data-v="%s">%s</td><td class="n" data-v="%s">%s</td>'
      .. '<td class="n" data-v="%s">%s</td><td class="n" data-v="%s">%s</td></tr>')
      :format(i, esc(x.what), esc(x.type), esc(x.kind), esc(x.process), esc(x.headline), table.concat(frames, "\n"),
        num(x.count or 0), tostring(x.count or ""), num(x.bytes or 0), esc(report.bytes(x.bytes)), num(x.impacting or 0),
        x.impacting and esc(report.bytes(x.impacting)) or "", num(t or 0), t and ("%.3f"):format(t) or "")
  end
  o[#o + 1] = "</tbody></table></div>"
  if #fs > H.ROWS then o[#o + 1] = ("<p>%d more findings not listed (see --csv).</p>"):format(#fs - H.ROWS) end
  return table.concat(o, "\n")
end

-- A script's own table (r.table: events' counts), with its columns
-- capitalised as the CSV has them; numbers sort as numbers.
local function script_table(t)
  local o = { '<div class="wide"><table class="sortable" id="script-table"><thead><tr>' }
  for i, c in ipairs(t.columns) do
    o[#o + 1] = ('<th%s>%s</th>'):format(t.numeric[i] and (' class="n" data-sort="%s"'):format(esc(c)) or "",
      esc(c:sub(1, 1):upper() .. c:sub(2)))
  end
  o[#o + 1] = "</tr></thead><tbody>"
  for n, row in ipairs(t.rows) do
    if n > H.ROWS then break end
    local cells = {}
    for i = 1, #t.columns do
      local v = row[i]
      if t.numeric[i] and type(v) == "number" then
        cells[i] = ('<td class="n" data-v="%s">%s</td>'):format(num(v), esc(tostring(v)))
      else
        cells[i] = "<td>" .. esc(v == nil and "" or tostring(v)) .. "</td>"
      end
    end
    o[#o + 1] = "<tr>" .. table.concat(cells) .. "</tr>"
  end
  o[#o + 1] = "</tbody></table></div>"
  if #t.rows > H.ROWS then o[#o + 1] = ("<p>%d more rows not listed (see --csv).</p>"):format(#t.rows - H.ROWS) end
  return table.concat(o, "\n")
end

local function rules_table(rules)
  local o = { '<div class="wide"><table class="sortable"><thead><tr><th>Result</th><th>Rule</th><th>Severity</th><th>Message</th></tr></thead><tbody>' }
  for _, x in ipairs(rules) do
    local st = x.skipped and "SKIP" or x.ok and "PASS" or (x.severity == "error" and "FAIL" or "WARN")
    o[#o + 1] = ('<tr><td class="%s">%s</td><td><code>%s</code></td><td>%s</td><td>%s%s</td></tr>'):format(st, st,
      esc(x.name), esc(x.severity), esc((not x.ok or x.skipped) and x.message or ""),
      x.why and (not x.ok) and ("<br><small>" .. esc(x.why) .. "</small>") or "")
  end
  o[#o + 1] = "</tbody></table></div>"
  return table.concat(o, "\n")
end

local function deltas_table(ds)
  local o = { '<div class="wide"><table class="sortable"><thead><tr><th>Change</th><th>By</th><th>Kind</th><th>Group</th>'
    .. '<th>Leaked base → new</th><th>Δ bytes</th><th>Count base → new</th><th>Impacting base → new</th></tr></thead><tbody>' }
  local n, shown, left = 0, {}, 0          -- up to H.ROWS of each grouping (stacks, tags, processes)
  for _, d in ipairs(ds) do
    if d.status ~= "unchanged" then
      n = n + 1
      shown[d.by] = (shown[d.by] or 0) + 1
      if shown[d.by] > H.ROWS then left = left + 1; goto next end
      local frames = {}
      for j, f in ipairs(d.frames or {}) do frames[j] = esc(f) end
      local name = #frames > 0 and ('<details><summary><code>%s</code></summary><pre>%s</pre></details>')
        :format(esc(d.headline), table.concat(frames, "\n")) or ("<code>" .. esc(d.by == "tag" and ("'" .. d.key .. "'") or d.headline) .. "</code>")
      o[#o + 1] = ('<tr><td class="%s">%s</td><td>%s</td><td>%s</td><td>%s</td>'):format(d.status, d.status, d.by, d.kind, name)
        .. ('<td class="n" data-v="%d">%s → %s</td><td class="n" data-v="%d">%s%s</td>')
          :format(d.new.bytes, esc(report.bytes(d.base.bytes)), esc(report.bytes(d.new.bytes)), d.delta,
            d.delta >= 0 and "+" or "−", esc(report.bytes(math.abs(d.delta))))
        .. ('<td class="n" data-v="%d">%d → %d</td><td class="n" data-v="%d">%s → %s</td></tr>')
          :format(d.new.count, d.base.count, d.new.count, d.new.impacting, esc(report.bytes(d.base.impacting)),
            esc(report.bytes(d.new.impacting)))
    end
    ::next::
  end
  o[#o + 1] = "</tbody></table></div>"
  if n == 0 then return "<p>No group changed.</p>" end
  if left > 0 then
    o[#o + 1] = ("<p>%d more changed groups not listed (the first %d of each grouping are; see --json).</p>"):format(left, H.ROWS)
  end
  return table.concat(o, "\n")
end

function H.page(r)
  local T = r.trace or trace
  local fs = r.findings or {}
  local title = "heapscript " .. F.title(r)
  local body = {}
  local function add(s) body[#body + 1] = s end

  -- markers: findings with times, on the chart of their kind and process
  local marks_of = {}
  for i, x in ipairs(fs) do
    local class = (x.what == "spike" and "spike") or (x.what == "step" and "step") or nil
    if class and x.times then
      for _, t in ipairs(x.times) do
        local l = marks_of[x.kind] or {}
        marks_of[x.kind] = l
        l[#l + 1] = { time = t, id = "f" .. i, class = class, what = class == "spike" and "transient spike" or "step", headline = x.headline or "", process = x.process or "" }
      end
    end
  end

  local charts = {}
  if T then
    local t1, t2 = T:allocations():window()
    local w = (r.filters or {}).window
    if w then t1, t2 = w[1] or t1, w[2] or t2 end
    for _, kind in ipairs({ "heap", "virtual", "pool" }) do
      for _, s in ipairs(subjects(T, r.filters, kind)) do
        local ms = {}
        for _, m in ipairs(marks_of[kind] or {}) do
          if m.process == "" or m.process:find(s.label, 1, true) then ms[#ms + 1] = m end
        end
        charts[#charts + 1] = chart(kind, s, ms, t1, t2)
      end
    end
  end
  local files = {}
  for _, p in ipairs(T and T:files() or {}) do files[#files + 1] = esc(p) end
  -- what the flame view draws (r.folded): its heading and its link
  local flame = r.flame or { "Outstanding bytes by stack", "Outstanding by stack" }

  add(('<h1>%s</h1><p class="meta">%s · heapscript %s</p>'):format(esc(title), table.concat(files, ", "),
    esc(heapscript and heapscript.version or "")))
  for _, c in ipairs(F.caveats(r)) do
    local items = {}
    for i, it in ipairs(c.items) do items[i] = "<li>" .. esc(it) .. "</li>" end
    add(('<div class="caveat" id="%s"><strong>%s</strong>: %s<ul>%s</ul></div>'):format(
      esc(c.id), esc(c.head), esc(c.text), table.concat(items)))
  end
  -- a script with a table of its own (events) shows that, not findings and an icicle of stacks
  local own = r.table
  add('<nav><a href="#charts">Memory over time</a>' .. (r.rules and '<a href="#rules">Rules</a>' or "")
    .. (r.deltas and '<a href="#baseline">Against the baseline</a>' or "")
    .. (own and '<a href="#findings">Counts</a></nav>' or ('<a href="#findings">Findings</a><a href="#flame">' .. esc(flame[2]) .. '</a></nav>')))
  add('<section id="charts"><h2>Outstanding memory over time</h2>')
  if #charts == 0 then add("<p>No heap, VirtualAlloc or pool records.</p>") end
  for _, c in ipairs(charts) do add(c) end
  add("<p class=\"meta\">Marks: <span class=\"spike\">▼ transient spike</span>, <span class=\"step\">▼ step that stays</span>; "
    .. "each links to its finding.</p></section>")
  if r.rules then add('<section id="rules"><h2>Rules</h2>' .. rules_table(r.rules) .. "</section>") end
  if r.deltas then
    local ns = {}
    for _, x in ipairs(r.no_stack or {}) do
      ns[#ns + 1] = '<p class="meta">Without a stack (no stack walk matched): ' .. esc(report.no_stack_text(x, "→")) .. "</p>"
    end
    add('<section id="baseline"><h2>Against the baseline</h2>' .. deltas_table(r.deltas) .. table.concat(ns) .. "</section>")
  end
  if own then
    add(('<section id="findings"><h2>Counts (%d)</h2>'):format(#own.rows))
    add(#own.rows > 0 and script_table(own) or "<p>Nothing counted.</p><table><tbody></tbody></table>")
    add("</section>")
    add('<p id="selfcheck">selfcheck pending</p>')
    return H.wrap(title, body)
  end
  add(('<section id="findings"><h2>Findings (%d)</h2>'):format(#fs))
  add(#fs > 0 and findings_table(fs) or "<p>No findings.</p><table><tbody></tbody></table>")
  add("</section>")
  -- one icicle per kind: kilobytes of heap would vanish next to megabytes of commit
  local bykind, kinds = {}, {}
  for _, l in ipairs(F.stacks(r)) do
    local k = F.line_frame(l, 1)
    if not bykind[k] then bykind[k] = {}; kinds[#kinds + 1] = k end
    local t = bykind[k]
    t[#t + 1] = l
  end
  add(('<section id="flame"><h2>' .. esc(flame[1]) .. '</h2><p class="meta">One icicle per kind, root at the top; '
    .. 'width is bytes (boxes under %.1f%% of the kind are left out).</p>'):format(H.MIN_FRACTION * 100))
  if #kinds == 0 then add("<p>Nothing outstanding.</p>") end
  for _, k in ipairs(kinds) do
    local svg = H.icicle(bykind[k])
    add(("<h3>%s</h3>%s"):format(esc(k), svg))
  end
  add("</section>")
  add('<p id="selfcheck">selfcheck pending</p>')
  return H.wrap(title, body)
end

-- The page around its body: the head, the styles and the script.
function H.wrap(title, body)
  return table.concat({
    "<!DOCTYPE html>",
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      .. "script-src 'unsafe-inline'; img-src data:\">",
    '<link rel="icon" href="data:,">',
    "<title>" .. esc(title) .. "</title>",
    "<style>" .. CSS .. "</style></head><body>",
    table.concat(body, "\n"),
    "<script>" .. JS .. "</script>",
    "</body></html>", "" }, "\n")
end

return H
