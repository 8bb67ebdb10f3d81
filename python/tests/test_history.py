"""cca.record_history, cca.history, cca.snapshot and cca.dump_snapshot on
the simulated device: the events recorded, exact; the pickle in torch's
layout, checked against every field torch's own reader
(torch/cuda/_memory_viz.py: stats, trace, segments, memory, compare) reads
- the facts listed in viewer_reads() - and replayed: the allocations the
history leaves live are exactly the snapshot's allocated blocks."""
import ctypes
import pickle

import pytest

import cca
from cca import _lib
import cmem
from cmem import _alloc, c_free, c_malloc, run_thread_to_its_end

MiB = 1 << 20
ACTIONS = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "oom", "snapshot"}


@pytest.fixture
def recording(shared_device):
    d = shared_device
    cca.empty_cache()
    cca.record_history(True, max_entries=10000, device=d)
    yield d
    cca.record_history(False, device=d)


def viewer_reads(data):
    """What torch's _memory_viz reads, as facts from its source, asserted
    field by field with the types its code needs."""
    assert isinstance(data, dict)
    assert isinstance(data["segments"], list) and isinstance(data["device_traces"], list)
    for seg in data["segments"]:
        # segsum: total_size, stream, blocks' state and size; the active
        # ones' requested_size (with 'frames' present); blocks fill the segment
        for k in ("address", "total_size", "allocated_size", "stream"):
            assert isinstance(seg[k], int), k
        total = 0
        for b in seg["blocks"]:
            assert isinstance(b["size"], int) and b["size"] > 0
            assert b["state"] in ("active_allocated", "active_pending_free", "inactive")
            assert isinstance(b["frames"], list)                       # _block_extra: new format
            for f in b["frames"]:
                assert {"filename", "line", "name"} <= set(f)
            if b["state"] == "active_allocated":
                assert 0 < b["requested_size"] <= b["size"]
            total += b["size"]
        assert total == seg["total_size"], "segsum asserts free + allocated == total_size"
        assert seg["allocated_size"] == sum(b["size"] for b in seg["blocks"] if b["state"] == "active_allocated")
    for trace in data["device_traces"]:
        assert isinstance(trace, list)
        for e in trace:
            assert e["action"] in ACTIONS
            assert isinstance(e["size"], int)
            if e["action"] == "oom":
                assert isinstance(e["device_free"], int)               # trace(): device_free, size
            else:
                assert isinstance(e["addr"], int)                      # trace(): addr, size
            assert isinstance(e["time_us"], int) and isinstance(e["stream"], int)
            assert e["action"] == "snapshot" or isinstance(e["frames"], list)     # torch's snapshot marks have none


def replay(trace, segments, device):
    """The history played forward from an empty device: what it leaves
    allocated and reserved equals the snapshot's."""
    live, segs, requested = {}, {}, set()
    for e in trace:
        a = e["action"]
        if a == "alloc":
            assert e["addr"] not in live, "allocated twice without a free"
            assert any(s <= e["addr"] < s + n for s, n in segs.items()), "inside a recorded segment"
            live[e["addr"]] = e["size"]
        elif a == "free_requested":
            assert live.get(e["addr"]) == e["size"]
            requested.add(e["addr"])
        elif a == "free_completed":
            assert live.pop(e["addr"]) == e["size"]
            requested.discard(e["addr"])
        elif a == "segment_alloc":
            segs[e["addr"]] = e["size"]
        elif a == "segment_free":
            assert segs.pop(e["addr"]) == e["size"]
    mine = [s for s in segments if s["device"] == device]
    assert segs == {s["address"]: s["total_size"] for s in mine}
    blocks = [b for s in mine for b in s["blocks"]]
    assert {a: n for a, n in live.items() if a not in requested} == \
        {b["address"]: b["requested_size"] for b in blocks if b["state"] == "active_allocated"}
    assert requested == {b["address"] for b in blocks if b["state"] == "active_pending_free"}


def test_events_recorded_exactly(recording):
    d = recording
    p = c_malloc(d, 1000)
    with cca.tag("weights"):
        q = c_malloc(d, 5 * MiB)
    c_free(d, p)
    h = cca.history(d)
    assert [e["action"] for e in h] == ["segment_alloc", "alloc", "segment_alloc", "alloc", "free_requested",
                                        "free_completed"]
    assert (h[0]["addr"], h[0]["size"]) == (p, 2 * MiB)
    assert (h[1]["addr"], h[1]["size"], "tag" in h[1]) == (p, 1000, False)
    assert (h[3]["addr"], h[3]["size"], h[3]["tag"]) == (q, 5 * MiB, "weights")
    assert (h[4]["addr"], h[4]["size"]) == (p, 1000)
    assert all(e["stream"] == 0 for e in h)
    # the Python frames of each call, innermost first (context="all": frees' too); a
    # call's segment and completion events carry the frames of the call that made them
    here = {"name": "test_events_recorded_exactly", "filename": __file__}
    alloc_at = {"name": "c_malloc", "filename": cmem.__file__, "line": 17}
    free_at = {"name": "c_free", "filename": cmem.__file__, "line": 22}
    assert h[1]["frames"][0] == alloc_at and {**h[1]["frames"][1], "line": 0} == {**here, "line": 0}
    assert h[1]["frames"][1]["line"] == h[3]["frames"][1]["line"] - 2
    assert h[0]["frames"] == h[1]["frames"] and h[2]["frames"] == h[3]["frames"]
    assert h[4]["frames"][0] == free_at and h[5]["frames"] == h[4]["frames"]
    assert [e["compile_context"] for e in h] == ["N/A"] * 6 and {e["pool_id"] for e in h} == {(0, 0)}
    assert [e["time_us"] for e in h] == sorted(e["time_us"] for e in h)
    c_free(d, q)
    cca.empty_cache()
    h = cca.history(d)
    assert [e["action"] for e in h[-4:]] == ["free_requested", "free_completed", "segment_free", "segment_free"]
    assert sorted((e["addr"], e["size"]) for e in h[-2:]) == sorted([(p, 2 * MiB), (q, h[2]["size"])])


