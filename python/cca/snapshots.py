"""Memory snapshots, as torch's ``torch.cuda.memory._record_memory_history``,
``_snapshot`` and ``_dump_snapshot`` make them: ``record_history`` starts
recording allocation events, ``history`` gives a device's events as
torch's trace entries, ``snapshot`` the segments with every device's trace
(the layout torch's ``_memory_viz`` and web viewer read), ``dump_snapshot``
pickles it.

(Not ``cca/history.py``: ``cca.history`` is the function.)
"""

import ctypes
import json
import numbers

from . import _core, _lib
from ._core import tag_name

__all__ = ["HISTORY_DEFAULT_ENTRIES", "record_history", "history", "snapshot", "dump_snapshot",
           "allocator_settings"]

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
        _core.check(_lib.lib().cca_default_record_history(n), "cca.record_history")
    else:
        _core.check(_lib.lib().cca_record_history(_core.allocator(device), n), "cca.record_history")


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
    _core.check(lib.cca_history_walk_sized(a, ctypes.cast(cb, ctypes.c_void_p), None, ctypes.byref(dropped),
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
    a = _core.allocator(device, create=False)
    return _history_of(a)[0] if a else []


def allocator_settings():
    """torch's allocator_settings, from the configuration cca runs with."""
    conf = _core.configuration()
    found = _core.existing_allocators()
    if not found:
        return {"PYTORCH_CUDA_ALLOC_CONF": conf}
    c = _lib.struct("cca_config_t")()
    _core.check(_lib.lib().cca_get_config_sized(found[0][1], ctypes.byref(c), ctypes.sizeof(c)), "cca_get_config")
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
    found = _core.existing_allocators()
    if not found:
        _core.device_index(None)                      # no driver or GPU: says so, as every call does
    n = max([_device_count()] + [d + 1 for d, _ in found])
    segs, traces = [], [[] for _ in range(n)]
    for d, a in found:
        data = json.loads(_core.text_of(_lib.lib().cca_snapshot_json_history, a))
        segs.extend(data["segments"])
        traces[d] = data["trace"]
    return {"segments": segs, "device_traces": traces, "allocator_settings": allocator_settings()}


def dump_snapshot(path="dump_snapshot.pickle"):
    """torch.cuda.memory._dump_snapshot(path): snapshot() pickled to path,
    for ``python -m torch.cuda._memory_viz stats|trace|segments path`` and
    torch's web viewer."""
    import pickle
    data = snapshot()
    with open(path, "wb") as f:
        pickle.dump(data, f)
