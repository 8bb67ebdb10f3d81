"""The parts of scripts/gpu-check after the C suites, one per process:
    python3 scripts/gpu_check.py PART OUTDIR MODE        (MODE: cuda or sim)
Each writes OUTDIR/PART.json: {"part", "status", "seconds", ...figures}.
Parts that need torch (and a GPU) record why they were skipped where torch
is not importable or MODE is sim.

PART_expandable runs PART with CCA_CONF=expandable_segments:True (set here,
so every process it starts has it too); where PART compares with torch's
native allocator, that side runs with PYTORCH_CUDA_ALLOC_CONF=
expandable_segments:True, like with like. Writes OUTDIR/PART_expandable.json.

  maps           one CUDA runtime in the process (/proc/self/maps) with torch and cca
  keys           cca's memory_stats() keys and snapshot fields against native torch's
  oom            an OOM under a cap caught as torch.OutOfMemoryError (RuntimeError where install() could not build
                 torch's exception: it says so), torch's first line then cca's report, with a verdict
  record_stream  a tensor used on a side stream is not reused before that stream's work is done
  latency        alloc+free through the hook against torch's native allocator
  train          a small transformer, varying sequence lengths, one fresh process per variant: native, cca,
                 preset:lean, cca with CCA_CONF=expandable_segments:True and native with
                 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; identical losses, and per variant the peak
                 reserved bytes, the median step time and the device calls
  bench          cca-bench (CCA_BENCH) --quick --reps 1: replay (the traces, where the machine has them),
                 multistream and mixed, cca's defaults beside --cca x=expandable_segments:True; no row may fail
                 or fail cca's check (runs on the simulated device too)
  cupy           CuPy on a non-default stream and torch sharing one cca cache (needs cupy)
  cupy_runtime   CuPy's own (static) CUDA runtime beside libcca's: whether CuPy links it statically, and that
                 the driver's pointers and streams are shared - CuPy kernels on CuPy's stream read and write
                 memory cca allocated, on segments of that stream (needs cupy; no torch)
  numba          Numba through NUMBA_CUDA_MEMORY_MANAGER=cca.allocators.numba, with a real kernel writing the
                 memory cca gave (needs numba)
  tags           loss.backward() under cca.tag: the gradients autograd's own thread allocates carry the tag
  frameworks     the frameworks tier's programs (python/tests/frameworks/programs.py) under torch's allocator
                 and cca, default and expandable: memory_stats and the history identical, expandable peak
                 reserved at most torch's, the losses equal, step time cca / torch; torch's history is kept
                 (OUTDIR/frameworks/) to compare with the tier's on the simulated device
  viewer         torch's _memory_viz (segsum and trace: what its stats and trace commands print; segments
                 with format_flamegraph=lambda lines: lines) on cca.dump_snapshot's pickle and on native
                 torch's _dump_snapshot, for the same work: the viewer runs, the allocations are the same
"""
import json
import os
import statistics
import subprocess
import sys
import time

NAME, OUT, MODE = sys.argv[1], sys.argv[2], sys.argv[3]
EXPANDABLE = NAME.endswith("_expandable")
PART = NAME[:-len("_expandable")] if EXPANDABLE else NAME
T0 = time.time()
MiB = 1 << 20
X_CONF = "expandable_segments:True"                  # cca's key and torch's have the same spelling
if EXPANDABLE:
    os.environ["CCA_CONF"] = X_CONF
NATIVE_ENV = {"PYTORCH_CUDA_ALLOC_CONF": X_CONF} if EXPANDABLE else {}   # for native torch's processes


def emit(status, **figures):
    if EXPANDABLE:
        figures.update(cca_conf=X_CONF)
    figures.update(part=NAME, status=status, seconds=round(time.time() - T0, 2))
    with open(os.path.join(OUT, NAME + ".json"), "w") as f:
        json.dump(figures, f, indent=1)
    print(json.dumps(figures))
    sys.exit(0)


def need_gpu(what):
    if MODE != "cuda":
        emit("skipped", reason="simulated device: %s needs a GPU" % what)


