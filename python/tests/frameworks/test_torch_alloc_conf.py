"""PYTORCH_CUDA_ALLOC_CONF under cca (real torch on the simulated device):
install() reads it where CCA_CONF is unset - torch's syntax, and
PYTORCH_ALLOC_CONF first, as torch - applies each key cca honours (the
settings torch's own allocator reports for the same variable are cca's),
names each key it does not honour in one warning (pinned_* stay torch's:
its host allocator reads them), and refuses a bad value, naming the
variable."""
import json
import os
import subprocess
import sys

PROGRAM = r"""
import json, sys, warnings
import torch
if sys.argv[1] == "cca":
    import cca.allocators.torch as ct
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ct.install()
    said = [str(m.message) for m in w if "CONF" in str(m.message)]
else:
    said = []
x = torch.empty(3 << 20, dtype=torch.uint8, device="cuda")
s = torch.cuda.memory._snapshot()
print(json.dumps({"said": said, "settings": s["allocator_settings"],
                  "expandable": sorted({seg["is_expandable"] for seg in s["segments"]}),
                  "max_split": torch.cuda.memory_stats()["max_split_size"]}))
"""

CONF = ("expandable_segments:True,max_split_size_mb:64,garbage_collection_threshold:0.6,"
        "roundup_power2_divisions:[256:1,512:2,>:4],pinned_use_cuda_host_register:True,release_lock_on_cudamalloc:True")


def run(mode, **env):
    base = {k: v for k, v in os.environ.items() if k not in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF",
                                                            "CCA_CONF")}
    r = subprocess.run([sys.executable, "-c", PROGRAM, mode], capture_output=True, text=True, timeout=300,
                       env=dict(base, **env))
    return r, (json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else None)


def test_the_keys_cca_honours_are_applied_and_the_rest_named():
    (rt, t), (rc, c) = run("torch", PYTORCH_CUDA_ALLOC_CONF=CONF), run("cca", PYTORCH_CUDA_ALLOC_CONF=CONF)
    assert rt.returncode == 0, rt.stderr[-3000:]
    assert rc.returncode == 0, rc.stderr[-3000:]
    assert c["said"] == ["cca: PYTORCH_CUDA_ALLOC_CONF's release_lock_on_cudamalloc:True is not honoured by cca "
                         "(cca has no such setting): the rest is applied"]
    for key in ("PYTORCH_CUDA_ALLOC_CONF", "max_split_size", "garbage_collection_threshold", "expandable_segments",
                "roundup_power2_divisions"):
        assert c["settings"][key] == t["settings"][key], key
    assert c["settings"]["max_split_size"] == 64 << 20 and c["settings"]["expandable_segments"] is True
    assert c["expandable"] == t["expandable"] == [True]
    assert c["max_split"] == t["max_split"] == 64 << 20


def test_torchs_newer_name_first_and_cca_conf_wins():
    _, c = run("cca", PYTORCH_ALLOC_CONF="max_split_size_mb:128", PYTORCH_CUDA_ALLOC_CONF="max_split_size_mb:64")
    assert c["max_split"] == 128 << 20 and c["said"] == []
    _, c = run("cca", CCA_CONF="max_split_size_mb:32", PYTORCH_CUDA_ALLOC_CONF="max_split_size_mb:64")
    assert c["max_split"] == 32 << 20
    _, c = run("cca")
    assert c["max_split"] == -1 and c["expandable"] == [False] and c["said"] == []


def test_a_bad_value_is_refused_naming_the_variable():
    r, _ = run("cca", PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True,max_split_size_mb:abc")
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ValueError: cca: PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True,max_split_size_mb:abc': ")
    assert "max_split_size_mb" in last