def test_snapshot_in_torchs_layout_read_and_replayed(recording, tmp_path, sim):
    d = recording
    lib = sim.lib
    s2 = ctypes.c_void_p()
    cur = ctypes.c_int()
    lib.cudaGetDevice(ctypes.byref(cur))
    lib.cudaSetDevice(d)                              # a stream of the allocator's device
    assert lib.cudaStreamCreate(ctypes.byref(s2)) == 0
    lib.cudaSetDevice(cur.value)
    ptrs = [c_malloc(d, n) for n in (512, 3000, 1 * MiB + 1, 7 * MiB, 40 * MiB)]
    on_s2 = c_malloc(d, 3 * MiB, s2)
    pending = c_malloc(d, 2 * MiB)
    assert _lib.lib().cca_record_stream(_alloc(d), ctypes.c_void_p(pending), s2) == 0
    lib.cca_sim_stream_hold.argtypes = [ctypes.c_void_p]
    lib.cca_sim_stream_release.argtypes = [ctypes.c_void_p]
    lib.cca_sim_stream_hold(s2)
    c_free(d, pending)                                # active_pending_free until s2 runs
    c_free(d, ptrs[1])
    c_free(d, ptrs[3])
    path = tmp_path / "snap.pickle"
    cca.dump_snapshot(str(path))
    with open(path, "rb") as f:
        assert f.read(2) == b"\x80\x04", "pickle protocol 4: torch's web viewer reads no later one"
        f.seek(0)
        data = pickle.load(f)
    assert set(data) == {"segments", "device_traces", "allocator_settings", "external_annotations", "host_segments",
                         "host_traces"}, "torch 2.15's keys"
    assert data["external_annotations"] == data["host_segments"] == data["host_traces"] == []
    assert {s["segment_pool_id"] for s in data["segments"]} == {(0, 0)}, "a tuple, as torch's"
    viewer_reads(data)
    assert len(data["device_traces"]) >= d + 1
    trace = data["device_traces"][d]
    after = cca.history(d)
    assert after[:-1] == trace, "the history as the snapshot had it"
    assert after[-1]["action"] == "snapshot" and "frames" not in after[-1], "and the snapshot's mark, as torch's"
    assert after[-1]["size"] == cca.memory_allocated(d) and after[-1]["addr"] == 0
    assert [e["action"] for e in trace].count("free_completed") == 2, "the pending free has not completed"
    states = [b["state"] for s in data["segments"] if s["device"] == d for b in s["blocks"]]
    assert "active_pending_free" in states
    replay(trace, data["segments"], d)
    settings = data["allocator_settings"]
    assert settings["max_split_size"] == -1 and settings["expandable_segments"] is False
    assert isinstance(settings["PYTORCH_CUDA_ALLOC_CONF"], str)
    assert set(settings["roundup_power2_divisions"]) == {str(1 << i) for i in range(16)}

    lib.cca_sim_stream_release(s2)
    last = c_malloc(d, 100)                           # processes the completed event
    trace = cca.history(d)
    done = [e for e in trace if e["action"] == "free_completed" and e["addr"] == pending]
    assert len(done) == 1 and done[0]["size"] == 2 * MiB, "the request's size at completion"
    for p in (ptrs[0], ptrs[2], ptrs[4], on_s2, last):
        c_free(d, p)
    cca.empty_cache()
    data = cca.snapshot()
    viewer_reads(data)
    replay(data["device_traces"][d], data["segments"], d)
    assert lib.cudaStreamDestroy(s2) == 0


def test_oom_entry(small_device):
    d = small_device
    cca.record_history(True, device=d)
    try:
        p = ctypes.c_void_p()
        assert _lib.lib().cca_malloc(_alloc(d), ctypes.byref(p), 200 * MiB, None) != 0
        r = cca.last_oom(d)
        e = cca.history(d)[-1]
        assert (e["action"], e["size"], e["device_free"]) == ("oom", 200 * MiB, r.device_free)
        viewer_reads(cca.snapshot())
    finally:
        cca.record_history(False, device=d)