def need_torch():
    need_gpu("torch")
    try:
        import torch
    except Exception as e:                            # noqa: BLE001
        emit("skipped", reason="torch not importable: %s" % e)
    if not torch.cuda.is_available():
        emit("skipped", reason="torch sees no CUDA device")
    return torch


def run_child(code, env=None):
    """Runs code in a fresh interpreter; returns its last stdout line as JSON."""
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def with_conf(conf):
    """conf after CCA_CONF's expandable segments under PART_expandable (cca.configure replaces CCA_CONF)."""
    return X_CONF + "," + conf if EXPANDABLE else conf


def expandable_seen():
    """Whether cca's snapshot has an expandable segment; under PART_expandable a part fails without one."""
    import cca
    return any(seg.get("is_expandable") for seg in cca.memory_snapshot())


def runtimes_mapped():
    paths = set()
    with open("/proc/self/maps") as f:
        for line in f:
            p = line.split()[-1]
            if "libcudart" in p or "libcca_sim" in p:
                paths.add(os.path.realpath(p))
    return sorted(paths)


if PART == "maps":
    if MODE == "sim":
        import cca
        cca.memory_allocated(0)
        maps = runtimes_mapped()
        emit("ok" if len(maps) == 1 else "failed", runtimes=maps)
    torch = need_torch()
    import cca.allocators.torch as ct
    ct.install()
    x = torch.ones(1024, device="cuda")
    maps = runtimes_mapped()
    seen = expandable_seen()
    emit("ok" if len(maps) == 1 and (seen or not EXPANDABLE) else "failed", runtimes=maps,
         allocated=int(torch.cuda.memory_allocated()), expandable_segments=seen)

if PART == "keys":
    need_torch()
    probe = ("import json, torch\n{setup}\nx = torch.ones(1 << 20, device='cuda'); y = torch.ones(100, device='cuda')\n"
             "s = torch.cuda.memory_snapshot()\n"
             "print(json.dumps({{'keys': sorted(torch.cuda.memory_stats()), 'seg': sorted(s[0]),"
             " 'block': sorted(s[0]['blocks'][0]), 'alloc': torch.cuda.memory_allocated()}}))")
    native = run_child(probe.format(setup=""), env=NATIVE_ENV)
    mine = run_child(probe.format(setup="import cca.allocators.torch as t; t.install()"))
    same = native["keys"] == mine["keys"]
    seg_missing = sorted(set(native["seg"]) - set(mine["seg"]))
    block_missing = sorted(set(native["block"]) - set(mine["block"]))
    emit("ok" if same else "failed", stats_keys_equal=same, only_native=sorted(set(native["keys"]) - set(mine["keys"])),
         only_cca=sorted(set(mine["keys"]) - set(native["keys"])), segment_fields_missing=seg_missing,
         block_fields_missing=block_missing, allocated_native=native["alloc"], allocated_cca=mine["alloc"])

if PART == "oom":
    torch = need_torch()
    import re
    import warnings
    import cca
    import cca.allocators.torch as ct
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ct.install(conf=with_conf("memory_limit_mb:1024"))
    warned = [str(x.message) for x in w if issubclass(x.category, RuntimeWarning)]
    caught, kind = None, None
    try:
        torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
    except torch.OutOfMemoryError as e:
        caught, kind = str(e), "torch.OutOfMemoryError"
    except RuntimeError as e:
        caught, kind = str(e), "RuntimeError"
    r = cca.last_oom()
    first = (caught or "").split("\n")[0]
    ok = bool(re.match(r"CUDA out of memory\. Tried to allocate 2\.00 GiB\. GPU [0-9]+ has a total capacity of "
                       r"[0-9.]+ GiB of which [0-9.]+ (GiB|MiB|KiB|bytes) is free\. 1024\.00 MiB allowed; Of the allocated memory", first))
    ok = ok and r is not None and r.verdict == "cap" and str(r).split("\n")[0] in (caught or "")
    want = "torch.OutOfMemoryError" if ct.throws_torch_oom() else "RuntimeError"
    emit("ok" if ok and kind == want and (want == "torch.OutOfMemoryError") == (not warned) else "failed",
         exception=kind, expected=want, warned=warned, verdict=r and r.verdict, message=(caught or "")[:900])

