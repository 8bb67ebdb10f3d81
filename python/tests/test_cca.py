"""The Python package on the simulated device: every call, torch's key set,
figures equal to the C library's for the same allocations, four of the
five verdicts (stranded: test_verdicts.py), the ctypes layouts against C's own, the hook library loaded by
path as torch loads it."""
import ctypes
import os
import subprocess
import sys

import pytest

import cca
from cca import _core, _lib

MiB = 1 << 20

# torch 2.11's memory_stats() keys, from its sources (torch/csrc/cuda/Module.cpp
# and torch/cuda/memory.py): written out here, not taken from cca. torch 2.12
# added num_oom_rejections (its 2.12 to 2.15 sources).
TORCH_COUNTERS = ["num_alloc_retries", "num_ooms", "max_split_size", "num_sync_all_streams", "num_device_alloc",
                  "num_device_free"]
TORCH_STATS = ["allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
               "active_bytes", "inactive_split_bytes", "requested_bytes"]
TORCH_KEYS = sorted(TORCH_COUNTERS + [f"{s}.{p}.{k}" for s in TORCH_STATS for p in ("all", "small_pool", "large_pool")
                                      for k in ("current", "peak", "allocated", "freed")]
                    + [f"{s}.{k}" for s in ("oversize_allocations", "oversize_segments")
                       for k in ("current", "peak", "allocated", "freed")])
TORCH_2_12_KEYS = sorted(TORCH_KEYS + ["num_oom_rejections"])


def c_malloc(device, size, stream=None):
    """(status name, pointer) of cca_malloc on the device's default allocator."""
    lib = _lib.lib()
    a = ctypes.c_void_p()
    assert lib.cca_default(device, ctypes.byref(a)) == 0
    p = ctypes.c_void_p()
    st = lib.cca_malloc(a, ctypes.byref(p), size, stream)
    return lib.cca_status_string(st).decode(), p.value


def c_free(device, p):
    lib = _lib.lib()
    a = ctypes.c_void_p()
    assert lib.cca_default(device, ctypes.byref(a)) == 0
    assert lib.cca_free(a, p) == 0


def c_stats(device):
    lib = _lib.lib()
    a = ctypes.c_void_p()
    assert lib.cca_default(device, ctypes.byref(a)) == 0
    s = _lib.struct("cca_stats_t")()
    assert lib.cca_get_stats_sized(a, ctypes.byref(s), ctypes.sizeof(s)) == 0
    return s


def fake_torch(tmp_path, names):
    """A torch module whose libtorch_python.so holds `names` as strings of
    their own (as torch's C++ literals), the way cca reads the running torch."""
    import types
    lib = tmp_path / "torch" / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    body = b"\0".join([b"x"] + [b"the " + n.encode() for n in names] + [b""])   # each the tail of a string
    (lib / "libtorch_python.so").write_bytes(body)
    return types.SimpleNamespace(__version__="9.9.0", __file__=str(tmp_path / "torch" / "__init__.py"))


def test_memory_stats_has_exactly_torchs_keys(sim, monkeypatch, tmp_path):
    """The keys of the torch the process imported, read from that torch's
    own library: 2.11's without num_oom_rejections, 2.12's and later with
    it, 2.15's nested form with reserved_bytes_by_private_pools (which adds
    no flat key: cca has no private pools); without torch, the newest."""
    from cca import _torchinfo
    d = sim.fresh_device()
    import sys
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    stats = cca.memory_stats(d)
    assert list(stats.keys()) == TORCH_2_12_KEYS
    assert len(stats) == 123 and stats["num_oom_rejections"] == 0
    nested = cca.memory_stats_as_nested_dict(d)
    assert list(nested) == TORCH_COUNTERS[:6] + ["num_oom_rejections"] + TORCH_STATS[:6] + \
        ["reserved_bytes_by_private_pools"] + TORCH_STATS[6:] + ["oversize_allocations", "oversize_segments"]
    assert nested["reserved_bytes_by_private_pools"] == {}
    assert stats["max_split_size"] == -1
    base = TORCH_COUNTERS[:6] + TORCH_STATS + ["oversize_allocations", "oversize_segments"]
    for names, keys in ((base, TORCH_KEYS), (base + ["num_oom_rejections"], TORCH_2_12_KEYS),
                        (base + ["num_oom_rejections", "reserved_bytes_by_private_pools"], TORCH_2_12_KEYS)):
        monkeypatch.setattr(_torchinfo, "_found", {})
        monkeypatch.setattr(_torchinfo, "_data", [])
        monkeypatch.setitem(sys.modules, "torch", fake_torch(tmp_path / str(len(names)), names))
        assert list(cca.memory_stats(d).keys()) == keys, names
        assert ("reserved_bytes_by_private_pools" in cca.memory_stats_as_nested_dict(d)) == \
            ("reserved_bytes_by_private_pools" in names)
    monkeypatch.setattr(_torchinfo, "_found", {})
    monkeypatch.setattr(_torchinfo, "_data", [])


