"""cca.allocators.torch.install(): against a stand-in for torch that records
what torch's CUDAPluggableAllocator would get (the hook library's path and
symbols, every optional hook's address, the swap, the primitives of
torch._C that cca answers),
and against the real torch where it is importable (skipped otherwise)."""
import ctypes
import importlib
import subprocess
import sys
import types

import pytest

import cca
from cca import _lib

MiB = 1 << 20


class FakeHooks:
    def __init__(self):
        self.set = {}

    def __getattr__(self, name):
        if name.startswith("set_"):
            return lambda addr: self.set.__setitem__(name, addr)
        raise AttributeError(name)


class FakePluggable:
    """Like torch.cuda.memory.CUDAPluggableAllocator: loads the library with
    ctypes.CDLL and keeps the two functions' addresses."""
    made = []

    def __init__(self, path, alloc_name, free_name):
        lib = ctypes.CDLL(path)
        self.path = path
        self.alloc = ctypes.cast(getattr(lib, alloc_name), ctypes.c_void_p).value
        self.free = ctypes.cast(getattr(lib, free_name), ctypes.c_void_p).value
        self._allocator = FakeHooks()
        FakePluggable.made.append(self)

    def allocator(self):
        return self._allocator


def fake_torch(initialized=False, benchmark=False):
    """torch as far as install() sees it: torch._C's memory primitives, which
    raise under a plugged allocator as torch's do, and torch.cuda.memory's
    Python functions over them (torch's own shape: {} before CUDA starts)."""
    torch = types.ModuleType("torch")

    def refuses(what):
        def primitive(*a, **k):
            raise RuntimeError("CUDAPluggableAllocator does not yet support %s" % what)
        return primitive

    torch._C = types.SimpleNamespace(_cuda_memoryStats=refuses("getDeviceStats"),
                                     _cuda_resetPeakMemoryStats=refuses("resetPeakStats"),
                                     _cuda_memorySnapshot=refuses("snapshot"),
                                     _cuda_record_memory_history=refuses("recordHistory"))
    memory = types.ModuleType("torch.cuda.memory")
    memory.CUDAPluggableAllocator = FakePluggable
    memory.swapped = []
    memory.change_current_allocator = memory.swapped.append
    cuda = types.ModuleType("torch.cuda")
    cuda.is_initialized = lambda: initialized

    def memory_stats_as_nested_dict(device=None):
        return torch._C._cuda_memoryStats(device) if cuda.is_initialized() else {}

    def memory_allocated(device=None):
        return memory.memory_stats_as_nested_dict(device).get("allocated_bytes", {}).get("all", {}).get("current", 0)

    memory.memory_stats_as_nested_dict = memory_stats_as_nested_dict
    memory.memory_allocated = memory_allocated
    memory.reset_peak_memory_stats = lambda device=None: torch._C._cuda_resetPeakMemoryStats(device)
    cuda.memory = memory
    for name in dir(memory):
        if not name.startswith("_") and callable(getattr(memory, name)):
            setattr(cuda, name, getattr(memory, name))
    torch.cuda = cuda
    torch.backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(benchmark=benchmark))
    return torch


@pytest.fixture
def installer(monkeypatch):
    def make(**kw):
        torch = fake_torch(**kw)
        monkeypatch.setitem(sys.modules, "torch", torch)
        mod = importlib.import_module("cca.allocators.torch")
        monkeypatch.setattr(mod, "_installed", None)
        return mod, torch
    return make


