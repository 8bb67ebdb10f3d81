"""cca.record_trace and cca.replay on the simulated device: a program's
recording, replayed under the default on the device it ran on, gives the
program's own reserved peak, device allocations and first out-of-memory
(event, verdict), and its peak live is the program's requested peak; the
replay engine runs in this process beside libcca, and bad input says why.
PyTorch snapshot pickles: test_replay_pickles.py and the frameworks tier."""
import ctypes
import json
import os
import random

import pytest

import cca
from cca import _lib

MiB = 1 << 20


def _a(device):
    a = ctypes.c_void_p()
    assert _lib.lib().cca_default(device, ctypes.byref(a)) == 0
    return a


def _rows(path):
    with open(path) as f:
        lines = f.read().splitlines()
    return lines[0], lines[1], [ln.split(",") for ln in lines[2:]]


def test_recording_writes_every_call(shared_device, tmp_path):
    d = shared_device
    a = _a(d)
    lib = _lib.lib()
    with cca.record_trace(tmp_path / "run%d.csv", device=d):
        p, q = ctypes.c_void_p(), ctypes.c_void_p()
        assert lib.cca_malloc(a, ctypes.byref(p), 1000, None) == 0
        assert lib.cca_malloc(a, ctypes.byref(q), 5 * MiB, None) == 0
        first, second = p.value, q.value
        assert lib.cca_free(a, p) == 0
        assert lib.cca_malloc(a, ctypes.byref(p), 200 << 30, None) != 0    # refused: written too
        assert lib.cca_free(a, q) == 0
    version, header, rows = _rows(tmp_path / ("run%d.csv" % d))
    assert version == "#cca-trace 1 device=%d device_memory=%d" % (d, 80 << 30)
    assert header == "Thread,Time,Action,Pointer,Size,Stream"
    assert [(r[2], r[4]) for r in rows] == [("allocate", "1000"), ("allocate", str(5 * MiB)), ("free", "1000"),
                                            ("allocate failure", str(200 << 30)), ("free", str(5 * MiB))]
    assert [r[3] for r in rows] == [hex(first), hex(second), hex(first), "(nil)", hex(second)]
    assert all(r[0] == "0" and r[5] == "0" for r in rows)


def test_a_path_cca_cannot_write_is_an_oserror(shared_device):
    d = shared_device
    with pytest.raises(OSError, match="cannot write /nonexistent/x.csv"):
        cca.record_trace("/nonexistent/x.csv", device=d)


def _program(device, seed, steps=4000):
    """A mixed workload on one stream with refusals on a small device: the
    allocator's figures afterwards, and how many requests it refused."""
    lib = _lib.lib()
    a = _a(device)
    rng = random.Random(seed)
    live, refused = [], 0
    for _ in range(steps):
        if live and rng.random() < 0.45:
            lib.cca_free(a, live.pop(rng.randrange(len(live))))
            continue
        p = ctypes.c_void_p()
        size = int(2 ** rng.uniform(9, 25)) + rng.randrange(4096)
        if lib.cca_malloc(a, ctypes.byref(p), size, None) == 0:
            live.append(p)
        else:
            refused += 1
    stats = cca.memory_stats(device)
    for p in live:
        lib.cca_free(a, p)
    return stats, refused


