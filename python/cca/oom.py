"""Why an allocation failed: ``last_oom(device)`` gives the device
allocator's last out-of-memory report, an ``OomReport`` (the verdict, the
figures behind it, cca's advice). The same report rides on every
``cca.OutOfMemoryError`` (``.report``: the failing thread's own), which is
why OomReport itself is defined in ``cca._core`` beside the errors."""

import ctypes

from . import _core, _lib
from ._core import OomReport

__all__ = ["OomReport", "last_oom"]


def last_oom(device=None):
    """The device allocator's last out-of-memory report, or None if none."""
    cls = _lib.struct("cca_oom_report_t")
    r = cls()
    _core.check(_lib.lib().cca_last_oom_report_sized(_core.allocator(device), ctypes.byref(r), ctypes.sizeof(r)),
                "cca_last_oom_report")
    return None if r.verdict == 0 else OomReport(r)
