"""Every call of torch's memory API that cca covers, made by one program
under torch's own allocator or under cca, and each answer written down
(test_torch_api.py compares the two runs):

    python api_calls.py MODE PHASE OUT.json [DUMPDIR]

MODE: "torch" or "cca" (cca.allocators.torch.install()). PHASE:
- "before": each call is the first thing a process does after importing
  torch (a child forked per call, before CUDA starts);
- "nogpu": the same on a machine without a GPU (the simulated device with
  no driver);
- "after": one process records the history (stacks="python"), makes
  tensors on two streams and frees some, then makes each call in turn; its
  snapshots are dumped to DUMPDIR (mid.pickle, end.pickle) for
  torch.cuda._memory_viz.

The calls: every callable of torch.cuda.memory.__all__ (CALLS, LISTED),
torch.accelerator's memory functions, and the history's
(_record_memory_history, _snapshot, _dump_snapshot). Each answer is
written as {"ok", "type", "value"} or {"ok": false, "error": its type},
with whether CUDA is initialised after it and how many allocators cca
made."""
import json
import os
import sys

MiB = 1 << 20

# torch.cuda.memory.__all__'s callables cca does not answer, and why; the
# test fails on a name of the running torch that is in neither table.
LISTED = {
    "CUDAPluggableAllocator": "the class cca is installed through (install() makes one): not a query",
    "change_current_allocator": "install() calls it; torch refuses a second allocator once CUDA started",
    "get_allocator_backend": "'pluggable' under cca by design: torch's own answer for any plugged allocator",
    "MemPool": "cca has no private pools (CUDA graphs): torch raises for a plugged allocator",
    "use_mem_pool": "cca has no private pools (CUDA graphs): torch raises for a plugged allocator",
    "caching_allocator_enable": "cca always caches: False does nothing under cca (it warns)",
    "caching_allocator_disabled": "cca always caches: the context manager changes nothing under cca",
}


def calls(torch, dumpdir):
    """(name, thunk) for every call compared, in the order the "after"
    phase makes them; mutating calls (resets, empty_cache, fractions) come
    after the queries they would change."""
    m, acc = torch.cuda.memory, torch.accelerator
    ptr = []
    out = []

    def add(name, fn):
        out.append((name, fn))

    for name in ("memory_stats", "memory_stats_as_nested_dict", "memory_allocated", "max_memory_allocated",
                 "memory_reserved", "max_memory_reserved", "memory_cached", "max_memory_cached"):
        add("cuda." + name, (lambda n: lambda: getattr(m, n)())(name))
        add("cuda.%s(0)" % name, (lambda n: lambda: getattr(m, n)(0))(name))
        add("torch.cuda." + name, (lambda n: lambda: getattr(torch.cuda, n)())(name))
    add("cuda.memory_summary", lambda: m.memory_summary())
    add("cuda.memory_summary(abbreviated)", lambda: m.memory_summary(abbreviated=True))
    add("cuda.memory_snapshot", lambda: m.memory_snapshot())
    add("cuda.memory_snapshot(no traces)", lambda: m.memory_snapshot(include_traces=False))
    add("cuda.memory_snapshot((0, 0))", lambda: m.memory_snapshot(mempool_id=(0, 0)))
    add("cuda.host_memory_stats", lambda: m.host_memory_stats())
    add("cuda.host_memory_stats_as_nested_dict", lambda: m.host_memory_stats_as_nested_dict())
    add("cuda.list_gpu_processes", lambda: m.list_gpu_processes())
    add("cuda.mem_get_info", lambda: m.mem_get_info())
    add("cuda.get_per_process_memory_fraction", lambda: m.get_per_process_memory_fraction())
    for name in ("memory_stats", "memory_allocated", "max_memory_allocated", "memory_reserved",
                 "max_memory_reserved", "get_memory_info"):
        add("accelerator." + name, (lambda n: lambda: getattr(acc, n)())(name))
        add("accelerator.%s(0)" % name, (lambda n: lambda: getattr(acc, n)(0))(name))
    add("cuda._snapshot", lambda: m._snapshot())
    add("cuda._dump_snapshot", lambda: m._dump_snapshot(os.path.join(dumpdir, "mid.pickle")) if dumpdir else
        m._dump_snapshot(os.devnull))
    if hasattr(m, "_allocation_traceback"):
        add("cuda._allocation_traceback", lambda: m._allocation_traceback(ptr[0]) if ptr else m._allocation_traceback(0))
    add("cuda.caching_allocator_alloc", lambda: ptr.append(m.caching_allocator_alloc(3000)) or ptr[-1])
    add("cuda.memory_stats after caching_allocator_alloc", lambda: m.memory_stats())
    add("cuda.caching_allocator_delete", lambda: m.caching_allocator_delete(ptr.pop()) if ptr else
        m.caching_allocator_delete(0))
    add("cuda.reset_peak_memory_stats", lambda: m.reset_peak_memory_stats())
    add("cuda.memory_stats after reset_peak_memory_stats", lambda: m.memory_stats())
    add("cuda.reset_max_memory_allocated", lambda: m.reset_max_memory_allocated())
    add("cuda.reset_max_memory_cached", lambda: m.reset_max_memory_cached())
    add("cuda.reset_accumulated_memory_stats", lambda: m.reset_accumulated_memory_stats())
    add("cuda.memory_stats after reset_accumulated_memory_stats", lambda: m.memory_stats())
    add("cuda.reset_peak_host_memory_stats", lambda: m.reset_peak_host_memory_stats())
    add("cuda.reset_accumulated_host_memory_stats", lambda: m.reset_accumulated_host_memory_stats())
    add("accelerator.reset_peak_memory_stats", lambda: acc.reset_peak_memory_stats())
    add("accelerator.reset_accumulated_memory_stats", lambda: acc.reset_accumulated_memory_stats())
    add("accelerator.memory_stats after its resets", lambda: acc.memory_stats())
    add("cuda.set_per_process_memory_fraction", lambda: m.set_per_process_memory_fraction(0.5))
    add("cuda.get_per_process_memory_fraction after set", lambda: m.get_per_process_memory_fraction())
    add("cuda.empty_cache", lambda: m.empty_cache())
    add("cuda.memory_stats after empty_cache", lambda: m.memory_stats())
    add("accelerator.empty_cache", lambda: acc.empty_cache())
    add("cuda._record_memory_history(None)", lambda: m._record_memory_history(None))
    add("cuda._snapshot after recording stopped", lambda: m._snapshot())
    return out


