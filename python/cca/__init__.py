"""cca: a CUDA caching allocator with the accounting built in.

Pure Python over ctypes. The functions below carry the names and meaning
of ``torch.cuda.memory``'s (``memory_stats``, ``memory_allocated``,
``max_memory_allocated``, ...), answered by cca's per-device allocators -
the same ones the PyTorch hook (``cca.allocators.torch.install()``) and any
other user of ``cca_default`` allocate from - and add what only cca knows:
``last_oom()``, ``fragmentation()``, ``configure()``.

``device`` is an index (numpy's integers too), a ``torch.device``,
``"cuda"`` or ``"cuda:N"``, or None for the calling thread's current
device; another type is a TypeError, another device a ValueError.
"""

import collections
import contextvars
import ctypes
import json
import numbers
import operator
import re
import threading

from . import _lib

__all__ = [
    "CcaError", "OutOfMemoryError", "OomReport", "configure", "memory_stats", "memory_stats_as_nested_dict",
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "reset_peak_memory_stats", "reset_accumulated_memory_stats", "reset_max_memory_allocated",
    "empty_cache", "memory_summary", "memory_snapshot", "mem_get_info", "set_per_process_memory_fraction",
    "get_per_process_memory_fraction", "fragmentation", "last_oom", "check", "config_keys",
    "watch", "Watch", "Crossing", "on_oom", "OomHandler", "profile", "ProfileResult", "Monitor", "tag", "tag_name",
    "record_history", "history", "snapshot", "dump_snapshot", "expandable_stats",
]

_STATS = ("allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
          "active_bytes", "inactive_split_bytes", "requested_bytes")
_POOLS = ("all", "small_pool", "large_pool")
_PARTS = ("current", "peak", "allocated", "freed")
_VERDICTS = {0: "none", 1: "exhausted", 2: "fragmented", 3: "cap", 4: "external", 5: "stranded"}
_MAX_DEVICES = 64


class CcaError(RuntimeError):
    """A cca call failed; ``status`` is the cca_status_t name."""

    def __init__(self, message, status=""):
        super().__init__(message)
        self.status = status


class OutOfMemoryError(CcaError, MemoryError):
    """Out of device memory; ``report`` is this thread's OomReport of the
    failure (verdict, figures, advice), None when cca made none."""

    def __init__(self, message, report=None):
        super().__init__(message, "CCA_ERROR_OUT_OF_MEMORY")
        self.report = report


def _thread_oom_report():
    cls = _lib.struct("cca_oom_report_t")
    r = cls()
    if _lib.lib().cca_thread_last_oom_report_sized(ctypes.byref(r), ctypes.sizeof(r)) != 0 or r.verdict == 0:
        return None
    return OomReport(r)


def _check(status, what):
    if status != 0:
        name = _lib.lib().cca_status_string(status).decode()
        text = "%s: %s" % (what, _lib.error_text())
        if name == "CCA_ERROR_OUT_OF_MEMORY":
            raise OutOfMemoryError(text, _thread_oom_report())
        if name in ("CCA_ERROR_INVALID_ARGUMENT", "CCA_ERROR_INVALID_CONFIG"):
            raise ValueError(text)
        raise CcaError(text, name)


_DEVICE_STR = re.compile(r"cuda(?::([0-9]+))?\Z", re.ASCII)


