"""The Python tests run against the simulated build: CCA_LIBRARY names its
libcca.so (meson's build tree, or scripts/test.sh sets it), and the
simulator's controls come from the libcca_sim.so it loaded. Without it
every test is skipped, saying so."""
import ctypes
import itertools
import os

import pytest

LIB = os.environ.get("CCA_LIBRARY", "")
BUILD = os.path.dirname(os.path.dirname(os.path.abspath(LIB))) if LIB else ""


def _path(env, *rel):
    p = os.environ.get(env)
    if p:
        return p
    return os.path.join(BUILD, *rel) if BUILD else ""


SIM = _path("CCA_SIM_LIBRARY", "sim", "libcca_sim.so")
HOOKS = _path("CCA_HOOKS_LIBRARY", "hooks", "libcca_hooks.so")
PROBE = _path("CCA_PROBE_LIBRARY", "tests", "libcca_layout_probe.so")
if HOOKS:
    os.environ.setdefault("CCA_HOOKS_LIBRARY", HOOKS)


FRAMEWORKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "frameworks")


def pytest_collection_modifyitems(config, items):
    if LIB and os.path.exists(LIB) and os.path.exists(SIM):
        return
    skip = pytest.mark.skip(reason="CCA_LIBRARY does not name a simulated build's libcca.so: skipped "
                                   "(scripts/test.sh sets it)")
    for item in items:
        if not str(item.fspath).startswith(FRAMEWORKS + os.sep):   # the frameworks tier: its own conftest
            item.add_marker(skip)


class Sim:
    """The simulator's controls, and a fresh simulated device per test that
    needs its own state (the per-device allocators live for the process)."""

    def __init__(self):
        import cca  # noqa: loads libcca, and with it libcca_sim
        cca._lib.lib()
        self.lib = ctypes.CDLL(SIM)
        self.lib.cca_sim_set_capacity.argtypes = [ctypes.c_int, ctypes.c_size_t]
        self.lib.cca_sim_used_bytes.restype = ctypes.c_size_t
        self.lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        self.lib.cudaFree.argtypes = [ctypes.c_void_p]
        self.lib.cca_sim_set_device_count(32)
        self._next = itertools.count(1)

    def fresh_device(self, capacity=80 << 30):
        d = next(self._next)
        if d >= 32:
            raise RuntimeError("the tests use more simulated devices than the simulator has")
        self.lib.cca_sim_set_capacity(d, capacity)
        return d

    def outside(self, device, nbytes):
        """nbytes taken on the device by a bare cudaMalloc (memory cca does not hold)."""
        cur = ctypes.c_int()
        self.lib.cudaGetDevice(ctypes.byref(cur))
        self.lib.cudaSetDevice(device)
        p = ctypes.c_void_p()
        assert self.lib.cudaMalloc(ctypes.byref(p), nbytes) == 0
        self.lib.cudaSetDevice(cur.value)
        return p


@pytest.fixture(scope="session")
def sim():
    return Sim()


@pytest.fixture(scope="session")
def shared_device(sim):
    """One device the watch, profile, monitor and framework tests share (the
    simulator has 32): each of those tests frees what it allocates."""
    return sim.fresh_device()


@pytest.fixture(scope="session")
def small_device(sim):
    """A 64 MiB device for their out-of-memory cases."""
    return sim.fresh_device(capacity=64 << 20)


@pytest.fixture(scope="session")
def hooks(sim):
    h = ctypes.CDLL(HOOKS)
    h.cca_torch_malloc.restype = ctypes.c_void_p
    h.cca_torch_malloc.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    h.cca_torch_free.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    h.cca_torch_record_stream.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    return h


@pytest.fixture(scope="session")
def probe():
    if not os.path.exists(PROBE):
        pytest.skip("the layout probe library is not built: " + PROBE)
    p = ctypes.CDLL(PROBE)
    p.cca_probe_fill.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    return p
