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
import pickle
import shutil
import tempfile
import threading

from . import _core, _lib

__all__ = ["record_trace", "replay", "to_csv", "balance", "plot_timeline", "plot_segments", "ReplayError"]


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


def _options(device_memory, reserve, configs, only, svg):
    args = []
    if device_memory is not None:
        args += ["--device-memory", _size(device_memory, "device_memory")]
    args += ["--reserve", _size(reserve, "reserve")]
    for label, conf in (configs or {}).items():
        args += ["--cca", "%s=%s" % (label, conf)]
    if only:
        args.append("--only")
    if svg is not None:
        args += ["--svg", os.fsdecode(os.fspath(svg))]
    return args


def _json_run(args, what):
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        rc, _, text = _run(args + ["--json", out, "--quiet"])
        if rc == 2:
            raise ReplayError(text.replace("cca-replay: ", what + ": ", 1) or what + ": bad input")
        with open(out) as f:
            return json.load(f)
    finally:
        os.unlink(out)


def replay(traces, device_memory=None, reserve="512MiB", configs=None, only=False, svg=None):
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
    them). ``svg``: a path to draw the replays to (``plot_timeline``).
    Bad input raises ReplayError with cca-replay's message."""
    paths = [traces] if isinstance(traces, (str, bytes, os.PathLike)) else list(traces)
    args = [os.fsdecode(os.fspath(p)) for p in paths]
    return _json_run(args + _options(device_memory, reserve, configs, only, svg), "cca.replay")


def balance(batches, device_memory=None, reserve="512MiB", accumulate=None, configs=None, only=False, svg=None):
    """The batch-size balance point (``cca-replay --batch``): ``batches``
    maps batch sizes to recordings of the same step at that size, in the
    order they are fitted ({8: "step8.csv", 16: "step16.csv", 32:
    "step32.csv"}: fitted on 8 and 16, 32 held out). Returns
    ``replay``'s dict with "balance": {"device_memory_bytes",
    "accumulate", "fitted", "paired", "per_step_allocations",
    "per_micro_batch_allocations", "per_micro_batch_rows" (the first
    recording's data rows of the per-micro-batch ones),
    "micro_batch_windows", "kept_bytes", "peak_live": {"intercept_bytes",
    "bytes_per_sample"}, "configurations": [{"label", "ratio",
    "largest_batch", "any_batch", "margin_bytes", "next_batch_needs_bytes",
    "held_out": [{"batch", "predicted_peak_live_bytes", "peak_live_bytes",
    "predicted_min_device_bytes", "min_device_bytes"}]}]}.
    ``accumulate`` K: a batch runs as K micro-batches (held-out
    recordings are then of such runs). The model: docs/replay.md."""
    if not isinstance(batches, dict) or len(batches) < 2:
        raise TypeError("cca.balance: batches is a dict {batch size: recording} with two or more entries")
    args = []
    for b, path in batches.items():
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise ValueError("cca.balance: batch sizes are ints of at least 1, not %r" % (b,))
        args += ["--batch", "%d=%s" % (b, os.fsdecode(os.fspath(path)))]
    if accumulate is not None:
        if isinstance(accumulate, bool) or not isinstance(accumulate, int):
            raise TypeError("cca.balance: accumulate is a number of micro-batches (an int)")
        args += ["--accumulate", str(accumulate)]
    return _json_run(args + _options(device_memory, reserve, configs, only, svg), "cca.balance")


def plot_timeline(traces, path, device_memory=None, reserve="512MiB", configs=None, only=False):
    """Draws live and reserved bytes over each replay of ``traces`` (one
    line each per configuration, the first out-of-memory marked, and the
    segments at it) as an SVG file at ``path``; returns ``replay``'s dict."""
    return replay(traces, device_memory, reserve, configs, only, svg=path)


def plot_segments(snapshot, path):
    """Draws a snapshot's segments (bars at one scale) and their blocks
    (allocated, freed awaiting a stream, free: holes) as an SVG file at
    ``path``. ``snapshot``: a snapshot pickle's path, a dict with
    "segments" (``torch.cuda.memory._snapshot()``, ``cca.snapshot()``) or
    a list of segments (``torch.cuda.memory_snapshot()``,
    ``cca.memory_snapshot()``)."""
    tmp = None
    if isinstance(snapshot, (list, tuple, dict)):
        segs = snapshot.get("segments") if isinstance(snapshot, dict) else list(snapshot)
        if not isinstance(segs, (list, tuple)):
            raise ReplayError("cca.plot_segments: the snapshot dict has no list of segments")
        tmp = tempfile.mkdtemp()
        src = os.path.join(tmp, "snapshot")                # the name the picture's titles give it
    else:
        src = os.fsdecode(os.fspath(snapshot))
    try:
        if tmp:
            with open(src, "wb") as f:
                pickle.dump({"segments": list(segs), "device_traces": []}, f, protocol=4)
        rc, _, text = _run(["--segments-svg", os.fsdecode(os.fspath(path)), "--quiet", src])
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    if rc != 0:
        raise ReplayError(text.replace("cca-replay: ", "cca.plot_segments: ", 1) or "cca.plot_segments: failed")


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
