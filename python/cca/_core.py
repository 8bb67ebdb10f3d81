"""What every topic module of cca uses: devices (``device_index``), the
per-device allocators (``allocator``, ``existing_allocators``), status
checks (``check``) and the errors they raise (``CcaError``,
``OutOfMemoryError``, carrying the thread's ``OomReport``), the raw stats,
cca's text callbacks, the configuration string and two helpers of the
callback threads.

The names here are public inside a private module: cca's modules and
``cca.allocators`` call them; ``cca`` itself re-exports only the errors
and ``OomReport``. ``OomReport`` lives here, not in ``cca.oom``, because
``check`` attaches one to every OutOfMemoryError; ``tag_name`` because an
OomReport names its holders' tags.
"""

import ctypes
import operator
import os
import re
import sys
import traceback

from . import _lib

MAX_DEVICES = 64
_VERDICTS = {0: "none", 1: "exhausted", 2: "fragmented", 3: "cap", 4: "external", 5: "stranded"}


class CcaError(RuntimeError):
    """A cca call failed; ``status`` is the cca_status_t name."""

    __module__ = "cca"                                # the name tracebacks print, where users catch it

    def __init__(self, message, status=""):
        super().__init__(message)
        self.status = status


class OutOfMemoryError(CcaError, MemoryError):
    """Out of device memory; ``report`` is this thread's OomReport of the
    failure (verdict, figures, advice), None when cca made none."""

    __module__ = "cca"

    def __init__(self, message, report=None):
        super().__init__(message, "CCA_ERROR_OUT_OF_MEMORY")
        self.report = report


def tag_name(tag_id):
    """A tag's name from its id; None for 0 (untagged) and unknown ids."""
    name = _lib.lib().cca_tag_name(int(tag_id))
    return name.decode(errors="replace") if name else None


class OomReport:
    """cca's report of an out-of-memory: ``verdict`` ("exhausted", "fragmented",
    "cap", "external", "stranded"), every figure of cca_oom_report_t as an
    attribute, ``advice``, ``holders`` ([(tag, bytes)]), ``stranded``
    ([(stream, free cached bytes)] of the other streams), and ``str()``
    gives cca's lines."""

    def __init__(self, raw):
        self._raw = raw
        for n in type(raw)._cca_fields:
            v = getattr(raw, n)
            if n == "advice":
                v = v.decode(errors="replace")
            elif n == "stream":
                v = v or 0
            elif isinstance(v, ctypes.Array):
                v = [int(x or 0) for x in v]                  # streams: None for the legacy default stream
            elif n != "verdict":
                v = int(v)
            setattr(self, n, v)
        self.verdict = _VERDICTS.get(int(raw.verdict), "unknown")
        n = getattr(self, "n_holders", 0)
        self.holders = [(tag_name(t), b) for t, b in zip(self.holder_tags[:n], self.holder_bytes[:n])] if n else []
        k = getattr(self, "n_stranded", 0)
        self.stranded = list(zip(self.stranded_streams[:k], self.stranded_bytes[:k])) if k else []

    def __str__(self):
        text = self.__dict__.get("_text")
        if text is not None:                          # a pickled report: the text its process wrote
            return text
        buf = ctypes.create_string_buffer(2048)
        _lib.lib().cca_oom_report_format_sized(ctypes.byref(self._raw), ctypes.sizeof(self._raw), buf, len(buf))
        return buf.value.decode(errors="replace").rstrip("\n")

    def __repr__(self):
        return "<cca.OomReport %s: %d bytes requested on device %d>" % (self.verdict, self.requested, self.device)

    def __reduce__(self):
        """Pickles as its figures, holders (tag names resolved here: tag
        ids are this process's) and text: it unpickles without libcca."""
        state = {k: v for k, v in self.__dict__.items() if k != "_raw"}
        state["_text"] = str(self)
        return (oom_report_restore, (state,))


def oom_report_restore(state):
    """An OomReport from its pickled figures (see OomReport.__reduce__)."""
    r = OomReport.__new__(OomReport)
    r.__dict__.update(state)
    return r


def thread_oom_report():
    """The calling thread's last out-of-memory report (an OomReport), None
    when cca made none."""
    cls = _lib.struct("cca_oom_report_t")
    r = cls()
    if _lib.lib().cca_thread_last_oom_report_sized(ctypes.byref(r), ctypes.sizeof(r)) != 0 or r.verdict == 0:
        return None
    return OomReport(r)


def check(status, what):
    """Raises for a cca_status_t other than CCA_SUCCESS: OutOfMemoryError
    (with this thread's report), ValueError (a bad argument or
    configuration) or CcaError; ``what`` and cca's error text make the
    message."""
    if status != 0:
        name = _lib.lib().cca_status_string(status).decode()
        text = "%s: %s" % (what, _lib.error_text())
        if name == "CCA_ERROR_OUT_OF_MEMORY":
            raise OutOfMemoryError(text, thread_oom_report())
        if name in ("CCA_ERROR_INVALID_ARGUMENT", "CCA_ERROR_INVALID_CONFIG"):
            raise ValueError(text)
        raise CcaError(text, name)


