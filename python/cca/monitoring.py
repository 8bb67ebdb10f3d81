"""Watching memory without polling, profiling a piece of a program, and a
background monitor: the tools PyTorch users otherwise write by hand.

``watch(nbytes, callback)`` calls ``callback`` when a device's allocated
(or reserved) bytes cross ``nbytes``; ``on_oom(callback)`` when cca
reports an out-of-memory. Both callbacks run on one thread cca's package
owns ("cca-delivery"), in the order the crossings happened, never inside
the allocating call: the allocating thread only queues a notice (C's
``cca_notice_take``), so it needs neither the GIL nor anything else a
callback may hold, and a callback may call any ``cca`` or ``torch.cuda``
function.

``profile`` (a context manager and a decorator) reports what happened to a
device's memory while a piece of the program ran; ``Monitor`` writes a
line or a CSV row of the figures every interval.
"""

import collections
import contextvars
import ctypes
import functools
import numbers
import sys
import threading
import time
import traceback

from . import _lib

__all__ = ["watch", "Watch", "Crossing", "on_oom", "OomHandler", "profile", "ProfileResult", "Monitor"]

_WHAT = {"allocated": 0, "reserved": 1}
_WHAT_NAME = {v: k for k, v in _WHAT.items()}


def _pkg():
    return sys.modules[__package__]                   # the package's helpers (devices, checks): no import cycle


def _human(n):
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return ("%d B" % n) if unit == "B" else "%.2f %s" % (n, unit)
        n /= 1024.0
    return "%.2f TiB" % n


# ---- the delivery thread --------------------------------------------------

Crossing = collections.namedtuple("Crossing", "device what threshold bytes rising")
Crossing.__doc__ = """A watch's crossing: ``what`` ("allocated"/"reserved") went above
``threshold`` (``rising`` True) or back to it or below, ``bytes`` when it did."""

_mu = threading.Lock()
_watches = {}                                         # (allocator id, watch id) -> Watch
_oom = {}                                             # allocator id -> [OomHandler]
_thread = None


def _report_error(what):
    sys.stderr.write("cca: exception in %s callback (ignored):\n" % what)
    traceback.print_exc()


def _allocator_id(a):
    return int(_lib.lib().cca_allocator_id(a))


def _loop():
    lib = _lib.lib()
    n = _lib.struct("cca_notice_t")()
    while True:                                       # notices name their allocator: only ours are delivered
        kind = lib.cca_notice_take_sized(250, ctypes.byref(n), ctypes.sizeof(n))
        try:                                          # nothing a notice brings ends the thread
            if kind == 1:
                with _mu:
                    w = _watches.get((int(n.allocator), int(n.id)))
                if w is not None:
                    w._deliver(Crossing(int(n.device), _WHAT_NAME.get(int(n.which), "allocated"), int(n.threshold),
                                        int(n.bytes), bool(n.rising)))
            elif kind == 2:
                with _mu:
                    handlers = list(_oom.get(int(n.allocator), ()))
                if handlers:
                    report = _pkg().last_oom(int(n.device))
                    for h in handlers:
                        h._deliver(report)
        except BaseException:                         # noqa: BLE001
            _report_error("delivery")


def _ensure_thread():
    global _thread
    with _mu:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_loop, name="cca-delivery", daemon=True)
            _thread.start()


class Watch:
    """A threshold watch; ``remove()`` (or leaving its ``with`` block) ends it:
    no callback of it starts afterwards. ``crossings`` counts its deliveries."""

    def __init__(self, device, wid, callback, what, nbytes, key):
        self.device, self.id, self.what, self.nbytes = device, wid, what, nbytes
        self._key = key                               # (allocator id, watch id): the notices' names
        self._callback = callback
        self.crossings = 0
        self._removed = False

    def _deliver(self, crossing):
        if self._removed:
            return
        self.crossings += 1
        try:
            self._callback(crossing)
        except BaseException:                         # noqa: BLE001 - not even sys.exit() stops delivery
            _report_error("watch")

    def remove(self):
        with _mu:                                     # one remove unwatches; a second is a no-op
            if self._removed:
                return
            self._removed = True
            _watches.pop(self._key, None)
        pkg = _pkg()
        a = pkg._allocator(self.device)
        pkg._check(_lib.lib().cca_unwatch(a, self.id), "cca_unwatch")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False

    def __repr__(self):
        return "<cca.Watch %s > %d bytes on device %d%s>" % (self.what, self.nbytes, self.device,
                                                            " (removed)" if self._removed else "")


