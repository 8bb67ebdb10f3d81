"""What the torch this process imported has, read from that torch itself
(cca never imports torch: only one the program imported is read).

``has(name)`` tells whether the running torch's own code knows a figure or
field name: torch writes the names of memory_stats() and its snapshots from
C++ string literals in ``libtorch_python.so``, so a name is known when that
library holds it as a string (or as the tail of one: the linker stores a
string that ends another only once). This is how cca's memory_stats()
gives each torch exactly its keys (``num_oom_rejections`` from torch 2.12,
``reserved_bytes_by_private_pools`` in the nested form of 2.15) without a
list of versions. Without torch imported, every name is known (the newest
layout). A library that cannot be read counts as the newest too.
"""

import mmap
import os
import sys

_found = {}                                           # name -> bool, for the torch read
_data = []                                            # [the library mapped] once read, [None] when unreadable
_CORE = (b"num_ooms", b"allocated_bytes", b"num_alloc_retries")   # every torch 2.x has these: else not the place


def torch_module():
    """The torch this process imported, or None."""
    return sys.modules.get("torch")


def _library():
    if not _data:
        torch = torch_module()
        path = os.path.join(os.path.dirname(getattr(torch, "__file__", "") or ""), "lib", "libtorch_python.so")
        try:
            with open(path, "rb") as f:
                m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)   # kept mapped: read, not copied
            if any(m.find(n + b"\0") < 0 for n in _CORE):
                m = None                              # its names live elsewhere in this build: the newest layout
            _data.append(m)
        except (OSError, ValueError):
            _data.append(None)
    return _data[0]


def has(name):
    """Whether the running torch knows `name` (True without torch)."""
    if torch_module() is None:
        return True
    if name not in _found:
        data = _library()
        _found[name] = data is None or data.find(name.encode() + b"\0") >= 0   # a string, or a tail of one
    return _found[name]


def version():
    """The running torch's (major, minor), or None without torch."""
    torch = torch_module()
    ver = str(getattr(torch, "__version__", "") or "") if torch is not None else ""
    try:
        return tuple(int(x) for x in ver.split("+")[0].split(".")[:2])
    except ValueError:
        return None
