"""cupy.cuda stand-in: the allocator hook, streams, devices, memory."""
import threading

from . import memory
from .memory import MemoryPointer, UnownedMemory  # noqa: F401

_allocator = None
_tls = threading.local()


class Stream:
    """A stream; ptr is the cudaStream_t (0: the null stream)."""

    def __init__(self, ptr=0):
        self.ptr = ptr

    def __enter__(self):
        self._prev = get_current_stream()
        _tls.stream = self
        return self

    def __exit__(self, *exc):
        _tls.stream = self._prev
        return False


_null = Stream(0)


def get_current_stream():
    return getattr(_tls, "stream", _null)


class Device:
    current = 0

    def __init__(self, device=None):
        self.id = Device.current if device is None else device


def set_allocator(fn=None):
    global _allocator
    _allocator = fn


def get_allocator():
    return _allocator


def alloc(size):
    """As CuPy's: through the allocator set (the stand-in has no pool of its own)."""
    return _allocator(size)
