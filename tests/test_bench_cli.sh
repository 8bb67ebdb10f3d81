#!/usr/bin/env bash
# cca-bench's command line as a user meets it: a bad option or value names
# it (and, for --scenario, the choices) and exits 2; --trace and --json
# paths are the caller's (relative to the directory it runs in); a trace it
# cannot read, or a file that is no trace, is an error (exit 2 when parsed,
# 1 when it fails to load), never "skipped"; the header says when the
# default trace folder is absent.
# Usage: test_bench_cli.sh PATH/cca-bench
set -euo pipefail
bench=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

says() {   # expected exit, expected words in stderr, then the arguments
    local want=$1 words=$2 err rc=0
    shift 2
    err=$(cd "$dir" && "$bench" "$@" 2>&1 >/dev/null) || rc=$?
    [ "$rc" = "$want" ] || fail "cca-bench $*: exit $rc, not $want ($err)"
    [[ "$err" == *"$words"* ]] || fail "cca-bench $*: '$err' does not say '$words'"
    echo "ok   cca-bench $*: $(echo "$err" | head -1)"
}
says 2 "--scenario pingpng: no such scenario (the scenarios: runtime, pingpong, mixed," --scenario pingpng
says 2 "unknown option --frob" --frob
says 2 "--json needs a value" --json
says 2 "--reps x: expected a whole number from 1 to 64" --reps x
says 2 "--reps 0: expected a whole number" --reps 0
says 2 "--count 5k: expected a whole number" --count 5k
says 2 "--trace mine.csv: cannot read it: No such file or directory" --trace mine.csv
mkdir "$dir/empty"
says 2 "--trace empty: a folder with no .csv trace in it" --trace empty

# a trace in the caller's directory, by a relative path; the JSON lands there too
{
    echo "Thread,Time,Action,Pointer,Size,Stream"
    echo "0,00:00:00.000000,allocate,0x1010000000,3145728,0"
    echo "0,00:00:00.000001,free,0x1010000000,3145728,0"
} > "$dir/mine.csv"
out=$(cd "$dir" && "$bench" --quick --reps 1 --scenario replay --traces-dir none --trace mine.csv \
      --alloc cca:default --json out.json 2>/dev/null) || fail "replaying ./mine.csv failed"
[[ "$out" == *"replay mine.csv: 2 events"* ]] || fail "mine.csv not replayed: $out"
[[ "$out" == *"traces:    none (absent: replay has only --trace's)"* ]] || fail "header: $(echo "$out" | grep traces:)"
[ -s "$dir/out.json" ] || fail "--json out.json did not land in the caller's directory"
echo "ok   --trace mine.csv and --json out.json from the caller's directory"

# a file that is no trace: an error at the end of the run
echo "not,a,trace" > "$dir/bad.csv"
rc=0
err=$(cd "$dir" && "$bench" --quick --reps 1 --scenario replay --traces-dir none --trace bad.csv \
      --alloc cca:default 2>&1 >/dev/null) || rc=$?
[ "$rc" = 1 ] || fail "a file that is no trace: exit $rc, not 1"
[[ "$err" == *"cca-bench: --trace bad.csv: not a trace: "* ]] || fail "no reason: $err"
echo "ok   --trace bad.csv: exit 1, $(echo "$err" | grep 'not a trace')"
echo "PASS"
