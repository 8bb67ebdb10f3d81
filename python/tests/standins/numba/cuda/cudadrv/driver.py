"""numba.cuda.cudadrv.driver stand-in: CudaAPIError, and the switch between
Numba's ctypes binding and NVIDIA's bindings (USE_NV_BINDING; binding's
CUdeviceptr, on which Numba calls int())."""
import ctypes

USE_NV_BINDING = False


class _Binding:
    class CUdeviceptr:
        def __init__(self, value=0):
            if not isinstance(value, int):
                raise TypeError("CUdeviceptr takes an int")
            self._v = value

        def __int__(self):
            return self._v


binding = _Binding()


def device_pointer_value(pointer):
    """As Numba reads a MemoryPointer's device_pointer in either mode."""
    if USE_NV_BINDING:
        return int(pointer)                           # a ctypes integer raises here, as in Numba
    return pointer.value if isinstance(pointer, ctypes._SimpleCData) else int(pointer)


class CudaAPIError(Exception):
    def __init__(self, code, msg):
        self.code, self.msg = code, msg
        super().__init__(code, msg)

    def __str__(self):
        return "[%s] %s" % (self.code, self.msg)
