"""Before torch initialises CUDA, the memory functions install() patched
answer as torch does ({} and zeros) and create nothing: no cca allocator,
no CUDA call. After the first tensor on the GPU they are cca's."""
import json
import subprocess
import sys

PROGRAM = r"""
import json
import torch
import cca, cca._core
import cca.allocators.torch as ct
ct.install()
before = {"stats": torch.cuda.memory_stats(), "nested": torch.cuda.memory_stats_as_nested_dict(),
          "allocated": torch.cuda.memory_allocated(), "max_allocated": torch.cuda.max_memory_allocated(),
          "reserved": torch.cuda.memory_reserved(), "max_reserved": torch.cuda.memory.max_memory_reserved(),
          "initialized": torch.cuda.is_initialized(), "allocators": len(cca._core.existing_allocators())}
x = torch.ones(1 << 20, device="cuda")
after = {"allocated": torch.cuda.memory_allocated(), "reserved": torch.cuda.memory_reserved(),
         "stats_keys": len(torch.cuda.memory_stats()), "allocators": len(cca._core.existing_allocators()),
         "cca_allocated": cca.memory_allocated(0)}
print(json.dumps({"before": before, "after": after}))
"""


def test_before_cuda_starts_torchs_answers_and_nothing_created():
    r = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().split("\n")[-1])
    b, a = out["before"], out["after"]
    assert b["stats"] == {} and b["nested"] == {}
    assert [b[k] for k in ("allocated", "max_allocated", "reserved", "max_reserved")] == [0, 0, 0, 0]
    assert b["initialized"] is False and b["allocators"] == 0
    assert a["allocators"] == 1 and a["allocated"] == a["cca_allocated"] == 4 << 20
    assert a["reserved"] == 20 << 20 and a["stats_keys"] >= 122


SHARED = r"""
import ctypes, json
import torch
import cca, cca._core, cca._lib
import cca.allocators.torch as ct
ct.install()
a = cca._core.allocator(0)                            # another framework (CuPy, Numba) allocates through cca first
p = ctypes.c_void_p()
assert cca._lib.lib().cca_malloc(a, ctypes.byref(p), 3 << 20, None) == 0
print(json.dumps({"initialized": torch.cuda.is_initialized(), "allocated": torch.cuda.memory_allocated(0),
                  "cca": cca.memory_allocated(0)}))
"""


def test_before_cuda_starts_another_frameworks_bytes_are_counted():
    """torch has not started CUDA, but cca already serves another framework:
    torch's functions then answer from cca (one cache for every framework)."""
    r = subprocess.run([sys.executable, "-c", SHARED], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().split("\n")[-1])
    assert out == {"initialized": False, "allocated": 3 << 20, "cca": 3 << 20}
