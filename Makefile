# heapscript -- plain make.  `make` builds ./heapscript; `make test` runs
# every test; `make bench` measures; `make SANITIZE=1 test` runs the tests
# under AddressSanitizer and UBSan; `make cross` compiles the Lua-free
# engine for Windows with mingw-w64; `make windows` builds heapscript.exe and
# `make test-windows` tests it under Wine (engine/win/win.mk).

CC      ?= cc
LUA_INC ?= /usr/include/lua5.4
LUA_LIB ?= -llua5.4
LPEG_LIB ?= /usr/lib/x86_64-linux-gnu/liblua5.4-lpeg.a
WERROR  ?= -Werror
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c99 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter $(WERROR)
CPPFLAGS += -Iinclude -Iengine -I$(LUA_INC) -D_FILE_OFFSET_BITS=64 -D_POSIX_C_SOURCE=200809L
LDLIBS  += $(LPEG_LIB) $(LUA_LIB) -lm -ldl -lpthread

# The release build is optimised at link time as well: the pass calls many
# small functions of other files for every event (the prefetch ring, the
# process map, the stack matcher, the tracker), and inlined across files
# the C lifetime pass takes a quarter less time (README, Speed and memory).
# `make LTO=` builds without.
LTO ?= -flto=auto

ifeq ($(SANITIZE),1)
  B ?= build/san
  CFLAGS += -fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer -fno-sanitize-recover=all
  LDFLAGS += -fsanitize=address,undefined,float-cast-overflow
else ifeq ($(SANITIZE),thread)
  B ?= build/tsan
  CFLAGS += -fsanitize=thread
  LDFLAGS += -fsanitize=thread
else
  B ?= build/rel
  CFLAGS += $(LTO)
  LDFLAGS += $(LTO)
endif

