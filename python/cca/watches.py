"""Watching memory without polling: ``watch(nbytes, callback)`` calls
``callback`` when a device's allocated (or reserved) bytes cross
``nbytes``; ``on_oom(callback)`` when cca reports an out-of-memory. Both
callbacks run on one thread cca's package owns ("cca-delivery"), in the
order the crossings happened, never inside the allocating call: the
allocating thread only queues a notice (C's ``cca_notice_take``), so it
needs neither the GIL nor anything else a callback may hold, and a
callback may call any ``cca`` or ``torch.cuda`` function.

(Not ``cca/watch.py``: ``cca.watch`` is the function.)
"""

import collections
import ctypes
import numbers
import threading

from . import _core, _lib
from .oom import last_oom

__all__ = ["watch", "Watch", "Crossing", "on_oom", "OomHandler"]

_WHAT = {"allocated": 0, "reserved": 1}
_WHAT_NAME = {v: k for k, v in _WHAT.items()}


# ---- the delivery thread --------------------------------------------------

Crossing = collections.namedtuple("Crossing", "device what threshold bytes rising")
Crossing.__doc__ = """A watch's crossing: ``what`` ("allocated"/"reserved") went above
``threshold`` (``rising`` True) or back to it or below, ``bytes`` when it did."""

_mu = threading.Lock()
_watches = {}                                         # (allocator id, watch id) -> Watch
_oom = {}                                             # allocator id -> [OomHandler]
_thread = None


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
                    report = last_oom(int(n.device))
                    for h in handlers:
                        h._deliver(report)
        except BaseException:                         # noqa: BLE001
            _core.report_error("delivery")


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
            _core.report_error("watch")

    def remove(self):
        with _mu:                                     # one remove unwatches; a second is a no-op
            if self._removed:
                return
            self._removed = True
            _watches.pop(self._key, None)
        a = _core.allocator(self.device)
        _core.check(_lib.lib().cca_unwatch(a, self.id), "cca_unwatch")

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
    d = _core.device_index(device)
    a = _core.allocator(d)
    _ensure_thread()
    wid = ctypes.c_uint64()
    with _mu:                                         # registered before its first notice can be looked up
        _core.check(_lib.lib().cca_watch_threshold_queued(a, _WHAT[what], int(nbytes), ctypes.byref(wid)),
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
            _core.report_error("OOM")

    def remove(self):
        with _mu:                                     # the list and the C switch change together
            if self._removed:
                return
            self._removed = True
            handlers = _oom.get(self._aid, [])
            if self in handlers:
                handlers.remove(self)
            if not handlers:
                _core.check(_lib.lib().cca_oom_notices(_core.allocator(self.device), 0), "cca_oom_notices")

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
    d = _core.device_index(device)
    a = _core.allocator(d)
    _ensure_thread()
    h = OomHandler(d, callback, _allocator_id(a))
    with _mu:
        _core.check(_lib.lib().cca_oom_notices(a, 1), "cca_oom_notices")
        _oom.setdefault(h._aid, []).append(h)
    return h
