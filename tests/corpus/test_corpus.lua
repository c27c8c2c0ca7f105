-- test_corpus.lua -- heapscript must reproduce, for every real trace in the
-- corpus, the figures that independent decoders settled
-- (shared/traces/expected/NAME.json): `info --json` field by field, and
-- `dump --jsonl` against each file's samples.  The damaged file must be
-- rejected with a message naming the file and the offset.  The traces
-- bundled in the repository (tests/corpus/traces) are always checked; the
-- full corpus (../shared/traces or HEAPSCRIPT_CORPUS) too when it is there.
--
-- Run: heapscript tests/corpus/test_corpus.lua -- ./heapscript
package.path = "tests/corpus/?.lua;" .. package.path
local json = require "json"

local bin = arg[1] or "./heapscript"
local dir = os.getenv("HEAPSCRIPT_CORPUS") or "../shared/traces"
local only = arg[2]

local function exists(p) local f = io.open(p, "rb"); if f then f:close() end; return f ~= nil end
local dirs = { "tests/corpus/traces" }
if exists(dir .. "/MANIFEST.tsv") then
  dirs[2] = dir
elseif os.getenv("CI") == "true" then
  print("corpus: " .. dir .. " is missing, and CI=true: the corpus tests must run in CI")
  print("corpus: 0 passed, 1 failed")
  os.exit(1)
else
  print("corpus: SKIP the full corpus: none at " .. dir .. " (set HEAPSCRIPT_CORPUS); the bundled traces only")
end

local function run(cmd)
  local p = io.popen(cmd .. " 2>/tmp/heapscript-corpus-stderr.txt")
  local out = p:read("a")
  local ok, _, code = p:close()
  local ef = io.open("/tmp/heapscript-corpus-stderr.txt", "rb")
  local err = ef and ef:read("a") or ""
  if ef then ef:close() end
  return out, ok and 0 or code, err
