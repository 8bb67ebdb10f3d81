"""Tags: ``with cca.tag("optimizer"):`` names the blocks allocated inside
it (shown in memory_snapshot(), memory_summary() and the holders of an
OomReport); ``tag_name(id)`` gives a tag id's name back (defined in
``cca._core``, which an OomReport's holders need)."""

import contextvars
import ctypes
import functools
import threading

from . import _lib
from ._core import CcaError, tag_name

__all__ = ["tag", "tag_name"]

_shared_mu = threading.Lock()
_shared_open = []                                     # [(token, tag id)] of open shared tags, oldest first
_shared_base = [0]                                    # the shared tag before the first of them (a C caller's)
_tag_runs = contextvars.ContextVar("cca_tag_runs", default=())


class tag:                                            # noqa: N801 - used as a function: with cca.tag("name")
    """``with cca.tag("optimizer"):`` - blocks allocated inside it, on any
    device, record the tag: on this thread, and on threads with no tag of
    their own (autograd's backward thread allocates gradients) unless
    ``thread_only=True``. Shown in memory_snapshot() (a block's "tag"),
    memory_summary() and OOM reports (``OomReport.holders``). Nests; also
    a decorator; one object may be open on several threads at once. When
    tags overlap across threads, threads without their own tag get the
    newest shared tag still open."""

    def __init__(self, name, thread_only=False):
        if not isinstance(name, str):
            raise TypeError("cca.tag: name is a str, not %s" % type(name).__name__)
        tid = ctypes.c_uint32()
        st = _lib.lib().cca_tag_id(name.encode(), ctypes.byref(tid))
        if st != 0:
            msg = _lib.lib().cca_last_error_string().decode(errors="replace")
            raise (ValueError if _lib.lib().cca_status_string(st) == b"CCA_ERROR_INVALID_ARGUMENT" else CcaError)(msg)
        self.name, self.id, self.thread_only = name, tid.value, bool(thread_only)

    def __enter__(self):
        lib = _lib.lib()
        token = object()
        prev = lib.cca_tag_thread(self.id)
        if not self.thread_only:
            with _shared_mu:
                old = lib.cca_tag_shared(self.id)
                if not _shared_open:
                    _shared_base[0] = old
                _shared_open.append((token, self.id))
        _tag_runs.set(_tag_runs.get() + ((self, token, prev),))
        return self

    def __exit__(self, *exc):
        lib = _lib.lib()
        runs = _tag_runs.get()
        idx = max((i for i, r in enumerate(runs) if r[0] is self), default=None)
        if idx is None:
            raise RuntimeError("cca.tag %r: left without being entered in this thread or task" % self.name)
        _, token, prev = runs[idx]
        if idx == len(runs) - 1:
            lib.cca_tag_thread(prev)
            runs = runs[:idx]
        else:                                         # left out of order: the newer one restores what this did
            nxt = runs[idx + 1]
            runs = runs[:idx] + ((nxt[0], nxt[1], prev),) + runs[idx + 2:]
        _tag_runs.set(runs)
        if not self.thread_only:
            with _shared_mu:
                _shared_open[:] = [x for x in _shared_open if x[0] is not token]
                lib.cca_tag_shared(_shared_open[-1][1] if _shared_open else _shared_base[0])
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with tag(self.name, self.thread_only):
                return fn(*args, **kwargs)
        return wrapper
