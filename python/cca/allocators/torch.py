"""cca as PyTorch's CUDA allocator::

    import cca.allocators.torch
    cca.allocators.torch.install()          # before anything initializes CUDA

torch then allocates from cca's per-device allocators through
``CUDAPluggableAllocator`` (libcca_hooks), and torch's memory API - as the
running torch has it, with its own signatures and types - is answered by
cca: the primitives in ``torch._C`` that its functions call and that raise
or answer nothing under a plugged allocator (``_cuda_memoryStats``, the
resets, ``_cuda_getMemoryFraction``, ``_cuda_memorySnapshot``,
``_cuda_record_memory_history`` and its legacy form,
``_cuda_isHistoryEnabled``, ``_cuda_allocationTraceback``, and
``torch.accelerator``'s ``_accelerator_isAllocatorInitialized``,
``_accelerator_getDeviceStats``, ``_accelerator_emptyCache`` and resets)
are replaced by cca's (``_ANSWERS``, ``_ACCELERATOR``), each only where
this torch has it. So ``torch.cuda.memory_stats``, ``memory_allocated``,
``memory_summary(abbreviated=...)``, ``memory_snapshot(mempool_id,
include_traces)``, ``torch.cuda.memory._record_memory_history``,
``_snapshot``, ``_dump_snapshot``, ``torch.accelerator.memory_allocated``
... are torch's own code over cca's figures: before torch initialises
CUDA, or without a GPU, they answer as torch does ({} and zeros) and
create nothing. One exception: where another framework (CuPy, Numba)
already allocates through cca before torch starts CUDA, torch's
memory_stats family answers from cca (one cache for every framework).
``empty_cache``, ``set_per_process_memory_fraction``,
``tensor.record_stream`` and ``mem_get_info`` reach cca through torch's
own hooks. ``PYTORCH_CUDA_ALLOC_CONF`` (or ``PYTORCH_ALLOC_CONF``) is read
where ``CCA_CONF`` and ``conf`` are not given (``alloc_conf``).

Not supported: CUDA-graph pools (``torch.cuda.graph``,
``torch.compile(mode="reduce-overhead")``, ``torch.cuda.MemPool``: an
allocation while capturing raises a clear error), CUDA IPC of tensors,
``caching_allocator_enable(False)`` (cca always caches: warned),
torch's memory metadata (``_set_memory_metadata``: torch ignores it for
plugged allocators, and says so) and ``torch.backends.cudnn.benchmark``
(cuDNN asks the allocator for cacheInfo, which a plugged allocator cannot
answer; install() warns).
"""

import ctypes
import functools
import os
import sys
import warnings

import cca
from cca import _core, _lib, memory, snapshots
from . import torch_oom

_installed = None                                     # keeps every ctypes object alive


def _torch():
    import torch                                      # noqa: imported on use: cca works without torch
    return torch


# PYTORCH_CUDA_ALLOC_CONF's keys: those cca honours (the same name and
# meaning in cca's configuration), those torch itself still reads under cca
# (its pinned host memory allocator is torch's), and the rest, which cca
# does not honour.
_HONOURED = ("max_split_size_mb", "roundup_power2_divisions", "garbage_collection_threshold", "expandable_segments")
_TORCHS_OWN = ("pinned_use_cuda_host_register", "pinned_num_register_threads", "pinned_use_background_threads",
               "pinned_reserve_segment_size_mb", "pinned_max_register_threads")


def _split_conf(text):
    """torch's `key:value,key:value` (commas inside [...] kept) as pairs."""
    items, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth <= 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    out = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        key, sep, value = item.partition(":")
        out.append((key.strip(), value.strip() if sep else None))
    return out


def alloc_conf(text):
    """cca's configuration for torch's allocator settings `text`
    (PYTORCH_CUDA_ALLOC_CONF's syntax): (conf, not_honoured) - conf holds
    the keys cca honours (max_split_size_mb, roundup_power2_divisions,
    garbage_collection_threshold, expandable_segments, as torch spells
    them), not_honoured names each other key, except those torch's own
    pinned host allocator reads (pinned_*) and backend:native. A key
    without a value is a ValueError, as in torch."""
    keep, ignored = [], []
    for key, value in _split_conf(text):
        if value is None or value == "":
            raise ValueError("PYTORCH_CUDA_ALLOC_CONF: %r has no value (torch's syntax is key:value,key:value)" % key)
        if key in _HONOURED:
            keep.append("%s:%s" % (key, value))
        elif key in _TORCHS_OWN or (key == "backend" and value == "native"):
            continue
        else:
            ignored.append("%s:%s" % (key, value))
    return ",".join(keep), ignored


