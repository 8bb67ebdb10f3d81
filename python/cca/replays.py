"""Record a run, and replay it on any device without a GPU.

``record_trace(path)`` writes every allocation and free of cca's
allocators to a trace CSV (``trace_file:PATH`` in ``CCA_CONF`` or ``install(conf=...)`` of
``cca.allocators.torch`` does the same from the start).
``replay(traces, ...)`` replays recordings - those CSVs, a PyTorch memory
snapshot pickle (``torch.cuda.memory._dump_snapshot``), cca's own
(``cca.dump_snapshot``) - through cca on a simulated device of any size
and says, per configuration, the peak live and reserved bytes, the
smallest device the run fits on, and whether it fits the given one (if
not: where, with cca's verdict and advice). ``to_csv`` converts snapshot
pickles to trace CSVs, one per device. The replay is
``libcca_replay.so``, the engine of the ``cca-replay`` command, called in
this process (no subprocess); it carries its own allocator and simulated
device, and exports nothing else, so it works beside torch and without a
CUDA runtime. The layout and the figures: docs/replay.md.
"""

import ctypes
import json
import os
import tempfile
import threading

from . import _core, _lib

__all__ = ["record_trace", "replay", "to_csv", "ReplayError"]


class ReplayError(ValueError):
    """cca-replay refused its input (a bad size, a trace it cannot read, a
    pickle that would call code); the message is what it said."""


def record_trace(path, device=None):
    """Starts writing every allocation and free to ``path`` ("%d" in it:
    the device; None stops). ``device`` None: every allocator of the
    process, those made later too (without "%d", several devices each
    write ``path`` with ".devN" before the extension); else that device's
    alone. Returns an object whose ``stop()`` (or leaving its ``with``
    block) stops the recording and writes the rest; a path cca cannot
    write is an OSError. Rows are buffered: written every 64 KiB, at
    stop, when the allocator is destroyed, and at exit."""
    lib = _lib.lib()
    text = None if path is None else os.fsencode(os.fspath(path))
    if device is None:
        _check(lib.cca_default_trace_start(text), "cca.record_trace")
    else:
        _check(lib.cca_trace_start(_core.allocator(device), text), "cca.record_trace")
    return _Recording(device)


class _Recording:
    def __init__(self, device):
        self._device = device

    def stop(self):
        lib = _lib.lib()
        if self._device is None:
            _check(lib.cca_default_trace_start(None), "cca.record_trace: stop")
        else:
            _check(lib.cca_trace_stop(_core.allocator(self._device)), "cca.record_trace: stop")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def _check(status, what):
    if status != 0 and _lib.lib().cca_status_string(status).decode() == "CCA_ERROR_IO":
        raise OSError("%s: %s" % (what, _lib.error_text()))
    _core.check(status, what)


_engine = []
_one_at_a_time = threading.Lock()                     # the fds redirected for a call are the process's


def _replay_library():
    """libcca_replay.so: CCA_REPLAY_LIBRARY, beside the package's libcca, or
    in a build tree's tools/."""
    if _engine:
        return _engine[0]
    path = os.environ.get("CCA_REPLAY_LIBRARY")
    if not path:
        here = os.path.dirname(os.path.abspath(__file__))
        cands = [os.path.join(here, "libcca_replay.so")]
        try:
            base = os.path.dirname(os.path.abspath(_lib.library_path()))
            cands += [os.path.join(base, "libcca_replay.so"), os.path.join(base, "..", "tools", "libcca_replay.so")]
        except OSError:
            pass
        path = next((p for p in cands if os.path.exists(p)), None)
        if path is None:
            raise OSError("cca: libcca_replay.so not found beside the package; set CCA_REPLAY_LIBRARY")
    lib = ctypes.CDLL(os.path.abspath(path), mode=ctypes.RTLD_LOCAL)
    lib.cca_replay_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    lib.cca_replay_main.restype = ctypes.c_int
    _engine.append(lib)
    return lib


def _size(v, what):
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise TypeError("cca.replay: %s is bytes (an int) or a size such as '24GiB', not %r" % (what, v))
    if isinstance(v, int) and v < 0:
        raise ValueError("cca.replay: %s is negative" % what)
    return str(v)


def _run(args):
    """cca_replay_main(args) with what it prints captured: (status, stdout, stderr)."""
    lib = _replay_library()
    argv = [b"cca-replay"] + [os.fsencode(a) for a in args]
    arr = (ctypes.c_char_p * len(argv))(*argv)
    with _one_at_a_time, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        saved = [os.dup(1), os.dup(2)]
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            rc = lib.cca_replay_main(len(argv), arr)      # flushes its output before it returns
        finally:
            for fd, was in ((1, saved[0]), (2, saved[1])):
                os.dup2(was, fd)
                os.close(was)
        out.seek(0)
        err.seek(0)
        return rc, out.read().decode(errors="replace"), err.read().decode(errors="replace").strip()


def replay(traces, device_memory=None, reserve="512MiB", configs=None, only=False):
    """Replays ``traces`` (a path, or a list of them) through cca on the
    simulated device and returns cca-replay's JSON as a dict:
    ``{"version": 1, "reserve_bytes", "device_memory_bytes", "traces":
    [{"file", "trace", "device", "events", "configurations": [{"label",
    "conf", "peak_live_bytes", "peak_reserved_bytes", "min_device_bytes",
    "num_device_alloc", "fits", "oom_event", "oom_time_us", "verdict",
    "advice"}]}]}`` (a configuration that could not run has "error"
    instead). ``oom_event`` is the data row (from 0) of the first refusal.
    ``device_memory``: the device to fit (bytes, or a string such as
    "24GiB"; None: the recording's, where it says - else ``fits`` is
    None). ``reserve``: memory the CUDA context and other libraries hold.
    ``configs``: {label: CCA_CONF string} replayed beside PyTorch's rules,
    ``preset:expandable`` and ``preset:lean`` (``only=True``: instead of
    them). Bad input raises ReplayError with cca-replay's message."""
    paths = [traces] if isinstance(traces, (str, bytes, os.PathLike)) else list(traces)
    args = [os.fsdecode(os.fspath(p)) for p in paths]
    if device_memory is not None:
        args += ["--device-memory", _size(device_memory, "device_memory")]
    args += ["--reserve", _size(reserve, "reserve")]
    for label, conf in (configs or {}).items():
        args += ["--cca", "%s=%s" % (label, conf)]
    if only:
        args.append("--only")
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        rc, _, text = _run(args + ["--json", out, "--quiet"])
        if rc == 2:
            raise ReplayError(text.replace("cca-replay: ", "cca.replay: ", 1) or "cca.replay: bad input")
        with open(out) as f:
            return json.load(f)
    finally:
        os.unlink(out)


def to_csv(pickles, folder):
    """Converts PyTorch memory snapshot pickles (and cca's) to trace CSVs in
    ``folder``, one per device: NAME.devN.csv. Returns their paths. A
    pickle that would call code is refused (ReplayError) and nothing runs:
    the engine reads plain data only."""
    paths = [pickles] if isinstance(pickles, (str, bytes, os.PathLike)) else list(pickles)
    rc, printed, text = _run(["--to-csv", os.fsdecode(os.fspath(folder))] + [os.fsdecode(os.fspath(p)) for p in paths])
    if rc != 0:
        raise ReplayError(text.replace("cca-replay: ", "cca.to_csv: ", 1) or "cca.to_csv: failed")
    return [line.split(": device ")[0] for line in printed.splitlines() if ": device " in line]
