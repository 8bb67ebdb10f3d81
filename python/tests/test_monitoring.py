"""cca.watch, cca.on_oom, cca.profile and cca.Monitor on the simulated
device: figures equal those of known allocations (made through cca_malloc
directly), callbacks on cca's delivery thread in crossing order, and a
crossing queued by a thread that cannot get the GIL."""
import ctypes
import io
import sys
import threading
import time

import pytest

import cca
from cca import _lib
from cmem import _alloc, c_free, c_malloc

MiB = 1 << 20


@pytest.fixture
def dev(shared_device):
    return shared_device


@pytest.fixture
def small(small_device):
    return small_device


@pytest.fixture(autouse=True)
def _clean(sim):
    cca.empty_cache()
    yield


def wait_for(pred, timeout=5.0):
    end = time.time() + timeout
    while not pred():
        if time.time() > end:
            return False
        time.sleep(0.005)
    return True


# ---- watch --------------------------------------------------------------------

def test_watch_crossings_exact_and_in_order(dev, sim):
    d = dev
    seen = []

    def cb(c):
        seen.append((c.threshold, c.rising, c.bytes, c.what, c.device, threading.current_thread().name,
                     cca.memory_allocated(d)))           # a callback may call cca

    w6 = cca.watch(6 * MiB, cb, device=d)
    w3 = cca.watch(3 * MiB, cb, device=d)
    p = c_malloc(d, 8 * MiB)                             # crosses 3 MiB, then 6 MiB, in one call
    assert wait_for(lambda: len(seen) == 2)
    assert [s[:5] for s in seen] == [(3 * MiB, True, 8 * MiB, "allocated", d), (6 * MiB, True, 8 * MiB, "allocated", d)]
    assert {s[5] for s in seen} == {"cca-delivery"}
    w6.remove()
    w6.remove()                                          # twice is harmless
    c_free(d, p)
    assert wait_for(lambda: len(seen) == 3)
    assert seen[2][:3] == (3 * MiB, False, 0)
    assert (w3.crossings, w6.crossings) == (2, 1)
    with w3:
        pass                                             # leaving the block removes it
    p = c_malloc(d, 8 * MiB)
    time.sleep(0.3)
    assert len(seen) == 3, "no watch is left"
    c_free(d, p)


def test_watch_reserved_and_bad_arguments(dev, sim):
    d = dev
    seen = []
    w = cca.watch(1 * MiB, seen.append, what="reserved", device=d)
    p = c_malloc(d, 512)                                 # reserves a 2 MiB segment
    assert wait_for(lambda: len(seen) == 1)
    assert seen[0].what == "reserved" and seen[0].bytes == 2 * MiB and seen[0].rising
    c_free(d, p)
    cca.empty_cache()
    assert wait_for(lambda: len(seen) == 2)
    assert seen[1].bytes == 0 and not seen[1].rising
    w.remove()
    with pytest.raises(TypeError):
        cca.watch(1.5, print, device=d)
    with pytest.raises(TypeError):
        cca.watch(True, print, device=d)
    with pytest.raises(ValueError):
        cca.watch(-1, print, device=d)
    with pytest.raises(TypeError):
        cca.watch(1, "not callable", device=d)
    with pytest.raises(ValueError):
        cca.watch(1, print, what="active", device=d)


def test_a_failing_callback_does_not_stop_delivery(dev, sim, capsys):
    d = dev
    seen = []

    def bad(c):
        raise RuntimeError("boom")

    w1 = cca.watch(1 * MiB, bad, device=d)
    w2 = cca.watch(2 * MiB, seen.append, device=d)
    p = c_malloc(d, 4 * MiB)
    assert wait_for(lambda: len(seen) == 1)
    c_free(d, p)
    w1.remove()
    w2.remove()
    assert "boom" in capsys.readouterr().err