def _conf_from_torch_env():
    """Configures cca from PYTORCH_ALLOC_CONF or PYTORCH_CUDA_ALLOC_CONF
    (torch's order) where CCA_CONF is unset: each key cca honours applied,
    each other one named in a warning - a warning, not an error, because
    the variable is often set for a whole cluster and the run goes on as
    under torch's allocator but for that key; a bad value of a key cca
    honours is an error, as it is in torch. Where cca's allocators exist
    already (another framework allocated through cca first), nothing can
    change: a warning says so."""
    if os.environ.get("CCA_CONF"):
        return
    name = "PYTORCH_ALLOC_CONF" if os.environ.get("PYTORCH_ALLOC_CONF") else "PYTORCH_CUDA_ALLOC_CONF"
    text = os.environ.get(name, "")
    if not text.strip():
        return
    if _core.existing_allocators():
        warnings.warn("cca: %s is not applied: cca's allocators exist already (another framework allocated "
                      "through cca first); set CCA_CONF, or install() before it" % name, RuntimeWarning, stacklevel=3)
        return
    conf, ignored = alloc_conf(text)
    if ignored:
        warnings.warn("cca: %s's %s not honoured by cca (cca has no such setting): the rest is applied"
                      % (name, ", ".join(ignored) + (" is" if len(ignored) == 1 else " are")),
                      RuntimeWarning, stacklevel=3)
    try:
        cca.configure(conf)
    except ValueError as exc:
        raise ValueError("cca: %s=%r: %s" % (name, text, exc)) from None
    _core.set_configuration(text)                     # what torch's allocator_settings report


def install(conf=None, patch_torch=True):
    """Makes cca torch's CUDA allocator. conf: a configuration string
    (CCA_CONF's syntax) for cca's allocators; without it and without
    CCA_CONF, PYTORCH_ALLOC_CONF or PYTORCH_CUDA_ALLOC_CONF is read
    (alloc_conf: the keys cca honours applied, a warning naming each other
    one). Raises RuntimeError if CUDA is initialized already (the allocator
    cannot change then). Returns the CUDAPluggableAllocator."""
    global _installed
    torch = _torch()
    if _installed is not None:
        return _installed[0]
    if torch.cuda.is_initialized():
        raise RuntimeError("cca.allocators.torch.install() must run before anything initializes CUDA "
                           "(a tensor on the GPU, torch.cuda.current_device(), ...): call it first")
    if conf is not None:
        cca.configure(conf)
    else:
        _conf_from_torch_env()
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
        _answer(torch)
    return alloc


def _device(device):
    return None if device is None else int(device)


def _memory_snapshot(arg=None):
    """torch._C._cuda_memorySnapshot(None or (pool, pool, include_traces))."""
    if arg is None:
        return snapshots.snapshot(as_torch=True)
    out = snapshots.snapshot(include_traces=bool(arg[2]) if len(arg) > 2 else True, as_torch=True)
    if tuple(arg[:2]) != (0, 0):
        out["segments"] = []                          # cca has no private pools
    return out


def _need_device():
    """torch's refusal to record without a GPU."""
    if not snapshots.device_count():
        raise RuntimeError("cca: no CUDA driver or GPU found: torch's memory history needs one")


def _record(enabled, context="all", stacks="all", max_entries=sys.maxsize, clear_history=False,
            compile_context=False, global_record_annotations=False, skip_actions=(), record_pinned_host_memory=False,
            record_cuda=True):
    """torch._C._cuda_record_memory_history, in the order torch's wrapper passes."""
    _need_device()
    snapshots.record_history(enabled, context, stacks, max_entries, None, clear_history, compile_context,
                             global_record_annotations, list(skip_actions) or None, record_pinned_host_memory,
                             record_cuda)


def _record_legacy(enabled, record_context=True, trace_alloc_max_entries=1, trace_alloc_record_context=False,
                   record_context_cpp=False, clear_history=False, compile_context=False,
                   global_record_annotations=False, skip_actions=(), record_pinned_host_memory=False,
                   record_cuda=True):
    """torch._C._cuda_record_memory_history_legacy: the bool form of
    _record_memory_history (events kept: trace_alloc_max_entries; frames of
    live blocks with record_context, of allocations with
    trace_alloc_record_context)."""
    _need_device()
    if not enabled:
        snapshots.record_history(None)
        return
    context = "alloc" if trace_alloc_record_context else "state" if record_context else None
    snapshots.record_history("all", context, "all" if record_context_cpp else "python", max(int(trace_alloc_max_entries), 1),
                             None, clear_history, compile_context, global_record_annotations,
                             list(skip_actions) or None, record_pinned_host_memory, record_cuda)


