"""torch's own out-of-memory exception, for cca's PyTorch hook.

Only ``c10::OutOfMemoryError`` becomes ``torch.OutOfMemoryError``, and that
type lives in the running torch's libc10. libcca_hooks is built without
torch (pip's isolated build never sees it), so the one function that throws
it, ``cca_torch_raise_oom`` (``cca_torch_oom.cpp``, shipped beside the
hooks), is built here against the headers and libc10 of the torch that is
running: once, about half a second with g++, then cached per torch build
under ``$CCA_CACHE_DIR`` (default ``$XDG_CACHE_HOME/cca``, else
``~/.cache/cca``) in ``torch-oom/<torch version>-<key>/``. The key covers
the source, the compile flags, the torch version and folder, its C++ ABI
and its libc10 and headers as files (size, time), so a new torch, a rebuilt
one or a new cca builds anew; a cached library is used without a compiler.
The compiler is ``$CXX`` (a command, arguments allowed: ``ccache g++``),
else ``c++``, else ``g++``. A cached library that does not load, or lacks
the function, is built again; an unwritable cache builds into a temporary
folder for this process.

``load(torch)`` returns ``(library, None)`` or ``(None, reason)``; the hook
then raises RuntimeError with the same text, and install() warns once.
"""

import ctypes
import glob
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import time

from .. import _lib

SOURCE = "cca_torch_oom.cpp"
LIBRARY = "libcca_torch_oom.so"
SYMBOL = "cca_torch_raise_oom"
FLAGS = ("-std=c++17", "-O1", "-shared", "-fPIC", "-fvisibility=hidden")


def cache_dir():
    """Where cca keeps what it builds on a user's machine."""
    d = os.environ.get("CCA_CACHE_DIR")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cca")


def source_path():
    """cca_torch_oom.cpp beside the hook library (the package's folder, or a
    build tree's hooks/), else in <prefix>/share/cca of a C install."""
    here = os.path.dirname(_lib.hooks_path())
    for d in (here, os.path.join(here, "..", "share", "cca")):
        p = os.path.normpath(os.path.join(d, SOURCE))
        if os.path.isfile(p):
            return p
    return os.path.join(here, SOURCE)


def _compiler():
    """(argv list, None) of the C++ compiler, or (None, what was looked for)."""
    cxx = os.environ.get("CXX")
    if cxx:
        argv = shlex.split(cxx)
        found = shutil.which(argv[0]) if argv else None
        return ([found] + argv[1:], None) if found else (None, cxx)
    for name in ("c++", "g++"):
        found = shutil.which(name)
        if found:
            return [found], None
    return None, "c++"


def _stat(path):
    try:
        st = os.stat(path)
        return f"{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        return "-"


def _try(path):
    """(library, None) when path loads and has the function; (None, why) when
    it does not; (None, None) when there is no such file."""
    if not os.path.isfile(path):
        return None, None
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        return None, f"{path} does not load: {e}"
    if not hasattr(lib, SYMBOL):
        return None, f"{path} has no {SYMBOL}"
    return lib, None


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
    header = os.path.join(inc, "c10", "util", "Exception.h")
    if not os.path.isfile(header):
        return None, f"this torch has no C++ headers ({inc})"
    abi = int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)))
    with open(src, "rb") as f:
        text = f.read()
    parts = [text, " ".join(FLAGS).encode(), torch.__version__.encode(), tdir.encode(), str(abi).encode(),
             _stat(os.path.join(libdir, "libc10.so")).encode(), _stat(header).encode()]
    key = hashlib.sha256(b"\0".join(parts)).hexdigest()[:16]
    tag = "".join(c if c.isalnum() or c in ".+-_" else "_" for c in torch.__version__)
    where = os.path.join(cache_dir(), "torch-oom", f"{tag}-{key}")
    lib, broken = _try(os.path.join(where, LIBRARY))
    if lib is not None:
        return lib, None
    cxx, looked = _compiler()
    if cxx is None:
        why = f"no C++ compiler ({looked} not found; set CXX)"
        return None, f"{broken}, and {why}" if broken else why
    built, why = _build(cxx, src, inc, libdir, abi, where)
    if built is None and why.startswith("cannot write"):
        where = tempfile.mkdtemp(prefix="cca-torch-oom-")   # for this process only
        built, why = _build(cxx, src, inc, libdir, abi, where)
    if built is None:
        return None, why
    lib, why = _try(built)                            # a fresh name: never the broken library's handle
    if lib is None:
        return None, why
    try:
        os.replace(built, os.path.join(where, LIBRARY))   # atomic: a concurrent process sees all of it or none
    except OSError:
        pass                                          # loaded from its own name all the same
    return lib, None


def _reason(r):
    lines = [ln.strip() for ln in ((r.stderr or "") + "\n" + (r.stdout or "")).splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()]
    return (errors or lines or [f"exit status {r.returncode}"])[0]


def _build(cxx, src, inc, libdir, abi, where):
    """(path of the library built under where, None) or (None, why)."""
    try:
        os.makedirs(where, exist_ok=True)
        for old in glob.glob(os.path.join(where, ".build-*")):   # left by a killed build
            try:
                if time.time() - os.stat(old).st_mtime > 3600:
                    os.unlink(old)
            except OSError:
                pass
        fd, tmp = tempfile.mkstemp(prefix=".build-", suffix=".so", dir=where)
        os.close(fd)
    except OSError as e:
        return None, f"cannot write to {where}: {e} (set CCA_CACHE_DIR)"
    cmd = cxx + list(FLAGS) + [f"-D_GLIBCXX_USE_CXX11_ABI={abi}", "-isystem", inc, src, "-o", tmp,
                               "-L" + libdir, "-lc10", "-Wl,-rpath," + libdir]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        why = None if r.returncode == 0 else _reason(r)
    except (OSError, subprocess.SubprocessError) as e:
        why = str(e)
    if why is None:
        try:
            os.chmod(tmp, 0o755)                      # mkstemp made it 0600: others sharing the cache load it too
        except OSError as e:
            why = str(e)
    if why is not None:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return None, f"building it with {' '.join(cxx)} failed: {why}"
    return tmp, None
