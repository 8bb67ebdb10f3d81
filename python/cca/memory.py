"""The memory API of ``torch.cuda.memory``, answered by cca's per-device
allocators (``memory_stats``, ``memory_allocated``,
``max_memory_allocated``, ..., ``empty_cache``, ``memory_summary``,
``memory_snapshot``, ``mem_get_info``, the per-process memory fraction),
and cca's own figures and settings beside it: ``configure``,
``config_keys``, ``expandable_stats``, ``fragmentation``, ``check``.

``device`` is an index (numpy's integers too), a ``torch.device``,
``"cuda"`` or ``"cuda:N"``, or None for the calling thread's current
device; another type is a TypeError, another device a ValueError.
"""

import collections
import ctypes
import numbers

from . import _core, _lib, _torchinfo

__all__ = [
    "configure", "config_keys", "memory_stats", "memory_stats_as_nested_dict", "memory_allocated",
    "max_memory_allocated", "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats",
    "reset_accumulated_memory_stats", "reset_max_memory_allocated", "empty_cache", "memory_summary",
    "memory_snapshot", "mem_get_info", "set_per_process_memory_fraction", "get_per_process_memory_fraction",
    "expandable_stats", "fragmentation", "check",
]

_POOLS = ("all", "small_pool", "large_pool")
_PARTS = ("current", "peak", "allocated", "freed")


def configure(conf):
    """Configures the per-device allocators (CCA_CONF's syntax: "preset:lean,...")
    before the first one is used; replaces CCA_CONF. TypeError unless conf
    is a str; ValueError for a bad string or when an allocator exists
    already."""
    if not isinstance(conf, str):
        raise TypeError("cca.configure: expected a str, got %s" % type(conf).__name__)
    if "\0" in conf:
        raise ValueError("cca.configure: the configuration contains a NUL character")
    _core.check(_lib.lib().cca_default_configure(conf.encode()), "cca.configure")
    _core.set_configuration(conf)                     # for snapshot()'s allocator_settings


def config_keys():
    """The configuration keys: {name: (value, range, default, meaning)}."""
    n = ctypes.c_size_t()
    ptr = _lib.lib().cca_config_keys(ctypes.byref(n))
    row = ctypes.c_char_p * 5
    rows = ctypes.cast(ptr, ctypes.POINTER(row))
    return {rows[i][0].decode(): tuple(x.decode() for x in rows[i][1:]) for i in range(n.value)}


_KINDS = {}


def _stats_kinds():
    """cca_stats_t's fields, each with its kind, from the library's list
    (cca_stats_fields): {name: "CCA_POOLED" | "CCA_STAT" | "CCA_COUNTER" |
    "CCA_GAUGE" | "CCA_SETTING" | "CCA_PROFILE"}, in struct order."""
    if not _KINDS:
        n = ctypes.c_size_t()
        ptr = _lib.lib().cca_stats_fields(ctypes.byref(n))
        rows = ctypes.cast(ptr, ctypes.POINTER(ctypes.c_char_p * 3))
        _KINDS.update((rows[i][0].decode(), rows[i][1].decode()) for i in range(n.value))
    return dict(_KINDS)


def _stat_dict(stat):
    return {p: int(getattr(stat, p)) for p in _PARTS}


# torch's nested memory_stats, in torch's order: what cca has of each torch
# figure (the running torch's own names decide which: cca._torchinfo)
_COUNTERS = ("num_alloc_retries", "num_ooms", "max_split_size", "num_sync_all_streams", "num_device_alloc",
             "num_device_free", "num_oom_rejections")
_NESTED = ("allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
           "reserved_bytes_by_private_pools", "active_bytes", "inactive_split_bytes", "requested_bytes",
           "oversize_allocations", "oversize_segments")


def memory_stats_as_nested_dict(device=None):
    """torch.cuda.memory_stats_as_nested_dict(), from cca, with the figures
    the torch this process imported has (all of torch 2.15's where no torch
    is imported): num_oom_rejections (torch 2.12's count of allocations its
    throw_on_cudamalloc_oom policy rejects before trying the device: cca has
    no such policy, a cap's refusal is an out-of-memory counted in
    num_ooms, so 0) and reserved_bytes_by_private_pools (per private pool:
    cca has none, so {}) where torch has them."""
    s = _core.stats(device)
    kinds = _stats_kinds()
    absent = {"num_oom_rejections": 0, "reserved_bytes_by_private_pools": {}}   # torch's, not cca's
    out = {}
    for name in _COUNTERS + _NESTED:
        if not _torchinfo.has(name):
            continue
        kind = kinds.get(name)
        if kind is None:
            out[name] = absent[name]
        elif kind == "CCA_POOLED":
            arr = getattr(s, name)
            out[name] = {pool: _stat_dict(arr[k]) for k, pool in enumerate(_POOLS)}
        elif kind == "CCA_STAT":
            out[name] = _stat_dict(getattr(s, name))
        else:
            out[name] = int(getattr(s, name))
    return out


