"""cupy.cuda.memory stand-in."""
import ctypes


class OutOfMemoryError(MemoryError):
    def __init__(self, size, total, limit=0):
        self.size, self.total, self.limit = size, total, limit
        super().__init__("Out of memory allocating %d bytes (allocated so far: %d bytes%s)." %
                         (size, total, ", limit set to: %d bytes" % limit if limit else ""))


class UnownedMemory:
    def __init__(self, ptr, size, owner, device_id=None):
        self.ptr, self.size, self._owner, self.device_id = ptr, size, owner, device_id


class MemoryPointer:
    def __init__(self, mem, offset):
        self.mem = mem
        self.ptr = mem.ptr + offset


_MALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)


class _CMemory:
    def __init__(self, alloc, ptr, size, device):
        self.alloc, self.ptr, self.size, self.device_id = alloc, ptr, size, device

    def __del__(self):
        if self.ptr:
            self.alloc._free(self.alloc._param, self.ptr, self.device_id)


class CFunctionAllocator:
    """As CuPy's: param, malloc and free are integer addresses; malloc's
    result is not checked (a NULL becomes a MemoryPointer to address 0)."""

    def __init__(self, param, malloc_func, free_func, owner):
        self._param = param
        self._malloc = _MALLOC(malloc_func)
        self._free = _FREE(free_func)
        self._owner = owner

    def malloc(self, size):
        from . import Device
        dev = Device().id
        ptr = (self._malloc(self._param, size, dev) or 0) if size > 0 else 0
        return MemoryPointer(_CMemory(self, ptr, size, dev), 0)