if PART == "record_stream":
    torch = need_torch()
    import cca.allocators.torch as ct
    ct.install()
    side = torch.cuda.Stream()
    n = 1 << 22
    x = torch.full((n,), 3.0, device="cuda")
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        big = torch.randn(4096, 4096, device="cuda")
        for _ in range(20):                           # keep the side stream busy
            big = big @ big / 4096
        y = x * 2
    x.record_stream(side)
    addr = x.data_ptr()
    del x
    z = torch.full((n,), 7.0, device="cuda")          # must not take x's memory before side is done
    reused_early = z.data_ptr() == addr
    torch.cuda.synchronize()
    seen = expandable_seen()
    ok = bool((y == 6.0).all()) and not reused_early and (seen or not EXPANDABLE)
    emit("ok" if ok else "failed", reused_while_pending=reused_early, result_correct=bool((y == 6.0).all()),
         expandable_segments=seen)

if PART == "latency":
    need_torch()
    code = ("import json, time, torch\n{setup}\ntorch.cuda.init(); n = 200000\n"
            "for size in (4096, 1 << 20):\n"
            "    for _ in range(1000): torch.cuda.caching_allocator_delete(torch.cuda.caching_allocator_alloc(size))\n"
            "r = {{}}\n"
            "for size in (4096, 1 << 20):\n"
            "    t = time.perf_counter_ns()\n"
            "    for _ in range(n): torch.cuda.caching_allocator_delete(torch.cuda.caching_allocator_alloc(size))\n"
            "    r[str(size)] = (time.perf_counter_ns() - t) / n\n"
            "print(json.dumps(r))")
    native = [run_child(code.format(setup=""), env=NATIVE_ENV) for _ in range(3)]
    mine = [run_child(code.format(setup="import cca.allocators.torch as t; t.install()")) for _ in range(3)]
    res = {}
    for size in ("4096", "1048576"):
        a = statistics.median(r[size] for r in native)
        b = statistics.median(r[size] for r in mine)
        res[size] = {"native_ns_per_pair": round(a, 1), "cca_ns_per_pair": round(b, 1), "ratio": round(b / a, 3)}
    emit("ok", note="through torch.cuda.caching_allocator_alloc/delete from Python: both pay the same Python cost",
         **{"size_" + k: v for k, v in res.items()})

if PART == "train":
    need_torch()
    code = r'''
import json, os, statistics, time
os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
import torch
MODE = "%s"
if not MODE.startswith("native"):
    import cca, cca.allocators.torch as t
    t.install(conf="preset:lean" if MODE == "lean" else None)   # None: CCA_CONF, as the variant's environment sets it
torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
torch.backends.cudnn.benchmark = False
layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True, dropout=0.0)
model = torch.nn.TransformerEncoder(layer, num_layers=4).cuda()
head = torch.nn.Linear(256, 256).cuda()
opt = torch.optim.AdamW(list(model.parameters()) + list(head.parameters()), lr=1e-4)
gen = torch.Generator().manual_seed(1)
losses, times = [], []
for step in range(300):
    seq = 32 + (step * 37) %% 224                     # varying sequence lengths
    x = torch.randn(16, seq, 256, generator=gen).cuda()
    t0 = time.perf_counter()
    loss = head(model(x)).pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
    losses.append(loss.item())
st = torch.cuda.memory_stats()                        # cca's under install(): torch.cuda's functions answer from cca
r = {"losses": losses, "median_step_ms": statistics.median(times[20:]) * 1e3,
     "peak_allocated": torch.cuda.max_memory_allocated(), "peak_reserved": torch.cuda.max_memory_reserved(),
     "device_alloc": st["num_device_alloc"], "device_free": st["num_device_free"],
     "expandable_segments": any(seg.get("is_expandable") for seg in torch.cuda.memory_snapshot())}
if not MODE.startswith("native"):                     # not in memory_stats(), which has exactly torch's keys
    x = cca.expandable_stats()
    r.update(handle_create=x["num_handle_create"], handle_release=x["num_handle_release"])
print(json.dumps(r))
'''
    # Each variant's allocator settings, whatever this process's environment holds.
    variants = {"native": ("", ""), "cca": ("", ""), "lean": ("", ""),
                "cca_expandable": (X_CONF, ""), "native_expandable": ("", X_CONF)}
    runs = {m: run_child(code % m, env={"CCA_CONF": c, "PYTORCH_CUDA_ALLOC_CONF": n})
            for m, (c, n) in variants.items()}
    differ = sorted(m for m, r in runs.items() if r["losses"] != runs["native"]["losses"])
    summary = {m: {k: v for k, v in r.items() if k != "losses"} for m, r in runs.items()}
    wrong = sorted(m for m, r in runs.items() if r["expandable_segments"] != m.endswith("_expandable"))
    ok = not differ and not wrong and runs["cca_expandable"]["handle_create"] > 0
    emit("ok" if ok else "failed", identical_losses=not differ, losses_differ_from_native=differ,
         expandable_segments_wrong=wrong, final_loss=runs["native"]["losses"][-1], variants=list(variants), **summary)

