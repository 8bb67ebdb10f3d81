"""The frameworks tier's programs, each run in a process of its own under
torch's allocator or under cca (scripts/torch-sim puts real torch on the
simulated device):

    python programs.py PROGRAM ALLOCATOR [--expandable] [--batch=N] [--accumulate=K] OUT.json

PROGRAM: "mlp" (--batch=N [--accumulate=K]: two AdamW steps of an MLP,
recorded by cca to OUT.json.csv), "streams" (the default stream and two side streams, record_stream
with the side stream's work pending, frees from another thread,
empty_cache, reset_peak_memory_stats) or "train" (an MLP and a transformer
encoder layer, AdamW, forward and backward with gradient accumulation).
ALLOCATOR: "torch" (torch's own CUDACachingAllocator) or "cca"
(cca.allocators.torch.install()). --expandable: expandable segments
(PYTORCH_CUDA_ALLOC_CONF for torch, cca's expandable_segments:True).

Writes what the comparisons need: torch.cuda.memory_stats() (cca's through
torch's patched API), the allocation history's events, the simulator's call
counts, the losses and each training step's time. On a real GPU
(scripts/gpu-check; CCA_SIM_LIBRARY unset) there is no simulator: the
streams program's side stream is then kept busy by a real kernel instead of
a hold, and no call counts are written."""
import ctypes
import json
import os
import sys
import threading
import time

MiB = 1 << 20


def sim():
    if not os.environ.get("CCA_SIM_LIBRARY"):
        return None
    lib = ctypes.CDLL(os.environ["CCA_SIM_LIBRARY"])
    lib.cca_sim_calls.restype = ctypes.c_ulong
    lib.cca_sim_api_name.restype = ctypes.c_char_p
    return lib


def sim_calls(lib):
    if lib is None:
        return {}
    out, a = {}, 0
    while True:
        name = lib.cca_sim_api_name(a).decode()
        if name == "unknown":
            return out
        out[name] = lib.cca_sim_calls(a)
        a += 1


def streams(torch, lib):
    cuda = torch.device("cuda")
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    g = torch.Generator().manual_seed(7)

    def sizes(n, lo, hi):
        return [int(v) for v in torch.randint(lo, hi, (n,), generator=g)]

    a = torch.empty(3 * MiB, dtype=torch.uint8, device=cuda)
    with torch.cuda.stream(s1):
        b = torch.empty(5 * MiB, dtype=torch.uint8, device=cuda)
        c = [torch.empty(n, dtype=torch.uint8, device=cuda) for n in sizes(20, 512, 200000)]
    # s1's work stays pending: a block it used cannot be reused until it ends
    if lib is not None:
        lib.cca_sim_stream_hold(ctypes.c_void_p(s1.cuda_stream))
    else:                                             # a GPU: a kernel long enough to outlast what follows
        with torch.cuda.stream(s1):
            torch.cuda._sleep(200_000_000)
    a.record_stream(s1)
    del a
    with torch.cuda.stream(s2):
        d = torch.empty(7 * MiB, dtype=torch.uint8, device=cuda)
        e = [torch.empty(n, dtype=torch.uint8, device=cuda) for n in sizes(20, 512, 3 * MiB)]
    b.record_stream(s2)
    del b
    f = torch.empty(3 * MiB, dtype=torch.uint8, device=cuda)      # not a's block: s1 is busy
    if lib is not None:
        lib.cca_sim_stream_release(ctypes.c_void_p(s1.cuda_stream))
    else:
        s1.synchronize()
    h = [torch.empty(n, dtype=torch.uint8, device=cuda) for n in sizes(30, 512, 4 * MiB)]

    # frees from another thread
    gone = c[::2] + e[1::2]
    c, e = c[1::2], e[::2]
    t = threading.Thread(target=gone.clear)
    t.start()
    t.join()
    del gone
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    with torch.cuda.stream(s2):
        k = [torch.empty(n, dtype=torch.uint8, device=cuda) for n in sizes(25, 512, 25 * MiB)]
    for x in k[::3]:
        x.record_stream(s1)
    del k, d, f
    if lib is None:                                   # a GPU: s1's events complete before the next mallocs, as here
        torch.cuda.synchronize()
    m = [torch.empty(n, dtype=torch.uint8, device=cuda) for n in sizes(25, 512, 9 * MiB)]
    del h, m, c, e
    torch.cuda.synchronize()
    return []