def test_hook_allocations_are_seen_by_the_package(sim, hooks):
    """Bytes allocated through cca_torch_malloc, with the hook library loaded
    by path as torch loads it, are this package's figures: one cca."""
    d = sim.fresh_device()
    p = hooks.cca_torch_malloc(3 * MiB + 5, d, None)
    q = hooks.cca_torch_malloc(1000, d, None)
    assert p and q
    assert cca.memory_allocated(d) == 3 * MiB + 512 + 1024
    st = cca.memory_stats(d)
    assert st["requested_bytes.all.current"] == 3 * MiB + 5 + 1000
    assert st["allocation.all.current"] == 2
    assert st["allocation.large_pool.current"] == 1 and st["allocation.small_pool.current"] == 1
    hooks.cca_torch_free(p, 3 * MiB + 5, d, None)
    hooks.cca_torch_free(q, 1000, d, None)
    assert cca.memory_allocated(d) == 0
    assert cca.max_memory_allocated(d) == 3 * MiB + 512 + 1024
    cca.check(d)


def test_figures_equal_the_c_librarys(sim):
    d = sim.fresh_device()
    ptrs = [c_malloc(d, n)[1] for n in (512, 4096, 2 * MiB, 30 * MiB)]
    c_free(d, ptrs[1])
    s, st = c_stats(d), cca.memory_stats(d)
    for k, name in enumerate(TORCH_STATS):
        for j, pool in enumerate(("all", "small_pool", "large_pool")):
            for part in ("current", "peak", "allocated", "freed"):
                assert st[f"{name}.{pool}.{part}"] == getattr(getattr(s, name)[j], part), (name, pool, part)
    for name in TORCH_COUNTERS:
        assert st[name] == getattr(s, name)
    assert cca.memory_reserved(d) == s.reserved_bytes[0].current == 2 * MiB + 20 * MiB + 30 * MiB
    assert cca.max_memory_reserved(d) == s.reserved_bytes[0].peak
    for p in ptrs[:1] + ptrs[2:]:
        c_free(d, p)


def test_resets_and_empty_cache(sim):
    d = sim.fresh_device()
    _, p = c_malloc(d, 8 * MiB)
    c_free(d, p)
    assert cca.max_memory_allocated(d) == 8 * MiB
    cca.reset_peak_memory_stats(d)
    assert cca.max_memory_allocated(d) == 0
    cca.reset_max_memory_allocated(d)
    cca.reset_accumulated_memory_stats(d)
    st = cca.memory_stats(d)
    assert st["allocation.all.allocated"] == 0 and st["num_device_alloc"] == 0
    assert cca.memory_reserved(d) == 20 * MiB
    cca.empty_cache()
    assert cca.memory_reserved(d) == 0
    assert cca.memory_stats(d)["num_device_free"] == 1