def test_watch_fires_while_another_thread_holds_the_gil(dev, sim):
    """The allocating thread queues the crossing without the GIL: while the
    main thread holds it (a call through PyDLL keeps it, and a long switch
    interval keeps it between bytecodes), the allocation completes and its
    notice is queued; the callback runs only afterwards, on the delivery
    thread."""
    d = dev
    seen = []
    w = cca.watch(1 * MiB, lambda c: seen.append(c), device=d)
    keep = ctypes.PyDLL(None)                            # its calls do not release the GIL
    keep.usleep.argtypes = [ctypes.c_uint]
    pending = ctypes.PyDLL(_lib.library_path()).cca_notice_pending
    pending.restype, pending.argtypes = ctypes.c_size_t, [ctypes.POINTER(ctypes.c_uint64), ctypes.c_void_p]
    before, after = ctypes.c_uint64(), ctypes.c_uint64()
    pending(ctypes.byref(before), None)
    sim.lib.cca_sim_set_latency_ns(0, 200_000_000)      # cudaMalloc takes 0.2 s: the worker is in C meanwhile
    done = []
    t = threading.Thread(target=lambda: done.append(c_malloc(d, 4 * MiB)))
    switch = sys.getswitchinterval()
    sys.setswitchinterval(30.0)                          # the main thread keeps the GIL until it blocks
    try:
        t.start()
        time.sleep(0.05)                                 # the worker is inside cca_malloc, without the GIL
        keep.usleep(600_000)                             # the main thread holds the GIL for 0.6 s
        pending(ctypes.byref(after), None)               # still holding it
        delivered = len(seen)
    finally:
        sys.setswitchinterval(switch)
        sim.lib.cca_sim_set_latency_ns(0, 0)
    t.join()
    assert after.value - before.value == 1, "the crossing was queued while the main thread held the GIL"
    assert delivered == 0, "the callback did not run inside the allocating call"
    assert wait_for(lambda: len(seen) == 1)
    assert seen[0].rising and seen[0].bytes == 4 * MiB
    c_free(d, done[0])
    w.remove()


# ---- on_oom -----------------------------------------------------------------

def test_on_oom_runs_on_the_delivery_thread(small):
    d = small
    got = []
    h = cca.on_oom(lambda r: got.append((r, threading.current_thread().name)), device=d)
    p = ctypes.c_void_p()
    st = _lib.lib().cca_malloc(_alloc(d), ctypes.byref(p), 128 * MiB, None)
    assert _lib.lib().cca_status_string(st) == b"CCA_ERROR_OUT_OF_MEMORY"
    assert wait_for(lambda: len(got) == 1)
    report, name = got[0]
    assert name == "cca-delivery"
    assert report.requested == 128 * MiB and report.verdict in ("exhausted", "cap", "external", "fragmented")
    h.remove()
    _lib.lib().cca_malloc(_alloc(d), ctypes.byref(p), 128 * MiB, None)
    time.sleep(0.3)
    assert len(got) == 1, "removed"
    assert _lib.lib().cca_notice_pending(None, None) == 0


# ---- profile ------------------------------------------------------------------

def test_profile_figures_equal_the_known_allocations(dev, sim):
    d = dev
    keep = c_malloc(d, 4 * MiB)                          # before: not counted
    out = io.StringIO()
    with cca.profile("step", device=d, file=out) as p:
        a = c_malloc(d, 10 * MiB)
        b = c_malloc(d, 1000)                            # rounded to 1024
        c_free(d, a)
        leak = c_malloc(d, 3 * MiB)
    r = p.result
    assert (r.allocations, r.frees) == (3, 1)
    assert r.allocated_bytes == 10 * MiB + 1024 + 3 * MiB
    assert r.freed_bytes == 10 * MiB
    assert r.left_allocated == 1024 + 3 * MiB
    assert r.peak_allocated == 4 * MiB + 10 * MiB + 1024
    assert r.peak_reserved == 20 * MiB + 2 * MiB      # keep's 20 MiB segment (a and leak fit in it), b's small one
    assert r.wall_s >= 0 and r.children == []
    line = out.getvalue()
    assert line.startswith("cca.profile step: ") and line.count("\n") == 1
    assert "left allocated 3.00 MiB" in line
    for x in (b, leak, keep):
        c_free(d, x)


