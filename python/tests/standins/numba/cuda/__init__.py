"""numba.cuda stand-in: the EMM plugin interface (numba's documented names)."""
import collections

MemoryInfo = collections.namedtuple("MemoryInfo", "free total")


class MemoryPointer:
    def __init__(self, context, pointer, size, owner=None, finalizer=None):
        self.context, self.device_pointer, self.size, self.owner = context, pointer, size, owner
        self._finalizer = finalizer

    def free(self):
        if self._finalizer is not None:
            f, self._finalizer = self._finalizer, None
            f()


class BaseCUDAMemoryManager:
    def __init__(self, *args, **kwargs):
        if "context" not in kwargs:
            raise RuntimeError("Memory manager requires a context")
        self.context = kwargs.pop("context")


class HostOnlyCUDAMemoryManager(BaseCUDAMemoryManager):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.allocations = {}


class GetIpcHandleMixin:
    def get_ipc_handle(self, memory):
        raise NotImplementedError("IPC is not modelled by the stand-in")


class _Device:
    def __init__(self, id):
        self.id = id


class Context:
    """Stand-in for numba's driver Context: .device.id."""

    def __init__(self, device_id):
        self.device = _Device(device_id)