def train(torch, lib):
    torch.backends.cudnn.enabled = False
    torch.use_deterministic_algorithms(True, warn_only=True)   # the same losses run after run on a GPU
    torch.manual_seed(0)
    nn = torch.nn
    mlp = nn.Sequential(nn.Linear(64, 512), nn.GELU(), nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 10)).cuda()
    enc = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=256, batch_first=True).cuda()
    opt = torch.optim.AdamW(list(mlp.parameters()) + list(enc.parameters()), lr=1e-3)
    losses, step_ms = [], []
    for step in range(4):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for micro in range(3):                        # gradient accumulation
            x = torch.randn(16, 32, 64, device="cuda")
            y = torch.randint(0, 10, (16,), device="cuda")
            loss = nn.functional.cross_entropy(mlp(enc(x).mean(1)), y) / 3
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss.item()))
        torch.cuda.synchronize()
        step_ms.append((time.perf_counter() - t0) * 1e3)
    train.step_ms = step_ms
    return losses


def mlp(torch, lib, batch, accumulate):
    """Two AdamW steps of an MLP at `batch`, each in `accumulate` micro-batches
    (zero_grad(set_to_none=True) after each step)."""
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 4096), nn.GELU(), nn.Linear(4096, 10)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for step in range(2):
        for micro in range(accumulate):
            x = torch.randn(batch // accumulate, 1024, device="cuda")
            y = torch.randint(0, 10, (batch // accumulate,), device="cuda")
            loss = nn.functional.cross_entropy(model(x), y) / accumulate
            loss.backward()
            del x, y
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss.item()))
        del loss
    torch.cuda.synchronize()
    return losses


def main(argv):
    program, allocator = argv[0], argv[1]
    expandable = "--expandable" in argv
    out = argv[-1]
    opt = dict(a[2:].split("=", 1) for a in argv[2:-1] if "=" in a)   # --batch=N --accumulate=K (mlp)
    if allocator == "torch" and expandable:
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")   # deterministic cuBLAS (and its workspace size)
    import torch
    lib = sim()
    if allocator == "cca":
        import cca
        import cca.allocators.torch
        conf = "expandable_segments:True" if expandable else None
        if program == "mlp":                            # a recording of the run, for cca-replay --batch
            conf = "trace_file:" + out + ".csv"
        cca.allocators.torch.install(conf)
        cca.record_history(True, max_entries=1 << 20)
    else:
        torch.cuda.memory._record_memory_history(max_entries=1 << 20, stacks="python")
    before = sim_calls(lib)
    if program == "mlp":
        losses = mlp(torch, lib, int(opt["batch"]), int(opt.get("accumulate", "1")))
    else:
        losses = {"streams": streams, "train": train}[program](torch, lib)
    stats = torch.cuda.memory_stats()
    served = {"backend": torch.cuda.get_allocator_backend()}
    if allocator == "cca":
        import cca
        trace = cca.snapshot()["device_traces"][0]
        served["cca_segments"] = len(cca.memory_snapshot())
    else:
        trace = torch.cuda.memory._snapshot()["device_traces"][0]
        served["pickle"] = out + ".pickle"              # torch's own snapshot, for cca-replay (test_torch_replay)
        torch.cuda.memory._dump_snapshot(served["pickle"])
    served["device_total"] = torch.cuda.mem_get_info()[1]
    after = sim_calls(lib)
    result = {
        "torch": torch.__version__,
        "stats": stats,
        "trace": [[ev["action"], ev["size"], ev["stream"]] for ev in trace],
        "calls": {k: after[k] - before.get(k, 0) for k in after},
        "calls_total": after,
        "losses": losses,
        "step_ms": getattr(train, "step_ms", []) if program == "train" else [],
        "gpu": lib is None,
        "served": served,
    }
    with open(out, "w") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    main(sys.argv[1:])