def _device_index(device):
    """None (the current device), an integer (int, numpy integer: anything
    with __index__ but bool), "cuda" or "cuda:N", an object with
    .type == "cuda" and an integer or None .index (torch.device), or one
    with .idx (torch.cuda.device)."""
    if device is None:
        d = ctypes.c_int(-1)
        _check(_lib.lib().cca_current_device(ctypes.byref(d)), "current device")
        return d.value
    if isinstance(device, str):
        m = _DEVICE_STR.match(device)
        if not m:
            raise ValueError("cca: expected \"cuda\" or \"cuda:N\", got %r" % (device,))
        return _device_index(None) if m.group(1) is None else _in_range(int(m.group(1)))
    if isinstance(device, (bytes, bytearray, tuple, list, float, bool)):
        raise TypeError("cca: a device is an int, \"cuda:N\" or a torch.device, not %s" % type(device).__name__)
    if hasattr(device, "__index__"):
        return _in_range(operator.index(device))
    if hasattr(device, "idx") and not hasattr(device, "type"):   # torch.cuda.device(N), as torch takes it
        return _device_index(device.idx)
    kind = getattr(device, "type", None)
    if kind is None or not hasattr(device, "index"):
        raise TypeError("cca: a device is an int, \"cuda:N\" or a torch.device, not %s" % type(device).__name__)
    if kind != "cuda":
        raise ValueError("cca: expected a CUDA device, got %r" % (device,))
    if device.index is None:
        return _device_index(None)
    if isinstance(device.index, bool) or not hasattr(device.index, "__index__"):
        raise TypeError("cca: a device's index is an int or None, not %s" % type(device.index).__name__)
    return _in_range(operator.index(device.index))


def _in_range(idx):
    if not 0 <= idx < _MAX_DEVICES:
        raise ValueError("cca: device %d out of range [0, %d)" % (idx, _MAX_DEVICES))
    return idx


def _allocator(device=None, create=True):
    lib = _lib.lib()
    a = ctypes.c_void_p()
    d = _device_index(device)
    if create:
        _check(lib.cca_default(d, ctypes.byref(a)), "cca_default(%d)" % d)
    else:
        lib.cca_default_existing(d, ctypes.byref(a))
    return a if a.value else None


def _existing_allocators():
    out = []
    for d in range(_MAX_DEVICES):
        a = _allocator(d, create=False)
        if a:
            out.append((d, a))
    return out


def configure(conf):
    """Configures the per-device allocators (CCA_CONF's syntax: "preset:lean,...")
    before the first one is used; replaces CCA_CONF. TypeError unless conf
    is a str; ValueError for a bad string or when an allocator exists
    already."""
    if not isinstance(conf, str):
        raise TypeError("cca.configure: expected a str, got %s" % type(conf).__name__)
    if "\0" in conf:
        raise ValueError("cca.configure: the configuration contains a NUL character")
    _check(_lib.lib().cca_default_configure(conf.encode()), "cca.configure")
    global _conf_string
    _conf_string = conf


_conf_string = None                                   # what configure() was given, for allocator_settings


def config_keys():
    """The configuration keys: {name: (value, range, default, meaning)}."""
    n = ctypes.c_size_t()
    ptr = _lib.lib().cca_config_keys(ctypes.byref(n))
    row = ctypes.c_char_p * 5
    rows = ctypes.cast(ptr, ctypes.POINTER(row))
    return {rows[i][0].decode(): tuple(x.decode() for x in rows[i][1:]) for i in range(n.value)}


def _stats(device):
    cls = _lib.struct("cca_stats_t")
    s = cls()
    _check(_lib.lib().cca_get_stats_sized(_allocator(device), ctypes.byref(s), ctypes.sizeof(s)), "cca_get_stats")
    return s


def _stat_dict(stat):
    return {p: int(getattr(stat, p)) for p in _PARTS}


def memory_stats_as_nested_dict(device=None):
    """torch.cuda.memory_stats_as_nested_dict(), from cca."""
    s = _stats(device)
    out = {"num_alloc_retries": int(s.num_alloc_retries), "num_ooms": int(s.num_ooms),
           "max_split_size": int(s.max_split_size), "num_sync_all_streams": int(s.num_sync_all_streams),
           "num_device_alloc": int(s.num_device_alloc), "num_device_free": int(s.num_device_free)}
    if _torch_counts_oom_rejections():
        # torch 2.12's count of allocations its throw_on_cudamalloc_oom policy
        # rejects before trying the device; cca has no such policy (a cap's
        # refusal is an out-of-memory, counted in num_ooms): none, ever
        out["num_oom_rejections"] = 0
    for name in _STATS:
        arr = getattr(s, name)
        out[name] = {pool: _stat_dict(arr[k]) for k, pool in enumerate(_POOLS)}
    out["oversize_allocations"] = _stat_dict(s.oversize_allocations)
    out["oversize_segments"] = _stat_dict(s.oversize_segments)
    return out