def test_the_replay_of_a_recording_reproduces_the_program(sim, tmp_path):
    d = sim.fresh_device(192 * MiB)
    path = tmp_path / "prog.csv"
    rec = cca.record_trace(path, device=d)
    stats, refused = _program(d, 11)
    rec.stop()
    assert refused > 0, "the device is small enough to refuse some"
    _, _, rows = _rows(path)
    first_failure = next(i for i, r in enumerate(rows) if r[2] == "allocate failure")
    out = cca.replay(path, reserve=0)                 # the device from the recording's version line
    assert out["version"] == 1 and out["reserve_bytes"] == 0 and out["device_memory_bytes"] is None
    (t,) = out["traces"]
    assert t["device"] == d and t["events"] == len(rows)
    by = {c["label"]: c for c in t["configurations"]}
    assert list(by) == ["pytorch", "expandable", "lean"]
    c = by["pytorch"]
    assert c["conf"] == ""
    assert c["peak_reserved_bytes"] == stats["reserved_bytes.all.peak"]
    assert c["num_device_alloc"] == stats["num_device_alloc"]
    assert c["peak_live_bytes"] == stats["requested_bytes.all.peak"]
    assert c["fits"] is False and c["oom_event"] == first_failure
    assert c["verdict"] in ("exhausted", "fragmented") and c["advice"]
    assert c["min_device_bytes"] > 192 * MiB
    # the largest request refused was served on min_device_bytes, and the run fits there
    again = cca.replay(path, device_memory=c["min_device_bytes"], reserve=0, configs={"mine": ""}, only=True)
    (m,) = again["traces"][0]["configurations"]
    assert m["label"] == "mine" and m["fits"] is True and m["oom_event"] is None and m["verdict"] is None
    below = cca.replay(path, device_memory=c["min_device_bytes"] - 2 * MiB, reserve=0, configs={"mine": ""},
                       only=True)
    assert below["traces"][0]["configurations"][0]["fits"] is False


@pytest.mark.parametrize("kw, says", [
    ({"device_memory": "24 GB?"}, "--device-memory: '24 GB?' is not a size"),
    ({"configs": {"x": "max_split_size_mb:1"}}, "--cca x: max_split_size_mb"),
    ({"reserve": -1}, "reserve is negative"),
])
def test_bad_input_says_why(shared_device, tmp_path, kw, says):
    d = shared_device
    path = tmp_path / "t.csv"
    with cca.record_trace(path, device=d):
        pass
    with pytest.raises((cca.ReplayError, ValueError), match=says.replace("?", r"\?")):
        cca.replay(path, **kw)


def test_unreadable_traces_are_errors(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    with pytest.raises(cca.ReplayError, match="header lacks column Action"):
        cca.replay(tmp_path / "notes.txt")
    with pytest.raises(cca.ReplayError, match="No such file"):
        cca.replay(tmp_path / "missing.csv")
    (tmp_path / "new.csv").write_text("#cca-trace 9 device=0\nThread,Time,Action,Pointer,Size,Stream\n")
    with pytest.raises(cca.ReplayError, match="trace layout 9 is newer than this reader's 1"):
        cca.replay(tmp_path / "new.csv")


def test_the_engine_exports_only_its_own_names():
    from cca import replays
    lib = replays._replay_library()
    path = lib._name
    out = os.popen("nm -D --defined-only '%s'" % path).read().split("\n")
    names = sorted({ln.split()[-1] for ln in out if ln.strip() and ln.split()[1] in "TtDdBbRrWwVv"})
    assert names and all(n.startswith("cca_replay_") for n in names), names


def test_svg_is_well_formed_whatever_the_names(tmp_path):
    """Labels and file names with markup, control characters and bytes that
    are not UTF-8 still give an SVG an XML parser reads."""
    import xml.etree.ElementTree as ET
    name = os.fsdecode(b"r\xff<&>\"un.csv")
    path = tmp_path / name
    path.write_text("Thread,Time,Action,Pointer,Size,Stream\n0,00:00:00.000000,allocate,0x10,1048576,0\n"
                    "0,00:00:00.000001,free,0x10,1048576,0\n")
    svg = tmp_path / "w.svg"
    out = cca.replay(str(path), device_memory="1GiB", reserve=0, configs={"a\x01<b>&\"c": ""}, svg=str(svg))
    assert out["traces"][0]["file"] == str(path)                         # the bytes back, as surrogates
    root = ET.parse(str(svg)).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    labels = {e.get("data-conf") for e in root.iter() if e.get("data-conf")}
    assert labels == {"pytorch", "expandable", "lean", "a?<b>&\"c"}