def test_install_wires_every_hook_and_answers_torchs_functions(installer, sim):
    mod, torch = installer()
    FakePluggable.made.clear()
    alloc = mod.install()
    assert FakePluggable.made == [alloc] and torch.cuda.memory.swapped == [alloc]
    assert alloc.path == _lib.hooks_path()
    hooks = ctypes.CDLL(alloc.path)

    def addr(name):
        return ctypes.cast(getattr(hooks, name), ctypes.c_void_p).value

    assert alloc.alloc == addr("cca_torch_malloc") and alloc.free == addr("cca_torch_free")
    assert alloc._allocator.set == {
        "set_init_fn": addr("cca_torch_init"), "set_reset_fn": addr("cca_torch_empty_cache"),
        "set_memory_fraction_fn": addr("cca_torch_set_memory_fraction"),
        "set_record_stream_fn": addr("cca_torch_record_stream"),
        "set_begin_allocate_to_pool": addr("cca_torch_begin_allocate_to_pool"),
        "set_end_allocate_to_pool_fn": addr("cca_torch_end_allocate_to_pool"),
        "set_release_pool": addr("cca_torch_release_pool")}
    # torch calls the malloc address: the bytes are cca's, and torch's functions say so
    d = sim.fresh_device()
    malloc = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p)(alloc.alloc)
    free = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p)(alloc.free)
    p = malloc(5 * MiB, d, None)
    assert p
    torch.cuda.is_initialized = lambda: True          # torch has started CUDA by the time it allocates
    for m in (torch.cuda, torch.cuda.memory):         # torch's own functions, over cca's primitives
        assert m.memory_allocated(d) == 5 * MiB
        assert m.memory_stats_as_nested_dict(d)["allocation"]["all"]["current"] == 1
    assert torch._C._cuda_memoryStats(d)["allocated_bytes"]["all"]["peak"] == 5 * MiB
    torch.cuda.memory.reset_peak_memory_stats(d)
    assert torch._C._cuda_memorySnapshot(None)["segments"][0]["segment_pool_id"] == (0, 0)
    assert torch._C._cuda_record_memory_history.__wrapped__.__name__ == "primitive", "torch's own, replaced"
    assert not hasattr(torch._C, "_cuda_isHistoryEnabled"), "a primitive this torch lacks is not added"
    free(p, 5 * MiB, d, None)
    assert torch.cuda.memory_allocated(d) == 0
    assert mod.install() is alloc, "a second install is the first one"
    assert mod.throws_torch_oom() in (True, False)


def test_install_refuses_after_cuda_is_initialized(installer):
    mod, torch = installer(initialized=True)
    with pytest.raises(RuntimeError, match="before anything initializes CUDA"):
        mod.install()
    assert torch.cuda.memory.swapped == []


def test_install_warns_about_cudnn_benchmark(installer):
    mod, torch = installer(benchmark=True)
    with pytest.warns(RuntimeWarning, match="cudnn.benchmark"):
        mod.install(patch_torch=False)
    torch.cuda.is_initialized = lambda: True
    with pytest.raises(RuntimeError, match="getDeviceStats"):
        torch.cuda.memory_allocated(0)                # not answered: torch's own, which raises


def _real_torch():
    try:
        import torch  # noqa: F401
    except Exception as e:                            # noqa: BLE001 - any failure to import means no torch here
        pytest.skip("torch is not importable here (%s): skipped; scripts/gpu-check runs it on a GPU" % e)


def test_real_torch_swaps_to_cca():
    _real_torch()
    code = ("import torch, cca.allocators.torch as t; a = t.install(); "
            "print(type(a).__name__, hasattr(torch._C._cuda_memoryStats, '__wrapped__'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["CUDAPluggableAllocator", "True"]


def test_alloc_conf_splits_torchs_syntax():
    from cca.allocators.torch import alloc_conf
    assert alloc_conf("") == ("", [])
    assert alloc_conf(" expandable_segments:True , max_split_size_mb:64") == \
        ("expandable_segments:True,max_split_size_mb:64", [])
    assert alloc_conf("roundup_power2_divisions:[256:1,512:2,>:4],backend:native,pinned_num_register_threads:8") == \
        ("roundup_power2_divisions:[256:1,512:2,>:4]", [])
    assert alloc_conf("backend:cudaMallocAsync,release_lock_on_cudamalloc:True,garbage_collection_threshold:0.5") == \
        ("garbage_collection_threshold:0.5", ["backend:cudaMallocAsync", "release_lock_on_cudamalloc:True"])
    with pytest.raises(ValueError, match="'max_split_size_mb' has no value"):
        alloc_conf("max_split_size_mb")