def test_profiles_nest_and_print_a_table(dev, sim):
    d = dev
    out = io.StringIO()

    @cca.profile("inner", device=d, report=False)
    def inner():
        return c_malloc(d, 2 * MiB)

    with cca.profile("outer", device=d, file=out) as p:
        x = inner()
        with cca.profile("second", device=d):
            y = c_malloc(d, 1 * MiB)
            c_free(d, y)
    r = p.result
    assert [c.name for c in r.children] == ["inner", "second"]
    assert r.children[0].allocated_bytes == 2 * MiB and r.children[0].left_allocated == 2 * MiB
    assert r.children[1].left_allocated == 0 and r.children[1].allocations == 1
    assert r.allocated_bytes == 3 * MiB and r.left_allocated == 2 * MiB
    assert inner.last_profile is r.children[0]
    table = out.getvalue().splitlines()
    assert table[0].startswith("profile") and table[1].startswith("outer") and table[2].startswith("  inner")
    assert table[3].startswith("  second") and len(table) == 4
    c_free(d, x)


def test_profile_counts_other_threads_and_reports_to_a_callable(dev, sim):
    d = dev
    got = []

    def worker(out):
        out.append(c_malloc(d, 5 * MiB))

    with cca.profile("threads", device=d, report=got.append):
        ptrs = []
        ts = [threading.Thread(target=worker, args=(ptrs,)) for _ in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert len(got) == 1 and got[0].allocations == 3 and got[0].allocated_bytes == 15 * MiB
    for x in ptrs:
        c_free(d, x)
    with pytest.raises(TypeError):
        cca.profile(3)


def test_profile_decorator_without_arguments(dev, sim, capsys):
    d = dev

    @cca.profile
    def work():
        cca.memory_allocated(d)
        return 7

    assert work() == 7
    assert "cca.profile " in capsys.readouterr().err
    assert work.last_profile is not None and work.__name__ == "work"


# ---- Monitor --------------------------------------------------------------

def test_monitor_csv_rows_match_the_figures(dev, sim):
    d = dev
    p = c_malloc(d, 6 * MiB)
    cca.reset_peak_memory_stats(d)
    q = c_malloc(d, 2 * MiB)
    c_free(d, q)
    out = io.StringIO()
    with cca.Monitor(0.05, file=out, format="csv", device=d) as m:
        time.sleep(0.2)
    rows = out.getvalue().splitlines()
    assert rows[0] == "time,device,allocated,reserved,peak_allocated,free_cached,largest_free,fragmentation"
    assert m.samples == len(rows) - 1 >= 2
    f = cca.fragmentation(d)
    last = rows[-1].split(",")
    assert int(last[1]) == d
    assert int(last[2]) == cca.memory_allocated(d) == 6 * MiB
    assert int(last[3]) == cca.memory_reserved(d)
    assert int(last[4]) == cca.max_memory_allocated(d) == 8 * MiB
    assert int(last[5]) == f["free_cached"] and int(last[6]) == f["largest_free"]
    assert abs(float(last[7]) - f["external_fragmentation"]) < 1e-6
    c_free(d, p)


def test_monitor_lines_and_arguments(dev, sim):
    d = dev
    out = io.StringIO()
    m = cca.Monitor(0.02, file=out, device=d).start()
    time.sleep(0.1)
    m.stop()
    m.stop()                                             # twice is harmless
    lines = out.getvalue().splitlines()
    assert lines and all(("device %d: allocated " % d) in x for x in lines)
    assert m.samples == len(lines)
    with pytest.raises(ValueError):
        cca.Monitor(0)
    with pytest.raises(ValueError):
        cca.Monitor(1, format="json")


def test_profile_left_allocated_is_its_own_blocks(dev, sim):
    """Freeing older blocks inside a profile does not make what it left
    negative: it is the blocks allocated inside and still allocated."""
    d = dev
    old = c_malloc(d, 64 * MiB)
    with cca.profile("p", device=d, report=False) as p:
        new = c_malloc(d, 2 * MiB)
        c_free(d, old)
    r = p.result
    assert r.left_allocated == 2 * MiB and r.left_allocations == 1
    assert r.freed_bytes == 64 * MiB
    c_free(d, new)


def test_profile_object_reentered_and_left_out_of_order(dev, sim):
    d = dev
    got = []
    p = cca.profile("same", device=d, report=got.append)
    with p:
        x = c_malloc(d, 1 * MiB)
        with p:                                       # the same object again: its own scope
            y = c_malloc(d, 2 * MiB)
        inner = p.result
    outer = p.result
    assert inner.allocated_bytes == 2 * MiB and outer.allocated_bytes == 3 * MiB
    assert [c.allocated_bytes for c in outer.children] == [2 * MiB]
    assert got == [outer]
    # left out of order (an ExitStack misused, tasks interleaving): each result is its own
    a, b = cca.profile("a", device=d, report=got.append), cca.profile("b", device=d, report=got.append)
    a.__enter__()
    b.__enter__()
    z = c_malloc(d, 4 * MiB)
    a.__exit__(None, None, None)
    assert a.result.allocated_bytes == 4 * MiB
    b.__exit__(None, None, None)
    assert b.result.allocated_bytes == 4 * MiB
    assert got[-1] is b.result, "b, now outermost, reports"
    with cca.profile("after", device=d, report=got.append) as q:
        pass
    assert got[-1] is q.result, "nothing left open on this thread"
    with pytest.raises(RuntimeError):
        cca.profile("never", device=d).__exit__(None, None, None)
    for v in (x, y, z):
        c_free(d, v)
    assert _lib.lib().cca_scope_end(_alloc(d), 999999, None) != 0


def test_delivery_survives_system_exit_in_a_callback(dev, sim, capsys):
    d = dev
    seen = []

    def leave(c):
        sys.exit(3)

    w1 = cca.watch(1 * MiB, leave, device=d)
    w2 = cca.watch(2 * MiB, seen.append, device=d)
    for _ in range(3):
        p = c_malloc(d, 4 * MiB)
        c_free(d, p)
    assert wait_for(lambda: len(seen) == 6), seen
    w1.remove()
    w2.remove()
    w2.remove()                                       # a second remove is a no-op
    assert "SystemExit" in capsys.readouterr().err


def test_monitor_stop_never_replaces_the_bodys_exception(dev, sim, capsys):
    f = io.StringIO()
    with pytest.raises(KeyError):
        with cca.Monitor(0.01, file=f, device=dev):
            time.sleep(0.05)
            f.close()                                 # the monitor's writes now fail
            time.sleep(0.05)
            raise KeyError("the body's own")
    assert "Monitor" in capsys.readouterr().err


def test_notices_of_another_allocator_on_the_device_are_not_ours(dev):
    """A program's own allocator on the device numbers its watches as the
    default allocator does (each from 1: here made to meet); the delivery
    thread takes every notice of the process, and delivers only those of
    the allocator a watch or handler was set on (notices name their
    allocator)."""
    d = dev
    lib = _lib.lib()
    seen, ooms = [], []
    w = cca.watch(1 * MiB, seen.append, device=d)
    h = cca.on_oom(ooms.append, device=d)
    cfg = _lib.struct("cca_config_t")()
    lib.cca_config_init_sized.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.cca_config_init_sized(ctypes.byref(cfg), ctypes.sizeof(cfg))
    cfg.device = d
    lib.cca_create_sized.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
    lib.cca_destroy.argtypes = [ctypes.c_void_p]
    other = ctypes.c_void_p()
    assert lib.cca_create_sized(ctypes.byref(cfg), ctypes.sizeof(cfg), ctypes.byref(other)) == 0
    try:
        wid = ctypes.c_uint64()
        for _ in range(w.id - 1):                     # ids 1, 2, ...: watches that never cross, up to w.id - 1
            assert lib.cca_watch_threshold_queued(other, 0, 1 << 60, ctypes.byref(wid)) == 0
        assert lib.cca_watch_threshold_queued(other, 0, 1 * MiB, ctypes.byref(wid)) == 0
        assert wid.value == w.id, "the same watch id on both allocators"
        assert lib.cca_oom_notices(other, 1) == 0
        assert lib.cca_allocator_id(other) != lib.cca_allocator_id(_alloc(d))
        p = ctypes.c_void_p()
        assert lib.cca_malloc(other, ctypes.byref(p), 4 * MiB, None) == 0       # the other allocator's crossing
        assert lib.cca_malloc(other, ctypes.byref(ctypes.c_void_p()), 1 << 50, None) != 0   # and its OOM
        q = c_malloc(d, 2 * MiB)                                                # ours, queued after them
        assert wait_for(lambda: len(seen) == 1)
        time.sleep(0.05)
        assert [(c.bytes, c.rising) for c in seen] == [(2 * MiB, True)], "only the default allocator's crossing"
        assert ooms == [], "the other allocator's out-of-memory is not the device's"
        c_free(d, q)
        assert lib.cca_free(other, p) == 0
    finally:
        w.remove()
        h.remove()
        lib.cca_destroy(other)
