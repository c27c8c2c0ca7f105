-- test_exercise.lua -- the answers of Microsoft's "Track User Mode Process
-- Allocations" exercise and of the NotMyFault pool leak, found in the
-- example traces by scripts of a dozen lines that use only the documented
-- API (docs/API.md, docs/ALLOCATIONS.md).  Each block below is such a
-- script; the checks after it compare with examples/README.md.
package.path = "tests/lua/?.lua;tests/corpus/?.lua;" .. package.path
local T = require "testlib"
local function check(c, what) T.check(c and true or false, what) end

-- 1. The 319 x 40 B heap leak and its stack.
local t = heapscript.open("examples/memorytestapp.etl")
heapscript.symbols("examples/memorytestapp.sym")
local leak = t:allocations{kind = "heap", outstanding = true}:group("stack", {sort = "bytes", top = 1})[1]
local sizes = {}
for a in leak.allocs:each() do sizes[a.size] = true end
check(leak.count == 319 and leak.bytes == 319 * 40 and sizes[40] and next(sizes, 40) == nil, "319 leaked blocks of 40 B")
check(leak.stack:contains("InnerLoopOperation") and leak.stack:contains("Main"), "leak stack Main -> InnerLoopOperation")

-- 2. The ten transient 10 MB VirtualAlloc spikes: count, sizes, lifetimes.
local spikes = t:allocations{kind = "virtual", class = "AIFI", size = {10 * 2^20, 10 * 2^20}}
local n, life_ok = 0, true
for a in spikes:each() do n = n + 1; life_ok = life_ok and math.abs(a.lifetime - 0.1) < 1e-6 end
local g = spikes:group("stack")
check(n == 10 and life_ok and spikes:summary().transient == 100 * 2^20, "ten 10 MiB spikes living 0.1 s")
check(#g == 1 and g[1].stack:contains("ManipulateTemporaryBuffer") and g[1].stack:contains("Operation1"),
      "spike stack Main -> Operation1 -> ManipulateTemporaryBuffer")

-- 3. The steady-state step: 10 MB committed halfway and kept, and its stack.
local kept = t:allocations{kind = "virtual", outstanding = true}
local before, after = kept:outstanding(9.9), kept:outstanding(10.1)
local step = kept:filter{window = {9.9, 10.1}, class = "AIFO"}:group("stack")[1]
check(before == 10 * 2^20 and after == 20 * 2^20, "steady commit 10 MiB rising to 20 MiB at 10 s")
check(step.bytes == 10 * 2^20 and step.stack:contains("StepUpMemory"), "the step's stack: StepUpMemory")

-- 4. NotMyFault: the leaking pool tag and its stack.
local p = heapscript.open("examples/notmyfault.etl")
heapscript.symbols("examples/notmyfault.sym")
local worst = p:allocations{kind = "pool"}:group("tag", {sort = "impacting", top = 1})[1]
local st = worst.allocs:filter{outstanding = true}:group("stack", {top = 1})[1]
check(worst.tag == "Leak" and worst.impacting == 320 * 65536, "tag Leak leaks 320 x 64 KiB")
check(st.stack:contains("MyfaultLeakPool") and st.stack:contains("ExAllocatePoolWithTag"), "Leak stack in myfault.sys")

return T.done("test_exercise")
