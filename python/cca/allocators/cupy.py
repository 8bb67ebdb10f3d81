"""cca as CuPy's allocator, sharing one cache with PyTorch (and Numba)::

    import cca.allocators.cupy
    cca.allocators.cupy.install()           # cupy.cuda.set_allocator(...)

Each allocation comes from cca's allocator of CuPy's current device, on
CuPy's current stream (blocks are reused on the stream they were allocated
on, as cca does for torch), and goes back to cca when CuPy drops the
memory. An out-of-memory raises CuPy's ``OutOfMemoryError`` with cca's
report attached (``.cca_report``, and its lines in the message).

For programs that only use the default stream, the hook library also
exports ``cca_cupy_malloc`` / ``cca_cupy_free`` for CuPy's
``CFunctionAllocator``: no ctypes per allocation, and they never throw - a
failure is a NULL with cca's report in ``cca_last_error_string()``. CuPy
does not check that NULL (it would hand out a null device pointer), so
``c_function_allocator()`` wraps the CFunctionAllocator in one Python call
that turns a NULL into CuPy's ``OutOfMemoryError``.

``Pool`` answers what CuPy's ``MemoryPool`` offers from cca: ``malloc``,
``used_bytes``, ``total_bytes``, ``free_bytes``, ``n_free_blocks``,
``free_all_blocks``, ``free_all_free``, ``set_limit``, ``get_limit``. The
OutOfMemoryError pickles with cca's text and report.
"""

import ctypes
import gc
import sys
import warnings

import cca
from cca import _core, _lib, snapshots

__all__ = ["install", "malloc", "c_function_allocator", "Pool"]


def _cupy():
    import cupy                                       # noqa: imported on use: cca works without CuPy
    return cupy


class _Block:
    """The owner CuPy keeps with the memory: frees it to cca when dropped."""

    __slots__ = ("ptr", "device", "allocator", "__weakref__")

    def __init__(self, ptr, device, allocator):
        self.ptr, self.device, self.allocator = ptr, device, allocator

    def __del__(self):
        if self.ptr and sys is not None:              # not while the interpreter tears down
            _lib.lib().cca_free(self.allocator, self.ptr)
            self.ptr = 0


_oom_classes = {}


def _oom_class(cupy):
    """CuPy's OutOfMemoryError, extended with cca's report: ``.cca_report``
    and its lines in the message, kept with every other attribute when the
    error is pickled (CuPy's own pickles as (size, total, limit) and loses
    them); ``except cupy.cuda.memory.OutOfMemoryError`` catches it."""
    base = cupy.cuda.memory.OutOfMemoryError
    cls = _oom_classes.get(base)
    if cls is None:
        class OutOfMemoryError(base):
            __doc__ = _oom_class.__doc__

            def __reduce__(self):
                ctor = getattr(self, "_cca_args", None) or (0, 0, 0)
                return (_rebuild_oom, (ctor, self.args), dict(self.__dict__))
        OutOfMemoryError.__module__ = __name__
        OutOfMemoryError.__qualname__ = "OutOfMemoryError"
        cls = _oom_classes[base] = OutOfMemoryError
    return cls


def _rebuild_oom(ctor_args, args):
    err = _oom_class(_cupy())(*ctor_args)
    err.args = tuple(args)
    return err                                        # pickle then restores __dict__: _cca_args, cca_report, notes


def _oom_error(cupy, size, device, detail=None):
    """CuPy's OutOfMemoryError(size, total, limit) with cca's report: total
    is what cca has allocated on the device, limit cca's cap (0: none)."""
    report = _core.thread_oom_report()
    ctor = (int(size), cca.memory_allocated(device), Pool(device).get_limit())
    err = _oom_class(cupy)(*ctor)
    err._cca_args = ctor
    err.cca_report = report
    extra = str(report) if report is not None else detail
    if extra:
        err.args = (str(err.args[0] if err.args else err) + "\n" + extra,) + tuple(err.args[1:])
    return err


def _cca_malloc(a, size, handle, tentative=False):
    p = ctypes.c_void_p()
    fn = _lib.lib().cca_malloc_try if tentative else _lib.lib().cca_malloc
    st = fn(a, ctypes.byref(p), int(size), ctypes.c_void_p(handle) if handle else None)
    return st, p.value


def malloc(size):
    """CuPy's allocator function: size -> cupy.cuda.MemoryPointer, from
    cca, on CuPy's current device and stream. On an out-of-memory it runs
    the garbage collector and tries once more (as CuPy's own pool does:
    arrays held only by reference cycles are freed), then raises CuPy's
    OutOfMemoryError with cca's report. The first attempt is tentative
    (cca_malloc_try): one failed allocation is one OOM, counted and
    reported once."""
    cupy = _cupy()
    device = cupy.cuda.Device().id
    stream = cupy.cuda.get_current_stream()
    handle = int(getattr(stream, "ptr", 0) or 0)      # 0: the legacy default stream, as CuPy's null stream
    a = _core.allocator(device)
    st, ptr = _cca_malloc(a, size, handle, tentative=True)
    oom = b"CCA_ERROR_OUT_OF_MEMORY"
    if st != 0 and _lib.lib().cca_status_string(st) == oom:
        gc.collect()
        st, ptr = _cca_malloc(a, size, handle)
    if st != 0:
        if _lib.lib().cca_status_string(st) == oom:
            raise _oom_error(cupy, size, device)
        _core.check(st, "cca.allocators.cupy.malloc")
    owner = _Block(ptr, device, a)
    mem = cupy.cuda.UnownedMemory(ptr or 0, int(size), owner, device)
    return cupy.cuda.MemoryPointer(mem, 0)