def expandable_stats(device=None):
    """What expandable segments (expandable_segments:True) add to memory_stats():
    num_handle_create / num_handle_release (cuMemCreate / cuMemRelease),
    unmapped_bytes (handles held unmapped, part of reserved_bytes) and, as
    there, num_device_alloc / num_device_free (cuMemMap / cuMemUnmap with
    expandable segments, cudaMalloc / cudaFree without)."""
    s = _stats(device)
    return {"num_handle_create": int(s.num_handle_create), "num_handle_release": int(s.num_handle_release),
            "unmapped_bytes": _stat_dict(s.unmapped_bytes), "num_device_alloc": int(s.num_device_alloc),
            "num_device_free": int(s.num_device_free)}


def _torch_counts_oom_rejections():
    """Whether the torch this process imported reports num_oom_rejections
    (torch 2.12 and later); True where no torch is imported."""
    import sys
    torch = sys.modules.get("torch")
    ver = getattr(torch, "__version__", None) if torch is not None else None
    if not ver:
        return True
    try:
        major, minor = (int(x) for x in str(ver).split("+")[0].split(".")[:2])
    except ValueError:
        return True
    return (major, minor) >= (2, 12)


def memory_stats(device=None):
    """torch.cuda.memory_stats(): a flat, sorted dict with the keys of the
    torch this process imported ("allocated_bytes.all.current", "num_ooms",
    ...; num_oom_rejections from torch 2.12 on, and where no torch is
    imported), from cca. Every figure means what torch's does:
    ``requested_bytes`` and ``active_bytes`` drop when the streams that used
    a freed block have finished with it (checked against torch's own
    allocator on the same programs: python/tests/frameworks)."""
    result = []

    def add(prefix, obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                add(prefix + "." + k if prefix else k, v)
        else:
            result.append((prefix, obj))

    add("", memory_stats_as_nested_dict(device))
    result.sort()
    return collections.OrderedDict(result)


def memory_allocated(device=None):
    """Bytes handed out now (allocated_bytes.all.current): rounded block sizes."""
    return int(_stats(device).allocated_bytes[0].current)


def max_memory_allocated(device=None):
    """The peak of memory_allocated() since the last peak reset."""
    return int(_stats(device).allocated_bytes[0].peak)


def memory_reserved(device=None):
    """Bytes held from the device now (reserved_bytes.all.current)."""
    return int(_stats(device).reserved_bytes[0].current)


def max_memory_reserved(device=None):
    """The peak of memory_reserved() since the last peak reset."""
    return int(_stats(device).reserved_bytes[0].peak)


def reset_peak_memory_stats(device=None):
    """Sets every peak to its current value."""
    _check(_lib.lib().cca_reset_peak_stats(_allocator(device)), "cca_reset_peak_stats")


reset_max_memory_allocated = reset_peak_memory_stats


def reset_accumulated_memory_stats(device=None):
    """Sets the allocated/freed totals and the num_* counters to 0 (as torch)."""
    _check(_lib.lib().cca_reset_accumulated_stats(_allocator(device)), "cca_reset_accumulated_stats")


def empty_cache():
    """Returns every fully free cached segment of every device to CUDA."""
    for _, a in _existing_allocators():
        _check(_lib.lib().cca_empty_cache(a), "cca_empty_cache")


_WRITE = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)


