-- every.lua -- used by tests/cli/test_live.sh: the periodic callbacks of a
-- replayed session print what they see; the final part prints the same
-- figures over the whole session.  arg[1]: seconds between callbacks.
local step = tonumber(arg[1]) or 5
trace:every(step, function(now, info)
  local s = now:allocations{kind = "heap"}:summary()
  print(("tick %.0f events=%d count=%d heap=%d lost=%d"):format(info.time, info.events, now:count(),
        s.count, info.lost_events))
  io.stdout:flush()
end)
local s = trace:allocations{kind = "heap"}:summary()
local sess = trace:session()
print(("final events=%d heap=%d stopped=%s reason=%s"):format(trace:count(), s.count,
      tostring(sess.stopped), sess.reason))
