#!/usr/bin/env bash
# cca-bench's multistream scenario: its three synthetic workloads (weights
# prefetched on four streams; gradient buckets on two communication
# streams; ten streams: weights prefetched on eight, activations offloaded
# and brought back on one), the same every run, replayed with every record_stream reaching
# cca (one event recorded per use on the compute stream), cca_check clean,
# in the table and the JSON report with their own summary.
# Usage: test_bench_multistream.sh PATH/cca-bench
set -euo pipefail
json=$(mktemp)
trap 'rm -f "$json"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
out=$("$1" --quick --reps 1 --scenario multistream --alloc cca:default --json "$json")
echo "$out" | sed -n '/== multistream/,/^== goals/p' | head -30
echo "$out" | grep -q 'CHECK FAILED' && fail "cca_check failed"
echo "$out" | grep -q '^replay multistream-offload: 864 events, .* 5 stream(s)' || fail "offload workload"
echo "$out" | grep -q '^replay multistream-comm: 652 events, .* 3 stream(s)' || fail "comm workload"
echo "$out" | grep -q '^replay multistream-pipeline: 2592 events, .* 10 stream(s)' || fail "pipeline workload"
echo "$out" | grep -q '^multistream summary over 3 traces' || fail "no summary"
python3 - "$json" <<'PY' || fail "the JSON report"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
ms = {r["case"]: r for r in rows if r["scenario"] == "multistream" and r["allocator"] == "cca:default"}
assert set(ms) == {"multistream-offload", "multistream-comm", "multistream-pipeline"}, ms.keys()
# 3 steps x 48 weight uses (offload); 3 steps x 24 bucket uses (comm);
# 3 steps x 24 layers x (8 weight uses + 2 activation copies) (pipeline): one event each
for case, uses in (("multistream-offload", 144), ("multistream-comm", 72), ("multistream-pipeline", 720)):
    r = ms[case]
    assert r["extra"]["check_failed"] == 0 and r["extra"]["ooms"] == 0, r["extra"]
    got = r["calls_per_op"]["cudaEventRecord"] * r["extra"]["events"]
    assert round(got) == uses, (case, got, uses)
    assert r["extra"]["min_capacity_over_live"] >= 1.0
summ = [r for r in rows if r["scenario"] == "multistream-summary"]
assert len(summ) == 1 and summ[0]["extra"]["traces"] == 3, summ
assert not [r for r in rows if r["scenario"] in ("replay", "replay-summary")], "the shared traces' summary is apart"
PY
echo "PASS"
