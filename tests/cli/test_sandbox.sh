#!/bin/sh
# test_sandbox.sh -- rule files and scripts that cannot harm the runner
# (docs/SCRIPTS.md, Sandbox): every known escape from the sandbox fails
# with a clear message; the CPU limit (--timeout) holds against pcall,
# coroutines, error objects, debug.sethook and long C calls; the memory
# cap holds against collectgarbage("stop") and huge string.rep; a broken
# limit is one message and exit status 2 and writes no report; the
# bundled rules and a team's rule file still work in the sandbox, which
# is the default for a rule file inside the repository being tested.
HS=${HS_BIN:-./heapscript}
HS=$(cd "$(dirname "$HS")" && pwd)/$(basename "$HS")
M=$(pwd)/examples/memorytestapp.etl
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0; n=0
no() { echo "not ok: $*"; fails=$((fails + 1)); }

# expect NAME RC PATTERN [ARGS...]: run heapscript ARGS, check the exit
# status and that the output (stdout and stderr) has PATTERN (grep -E)
expect() {
  name=$1 rc=$2 pat=$3; shift 3
  "$HS" "$@" >"$T/out" 2>&1; got=$?
  n=$((n + 1))
  [ "$got" -eq "$rc" ] || no "$name: exit $got, expected $rc: $(head -c 400 "$T/out")"
  grep -Eq -- "$pat" "$T/out" || no "$name: no /$pat/ in: $(head -c 400 "$T/out")"
}
# lua NAME CODE: write $T/s/NAME.lua
mkdir -p "$T/s" "$T/repo/.git" "$T/repo/ci" "$T/outside" "$T/over"
lua() { printf '%s\n' "$2" >"$T/s/$1.lua"; }

