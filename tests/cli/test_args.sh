#!/bin/sh
# test_args.sh -- the command lines of the C commands (info, dump, symbols,
# merge) and of script mode: `--` ends the options of every command, an
# unknown option is a usage error naming it (exit 2), and a usage error
# says in one line what is missing before the usage.
HS=${HS_BIN:-./heapscript}
E=examples/memorytestapp.etl
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0
no() { echo "not ok: $*"; fails=$((fails + 1)); }
# run CMDLINE...: exit status in $rc, stderr's first line in $first
run() { "$HS" "$@" >"$T/out" 2>"$T/err"; rc=$?; first=$(head -1 "$T/err"); }

# `--`: the words after it are traces, for each command (dump took `--` as a
# file, info and symbols called it an unknown option)
for cmd in info dump symbols; do
  run $cmd -- $E
  [ $rc = 0 ] && [ -s "$T/out" ] && [ ! -s "$T/err" ] || no "$cmd -- TRACE: exit $rc: $first"
done
run merge -o "$T/m.etl" -- $E
[ $rc = 0 ] && [ -s "$T/m.etl" ] || no "merge -o OUT -- TRACE: exit $rc: $first"
cp $E "$T/-odd.etl"
run dump --limit 1 -- "$T/-odd.etl"
[ $rc = 0 ] && [ "$(wc -l <"$T/out")" = 1 ] || no "dump -- -odd.etl: a trace after --: exit $rc: $first"

# an unknown option: named alone (dump showed the trace as its value: "bad
# option --bogus T.etl: no such option"; merge took it for a trace)
for cmd in info dump symbols "merge -o $T/x.etl"; do
  run $cmd --bogus $E
  [ $rc = 2 ] && [ "$first" = "heapscript ${cmd%% *}: unknown option --bogus" ] \
    || no "$cmd --bogus TRACE: exit $rc: $first"
  grep -q "^usage: heapscript ${cmd%% *}" "$T/err" || no "$cmd --bogus: no usage after the message"
done
[ ! -e "$T/x.etl" ] || no "merge --bogus: a file was written"
run dump -x $E
[ $rc = 2 ] && [ "$first" = "heapscript dump: unknown option -x" ] || no "dump -x: exit $rc: $first"

# what is missing, in one line before the usage
for c in "info|no trace given" "dump|no trace given" "symbols|no trace given" \
         "dump --pid|--pid needs a value" "symbols --symbols|--symbols needs a value" \
         "symbols --symbol-path $E|no trace given: --symbol-path took $E as its value" \
         "merge -o $T/y.etl|no trace given" "merge $E|no output file: -o OUT.etl is needed" \
         "merge -o|-o needs an output file and at least one trace" \
         "merge -o $T/y.etl -o $T/z.etl $E|-o given twice: the traces are merged into one file"; do
  args=${c%%|*}; want=${c#*|}; cmd=${args%% *}
  run $args
  [ $rc = 2 ] && [ "$first" = "heapscript $cmd: $want" ] || no "$args: exit $rc: '$first', want '$want'"
  sed -n 2p "$T/err" | grep -q "^usage: heapscript $cmd" || no "$args: no usage after the message"
done
[ ! -e "$T/y.etl" ] && [ ! -e "$T/z.etl" ] || no "a merge refused wrote a file"

# script mode: no script (the usage alone before)
for c in "-I $T/inc|heapscript: no script given: -I took $T/inc as its value" \
         "--symbol-path leaks|heapscript: no script given: --symbol-path took leaks as its value" \
         "--sandbox|heapscript: no script given"; do
  args=${c%%|*}; want=${c#*|}
  run $args
  [ $rc = 2 ] && [ "$first" = "$want" ] || no "heapscript $args: exit $rc: '$first', want '$want'"
done

# a trace where the script goes: the one helpful line, not first a Lua
# syntax error of the trace read as source ("T.etl:1: unexpected symbol")
run $E
[ $rc = 2 ] && [ "$(cat "$T/err")" = "heapscript: $E is a trace, not a script: name a script first (heapscript leaks $E; heapscript --list names the bundled ones)" ] \
  || no "heapscript TRACE: exit $rc: $(cat "$T/err")"

echo "args: $fails failed"
[ $fails = 0 ]
