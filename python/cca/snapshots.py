"""Memory history and snapshots, as torch's
``torch.cuda.memory._record_memory_history``, ``_snapshot`` and
``_dump_snapshot`` make them, with torch's signatures: ``record_history``
starts recording allocation events (with the Python frames of each),
``history`` gives a device's events as torch's trace entries, ``snapshot``
the segments with every device's trace (the layout torch 2.15 writes, which
``python -m torch.cuda._memory_viz`` and torch's web viewer read),
``dump_snapshot`` pickles it (protocol 4, which the web viewer reads).

Frames: with ``context`` other than None, each allocation (and with
``context="all"`` each free) asks libcca_hooks' frame reader
(hooks/pystacks.c) for the calling thread's Python frames - read through
the interpreter's C API, found in the running process, before cca takes
any lock; an allocating thread that released the interpreter lock (torch's
operators do) takes it back for the read, as torch's own allocator does.
``stacks="all"`` gives the same Python frames: cca reads no C++ frames.

(Not ``cca/history.py``: ``cca.history`` is the function.)
"""

import atexit
import ctypes
import json
import numbers
import sys
import warnings

from . import _core, _lib, _torchinfo
from ._core import tag_name

__all__ = ["record_history", "history", "snapshot", "dump_snapshot", "allocator_settings", "is_recording",
           "allocation_frames", "segments", "device_count"]

_HISTORY_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
_ACTIONS = {"alloc": 1, "free_requested": 2, "free_completed": 3, "segment_alloc": 4, "segment_free": 5, "oom": 6,
            "snapshot": 7}
_SKIPPABLE = set(_ACTIONS)
_ALLOC, _FREE = 1 << _ACTIONS["alloc"], 1 << _ACTIONS["free_requested"]

# What recording was asked for: enabled ("state", "all" or None) and
# context (None, "state", "alloc", "all"); traces/frames shown follow them.
_state = {"enabled": None, "context": None}
_frames = []                                          # [the hooks library] once frames are read
_warned = set()


def _warn_once(key, text):
    if key not in _warned:
        _warned.add(key)
        warnings.warn("cca: " + text, RuntimeWarning, stacklevel=4)


def _pystacks():
    """libcca_hooks with its frame reader started, or None (warned once)."""
    if not _frames:
        try:
            hooks = ctypes.CDLL(_lib.hooks_path())
            hooks.cca_pystacks_start.argtypes = [ctypes.c_int]
            hooks.cca_pystacks_json.restype = ctypes.c_size_t
            hooks.cca_pystacks_json.argtypes = [ctypes.c_uint64, ctypes.c_char_p, ctypes.c_size_t]
            if hooks.cca_pystacks_start(0) != 0:
                raise OSError("this process's Python interpreter was not found")
            _frames.append(hooks)
            atexit.register(_stop_frames)             # no frames read while the interpreter finalizes
        except (OSError, AttributeError) as exc:
            _warn_once("frames", "the history records no Python frames (frames: []): %s" % exc)
            return None
    return _frames[0]


def _stop_frames():
    _lib.lib().cca_history_set_context(None, 0)
    if _frames:
        _frames[0].cca_pystacks_start(0)


def _mask(skip_actions):
    if skip_actions is None:
        return 0
    if isinstance(skip_actions, str) or not all(isinstance(a, str) for a in skip_actions):
        raise TypeError("cca.record_history: skip_actions is a list of action names, not %r" % (skip_actions,))
    bad = [a for a in skip_actions if a not in _SKIPPABLE]
    if bad:
        raise ValueError("cca.record_history: unknown action %r in skip_actions (the actions: %s)"
                         % (bad[0], ", ".join(sorted(_SKIPPABLE))))
    return sum(1 << _ACTIONS[a] for a in set(skip_actions) if a in _ACTIONS)


