"""The real CuPy (cupy-cuda13x) and Numba (numba-cuda) against cca, on the
simulated device, as far as each gets without a GPU.

- numba-cuda runs whole here (the simulator is its driver): the EMM plugin
  through NUMBA_CUDA_MEMORY_MANAGER and through set_memory_manager,
  memalloc, get_memory_info, per-thread default streams from numba-cuda's
  configuration, and an out-of-memory that is one OOM, counted and
  reported once. No kernel: NVVM is not here (scripts/gpu-check runs one).
- CuPy links its CUDA runtime statically, and that runtime needs the
  driver's private export tables (cuGetExportTable), which no stand-in can
  honestly give: it does not start here (checked below, so that this file
  says when that changes). What runs without it is tested here - the
  installed allocator, CuPy's own CFunctionAllocator over cca's C pair (made;
  its malloc stops at CuPy's runtime), CuPy's OutOfMemoryError with cca's
  report and its pickling, the Pool methods that ask cca only; the
  allocation paths stay with the stand-ins (python/tests/test_frameworks.py)
  and the GPU run."""
import json
import os
import subprocess
import sys

NUMBA = r"""
import json, os, sys
if "alone" in sys.argv:                               # numba's own numba.cuda, not numba-cuda's redirect
    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "NumbaCudaFinder"]
from numba import cuda
import cca, cca._core, cca._lib
import cca.allocators.numba as cn
if "call" in sys.argv:
    cuda.set_memory_manager(cn.CcaMemoryManager)
fired = []
cca.on_oom(lambda r: fired.append(r.verdict), device=0)
out = {"module": cuda.__file__, "per_thread": cn._per_thread_default_stream()}
a = cuda.device_array(1 << 20, dtype="f4")
ctx = cuda.current_context()
out["manager"] = type(ctx.memory_manager).__name__
out["allocated"] = cca.memory_allocated(0)
out["ptr"] = int(a.device_ctypes_pointer.value)
seg = [s for s in cca.memory_snapshot() if s["address"] <= out["ptr"] < s["address"] + s["total_size"]]
out["stream"] = seg[0]["stream"] if seg else None
info = ctx.get_memory_info()
free, total = cca.mem_get_info(0)
out["info"] = [info.free, info.total]
out["expected_info"] = [free + cca.memory_reserved(0) - cca.memory_allocated(0), total]
del a
import gc; gc.collect()
ctx.deallocations.clear()
out["after_free"] = cca.memory_allocated(0)
cca._lib.lib().cca_set_memory_limit(cca._core.allocator(0), 64 << 20)
out["info_capped"] = ctx.get_memory_info().free
try:
    cuda.device_array(128 << 20, dtype="u1")
    out["oom"] = None
except Exception as e:
    from numba.cuda.cudadrv.driver import CudaAPIError
    out["oom"] = {"type": type(e).__name__, "is_api_error": isinstance(e, CudaAPIError), "code": int(e.code),
                  "first": str(e).split("\n")[0], "report": str(getattr(e, "cca_report", None))}
out["num_ooms"] = cca.memory_stats(0)["num_ooms"]
import time
for _ in range(100):
    if fired:
        break
    time.sleep(0.05)
time.sleep(0.2)                                       # a second report would have come by now
out["fired"] = fired
print(json.dumps(out))
"""


def run(code, *args, **env):
    e = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CUDA_MEMORY_MANAGER", "CCA_CONF")}
    e.update(env)
    r = subprocess.run([sys.executable, "-c", code] + list(args), capture_output=True, text=True, timeout=300, env=e)
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.strip().split("\n")[-1])


def check_numba(out, alone=False):
    assert ("numba_cuda" in out["module"]) is not alone, out["module"]
    assert out["manager"] == "CcaMemoryManager"
    assert out["allocated"] == 4 << 20
    assert out["info"] == out["expected_info"] and out["info"][1] == 80 << 30
    assert out["after_free"] == 0
    assert out["info_capped"] == 64 << 20, "what the cap still allows (nothing allocated)"
    oom = out["oom"]
    assert oom and oom["is_api_error"] and oom["code"] == 2, oom
    assert oom["first"].endswith("cca: out of memory allocating 134217728 bytes"), oom["first"]
    assert oom["report"].startswith("cca: out of memory on device 0"), oom["report"]
    assert out["num_ooms"] == 1, "one failed allocation, one OOM"
    assert out["fired"] == ["cap"], "reported once"


def test_numba_through_the_variable():
    out = run(NUMBA, "env", NUMBA_CUDA_MEMORY_MANAGER="cca.allocators.numba")
    check_numba(out)
    assert out["per_thread"] is False and out["stream"] == 0


def test_numba_through_set_memory_manager():
    check_numba(run(NUMBA, "call"))