if PART == "bench":
    exe = os.environ.get("CCA_BENCH", "")
    if not os.access(exe, os.X_OK):
        emit("failed", reason="no cca-bench at CCA_BENCH=%r" % exe)
    import tempfile
    path = os.path.join(tempfile.mkdtemp(), "bench.json")
    cmd = [exe, "--quick", "--reps", "1", "--scenario", "replay", "--scenario", "multistream", "--scenario", "mixed",
           "--alloc", "cca:default", "--alloc", "cca:x", "--cca", "x=" + X_CONF, "--json", path]
    p = subprocess.run(cmd, capture_output=True, text=True)       # the time limit is gpu-check's
    print(p.stdout)                                   # the tables, in OUTDIR/bench.log
    print(p.stderr, file=sys.stderr)
    if p.returncode != 0 or not os.path.exists(path):
        emit("failed", command=" ".join(cmd), rc=p.returncode, stderr=p.stderr[-3000:])
    with open(path) as f:
        data = json.load(f)
    rows = []
    for r in data["rows"]:
        if r["scenario"] == "goal":                   # targets for the benchmark, not checks
            continue
        row = {k: r[k] for k in ("scenario", "case", "allocator", "unit", "median", "error")}
        row["calls_per_op"] = (r.get("calls_per_op") or {}).get("total")
        row.update(r.get("extra") or {})
        rows.append(row)
    bad = [r for r in rows if r["error"] or r.get("check_failed") or r.get("check_failures") or r.get("traces_failed")]
    labels = sorted({r["allocator"] for r in rows})
    ok = not bad and "cca:x" in labels and "cca:default" in labels
    emit("ok" if ok else "failed", command=" ".join(cmd[1:-2]), runtime=data["meta"].get("runtime"),
         allocators=labels, replay_traces=len({r["case"] for r in rows if r["scenario"] == "replay"}),
         failed_rows=[(r["scenario"], r["case"], r["allocator"], r["error"]) for r in bad], rows=rows)

if PART == "cupy":
    need_gpu("CuPy (with torch)")
    need_torch()
    try:
        import cupy  # noqa: F401
    except Exception as e:                            # noqa: BLE001
        emit("skipped", reason="cupy not importable: %s" % e)
    code = r'''
import json
import torch, cupy
import cca, cca.allocators.torch, cca.allocators.cupy
cca.allocators.torch.install()
cca.allocators.cupy.install()
t = torch.ones(1 << 20, device="cuda")                # 4 MiB through the torch hook
base = cca.memory_allocated(0)
s = cupy.cuda.Stream(non_blocking=True)
with s:
    x = cupy.arange(1 << 20, dtype=cupy.float32)      # 4 MiB through cca, on CuPy's stream
    y = (x * 2).sum()
s.synchronize()
with_cupy = cca.memory_allocated(0)
segs = [seg for seg in cca.memory_snapshot() if any(b["state"] == "active_allocated" for b in seg["blocks"])]
streams = sorted({seg["stream"] for seg in segs})
del x, y
cupy.get_default_memory_pool()                        # untouched: cca is the allocator
after = cca.memory_allocated(0)
print(json.dumps({"torch_bytes": base, "with_cupy": with_cupy, "after_cupy_freed": after,
                  "cupy_stream": int(s.ptr), "segment_streams": streams, "ok": with_cupy > base and after < with_cupy
                  and int(s.ptr) in streams}))
'''
    r = run_child(code)
    emit("ok" if r.pop("ok") else "failed", **r)

