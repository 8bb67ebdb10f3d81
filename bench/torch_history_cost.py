"""What recording torch's memory history costs per allocation, under cca and
under torch's own allocator, in one run (real torch; on the simulated
device with scripts/torch-sim, or on a GPU):

    scripts/torch-sim python bench/torch_history_cost.py [PAIRS]

Each configuration runs in a process of its own: PAIRS times (default
20000) a 1 KiB tensor made and dropped at a Python stack 12 frames deep,
best of 5 rounds; printed: microseconds per pair, and the difference to the
same allocator not recording - what recording (and, with stacks, reading
the Python frames) adds to each allocation and free."""
import json
import os
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
import torch
alloc, mode, pairs = sys.argv[1], sys.argv[2], int(sys.argv[3])
if alloc == "cca":
    import cca.allocators.torch
    cca.allocators.torch.install()
x = torch.empty(1, device="cuda")
m = torch.cuda.memory
if mode == "stacks":
    m._record_memory_history(max_entries=1000, stacks="python")
elif mode == "events":
    m._record_memory_history(max_entries=1000, context=None, stacks="python")

def deep(n):
    if n:
        return deep(n - 1)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(pairs):
            t = torch.empty(256, device="cuda")
            del t
        best = min(best, time.perf_counter() - t0)
    return best

print(json.dumps({"us": deep(10) / pairs * 1e6}))
"""


def main(argv):
    pairs = int(argv[0]) if argv else 20000
    rows = []
    for alloc in ("torch", "cca"):
        base = None
        for mode, what in (("off", "not recording"), ("events", "recording, context=None"),
                           ("stacks", "recording, Python frames")):
            env = {k: v for k, v in os.environ.items() if k not in ("PYTORCH_CUDA_ALLOC_CONF", "CCA_CONF")}
            r = subprocess.run([sys.executable, "-c", CHILD, alloc, mode, str(pairs)], capture_output=True,
                               text=True, env=env, timeout=600)
            if r.returncode != 0:
                sys.exit("%s %s failed:\n%s" % (alloc, mode, r.stderr[-2000:]))
            us = json.loads(r.stdout.strip().splitlines()[-1])["us"]
            base = us if base is None else base
            rows.append((alloc, what, us, us - base))
    print("%-6s %-28s %12s %12s" % ("", "", "us per pair", "added"))
    for alloc, what, us, add in rows:
        print("%-6s %-28s %12.2f %12s" % (alloc, what, us, "" if what == "not recording" else "%+.2f" % add))
    print("(%d pairs of a 1 KiB tensor made and dropped, 12 Python frames deep, best of 5; %s)"
          % (pairs, time.strftime("%Y-%m-%d")))


if __name__ == "__main__":
    main(sys.argv[1:])