def test_numba_alone_through_both_routes():
    """numba without numba-cuda's redirect: its own numba.cuda and ctypes
    binding (a ctypes pointer, numba.core.config)."""
    check_numba(run(NUMBA, "env", "alone", NUMBA_CUDA_MEMORY_MANAGER="cca.allocators.numba"), alone=True)
    out = run(NUMBA, "call", "alone", NUMBA_CUDA_PER_THREAD_DEFAULT_STREAM="1")
    check_numba(out, alone=True)
    assert out["per_thread"] is True and out["stream"] not in (0, None)


def test_numba_per_thread_default_stream_from_numba_cudas_config():
    """numba-cuda's configuration (numba.cuda.core.config, which numba-cuda
    0.30 makes numba's own where numba is installed, as here: numba-cuda
    without numba is not tested)."""
    out = run(NUMBA, "env", NUMBA_CUDA_MEMORY_MANAGER="cca.allocators.numba", NUMBA_CUDA_PER_THREAD_DEFAULT_STREAM="1")
    assert out["per_thread"] is True
    assert out["stream"] not in (0, None), "allocated on cudaStreamPerThread, not the legacy stream"
    check_numba(out)


CUPY = r"""
import ctypes, json, pickle, warnings
import cupy
import cca, cca._core, cca._lib
import cca.allocators.cupy as cc
out = {}
cc.install()
out["installed"] = cupy.cuda.get_allocator() is cc.malloc
try:
    cupy.cuda.runtime.getDeviceCount()
    out["runtime_starts"] = True
except cupy.cuda.runtime.CUDARuntimeError as e:
    out["runtime_starts"] = str(e).split(":")[0]
ca = cc.c_function_allocator()                      # CuPy's own CFunctionAllocator over the hooks' C pair
out["cfa"] = [type(ca.allocator).__module__ + "." + type(ca.allocator).__name__, callable(ca.malloc)]
try:
    ca.malloc(1 << 20)                                # CuPy asks its runtime for the device first
    out["cfa_malloc"] = "ran"
except cupy.cuda.runtime.CUDARuntimeError as e:
    out["cfa_malloc"] = str(e).split(":")[0]
pool = cc.Pool(0)
a = cca._core.allocator(0)
lib = cca._lib.lib()
ps = []
for n in (1 << 20, 3 << 20, 1 << 20):
    p = ctypes.c_void_p()
    assert lib.cca_malloc(a, ctypes.byref(p), n, None) == 0
    ps.append(p.value)
lib.cca_free(a, ps[1])
out["used"], out["total"], out["free"], out["n_free"] = pool.used_bytes(), pool.total_bytes(), pool.free_bytes(), pool.n_free_blocks()
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    for p in (ps[0], ps[2]):
        lib.cca_free(a, p)
    pool.free_all_free()
out["deprecated"] = [str(x.message) for x in w if issubclass(x.category, DeprecationWarning)]
out["after_free_all"] = pool.total_bytes()
pool.set_limit(size=64 << 20)
out["limit"] = pool.get_limit()
p = ctypes.c_void_p()
out["oom_status"] = lib.cca_malloc(a, ctypes.byref(p), 128 << 20, None)
err = cc._oom_error(cupy, 128 << 20, 0)
out["is_cupys"] = isinstance(err, cupy.cuda.memory.OutOfMemoryError) and isinstance(err, MemoryError)
back = pickle.loads(pickle.dumps(err))
out["pickled"] = {"type_ok": isinstance(back, cupy.cuda.memory.OutOfMemoryError), "args_same": back.args == err.args,
                  "report_same": str(back.cca_report) == str(err.cca_report), "verdict": back.cca_report.verdict}
out["text"] = str(err)
print(json.dumps(out))
"""


def test_cupy_as_far_as_its_runtime_allows():
    out = run(CUPY)
    assert out["runtime_starts"] == "cudaErrorCallRequiresNewerDriver", \
        "CuPy's static runtime starts on the simulator now: move the stand-in allocation tests here"
    assert out["installed"] is True
    assert out["cfa"] == ["cupy.cuda.memory.CFunctionAllocator", True]
    assert out["cfa_malloc"] == "cudaErrorCallRequiresNewerDriver"   # as far as the C pair gets here
    # two 1 MiB blocks fill a 2 MiB small segment; the 3 MiB one, freed, merged back into its 20 MiB segment
    assert out["used"] == 2 << 20 and out["total"] == 22 << 20 and out["free"] == 20 << 20
    assert out["n_free"] == 1, out
    assert out["deprecated"] == ["free_all_free is deprecated; use free_all_blocks instead"]
    assert out["after_free_all"] == 0
    assert out["limit"] == 64 << 20
    assert out["oom_status"] != 0
    assert out["is_cupys"] is True
    assert out["pickled"] == {"type_ok": True, "args_same": True, "report_same": True, "verdict": "cap"}
    first, rest = out["text"].split("\n", 1)
    assert first.startswith("Out of memory allocating 134,217,728 bytes") or first.startswith(
        "Out of memory allocating 134217728 bytes"), first
    assert rest.startswith("cca: out of memory on device 0"), rest