def test_summary_snapshot_fragmentation_and_mem_get_info(sim):
    d = sim.fresh_device(256 * MiB)
    ptrs = [c_malloc(d, 2 * MiB)[1] for _ in range(4)]
    c_free(d, ptrs[1])
    text = cca.memory_summary(d)
    assert "cca memory summary, device %d" % d in text and "Allocated memory" in text
    locks = [line for line in text.splitlines() if line.startswith(("| allocator ", "| streams ", "| segment list "))]
    assert len(locks) == 3, "cca's own summary shows its locks (torch's memory_summary does not: test_torch_api)"
    assert "all-locked path entered" in text
    segs = [s for s in cca.memory_snapshot() if s["device"] == d]
    assert len(segs) == 1 and segs[0]["total_size"] == 20 * MiB
    assert segs[0]["segment_type"] == "large"
    states = [b["state"] for b in segs[0]["blocks"]]
    assert states.count("active_allocated") == 3 and "inactive" in states
    assert set(segs[0]["blocks"][0]) == {"address", "size", "requested_size", "state", "frames"}
    assert set(segs[0]) == {"device", "address", "total_size", "allocated_size", "active_size", "requested_size",
                            "stream", "segment_type", "segment_pool_id", "is_expandable", "frames", "blocks"}
    assert segs[0]["is_expandable"] is False
    f = cca.fragmentation(d)
    assert f["reserved"] == 20 * MiB and f["allocated"] == 6 * MiB and f["segments"] == 1
    assert f["free_cached"] == 14 * MiB and f["largest_free"] == 12 * MiB
    assert f["external_fragmentation"] == pytest.approx(1 - 12 / 14)
    assert f["classes"][2 * MiB]["allocated_blocks"] == 3
    free, total = cca.mem_get_info(d)
    assert total == 256 * MiB and free == 256 * MiB - 20 * MiB
    for p in ptrs[:1] + ptrs[2:]:
        c_free(d, p)


def test_memory_fraction(sim):
    d = sim.fresh_device(64 * MiB)
    assert cca.get_per_process_memory_fraction(d) == 1.0
    cca.set_per_process_memory_fraction(0.5, d)
    assert cca.get_per_process_memory_fraction(d) == 0.5
    cca.set_per_process_memory_fraction(0.33, d)
    assert cca.get_per_process_memory_fraction(d) == 0.33, "the fraction set, exactly"
    cca.set_per_process_memory_fraction(0.5, d)
    for bad in (0, -0.1, 1.5, float("nan")):
        with pytest.raises(ValueError):
            cca.set_per_process_memory_fraction(bad, d)
    for bad in ("x", None, True):
        with pytest.raises(TypeError):
            cca.set_per_process_memory_fraction(bad, d)
    with pytest.raises(ValueError, match="2 MiB"):
        cca.set_per_process_memory_fraction(0.01, d)   # under one 2 MiB segment of 64 MiB
    assert cca.get_per_process_memory_fraction(d) == 0.5


def _run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_fraction_is_the_cap_in_force_and_never_above_one(sim):
    # a byte cap above the device's memory is no fraction above 1; the
    # smaller of a byte cap and a fraction is the one reported
    out = _run("import cca; cca.configure('memory_limit_mb:100000000');"
               "print(cca.get_per_process_memory_fraction(0), cca.mem_get_info(0)[1] < 100000000 << 20);"
               "cca.set_per_process_memory_fraction(0.25, 0); print(cca.get_per_process_memory_fraction(0));"
               "cca._lib.lib().cca_set_memory_limit(cca._core.allocator(0), 1 << 30);"
               "print(cca.get_per_process_memory_fraction(0) == (1 << 30) / cca.mem_get_info(0)[1])")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1.0", "True", "0.25", "True"]


def test_configure_after_a_failed_first_use(sim):
    out = _run("import cca\ntry:\n    cca.memory_allocated(40)\nexcept ValueError as e:\n    print('refused', e)\n"
               "cca.configure('preset:lean'); print(cca.memory_stats(0)['max_split_size'])")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("refused") and "40" in lines[0]
    assert lines[1] == str(128 * MiB)


def test_configure_takes_a_str(sim):
    for bad in (None, b"preset:lean", 1):
        with pytest.raises(TypeError):
            cca.configure(bad)
    with pytest.raises(ValueError, match="NUL"):
        cca.configure("preset:lean\0max_split_size_mb:5")


