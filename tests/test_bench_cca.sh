#!/usr/bin/env bash
# cca-bench --cca LABEL=CONF: a user's own configuration runs beside cca's in
# a scenario (here the replay of a small trace written below), appears in
# the table and the JSON report, and the per-trace table (with the driver
# calls cuMemCreate and cuMemUnmap per 1,000 events) flags an OOM on a
# device of 1.05x and 1.10x peak live; bad labels and configurations are
# refused with a reason (exit 2).
# Usage: test_bench_cca.sh PATH/cca-bench
set -euo pipefail
bench=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

refused() {   # spec, expected words in the message
    local err rc=0
    err=$("$bench" --cca "$1" 2>&1 >/dev/null) || rc=$?
    [ "$rc" = 2 ] || fail "--cca '$1' exited $rc, not 2"
    [[ "$err" == *"$2"* ]] || fail "--cca '$1': '$err' does not say '$2'"
}
refused 'no-equals' 'LABEL=CONF'
refused '=preset:lean' 'LABEL=CONF'
refused 'bad label=preset:lean' 'letters, digits'
refused "it's=preset:lean" 'letters, digits'
refused 'x=max_split_size_mb:5' 'max_split_size_mb'
refused 'x=no_such_key:1' 'no_such_key'
refused 'lean=preset:pytorch' "cca's own"
rc=0; err=$("$bench" --cca 'a=preset:lean' --cca 'a=preset:pytorch' 2>&1 >/dev/null) || rc=$?
[ "$rc" = 2 ] && [[ "$err" == *"given twice"* ]] || fail "a label given twice: $rc '$err'"

# --alloc names a --cca label exactly, even one that begins another label:
# cca:d (a 2 MiB cap) runs out of memory filling the mixed workload, where
# cca:default (what the prefix cca:de selects) does not
if "$bench" --cca d=memory_limit_mb:2 --alloc cca:d --count-ops mixed --count 10 >/dev/null 2>&1; then
    fail "--alloc cca:d ran another allocator than cca:d"
fi
"$bench" --cca d=memory_limit_mb:2 --alloc cca:de --count-ops mixed --count 10 >/dev/null 2>&1 \
    || fail "--alloc cca:de did not run cca:default"

# 30 MiB blocks, then one of 10 MiB: a small trace with a known peak
{
    echo "Thread,Time,Action,Pointer,Size,Stream"
    t=0
    for i in 1 2 3 4; do echo "0,00:00:00.00000$t,allocate,0x10${i}0000000,31457280,0"; t=$((t + 1)); done
    echo "0,00:00:00.00000$t,free,0x1020000000,31457280,0"; t=$((t + 1))
    echo "0,00:00:00.00000$t,allocate,0x1050000000,10485760,0"; t=$((t + 1))
    for i in 1 3 4; do echo "0,00:00:00.00000$t,free,0x10${i}0000000,31457280,0"; t=$((t + 1)); done
    echo "0,00:00:00.00000$t,free,0x1050000000,10485760,0"
} > "$dir/small.csv"

out=$("$bench" --quick --reps 1 --scenario replay --traces-dir "$dir/none" --trace "$dir/small.csv" \
      --alloc cca:default --cca 'mine=max_split_size_mb:64,release_before_grow:True' --alloc cca:mine \
      --cca 'other=preset:lean' --json "$dir/out.json")
echo "$out" | sed -n '/^replay small.csv/,/^$/p'
echo "$out" | grep -q '^allocators: cca:default cca:mine$' || fail "cca:other ran, or cca:mine did not: $(echo "$out" | grep '^allocators')"
head=$(echo "$out" | grep -m1 '^  allocator .*ns/event') || fail "no per-trace table"
[[ "$head" == *"@1.05x"*"@1.10x"*"cca:mine/x"* ]] || fail "header: $head"
for a in cca:default cca:mine; do
    row=$(echo "$out" | awk -v a="$a" '/^replay small.csv/ { on = 1 } on && $1 == a { print; exit }')
    [ -n "$row" ] || fail "no $a row"
    read -r _ _ _ _ _ _ _ _ _ _ f105 f110 _ <<<"$row"
    read -r _ _ _ _ _ _ create unmap _ <<<"$row"
    [[ "$create" =~ ^[0-9.]+$ && "$unmap" =~ ^[0-9.]+$ ]] || fail "$a: driver calls '$create' '$unmap'"
    # the 10 MiB request splits the cached 30 MiB block (30 MiB is below mine's max_split_size too):
    # peak reserved is peak live, so neither device of 1.05x or 1.10x peak live runs out
    [[ "$f105" == ok && "$f110" == ok ]] || fail "$a: flags '$f105' '$f110', expected ok ok"