# torch._C's primitives that raise or answer nothing under a plugged
# allocator, and cca's answers, with the arguments torch's Python passes
_ANSWERS = {
    "_cuda_memoryStats": lambda device: memory.memory_stats_as_nested_dict(_device(device)),
    "_cuda_resetAccumulatedMemoryStats": lambda device: memory.reset_accumulated_memory_stats(_device(device)),
    "_cuda_resetPeakMemoryStats": lambda device: memory.reset_peak_memory_stats(_device(device)),
    "_cuda_getMemoryFraction": lambda device: memory.get_per_process_memory_fraction(_device(device)),
    "_cuda_memorySnapshot": _memory_snapshot,
    "_cuda_record_memory_history": _record,
    "_cuda_record_memory_history_legacy": _record_legacy,
    "_cuda_isHistoryEnabled": snapshots.is_recording,
    "_cuda_allocationTraceback": lambda ptr: snapshots.allocation_frames(int(ptr)),
}
# torch._C's primitives whose plugged form differs from torch's own for one
# input: (name, wrapper of the original)
_AROUND = {
    # caching_allocator_delete(0): nothing, as torch's own allocator; the
    # plugged one raises "Trying to free a pointer not allocated here"
    "_cuda_cudaCachingAllocator_raw_delete": lambda own: lambda ptr: None if not ptr else own(ptr),
}

# What torch.accelerator's device-generic figures lack of torch.cuda's:
# c10's DeviceStats, which they come from, holds no CUDA-only counter
# (num_oom_rejections) and no per-private-pool figures.
_CUDA_ONLY = ("num_oom_rejections", "reserved_bytes_by_private_pools")


def _accelerator_stats(device_index):
    nested = memory.memory_stats_as_nested_dict(_device(device_index))
    return {k: v for k, v in nested.items() if k not in _CUDA_ONLY}


def _answer(torch):
    """Replaces torch._C's primitives with cca's (those this torch has),
    and torch.accelerator's where its accelerator is CUDA; keeps torch's
    memory_stats_as_nested_dict for the one case its own code cannot see
    (another framework allocating through cca before torch starts CUDA)."""
    C = torch._C

    def fresh(fn):                                    # a closure of its own: wraps() must not rename cca's function
        return lambda *args, **kwargs: fn(*args, **kwargs)

    for name, fn in _ANSWERS.items():
        if hasattr(C, name):
            setattr(C, name, functools.wraps(getattr(C, name))(fresh(fn)))
    for name, around in _AROUND.items():
        if hasattr(C, name):
            setattr(C, name, functools.wraps(getattr(C, name))(around(getattr(C, name))))
    own = {name: getattr(C, name) for name in _ACCELERATOR if hasattr(C, name)}

    def on_cuda(name, fn):
        def answer(*args):
            acc = torch.accelerator.current_accelerator() if hasattr(torch, "accelerator") else None
            return fn(*args) if getattr(acc, "type", None) == "cuda" else own[name](*args)
        return answer

    for name, fn in _ACCELERATOR.items():
        if name in own:
            setattr(C, name, on_cuda(name, fn))
    nested = getattr(torch.cuda.memory, "memory_stats_as_nested_dict", None)
    if nested is not None:
        @functools.wraps(nested)
        def memory_stats_as_nested_dict(device=None):
            if not torch.cuda.is_initialized() and _core.existing_allocators():   # CuPy or Numba use cca first
                return memory.memory_stats_as_nested_dict(device)
            return nested(device)
        for mod in (torch.cuda.memory, torch.cuda):
            if getattr(mod, "memory_stats_as_nested_dict", None) is nested:
                mod.memory_stats_as_nested_dict = memory_stats_as_nested_dict
    enable = getattr(torch.cuda.memory, "caching_allocator_enable", None)
    if enable is not None:
        @functools.wraps(enable)
        def caching_allocator_enable(value=True):
            if not value:
                warnings.warn("cca: caching_allocator_enable(False) does nothing under cca, which always caches "
                              "(empty_cache() returns what it holds)", RuntimeWarning, stacklevel=2)
            return enable(value)
        for mod in (torch.cuda.memory, torch.cuda):
            if getattr(mod, "caching_allocator_enable", None) is enable:
                mod.caching_allocator_enable = caching_allocator_enable


_ACCELERATOR = {
    "_accelerator_isAllocatorInitialized": lambda: _torch().cuda.is_initialized(),
    "_accelerator_getDeviceStats": _accelerator_stats,
    "_accelerator_emptyCache": lambda: memory.empty_cache(),
    "_accelerator_resetAccumulatedStats": lambda device: memory.reset_accumulated_memory_stats(_device(device)),
    "_accelerator_resetPeakStats": lambda device: memory.reset_peak_memory_stats(_device(device)),
}


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


__all__ = ["install", "throws_torch_oom", "alloc_conf"]