def install():
    """Makes cca CuPy's allocator (cupy.cuda.set_allocator(malloc))."""
    _cupy().cuda.set_allocator(malloc)
    return malloc


class _CheckedCFunctionAllocator:
    """CuPy's CFunctionAllocator over cca_cupy_malloc / cca_cupy_free, with
    the NULL check CuPy does not make: ``malloc(size)`` raises CuPy's
    OutOfMemoryError with cca's report instead of returning a null pointer.
    ``allocator`` is the CFunctionAllocator itself."""

    def __init__(self, allocator, cupy):
        self.allocator = allocator
        self._cupy = cupy

    def malloc(self, size):
        mem = self.allocator.malloc(size)
        if size and not mem.ptr:
            cupy = self._cupy
            device = cupy.cuda.Device().id
            text = _lib.lib().cca_last_error_string().decode(errors="replace")
            raise _oom_error(cupy, size, device, detail=text)
        return mem


def c_function_allocator():
    """cca's C pair for CuPy (legacy default stream; no ctypes per
    allocation): returns an object whose ``malloc`` goes to
    cupy.cuda.set_allocator(alloc.malloc); a NULL from cca becomes CuPy's
    OutOfMemoryError (CuPy itself would hand out a null pointer)."""
    cupy = _cupy()
    _lib.lib()                                        # libcca first: the hooks bind to this one
    hooks = ctypes.CDLL(_lib.hooks_path())
    m = ctypes.cast(hooks.cca_cupy_malloc, ctypes.c_void_p).value
    f = ctypes.cast(hooks.cca_cupy_free, ctypes.c_void_p).value
    return _CheckedCFunctionAllocator(cupy.cuda.memory.CFunctionAllocator(0, m, f, hooks), cupy)


class Pool:
    """CuPy's MemoryPool, answered by cca's allocator of a device (None: the
    current one): malloc (a MemoryPointer from cca, on that device and
    CuPy's current stream), used_bytes (allocated), total_bytes
    (reserved), free_bytes (cached: reserved - allocated), n_free_blocks
    (cca's cached free blocks on the device), free_all_blocks and
    free_all_free (cca's empty_cache), set_limit / get_limit (cca's cap).
    What does not apply: free_all_blocks(stream) frees the device's unused
    segments of every stream (cca gives whole segments back, not one
    stream's blocks), and there is no per-pool identity - every Pool of a
    device is cca's one cache of it."""

    def __init__(self, device=None):
        self.device = device

    def malloc(self, size):
        if self.device is None:
            return malloc(size)
        with _cupy().cuda.Device(self.device):
            return malloc(size)

    def used_bytes(self):
        return cca.memory_allocated(self.device)

    def total_bytes(self):
        return cca.memory_reserved(self.device)

    def free_bytes(self):
        return self.total_bytes() - self.used_bytes()

    def n_free_blocks(self):
        """Free blocks cca caches on the device (CuPy: free chunks in the pool)."""
        d = _core.device_index(self.device)
        return sum(1 for seg in snapshots.segments(mark=False) if seg["device"] == d
                   for b in seg["blocks"] if b["state"] == "inactive")

    def free_all_blocks(self, stream=None):
        """The device's unused segments go back (every stream's: cca gives
        back whole segments)."""
        del stream
        _core.check(_lib.lib().cca_empty_cache(_core.allocator(self.device)), "free_all_blocks")

    def free_all_free(self):
        """CuPy's deprecated name of free_all_blocks."""
        warnings.warn("free_all_free is deprecated; use free_all_blocks instead", DeprecationWarning, stacklevel=2)
        self.free_all_blocks()

    def set_limit(self, size=None, fraction=None):
        """As CuPy's: a byte limit or a fraction of the device (both None or
        0: no limit)."""
        a = _core.allocator(self.device)
        if fraction is not None and size is not None:
            raise ValueError("cca Pool.set_limit: give size or fraction, not both")
        lib = _lib.lib()
        _, old_frac, old_limit = _core.memory_cap(self.device)
        if fraction is not None:
            if not 0 <= float(fraction) <= 1:
                raise ValueError("cca Pool.set_limit: fraction must be in [0, 1], got %r" % (fraction,))
            steps = ((lib.cca_set_memory_limit, 0), (lib.cca_set_memory_fraction, float(fraction)))
        else:
            size = int(size or 0)
            if size < 0:
                raise ValueError("cca Pool.set_limit: size must be >= 0, got %d" % size)
            steps = ((lib.cca_set_memory_fraction, 0.0), (lib.cca_set_memory_limit, size))
        try:
            for fn, value in steps:
                _core.check(fn(a, value), "set_limit")
        except BaseException:                         # refused (below one 2 MiB segment): the old cap stays
            lib.cca_set_memory_fraction(a, 0.0)
            lib.cca_set_memory_limit(a, old_limit)
            lib.cca_set_memory_fraction(a, old_frac)
            raise

    def get_limit(self):
        """The cap in bytes; 0 when there is none (as CuPy)."""
        return _core.memory_cap(self.device)[0]
