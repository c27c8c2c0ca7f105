-- rules/default.lua -- the bundled rule set of `heapscript policy`.
-- A rule set is a Lua module returning a list of rules; a team keeps its
-- own in its repository and passes it with `-- --rules FILE`, or extends
-- this one:  local rules = require "rules.default"; rules[#rules+1] = {...}
--
-- A rule: name; select (trace:allocations filters); optional window
-- {t1, t2} in seconds; per ("stack", "tag", "process", "pid", "heap", or
-- nil for the selection as a whole); one or more limits, each compared
-- with a figure of the selection or of every group:
--   max_leaked_bytes / max_leaked_count   allocated in the window, never freed (AIFO)
--   max_impacting_bytes                    AIFO bytes - AOFI bytes
--   max_peak_bytes                         most bytes outstanding at once
--   max_transient_bytes                    allocated and freed in the window (AIFI)
-- compared with a baseline run (policy --baseline FILE; without one the
-- rule is skipped), per "stack", "tag", "process" or nil, groups matched
-- by stable keys (scripts/baseline.lua):
--   no_new_leaks = true                    no group leaks that did not leak in the baseline
--   max_leaked_growth = 0.10               no group leaks more than 10% more bytes than in the baseline
-- or check = function(trace, allocs) return ok, message end;
-- severity "error" (the default: fails the run) or "warning"; why: text.
return {
  { name = "heap-repeated-leak", select = { kind = "heap" }, per = "stack", max_leaked_count = 100,
    why = "one call stack allocated more than 100 heap blocks that were never freed" },
  { name = "heap-leaked-bytes", select = { kind = "heap" }, per = "process", max_leaked_bytes = 16 * 2^20,
    why = "a process left more than 16 MiB of heap allocated" },
  { name = "pool-leak", select = { kind = "pool" }, per = "tag", max_leaked_bytes = 2^20,
    why = "a pool tag kept more than 1 MiB allocated" },
  { name = "virtual-growth", select = { kind = "virtual" }, per = "process", max_impacting_bytes = 512 * 2^20,
    severity = "warning", why = "a process committed 512 MiB more than it released" },
  { name = "no-new-leak-stack", select = { kind = "heap" }, per = "stack", no_new_leaks = true,
    why = "a call stack leaks heap blocks and did not in the baseline" },
  { name = "leak-growth", per = "stack", max_leaked_growth = 0.10,
    why = "a call stack leaks more than 10% more bytes than in the baseline" },
  { name = "no-double-free",
    check = function(trace)
      local st = trace:memory_stats().lifetimes or {}
      local n = (st.heap_double_free or 0) + (st.pool_double_free or 0)
      -- on a damaged trace an allocation lost between two frees of one block reads as a double free
      local damaged = n > 0 and #(trace:damage()) > 0
      return n == 0, ("%d double frees%s"):format(n, damaged and " (the trace is damaged: an allocation lost "
        .. "between two frees of a block reads as a double free)" or "")
    end,
    why = "a block was freed twice" },
}