# The core engine: everything in engine/ but the Lua bindings, the CLI and
# build tools.  It must compile for Windows (see `make cross`).
LUA_SRC  := $(wildcard engine/lua_*.c)
TOOL_SRC := engine/main.c engine/bin2c.c
WIN_SRC  := $(wildcard engine/win_*.c)
CORE_SRC := $(filter-out $(LUA_SRC) $(TOOL_SRC) $(WIN_SRC),$(wildcard engine/*.c))
CORE_OBJ := $(CORE_SRC:engine/%.c=$(B)/%.o)
LUA_OBJ  := $(LUA_SRC:engine/%.c=$(B)/%.o) $(B)/embedded.o
LIB      := $(B)/libheapscript.a

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)

EMBED := $(sort $(wildcard scripts/*.lua) $(wildcard rules/*.lua))

all: heapscript

# Always the binary of this build (a sanitizer build's copy never lingers).
heapscript: $(B)/heapscript
	cp $< $@

$(B)/heapscript: $(B)/main.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(LIB): $(CORE_OBJ) $(LUA_OBJ)
	rm -f $@; ar rcs $@ $^

$(B)/%.o: engine/%.c include/heapscript.h $(wildcard engine/*.h) | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/bin2c: engine/bin2c.c | $(B)
	$(CC) -O1 -o $@ $<

$(B)/embedded.c: $(B)/bin2c $(EMBED)
	$(B)/bin2c $@ $(EMBED)

$(B)/embedded.o: $(B)/embedded.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/tests/%: tests/unit/%.c tests/unit/unit.h tests/unit/corpus.h tests/unit/evsame.h $(LIB) | $(B)
	@mkdir -p $(B)/tests
	$(CC) $(CPPFLAGS) $(CFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# The fuzz targets (tests/fuzz/fuzz_*.c) with a plain driver, replaying
# their corpora in make test: reader (corpus), PDB (pdb_corpus), symbol
# maps (symmap_corpus), the JSON decoder of baselines (json_corpus).
FUZZ := reader pdb symmap json
$(B)/tests/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/driver.c tests/unit/evsame.h $(LIB) | $(B)
	@mkdir -p $(B)/tests
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< tests/fuzz/driver.c $(LIB) $(LDLIBS)

# The PDB reader's test tools: pdbdump (diffed against LLVM's tools) and
# pdbmangle (damaged copies, fuzz seeds).
$(B)/tests/pdbdump $(B)/tests/pdbmangle: $(B)/tests/%: tests/tools/%.c $(LIB) | $(B)
	@mkdir -p $(B)/tests
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

$(B):
	mkdir -p $(B)

# The tests run the binary of this build ($(B)/heapscript), so a sanitizer
# run never replaces ./heapscript.
# The core linked alone, without Lua (tests/tools/corelink.c): its sources
# built again without link-time optimisation, which would drop the code
# nothing calls here before its references are looked for.
$(B)/tests/corelink: tests/tools/corelink.c $(CORE_SRC) include/heapscript.h $(wildcard engine/*.h) | $(B)
	@mkdir -p $(B)/tests
	$(CC) $(CPPFLAGS) -std=c99 -O0 -w -o $@ tests/tools/corelink.c $(CORE_SRC) -lm -lpthread

test: $(B)/tests/corelink $(B)/heapscript $(UNIT_BIN) $(FUZZ:%=$(B)/tests/fuzz_%) $(B)/tests/pdbdump $(B)/tests/pdbmangle
	HS_BUILD=$(B) HS_BIN=$(B)/heapscript sh tests/run.sh

# The Lua side the JSON target needs (the other targets do not call it).
FUZZ_LUA_SRC := engine/lua_jsondec.c engine/lua_json.c
# libFuzzer build (clang): make fuzz, then ./build/fuzz/fuzz_reader tests/fuzz/corpus
# (./build/fuzz/fuzz_pdb tests/fuzz/pdb_corpus, ./build/fuzz/fuzz_symmap tests/fuzz/symmap_corpus,
# ./build/fuzz/fuzz_json tests/fuzz/json_corpus)
fuzz:
	mkdir -p build/fuzz
	for t in $(FUZZ); do \
	  clang -g -O1 -fsanitize=fuzzer,address,undefined $(CPPFLAGS) -o build/fuzz/fuzz_$$t \
	    tests/fuzz/fuzz_$$t.c $(CORE_SRC) $(FUZZ_LUA_SRC) $(LPEG_LIB) $(LUA_LIB) -lm || exit 1; done

# Write the golden report files (tests/golden/cases.txt) again; review the diff.
golden: heapscript
	HS_BIN=./heapscript sh tests/cli/test_formats.sh --regenerate

# Regenerate the committed fuzz seeds with the project's writer.
fuzz-seeds: $(LIB)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $(B)/make_seeds tests/fuzz/make_seeds.c $(LIB) $(LDLIBS)
	$(B)/make_seeds tests/fuzz/corpus

# The core engine must build for Windows.
# The tests of what runs on several threads (the reader's workers and
# helpers, the prefetch ring, the analysis over them) under ThreadSanitizer:
# a data race fails them (its report, exit status 66).
TSAN_TESTS := test_threads test_prefetch
tsan:
	$(MAKE) SANITIZE=thread $(TSAN_TESTS:%=build/tsan/tests/%)
	for t in $(TSAN_TESTS); do build/tsan/tests/$$t || exit 1; done

cross:
	mkdir -p build/mingw
	for f in $(CORE_SRC) $(WIN_SRC); do \
	  x86_64-w64-mingw32-gcc -std=c99 -Wall -Wextra -Wno-unused-parameter $(WERROR) -O2 -Iinclude -Iengine \
	    -c -o build/mingw/$$(basename $$f .c).o $$f || exit 1; done
	x86_64-w64-mingw32-ar rcs build/mingw/libheapscript.a build/mingw/*.o
	@echo "cross: engine core built for Windows (build/mingw/libheapscript.a)"

# What the build and the tests need, from Debian's packages.  As root this
# installs them; otherwise it names the missing ones and the command.
# chromium opens the --html reports in tests/cli/test_html.sh; libxml2-utils
# (xmllint) validates policy --junit against tests/junit.xsd.  clang, lld,
# llvm and the i686 mingw runtime: the PDB tests build Windows executables
# with PDBs and compare with llvm-symbolizer/llvm-pdbutil.  The Windows
# build also needs deb-src entries (engine/win/deb-src.sh adds them), dpkg-dev, and
# Wine for its tests (without recommends: no 32-bit Wine, no fonts).
DEPS := gcc make liblua5.4-dev lua-lpeg-dev gcc-mingw-w64-x86-64 chromium libxml2-utils \
        clang lld llvm gcc-mingw-w64-i686-win32 mingw-w64-i686-dev dpkg-dev
WINE_DEPS := wine64 wine
deps:
	@if [ -f $(LUA_INC)/lua.h ] && [ -f $(LPEG_LIB) ] && command -v x86_64-w64-mingw32-gcc >/dev/null \
	    && command -v $(CC) >/dev/null && command -v chromium >/dev/null && command -v xmllint >/dev/null \
	    && command -v clang >/dev/null && command -v ld.lld >/dev/null \
	    && command -v llvm-symbolizer >/dev/null && command -v llvm-pdbutil >/dev/null \
	    && [ -d /usr/i686-w64-mingw32/lib ] && ls -d /usr/lib/gcc/i686-w64-mingw32/*-win32 >/dev/null 2>&1 \
	    && command -v dpkg-source >/dev/null && command -v wine >/dev/null; \
	then echo "deps: all present"; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update && apt-get install -y $(DEPS) \
	  && apt-get install -y --no-install-recommends $(WINE_DEPS); \
	else echo "deps: missing; as root run: apt-get install -y $(DEPS) && apt-get install -y --no-install-recommends $(WINE_DEPS)"; exit 1; fi
	@sh engine/win/deb-src.sh lua5.4

# Every test: the suite, again under ASan/UBSan, the Windows build of the engine,
# and heapscript.exe with its tests under Wine.
check: test
	$(MAKE) SANITIZE=1 test
	$(MAKE) tsan
	$(MAKE) cross
	$(MAKE) windows test-windows

$(B)/bench_%: tests/bench/bench_%.c tests/bench/clock.h $(LIB) | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

bench: heapscript $(B)/bench_read $(B)/bench_analysis $(B)/bench_floor $(B)/bench_lifetime $(B)/bench_pdb
	HS_BUILD=$(B) sh tests/bench.sh

# A trace past 4 GiB end to end (writes ~4.6 GB; not part of test or check).
bigcheck: heapscript
	HS_BIN=./heapscript sh tests/bigtrace.sh

clean:
	rm -rf build heapscript

.PHONY: all heapscript test check deps fuzz fuzz-seeds golden tsan cross bench bigcheck clean

include engine/win/win.mk