def record_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize, device=None,
                   clear_history=False, compile_context=False, global_record_annotations=False, skip_actions=None,
                   record_pinned_host_memory=False, record_cuda=True):
    """torch.cuda.memory._record_memory_history, answered by cca.

    enabled: "all" (the events, and what every live block's allocation
    was), "state" (only the latter: snapshots have no trace), None (stop;
    drops what was recorded); True and False mean "all" and None. context:
    whose frames are kept - None, "state" (live blocks'), "alloc" (and
    allocation events'), "all" (and frees'). stacks: "python" or "all" (both
    Python frames: cca reads no C++ frames). max_entries: the newest events
    kept, per device. device None: every device's allocator, those made
    later too (torch's); a device: that one's only. clear_history drops the
    events so far. skip_actions: actions not recorded ("alloc",
    "free_requested", "free_completed", "segment_alloc", "segment_free",
    "oom", "snapshot": the mark each snapshot leaves, as torch's). compile_context,
    global_record_annotations and record_pinned_host_memory are torch's own
    (torch.compile's context, record_function annotations, pinned host
    memory): not recorded under cca, which warns once. record_cuda False
    records nothing of the device. While it records, every malloc and free
    takes cca's all-locked path (slower, never wrong); when it does not,
    nothing of this runs."""
    if enabled is True:
        enabled = "all"
    elif enabled is False:
        enabled = None
    if enabled not in (None, "state", "all"):
        raise ValueError("cca.record_history: enabled is \"all\", \"state\" or None (True, False), not %r" % (enabled,))
    if context not in (None, "state", "alloc", "all"):
        raise ValueError("cca.record_history: context is None, \"state\", \"alloc\" or \"all\", not %r" % (context,))
    if stacks not in ("python", "all"):
        raise ValueError("cca.record_history: stacks is \"python\" or \"all\", not %r" % (stacks,))
    if isinstance(max_entries, bool) or not isinstance(max_entries, numbers.Integral):
        raise TypeError("cca.record_history: max_entries is an int, not %s" % type(max_entries).__name__)
    if enabled and not 0 < max_entries:
        raise ValueError("cca.record_history: max_entries must be positive, got %d" % max_entries)
    skip = _mask(skip_actions)
    for flag, what in ((compile_context, "compile_context (torch.compile's context)"),
                       (global_record_annotations, "global_record_annotations (record_function annotations)"),
                       (record_pinned_host_memory, "record_pinned_host_memory (torch's pinned host memory)")):
        if flag and enabled:
            _warn_once(what, "the history does not record %s: torch records it, not cca" % what)
    if not record_cuda:
        enabled = None
    lib = _lib.lib()
    a = None if device is None else _core.allocator(device)

    def bound(n):
        if a is None:
            _core.check(lib.cca_default_record_history(n), "cca.record_history")
        else:
            _core.check(lib.cca_record_history(a, n), "cca.record_history")

    if enabled is None:                               # live blocks keep their frames, as torch's do
        bound(0)
        if a is None:                                 # one device's stop leaves the others recording
            lib.cca_history_set_context(None, 0)
            if _frames:
                _frames[0].cca_pystacks_start(0)
            _state.update(enabled=None, context=None)
        return
    if clear_history:
        bound(0)
    bound(int(min(max_entries, 2 ** 63)) if enabled == "all" else 1)   # "state": no events kept
    lib.cca_history_set_skip(skip)
    actions = 0 if context is None else _ALLOC | (_FREE if context == "all" else 0)
    hooks = _pystacks() if actions else None
    if hooks is not None:
        hooks.cca_pystacks_start(actions)
        lib.cca_history_set_context(ctypes.cast(hooks.cca_pystacks_capture, ctypes.c_void_p), actions)
    else:
        lib.cca_history_set_context(None, 0)
    _state.update(enabled=enabled, context=context)


def is_recording():
    """Whether record_history is on (torch's _cuda_isHistoryEnabled)."""
    return _state["enabled"] is not None


class _Frames:
    """Context ids to torch's frame lists, for one snapshot: each id is read
    once, and events of one stack share one list."""

    def __init__(self):
        self.hooks = _frames[0] if _frames else None
        self.seen = {}
        self.buf = ctypes.create_string_buffer(1 << 16)

    def __call__(self, ctx):
        if not ctx or self.hooks is None:
            return []
        if ctx not in self.seen:
            n = self.hooks.cca_pystacks_json(ctx, self.buf, len(self.buf))
            if n >= len(self.buf):
                self.buf = ctypes.create_string_buffer(n + 1)
                n = self.hooks.cca_pystacks_json(ctx, self.buf, len(self.buf))
            self.seen[ctx] = json.loads(self.buf.raw[:n].decode("utf-8", "replace"))
        return self.seen[ctx]


