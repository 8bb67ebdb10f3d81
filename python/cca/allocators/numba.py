"""cca as Numba's CUDA memory manager (an EMM plugin), sharing one cache
with PyTorch and CuPy::

    NUMBA_CUDA_MEMORY_MANAGER=cca.allocators.numba python prog.py

or, in the program, before Numba creates a context::

    from numba import cuda
    import cca.allocators.numba
    cuda.set_memory_manager(cca.allocators.numba.CcaMemoryManager)

Device memory comes from cca's allocator of the context's device, on the
default stream (cudaStreamPerThread when Numba uses per-thread default
streams); it goes back to cca when Numba finalizes it. ``get_memory_info``
is answered by cca: free = the device's free bytes plus what cca holds
cached (bounded by cca's cap where one is set), total = the device's. An
out-of-memory (after cca's own release-and-retry) raises Numba's
``CudaAPIError`` with ``CUDA_ERROR_OUT_OF_MEMORY`` and cca's report in the
message (``.cca_report``). Host (pinned, mapped) memory stays Numba's own.
"""

import ctypes
import importlib

import cca
from cca import _core, _lib

from numba import cuda as _cuda                       # this module is Numba's plugin: Numba is there

__all__ = ["CcaMemoryManager"]

_CUDA_ERROR_OUT_OF_MEMORY = 2
_PER_THREAD = ctypes.c_void_p(2)                      # cudaStreamPerThread


def _driver():
    from numba.cuda.cudadrv import driver             # noqa: imported on use
    return driver


_configs = []


def _config():
    """numba-cuda's configuration (numba.cuda.core.config), else Numba's
    own (numba.core.config, numba alone), else None; found once (numba-cuda
    0.30 makes its own numba's where numba is installed)."""
    if not _configs:
        found = None
        for name in ("numba.cuda.core.config", "numba.core.config"):
            try:
                found = importlib.import_module(name)
                break
            except ImportError:
                continue
        _configs.append(found)
    return _configs[0]


def _per_thread_default_stream():
    return bool(getattr(_config(), "CUDA_PER_THREAD_DEFAULT_STREAM", False))


def _oom_code():
    """CUDA_ERROR_OUT_OF_MEMORY as this Numba's errors carry it (the NVIDIA
    bindings' enum under numba-cuda, else the integer)."""
    binding = getattr(_driver(), "binding", None)
    return getattr(getattr(binding, "CUresult", None), "CUDA_ERROR_OUT_OF_MEMORY", _CUDA_ERROR_OUT_OF_MEMORY)


def _device_pointer(ptr):
    """The pointer as Numba's MemoryPointer wants it: a CUdeviceptr of the
    NVIDIA bindings when Numba uses them (it calls int() on it), else a
    ctypes integer (as Numba's own ctypes binding makes)."""
    drv = _driver()
    nv = getattr(drv, "USE_NV_BINDING", None)
    if nv is None:                                    # numba-cuda without the switch: the bindings only
        nv = hasattr(getattr(drv, "binding", None), "CUdeviceptr")
    return drv.binding.CUdeviceptr(ptr) if nv else ctypes.c_uint64(ptr)


def _finalizer(allocator, ptr):
    lib = _lib.lib()

    def release():
        lib.cca_free(allocator, ptr)
    return release


class CcaMemoryManager(_cuda.GetIpcHandleMixin, _cuda.HostOnlyCUDAMemoryManager):
    """Numba's EMM plugin over cca (interface_version 1)."""

    def initialize(self):
        self._device = int(self.context.device.id)
        self._allocator = _core.allocator(self._device)

    def memalloc(self, size):
        """Device memory from cca, which frees its own cache and asks the
        device again before it fails (so no retry here: Numba's deferred
        frees hold nothing of cca's, whose finalizer frees at once)."""
        if not hasattr(self, "_allocator"):
            self.initialize()
        p = ctypes.c_void_p()
        stream = _PER_THREAD if _per_thread_default_stream() else None
        lib = _lib.lib()
        st = lib.cca_malloc(self._allocator, ctypes.byref(p), int(size), stream)
        if st != 0:
            name = lib.cca_status_string(st).decode()
            if name == "CCA_ERROR_OUT_OF_MEMORY":
                report = _core.thread_oom_report()
                err = _driver().CudaAPIError(_oom_code(), "cca: out of memory allocating %d bytes%s"
                                             % (size, "\n" + str(report) if report is not None else ""))
                err.cca_report = report
                raise err
            _core.check(st, "cca.allocators.numba.memalloc")
        ptr = p.value or 0
        return _cuda.MemoryPointer(self.context, _device_pointer(ptr), int(size),
                                   finalizer=_finalizer(self._allocator, ptr))

    def get_memory_info(self):
        """What Numba could still allocate through cca: free = the device's
        free bytes plus what cca holds cached, bounded by cca's cap where one
        is set (cap - allocated); total = the device's."""
        device = self._device if hasattr(self, "_device") else int(self.context.device.id)
        free, total = cca.mem_get_info(device)
        stats = cca.memory_stats(device)              # one consistent reading
        allocated = stats["allocated_bytes.all.current"]
        reserved = stats["reserved_bytes.all.current"]
        avail = free + max(reserved - allocated, 0)
        cap = _core.memory_cap(device)[0]
        if cap:
            avail = min(avail, max(cap - allocated, 0))
        return _cuda.MemoryInfo(free=avail, total=total)

    @property
    def interface_version(self):
        return 1


_numba_memory_manager = CcaMemoryManager
