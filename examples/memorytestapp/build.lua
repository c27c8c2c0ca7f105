-- build.lua -- builds the MemoryTestApp example's executable and PDB with
-- clang and lld, and writes what the example trace needs from them:
--
--   examples/MemoryTestApp.exe, examples/MemoryTestApp.pdb
--   examples/memorytestapp/layout.txt   functions, call sites, the RSDS
--                                       identity, and llvm-symbolizer's
--                                       answer for every call site
--
-- Run from the top of the tree:  ./heapscript examples/memorytestapp/build.lua
-- Needs clang, lld and llvm (llvm-pdbutil, llvm-objdump, llvm-readobj,
-- llvm-symbolizer) and the mingw-w64 import libraries.  The outputs are
-- committed: make_examples.lua reads layout.txt, so regenerating the trace
-- needs none of these tools.  The build is reproducible (no timestamp,
-- paths mapped to C:\src\MemoryTestApp), but another clang may lay the code
-- out differently; then the trace and examples/README.md change with it.

local top = "."
local src = top .. "/examples/memorytestapp/memorytestapp.c"
local out_exe, out_pdb = top .. "/examples/MemoryTestApp.exe", top .. "/examples/MemoryTestApp.pdb"
local layout_path = top .. "/examples/memorytestapp/layout.txt"
local WINDIR = [[C:\src\MemoryTestApp]]

local function sh(cmd)
  local ok, how, code = os.execute(cmd)
  if not ok then error(("command failed (%s %s): %s"):format(tostring(how), tostring(code), cmd)) end
end
local function read(cmd)
  local p = assert(io.popen(cmd, "r"))
  local s = p:read("a")
  local ok = p:close()
  if not ok then error("command failed: " .. cmd) end
  return s
end
local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- the mingw-w64 gcc library directory, for the linker's search path
local libdir = read("ls -d /usr/lib/gcc/x86_64-w64-mingw32/*-win32 2>/dev/null | head -1"):gsub("%s+$", "")

local tmp = os.tmpname()
os.remove(tmp)
sh("mkdir -p " .. q(tmp))
sh("cp " .. q(src) .. " " .. q(tmp .. "/memorytestapp.c"))
sh(("cd %s && clang --target=x86_64-w64-mingw32 -g -gcodeview -O1 -fno-omit-frame-pointer "
    .. "-ffile-prefix-map=%s=%s -c memorytestapp.c -o memorytestapp.o"):format(q(tmp), q(tmp), q(WINDIR)))
sh(("cd %s && clang --target=x86_64-w64-mingw32 -nostdlib -fuse-ld=lld %s -Wl,--entry=mainCRTStartup "
    .. "-Wl,--pdb=MemoryTestApp.pdb -Wl,--no-insert-timestamp %s %s memorytestapp.o -lkernel32 -o MemoryTestApp.exe")
   :format(q(tmp), libdir ~= "" and ("-L" .. q(libdir)) or "",
           q("-Wl,-Xlink=-pdbaltpath:" .. WINDIR .. [[\x64\Release\MemoryTestApp.pdb]]),
           q("-Wl,-Xlink=-pdbsourcepath:" .. WINDIR)))
sh("cp " .. q(tmp .. "/MemoryTestApp.exe") .. " " .. q(out_exe))
sh("cp " .. q(tmp .. "/MemoryTestApp.pdb") .. " " .. q(out_pdb))
sh("rm -rf " .. q(tmp))

-- the image: base, size, .text, the import address table
local headers = read("llvm-readobj --file-headers --sections --coff-imports --coff-debug-directory " .. q(out_exe))
local image_base = tonumber(headers:match("ImageBase: (0x%x+)"))
local size_of_image = tonumber(headers:match("SizeOfImage: (%d+)"))
local text_rva = tonumber(headers:match("Name: %.text .-VirtualAddress: (0x%x+)"))
local pdb_path = headers:match("PDBFileName: ([^\n]+)")
local rsds_age = tonumber(headers:match("PDBAge: (%d+)"))
local iat = {}
do
  local iat_rva = tonumber(headers:match("ImportAddressTableRVA: (0x%x+)"))
  local k = 0
  for name in headers:match("Import {(.-)}"):gmatch("Symbol: (%S+)") do
    iat[image_base + iat_rva + 8 * k] = name
    k = k + 1
  end
