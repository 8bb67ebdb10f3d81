"""CuPy's adapter on the simulated device, against a stand-in module with
the interfaces the adapter uses (tests/standins): one cache with cca's
other users, the current stream, CuPy's OutOfMemoryError with cca's report
(one OOM per failed allocation), CuPy's CFunctionAllocator fast path, the
pool methods.

Why a stand-in: CuPy's wheels link a CUDA runtime that cannot start on the
simulated device (it needs the driver's private export tables), so its
allocation paths are tested here; the frameworks tier runs the real CuPy
as far as that allows, and the real Numba (numba-cuda and numba alone)
whole (python/tests/frameworks/test_cupy_numba.py)."""
import ctypes
import gc
import importlib
import json
import os
import sys
import time

import pytest

import cca
from cca import _core, _lib

MiB = 1 << 20
STANDINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "standins")


@pytest.fixture
def standins(monkeypatch):
    monkeypatch.syspath_prepend(STANDINS)
    for name in list(sys.modules):
        if name.split(".")[0] == "cupy" or name == "cca.allocators.cupy":
            monkeypatch.delitem(sys.modules, name)
    yield
    for name in list(sys.modules):
        if name.split(".")[0] == "cupy":
            del sys.modules[name]


@pytest.fixture
def dev(shared_device):
    return shared_device


@pytest.fixture
def small(small_device):
    return small_device


def _stream_of(device, ptr):
    """The stream the snapshot names for the segment holding ptr."""
    for seg in cca.memory_snapshot():
        if seg["device"] == device and seg["address"] <= ptr < seg["address"] + seg["total_size"]:
            return seg["stream"]
    return None


# ---- CuPy -----------------------------------------------------------------

def test_cupy_install_allocates_from_cca_and_frees_when_dropped(standins, dev):
    cupy = importlib.import_module("cupy")
    import cca.allocators.cupy as cc
    assert cc.install() is cc.malloc and cupy.cuda.get_allocator() is cc.malloc
    cupy.cuda.Device.current = dev
    before = cca.memory_allocated(dev)
    m = cupy.cuda.alloc(3 * MiB)
    assert m.ptr and cca.memory_allocated(dev) == before + 3 * MiB
    assert _stream_of(dev, m.ptr) == 0, "CuPy's null stream: the legacy default stream"
    del m
    gc.collect()
    assert cca.memory_allocated(dev) == before
    cca.check(dev)


def test_cupy_allocates_on_its_current_stream(standins, dev, sim):
    cupy = importlib.import_module("cupy")
    import cca.allocators.cupy as cc
    cc.install()
    cupy.cuda.Device.current = dev
    cur = ctypes.c_int()
    sim.lib.cudaGetDevice(ctypes.byref(cur))
    sim.lib.cudaSetDevice(dev)
    s = ctypes.c_void_p()
    assert sim.lib.cudaStreamCreate(ctypes.byref(s)) == 0
    sim.lib.cudaSetDevice(cur.value)
    with cupy.cuda.Stream(s.value):
        m = cupy.cuda.alloc(5 * MiB)
    assert _stream_of(dev, m.ptr) == s.value
    del m
    gc.collect()
    assert _lib.lib().cca_stream_retire(_core.allocator(dev), s) == 0


def test_cupy_oom_is_cupys_error_with_cca_report(standins, small):
    cupy = importlib.import_module("cupy")
    import cca.allocators.cupy as cc
    cc.install()
    cupy.cuda.Device.current = small
    fired = []
    handler = cca.on_oom(lambda r: fired.append(r.requested), device=small)
    before = cca.memory_stats(small)["num_ooms"]
    with pytest.raises(cupy.cuda.memory.OutOfMemoryError) as ei:
        cupy.cuda.alloc(128 * MiB)
    err = ei.value
    assert err.size == 128 * MiB and err.cca_report is not None
    assert err.cca_report.requested == 128 * MiB
    assert "verdict" in str(err) or err.cca_report.verdict in str(err)
    # the adapter collects garbage and asks again: still one failed allocation, one OOM, reported once
    assert cca.memory_stats(small)["num_ooms"] == before + 1
    for _ in range(100):
        if fired:
            break
        time.sleep(0.02)
    time.sleep(0.1)
    assert fired == [128 * MiB]
    handler.remove()