def test_device_arguments(sim):
    d = sim.fresh_device()

    class Dev:                                         # what torch.device offers
        type, index = "cuda", d

    assert cca.memory_allocated(d) == cca.memory_allocated("cuda:%d" % d) == cca.memory_allocated(Dev())
    assert cca.memory_allocated() == cca.memory_allocated(0)   # the current device
    class Numpyish(int):                               # an integer type with __index__, as numpy's
        pass

    class Other:                                       # a device of another kind
        type, index = "cpu", None

    class BadIndex:
        type, index = "cuda", 1.0

    class CudaDevice:                                  # what torch.cuda.device(N) offers
        idx = d

    assert cca.memory_allocated(CudaDevice()) == cca.memory_allocated(d)

    assert cca.memory_allocated(Numpyish(d)) == cca.memory_allocated(d)
    assert cca.memory_allocated("cuda") == cca.memory_allocated(None)
    for bad in ("cpu", "cuda:", "cuda:-1", "cuda:1:2", " cuda:1", "cuda:\u0661", "cuda:1\n", -1, 64, "cuda:64",
                Other()):
        with pytest.raises(ValueError):
            cca.memory_allocated(bad)
    for bad in (b"cuda:0", 1.0, True, (0,), [0], object(), BadIndex()):
        with pytest.raises(TypeError):
            cca.memory_allocated(bad)


def _oom(d, size):
    status, p = c_malloc(d, size)
    assert status == "CCA_ERROR_OUT_OF_MEMORY" and p is None
    r = cca.last_oom(d)
    assert r is not None and r.requested == size and r.device == d
    assert len(str(r).splitlines()) == 3 and str(r).startswith("cca: out of memory on device %d" % d)
    assert not str(r).endswith("\n")
    return r


def test_four_of_the_verdicts(sim):                  # the fifth, stranded: test_verdicts.py
    exhausted = sim.fresh_device(64 * MiB)
    assert cca.last_oom(exhausted) is None
    held = [c_malloc(exhausted, 20 * MiB)[1] for _ in range(3)]
    r = _oom(exhausted, 8 * MiB)
    assert r.verdict == "exhausted" and r.need_live == 16 * MiB and "of live allocations" in r.advice

    fragmented = sim.fresh_device(61 * MiB)
    blocks = [c_malloc(fragmented, 2 * MiB)[1] for _ in range(30)]
    for p in blocks[::2]:
        c_free(fragmented, p)
    r = _oom(fragmented, 6 * MiB)
    assert r.verdict == "fragmented" and r.need_cached == 19 * MiB and r.largest_free == 2 * MiB

    cap = sim.fresh_device(256 * MiB)
    cca.set_per_process_memory_fraction(40 * MiB / (256 * MiB), cap)
    keep = c_malloc(cap, 30 * MiB)[1]
    r = _oom(cap, 12 * MiB)
    assert r.verdict == "cap" and r.need_cap == 2 * MiB and r.cap == 40 * MiB

    external = sim.fresh_device(64 * MiB)
    sim.outside(external, 60 * MiB)
    r = _oom(external, 8 * MiB)
    assert r.verdict == "external" and r.external == 60 * MiB and r.need_external == 16 * MiB
    assert cca.memory_stats(external)["num_ooms"] == 1
    for p in held:
        c_free(exhausted, p)
    for p in blocks[1::2]:
        c_free(fragmented, p)
    c_free(cap, keep)


def test_out_of_memory_error_carries_this_threads_report(sim):
    d = sim.fresh_device(64 * MiB)
    lib = _lib.lib()
    oom = next(i for i in range(64) if lib.cca_status_string(i).decode() == "CCA_ERROR_OUT_OF_MEMORY")
    assert c_malloc(d, 65 * MiB)[0] == "CCA_ERROR_OUT_OF_MEMORY"
    with pytest.raises(cca.OutOfMemoryError) as e:
        _core.check(oom, "allocating")
    assert e.value.report.requested == 65 * MiB and e.value.report.device == d
    assert e.value.report.verdict == "exhausted"

    def other():
        with pytest.raises(cca.OutOfMemoryError) as e2:
            _core.check(oom, "allocating")
        return e2.value.report

    import threading
    got = []
    t = threading.Thread(target=lambda: got.append(other()))
    t.start()
    t.join()
    assert got == [None], "a thread that had no out-of-memory gets no report"