def _entry(d, frames, with_frames):
    """A trace entry of cca's JSON (or of a cca_history_entry_t) as torch
    2.15 writes it."""
    ctx = d.pop("context", 0)
    e = {"action": d["action"]}
    if d["action"] != "oom":
        e["addr"] = d["addr"]
    e.update(size=d["size"], stream=d["stream"], time_us=d["time_us"], compile_context="N/A", user_metadata="",
             pool_id=(0, 0))
    if d["action"] != "snapshot":                     # torch's snapshot events have no frames
        e["frames"] = frames(ctx) if with_frames else []
    if d["action"] == "oom":
        e["device_free"] = d["device_free"]
    if "tag" in d:
        e["tag"] = d["tag"]
    return e


def _segment(s, frames, with_frames):
    s["segment_pool_id"] = tuple(s["segment_pool_id"])
    for b in s["blocks"]:
        ctx = b.pop("context", 0)
        b["frames"] = frames(ctx) if with_frames else []
    return s


def _event_dict(e):
    """A cca_history_entry_t as cca's JSON has it."""
    action = _lib.lib().cca_history_action_string(int(e.action)).decode()
    d = {"action": action, "addr": int(e.addr), "size": int(e.size), "stream": int(e.stream or 0),
         "time_us": int(e.time_us), "device_free": int(e.device_free), "context": int(getattr(e, "context", 0))}
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


def _shows_trace():
    return _state["enabled"] != "state"


def _trace_frames():
    return _state["context"] in ("alloc", "all")


def history(device=None):
    """The recorded events of a device, oldest first, as torch's trace
    entries: dicts with action ("alloc", "free_requested", "free_completed",
    "segment_alloc", "segment_free", "oom", "snapshot": each snapshot taken
    while recording, as torch's), addr (not for "oom"), size (the caller's
    bytes; a segment's; an oom's request; a snapshot's allocated bytes),
    stream, time_us (since the epoch), compile_context ("N/A"),
    user_metadata (""), pool_id ((0, 0)), frames (the Python frames,
    innermost first, where context asked for them; none for "snapshot"),
    tag (where one was in force) and, for "oom", device_free. Empty while not recording, and with enabled="state"."""
    a = _core.allocator(device, create=False)
    if not a or not _shows_trace():
        return []
    frames, with_frames = _Frames(), _trace_frames()
    return [_entry(d, frames, with_frames) for d in _history_of(a)[0]]


def allocation_frames(ptr):
    """torch.cuda.memory._allocation_traceback: the Python frames of the
    allocation at ptr (its first byte) while it is live, recorded with a
    context; None otherwise."""
    if not _frames:
        return None
    for _, a in _core.existing_allocators():
        for s in json.loads(_core.text_of(_lib.lib().cca_snapshot_json, a))["segments"]:
            for b in s["blocks"]:
                if b["address"] == ptr and b["state"] != "inactive" and b.get("context"):
                    return _Frames()(b["context"])
    return None