if PART == "cupy_runtime":
    need_gpu("CuPy")
    try:
        import cupy  # noqa: F401
    except Exception as e:                            # noqa: BLE001
        emit("skipped", reason="cupy not importable: %s" % e)
    code = r'''
import glob, json, os
import cupy, cupy_backends
import cca, cca.allocators.cupy
from cca import _lib
mods = glob.glob(os.path.join(os.path.dirname(cupy_backends.__file__), "cuda", "api", "runtime*.so"))
static = bool(mods) and not any(n.startswith("libcudart") for n in _lib.needed(mods[0]))
cca.allocators.cupy.install()
s = cupy.cuda.Stream(non_blocking=True)
with s:
    x = cupy.arange(1 << 22, dtype=cupy.float32)      # 16 MiB from cca, written by a CuPy kernel on s
    y = x * 2 + 1                                     # read and written on s
    total = int(y.astype(cupy.int64).sum())           # exact: every value is an integer below 2**24
s.synchronize()
want = (1 << 22) ** 2                                 # the sum of the first 2**22 odd numbers
segs = [g for g in cca.memory_snapshot() if any(b["state"] == "active_allocated" for b in g["blocks"])]
maps = sorted({l.split()[-1] for l in open("/proc/self/maps") if "libcudart" in l})
print(json.dumps({"cupy_runtime_static": static, "cupy_runtime_module": mods[0] if mods else None,
                  "sum": total, "sum_expected": want, "segment_streams": sorted({g["stream"] for g in segs}),
                  "cupy_stream": int(s.ptr), "libcudart_mapped": maps,
                  "ok": total == want and int(s.ptr) in {g["stream"] for g in segs}}))
'''
    r = run_child(code)
    emit("ok" if r.pop("ok") else "failed", **r)

if PART == "numba":
    need_gpu("Numba")
    try:
        import numba.cuda  # noqa: F401
    except Exception as e:                            # noqa: BLE001
        emit("skipped", reason="numba not importable: %s" % e)
    code = r'''
import json
from numba import cuda
import cca
before = cca.memory_allocated(0)
a = cuda.device_array(1 << 20, dtype="float32")       # 4 MiB through the EMM plugin
during = cca.memory_allocated(0)
info = cuda.current_context().get_memory_info()
free, total = cca.mem_get_info(0)


@cuda.jit
def fill(x):                                          # a real kernel writing cca's memory
    i = cuda.grid(1)
    if i < x.size:
        x[i] = 2 * i + 1


fill[(a.size + 255) // 256, 256](a)
host = a.copy_to_host()
kernel_ok = bool(host[0] == 1 and host[-1] == 2 * (a.size - 1) + 1 and int(host.astype("int64").sum()) == a.size ** 2)
del a, host
import gc; gc.collect()
after = cca.memory_allocated(0)                       # cca's finalizer frees at once
print(json.dumps({"before": before, "during": during, "after": after, "info_total": info.total, "total": total,
                  "kernel_ok": kernel_ok, "ok": during - before >= 4 << 20 and info.total == total and kernel_ok
                  and after == before}))
'''
    r = run_child(code, env={"NUMBA_CUDA_MEMORY_MANAGER": "cca.allocators.numba"})
    emit("ok" if r.pop("ok") else "failed", **r)