def test_cupy_c_function_allocator_never_throws(standins, small, dev):
    cupy = importlib.import_module("cupy")
    import cca.allocators.cupy as cc
    alloc = cc.c_function_allocator()
    cupy.cuda.Device.current = dev
    before = cca.memory_allocated(dev)
    m = alloc.malloc(2 * MiB)
    assert cca.memory_allocated(dev) == before + 2 * MiB
    assert _stream_of(dev, m.ptr) == 0
    del m
    gc.collect()
    assert cca.memory_allocated(dev) == before
    hooks = ctypes.CDLL(_lib.hooks_path())
    hooks.cca_cupy_malloc.restype = ctypes.c_void_p
    hooks.cca_cupy_malloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    hooks.cca_cupy_free.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
    assert hooks.cca_cupy_malloc(None, 256 * MiB, small) is None
    text = _lib.error_text()
    assert "out of memory" in text and "\n" in text, "the report follows the message: %r" % text
    assert hooks.cca_cupy_malloc(None, 1, 99) is None, "a bad device is a NULL, not an exception"
    cupy.cuda.Device.current = small
    with pytest.raises(cupy.cuda.memory.OutOfMemoryError) as ei:   # CuPy would hand out address 0
        alloc.malloc(256 * MiB)
    assert ei.value.size == 256 * MiB and ei.value.limit == 0
    assert ei.value.cca_report is not None and ei.value.cca_report.requested == 256 * MiB
    assert alloc.malloc(0).ptr == 0, "size 0: no allocation, as CuPy"
    cupy.cuda.Device.current = dev
    hooks.cca_cupy_free(None, None, dev)              # NULL: nothing
    hooks.cca_cupy_free(None, ctypes.c_void_p(0x1234), dev)   # not ours: a status, nothing else
    cca.check(dev)


def test_cupy_pool_answers_from_cca(standins, dev):
    import cca.allocators.cupy as cc
    pool = cc.Pool(dev)
    p = ctypes.c_void_p()
    assert _lib.lib().cca_malloc(_core.allocator(dev), ctypes.byref(p), 6 * MiB, None) == 0
    assert pool.used_bytes() == cca.memory_allocated(dev)
    assert pool.total_bytes() == cca.memory_reserved(dev)
    assert pool.free_bytes() == pool.total_bytes() - pool.used_bytes()
    assert _lib.lib().cca_free(_core.allocator(dev), p) == 0
    pool.free_all_blocks()
    assert pool.total_bytes() == cca.memory_reserved(dev)
    assert pool.get_limit() == 0
    pool.set_limit(size=512 * MiB)
    assert pool.get_limit() == 512 * MiB
    pool.set_limit(fraction=0.5)
    assert pool.get_limit() == cca.mem_get_info(dev)[1] // 2
    pool.set_limit(size=0)
    assert pool.get_limit() == 0
    with pytest.raises(ValueError):
        pool.set_limit(size=1, fraction=0.5)
    with pytest.raises(ValueError):
        pool.set_limit(fraction=2)
    pool.set_limit(size=512 * MiB)
    with pytest.raises(ValueError):                   # below one 2 MiB segment: refused
        pool.set_limit(size=1 * MiB)
    assert pool.get_limit() == 512 * MiB, "a refused limit leaves the old one"
    pool.set_limit(fraction=0.25)
    with pytest.raises(ValueError):
        pool.set_limit(size=1)
    assert pool.get_limit() == cca.mem_get_info(dev)[1] // 4
    pool.set_limit(size=0)
    assert pool.get_limit() == 0


def test_cupy_oom_names_the_cap_as_its_limit_and_collects_cycles_first(standins, small):
    cupy = importlib.import_module("cupy")
    import cca.allocators.cupy as cc
    cc.install()
    cupy.cuda.Device.current = small
    pool = cc.Pool(small)
    pool.set_limit(size=32 * MiB)
    try:
        with pytest.raises(cupy.cuda.memory.OutOfMemoryError) as ei:
            cupy.cuda.alloc(40 * MiB)
        assert ei.value.limit == 32 * MiB
        # memory held only by a reference cycle: CuPy's pool collects and retries, so does cca's
        gc.disable()                                  # only the adapter's own collection frees it
        a = cupy.cuda.alloc(20 * MiB)
        cycle = [a]
        cycle.append(cycle)
        del a, cycle
        b = cupy.cuda.alloc(20 * MiB)
        del b
    finally:
        gc.enable()
        gc.collect()
        pool.set_limit(size=0)
        cca.empty_cache()