def _check_stat(stat, base):
    for k, part in enumerate(("current", "peak", "allocated", "freed"), 1):
        assert getattr(stat, part) == (base + k) * 1000 + 1, (part, base)


@pytest.mark.parametrize("name", ["cca_stats_t", "cca_config_t", "cca_frag_t", "cca_segment_info_t",
                                  "cca_block_info_t", "cca_oom_report_t", "cca_scope_result_t", "cca_history_entry_t",
                                  "cca_notice_t"])
def test_ctypes_layouts_read_what_c_wrote(probe, name):
    cls = _lib.struct(name)
    obj = cls()
    assert probe.cca_probe_fill(name.encode(), ctypes.byref(obj)) == len(cls._cca_fields)
    for i, field in enumerate(cls._cca_fields, 1):
        v = getattr(obj, field)
        ctype = dict(cls._fields_)[field]
        if name == "cca_stats_t":
            if field in TORCH_STATS:
                for j in range(3):
                    _check_stat(v[j], i * 100 + j * 10)
            elif field.startswith("oversize") or field == "unmapped_bytes":
                _check_stat(v, i * 100)
            else:
                assert v == i * 1000 + 1, field
        elif getattr(ctype, "_type_", None) is ctypes.c_char:
            assert v == b"f%d" % i, field
        elif field == "classes":
            for j in range(len(v)):
                base = (i * 1000 + j + 1) // 10
                for k, part in enumerate(type(v[j])._cca_fields, 1):
                    assert getattr(v[j], part) == (base + k) * 1000 + 1, (field, j, part)
        elif hasattr(v, "__len__"):
            assert list(v) == [i * 1000 + j + 1 for j in range(len(v))], field
        else:
            assert v == i * 1000 + 1, field


def test_configure_before_first_use_in_a_fresh_process(sim):
    code = ("import cca; cca.configure('preset:lean'); print(cca.memory_stats(0)['max_split_size']);"
            "import sys\ntry:\n    cca.configure('preset:pytorch')\nexcept ValueError as e:\n    print('late:', e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[0] == str(128 * MiB)
    assert out.splitlines()[1].startswith("late:") and "in use" in out
    bad = subprocess.run([sys.executable, "-c", "import cca; cca.configure('max_split_size_mb:5')"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "max_split_size_mb" in bad.stderr


def test_config_keys_and_errors(sim):
    keys = cca.config_keys()
    assert set(keys) == {"max_split_size_mb", "roundup_power2_divisions", "garbage_collection_threshold",
                         "memory_fraction", "memory_limit_mb", "release_before_grow", "segment_growth_percent",
                         "expandable_segments", "preset", "trace_file"}
    assert keys["preset"][2] == "pytorch"
    with pytest.raises(ValueError, match="in use"):
        cca.configure("preset:lean")                  # the allocators of this process exist already
    assert issubclass(cca.OutOfMemoryError, MemoryError) and issubclass(cca.OutOfMemoryError, RuntimeError)


def test_expandable_segments_in_a_fresh_process(sim):
    """CCA_CONF=expandable_segments:True: torch's names answer from cca (a map
    is a device allocation, as in torch), and expandable_stats() adds the
    handles: one 30 MiB handle, then empty_cache unmaps and releases it."""
    code = ("import cca, sys; sys.path.insert(0, 'tests'); from cmem import c_malloc, c_free\n"
            "p = c_malloc(0, 30 << 20); s = cca.memory_stats(0); x = cca.expandable_stats(0)\n"
            "print(s['reserved_bytes.all.current'], s['num_device_alloc'], s['segment.all.current'],"
            " x['num_handle_create'], x['unmapped_bytes']['current'])\n"
            "c_free(0, p); cca.empty_cache(); x = cca.expandable_stats(0)\n"
            "print(cca.memory_reserved(0), x['num_device_free'], x['num_handle_release'])")
    env = dict(os.environ, CCA_CONF="expandable_segments:True")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))).stdout.split()
    assert out == [str(30 * MiB), "1", "1", "1", "0", "0", "1", "1"]