if PART == "tags":
    need_torch()
    code = r'''
import json
import torch
import cca, cca.allocators.torch
cca.allocators.torch.install()
m = torch.nn.Linear(1024, 1024).cuda()
x = torch.randn(64, 1024, device="cuda")
with cca.tag("forward"):
    loss = m(x).pow(2).mean()
with cca.tag("backward"):
    loss.backward()                                   # autograd's own thread allocates the gradients
torch.cuda.synchronize()
tags = {}
for seg in cca.memory_snapshot():
    for b in seg["blocks"]:
        if b["state"] == "active_allocated":
            tags[b["address"]] = b.get("tag")
grad = tags.get(m.weight.grad.data_ptr())
print(json.dumps({"weight_grad_tag": grad, "tags_seen": sorted({t for t in tags.values() if t}),
                  "ok": grad == "backward"}))
'''
    r = run_child(code)
    emit("ok" if r.pop("ok") else "failed", **r)

if PART == "viewer":
    need_torch()
    work = r'''
import json, pickle, sys
import torch
native = sys.argv[1] == "native"
path = sys.argv[2]
if not native:                                   # torch's own calls, answered by cca
    import cca, cca.allocators.torch
    cca.allocators.torch.install()
torch.cuda.memory._record_memory_history(max_entries=100000, stacks="python")
keep = []
for i in range(40):
    t = torch.empty(1000 * (i + 1) + (i % 3) * (3 << 20), dtype=torch.uint8, device="cuda")
    if i % 2:
        keep.append(t)
    del t
side = torch.cuda.Stream()
x = torch.empty(5 << 20, dtype=torch.uint8, device="cuda")
with torch.cuda.stream(side):
    x.add_(1)
x.record_stream(side)
del x
torch.cuda.synchronize()
torch.cuda.memory._dump_snapshot(path)
from torch.cuda import _memory_viz as mv
data = pickle.load(open(path, "rb"))
out = {}
for cmd, fn in (("stats", mv.segsum), ("trace", mv.trace)):   # what the command line's stats and trace print
    try:
        text = fn(data)
        out[cmd] = {"rc": 0, "lines": len(text.splitlines()), "err": ""}
    except Exception as e:
        out[cmd] = {"rc": 1, "lines": 0, "err": repr(e)[-500:]}
lines = mv.segments(data, format_flamegraph=lambda l: l)
out["segments_lines"] = len(lines.splitlines())
tr = [e for d in data["device_traces"] for e in d]
out["actions"] = {a: sum(1 for e in tr if e["action"] == a) for a in sorted({e["action"] for e in tr})}
out["alloc_sizes"] = sorted(e["size"] for e in tr if e["action"] == "alloc")
out["settings_keys"] = sorted(data.get("allocator_settings", {}))
out["segments"] = len(data["segments"])
out["expandable_segments"] = any(s.get("is_expandable") for s in data["segments"])
print(json.dumps(out))
'''
    import tempfile
    tmp = tempfile.mkdtemp()
    with open(os.path.join(tmp, "work.py"), "w") as f:
        f.write(work)
    res = {}
    for who in ("native", "cca"):
        p = subprocess.run([sys.executable, os.path.join(tmp, "work.py"), who, os.path.join(tmp, who + ".pickle")],
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, **(NATIVE_ENV if who == "native" else {})))
        if p.returncode != 0:
            emit("failed", side=who, stderr=p.stderr[-3000:])
        res[who] = json.loads(p.stdout.strip().splitlines()[-1])
    n, c = res["native"], res["cca"]
    ran = all(r[cmd]["rc"] == 0 for r in (n, c) for cmd in ("stats", "trace"))
    same_allocs = n["alloc_sizes"] == c["alloc_sizes"]
    expandable = (n["expandable_segments"], c["expandable_segments"])
    emit("ok" if ran and same_allocs and c["segments_lines"] > 0 and (all(expandable) or not EXPANDABLE) else "failed",
         viewer_ran_on_both=ran, alloc_sizes_equal=same_allocs, expandable_segments=expandable,
         actions_native=n["actions"], actions_cca=c["actions"],
         stats_lines=(n["stats"]["lines"], c["stats"]["lines"]), trace_lines=(n["trace"]["lines"], c["trace"]["lines"]),
         segments_lines=(n["segments_lines"], c["segments_lines"]), segments=(n["segments"], c["segments"]),
         settings_only_native=sorted(set(n["settings_keys"]) - set(c["settings_keys"])),
         errors={w: {cmd: res[w][cmd]["err"] for cmd in ("stats", "trace") if res[w][cmd]["rc"]} for w in res})

