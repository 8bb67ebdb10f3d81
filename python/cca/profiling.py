"""Profiling a piece of a program: ``profile`` (a context manager and a
decorator) reports what happened to a device's memory while it ran - the
peaks, what it allocated and freed, and what it left allocated - and
nests (an outer profile lists those opened inside it)."""

import contextvars
import ctypes
import functools
import sys
import time

from . import _core, _lib
from ._core import human

__all__ = ["profile", "ProfileResult"]


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
                "left allocated %s" % (self.name, self.wall_s, human(self.peak_allocated),
                                       human(self.peak_reserved), human(self.allocated_bytes), self.allocations,
                                       human(self.freed_bytes), self.frees, human(self.left_allocated)))

    def table(self):
        rows = []

        def add(r, depth):
            rows.append(("  " * depth + r.name, "%.3f" % r.wall_s, human(r.peak_allocated),
                         human(r.peak_reserved), "%s / %d" % (human(r.allocated_bytes), r.allocations),
                         "%s / %d" % (human(r.freed_bytes), r.frees), human(r.left_allocated)))
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
        dev = _core.device_index(self.device)
        a = _core.allocator(dev)
        tok = ctypes.c_uint64()
        _core.check(_lib.lib().cca_scope_begin(a, ctypes.byref(tok)), "cca.profile")
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
        raw = _lib.struct("cca_scope_result_t")()
        _core.check(_lib.lib().cca_scope_end_sized(_core.allocator(run.device), run.token, ctypes.byref(raw),
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
