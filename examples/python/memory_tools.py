"""cca's memory tools on a CuPy program: one cache (cca's) for CuPy, a
threshold alarm, a profile per phase, tags naming who holds the memory, a
monitor line per interval, and the allocation history written as torch's
snapshot pickle (read it with `python -m torch.cuda._memory_viz stats
FILE` or `trace FILE`). The same calls work in a PyTorch program after
cca.allocators.torch.install().

    python examples/python/memory_tools.py [SNAPSHOT.pickle]
"""
import sys
import time

import cupy

import cca
import cca.allocators.cupy

MiB = 1 << 20
cca.allocators.cupy.install()                # CuPy allocates from cca, on its current stream
cca.record_history(True)                     # every allocation event, for the snapshot below


def crossed(c):                              # runs on cca's delivery thread, never inside an allocation
    sys.stdout.write("watch: allocated %s %d MiB (now %d MiB)\n" % (    # one write: lines stay whole
        "rose above" if c.rising else "fell to or below", c.threshold // MiB, c.bytes // MiB))


def load():
    with cca.tag("inputs"):
        return [cupy.cuda.alloc(8 * MiB) for _ in range(4)]       # 32 MiB of inputs


def compute(inputs):
    with cca.tag("workspace"):
        scratch = [cupy.cuda.alloc(16 * MiB) for _ in range(2)]  # 32 MiB, dropped at the end
        out = cupy.cuda.alloc(4 * MiB)                           # kept: the result
        del scratch
    return out


with cca.watch(48 * MiB, crossed), cca.Monitor(0.05, file=sys.stdout):
    with cca.profile("step", file=sys.stdout):   # prints a table: the step and its two phases
        with cca.profile("load"):
            inputs = load()
        with cca.profile("compute"):
            result = compute(inputs)
    time.sleep(0.1)                          # the monitor writes a line or two

held = {}
for seg in cca.memory_snapshot():
    for b in seg["blocks"]:
        if b["state"] == "active_allocated":
            held[b.get("tag", "(untagged)")] = held.get(b.get("tag", "(untagged)"), 0) + b["size"]
for name, nbytes in sorted(held.items()):
    print("held by %-10s %3d MiB" % (name, nbytes // MiB))

path = sys.argv[1] if len(sys.argv) > 1 else "cca_snapshot.pickle"
cca.dump_snapshot(path)
events = cca.history()
print("history: %d events (%s), snapshot written to %s" % (
    len(events), ", ".join("%d %s" % (sum(e["action"] == a for e in events), a)
                           for a in ("alloc", "free_requested", "segment_alloc")), path))
del inputs, result
