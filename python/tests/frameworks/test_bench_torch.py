"""PyTorch's own allocator as cca-bench's peer (bench/peers/), built by
scripts/torch-sim against the torch of the environment:

- torch-peer-check: a stream use recorded as torch records one (a DataPtr
  with the allocator's own deleter, recordStream) delays the block's reuse;
- the reference: cca's default and torch-native give the same peak
  reserved bytes and device allocations (cudaMalloc calls) on every shared
  trace and multistream workload, and preset:lean differs from torch-native
  on at least one, so the comparison tells configurations apart.

The replays need the shared traces (CCA_TRACES, default ../shared/traces
beside the checkout): without them the multistream workloads alone are
compared, saying so."""
import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TRACES = os.environ.get("CCA_TRACES", os.path.join(ROOT, "..", "shared", "traces"))
# What must be the same: peak reserved, device calls and events, and the
# out-of-memory behaviour on small devices (the smallest device that runs
# the workload, OOMs on 1.05x and 1.10x peak live), where the release and
# retry rules show.
FIGURES = ("peak_reserved_bytes", "cudaMalloc_per_1k_events", "cudaFree_per_1k_events", "events", "ooms",
           "oom_at_1.05x", "oom_at_1.10x", "min_capacity_over_live")
CALLS = ("cudaMalloc", "cudaFree", "cudaEventRecord")
ALLOCS = ("cca:default", "cca:lean", "torch-native")


def test_a_recorded_use_delays_reuse():
    r = subprocess.run(["torch-peer-check"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("ok  ") == 6 and "0 failed" in r.stdout


def run_bench(tmp, scenarios, extra=()):
    out = str(tmp / "reference.json")
    r = subprocess.run(["cca-bench"] + scenarios + ["--reps", "1"] + list(extra) +
                       [a for al in ALLOCS for a in ("--alloc", al)] + ["--json", out],
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    by = {}
    for row in json.load(open(out))["rows"]:
        if row["scenario"] in ("replay", "multistream"):
            by.setdefault(row["case"], {})[row["allocator"]] = row
    return by


def compare(by, cases):
    assert sorted(by) == sorted(cases), "the workloads replayed"
    differ = {}
    for case in cases:
        assert set(by[case]) == set(ALLOCS), (case, sorted(by[case]))
        t, c = by[case]["torch-native"], by[case]["cca:default"]
        assert t["error"] is None and c["error"] is None, (case, t["error"], c["error"])
        d = {k: (t["extra"][k], c["extra"][k]) for k in FIGURES if t["extra"][k] != c["extra"][k]}
        d.update({k: (t["calls_per_op"][k], c["calls_per_op"][k]) for k in CALLS
                  if t["calls_per_op"][k] != c["calls_per_op"][k]})
        if d:
            differ[case] = d
    assert differ == {}, "torch-native against cca:default (torch's, cca's)"
    return [c for c in cases if any(by[c]["cca:lean"]["extra"][k] != by[c]["torch-native"]["extra"][k]
                                    for k in FIGURES)]


def test_torch_native_is_cca_default_on_every_shared_trace(tmp_path):
    traces = sorted(f for f in os.listdir(TRACES) if f.endswith(".csv")) if os.path.isdir(TRACES) else []
    if not traces:
        pytest.skip("no shared traces in %s (CCA_TRACES): the multistream workloads are compared alone" % TRACES)
    by = run_bench(tmp_path, ["--scenario", "replay"], ["--traces-dir", TRACES])
    lean_differs = compare(by, traces)
    assert lean_differs, "preset:lean matches torch-native on every trace: the comparison could not tell them apart"


def test_torch_native_is_cca_default_on_the_multistream_workloads(tmp_path):
    by = run_bench(tmp_path, ["--scenario", "multistream"])
    lean_differs = compare(by, ["multistream-offload", "multistream-comm", "multistream-pipeline"])
    assert lean_differs, "preset:lean matches torch-native on every workload"
