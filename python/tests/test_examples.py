"""examples/python/memory_tools.py runs (CuPy from the stand-in, on the
simulated device) and prints the figures of its known allocations."""
import os
import pickle
import subprocess
import sys

from test_history import viewer_reads

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def test_memory_tools_example(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), os.path.join(HERE, "standins")])
    snap = str(tmp_path / "snap.pickle")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", "memory_tools.py"), snap],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert "watch: allocated rose above 48 MiB (now 64 MiB)" in lines
    assert "watch: allocated fell to or below 48 MiB (now 36 MiB)" in lines
    rows = {ln.split()[0]: ln.split() for ln in lines if ln.split() and ln.split()[0] in ("step", "load", "compute")}
    assert rows["step"][2:4] == ["68.00", "MiB"], rows                 # peak allocated: 32 + 32 + 4 MiB
    assert rows["load"][2:4] == ["32.00", "MiB"]
    assert rows["compute"][-2:] == ["4.00", "MiB"]                     # left allocated: the result
    assert "held by inputs      32 MiB" in lines
    assert "held by workspace    4 MiB" in lines
    assert any(ln.startswith("cca ") and "allocated 36.00 MiB" in ln for ln in lines), "a monitor line"
    assert any(ln.startswith("history: 17 events (7 alloc, 2 free_requested, 4 segment_alloc)") for ln in lines)
    with open(snap, "rb") as f:
        viewer_reads(pickle.load(f))
