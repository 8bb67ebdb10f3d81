"""cca installed as a PyTorch user installs it: `pip install .` in a fresh
virtual environment that holds only the NVIDIA runtime wheel torch pins
(no CUDA toolkit), from the tier's wheelhouse with --no-index (pip looks
nowhere else for packages), with CUDA_PATH unset; the isolated build gets
the runtime wheels (nvidia-cuda-runtime, nvidia-cuda-crt) as build
requirements and, with -Dcudart_root=wheel, reads no header but theirs,
the system's C library's and the compiler's (checked on the build's own
dependency record: a toolkit in /usr/local would show). Then, in that
environment and without the simulator (the real libcudart of the wheel,
on a machine with no driver):

- the installed libraries name the runtime by soname only, and no path of
  the build machine (NEEDED, RUNPATH/RPATH);
- every cca call, C and Python, the first of its process included, says
  "no CUDA driver or GPU found" with status CCA_ERROR_CUDA (empty_cache,
  with nothing cached, does nothing, as torch's does before CUDA starts);
- a process that cannot find the runtime at all is told so in one sentence.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
WHEELS = os.environ.get("CCA_TORCH_SIM_WHEELS", "")
NO_DRIVER = "no CUDA driver or GPU found"


def _plain_env(**extra):
    """The environment of a user's shell: no simulator preloaded, no stand-ins, no CUDA_PATH."""
    drop = ("LD_PRELOAD", "LD_LIBRARY_PATH", "CUDA_PATH", "CUDA_HOME", "CCA_LIBRARY", "CCA_HOOKS_LIBRARY",
            "PYTHONPATH", "VIRTUAL_ENV", "CCA_CONF", "PYTORCH_CUDA_ALLOC_CONF")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    if not WHEELS or not os.path.isdir(WHEELS):
        pytest.fail("CCA_TORCH_SIM_WHEELS (the tier's wheelhouse, made by scripts/torch-sim) is missing")
    tmp = tmp_path_factory.mktemp("fresh")
    venv = str(tmp / "venv")
    base = getattr(sys, "_base_executable", sys.executable)
    r = subprocess.run([base, "-m", "venv", venv], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    py = os.path.join(venv, "bin", "python")
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index", "--find-links", WHEELS]
    r = subprocess.run(pip + ["nvidia-cuda-runtime"], capture_output=True, text=True, timeout=600, env=_plain_env())
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run(pip + ["-Cbuild-dir=" + str(tmp / "build"), ROOT], capture_output=True, text=True,
                       timeout=900, env=_plain_env(), cwd=str(tmp))
    log = r.stdout + r.stderr
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True).stdout.strip()
    return {"python": py, "site": site, "pip_rc": r.returncode, "pip_log": log, "tmp": str(tmp)}


def test_pip_install_needs_only_the_runtime_wheel(fresh):
    assert fresh["pip_rc"] == 0, "pip install . failed with only the NVIDIA runtime wheel:\n" + fresh["pip_log"][-4000:]
    pkg = os.path.join(fresh["site"], "cca")
    assert {"libcca.so", "libcca_hooks.so", "cca_torch_oom.cpp", "_core.py", "memory.py"} <= set(os.listdir(pkg))


def test_the_build_read_no_cuda_header_but_the_wheels(fresh):
    assert fresh["pip_rc"] == 0, fresh["pip_log"][-2000:]
    ninja = shutil.which("ninja")
    if ninja is None:
        pytest.fail("ninja is not on PATH (scripts/install-deps.sh installs it)")
    build = os.path.join(fresh["tmp"], "build")
    out = subprocess.run([ninja, "-C", build, "-t", "deps"], capture_output=True, text=True, check=True).stdout
    headers = {ln.strip() for ln in out.split("\n") if ln.startswith("    ")}
    assert any("/site-packages/nvidia/cu13/include/cuda_runtime_api.h" in h for h in headers), sorted(headers)[:20]
    allowed = ("/usr/include/", "/usr/lib/gcc/", ROOT + "/", build + "/")
    foreign = sorted(h for h in headers
                     if not (h.startswith(allowed) or "/site-packages/nvidia/cu13/include/" in h
                             or not os.path.isabs(h)))
    assert foreign == [], "headers from outside the wheels, libc and the compiler"


