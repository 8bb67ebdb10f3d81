"""A pickle written by real torch's own allocator (the train program: an MLP
and a transformer layer, no record_stream), read by cca-replay's engine:
converted to one CSV per device, and replayed under PyTorch's rules on the
device torch ran on, it gives that torch run's own reserved peak and
device allocations."""
import os
import shutil
import subprocess

import cca


def test_torch_snapshot_replays_to_torchs_own_figures(runs, tmp_path):
    r = runs("train", "torch")
    pickle_path = r["served"]["pickle"]
    made = cca.to_csv(pickle_path, str(tmp_path))
    stem = os.path.splitext(os.path.basename(pickle_path))[0]
    assert made == [os.path.join(str(tmp_path), stem + ".dev0.csv")]
    with open(made[0]) as f:
        head = [next(f) for _ in range(2)]
    assert head == ["#cca-trace 1 device=0 source=torch-snapshot\n", "Thread,Time,Action,Pointer,Size,Stream\n"]
    for trace in (pickle_path, made[0]):              # the pickle read directly, and its CSV
        out = cca.replay(trace, device_memory=r["served"]["device_total"], reserve=0,
                         configs={"torch-rules": ""}, only=True)
        (t,) = out["traces"]
        (c,) = t["configurations"]
        assert t["device"] == 0
        assert c["fits"] is True
        assert c["peak_reserved_bytes"] == r["stats"]["reserved_bytes.all.peak"]
        assert c["num_device_alloc"] == r["stats"]["num_device_alloc"]
        assert c["peak_live_bytes"] == r["stats"]["requested_bytes.all.peak"]


def test_pip_install_puts_cca_replay_on_the_path(runs):
    """scripts/torch-sim pip-installs cca into its environment, as a user would."""
    exe = shutil.which("cca-replay")
    assert exe == os.path.join(os.environ["VIRTUAL_ENV"], "bin", "cca-replay"), exe
    r = runs("train", "torch")
    p = subprocess.run([exe, r["served"]["pickle"], "--device-memory", str(r["served"]["device_total"]),
                        "--reserve", "0"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "pytorch" in p.stdout and "expandable" in p.stdout and "lean" in p.stdout
    bench = os.path.join(os.environ["VIRTUAL_ENV"], "bin", "cca-bench")   # installed too, on the simulated device
    p = subprocess.run([bench, "--scenario", "pingpong", "--quick", "--alloc", "cca:default"], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "== pingpong" in p.stdout and "cca:default" in p.stdout
