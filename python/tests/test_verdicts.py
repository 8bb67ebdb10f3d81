"""The stranded verdict from Python: free bytes cached on another stream,
named with the stream and its bytes (OomReport.stranded)."""
import ctypes

import pytest

import cca
from cca import _core, _lib

MiB = 1 << 20


def test_memory_cached_on_another_stream_is_stranded(small_device, sim):
    d = small_device
    cca.empty_cache()
    lib, a = _lib.lib(), _core.allocator(d)
    cur = ctypes.c_int()
    sim.lib.cudaGetDevice(ctypes.byref(cur))
    sim.lib.cudaSetDevice(d)
    sb = ctypes.c_void_p()
    assert sim.lib.cudaStreamCreate(ctypes.byref(sb)) == 0
    sim.lib.cudaSetDevice(cur.value)
    assert cca.memory_reserved(d) == 0
    sim.lib.cca_sim_set_capacity(d, 48 * MiB)                       # memory held outside cca would be "external"
    x = []
    for _ in range(6):
        p = ctypes.c_void_p()
        assert lib.cca_malloc(a, ctypes.byref(p), 6 * MiB, sb) == 0
        x.append(p.value)
    for i in (0, 2, 4, 5):
        assert lib.cca_free(a, x[i]) == 0
    try:
        p = ctypes.c_void_p()
        assert lib.cca_malloc(a, ctypes.byref(p), 8 * MiB, None) != 0
        r = cca.last_oom(d)
        assert r.verdict == "stranded", r.advice
        assert r.free_cached_other == 28 * MiB and r.need_stranded == 12 * MiB
        assert r.stranded == [(sb.value, 28 * MiB)]
        assert "on other streams" in str(r)
    finally:
        for i in (1, 3):
            lib.cca_free(a, x[i])
        cca.empty_cache()
        sim.lib.cca_sim_set_capacity(d, 64 * MiB)