CUPY_ALLOC = r"""
import gc, json, time
import cupy
import cca, cca._core, cca._lib
import cca.allocators.cupy as cc


class Device:
    # stand-in for cupy.cuda.Device only: the real one asks CuPy's runtime, which does not start here
    def __init__(self, device=None):
        self.id = 0 if device is None else int(device)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class NullStream:                                     # stand-in for get_current_stream() likewise
    ptr = 0


cupy.cuda.Device = Device
cupy.cuda.get_current_stream = lambda: NullStream()
cc.install()
out = {}
mp = cupy.cuda.alloc(3 << 20)                         # CuPy's own alloc, through the installed allocator
out["pointer"] = [type(mp).__module__ + "." + type(mp).__name__, mp.ptr != 0, mp.device_id]
out["allocated"] = cca.memory_allocated(0)
x = cupy.ndarray((3 << 20,), dtype=cupy.uint8, memptr=mp)
out["array_ptr_is_cca"] = x.data.ptr == mp.ptr
del x, mp
gc.collect()
out["after_drop"] = cca.memory_allocated(0)
q = cc.Pool(0).malloc(1 << 20)
out["pool_malloc"] = [type(q).__name__, cca.memory_allocated(0)]
del q
gc.collect()
cca._lib.lib().cca_set_memory_limit(cca._core.allocator(0), 64 << 20)
fired = []
h = cca.on_oom(lambda r: fired.append(r.requested), device=0)
gc.disable()                                          # only the adapter's own collection frees the cycle
held = cupy.cuda.alloc(40 << 20)
cycle = [held]
cycle.append(cycle)
del held, cycle
again = cupy.cuda.alloc(40 << 20)                     # fails tentatively, the cycle is collected, succeeds
out["after_gc"] = [cca.memory_allocated(0), cca.memory_stats(0)["num_ooms"]]
del again
gc.enable()
gc.collect()
try:
    cupy.cuda.alloc(128 << 20)
    out["oom"] = None
except cupy.cuda.memory.OutOfMemoryError as e:
    out["oom"] = [type(e).__qualname__, str(e.cca_report).split("\n")[0]]
for _ in range(100):
    if fired:
        break
    time.sleep(0.02)
time.sleep(0.2)
out["num_ooms"] = cca.memory_stats(0)["num_ooms"]
out["fired"] = fired
print(json.dumps(out))
"""


def test_cupy_allocates_through_cca_with_its_runtime_stood_in():
    """Real CuPy objects (alloc, MemoryPointer, ndarray, the garbage
    collector's retry), with the two calls that need CuPy's runtime -
    cupy.cuda.Device and get_current_stream - stood in."""
    out = run(CUPY_ALLOC)
    assert out["pointer"] == ["cupy.cuda.memory.MemoryPointer", True, 0]
    assert out["allocated"] == 3 << 20 and out["array_ptr_is_cca"] is True
    assert out["after_drop"] == 0, "CuPy dropped the memory: back to cca"
    assert out["pool_malloc"] == ["MemoryPointer", 1 << 20]
    assert out["after_gc"] == [40 << 20, 0], "a failure the collection cured is no OOM"
    assert out["oom"] == ["OutOfMemoryError", "cca: out of memory on device 0: 128.00 MiB requested (128.00 MiB "
                          "rounded, large pool, stream 0): cap"]
    assert out["num_ooms"] == 1 and out["fired"] == [128 << 20], "one failed allocation, one OOM, reported once"


PICKLED = r"""
import pickle, sys
err = pickle.load(open(sys.argv[1], "rb"))
import cupy
print(type(err).__qualname__, isinstance(err, cupy.cuda.memory.OutOfMemoryError))
print(err.cca_report.verdict, err.cca_report.holders, err.note)
print(str(err.cca_report).split("\n")[0])
"""


def test_a_pickled_cupy_oom_reads_in_another_process_without_libcca(tmp_path):
    code = CUPY.replace("print(json.dumps(out))", "err.note = 'kept'\npickle.dump(err, open(%r, 'wb'))\n"
                        "print(json.dumps(out))" % str(tmp_path / "err.pickle"))
    code = code.replace("p = ctypes.c_void_p()\nout[\"oom_status\"]", "cca.tag('optimizer').__enter__()\n"
                        "keep = ctypes.c_void_p()\nassert lib.cca_malloc(a, ctypes.byref(keep), 8 << 20, None) == 0\n"
                        "p = ctypes.c_void_p()\nout[\"oom_status\"]")
    run(code)
    r = subprocess.run([sys.executable, "-c", PICKLED, str(tmp_path / "err.pickle")], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "CCA_LIBRARY": str(tmp_path / "no-libcca.so")})
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.strip().split("\n")
    assert lines[0] == "OutOfMemoryError True"
    assert lines[1] == "cap [('optimizer', 8388608)] kept", lines[1]   # the tag's name, resolved where it was made
    assert lines[2].startswith("cca: out of memory on device 0: 128.00 MiB requested"), lines[2]
