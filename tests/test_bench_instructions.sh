#!/usr/bin/env bash
# cca-bench's instructions scenario: each allocator's row holds three
# instruction counts from callgrind, and the 12-size pair costs more than
# the one-size pair (the general path against the cached one); the JSON
# report carries the same three figures.
# Usage: test_bench_instructions.sh PATH/cca-bench
set -euo pipefail
json=$(mktemp)
trap 'rm -f "$json"' EXIT
out=$("$1" --scenario instructions --quick --alloc cca:default --json "$json")
echo "$out" | sed -n '/== instructions/,/^$/p'
row=$(echo "$out" | awk '/== instructions/ { on = 1 } on && $1 == "cca:default" { print; exit }')
[ -n "$row" ] || { echo "FAIL: no cca:default row"; exit 1; }
read -r _ one twelve mixed <<<"$row"
for x in "$one" "$twelve" "$mixed"; do
    [[ "$x" =~ ^[0-9]+$ ]] && [ "$x" -gt 100 ] || { echo "FAIL: not an instruction count: '$x'"; exit 1; }
done
[ "$twelve" -gt "$one" ] || { echo "FAIL: 12-size pair ($twelve) not above one-size pair ($one)"; exit 1; }
python3 - "$json" "$one" "$twelve" "$mixed" <<'PY' || { echo "FAIL: the JSON report differs"; exit 1; }
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["scenario"] == "instructions"]
got = {r["case"]: round(r["median"]) for r in rows if r["allocator"] == "cca:default" and r["unit"] == "Ir/op"}
want = dict(zip(("pingpong", "pingpong12", "mixed"), map(int, sys.argv[2:])))
sys.exit(0 if got == want else "json %s, table %s" % (got, want))
PY
echo "PASS"