def _dynamic(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    entries = {}
    for m in re.finditer(r"\((NEEDED|RUNPATH|RPATH)\)\s+[^\[]*\[([^\]]*)\]", out):
        entries.setdefault(m.group(1), []).append(m.group(2))
    return entries


def test_installed_libraries_name_no_build_machine_path(fresh):
    assert fresh["pip_rc"] == 0, fresh["pip_log"][-2000:]
    pkg = os.path.join(fresh["site"], "cca")
    libs = sorted(f for f in os.listdir(pkg) if f.endswith(".so"))
    assert libs == ["libcca.so", "libcca_hooks.so", "libcca_replay.so"]
    seen = {}
    for lib in libs:
        d = _dynamic(os.path.join(pkg, lib))
        seen[lib] = d
        assert all("/" not in n for n in d.get("NEEDED", [])), (lib, d)
        paths = [p for entry in d.get("RUNPATH", []) + d.get("RPATH", []) for p in entry.split(":")]
        assert all(p == "$ORIGIN" for p in paths), (lib, paths)
        relocs = subprocess.run(["readelf", "-rW", os.path.join(pkg, lib)], capture_output=True, text=True).stdout
        assert "TLSDESC" not in relocs, lib + ": TLS descriptors (glibc bug 31372: docs/design.md)"
    assert "libcudart.so.13" in seen["libcca.so"]["NEEDED"], "libcca names the runtime by soname"
    assert "RUNPATH" not in seen["libcca.so"] and "RPATH" not in seen["libcca.so"]
    # the replay engine carries its own allocator and simulated device: no CUDA runtime at all
    assert not any("cudart" in n for n in seen["libcca_replay.so"].get("NEEDED", [])), seen["libcca_replay.so"]


PROBE = r"""
import ctypes, json, sys
import cca
from cca import _lib
out = {}
def call(name, fn):
    try:
        out[name] = ["ok", repr(fn())]
    except Exception as e:
        out[name] = [type(e).__name__, getattr(e, "status", None), str(e)]
# the first cca call of this process (a thread's first error text is whole)
call("memory_stats", cca.memory_stats)
for name in ("memory_allocated", "max_memory_reserved", "memory_summary", "memory_snapshot", "fragmentation",
             "last_oom", "reset_peak_memory_stats", "snapshot", "history", "empty_cache", "check", "expandable_stats",
             "get_per_process_memory_fraction", "memory_stats_as_nested_dict"):
    call(name, getattr(cca, name))
call("mem_get_info(0)", lambda: cca.mem_get_info(0))
call("memory_allocated(0)", lambda: cca.memory_allocated(0))
lib = _lib.lib()
a = ctypes.c_void_p()
st = lib.cca_default(0, ctypes.byref(a))
out["C cca_default"] = [lib.cca_status_string(st).decode(), _lib.error_text()]
d = ctypes.c_int(-1)
st = lib.cca_current_device(ctypes.byref(d))
out["C cca_current_device"] = [lib.cca_status_string(st).decode(), _lib.error_text()]
f, t = ctypes.c_size_t(), ctypes.c_size_t()
st = lib.cca_mem_get_info(0, ctypes.byref(f), ctypes.byref(t))
out["C cca_mem_get_info"] = [lib.cca_status_string(st).decode(), _lib.error_text()]
out["runtime"] = [l for l in open("/proc/self/maps").read().split("\n") if "libcudart" in l][:1]
print(json.dumps(out))
"""


def _driver_present(python):
    code = ("import ctypes\ntry:\n    ok = ctypes.CDLL('libcuda.so.1').cuInit(0) == 0\nexcept OSError:\n"
            "    ok = False\nprint(int(ok))")
    r = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120, env=_plain_env())
    return r.stdout.strip() == "1"