def test_bound_all_devices_and_bad_arguments(shared_device):
    d = shared_device
    cca.record_history(True, max_entries=3)           # every device, those made later too
    try:
        ptrs = [c_malloc(d, 4096) for _ in range(4)]
        h = cca.history(d)
        assert [(e["action"], e["addr"]) for e in h] == [("alloc", p) for p in ptrs[1:]], "the newest 3"
        for p in ptrs:
            c_free(d, p)
    finally:
        cca.record_history(False)
    assert cca.history(d) == []
    for bad, exc in ((0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError)):
        with pytest.raises(exc):
            cca.record_history(True, max_entries=bad)
    for bad in ({"enabled": "yes"}, {"context": "some"}, {"stacks": "cpp"}, {"skip_actions": ["allocs"]}):
        with pytest.raises(ValueError):
            cca.record_history(**bad)
    with pytest.raises(TypeError):
        cca.record_history(skip_actions="alloc")
    cca.record_history("all", max_entries=5, device=d)   # torch's spellings
    cca.record_history(None, device=d)
    assert cca.history(d) == []


def test_snapshot_is_one_moment_after_a_thread_exits(recording, sim):
    """A thread's per-thread stream dies with it and the next all-locked
    call returns its segment: the snapshot's segments and trace are taken
    at one moment, so the trace's segment_free and the segments agree.
    The thread must have ended for the C library, not only for Python
    (run_thread_to_its_end says why)."""
    d = recording

    def worker():
        p = c_malloc(d, 5 * MiB, ctypes.c_void_p(2))  # cudaStreamPerThread
        c_free(d, p)

    run_thread_to_its_end(worker)
    data = cca.snapshot()
    viewer_reads(data)
    replay(data["device_traces"][d], data["segments"], d)
    assert [e["action"] for e in data["device_traces"][d]][-1] == "segment_free"
    assert len(data["device_traces"]) == 32, "one list per device the runtime has (conftest sets 32)"


def test_torchs_signatures(shared_device, tmp_path):
    """cca's own functions take torch's arguments: record_history's context,
    stacks and skip_actions, dump_snapshot(filename=), snapshot(device),
    memory_snapshot(mempool_id, include_traces), memory_summary(abbreviated);
    segment_pool_id is a tuple."""
    d = shared_device
    cca.record_history("all", context="alloc", stacks="python", max_entries=100, device=d,
                       skip_actions=["free_completed"])
    try:
        p = c_malloc(d, 3000)
        c_free(d, p)
        h = cca.history(d)
        assert [e["action"] for e in h][-2:] == ["alloc", "free_requested"], "free_completed skipped"
        assert h[-2]["frames"][0]["name"] == "c_malloc" and h[-1]["frames"] == [], "context=alloc: no free frames"
        q = c_malloc(d, 5000)
        path = tmp_path / "s.pickle"
        cca.dump_snapshot(filename=str(path))
        with open(path, "rb") as f:
            assert pickle.load(f)["device_traces"][d][-1]["addr"] == q
        snap = cca.snapshot(d)
        assert isinstance(snap["segments"][0]["segment_pool_id"], tuple)
        segs = cca.memory_snapshot(mempool_id=(0, 0), include_traces=False)
        assert [b for s in segs for b in s["blocks"] if b["address"] == q][0]["frames"][0]["name"] == "c_malloc"
        assert cca.memory_snapshot(mempool_id=(1, 2)) == [], "no private pools"
        c_free(d, q)
    finally:
        cca.record_history(None, device=d)
    full, short = cca.memory_summary(d), cca.memory_summary(d, abbreviated=True)
    assert "from large pool" in full and "from large pool" not in short and "from small pool" not in short
    assert len(short.splitlines()) == len(full.splitlines()) - 2 * 9, "the 9 metrics' two pool rows"
    cca.record_history("state", device=d)
    try:
        p = c_malloc(d, 4000)
        assert cca.history(d) == [], "state: no events"
        blk = [b for s in cca.memory_snapshot() for b in s["blocks"] if b["address"] == p][0]
        assert blk["frames"][0]["name"] == "c_malloc", "but the live block's frames"
        c_free(d, p)
    finally:
        cca.record_history(None, device=d)


def test_frames_of_many_threads_are_each_threads_own(shared_device):
    """Four Python threads allocate and free at once while recording with
    frames (each call through ctypes releases the GIL: the frame reader
    takes it back): every event carries its own thread's frames."""
    import threading
    d = shared_device
    cca.record_history("all", context="all", stacks="python", max_entries=100000, device=d)
    try:
        def worker_a():
            for _ in range(200):
                c_free(d, c_malloc(d, 4096))

        def worker_b():
            for _ in range(200):
                c_free(d, c_malloc(d, 8192))

        threads = [threading.Thread(target=f) for f in (worker_a, worker_b, worker_a, worker_b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        h = [e for e in cca.history(d) if e["action"] in ("alloc", "free_requested")]
        assert len(h) == 1600
        for e in h:
            want = "worker_a" if e["size"] == 4096 else "worker_b"
            assert e["frames"][1]["name"] == want and e["frames"][2]["name"] == "run", e["frames"]
    finally:
        cca.record_history(None, device=d)
