"""Device memory through cca's C calls, for the tests that need blocks
without a framework: the device's default allocator, a malloc that must
succeed, a free that must succeed."""
import ctypes

from cca import _lib


def _alloc(device):
    a = ctypes.c_void_p()
    assert _lib.lib().cca_default(device, ctypes.byref(a)) == 0
    return a


def c_malloc(device, size, stream=None):
    p = ctypes.c_void_p()
    assert _lib.lib().cca_malloc(_alloc(device), ctypes.byref(p), size, stream) == 0
    return p.value


def c_free(device, p):
    assert _lib.lib().cca_free(_alloc(device), p) == 0
