"""Loading libcca and describing its structs.

The library is found, in order: ``CCA_LIBRARY`` (a path; how the tests load
the simulated build), then ``libcca.so`` beside this package. libcca names
the CUDA runtime by soname only (``libcudart.so.13``, no path): it binds to
the one the process already has (torch's, a program's). Where the process
has none yet, this environment's NVIDIA runtime wheel's is loaded
(``nvidia/cu13/lib``, the one beside torch first; cuda-pathfinder's when
installed), else the one the loader finds, else ``$CUDA_PATH``'s or
``$CUDA_HOME``'s (default ``/usr/local/cuda``); with none of them, or with
a runtime of another major version already in the process,
``RuntimeNotFoundError`` says so in one sentence. Loading
happens on first use, so ``import cca`` works on a machine without CUDA.

Every struct comes from the layouts the library exports
(``cca_struct_layouts``): fields, offsets and sizes are read, not restated.
"""

import ctypes
import glob
import os
import struct as _struct
import sys
import threading

_lock = threading.Lock()
_lib = None
_structs = {}
_unbuilt = {}                                         # struct name -> the C types no ctypes type exists for

_SCALARS = {
    "int": ctypes.c_int,
    "unsigned": ctypes.c_uint,
    "size_t": ctypes.c_size_t,
    "uintptr_t": ctypes.c_size_t,
    "double": ctypes.c_double,
    "int64_t": ctypes.c_int64,
    "uint64_t": ctypes.c_uint64,
    "uint32_t": ctypes.c_uint32,
    "char": ctypes.c_char,
    "cudaStream_t": ctypes.c_void_p,
    "cca_oom_verdict_t": ctypes.c_int,
    "cca_snapshot_state_t": ctypes.c_int,
    "cca_notice_kind_t": ctypes.c_int,
    "cca_watch_kind_t": ctypes.c_int,
}


class _FieldLayout(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_char_p), ("offset", ctypes.c_size_t),
                ("size", ctypes.c_size_t), ("count", ctypes.c_size_t), ("doc", ctypes.c_char_p)]


class _StructLayout(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("size", ctypes.c_size_t), ("n_fields", ctypes.c_size_t),
                ("fields", ctypes.POINTER(_FieldLayout))]