def expandable_stats(device=None):
    """What expandable segments (expandable_segments:True) add to memory_stats():
    num_handle_create / num_handle_release (cuMemCreate / cuMemRelease),
    unmapped_bytes (handles held unmapped, part of reserved_bytes) and, as
    there, num_device_alloc / num_device_free (cuMemMap / cuMemUnmap with
    expandable segments, cudaMalloc / cudaFree without)."""
    s = _core.stats(device)
    return {"num_handle_create": int(s.num_handle_create), "num_handle_release": int(s.num_handle_release),
            "unmapped_bytes": _stat_dict(s.unmapped_bytes), "num_device_alloc": int(s.num_device_alloc),
            "num_device_free": int(s.num_device_free)}


def memory_stats(device=None):
    """torch.cuda.memory_stats(): a flat, sorted dict with the keys of the
    torch this process imported ("allocated_bytes.all.current", "num_ooms",
    ...; see memory_stats_as_nested_dict), from cca. Every figure means what torch's does:
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
    return int(_core.stats(device).allocated_bytes[0].current)


def max_memory_allocated(device=None):
    """The peak of memory_allocated() since the last peak reset."""
    return int(_core.stats(device).allocated_bytes[0].peak)


def memory_reserved(device=None):
    """Bytes held from the device now (reserved_bytes.all.current)."""
    return int(_core.stats(device).reserved_bytes[0].current)


def max_memory_reserved(device=None):
    """The peak of memory_reserved() since the last peak reset."""
    return int(_core.stats(device).reserved_bytes[0].peak)


def reset_peak_memory_stats(device=None):
    """Sets every peak to its current value."""
    _core.check(_lib.lib().cca_reset_peak_stats(_core.allocator(device)), "cca_reset_peak_stats")


reset_max_memory_allocated = reset_peak_memory_stats


def reset_accumulated_memory_stats(device=None):
    """Sets the allocated/freed totals and the num_* counters to 0 (as torch)."""
    _core.check(_lib.lib().cca_reset_accumulated_stats(_core.allocator(device)), "cca_reset_accumulated_stats")


def empty_cache():
    """Returns every fully free cached segment of every device to CUDA."""
    for _, a in _core.existing_allocators():
        _core.check(_lib.lib().cca_empty_cache(a), "cca_empty_cache")


def memory_summary(device=None, abbreviated=False):
    """A table like torch.cuda.memory_summary(), with cca's fragmentation
    figures; abbreviated=True leaves out the per-pool rows, as torch's."""
    text = _core.text_of(_lib.lib().cca_memory_summary, _core.allocator(device))
    if abbreviated:
        text = "".join(line for line in text.splitlines(True)
                       if not line.lstrip("| ").startswith(("from large pool", "from small pool")))
    return text


def memory_snapshot(mempool_id=None, include_traces=True):
    """torch.cuda.memory_snapshot(): every segment of every device cca uses,
    with its blocks (and their allocations' Python frames, while
    record_history keeps them), in torch's layout (list of dicts;
    segment_pool_id (0, 0): cca has no private pools, so another mempool_id
    has no segments). include_traces is accepted, as torch's: segments hold
    no trace. With no allocator yet, [] where the runtime has a device,
    else its error (no driver)."""
    del include_traces
    from . import snapshots
    return snapshots.segments(mempool_id)


def mem_get_info(device=None):
    """(free, total) bytes of the device, from cudaMemGetInfo."""
    f, t = ctypes.c_size_t(), ctypes.c_size_t()
    d = _core.device_index(device)
    _core.check(_lib.lib().cca_mem_get_info(d, ctypes.byref(f), ctypes.byref(t)), "cudaMemGetInfo")
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
    _core.check(_lib.lib().cca_set_memory_fraction(_core.allocator(device), float(fraction)),
                "set_per_process_memory_fraction")


def get_per_process_memory_fraction(device=None):
    """The cap in force as a fraction of the device's total memory: the
    fraction set, where that is the cap; otherwise min(cap, total) / total
    (a byte cap, memory_limit_mb, smaller than the fraction's, or above the
    device); 1.0 when uncapped."""
    cap, frac, limit = _core.memory_cap(device)
    if cap == 0:
        return 1.0
    if frac > 0 and (limit == 0 or cap < limit):
        return frac
    total = mem_get_info(device)[1]
    return min(cap, total) / total if total else 1.0


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
    _core.check(_lib.lib().cca_get_fragmentation_sized(_core.allocator(device), ctypes.byref(f), ctypes.sizeof(f)),
                "cca_get_fragmentation")
    out = {n: _plain(getattr(f, n)) for n in cls._cca_fields if n != "classes"}
    classes = {}
    for k in range(len(f.classes)):
        c = f.classes[k]
        if c.free_blocks or c.allocated_blocks or c.pending_blocks:
            classes[1 << k] = {n: int(getattr(c, n)) for n in type(c)._cca_fields}
    out["classes"] = classes
    return out


def check(device=None):
    """Walks every segment and block and checks every figure; CcaError with
    the first violation."""
    _core.check(_lib.lib().cca_check(_core.allocator(device)), "cca_check")