def allocator_settings():
    """torch's allocator_settings (torch 2.15's keys), from the
    configuration cca runs with."""
    conf = _core.configuration()
    out = {"PYTORCH_CUDA_ALLOC_CONF": conf, "max_split_size": -1, "garbage_collection_threshold": 0.0,
           "expandable_segments": False, "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
           "pinned_use_cuda_host_register": False, "graph_capture_record_stream_reuse": False,
           "max_round_threshold": -1, "max_cached_size": -1,
           "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}}
    found = _core.existing_allocators()
    if found:
        c = _lib.struct("cca_config_t")()
        _core.check(_lib.lib().cca_get_config_sized(found[0][1], ctypes.byref(c), ctypes.sizeof(c)),
                    "cca_get_config")
        mss = int(c.max_split_size)
        out.update(max_split_size=-1 if mss == ctypes.c_size_t(-1).value else mss,
                   garbage_collection_threshold=float(c.garbage_collection_threshold),
                   expandable_segments=bool(c.expandable_segments),
                   roundup_power2_divisions={str(1 << i): int(c.roundup_power2_divisions[i])
                                             for i in range(len(c.roundup_power2_divisions))})
    return out


def device_count():
    n = ctypes.c_int(0)
    try:
        if _lib.lib().cudaGetDeviceCount(ctypes.byref(n)) != 0:
            n.value = 0
    except AttributeError:                            # a runtime that does not show it through libcca
        pass
    return n.value


def segments(mempool_id=None, mark=True, as_torch=False):
    """Every segment of every device cca uses, with its blocks, as torch's
    memory_snapshot() gives them (segment_pool_id (0, 0): cca has no private
    pools, so another mempool_id has none). With no allocator yet, []
    where the runtime has a device, else its error (no driver); as_torch:
    [] without a GPU too (torch's answer). mark: leave a "snapshot" event in
    the history, as torch's memory_snapshot() does (False for cca's own
    look at its segments)."""
    found = _core.existing_allocators()
    if not found and not as_torch:
        _core.device_index(None)                      # no driver or GPU: says so, as every call of cca's does
    if mempool_id is not None and tuple(mempool_id) != (0, 0):
        return []
    frames, out = _Frames(), []
    for _, a in found:
        out.extend(_segment(s, frames, True)
                   for s in json.loads(_core.text_of(_lib.lib().cca_snapshot_json, a))["segments"])
        if mark:
            _core.check(_lib.lib().cca_history_mark_snapshot(a), "cca_history_mark_snapshot")   # as torch's, after
    return out


def snapshot(device=None, augment_with_fx_traces=False, include_traces=True, as_torch=False):
    """torch.cuda.memory._snapshot(): {"segments", "device_traces" (one list
    per device of its history's events), "allocator_settings",
    "external_annotations", "host_segments", "host_traces"} as torch 2.15
    writes them (torch's pinned host memory is torch's, not cca's: its
    lists are empty). device: as torch, every device's (the argument is
    accepted, as torch's is). With no allocator yet: no segments, and no
    device's trace where the torch imported has not started CUDA (torch's
    answer then); without a GPU, the runtime's error (as every call of
    cca's), or with as_torch the empty snapshot torch gives. augment_with_fx_traces: torch's own
    augmentation of the frames, where this torch has it. Each device's
    segments and events are taken at one moment (cca_snapshot_json_history),
    so every event's segment is in the snapshot or was returned in the
    trace."""
    del device
    found = _core.existing_allocators()
    if not found and not as_torch:
        _core.device_index(None)                      # no driver or GPU: says so
    torch = _torchinfo.torch_module()
    if not found and torch is not None and not torch.cuda.is_initialized():
        n = 0                                         # torch's before CUDA starts, and without a GPU
    else:
        n = max([device_count()] + [d + 1 for d, _ in found])
    segs, traces = [], [[] for _ in range(n)]
    frames = _Frames()
    ev_frames = _trace_frames()
    for d, a in found:
        data = json.loads(_core.text_of(_lib.lib().cca_snapshot_json_history, a))
        segs.extend(_segment(s, frames, True) for s in data["segments"])   # a block has a context only if recorded
        if include_traces and _shows_trace():
            traces[d] = [_entry(e, frames, ev_frames) for e in data["trace"]]
        _core.check(_lib.lib().cca_history_mark_snapshot(a), "cca_history_mark_snapshot")   # as torch's, after
    out = {"segments": segs, "device_traces": traces, "allocator_settings": allocator_settings(),
           "external_annotations": [], "host_segments": [], "host_traces": []}
    if augment_with_fx_traces:
        torch = _torchinfo.torch_module()
        aug = getattr(getattr(getattr(torch, "cuda", None), "memory", None), "_augment_memory_snapshot_stack_traces",
                      None)
        if aug is None:
            raise NotImplementedError("cca.snapshot: augment_with_fx_traces needs a torch that has it (2.9 and later)")
        out = aug(out)
    return out


def dump_snapshot(filename="dump_snapshot.pickle", augment_with_fx_traces=False):
    """torch.cuda.memory._dump_snapshot(filename): snapshot() pickled to
    filename with protocol 4 (torch's web viewer reads no later one), for
    ``python -m torch.cuda._memory_viz stats|trace|segments|memory|trace_plot|segment_plot``
    and pytorch.org/memory_viz."""
    import pickle
    data = snapshot(augment_with_fx_traces=augment_with_fx_traces)
    with open(filename, "wb") as f:
        pickle.dump(data, f, protocol=4)
