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


def run_thread_to_its_end(fn, timeout=30.0):
    """Runs fn on a new thread and returns once the OS thread has ended.

    threading.Thread.join() returns when Python is done with the thread,
    before the C library runs the thread's pthread-key destructors (cca's
    per-thread streams die in one): under load a test that joined may look
    before the thread has really exited. A Linux thread's /proc entry goes
    only after those destructors ran, so this waits for it to go."""
    import os
    import threading
    import time
    box = {}

    def body():
        box["tid"] = threading.get_native_id()
        try:
            fn()
        except BaseException as exc:                  # noqa: BLE001 - raised again on the caller's thread
            box["error"] = exc

    t = threading.Thread(target=body)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    task = "/proc/self/task/%d" % box["tid"]
    deadline = time.monotonic() + timeout
    while os.path.exists(task):
        assert time.monotonic() < deadline, "thread %d has not exited after %.0f s" % (box["tid"], timeout)
        time.sleep(0.001)