def watch(nbytes, callback, what="allocated", device=None):
    """Calls ``callback(Crossing)`` each time the device's allocated (or,
    with what="reserved", reserved) bytes go above ``nbytes`` or back to it
    or below, on cca's delivery thread, in crossing order. Returns a Watch
    (``remove()``, or use it in a ``with`` block)."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, numbers.Integral):
        raise TypeError("cca.watch: nbytes is an int, not %s" % type(nbytes).__name__)
    if nbytes < 0:
        raise ValueError("cca.watch: nbytes must be >= 0, got %d" % nbytes)
    if not callable(callback):
        raise TypeError("cca.watch: callback is not callable")
    if what not in _WHAT:
        raise ValueError("cca.watch: what is \"allocated\" or \"reserved\", got %r" % (what,))
    pkg = _pkg()
    d = pkg._device_index(device)
    a = pkg._allocator(d)
    _ensure_thread()
    wid = ctypes.c_uint64()
    with _mu:                                         # registered before its first notice can be looked up
        pkg._check(_lib.lib().cca_watch_threshold_queued(a, _WHAT[what], int(nbytes), ctypes.byref(wid)),
                   "cca.watch")
        key = (_allocator_id(a), wid.value)
        w = Watch(d, wid.value, callback, what, int(nbytes), key)
        _watches[key] = w
    return w


class OomHandler:
    """An out-of-memory callback; ``remove()`` ends it."""

    def __init__(self, device, callback, allocator_id):
        self.device = device
        self._aid = allocator_id
        self._callback = callback
        self.calls = 0
        self._removed = False

    def _deliver(self, report):
        if self._removed:
            return
        self.calls += 1
        try:
            self._callback(report)
        except BaseException:                         # noqa: BLE001
            _report_error("OOM")

    def remove(self):
        pkg = _pkg()
        with _mu:                                     # the list and the C switch change together
            if self._removed:
                return
            self._removed = True
            handlers = _oom.get(self._aid, [])
            if self in handlers:
                handlers.remove(self)
            if not handlers:
                pkg._check(_lib.lib().cca_oom_notices(pkg._allocator(self.device), 0), "cca_oom_notices")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def on_oom(callback, device=None):
    """Calls ``callback(OomReport)`` on cca's delivery thread after each
    out-of-memory on the device (the device's last report when the callback
    runs: a later failure may have replaced the one that queued it).
    Returns an OomHandler (``remove()``)."""
    if not callable(callback):
        raise TypeError("cca.on_oom: callback is not callable")
    pkg = _pkg()
    d = pkg._device_index(device)
    a = pkg._allocator(d)
    _ensure_thread()
    h = OomHandler(d, callback, _allocator_id(a))
    with _mu:
        pkg._check(_lib.lib().cca_oom_notices(a, 1), "cca_oom_notices")
        _oom.setdefault(h._aid, []).append(h)
    return h


# ---- profile ----------------------------------------------------------------

class ProfileResult:
    """What a profile saw on its device while it ran (every thread's
    allocations count): ``peak_allocated``, ``peak_reserved`` (bytes),
    ``allocated_bytes`` / ``allocations`` and ``freed_bytes`` / ``frees``,
    ``left_allocated`` / ``left_allocations`` (the blocks allocated while
    it ran and still allocated at its end: a leak candidate; frees of older
    blocks do not count against it), ``wall_s``, and the profiles opened
    inside it on the same thread (``children``)."""

    def __init__(self, name, device, raw, wall_s, children):
        self.name, self.device, self.wall_s, self.children = name, device, wall_s, children
        self.peak_allocated = int(raw.peak_allocated)
        self.peak_reserved = int(raw.peak_reserved)
        self.allocated_bytes = int(raw.allocated_bytes)
        self.freed_bytes = int(raw.freed_bytes)
        self.allocations = int(raw.allocations)
        self.frees = int(raw.frees)
        self.left_allocated = int(raw.left_allocated)
        self.left_allocations = int(raw.left_allocations)

    def line(self):
        return ("cca.profile %s: %.3f s, peak allocated %s, peak reserved %s, allocated %s in %d, freed %s in %d, "
                "left allocated %s" % (self.name, self.wall_s, _human(self.peak_allocated),
                                       _human(self.peak_reserved), _human(self.allocated_bytes), self.allocations,
                                       _human(self.freed_bytes), self.frees, _human(self.left_allocated)))

    def table(self):
        rows = []

        def add(r, depth):
            rows.append(("  " * depth + r.name, "%.3f" % r.wall_s, _human(r.peak_allocated),
                         _human(r.peak_reserved), "%s / %d" % (_human(r.allocated_bytes), r.allocations),
                         "%s / %d" % (_human(r.freed_bytes), r.frees), _human(r.left_allocated)))
            for c in r.children:
                add(c, depth + 1)

        add(self, 0)
        head = ("profile", "wall s", "peak allocated", "peak reserved", "allocated", "freed", "left allocated")
        widths = [max(len(str(x[i])) for x in rows + [head]) for i in range(len(head))]
        fmt = "  ".join("%%-%ds" % w if i == 0 else "%%%ds" % w for i, w in enumerate(widths))
        return "\n".join([fmt % head] + [fmt % r for r in rows])

    def __str__(self):
        return self.table() if self.children else self.line()

    def __repr__(self):
        return "<cca.ProfileResult %s: peak allocated %d, left allocated %d>" % (self.name, self.peak_allocated,
                                                                                self.left_allocated)


class _Run:
    """One entry into a profile: its scope, clock and the results of the
    profiles opened inside it."""

    __slots__ = ("profile", "device", "token", "t0", "children")

    def __init__(self, prof, device, token):
        self.profile, self.device, self.token = prof, device, token
        self.children = []
        self.t0 = time.perf_counter()


# The open runs, innermost last: per thread (a new thread starts with an
# empty context) and per asyncio task (each runs in a copy of the context).
_runs = contextvars.ContextVar("cca_profile_runs", default=())


class profile:                                      # noqa: N801 - used as a function: cca.profile(...)
    """Profiles what runs inside it on one device: ``with cca.profile("step")
    as p: ...`` (then ``p.result``), or as a decorator (``@cca.profile`` or
    ``@cca.profile("name")``; each call is profiled, the wrapper's
    ``last_profile`` is the latest result). Profiles nest: an outer one
    lists those opened inside it on the same thread. When an outermost
    profile ends, ``report`` says what happens to its result: True prints
    it to ``file`` (default sys.stderr) - one line, or a table when it has
    nested profiles; a callable gets the ProfileResult; False nothing.
    Measuring makes every allocation on the device take cca's slower,
    all-locked path while any profile or watch is open."""

    def __init__(self, name=None, device=None, report=True, file=None):
        if callable(name) and not isinstance(name, str):   # @cca.profile without arguments
            self._fn = name
            name = getattr(name, "__qualname__", "profile")
        else:
            self._fn = None
        if name is not None and not isinstance(name, str):
            raise TypeError("cca.profile: name is a str, not %s" % type(name).__name__)
        self.name = name or "profile"
        self.device = device
        self.report = report
        self.file = file
        self.result = None
        if self._fn is not None:
            functools.update_wrapper(self, self._fn)
            self.last_profile = None

    # decorator form: each call is profiled anew
    def __call__(self, *args, **kwargs):
        if self._fn is None:                          # @cca.profile("name"): wrap the function given
            fn = args[0] if len(args) == 1 and not kwargs and callable(args[0]) else None
            if fn is None:
                raise TypeError("cca.profile(...) decorates one function")
            p = profile(self.name, self.device, self.report, self.file)
            p._fn = fn
            functools.update_wrapper(p, fn)
            p.last_profile = None
            return p
        run = profile(self.name, self.device, self.report, self.file)
        with run:
            out = self._fn(*args, **kwargs)
        self.last_profile = run.result
        return out

    def __get__(self, obj, objtype=None):             # methods: bind like a function
        if obj is None or self._fn is None:
            return self
        return functools.partial(self.__call__, obj)

    def __enter__(self):
        pkg = _pkg()
        dev = pkg._device_index(self.device)
        a = pkg._allocator(dev)
        tok = ctypes.c_uint64()
        pkg._check(_lib.lib().cca_scope_begin(a, ctypes.byref(tok)), "cca.profile")
        _runs.set(_runs.get() + (_Run(self, dev, tok.value),))   # the same object may be open more than once
        return self

    def __exit__(self, *exc):
        stack = _runs.get()
        idx = max((i for i, r in enumerate(stack) if r.profile is self), default=None)
        if idx is None:
            raise RuntimeError("cca.profile %r: left without being entered in this thread or task" % self.name)
        run = stack[idx]
        wall = time.perf_counter() - run.t0
        stack = stack[:idx] + stack[idx + 1:]         # its own entry, even when left out of order
        _runs.set(stack)
        pkg = _pkg()
        raw = _lib.struct("cca_scope_result_t")()
        pkg._check(_lib.lib().cca_scope_end_sized(pkg._allocator(run.device), run.token, ctypes.byref(raw),
                                                  ctypes.sizeof(raw)), "cca.profile")
        self.result = ProfileResult(self.name, run.device, raw, wall, run.children)
        if idx > 0:
            stack[idx - 1].children.append(self.result)
        elif self.report is True:
            f = self.file or sys.stderr
            f.write(str(self.result) + "\n")
            f.flush()
        elif callable(self.report):
            self.report(self.result)
        return False


# ---- Monitor ----------------------------------------------------------------

_CSV_HEAD = "time,device,allocated,reserved,peak_allocated,free_cached,largest_free,fragmentation"


class Monitor:
    """A background thread writing the device's figures every ``interval``
    seconds to ``file`` (default sys.stderr): allocated, reserved, peak
    allocated, cached free bytes, the largest free block and external
    fragmentation (1 - largest free / free cached). format="line" writes a
    readable line, "csv" a header and then one row per sample (exact
    bytes). Use it in a ``with`` block, or start() and stop(); stop writes
    a last sample. ``samples`` counts the lines written."""

    def __init__(self, interval=1.0, file=None, format="line", device=None):   # noqa: A002 - as the issue names it
        if isinstance(interval, bool) or not isinstance(interval, numbers.Real) or not interval > 0:
            raise ValueError("cca.Monitor: interval must be a positive number of seconds, got %r" % (interval,))
        if format not in ("line", "csv"):
            raise ValueError("cca.Monitor: format is \"line\" or \"csv\", got %r" % (format,))
        self.interval = float(interval)
        self.file = file
        self.format = format
        self.device = _pkg()._device_index(device)
        self.samples = 0
        self._stop = threading.Event()
        self._thread = None

    def sample(self):
        """The figures now, as a dict."""
        pkg = _pkg()
        s = pkg._stats(self.device)
        f = pkg.fragmentation(self.device)
        return {"time": time.time(), "device": self.device, "allocated": int(s.allocated_bytes[0].current),
                "reserved": int(s.reserved_bytes[0].current), "peak_allocated": int(s.allocated_bytes[0].peak),
                "free_cached": f["free_cached"], "largest_free": f["largest_free"],
                "fragmentation": f["external_fragmentation"]}

    def _write(self):
        x = self.sample()
        out = self.file or sys.stderr
        if self.format == "csv":
            if self.samples == 0:
                out.write(_CSV_HEAD + "\n")
            out.write("%.3f,%d,%d,%d,%d,%d,%d,%.6f\n" % (x["time"], x["device"], x["allocated"], x["reserved"],
                                                        x["peak_allocated"], x["free_cached"], x["largest_free"],
                                                        x["fragmentation"]))
        else:
            out.write("cca %s device %d: allocated %s, reserved %s, peak %s, cached free %s, largest free %s, "
                      "fragmentation %.3f\n" % (time.strftime("%H:%M:%S", time.localtime(x["time"])), x["device"],
                                                _human(x["allocated"]), _human(x["reserved"]),
                                                _human(x["peak_allocated"]), _human(x["free_cached"]),
                                                _human(x["largest_free"]), x["fragmentation"]))
        out.flush()
        self.samples += 1

    def _run(self):
        while not self._stop.wait(self.interval):
            try:
                self._write()
            except Exception:                         # noqa: BLE001 - a closed file ends the monitor quietly
                _report_error("Monitor")
                return

    def start(self):
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="cca-monitor", daemon=True)
            self._thread.start()
        return self

    def stop(self):
        """Stops the thread and writes a last sample - unless the thread had
        ended on a write error, or this one fails (reported on stderr, never
        raised: a monitor does not replace the program's own exception)."""
        if self._thread is not None:
            alive = self._thread.is_alive()
            self._stop.set()
            self._thread.join()
            self._thread = None
            if alive:
                try:
                    self._write()
                except Exception:                     # noqa: BLE001
                    _report_error("Monitor")

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False
