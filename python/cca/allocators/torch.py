"""cca as PyTorch's CUDA allocator::

    import cca.allocators.torch
    cca.allocators.torch.install()          # before anything initializes CUDA

torch then allocates from cca's per-device allocators through
``CUDAPluggableAllocator`` (libcca_hooks), and, with ``patch_torch``, its
memory functions (``torch.cuda.memory_stats``, ``memory_allocated``,
``max_memory_allocated``, ``memory_reserved``, ``max_memory_reserved``,
``memory_summary``, ``reset_peak_memory_stats``,
``reset_accumulated_memory_stats``, ``memory_snapshot``,
``get_per_process_memory_fraction``), which raise under a plugged
allocator in torch 2.11, answer from cca. ``empty_cache``,
``set_per_process_memory_fraction``, ``tensor.record_stream`` and
``mem_get_info`` reach cca through torch's own hooks.

Not supported yet: CUDA-graph pools (``torch.cuda.graph``,
``torch.compile(mode="reduce-overhead")``, ``torch.cuda.MemPool``: an
allocation while capturing raises a clear error), CUDA IPC of tensors, and
``torch.backends.cudnn.benchmark`` (cuDNN asks the allocator for cacheInfo,
which a plugged allocator cannot answer; install() warns).
"""

import ctypes
import functools
import warnings

import cca
from cca import _core, _lib
from . import torch_oom

_installed = None                                     # keeps every ctypes object alive
_PATCHED = ("memory_stats", "memory_stats_as_nested_dict", "memory_allocated", "max_memory_allocated",
            "memory_reserved", "max_memory_reserved", "memory_summary", "reset_peak_memory_stats",
            "reset_accumulated_memory_stats", "memory_snapshot", "get_per_process_memory_fraction",
            "reset_max_memory_allocated")


def _torch():
    import torch                                      # noqa: imported on use: cca works without torch
    return torch


def install(conf=None, patch_torch=True):
    """Makes cca torch's CUDA allocator. conf: a configuration string
    (CCA_CONF's syntax) for cca's allocators. Raises RuntimeError if CUDA is
    initialized already (the allocator cannot change then). Returns the
    CUDAPluggableAllocator."""
    global _installed
    torch = _torch()
    if _installed is not None:
        return _installed[0]
    if torch.cuda.is_initialized():
        raise RuntimeError("cca.allocators.torch.install() must run before anything initializes CUDA "
                           "(a tensor on the GPU, torch.cuda.current_device(), ...): call it first")
    if conf is not None:
        cca.configure(conf)
    lib = _lib.lib()                                   # libcca first: the hooks bind to this one
    path = _lib.hooks_path()
    hooks = ctypes.CDLL(path)
    alloc = torch.cuda.memory.CUDAPluggableAllocator(path, "cca_torch_malloc", "cca_torch_free")
    target = alloc.allocator() if callable(getattr(alloc, "allocator", None)) else alloc._allocator

    def addr(name):
        return ctypes.cast(getattr(hooks, name), ctypes.c_void_p).value

    setters = (("set_init_fn", "cca_torch_init"), ("set_reset_fn", "cca_torch_empty_cache"),
               ("set_memory_fraction_fn", "cca_torch_set_memory_fraction"),
               ("set_record_stream_fn", "cca_torch_record_stream"),
               ("set_begin_allocate_to_pool", "cca_torch_begin_allocate_to_pool"),
               ("set_end_allocate_to_pool_fn", "cca_torch_end_allocate_to_pool"),
               ("set_release_pool", "cca_torch_release_pool"))
    missing = []
    for setter, symbol in setters:
        if hasattr(target, setter):
            getattr(target, setter)(addr(symbol))
        else:
            missing.append(setter)
    if "set_record_stream_fn" in missing:
        warnings.warn("cca: this torch has no set_record_stream_fn: tensor.record_stream() will be ignored, "
                      "which can reuse memory another stream still reads", RuntimeWarning, stacklevel=2)
    if getattr(getattr(torch.backends, "cudnn", None), "benchmark", False):
        warnings.warn("cca: torch.backends.cudnn.benchmark is on; cuDNN asks the allocator for cacheInfo, which a "
                      "pluggable allocator cannot answer, and the benchmark will fail: set it to False",
                      RuntimeWarning, stacklevel=2)
    raiser = _torch_oom(torch, hooks)
    torch.cuda.memory.change_current_allocator(alloc)
    _installed = (alloc, hooks, lib, target, raiser)
    if patch_torch:
        _patch(torch)
    return alloc


# What torch answers itself before CUDA starts (no tensor on the GPU yet, or
# no GPU): {} and zeros, creating nothing. Until then - while no framework
# has allocated from cca either - these patched functions are torch's own;
# after, cca's. (torch's memory_summary, like
# the rest, starts CUDA itself: those are cca's from the start.)
_TORCH_UNTIL_CUDA = ("memory_stats", "memory_stats_as_nested_dict", "memory_allocated", "max_memory_allocated",
                     "memory_reserved", "max_memory_reserved")


def _until_cuda(torch, own, fn):
    @functools.wraps(fn)
    def answer(*args, **kwargs):
        if not torch.cuda.is_initialized() and not _core.existing_allocators():   # CuPy or Numba may use cca first
            return own(*args, **kwargs)
        return fn(*args, **kwargs)
    return answer


def _patch(torch):
    for name in _PATCHED:
        fn = getattr(cca, name)
        for mod in (torch.cuda.memory, torch.cuda):
            if hasattr(mod, name):
                own = getattr(mod, name)
                setattr(mod, name, _until_cuda(torch, own, fn) if name in _TORCH_UNTIL_CUDA else fn)


_warned = []


def _torch_oom(torch, hooks):
    """Registers torch's OOM exception with the hooks (torch_oom.py); warns
    once, saying what an OOM will be instead, where it cannot be had."""
    raiser, why = torch_oom.load(torch)
    if raiser is None:
        if not _warned:
            _warned.append(why)
            warnings.warn(f"cca: an out-of-memory under cca will raise RuntimeError, not torch.OutOfMemoryError, "
                          f"with the same message (torch's first line and cca's report): cca's torch exception "
                          f"cannot be built: {why}", RuntimeWarning, stacklevel=3)
        return None
    hooks.cca_hooks_set_oom_raiser.argtypes = [ctypes.c_void_p]
    hooks.cca_hooks_set_oom_raiser(ctypes.cast(raiser.cca_torch_raise_oom, ctypes.c_void_p))
    return raiser


def throws_torch_oom():
    """True when an OOM in a torch operation raises torch.OutOfMemoryError
    (install() registered torch's exception with the hooks), False when
    RuntimeError."""
    hooks = ctypes.CDLL(_lib.hooks_path())
    return bool(hooks.cca_hooks_throws_torch_oom())


__all__ = ["install", "throws_torch_oom"]