def test_without_a_driver_every_call_says_so(fresh):
    assert fresh["pip_rc"] == 0, fresh["pip_log"][-2000:]
    if _driver_present(fresh["python"]):
        pytest.skip("this machine has a working CUDA driver: the no-driver answers cannot be seen here")
    r = subprocess.run([fresh["python"], "-c", PROBE], capture_output=True, text=True, timeout=300,
                       env=_plain_env(), cwd=fresh["tmp"])
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    runtime = out.pop("runtime")
    assert runtime and "nvidia/cu13/lib/libcudart.so.13" in runtime[0], runtime
    bad = {}
    for name, res in out.items():
        if name == "empty_cache":                     # as torch's before CUDA starts: nothing cached, nothing to do
            ok = res == ["ok", "None"]
        elif name.startswith("C "):
            ok = res[0] == "CCA_ERROR_CUDA" and res[1].startswith(NO_DRIVER)
        else:
            ok = res[0] == "CcaError" and res[1] == "CCA_ERROR_CUDA" and NO_DRIVER in res[2]
        if not ok:
            bad[name] = res
    assert bad == {}


def test_without_a_runtime_one_sentence(fresh, tmp_path):
    """libcca whose runtime is nowhere (a libcca that needs libcudart.so.99,
    built here like the real one, by soname, on a stub): the package says
    in one sentence what it needs and where it looked."""
    assert fresh["pip_rc"] == 0, fresh["pip_log"][-2000:]
    stub_src = tmp_path / "stub.c"
    stub_src.write_text("int cudaGetDevice(int *d) { *d = 0; return 0; }\n")
    stub = tmp_path / "libcudart.so.99"
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libcudart.so.99", str(stub_src), "-o", str(stub)], check=True)
    src = tmp_path / "needs.c"
    src.write_text("int cudaGetDevice(int *);\nint cca_current_device(int *d) { return cudaGetDevice(d); }\n")
    lib = tmp_path / "libcca.so"
    subprocess.run(["cc", "-shared", "-fPIC", str(src), "-o", str(lib), "-L" + str(tmp_path), "-l:libcudart.so.99"],
                   check=True)
    os.unlink(stub)
    code = "import cca\ntry:\n    cca.memory_allocated()\nexcept OSError as e:\n    print(type(e).__name__); print(e)\n"
    r = subprocess.run([fresh["python"], "-c", code], capture_output=True, text=True, timeout=300,
                       env=_plain_env(CCA_LIBRARY=str(lib), CUDA_PATH=str(tmp_path / "nowhere")), cwd=fresh["tmp"])
    assert r.returncode == 0, r.stderr
    kind, text = r.stdout.strip().split("\n", 1)
    assert kind == "RuntimeNotFoundError"
    assert text.startswith("cca: no CUDA runtime found: libcca needs libcudart.so.99, ")
    assert "\n" not in text and text.count(". ") == 0, text
    assert "pip install nvidia-cuda-runtime" in text


def test_a_runtime_of_another_version_is_refused_in_one_sentence(fresh, tmp_path):
    """A process that already holds libcudart.so.12 (a CUDA 12 torch's):
    loading cca's libcudart.so.13 beside it would make two runtimes."""
    assert fresh["pip_rc"] == 0, fresh["pip_log"][-2000:]
    src = tmp_path / "old.c"
    src.write_text("int cudaGetDevice(int *d) { *d = 0; return 0; }\n")
    old = tmp_path / "libcudart.so.12"
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libcudart.so.12", str(src), "-o", str(old)], check=True)
    code = ("import ctypes, cca\nctypes.CDLL(%r)\ntry:\n    cca.memory_allocated()\nexcept OSError as e:\n"
            "    print(type(e).__name__); print(e)\n" % str(old))
    r = subprocess.run([fresh["python"], "-c", code], capture_output=True, text=True, timeout=300, env=_plain_env(),
                       cwd=fresh["tmp"])
    assert r.returncode == 0, r.stderr
    kind, text = r.stdout.strip().split("\n", 1)
    assert kind == "RuntimeNotFoundError"
    assert text.startswith("cca: this process's CUDA runtime is libcudart.so.12 (torch's, or a program's) and this "
                           "cca was built for libcudart.so.13, which would be a second runtime: reinstall cca"), text
    assert "\n" not in text