def _text_of(fn, a):
    parts = []

    def write(data, n, _arg):
        parts.append(ctypes.string_at(data, n))
        return n

    cb = _WRITE(write)
    _check(fn(a, ctypes.cast(cb, ctypes.c_void_p), None), fn.__name__)
    return b"".join(parts).decode(errors="replace")


def memory_summary(device=None, abbreviated=False):
    """A table like torch.cuda.memory_summary(), with cca's fragmentation figures."""
    del abbreviated                                   # one form, as torch's abbreviated=False
    return _text_of(_lib.lib().cca_memory_summary, _allocator(device))


def memory_snapshot():
    """torch.cuda.memory_snapshot(): every segment of every device cca uses,
    with its blocks, in torch's layout (list of dicts)."""
    segs = []
    for _, a in _existing_allocators():
        segs.extend(json.loads(_text_of(_lib.lib().cca_snapshot_json, a))["segments"])
    return segs


def mem_get_info(device=None):
    """(free, total) bytes of the device, from cudaMemGetInfo."""
    f, t = ctypes.c_size_t(), ctypes.c_size_t()
    d = _device_index(device)
    _check(_lib.lib().cca_mem_get_info(d, ctypes.byref(f), ctypes.byref(t)), "cudaMemGetInfo")
    return int(f.value), int(t.value)


def set_per_process_memory_fraction(fraction, device=None):
    """Caps the device's allocator at fraction x its total memory, for the
    next growth (memory above it stays until empty_cache, as in torch).
    TypeError unless a real number (int, float, numpy's); ValueError outside
    (0, 1], or for a cap below one 2 MiB segment (torch allows 0, which
    leaves no memory)."""
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real):
        raise TypeError("cca: the memory fraction is a real number, not %s" % type(fraction).__name__)
    if not 0 < fraction <= 1:
        raise ValueError("cca: the memory fraction must be in (0, 1], got %r" % (fraction,))
    _check(_lib.lib().cca_set_memory_fraction(_allocator(device), float(fraction)), "set_per_process_memory_fraction")


def get_per_process_memory_fraction(device=None):
    """The cap in force as a fraction of the device's total memory: the
    fraction set, where that is the cap; otherwise min(cap, total) / total
    (a byte cap, memory_limit_mb, smaller than the fraction's, or above the
    device); 1.0 when uncapped."""
    cap, frac, limit = ctypes.c_size_t(), ctypes.c_double(), ctypes.c_size_t()
    _check(_lib.lib().cca_get_memory_cap(_allocator(device), ctypes.byref(cap), ctypes.byref(frac),
                                         ctypes.byref(limit)), "cca_get_memory_cap")
    if cap.value == 0:
        return 1.0
    if frac.value > 0 and (limit.value == 0 or cap.value < limit.value):
        return frac.value
    total = mem_get_info(device)[1]
    return min(cap.value, total) / total if total else 1.0


def _plain(v):
    """A field's value as Python has it: a float, an int, a str (a char
    array), a list (an array) or a dict (a struct) of them - a field a later
    libcca appends may be any of these."""
    if isinstance(v, bytes):
        return v.decode(errors="replace")
    if isinstance(v, ctypes.Array):
        return [_plain(x) for x in v]
    if isinstance(v, ctypes.Structure):
        return {n: _plain(getattr(v, n)) for n in getattr(type(v), "_cca_fields", ())}
    return v if isinstance(v, float) else int(v or 0)


