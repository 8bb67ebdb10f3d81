#!/usr/bin/env bash
# cca-bench's instructions scenario: each allocator's row holds three
# instruction counts from callgrind, and the 12-size pair costs more than
# the one-size pair (the general path against the cached one); the JSON
# report carries the same three figures, and the streams dimension: a row
# per work (pingpong, mixed) and S = 1, 2, 8, 64, with "streams": S, each
# as printed.
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
by_s=$(echo "$out" | awk '/by streams/ { on = 1 } on && $1 == "cca:default" { print $2, $3, $4, $5, $6 }')
python3 - "$json" "$one" "$twelve" "$mixed" "$by_s" <<'PY' || { echo "FAIL: the JSON report differs"; exit 1; }
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["scenario"] == "instructions"
        and r["allocator"] == "cca:default" and r["unit"] == "Ir/op"]
got = {r["case"]: round(r["median"]) for r in rows if "streams" not in (r.get("extra") or {})}
want = dict(zip(("pingpong", "pingpong12", "mixed"), map(int, sys.argv[2:5])))
if got != want:
    sys.exit("json %s, table %s" % (got, want))
table = {}
for line in sys.argv[5].splitlines():
    work, *cells = line.split()
    for s, c in zip((1, 2, 8, 64), cells):
        table["%s/%d" % (work, s)] = (s, int(c))
streams = {r["case"]: (int(r["extra"]["streams"]), round(r["median"])) for r in rows if "streams" in (r.get("extra") or {})}
if len(table) != 8 or streams != table:
    sys.exit("streams rows: json %s, table %s" % (streams, table))
if not all(c > 100 for _, c in table.values()):
    sys.exit("streams rows: not instruction counts: %s" % table)
PY
echo "PASS"
