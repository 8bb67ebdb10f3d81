"""An out-of-memory inside a torch operation under cca is torch's own
exception, however cca was installed: libcca_hooks is built without torch
(pip's isolated build never sees it), and cca.allocators.torch.install()
builds the one function that throws c10::OutOfMemoryError against the
running torch, cached per torch build (cca/allocators/torch_oom.py). Its
message is torch's first line, from cca's figures, then cca's report.
Where that cannot be built (no C++ compiler), install() warns once, saying
what an OOM will be instead, and the OOM is a RuntimeError with the same
text - never a tensor at address 0."""
import json
import os
import re
import subprocess
import sys

PROGRAM = r"""
import json, os, sys, warnings
import torch
import cca
import cca.allocators.torch as ct
native = sys.argv[1:] == ["native"]
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    if not native:
        ct.install()
res = {"warned": [str(x.message) for x in w if issubclass(x.category, RuntimeWarning)],
       "throws": None if native else ct.throws_torch_oom()}
x = torch.ones(1 << 20, device="cuda")               # 4 MiB, in a 20 MiB segment
try:
    y = x.repeat(30000)                               # 120 GB inside an operation, on an 80 GiB device
    res["got"] = ["no error", y.data_ptr()]
except torch.OutOfMemoryError as e:
    res["got"] = ["torch.OutOfMemoryError", str(e)]
except RuntimeError as e:
    res["got"] = [type(e).__name__, str(e)]
rep = None if native else cca.last_oom()
res["report"] = str(rep) if rep is not None else None
res["after"] = float(torch.ones(16, device="cuda").sum().item() == 0.0)   # still allocates (D2H reads zeros)
res["allocated"] = torch.cuda.memory_allocated()
print(json.dumps(res))
"""

FIRST = re.compile(r"CUDA out of memory\. Tried to allocate 117\.19 GiB\. GPU 0 has a total capacity of 80\.00 GiB "
                   r"of which [0-9]+\.[0-9]{2} GiB is free\. Of the allocated memory 4\.00 MiB is allocated by "
                   r"PyTorch, and [0-9.]+ (bytes|KiB|MiB) is reserved by PyTorch but unallocated\.\Z")


def run(cache, *args, **env):
    e = {k: v for k, v in os.environ.items() if k not in ("PYTORCH_CUDA_ALLOC_CONF", "CCA_CONF", "CXX")}
    e["CCA_CACHE_DIR"] = str(cache)
    e.update(env)
    r = subprocess.run([sys.executable, "-c", PROGRAM] + list(args), capture_output=True, text=True, timeout=600, env=e)
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.strip().split("\n")[-1])


def check_text(res):
    kind, text = res["got"]
    first, rest = text.split("\n", 1)
    assert FIRST.match(first), first
    assert res["report"] and rest.startswith(res["report"].split("\n")[0]), (rest[:300], res["report"][:300])
    assert res["report"] in rest
    assert res["after"] == 1.0 and res["allocated"] == 4 * 2**20   # x is all that is live: nothing was lost
    return kind


def test_oom_in_a_torch_operation_is_torchs_exception(tmp_path):
    res = run(tmp_path)
    assert res["warned"] == []
    assert res["throws"] is True
    assert check_text(res) == "torch.OutOfMemoryError"
    built = os.listdir(tmp_path / "torch-oom")
    assert len(built) == 1 and built[0].startswith(re.sub(r"[^A-Za-z0-9.+_-]", "_", os.environ["CCA_TORCH_SIM_TORCH"]))
    lib = tmp_path / "torch-oom" / built[0] / "libcca_torch_oom.so"
    stamp = os.stat(lib).st_mtime_ns
    again = run(tmp_path)                             # the cache serves the next process: nothing is built
    assert check_text(again) == "torch.OutOfMemoryError"
    assert os.listdir(tmp_path / "torch-oom") == built and os.stat(lib).st_mtime_ns == stamp
    assert os.listdir(tmp_path / "torch-oom" / built[0]) == ["libcca_torch_oom.so"]


def test_the_first_line_is_torchs_own(tmp_path):
    """torch's allocator, on the same program, says the same first line
    (then its generic advice, where cca's report follows)."""
    cca_first = run(tmp_path)["got"][1].split("\n")[0]
    kind, text = run(tmp_path, "native")["got"]
    assert kind == "torch.OutOfMemoryError"
    assert text.startswith(cca_first + " If reserved but unallocated memory is large"), (text, cca_first)


def test_without_a_compiler_install_warns_once_and_an_oom_is_a_runtime_error(tmp_path):
    res = run(tmp_path, CXX=str(tmp_path / "no-such-c++"))
    assert len(res["warned"]) == 1, res["warned"]
    w = res["warned"][0]
    assert w.startswith("cca: an out-of-memory under cca will raise RuntimeError, not torch.OutOfMemoryError, "
                        "with the same message"), w
    assert "no C++ compiler" in w and "no-such-c++" in w, w
    assert res["throws"] is False
    assert check_text(res) == "RuntimeError"
    assert not os.path.exists(tmp_path / "torch-oom") or not any(
        f.endswith(".so") for _, _, fs in os.walk(tmp_path / "torch-oom") for f in fs)


def test_the_cache_survives_what_users_do(tmp_path):
    """CXX with arguments builds; a warm cache needs no compiler; a cached
    library that is garbage is built again; an unwritable cache builds for
    the process alone. Each time the OOM is torch's."""
    res = run(tmp_path, CXX="g++ -O0")
    assert res["warned"] == [] and check_text(res) == "torch.OutOfMemoryError"
    (built,) = os.listdir(tmp_path / "torch-oom")
    lib = tmp_path / "torch-oom" / built / "libcca_torch_oom.so"
    assert os.stat(lib).st_mode & 0o755 == 0o755, oct(os.stat(lib).st_mode)   # others sharing the cache load it
    res = run(tmp_path, CXX=str(tmp_path / "no-such-c++"))    # warm: nothing to build
    assert res["warned"] == [] and check_text(res) == "torch.OutOfMemoryError"
    lib.write_bytes(b"not a library")
    res = run(tmp_path)
    assert res["warned"] == [] and check_text(res) == "torch.OutOfMemoryError"
    assert lib.read_bytes()[:4] == b"\x7fELF", "the broken entry was replaced"
    lib.write_bytes(b"not a library")
    res = run(tmp_path, CXX=str(tmp_path / "no-such-c++"))
    assert len(res["warned"]) == 1 and "does not load" in res["warned"][0] and "no C++ compiler" in res["warned"][0]
    assert check_text(res) == "RuntimeError"
    ro = tmp_path / "ro"
    ro.write_text("a file, not a folder")                    # nothing can be made under it
    res = run(ro)
    assert res["warned"] == [] and check_text(res) == "torch.OutOfMemoryError"