done

# A trace that must run out on both: a 60 MiB segment split into three 20 MiB
# blocks, two kept, then 30 MiB - the free 20 MiB piece is too small, no
# whole segment is free to release, and 60 + 30 MiB exceeds 1.10x the peak
# live of 70 MiB
{
    echo "Thread,Time,Action,Pointer,Size,Stream"
    echo "0,00:00:00.000000,allocate,0x2010000000,62914560,0"
    echo "0,00:00:00.000001,free,0x2010000000,62914560,0"
    echo "0,00:00:00.000002,allocate,0x2020000000,20971520,0"
    echo "0,00:00:00.000003,allocate,0x2030000000,20971520,0"
    echo "0,00:00:00.000004,allocate,0x2040000000,31457280,0"
    for p in 0x2020000000 0x2030000000; do echo "0,00:00:00.000005,free,$p,20971520,0"; done
    echo "0,00:00:00.000006,free,0x2040000000,31457280,0"
} > "$dir/frag.csv"
out2=$("$bench" --quick --reps 1 --scenario replay --traces-dir "$dir/none" --trace "$dir/frag.csv" --alloc cca:default)
row=$(echo "$out2" | awk '/^replay frag.csv/ { on = 1 } on && $1 == "cca:default" { print; exit }')
read -r _ _ _ _ _ _ _ _ _ _ f105 f110 _ <<<"$row"
[[ "$f105" == OOM && "$f110" == OOM ]] || fail "frag.csv: flags '$f105' '$f110', expected OOM OOM: $row"
python3 - "$dir/out.json" "$out" <<'PY' || fail "the JSON report differs from the table"
import json, sys
rows = {r["allocator"]: r for r in json.load(open(sys.argv[1]))["rows"] if r["scenario"] == "replay"}
assert set(rows) == {"cca:default", "cca:mine"}, rows.keys()
for a, r in rows.items():
    line = next(l for l in sys.argv[2].splitlines() if l.split()[:1] == [a])
    f105, f110 = line.split()[10:12]
    for flag, key in ((f105, "oom_at_1.05x"), (f110, "oom_at_1.10x")):
        assert flag == ("OOM" if r["extra"][key] > 0 else "ok"), (a, key, flag, r["extra"][key])
    create, unmap = line.split()[6:8]
    for text, key in ((create, "cuMemCreate_per_1k_events"), (unmap, "cuMemUnmap_per_1k_events")):
        assert abs(float(text) - r["extra"][key]) < 1e-9, (a, key, text, r["extra"][key])
PY
# PyTorch's own allocator: where cca-bench was built without a torch, one line
# per torch peer says why, and the JSON has a skipped entry for each; where
# it was built, neither.
built=$(python3 -c 'import json, sys; print(int(not json.load(open(sys.argv[1]))["meta"]["skipped"]))' "$dir/out.json")
if [ "$built" = 0 ]; then
    grep -q '^torch-native: skipped: ..*' <<<"$out" || fail "no 'torch-native: skipped: REASON' line"
    grep -q '^torch-expandable: skipped: ..*' <<<"$out" || fail "no 'torch-expandable: skipped: REASON' line"
    python3 - "$dir/out.json" <<'PY' || fail "the JSON's skipped entries for the torch peers"
import json, sys
skipped = {s["allocator"]: s["skipped"] for s in json.load(open(sys.argv[1]))["meta"]["skipped"]}
assert set(skipped) == {"torch-native", "torch-expandable"} and all(skipped.values()), skipped
PY
else
    ! grep -q 'skipped: ' <<<"$out" || fail "a torch peer said skipped although it was built"
fi
echo "PASS"
