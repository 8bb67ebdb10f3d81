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
FIGURES = ("peak_reserved_bytes", "cudaMalloc_per_1k_events", "cudaFree_per_1k_events", "events", "ooms")


def test_a_recorded_use_delays_reuse():
    r = subprocess.run(["torch-peer-check"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("ok  ") == 6 and "0 failed" in r.stdout


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("bench") / "reference.json")
    scenarios = ["--scenario", "multistream"]
    have_traces = os.path.isdir(TRACES) and any(f.endswith(".csv") for f in os.listdir(TRACES))
    if have_traces:
        scenarios = ["--scenario", "replay"] + scenarios
    else:
        print("no shared traces in %s: the multistream workloads only" % TRACES)
    r = subprocess.run(["cca-bench"] + scenarios + ["--reps", "1", "--traces-dir", TRACES, "--alloc", "cca:default",
                        "--alloc", "cca:lean", "--alloc", "torch-native", "--json", out],
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    rows = json.load(open(out))["rows"]
    by = {}
    for row in rows:
        if row["scenario"] in ("replay", "multistream") and row.get("extra"):
            by.setdefault(row["case"], {})[row["allocator"]] = row
    return by, have_traces


def test_torch_native_is_cca_default_on_every_workload(bench):
    by, have_traces = bench
    cases = [c for c in by if "torch-native" in by[c] and "cca:default" in by[c]]
    assert len(cases) >= (33 + 3 if have_traces else 3), sorted(by)
    differ = {}
    for case in cases:
        t, c = by[case]["torch-native"], by[case]["cca:default"]
        assert t["error"] is None and c["error"] is None, (case, t["error"], c["error"])
        d = {k: (t["extra"][k], c["extra"][k]) for k in FIGURES if t["extra"][k] != c["extra"][k]}
        if d:
            differ[case] = d
    assert differ == {}, "torch-native against cca:default (torch's, cca's)"


def test_lean_differs_from_torch_native_somewhere(bench):
    by, _ = bench
    differs = [c for c in by if "cca:lean" in by[c] and "torch-native" in by[c] and
               any(by[c]["cca:lean"]["extra"][k] != by[c]["torch-native"]["extra"][k] for k in FIGURES)]
    assert differs, "preset:lean matches torch-native everywhere: the comparison could not tell them apart"