end
local summary = read("llvm-pdbutil dump --summary " .. q(out_pdb))
local guid = summary:match("GUID: {([%x-]+)}")

-- functions from the PDB's module symbols (section 1 is .text)
local funcs, by_rva = {}, {}
do
  local dump = read("llvm-pdbutil dump --symbols " .. q(out_pdb))
  for name, sec, off, size in dump:gmatch("S_[GL]PROC32 %[size = %d+%] `([^`]+)`%s+parent = %d+, end = %d+, addr = (%d+):(%d+), code size = (%d+)") do
    assert(tonumber(sec) == 1, name .. " is not in section 1")
    local f = { name = name, rva = text_rva + tonumber(off), size = tonumber(size), calls = {} }
    funcs[#funcs + 1] = f
    by_rva[f.rva] = f
  end
  table.sort(funcs, function(a, b) return a.rva < b.rva end)
end
local function func_at(rva)
  for _, f in ipairs(funcs) do if rva >= f.rva and rva < f.rva + f.size then return f end end
end

-- call sites: the address after each call instruction is the return address
do
  local dis = read("llvm-objdump -d --no-show-raw-insn " .. q(out_exe))
  local prev
  for line in dis:gmatch("[^\n]+") do
    local addr, ins = line:match("^%s*(%x+):%s+(.*)$")
    if addr then
      addr = tonumber(addr, 16)
      if prev then
        local f = func_at(prev.addr - image_base)
        if f then
          f.calls[#f.calls + 1] = { callee = prev.callee, ret = addr - image_base }
        end
        prev = nil
      end
      if ins:match("^callq") then
        local direct = ins:match("^callq%s+0x(%x+)")
        local slot = ins:match("# 0x(%x+)")
        local callee
        if direct then
          local g = by_rva[tonumber(direct, 16) - image_base]
          callee = g and g.name or ("0x" .. direct)
        elseif slot then
          callee = iat[tonumber(slot, 16)] or ("0x" .. slot)
        end
        prev = { addr = addr, callee = callee or "?" }
      end
    end
  end
end

-- llvm-symbolizer's frames for every call site (the oracle the tests compare with)
local sites = {}
for _, f in ipairs(funcs) do
  for _, c in ipairs(f.calls) do sites[#sites + 1] = c.ret end
end
local answers = {}
do
  local args = {}
  for i, rva in ipairs(sites) do args[i] = ("0x%x"):format(image_base + rva) end
  local text = read("llvm-symbolizer --inlines --obj=" .. q(out_exe) .. " " .. table.concat(args, " "))
  local i = 1
  for block in (text .. "\n"):gmatch("(.-)\n\n") do
    local frames = {}
    local lines = {}
    for l in block:gmatch("[^\n]+") do lines[#lines + 1] = l end
    for k = 1, #lines - 1, 2 do
      local file, ln = lines[k + 1]:match("^(.*):(%d+):%d+$")
      frames[#frames + 1] = { name = lines[k], file = file or lines[k + 1], line = tonumber(ln) or 0 }
    end
    answers[sites[i]] = frames
    i = i + 1
  end
end

local o = assert(io.open(layout_path, "wb"))
o:write("# layout.txt -- written by examples/memorytestapp/build.lua from MemoryTestApp.exe and .pdb\n")
o:write("# image SIZE_OF_IMAGE | rsds GUID AGE PDB_PATH | func NAME RVA SIZE\n")
o:write("# call CALLER CALLEE RETURN_RVA (in code order) | frame RVA LEVEL NAME LINE FILE (llvm-symbolizer --inlines)\n")
o:write(("image 0x%x\n"):format(size_of_image))
o:write(("rsds %s %d %s\n"):format(guid, rsds_age, pdb_path))
for _, f in ipairs(funcs) do o:write(("func %s 0x%x 0x%x\n"):format(f.name, f.rva, f.size)) end
for _, f in ipairs(funcs) do
  for _, c in ipairs(f.calls) do
    o:write(("call %s %s 0x%x\n"):format(f.name, c.callee, c.ret))
    for lvl, fr in ipairs(answers[c.ret] or {}) do
      o:write(("frame 0x%x %d %s %d %s\n"):format(c.ret, lvl, fr.name, fr.line, fr.file))
    end
  end
end
assert(o:close())
print(("wrote %s, %s, %s: %d functions, %d call sites; PDB %s age %d"):format(out_exe, out_pdb, layout_path,
      #funcs, #sites, guid, rsds_age))
