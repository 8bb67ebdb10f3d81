"""Snapshot pickles through cca-replay's engine: cca's own history
(cca.dump_snapshot, torch 2.15's layout) converts to one CSV per device,
blocks allocated before recording began come first, and the replay under
the default on the same device gives the program's reserved peak, device
allocations and refusals; a pickle that would call code is refused and
runs nothing. (Real torch's pickles: frameworks/test_torch_replay.py; the
layouts and the unpickler opcode by opcode: tests/test_snapshot_csv.c.)"""
import ctypes
import os
import pickle
import random

import pytest

import cca
from cca import _lib

MiB = 1 << 20


def _a(device):
    a = ctypes.c_void_p()
    assert _lib.lib().cca_default(device, ctypes.byref(a)) == 0
    return a


def test_cca_history_pickle_converts_and_replays_to_the_program(sim, tmp_path):
    d = sim.fresh_device(160 * MiB)
    lib, a = _lib.lib(), _a(d)
    before = [ctypes.c_void_p() for _ in range(3)]
    for i, p in enumerate(before):                    # alive when recording begins
        assert lib.cca_malloc(a, ctypes.byref(p), (i + 1) * 3 * MiB, None) == 0
    cca.record_history(True, device=d)
    try:
        rng = random.Random(3)
        live, refused = [before[0], before[2]], 0
        assert lib.cca_free(a, before[1]) == 0        # freed in the history without its allocation
        for _ in range(3000):
            if live and rng.random() < 0.45:
                assert lib.cca_free(a, live.pop(rng.randrange(len(live)))) == 0
                continue
            p = ctypes.c_void_p()
            if lib.cca_malloc(a, ctypes.byref(p), int(2 ** rng.uniform(9, 24.5)), None) == 0:
                live.append(p)
            else:
                refused += 1
        stats = cca.memory_stats(d)
        path = tmp_path / "mine.pickle"
        cca.dump_snapshot(str(path))
    finally:
        cca.record_history(None, device=d)
    for p in live:
        lib.cca_free(a, p)
    assert refused > 0
    made = cca.to_csv(path, str(tmp_path))
    csv = str(tmp_path / ("mine.dev%d.csv" % d))
    assert csv in made
    with open(csv) as f:
        lines = f.read().splitlines()
    assert lines[0] == "#cca-trace 1 device=%d source=torch-snapshot" % d
    first = [ln.split(",") for ln in lines[2:5]]
    assert [(r[1], r[2], int(r[4])) for r in first] == [("00:00:00.000000", "allocate", (i + 1) * 3 * MiB)
                                                        for i in range(3)], "the three alive first, by address"
    assert sum(ln.split(",")[2] == "allocate failure" for ln in lines[2:]) == refused
    for trace in (str(path), csv):
        out = cca.replay(trace, device_memory=160 * MiB, reserve=0, configs={"default": ""}, only=True)
        t = next(t for t in out["traces"] if t["device"] == d)
        (c,) = t["configurations"]
        assert c["peak_reserved_bytes"] == stats["reserved_bytes.all.peak"]
        assert c["num_device_alloc"] == stats["num_device_alloc"]
        assert c["fits"] is False and c["verdict"] in ("exhausted", "fragmented")


class _Evil:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, ("touch " + self.path,))


@pytest.mark.parametrize("wrap", [lambda e: e, lambda e: {"segments": [], "device_traces": [[{"action": e}]]}])
def test_a_pickle_that_would_call_code_is_refused_and_runs_nothing(tmp_path, wrap):
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.pickle"
    evil.write_bytes(pickle.dumps(wrap(_Evil(str(marker))), protocol=4))
    with pytest.raises(cca.ReplayError, match="refused: the pickle would call code"):
        cca.to_csv(evil, str(tmp_path))
    with pytest.raises(cca.ReplayError, match="refused"):
        cca.replay(evil)
    assert not marker.exists()
    assert sorted(os.listdir(tmp_path)) == ["evil.pickle"]


def test_a_pickle_that_is_no_snapshot_says_so(tmp_path):
    p = tmp_path / "list.pickle"
    p.write_bytes(pickle.dumps([1, 2, 3]))
    with pytest.raises(cca.ReplayError, match="not a PyTorch memory snapshot"):
        cca.replay(p)