# ---- what the sandbox leaves out, each with its own message
lua io 'io.open("'"$T"'/written", "w")'
expect "io" 1 "s/io.lua:1: io is not available in the sandbox" --sandbox "$T/s/io.lua"
[ -e "$T/written" ] && no "io: the file was written"
lua exec 'os.execute("touch '"$T"'/executed")'
expect "os.execute" 1 "os.execute is not available in the sandbox" --sandbox "$T/s/exec.lua"
[ -e "$T/executed" ] && no "os.execute: the command ran"
lua osok 'print(type(os.clock()), type(os.time()), os.date("!%Y", 0))'
expect "os.clock, os.time, os.date stay" 0 "^number.number.1970$" --sandbox "$T/s/osok.lua"
lua setlocale 'return os.setlocale("C")'
expect "os.setlocale" 1 "os.setlocale is not available" --sandbox "$T/s/setlocale.lua"
lua version 'print(_VERSION)'
expect "_VERSION stays" 0 "^Lua 5\.4$" --sandbox "$T/s/version.lua"
lua getenv 'return os.getenv("HOME")'
expect "os.getenv" 1 "os.getenv is not available" --sandbox "$T/s/getenv.lua"
lua hook 'debug.sethook()  while true do end'
expect "debug.sethook" 1 "debug is not available in the sandbox" --sandbox --timeout 5 "$T/s/hook.lua"
lua loadlib 'package.loadlib("'"$T"'/s/cmod.so", "luaopen_cmod")'
expect "package.loadlib" 1 "package.loadlib is not available" --sandbox "$T/s/loadlib.lua"
: >"$T/s/cmod.so"
lua creq 'require "cmod"'
expect "require of a C module" 1 "module 'cmod' not found in the sandbox" --sandbox "$T/s/creq.lua"
lua dump 'return string.dump(function() end)'
expect "string.dump" 1 "string.dump is not available" --sandbox "$T/s/dump.lua"
lua dump2 'return ("").dump(function() end)'
expect "string.dump through the string methods" 1 "attempt to call a (nil|boolean) value .*dump" --sandbox "$T/s/dump2.lua"
lua loadb 'return load("return 1", "x", "b")'
expect "load with mode b" 1 'load: binary chunks are not allowed in the sandbox \(mode "b"\)' --sandbox "$T/s/loadb.lua"
lua loadbt 'return load("return 1", "x", "bt")'
expect "load with mode bt" 1 'load: binary chunks are not allowed in the sandbox \(mode "bt"\)' --sandbox "$T/s/loadbt.lua"
# bytecode made by a trusted script, then loaded by a sandboxed one
printf '%s\n' 'local f = io.open(arg[1], "wb") f:write(string.dump(function() return "escaped" end)) f:close()' >"$T/mkbc.lua"
"$HS" "$T/mkbc.lua" -- "$T/s/bc.luac" || no "could not write the bytecode"
lua bc 'print(loadfile("'"$T"'/s/bc.luac")) print(pcall(dofile, "'"$T"'/s/bc.luac"))'
expect "string.dump + load of bytecode" 0 "attempt to load a binary chunk \(mode is 't'\)" --sandbox "$T/s/bc.lua"
grep -q escaped "$T/out" && no "bytecode ran"
# require inside the sandbox: a name with other characters than a module
# name's is refused before any file is looked at; a module with a syntax
# error says so; one that returns nothing gives true, once
lua reqslash 'require("../../etc/passwd")'
expect "require of a path" 1 "module '../../etc/passwd' not found: a module name is letters, digits, '_', '-' and '.'" --sandbox "$T/s/reqslash.lua"
printf '%s\n' 'return +' >"$T/s/badmod.lua"
lua reqbad 'require("badmod")'
expect "require of a module with a syntax error" 1 "error loading module 'badmod':" --sandbox "$T/s/reqbad.lua"
printf '%s\n' 'counter = (counter or 0) + 1' >"$T/s/nothing.lua"
lua reqnil 'print(require("nothing"), require("nothing"), counter)'
expect "a module that returns nothing" 0 "^true.*true.*1$" --sandbox "$T/s/reqnil.lua"
# load of text: it runs in the sandbox's globals unless given its own;
# syntax errors and bytecode come back as nil and a message
lua loadt 'local f = load("return rawget(_ENV, [[io]]), rawget(os, [[execute]]), rawget(string, [[dump]]), 1 + 1") print("ran", f())
print("env", load("return x", "c", "t", { x = 5 })())
print("syntax", load("return +"))
print("binary", load("\27Lua\84\0"))'
expect "load of text runs sandboxed" 0 "^ran.nil.nil.nil.2$" --sandbox "$T/s/loadt.lua"
grep -Eq "^env.5$" "$T/out" || no "load with its own environment: $(cat "$T/out")"
grep -Eq "^syntax.nil.*unexpected symbol near '\+'" "$T/out" || no "load of bad syntax: $(cat "$T/out")"
grep -Eq "^binary.nil.attempt to load a binary chunk \(mode is 't'\)" "$T/out" || no "load of bytecode text: $(cat "$T/out")"
# metatables of tables: as usual, and a protected one stays protected
lua mtt 'local t = setmetatable({}, { __metatable = "locked" }) print(getmetatable(t), getmetatable({}), pcall(setmetatable, t, {}))'
expect "getmetatable and setmetatable of tables" 0 "^locked.nil.false.cannot change a protected metatable$" --sandbox "$T/s/mtt.lua"
lua mt1 'getmetatable("").__index.upper = function() return "pwned" end'
expect "getmetatable of the shared strings" 1 "the metatable of a string is not available in the sandbox" --sandbox "$T/s/mt1.lua"
lua mt2 'return getmetatable(trace)'
expect "getmetatable of a userdata" 1 "the metatable of a userdata is not available" --sandbox "$T/s/mt2.lua" "$M"
lua gc 'setmetatable({}, {__gc = function() while true do end end}) collectgarbage()'
expect "__gc finalizers" 1 "__gc metamethods are not allowed in the sandbox" --sandbox "$T/s/gc.lua"
lua g 'setmetatable(_G, nil) _ENV = setmetatable({}, {__index = _G})
print(rawget(_G, "io"), io, rawget(os, "execute"), package.loaded.io, heapscript.open, heapscript.writer, heapscript.symbols)'
expect "setmetatable(_G) and _ENV tricks find nothing" 0 "^nil	nil	nil	nil	nil	nil	nil$" --sandbox "$T/s/g.lua"
printf 'return 1\n' >"$T/outside/secret.lua"
lua read 'print(loadfile("'"$T"'/outside/secret.lua")) print(pcall(dofile, "/etc/hostname")) print(pcall(require, "x.y"))'
expect "loadfile/dofile/require outside the allowed directories" 0 "^nil	cannot read '.*outside/secret.lua': the sandbox reads only below" --sandbox "$T/s/read.lua"
ln -s "$T/outside/secret.lua" "$T/s/link.lua"
lua link 'print(loadfile("'"$T"'/s/link.lua")) print(pcall(require, "link"))'
expect "a symbolic link out of an allowed directory" 0 "^nil	cannot read .*link.lua'" --sandbox "$T/s/link.lua"
grep -q "^true" "$T/out" && no "require followed a symbolic link out of the sandbox"
lua seven 'local r = require "rules.default" local l = require "lpeg" print("loaded") return (#r > 0 and l.match(l.P"a", "a")) and 7 or 1'
expect "bundled modules, lpeg and the exit status" 7 "^loaded$" --sandbox "$T/s/seven.lua"