def library_path():
    """The libcca this process uses (CCA_LIBRARY, else the package's own)."""
    env = os.environ.get("CCA_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("libcca.so", "libcca.so.0"):
        p = os.path.join(here, name)
        if os.path.exists(p):
            return p
    found = glob.glob(os.path.join(here, "libcca.so*"))
    if found:
        return sorted(found)[0]
    raise OSError("cca: libcca.so not found beside the package; set CCA_LIBRARY to a built libcca.so")


def hooks_path():
    """The hook library torch and CuPy load (libcca_hooks.so): from
    CCA_HOOKS_LIBRARY, beside libcca, or in a build tree's hooks/."""
    env = os.environ.get("CCA_HOOKS_LIBRARY")
    if env:
        return env
    base = os.path.dirname(os.path.abspath(library_path()))
    for d in (base, os.path.join(base, "..", "hooks")):
        p = os.path.join(d, "libcca_hooks.so")
        if os.path.exists(p):
            return os.path.abspath(p)
    raise OSError("cca: libcca_hooks.so not found beside libcca; set CCA_HOOKS_LIBRARY")


class RuntimeNotFoundError(OSError):
    """libcca needs a CUDA runtime this process does not have and cca
    cannot find."""


def needed(path):
    """The DT_NEEDED names of an ELF64 little-endian shared library ([] when it is none)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            return []
        phoff, = _struct.unpack_from("<Q", data, 0x20)
        phentsize, phnum = _struct.unpack_from("<HH", data, 0x36)
        loads, dyn = [], None
        for i in range(phnum):
            kind, _, off, vaddr, _, filesz, _, _ = _struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize)
            if kind == 1:                             # PT_LOAD
                loads.append((vaddr, off, filesz))
            elif kind == 2:                           # PT_DYNAMIC
                dyn = (off, filesz)
        if dyn is None:
            return []
        names, strtab = [], None
        for at in range(dyn[0], dyn[0] + dyn[1], 16):
            tag, val = _struct.unpack_from("<qQ", data, at)
            if tag == 0:
                break
            if tag == 1:                              # DT_NEEDED
                names.append(val)
            elif tag == 5:                            # DT_STRTAB
                strtab = val
        base = next(o + strtab - v for v, o, n in loads if v <= strtab < v + n)
        return [data[base + n:data.index(b"\0", base + n)].decode() for n in names]
    except (OSError, _struct.error, StopIteration, TypeError, ValueError, IndexError):
        return []


def _loaded(soname, promote=True):
    """Whether this process has a library of that soname (made global if promote)."""
    try:
        ctypes.CDLL(soname, mode=os.RTLD_NOLOAD | (ctypes.RTLD_GLOBAL if promote else ctypes.RTLD_LOCAL))
        return True
    except OSError:
        return False


def _wheel_runtimes(soname):
    """This environment's NVIDIA runtime wheel's copies of soname, best
    first: the one beside torch (what torch loads), then those of the
    other entries of sys.path, then cuda-pathfinder's."""
    dirs = []
    try:
        import importlib.util
        spec = importlib.util.find_spec("torch")      # finds, does not import
        if spec and spec.origin:
            dirs.append(os.path.dirname(os.path.dirname(os.path.realpath(spec.origin))))
    except (ImportError, ValueError):
        pass
    dirs += [e for e in sys.path if e and os.path.isabs(e)]
    for d in dirs:
        for sub in ("cu13", "cuda_runtime", "cu12"):
            yield os.path.join(d, "nvidia", sub, "lib", soname)
    try:
        from cuda import pathfinder  # type: ignore
        found = pathfinder.load_nvidia_dynamic_lib("cudart")
        p = getattr(found, "abs_path", None)
        if p and os.path.basename(p) == soname:
            yield p
    except Exception:                                 # not installed, or it found none
        pass


def _toolkit_runtimes(soname):
    roots = [r for r in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME")) if r] or ["/usr/local/cuda"]
    for root in roots:
        yield os.path.join(root, "lib64", soname)
        yield os.path.join(root, "lib", soname)


def _load_first(cands):
    for cand in cands:
        if os.path.isfile(cand):
            try:
                ctypes.CDLL(cand, mode=ctypes.RTLD_GLOBAL)
                return cand
            except OSError:
                continue
    return None


def _open(path):
    """libcca, loaded globally, bound to one CUDA runtime per process: the
    one this process has already loaded (torch's, a program's); else this
    environment's NVIDIA runtime wheel's (the one beside torch first); else
    the one the loader finds; else CUDA_PATH's or CUDA_HOME's (default
    /usr/local/cuda). A process holding a runtime of another major version
    is told so: loading ours would make two."""
    runtimes = [n for n in needed(path) if n.startswith("libcudart.so")]
    others = [f"libcudart.so.{n}" for n in range(10, 20) if f"libcudart.so.{n}" not in runtimes]
    other = next((o for o in others if _loaded(o, promote=False)), None)
    if other and runtimes and not _loaded(runtimes[0], promote=False):
        raise RuntimeNotFoundError(
            f"cca: this process's CUDA runtime is {other} (torch's, or a program's) and this cca was built for "
            f"{runtimes[0]}, which would be a second runtime: reinstall cca against {other} (pip install . "
            f"-Csetup-args=-Dcudart_root=<the NVIDIA runtime wheel's nvidia/cuda_runtime, or a toolkit, of that "
            f"version>)")
    for soname in runtimes:
        if not _loaded(soname):
            _load_first(_wheel_runtimes(soname))
    try:
        return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError as e:
        missing = [n for n in runtimes if n in str(e)]
        if not missing or "cannot open shared object" not in str(e):
            raise
    soname = missing[0]
    if _load_first(_toolkit_runtimes(soname)):
        return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    places = sorted({os.path.dirname(os.path.dirname(c)) for c in _toolkit_runtimes(soname)})
    raise RuntimeNotFoundError(
        f"cca: no CUDA runtime found: libcca needs {soname}, which this process has not loaded and which is not in "
        f"an NVIDIA runtime wheel here (pip install nvidia-cuda-runtime), on the loader's path or in "
        f"{' or '.join(places)}")


def _declare(lib):
    c = ctypes
    vp, sz, i, st = c.c_void_p, c.c_size_t, c.c_int, c.c_int
    sigs = {
        "cca_default": (st, [i, c.POINTER(vp)]),
        "cca_default_existing": (st, [i, c.POINTER(vp)]),
        "cca_default_configure": (st, [c.c_char_p]),
        "cca_malloc": (st, [vp, c.POINTER(vp), sz, vp]),
        "cca_malloc_try": (st, [vp, c.POINTER(vp), sz, vp]),
        "cca_free": (st, [vp, vp]),
        "cca_record_stream": (st, [vp, vp, vp]),
        "cca_empty_cache": (st, [vp]),
        "cca_get_stats_sized": (st, [vp, vp, sz]),
        "cca_reset_peak_stats": (st, [vp]),
        "cca_reset_accumulated_stats": (st, [vp]),
        "cca_check": (st, [vp]),
        "cca_get_fragmentation_sized": (st, [vp, vp, sz]),
        "cca_last_oom_report_sized": (st, [vp, vp, sz]),
        "cca_thread_last_oom_report_sized": (st, [vp, sz]),
        "cca_oom_report_format_sized": (sz, [vp, sz, c.c_char_p, sz]),
        "cca_oom_judge_sized": (None, [vp, sz]),
        "cca_oom_verdict_string": (c.c_char_p, [i]),
        "cca_snapshot_json": (st, [vp, vp, vp]),
        "cca_snapshot_json_history": (st, [vp, vp, vp]),
        "cca_memory_summary": (st, [vp, vp, vp]),
        "cca_set_memory_fraction": (st, [vp, c.c_double]),
        "cca_set_memory_limit": (st, [vp, sz]),
        "cca_get_memory_cap": (st, [vp, c.POINTER(sz), c.POINTER(c.c_double), c.POINTER(sz)]),
        "cca_current_device": (st, [c.POINTER(i)]),
        "cca_mem_get_info": (st, [i, c.POINTER(sz), c.POINTER(sz)]),
        "cca_status_string": (c.c_char_p, [i]),
        "cca_last_error_string": (c.c_char_p, []),
        "cca_struct_layouts": (c.POINTER(_StructLayout), [c.POINTER(sz)]),
        "cca_config_keys": (vp, [c.POINTER(sz)]),
        "cca_stats_fields": (vp, [c.POINTER(sz)]),
        "cca_stream_retire": (st, [vp, vp]),
        "cca_watch_threshold_queued": (st, [vp, i, sz, c.POINTER(c.c_uint64)]),
        "cca_unwatch": (st, [vp, c.c_uint64]),
        "cca_oom_notices": (st, [vp, i]),
        "cca_notice_wait": (i, [i, c.POINTER(i), c.POINTER(c.c_uint64), c.POINTER(i), c.POINTER(sz), c.POINTER(sz),
                                c.POINTER(i)]),
        "cca_notice_pending": (sz, [c.POINTER(c.c_uint64), c.POINTER(c.c_uint64)]),
        "cca_notice_take_sized": (i, [i, vp, sz]),
        "cca_allocator_id": (c.c_uint64, [vp]),
        "cca_scope_begin": (st, [vp, c.POINTER(c.c_uint64)]),
        "cca_scope_end_sized": (st, [vp, c.c_uint64, vp, sz]),
        "cca_tag_id": (st, [c.c_char_p, c.POINTER(c.c_uint32)]),
        "cca_tag_name": (c.c_char_p, [c.c_uint32]),
        "cca_tag_thread": (c.c_uint32, [c.c_uint32]),
        "cca_tag_shared": (c.c_uint32, [c.c_uint32]),
        "cca_record_history": (st, [vp, sz]),
        "cca_default_record_history": (st, [sz]),
        "cca_history_walk_sized": (st, [vp, vp, vp, c.POINTER(c.c_uint64), sz]),
        "cca_history_action_string": (c.c_char_p, [i]),
        "cca_history_set_context": (None, [vp, c.c_uint]),
        "cca_history_set_skip": (None, [c.c_uint]),
        "cca_history_mark_snapshot": (st, [vp]),
        "cca_trace_start": (st, [vp, c.c_char_p]),
        "cca_trace_stop": (st, [vp]),
        "cca_trace_flush": (st, [vp]),
        "cca_trace_path": (st, [vp, c.c_char_p, sz]),
        "cca_default_trace_start": (st, [c.c_char_p]),
        "cca_get_config_sized": (st, [vp, vp, sz]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args


def lib():
    """The loaded libcca (loaded on first call)."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            handle = _open(library_path())
            _declare(handle)
            _build_structs(handle)
            _lib = handle
    return _lib


def _ctype(layout_type, count, structs):
    base = _SCALARS.get(layout_type) or structs.get(layout_type)
    if base is None:
        raise TypeError("cca: no ctypes type for the C type " + layout_type)
    return base * count if count > 1 else base


def _build_structs(handle):
    n = ctypes.c_size_t()
    arr = handle.cca_struct_layouts(ctypes.byref(n))
    built = {}
    pending = [arr[k] for k in range(n.value)]
    while pending:                                    # inner structs (cca_stat_t, ...) first
        progress = False
        for lay in list(pending):
            name = lay.name.decode()
            fields, names, at = [], [], 0
            try:
                for f in (lay.fields[j] for j in range(lay.n_fields)):
                    if f.offset > at:
                        fields.append(("_pad%d" % at, ctypes.c_char * (f.offset - at)))
                    fields.append((f.name.decode(), _ctype(f.type.decode(), f.count, built)))
                    names.append(f.name.decode())
                    at = f.offset + f.size
            except TypeError:
                continue
            if lay.size > at:
                fields.append(("_tail", ctypes.c_char * (lay.size - at)))
            cls = type(name, (ctypes.Structure,), {"_fields_": fields, "_cca_fields": tuple(names)})
            if ctypes.sizeof(cls) != lay.size:
                raise TypeError("cca: %s is %d bytes in libcca, %d in ctypes" % (name, lay.size, ctypes.sizeof(cls)))
            built[name] = cls
            pending.remove(lay)
            progress = True
        if not progress:                              # a newer libcca's struct of a type this package lacks:
            for p in pending:                         # the others still work, and this one says why it cannot
                _unbuilt[p.name.decode()] = sorted({p.fields[j].type.decode() for j in range(p.n_fields)}
                                                   - set(_SCALARS) - set(built))
            break
    _structs.update(built)


def struct(name):
    """The ctypes class of a cca struct ("cca_stats_t", ...), from its layout."""
    lib()
    if name in _unbuilt:
        raise TypeError("cca: this package has no ctypes type for %s's C type(s) %s (a newer libcca than the package)"
                        % (name, ", ".join(_unbuilt[name])))
    return _structs[name]


def error_text():
    return (lib().cca_last_error_string() or b"").decode(errors="replace")