end

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local passed, failed = 0, 0
local function result(name, problems)
  if #problems == 0 then
    passed = passed + 1
    print("ok " .. name)
  else
    failed = failed + 1
    print("not ok " .. name)
    for i = 1, math.min(#problems, 10) do print("  # " .. problems[i]) end
  end
end

local function same(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) ~= "table" then return a == b end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

local function key_str(k) return string.format("%s/id %s/op %s/v %s", k.provider, k.id, k.opcode, k.version) end

local function check_dir(dir)
local names = {}
for line in io.popen("ls " .. q(dir .. "/expected")):lines() do
  local n = line:match("^(.*)%.json$")
  if n and (not only or n == only) then names[#names + 1] = n end
end
table.sort(names)
if #names == 0 and not only then result(dir .. ": no expected figures", { "expected/*.json missing" }) end

for _, name in ipairs(names) do
  local e = json.read(dir .. "/expected/" .. name .. ".json")
  local etl = dir .. "/" .. name .. ".etl"
  local problems = {}
  local out, code, err = run(q(bin) .. " info --json " .. q(etl))
  if e.decodable == false then
    if code ~= 2 then problems[#problems + 1] = "damaged file: exit " .. tostring(code) .. ", expected 2" end
    if not err:find(name, 1, true) or not err:find("offset 0x", 1, true) then
      problems[#problems + 1] = "damaged file: message must name the file and the offset: " .. err
    end
    result(name .. " (rejected)", problems)
  else
    local ok, a = pcall(json.decode, out)
    if not ok or code ~= 0 then
      problems[#problems + 1] = "info --json failed (exit " .. tostring(code) .. "): " .. err:sub(1, 300)
    else
      for k, v in pairs(e.header) do
        if a.header[k] ~= v then problems[#problems + 1] = ("header.%s: %s, expected %s"):format(k, tostring(a.header[k]), tostring(v)) end
      end
      if a.events ~= e.events then problems[#problems + 1] = ("events: %s, expected %s"):format(a.events, e.events) end
      if not same(a.by_header_type, e.by_header_type) then problems[#problems + 1] = "by_header_type differs" end
      if not same(a.stacks, e.stacks) then problems[#problems + 1] = "stacks differ" end
      local want = {}
      for _, k in ipairs(e.by_key) do want[key_str(k)] = k.count end
      for i, k in ipairs(a.by_key) do
        local s = key_str(k)
        if want[s] ~= k.count then problems[#problems + 1] = ("by_key %s: %s, expected %s"):format(s, k.count, tostring(want[s])) end
        want[s] = nil
        if e.by_key[i] and key_str(e.by_key[i]) ~= s then problems[#problems + 1] = "by_key order differs at " .. i end
      end
      for s in pairs(want) do problems[#problems + 1] = "by_key missing " .. s end
    end
    -- samples: the records at the settled (buffer, offset) positions
    local pos = {}
    for i, sp in ipairs(e.extra.sample_positions or {}) do pos[sp[1] .. ":" .. sp[2]] = e.samples[i] end
    local seen = 0
    local dump = io.popen(q(bin) .. " dump --jsonl " .. q(etl) .. " 2>/dev/null")
    for line in dump:lines() do
      local b, o = line:match('"buffer": (%d+), "offset": (%d+)')
      local want_s = pos[b .. ":" .. o]
      if want_s then
        local got = json.decode(line)
        seen = seen + 1
        pos[b .. ":" .. o] = nil
        for _, f in ipairs{ "provider", "opcode", "id", "version", "timestamp_raw", "pid", "tid", "cpu", "payload_len" } do
          if got[f] ~= want_s[f] then
            problems[#problems + 1] = ("sample at %s:%s: %s = %s, expected %s"):format(b, o, f, tostring(got[f]), tostring(want_s[f]))
          end
        end
      end
    end
    dump:close()
    for p in pairs(pos) do problems[#problems + 1] = "sample at " .. p .. " not found in dump" end
    result(name .. (" (%d samples)"):format(seen), problems)
  end
end
end

-- The bundled copies are what the manifest says (size, sha256), under a
-- licence that allows them here, 5 MB at most together, each with its figures.
local function check_bundled(d)
  local problems, total, rows = {}, 0, 0
  local f = io.open(d .. "/MANIFEST.tsv", "rb")
  if not f then return result(d .. ": manifest", { "no MANIFEST.tsv" }) end
  local have_sha = os.execute("command -v sha256sum >/dev/null 2>&1")
  for line in f:lines() do
    local file, size, sha, lic = line:match("^([^\t]+)\t[^\t]*\t[^\t]*\t[^\t]*\t(%d+)\t(%x+)\t([^\t]+)\t")
    if file then
      rows = rows + 1
      local etl = d .. "/" .. file
      local ef = io.open(etl, "rb")
      local len = ef and ef:seek("end")
      if ef then ef:close() end
      if len ~= tonumber(size) then problems[#problems + 1] = file .. ": size " .. tostring(len) .. ", manifest " .. size end
      total = total + (len or 0)
      if lic ~= "MIT" and lic ~= "Apache-2.0" then problems[#problems + 1] = file .. ": licence " .. lic end
      if not exists(d .. "/expected/" .. file:gsub("%.etl$", ".json")) then problems[#problems + 1] = file .. ": no expected figures" end
      if have_sha then
        local got = io.popen("sha256sum " .. q(etl)):read("a"):match("^(%x+)")
        if got ~= sha then problems[#problems + 1] = file .. ": sha256 " .. tostring(got) .. ", manifest " .. sha end
      end
    end
  end
  f:close()
  if rows < 4 then problems[#problems + 1] = "only " .. rows .. " traces in the manifest" end
  if total > 5000000 then problems[#problems + 1] = ("%d bytes together, more than 5 MB"):format(total) end
  if not exists(d .. "/LICENSES.md") then problems[#problems + 1] = "no LICENSES.md" end
  result(("%s: %d traces, %d bytes, as the manifest says%s"):format(d, rows, total,
         have_sha and "" or " (no sha256sum: hashes not checked)"), problems)
end

for _, d in ipairs(dirs) do
  print("# " .. d)
  if d == "tests/corpus/traces" then check_bundled(d) end
  check_dir(d)
end

print(("corpus: %d passed, %d failed"):format(passed, failed))
os.exit(failed == 0 and 0 or 1)