# ---- the limits, which pcall, coroutines and error objects cannot escape
lua spin 'while true do
  pcall(function() local n = 0 while true do n = n + 1 end end)
  for _ = 1, 3 do local co = coroutine.wrap(function() while true do end end) pcall(co) end
end'
expect "timeout: pcall and coroutines" 2 "^heapscript: .*spin.lua:[0-9]+: script timed out after 0.2 s of CPU time \(--timeout\)$" --sandbox --timeout 0.2 "$T/s/spin.lua"
[ "$(wc -l <"$T/out")" -eq 1 ] || no "timeout: one message, not $(wc -l <"$T/out") lines"
lua errobj 'pcall(function() while true do end end)
error(setmetatable({}, {__tostring = function() while true do end end}))'
expect "timeout: an error object with __tostring" 2 "script timed out after 0.2 s" --sandbox --timeout 0.2 "$T/s/errobj.lua"
lua xp 'while true do xpcall(function() while true do end end, function() while true do end end) end'
expect "timeout: xpcall with a looping handler" 2 "script timed out after 0.2 s" --sandbox --timeout 0.2 "$T/s/xp.lua"
lua rec 'local function f(n) return 1 + f(n + 1) end f(1)'
expect "deep recursion" 1 "stack overflow" --sandbox "$T/s/rec.lua"
lua crec 'local t = setmetatable({}, {__index = function(t, k) return t[k] end}) return t.x'
expect "deep recursion through C (metamethods)" 1 "stack overflow" --sandbox "$T/s/crec.lua"
lua rep 'for i = 1, 100 do pcall(string.rep, "x", 2^28) end print("survived")'
expect "huge string.rep under --memory" 2 "rep.lua:1: script exceeded the memory limit of 64 MiB \(--memory\)" --memory 64 "$T/s/rep.lua"
grep -q survived "$T/out" && no "string.rep: the loop went on"
lua rep2 'local s = string.rep("x", 3 * 2^29) print(#s)'
expect "huge string.rep under the sandbox's default" 2 "memory limit of 1024 MiB \(the sandbox's default" --sandbox "$T/s/rep2.lua"
lua gcstop 'collectgarbage("stop") local t = {}
while true do pcall(function() for i = 1, 1e6 do t[#t + 1] = { i } end end) end'
expect "collectgarbage(stop) with an allocation loop" 2 "gcstop.lua:[0-9]+: script exceeded the memory limit of 64 MiB" --sandbox --memory 64 "$T/s/gcstop.lua"
lua garbage 'collectgarbage("stop") for i = 1, 300 do local s = ("x"):rep(2^20) .. i end print("fine")'
expect "garbage alone does not break the cap" 0 "^fine$" --memory 64 "$T/s/garbage.lua"
# no sandbox: debug.sethook cannot remove the hook, set only once the time is up
lua unhook 'while true do pcall(debug.sethook) end'
expect "timeout: debug.sethook outside the sandbox" 2 "unhook.lua:1: script timed out after 0.2 s of CPU time \(--timeout\)$" --timeout 0.2 "$T/s/unhook.lua"
lua cospin 'coroutine.wrap(function() while true do end end)()'
expect "timeout: a coroutine outside the sandbox" 2 "cospin.lua:1: script timed out after 0.2 s of CPU time \(--timeout\)$" --timeout 0.2 "$T/s/cospin.lua"
lua backtrack 'print(("a"):rep(40):find(("a?"):rep(40) .. ("a"):rep(40)))'
expect "timeout: a C function that never returns (pattern backtracking)" 2 "timed out after 0.2 s of CPU time \(--timeout\) and did not stop within 1 s" --sandbox --timeout 0.2 "$T/s/backtrack.lua"
# a long C call: the analysis of a trace stops at the next record
"$HS" tests/bench/gen_heap.lua -- "$T/big.etl" 300000 >/dev/null || no "gen_heap failed"
lua analyse 'local A = trace:allocations()
print("analysed", #A)'
expect "timeout: a long analysis in C" 2 "analyse.lua:1: script timed out after 0.01 s" --sandbox --timeout 0.01 "$T/s/analyse.lua" "$T/big.etl"
grep -q analysed "$T/out" && no "the analysis was not stopped"
expect "the same analysis without a limit" 0 "^analysed	1[45][0-9]{4}$" --sandbox "$T/s/analyse.lua" "$T/big.etl"

# ---- rule files: the bundled rules and a team's, in the sandbox
expect "--sandbox policy: rules/default.lua" 1 "FAIL  heap-repeated-leak" --sandbox policy "$M"
grep -q "7 rules: 1 broken, 0 warnings" "$T/out" || no "default rules in the sandbox: $(tail -n 1 "$T/out")"
cat >"$T/repo/ci/team.lua" <<'LUA'
local common = require "common"        -- ci/common.lua, beside this file
local rules = {}
for _, r in ipairs(require "rules.default") do
  if r.name ~= "heap-repeated-leak" then rules[#rules + 1] = r end
end
rules[#rules + 1] = { name = "team-heap", select = { kind = "heap", process = "MemoryTestApp.exe" },
                      max_leaked_bytes = common.budget, why = "our budget" }
rules[#rules + 1] = { name = "team-spikes", select = { kind = "virtual", class = "AIFI" },
                      max_transient_bytes = 50 * 2^20, severity = "warning" }
rules[#rules + 1] = { name = "sandboxed", check = function(t) return rawget(_G, "io") == nil and #t:allocations{kind = "heap"} == 5000, "io" end }
return rules
LUA
printf 'return { budget = 64 * 1024 }\n' >"$T/repo/ci/common.lua"
cd "$T/repo" || exit 1
expect "a team rule file inside the repository: sandboxed by default, still works" 0 "9 rules: 0 broken, 1 warning," policy "$M" -- --rules ci/team.lua --json "$T/repo/out.json"
grep -q '"name": "sandboxed"' "$T/repo/out.json" 2>/dev/null || no "team rules: no JSON report"
grep -A3 '"name": "sandboxed"' "$T/repo/out.json" | grep -q '"ok": true' || no "team rules: the rule file was not in the sandbox"
# the same rules as a module on -I inside the repository
expect "a rules module found inside the repository: sandboxed" 0 "9 rules: 0 broken" -I ci policy "$M" -- --rules team
printf 'io.open("%s/owned", "w"):close() return { { name = "x", max_leaked_bytes = 1e15 } }\n' "$T" >"$T/repo/ci/evil.lua"
expect "a rule file inside the repository cannot use io" 2 "cannot load the rule set: .*io is not available in the sandbox" policy "$M" -- --rules ci/evil.lua
[ -e "$T/owned" ] && no "the rule file inside the repository wrote a file"
cp "$T/repo/ci/evil.lua" "$T/outside/trusted.lua"
expect "a rule file outside the repository is trusted" 0 "1 rule: 0 broken" policy "$M" -- --rules "$T/outside/trusted.lua"
[ -e "$T/owned" ] || no "the trusted rule file outside the repository could not use io"
rm -f "$T/owned"
# a trusted rule file requires a module beside it, as a sandboxed one does
mkdir -p "$T/outside/tm"
printf 'local c = require "tmshared"\nreturn { { name = "sibling", check = function() return rawget(_G, "io") ~= nil and c.v == 7, "trusted" end } }\n' >"$T/outside/tm/rules.lua"
printf 'return { v = 7 }\n' >"$T/outside/tm/tmshared.lua"
expect "a trusted rule file requires a module beside it" 0 "^PASS  sibling" policy "$M" -- --rules "$T/outside/tm/rules.lua"
# ... but one beside it named as heapscript's own (report_html, required for --html) is not taken for it
printf 'return { page = function() return "NOT OURS" end }\n' >"$T/outside/tm/report_html.lua"
expect "a file beside a trusted rule file does not replace heapscript's module" 0 "^PASS  sibling" \
  policy "$M" -- --rules "$T/outside/tm/rules.lua" --html "$T/outside/tm/out.html"
grep -q '<html' "$T/outside/tm/out.html" 2>/dev/null || no "the HTML report was not heapscript's: $(head -c 200 "$T/outside/tm/out.html" 2>&1)"
ln -s "$T/outside/trusted.lua" "$T/repo/ci/link.lua"
expect "a symbolic link inside the repository to a rule file outside: sandboxed" 2 "io is not available" policy "$M" -- --rules ci/link.lua
[ -e "$T/owned" ] && no "the linked rule file wrote a file"
expect "--sandbox: every rule file is sandboxed" 2 "io is not available" --sandbox policy "$M" -- --rules "$T/outside/trusted.lua"
[ -e "$T/owned" ] && no "--sandbox: the rule file wrote a file"
# a symbol path names directories to open PDBs in: not the sandbox's to choose, from a rule's check,
# from a function without globals (no _ENV) or from a chunk loaded with an io of its own; it is
# refused, while the report of the command line's path stays (it opened any directory's files)
mkdir -p "$T/outside/pdbs" && printf 'not a pdb' >"$T/outside/pdbs/MemoryTestApp.pdb"
cat >"$T/repo/ci/sympath.lua" <<LUA
local function via(t) return t:symbols{path = "$T/outside/pdbs"} end
local fake = load("local t = ... return t:symbols{path = '$T/outside/pdbs'}", "=fake", "t", { io = {} })
return { { name = "sympath", check = function(t)
  local a, ea = pcall(function() return t:symbols{path = "$T/outside/pdbs"} end)
  local b, eb = pcall(via, t)
  local c, ec = pcall(fake, t)
  local seen = {}
  for _, im in ipairs(t:symbols()) do seen[#seen + 1] = im.status end
  return not a and not b and not c and tostring(ea):find("not available in the sandbox", 1, true) ~= nil
         and not table.concat(seen, " "):find("damaged", 1, true), tostring(ea) .. " " .. table.concat(seen, " ")
end } }
LUA
expect "a rule file cannot choose a symbol path" 0 "^PASS  sympath" policy "$M" -- --rules ci/sympath.lua
# the trusted policy keeps its strings and globals whatever the rule file does
cat >"$T/repo/ci/tricks.lua" <<'LUA'
string.format = function() return "HACKED" end
string.rep = nil
rawset(_G, "print", function() end)
setmetatable(_G, { __index = function() return "HACKED" end, __newindex = function() end })
return { { name = "tricks", check = function() return ("%d"):format(3) == "3", "HACKED?" end } }
LUA
expect "rule file tricks do not reach the trusted script" 0 "^PASS  tricks" policy "$M" -- --rules ci/tricks.lua
grep -q HACKED "$T/out" && no "the rule file changed the trusted script's strings"
# functions the rule file returns stay limited when policy calls them later
printf 'return { { name = "spin", check = function() while true do pcall(function() while true do end end) end end } }\n' >"$T/repo/ci/spin.lua"
expect "a rule's check loops: the time limit, no report" 2 "spin.lua:1: script timed out after 0.2 s" --timeout 0.2 policy "$M" -- --rules ci/spin.lua --json "$T/repo/spin.json"
[ -e "$T/repo/spin.json" ] && no "a report was written after the time limit"
printf 'return { { name = "hog", check = function() local t = {} while true do t[#t + 1] = ("x"):rep(1000) .. #t end end } }\n' >"$T/repo/ci/hog.lua"
expect "a rule's check hogs memory: the memory limit, no report" 2 "hog.lua:1: script exceeded the memory limit of 64 MiB" --memory 64 policy "$M" -- --rules ci/hog.lua --json "$T/repo/hog.json"
[ -e "$T/repo/hog.json" ] && no "a report was written after the memory limit"
# --sandbox: a bundled script overridden from -I is not trusted
printf 'print("io", rawget(_G, "io"), "loadlib", rawget(package, "loadlib"))\n' >"$T/over/policy.lua"
expect "--sandbox: an -I file overriding a bundled script runs sandboxed" 0 "^io	nil	loadlib	nil$" --sandbox -I "$T/over" policy
expect "--memory needs a number" 2 "option --memory needs a number of MiB" --memory x policy

# files that happen to lie in the directory heapscript runs in (a CI checkout: a vendored json.lua,
# a rules/default.lua of the project) replace no bundled module or rule set, sandboxed or not
mkdir -p "$T/checkout/rules"
for f in json report baseline rules/default; do
  printf 'io.open("%s/PWNED-%s", "w"):close()\nreturn {}\n' "$T" "$(basename $f)" > "$T/checkout/$f.lua"
done
out=$(cd "$T/checkout" && "$HS" policy "$M" 2>&1); rc=$?
n=$((n + 1))
[ $rc = 1 ] && echo "$out" | grep -q "^7 rules: 1 broken" && ! ls "$T"/PWNED-* >/dev/null 2>&1 \
  || no "files in the working directory replaced bundled ones (rc $rc): $(ls "$T" | tr '\n' ' ') $out"
mkdir -p "$T/team/rules"; cp "$T/checkout/rules/default.lua" "$T/team/rules/"
out=$(cd "$T/checkout" && "$HS" -I "$T/team" policy "$M" 2>&1); rc=$?
n=$((n + 1))
[ -e "$T/PWNED-default" ] || no "-I DIR still overrides the bundled rule set, as documented: $out"

# a module beside the script is found from any working directory, sandboxed or not
mkdir -p "$T/own"
printf 'return { v = 42 }\n' > "$T/own/mymod.lua"
printf 'print("mod", require("mymod").v)\n' > "$T/own/s.lua"
for sb in "" --sandbox; do
  out=$(cd / && "$HS" $sb "$T/own/s.lua" 2>&1); n=$((n + 1))
  [ "$out" = "mod	42" ] || no "a module beside the script ($sb): $out"
done

[ "$fails" -eq 0 ] && echo "ok: sandbox ($n cases)"
[ "$fails" -eq 0 ]
