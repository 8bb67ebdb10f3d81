"""torch's own out-of-memory exception, for cca's PyTorch hook.

Only ``c10::OutOfMemoryError`` becomes ``torch.OutOfMemoryError``, and that
type lives in the running torch's libc10. libcca_hooks is built without
torch (pip's isolated build never sees it), so the one function that throws
it, ``cca_torch_raise_oom`` (``cca_torch_oom.cpp``, shipped beside the
hooks), is built here against the headers and libc10 of the torch that is
running: once, about half a second with g++, then cached per torch build
under ``$CCA_CACHE_DIR`` (default ``$XDG_CACHE_HOME/cca``, else
``~/.cache/cca``) in ``torch-oom/<torch version>-<key>/``. The key covers
the source, the torch version and folder, its C++ ABI and the compiler, so a
new torch or a new cca builds anew. The compiler is ``$CXX``, else ``c++``,
else ``g++``.

``load(torch)`` returns ``(library, None)`` or ``(None, reason)``; the hook
then raises RuntimeError with the same text, and install() warns once.
"""

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

from .. import _lib

SOURCE = "cca_torch_oom.cpp"
LIBRARY = "libcca_torch_oom.so"


def cache_dir():
    """Where cca keeps what it builds on a user's machine."""
    d = os.environ.get("CCA_CACHE_DIR")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cca")


def source_path():
    """cca_torch_oom.cpp beside the hook library (the package's folder, or a build tree's hooks/)."""
    return os.path.join(os.path.dirname(_lib.hooks_path()), SOURCE)


def _compiler():
    cxx = os.environ.get("CXX")
    if cxx:
        return shutil.which(cxx) or (cxx if os.path.isfile(cxx) and os.access(cxx, os.X_OK) else None), cxx
    for name in ("c++", "g++"):
        found = shutil.which(name)
        if found:
            return found, name
    return None, "c++"


def _compiler_id(cxx):
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30)
        return out.stdout.splitlines()[0] if out.stdout else cxx
    except (OSError, subprocess.SubprocessError):
        return cxx


def load(torch):
    """The library holding cca_torch_raise_oom for this torch: from the
    cache, else built now. (None, reason) when it cannot be had."""
    src = source_path()
    if not os.path.isfile(src):
        return None, f"{SOURCE} is not beside {os.path.basename(_lib.hooks_path())} ({os.path.dirname(src)})"
    tfile = getattr(torch, "__file__", None)
    if not tfile:
        return None, "this torch has no folder (torch.__file__)"
    tdir = os.path.dirname(os.path.realpath(tfile))
    inc, libdir = os.path.join(tdir, "include"), os.path.join(tdir, "lib")
    if not os.path.isfile(os.path.join(inc, "c10", "util", "Exception.h")):
        return None, f"this torch has no C++ headers ({inc})"
    cxx, cxx_name = _compiler()
    if not cxx:
        return None, f"no C++ compiler ({cxx_name} not found; set CXX)"
    abi = int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)))
    with open(src, "rb") as f:
        text = f.read()
    key = hashlib.sha256(b"\0".join([text, torch.__version__.encode(), tdir.encode(), str(abi).encode(),
                                     _compiler_id(cxx).encode()])).hexdigest()[:16]
    tag = "".join(c if c.isalnum() or c in ".+-_" else "_" for c in torch.__version__)
    where = os.path.join(cache_dir(), "torch-oom", f"{tag}-{key}")
    path = os.path.join(where, LIBRARY)
    if not os.path.isfile(path):
        why = _build(cxx, src, inc, libdir, abi, where, path)
        if why:
            return None, why
    try:
        return ctypes.CDLL(path), None
    except OSError as e:
        return None, f"{path} does not load: {e}"


def _build(cxx, src, inc, libdir, abi, where, path):
    try:
        os.makedirs(where, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".build-", suffix=".so", dir=where)
        os.close(fd)
    except OSError as e:
        return f"cannot write to {where}: {e} (set CCA_CACHE_DIR)"
    cmd = [cxx, "-std=c++17", "-O1", "-shared", "-fPIC", "-fvisibility=hidden", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
           "-isystem", inc, src, "-o", tmp, "-L" + libdir, "-lc10", "-Wl,-rpath," + libdir]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as e:
        r = None
        err = str(e)
    if r is None or r.returncode != 0:
        if r is not None:
            lines = [ln for ln in (r.stderr or r.stdout).splitlines() if ln.strip()]
            err = lines[-1] if lines else f"exit status {r.returncode}"
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return f"building it with {cxx} failed: {err}"
    os.replace(tmp, path)                             # atomic: a concurrent process sees all of it or none
    return None