def fragmentation(device=None):
    """cca's fragmentation figures: reserved, allocated, requested, active,
    free_cached, largest_free, free_blocks, segments, inactive_split,
    internal_waste, external_fragmentation, utilization, unmapped (handles
    expandable segments hold unmapped, counted in reserved and free_cached)
    and every field a later libcca appends, and per size class
    (2^k bytes) the free, allocated and pending blocks and bytes."""
    cls = _lib.struct("cca_frag_t")
    f = cls()
    _check(_lib.lib().cca_get_fragmentation_sized(_allocator(device), ctypes.byref(f), ctypes.sizeof(f)),
           "cca_get_fragmentation")
    out = {n: _plain(getattr(f, n)) for n in cls._cca_fields if n != "classes"}
    classes = {}
    for k in range(len(f.classes)):
        c = f.classes[k]
        if c.free_blocks or c.allocated_blocks or c.pending_blocks:
            classes[1 << k] = {n: int(getattr(c, n)) for n in type(c)._cca_fields}
    out["classes"] = classes
    return out


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
        buf = ctypes.create_string_buffer(2048)
        _lib.lib().cca_oom_report_format_sized(ctypes.byref(self._raw), ctypes.sizeof(self._raw), buf, len(buf))
        return buf.value.decode(errors="replace").rstrip("\n")

    def __repr__(self):
        return "<cca.OomReport %s: %d bytes requested on device %d>" % (self.verdict, self.requested, self.device)


def last_oom(device=None):
    """The device allocator's last out-of-memory report, or None if none."""
    cls = _lib.struct("cca_oom_report_t")
    r = cls()
    _check(_lib.lib().cca_last_oom_report_sized(_allocator(device), ctypes.byref(r), ctypes.sizeof(r)),
           "cca_last_oom_report")
    return None if r.verdict == 0 else OomReport(r)


def tag_name(tag_id):
    """A tag's name from its id; None for 0 (untagged) and unknown ids."""
    name = _lib.lib().cca_tag_name(int(tag_id))
    return name.decode(errors="replace") if name else None


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
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with tag(self.name, self.thread_only):
                return fn(*args, **kwargs)
        return wrapper


HISTORY_DEFAULT_ENTRIES = 100000
_HISTORY_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


def record_history(enabled=True, max_entries=HISTORY_DEFAULT_ENTRIES, device=None):
    """Records allocation events (torch.cuda.memory._record_memory_history):
    allocations, frees requested and completed, segments obtained and
    returned, out-of-memory failures - the newest max_entries of them, per
    device. device None: every device's allocator, those made later too.
    enabled False (or None) stops and drops what was recorded; torch's
    "all" and "state" mean True. While it records, every malloc and free
    takes cca's all-locked path (slower, never wrong)."""
    if enabled in ("all", "state"):
        enabled = True
    if enabled is not None and not isinstance(enabled, bool):
        raise TypeError("cca.record_history: enabled is a bool, \"all\", \"state\" or None, not %r" % (enabled,))
    if isinstance(max_entries, bool) or not isinstance(max_entries, numbers.Integral):
        raise TypeError("cca.record_history: max_entries is an int, not %s" % type(max_entries).__name__)
    if enabled and not 0 < max_entries <= 2 ** 63:
        raise ValueError("cca.record_history: max_entries must be positive, got %d" % max_entries)
    n = int(max_entries) if enabled else 0
    if device is None:
        _check(_lib.lib().cca_default_record_history(n), "cca.record_history")
    else:
        _check(_lib.lib().cca_record_history(_allocator(device), n), "cca.record_history")


def _event_dict(e):
    """A cca_history_entry_t as torch's trace entry."""
    action = _lib.lib().cca_history_action_string(int(e.action)).decode()
    d = {"action": action, "addr": int(e.addr), "size": int(e.size), "stream": int(e.stream or 0),
         "time_us": int(e.time_us), "frames": []}
    if action == "oom":
        d["device_free"] = int(e.device_free)
    if e.tag:
        d["tag"] = tag_name(e.tag)
    return d