if PART == "frameworks":
    # The frameworks tier's programs (python/tests/frameworks/programs.py) on
    # the GPU with the torch installed here, each in a fresh process: torch's
    # allocator and cca, default and expandable segments; the same
    # comparisons as the tier's, the losses, cca's step time against
    # torch's, and torch's history, saved so that docs/testing.md can say
    # whether the tier's allocation sequence is the GPU's.
    torch = need_torch()
    prog = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "tests", "frameworks", "programs.py")
    env = {k: v for k, v in os.environ.items() if k not in ("CCA_CONF", "PYTORCH_CUDA_ALLOC_CONF", "CCA_SIM_LIBRARY")}
    runs, not_run = {}, []
    where = os.path.join(OUT, "frameworks")            # beside the parts' own JSON, not among them
    os.makedirs(where, exist_ok=True)
    for program in ("streams", "train"):
        for who in ("torch", "cca"):
            for x in (False, True):
                left = 55 - (time.time() - T0)        # the part's cap is 60 s
                if left < 8:
                    not_run.append("%s-%s%s" % (program, who, "-x" if x else ""))
                    continue
                path = os.path.join(where, "%s-%s%s.json" % (program, who, "-x" if x else ""))
                try:
                    p = subprocess.run([sys.executable, prog, program, who] + (["--expandable"] if x else []) + [path],
                                       capture_output=True, text=True, timeout=left, env=env)
                except subprocess.TimeoutExpired:
                    not_run.append("%s-%s%s (timed out)" % (program, who, "-x" if x else ""))
                    continue
                if p.returncode != 0:
                    emit("failed", program=program, allocator=who, expandable=x, stderr=p.stderr[-3000:])
                runs[(program, who, x)] = json.load(open(path))
    figures, ok = {}, True
    for program in ("streams", "train"):
        t, c = runs.get((program, "torch", False)), runs.get((program, "cca", False))
        if not t or not c:
            ok = False
            continue
        diff = {k: (v, c["stats"].get(k)) for k, v in t["stats"].items() if c["stats"].get(k) != v}
        first = next((i for i, (a, b) in enumerate(zip(t["trace"], c["trace"])) if a != b), None)
        same_trace = first is None and len(t["trace"]) == len(c["trace"])
        tx, cx = runs.get((program, "torch", True)), runs.get((program, "cca", True))
        peaks = (tx["stats"]["reserved_bytes.all.peak"], cx["stats"]["reserved_bytes.all.peak"]) if tx and cx else None
        figures[program] = {"stats_differ": diff, "trace_events": (len(t["trace"]), len(c["trace"])),
                            "trace_identical": same_trace, "first_trace_difference": first,
                            "expandable_peak_reserved_torch_cca": peaks}
        ok &= not diff and same_trace and peaks is not None and peaks[1] <= peaks[0]
        if program == "train":
            rel = max((abs(a - b) / max(abs(a), 1e-12) for a, b in zip(t["losses"], c["losses"])), default=0.0)
            figures[program]["losses_identical"] = t["losses"] == c["losses"]
            figures[program]["losses_max_relative_difference"] = rel
            figures[program]["losses"] = (t["losses"], c["losses"])
            ms_t, ms_c = statistics.median(t["step_ms"][1:]), statistics.median(c["step_ms"][1:])
            figures[program]["median_step_ms_torch_cca"] = (round(ms_t, 3), round(ms_c, 3))
            figures[program]["step_time_ratio_cca_over_torch"] = round(ms_c / ms_t, 3)
            ok &= len(t["losses"]) == len(c["losses"]) and rel <= 1e-6
    emit("ok" if ok and not not_run else "failed" if not ok else "incomplete", torch=torch.__version__,
         not_run=not_run, **figures)

emit("failed", reason="unknown part " + PART)