_DEVICE_STR = re.compile(r"cuda(?::([0-9]+))?\Z", re.ASCII)


def device_index(device):
    """None (the current device), an integer (int, numpy integer: anything
    with __index__ but bool), "cuda" or "cuda:N", an object with
    .type == "cuda" and an integer or None .index (torch.device), or one
    with .idx (torch.cuda.device)."""
    if device is None:
        d = ctypes.c_int(-1)
        check(_lib.lib().cca_current_device(ctypes.byref(d)), "current device")
        return d.value
    if isinstance(device, str):
        m = _DEVICE_STR.match(device)
        if not m:
            raise ValueError("cca: expected \"cuda\" or \"cuda:N\", got %r" % (device,))
        return device_index(None) if m.group(1) is None else _in_range(int(m.group(1)))
    if isinstance(device, (bytes, bytearray, tuple, list, float, bool)):
        raise TypeError("cca: a device is an int, \"cuda:N\" or a torch.device, not %s" % type(device).__name__)
    if hasattr(device, "__index__"):
        return _in_range(operator.index(device))
    if hasattr(device, "idx") and not hasattr(device, "type"):   # torch.cuda.device(N), as torch takes it
        return device_index(device.idx)
    kind = getattr(device, "type", None)
    if kind is None or not hasattr(device, "index"):
        raise TypeError("cca: a device is an int, \"cuda:N\" or a torch.device, not %s" % type(device).__name__)
    if kind != "cuda":
        raise ValueError("cca: expected a CUDA device, got %r" % (device,))
    if device.index is None:
        return device_index(None)
    if isinstance(device.index, bool) or not hasattr(device.index, "__index__"):
        raise TypeError("cca: a device's index is an int or None, not %s" % type(device.index).__name__)
    return _in_range(operator.index(device.index))


def _in_range(idx):
    if not 0 <= idx < MAX_DEVICES:
        raise ValueError("cca: device %d out of range [0, %d)" % (idx, MAX_DEVICES))
    return idx


def allocator(device=None, create=True):
    """The device's cca_default allocator (a c_void_p), made on first use;
    with create=False None where none exists yet."""
    lib = _lib.lib()
    a = ctypes.c_void_p()
    d = device_index(device)
    if create:
        check(lib.cca_default(d, ctypes.byref(a)), "cca_default(%d)" % d)
    else:
        lib.cca_default_existing(d, ctypes.byref(a))
    return a if a.value else None


def existing_allocators():
    """[(device, allocator)] of the allocators made so far, by device."""
    out = []
    for d in range(MAX_DEVICES):
        a = allocator(d, create=False)
        if a:
            out.append((d, a))
    return out


def memory_cap(device=None):
    """(cap in bytes, 0 for none; the fraction set, 0.0 for none; the byte
    limit set, 0 for none) of the device's allocator (cca_get_memory_cap)."""
    cap, frac, limit = ctypes.c_size_t(), ctypes.c_double(), ctypes.c_size_t()
    check(_lib.lib().cca_get_memory_cap(allocator(device), ctypes.byref(cap), ctypes.byref(frac), ctypes.byref(limit)),
          "cca_get_memory_cap")
    return int(cap.value), float(frac.value), int(limit.value)


def stats(device):
    """The device allocator's cca_stats_t."""
    cls = _lib.struct("cca_stats_t")
    s = cls()
    check(_lib.lib().cca_get_stats_sized(allocator(device), ctypes.byref(s), ctypes.sizeof(s)), "cca_get_stats")
    return s


_WRITE = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)


def text_of(fn, a):
    """The text a cca function writing through a callback (fn(a, write,
    arg): cca_memory_summary, cca_snapshot_json, ...) gives for allocator a."""
    parts = []

    def write(data, n, _arg):
        parts.append(ctypes.string_at(data, n))
        return n

    cb = _WRITE(write)
    check(fn(a, ctypes.cast(cb, ctypes.c_void_p), None), fn.__name__)
    return b"".join(parts).decode(errors="replace")


_conf_string = None                                   # what cca.configure() was given


def set_configuration(conf):
    """Remembers the string cca.configure() gave the allocators."""
    global _conf_string
    _conf_string = conf


def configuration():
    """The configuration string the allocators run with: what cca.configure()
    gave them, else CCA_CONF."""
    return _conf_string if _conf_string is not None else os.environ.get("CCA_CONF", "")


def human(n):
    """Bytes as people read them: "512 B", "1.50 MiB"."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return ("%d B" % n) if unit == "B" else "%.2f %s" % (n, unit)
        n /= 1024.0
    return "%.2f TiB" % n


def report_error(what):
    """Prints the exception being handled, which a callback thread of cca's
    (delivery, Monitor) ignores, to stderr."""
    sys.stderr.write("cca: exception in %s callback (ignored):\n" % what)
    traceback.print_exc()
