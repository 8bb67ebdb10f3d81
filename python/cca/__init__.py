"""cca: a CUDA caching allocator with the accounting built in.

Pure Python over ctypes. Its functions carry the names and meaning
of ``torch.cuda.memory``'s (``memory_stats``, ``memory_allocated``,
``max_memory_allocated``, ...), answered by cca's per-device allocators -
the same ones the PyTorch hook (``cca.allocators.torch.install()``) and any
other user of ``cca_default`` allocate from - and add what only cca knows:
``last_oom()``, ``fragmentation()``, ``configure()``.

``device`` is an index (numpy's integers too), a ``torch.device``,
``"cuda"`` or ``"cuda:N"``, or None for the calling thread's current
device; another type is a TypeError, another device a ValueError.

The package, by topic (this module only re-exports their public names):
``cca.memory`` (torch's memory API, configure, fragmentation, check),
``cca.oom`` (OomReport, last_oom), ``cca.tags``, ``cca.snapshots``
(record_history, history, snapshot, dump_snapshot), ``cca.replays``
(record_trace, replay, to_csv, balance, plot_timeline, plot_segments), ``cca.watches``
(watch, on_oom), ``cca.profiling`` (profile), ``cca.monitoring``
(Monitor); ``cca._core`` holds what they share (devices, the allocators,
status checks, CcaError and OutOfMemoryError), ``cca._lib`` the ctypes
binding; ``cca.allocators`` installs cca into torch, CuPy and Numba.
"""

from ._core import CcaError, OutOfMemoryError
from ._lib import RuntimeNotFoundError
from ._version import __version__  # noqa: F401 - re-exported outside __all__
from .memory import (check, config_keys, configure, empty_cache, expandable_stats, fragmentation,
                     get_per_process_memory_fraction, max_memory_allocated, max_memory_reserved, mem_get_info,
                     memory_allocated, memory_reserved, memory_snapshot, memory_stats, memory_stats_as_nested_dict,
                     memory_summary, reset_accumulated_memory_stats, reset_max_memory_allocated,
                     reset_peak_memory_stats, set_per_process_memory_fraction)
from .monitoring import Monitor
from .oom import OomReport, last_oom
from .profiling import ProfileResult, profile
from .replays import ReplayError, balance, plot_segments, plot_timeline, record_trace, replay, to_csv
from .snapshots import dump_snapshot, history, record_history, snapshot
from .tags import tag, tag_name
from .watches import Crossing, OomHandler, Watch, on_oom, watch

__all__ = [
    "CcaError", "OutOfMemoryError", "RuntimeNotFoundError", "OomReport", "configure", "memory_stats", "memory_stats_as_nested_dict",
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "reset_peak_memory_stats", "reset_accumulated_memory_stats", "reset_max_memory_allocated",
    "empty_cache", "memory_summary", "memory_snapshot", "mem_get_info", "set_per_process_memory_fraction",
    "get_per_process_memory_fraction", "fragmentation", "last_oom", "check", "config_keys",
    "watch", "Watch", "Crossing", "on_oom", "OomHandler", "profile", "ProfileResult", "Monitor", "tag", "tag_name",
    "record_history", "history", "snapshot", "dump_snapshot", "expandable_stats",
    "record_trace", "replay", "to_csv", "balance", "plot_timeline", "plot_segments", "ReplayError",
]