def _history_of(a):
    cls = _lib.struct("cca_history_entry_t")
    out, failed = [], []
    lib = _lib.lib()

    def take(ptr, _arg):
        try:
            out.append(_event_dict(cls.from_address(ptr)))
            return 0
        except BaseException as exc:                  # noqa: BLE001 - ctypes would print and drop it
            failed.append(exc)
            return 1

    dropped = ctypes.c_uint64()
    cb = _HISTORY_FN(take)                            # alive until the walk returns
    _check(lib.cca_history_walk_sized(a, ctypes.cast(cb, ctypes.c_void_p), None, ctypes.byref(dropped),
                                      ctypes.sizeof(cls)), "cca_history_walk")
    if failed:
        raise failed[0]
    return out, int(dropped.value)


def history(device=None):
    """The recorded events of a device, oldest first, as torch's trace
    entries: dicts with action ("alloc", "free_requested", "free_completed",
    "segment_alloc", "segment_free", "oom"), addr, size (the caller's bytes;
    a segment's; an oom's request), stream, time_us (since the epoch),
    frames ([]: cca records no stacks), tag (where one was in force) and,
    for "oom", device_free. Empty while not recording."""
    a = _allocator(device, create=False)
    return _history_of(a)[0] if a else []


def _allocator_settings():
    """torch's allocator_settings, from the configuration cca runs with."""
    import os
    conf = _conf_string if _conf_string is not None else os.environ.get("CCA_CONF", "")
    found = _existing_allocators()
    if not found:
        return {"PYTORCH_CUDA_ALLOC_CONF": conf}
    c = _lib.struct("cca_config_t")()
    _check(_lib.lib().cca_get_config_sized(found[0][1], ctypes.byref(c), ctypes.sizeof(c)), "cca_get_config")
    mss = int(c.max_split_size)
    return {
        "PYTORCH_CUDA_ALLOC_CONF": conf,
        "max_split_size": -1 if mss == ctypes.c_size_t(-1).value else mss,
        "garbage_collection_threshold": float(c.garbage_collection_threshold),
        "expandable_segments": bool(c.expandable_segments),
        "pinned_num_register_threads": 1,
        "release_lock_on_cudamalloc": False,
        "pinned_use_cuda_host_register": False,
        "graph_capture_record_stream_reuse": False,
        "roundup_power2_divisions": {str(1 << i): int(c.roundup_power2_divisions[i])
                                     for i in range(len(c.roundup_power2_divisions))},
    }


def _device_count():
    n = ctypes.c_int(0)
    try:
        if _lib.lib().cudaGetDeviceCount(ctypes.byref(n)) != 0:
            n.value = 0
    except AttributeError:                            # a runtime that does not show it through libcca
        pass
    return n.value


def snapshot():
    """torch.cuda.memory._snapshot(): {"segments": memory_snapshot(),
    "device_traces": one list per device of its history's events,
    "allocator_settings": ...}, the layout torch's _memory_viz reads. Each
    device's segments and events are taken at one moment
    (cca_snapshot_json_history), so every event's segment is in the
    snapshot or was returned in the trace."""
    found = _existing_allocators()
    n = max([_device_count()] + [d + 1 for d, _ in found])
    segs, traces = [], [[] for _ in range(n)]
    for d, a in found:
        data = json.loads(_text_of(_lib.lib().cca_snapshot_json_history, a))
        segs.extend(data["segments"])
        traces[d] = data["trace"]
    return {"segments": segs, "device_traces": traces, "allocator_settings": _allocator_settings()}


def dump_snapshot(path="dump_snapshot.pickle"):
    """torch.cuda.memory._dump_snapshot(path): snapshot() pickled to path,
    for ``python -m torch.cuda._memory_viz stats|trace|segments path`` and
    torch's web viewer."""
    import pickle
    data = snapshot()
    with open(path, "wb") as f:
        pickle.dump(data, f)


def check(device=None):
    """Walks every segment and block and checks every figure; CcaError with
    the first violation."""
    _check(_lib.lib().cca_check(_allocator(device)), "cca_check")


from .monitoring import Crossing, Monitor, OomHandler, ProfileResult, Watch, on_oom, profile, watch  # noqa: E402
