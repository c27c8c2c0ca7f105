-- before.lua -- file mode: the events and heap records a callback at
-- each multiple of arg[1] seconds must see (those stamped before it).
local step = tonumber(arg[1]) or 5
local ends = {}
for t = step, 1e6, step do
  local n = trace:count{to = t - 1e-9}
  if n == trace:count() then break end
  ends[#ends + 1] = t
end
for _, t in ipairs(ends) do
  local n = 0
  for ev in trace:events() do if ev.time < t then n = n + 1 else break end end
  local heap = trace:allocations{kind = "heap"}:summary{0, t - 1e-9}.count
  print(("tick %.0f events=%d heap=%d"):format(t, n, heap))
end
