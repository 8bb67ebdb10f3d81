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
cached, total = the device's. An out-of-memory raises Numba's
``CudaAPIError`` with ``CUDA_ERROR_OUT_OF_MEMORY`` and cca's report in the
message (``.cca_report``). Host (pinned, mapped) memory stays Numba's own.
"""

import ctypes

import cca
from cca import _core, _lib

from numba import cuda as _cuda                       # this module is Numba's plugin: Numba is there

__all__ = ["CcaMemoryManager"]

_CUDA_ERROR_OUT_OF_MEMORY = 2
_PER_THREAD = ctypes.c_void_p(2)                      # cudaStreamPerThread


def _driver():
    from numba.cuda.cudadrv import driver             # noqa: imported on use
    return driver


def _per_thread_default_stream():
    try:
        from numba.core import config
        return bool(getattr(config, "CUDA_PER_THREAD_DEFAULT_STREAM", False))
    except ImportError:
        return False


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
        if not hasattr(self, "_allocator"):
            self.initialize()
        p = ctypes.c_void_p()
        stream = _PER_THREAD if _per_thread_default_stream() else None
        st = _lib.lib().cca_malloc(self._allocator, ctypes.byref(p), int(size), stream)
        if st != 0:
            name = _lib.lib().cca_status_string(st).decode()
            if name == "CCA_ERROR_OUT_OF_MEMORY":
                report = _core.thread_oom_report()
                err = _driver().CudaAPIError(_CUDA_ERROR_OUT_OF_MEMORY, "cca: out of memory allocating %d bytes%s"
                                             % (size, "\n" + str(report) if report is not None else ""))
                err.cca_report = report
                raise err
            _core.check(st, "cca.allocators.numba.memalloc")
        ptr = p.value or 0
        return _cuda.MemoryPointer(self.context, _device_pointer(ptr), int(size),
                                   finalizer=_finalizer(self._allocator, ptr))

    def get_memory_info(self):
        free, total = cca.mem_get_info(self._device if hasattr(self, "_device") else self.context.device.id)
        cached = cca.memory_reserved(self._device) - cca.memory_allocated(self._device)
        return _cuda.MemoryInfo(free=free + cached, total=total)

    @property
    def interface_version(self):
        return 1


_numba_memory_manager = CcaMemoryManager
