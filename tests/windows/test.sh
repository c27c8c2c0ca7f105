#!/bin/sh
# test.sh -- `make test-windows`: the file-mode tests against the Windows
# build (HS_EXE) under Wine, with the Linux build (HS_LINUX) where a test
# driver needs a POSIX shell.  Steps and summary as tests/run.sh.
#   lua/*     each tests/lua/test_*.lua runs inside heapscript.exe (its
#             child processes are heapscript.exe again, through cmd.exe);
#             test_cli drives the binary with POSIX shell lines, so the
#             Linux build runs it with heapscript.exe as the binary
#   cli/*     the damaged-input and CLI shell tests, HS_BIN=heapscript.exe
#   corpus    the real-trace figures of heapscript.exe (Linux driver)
#   same      tests/windows/test_same.sh: byte-identical output to the Linux build,
#             non-ASCII paths, CRLF rule files and symbol maps
# The Wine prefix lives in build/wine and is made once (wineboot, ~10 s).
HS_LINUX=${HS_LINUX:-build/rel/heapscript}
HS_EXE=${HS_EXE:-build/win/heapscript.exe}
export HS_EXE
export WINEPREFIX="$(pwd)/build/wine" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
W=tests/windows/wine-hs
if ! command -v wine >/dev/null; then echo "test-windows: wine missing (make deps)"; exit 1; fi
if [ ! -f "$WINEPREFIX/system.reg" ]; then
  t0=$(date +%s)
  mkdir -p "$WINEPREFIX" && wineboot -i >/dev/null 2>&1
  wineserver -w
  echo "wine prefix made in $(( $(date +%s) - t0 )) s ($WINEPREFIX)"
fi
STEP_TIMEOUT=0        # each step bounds itself (bounded, below): a shell function timeout cannot run
. tests/steplib.sh
posix_driven=" test_cli "
# Tests not run under Wine, and why (the Linux suite runs them on the same C
# code; README "Windows" says what this leaves to a real Windows machine):
#  - their drivers shell out with POSIX commands and paths (mkdir -p, rm -rf,
#    /-separated temporary trees): test_symbols, test_damage_scripts,
#    test_docs (SYMBOLS.md's store example), test_sandbox, test_symbols.sh;
#  - they drive Linux-only tools (pdbdump, pdbmangle, llvm-*) and never run
#    heapscript.exe: test_pdb_oracle, test_pdb_damage, test_threads;
#  - a pty (test_terminal) or the sandbox's escape cases, one of which (a C
#    call that never returns) only the POSIX CPU timer ends (test_sandbox.sh).
not_under_wine=" test_symbols test_damage_scripts test_docs test_sandbox test_pdb_oracle test_pdb_damage test_threads test_terminal "
# Every step has a wall-clock bound, so a hang under Wine fails the step
# instead of stopping CI.  Wine now and then fails to start a child process
# (cmd.exe under io.popen) while others end, so a failed step runs once more;
# the first run's tail is kept in the step's output, so a retry shows.
bounded() {
  timeout "${HS_WINE_STEP_SECONDS:-900}" "$@" >"$T_RETRY" 2>&1 && { cat "$T_RETRY"; return 0; }
  echo "RETRY under Wine after a failed run; its last lines:"; tail -5 "$T_RETRY"
  timeout "${HS_WINE_STEP_SECONDS:-900}" "$@"
}
T_RETRY=$(mktemp); trap 'rm -f "$T_RETRY"' EXIT
for t in tests/lua/test_*.lua; do
  b=$(basename "$t" .lua)
  case "$not_under_wine" in *" $b "*) echo "SKIP lua/$b: not under Wine (see tests/windows/test.sh)"; continue ;; esac
  case "$posix_driven" in
    *" $b "*) step "lua/$b (Linux driver)" bounded env HS_BIN=$W HS_WINE=1 "$HS_LINUX" "$t" ;;
    *) step "lua/$b" bounded env -u HS_BIN $W "$t" ;;
  esac
done
for t in tests/cli/test_*.sh; do
  b=$(basename "$t" .sh)
  case "$not_under_wine" in *" $b "*) echo "SKIP cli/$b: not under Wine (see tests/windows/test.sh)"; continue ;; esac
  step "cli/$b" bounded env HS_BIN=$W HS_WINE=1 sh "$t"
done
step "corpus" bounded "$HS_LINUX" tests/corpus/test_corpus.lua -- $W
step "same-as-linux" bounded env HS_LINUX="$HS_LINUX" HS_BIN=$W sh tests/windows/test_same.sh
wineserver -k 2>/dev/null
steps_done test-windows