# the names of torch.cuda.memory.__all__ each call above stands for
COVERS = {
    "memory_stats", "memory_stats_as_nested_dict", "memory_allocated", "max_memory_allocated", "memory_reserved",
    "max_memory_reserved", "memory_cached", "max_memory_cached", "memory_summary", "memory_snapshot",
    "host_memory_stats", "host_memory_stats_as_nested_dict", "list_gpu_processes", "mem_get_info",
    "get_per_process_memory_fraction", "set_per_process_memory_fraction", "caching_allocator_alloc",
    "caching_allocator_delete", "reset_peak_memory_stats", "reset_max_memory_allocated", "reset_max_memory_cached",
    "reset_accumulated_memory_stats", "reset_peak_host_memory_stats", "reset_accumulated_host_memory_stats",
    "empty_cache",
}


def plain(v):
    """An answer as JSON: tuples marked, dict keys as strings."""
    if isinstance(v, tuple):
        return {"__tuple__": [plain(x) for x in v]}
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    return {"__repr__": type(v).__name__}


def answer(torch, fn, cca_core):
    try:
        v = fn()
        out = {"ok": True, "type": type(v).__name__, "value": plain(v)}
    except Exception as exc:                          # noqa: BLE001 - the answer is the exception's type
        out = {"ok": False, "error": type(exc).__name__, "message": str(exc)[:300],
               "classes": [c.__name__ for c in type(exc).__mro__]}
    out["cuda_initialized"] = bool(torch.cuda.is_initialized())
    out["allocators"] = len(cca_core.existing_allocators()) if cca_core else 0
    return out


def main(argv):
    mode, phase, path = argv[0], argv[1], argv[2]
    dumpdir = argv[3] if len(argv) > 3 else None
    if phase == "nogpu":
        import ctypes
        ctypes.CDLL(os.environ["CCA_SIM_LIBRARY"]).cca_sim_set_no_driver(1)
    import warnings
    warnings.simplefilter("ignore")
    import torch
    cca_core = None
    if mode == "cca":
        import cca._core
        import cca.allocators.torch
        cca.allocators.torch.install()
        cca_core = cca._core
    result = {"torch": torch.__version__, "all": sorted(n for n in torch.cuda.memory.__all__
                                                        if callable(getattr(torch.cuda.memory, n))),
              "reexports": sorted(n for n in torch.cuda.memory.__all__
                                  if getattr(torch.cuda, n, None) is getattr(torch.cuda.memory, n)),
              "answers": {}}
    if phase in ("before", "nogpu"):
        for name, fn in calls(torch, None):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:                              # the call is the first thing this process does
                os.close(r)
                data = json.dumps(answer(torch, fn, cca_core)).encode()
                os.write(w, data)
                os._exit(0)
            os.close(w)
            chunks = []
            while True:
                b = os.read(r, 1 << 16)
                if not b:
                    break
                chunks.append(b)
            os.close(r)
            os.waitpid(pid, 0)
            result["answers"][name] = json.loads(b"".join(chunks) or b'{"ok": false, "error": "crashed"}')
    else:
        m = torch.cuda.memory
        result["answers"]["cuda._record_memory_history"] = answer(
            torch, lambda: m._record_memory_history(max_entries=100000, stacks="python"), cca_core)
        s1 = torch.cuda.Stream()
        keep = [torch.ones(5 * MiB // 4, device="cuda")]
        with torch.cuda.stream(s1):
            keep += [torch.empty(n, dtype=torch.uint8, device="cuda") for n in (700, 3 * MiB, 9000, 12 * MiB + 5)]
        gone = [torch.empty(n, dtype=torch.uint8, device="cuda") for n in (100, 2 * MiB, 600000)]
        del gone
        keep.append(torch.zeros(513, device="cuda"))
        torch.cuda.synchronize()
        for name, fn in calls(torch, dumpdir):
            result["answers"][name] = answer(torch, fn, cca_core)
        if dumpdir:
            m._record_memory_history(max_entries=100000, stacks="python")
            keep.append(torch.empty(77 * 1024, device="cuda"))
            m._dump_snapshot(os.path.join(dumpdir, "end.pickle"))
        del keep
    with open(path, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1:])
