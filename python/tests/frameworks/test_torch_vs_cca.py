"""The same programs under torch's own CUDACachingAllocator and under cca
(cca.allocators.torch.install()), each in its own process, on the simulated
device (programs.py says what each program does):

- default configuration: every figure of torch.cuda.memory_stats() - all
  the keys the running torch reports, read from torch's run - is cca's too,
  and the allocation history (action, size, stream, in order) is the same;
- expandable segments: cca's peak reserved is at most torch's;
- cca served the cca run: its num_device_alloc is the simulator's count of
  cudaMalloc calls in that process (cuMemMap with expandable segments)."""
import os
import subprocess
import sys

import pytest

PROGRAMS = ["streams", "train"]


def differing(a, b):
    return sorted(k for k in a if a[k] != b.get(k))


def test_the_tier_runs_real_torch_on_the_simulated_device():
    r = subprocess.run([sys.executable, "-c", "import torch; print(torch.ones(4, device='cuda').device); "
                        "print(torch.cuda.get_device_name()); print(torch.__version__)"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    assert lines[0] == "cuda:0"
    assert lines[1] == "cca simulated device 0"
    assert lines[2].split("+")[0] == os.environ["CCA_TORCH_SIM_TORCH"]


def test_torch_is_deterministic_on_the_streams_program(runs):
    """Two runs of torch itself agree on every figure and event: the
    comparisons below can be exact."""
    a, b = runs("streams", "torch"), runs("streams", "torch", repeat=1)
    assert differing(a["stats"], b["stats"]) == []
    assert a["trace"] == b["trace"]


@pytest.mark.parametrize("program", PROGRAMS)
def test_memory_stats_are_torchs(runs, program):
    t, c = runs(program, "torch"), runs(program, "cca")
    assert t["torch"] == c["torch"]
    keys = sorted(t["stats"])
    assert len(keys) >= 122 and "requested_bytes.all.current" in keys
    unstable = []
    if program == "train":                            # autograd's worker thread may reorder frees between runs
        unstable = differing(t["stats"], runs(program, "torch", repeat=1)["stats"])
        if unstable:
            print("torch's own figures differ between two runs of %s: %s (not compared)" % (program, unstable))
    missing = [k for k in keys if k not in c["stats"]]
    assert missing == [], "keys the running torch reports and cca lacks"
    extra = [k for k in c["stats"] if k not in t["stats"]]
    assert extra == [], "keys cca reports that the running torch does not"
    wrong = {k: (t["stats"][k], c["stats"][k]) for k in keys if k not in unstable and t["stats"][k] != c["stats"][k]}
    assert wrong == {}, "figures that differ (torch's, cca's)"
    assert len(unstable) <= 4 and all(k.startswith("inactive_split") for k in unstable), unstable


@pytest.mark.parametrize("program", PROGRAMS)
def test_the_history_is_torchs(runs, program):
    t, c = runs(program, "torch"), runs(program, "cca")
    assert len(t["trace"]) > 100
    if program == "train" and t["trace"] != runs(program, "torch", repeat=1)["trace"]:
        pytest.skip("torch's own history differs between two runs of the training program")
    for i, (x, y) in enumerate(zip(t["trace"], c["trace"])):
        assert x == y, "event %d: torch %s, cca %s" % (i, x, y)
    assert len(t["trace"]) == len(c["trace"])


@pytest.mark.parametrize("program", PROGRAMS)
def test_cca_served_the_cca_run(runs, program):
    c, t = runs(program, "cca"), runs(program, "torch")
    assert c["served"]["backend"] == "pluggable" and t["served"]["backend"] == "native"
    assert c["served"]["cca_segments"] > 0, "cca's own snapshot holds the run's segments"
    assert c["calls_total"]["cudaMalloc"] > 0
    assert c["stats"]["num_device_alloc"] == c["calls_total"]["cudaMalloc"]
    assert c["stats"]["num_device_free"] == c["calls_total"]["cudaFree"]
    assert t["stats"]["num_device_alloc"] == t["calls_total"]["cudaMalloc"]


@pytest.mark.parametrize("program", PROGRAMS)
def test_expandable_segments_reserve_at_most_torchs(runs, program):
    t, c = runs(program, "torch", expandable=True), runs(program, "cca", expandable=True)
    assert t["calls_total"]["cudaMalloc"] == 0 and t["calls_total"]["cuMemCreate"] > 0, "torch's own expandable segments"
    assert c["calls_total"]["cudaMalloc"] == 0, "cca's expandable segments map, never cudaMalloc"
    assert c["stats"]["num_device_alloc"] == c["calls_total"]["cuMemMap"] > 0
    peak_t, peak_c = t["stats"]["reserved_bytes.all.peak"], c["stats"]["reserved_bytes.all.peak"]
    print("%s, expandable segments: peak reserved torch %d, cca %d" % (program, peak_t, peak_c))
    assert 0 < peak_c <= peak_t
    assert t["stats"]["allocated_bytes.all.peak"] == c["stats"]["allocated_bytes.all.peak"]
    assert t["stats"]["requested_bytes.all.peak"] == c["stats"]["requested_bytes.all.peak"]
