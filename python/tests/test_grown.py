"""The package against a library whose public structs all grew by a field
(tests/grown/: libcca_grown.so, built with one field appended to every
growable struct's field list): the package builds its structures from the
library's own layouts and makes only _sized calls, so the same program
gives the same figures against both libraries, and shows the new field
where a struct's fields are shown whole. Each run is a fresh process."""
import json
import os
import subprocess
import sys

import pytest

from conftest import BUILD, SIM

GROWN = os.environ.get("CCA_GROWN_LIBRARY") or (os.path.join(BUILD, "tests", "grown", "libcca_grown.so") if BUILD else "")

PROGRAM = r'''
import ctypes, json, sys
import cca
from cca import _lib

sim = ctypes.CDLL(sys.argv[1])
sim.cca_sim_set_capacity.argtypes = [ctypes.c_int, ctypes.c_size_t]
sim.cca_sim_set_capacity(0, 1 << 30)
MiB = 1 << 20
lib = _lib.lib()
cca.configure("max_split_size_mb:64,memory_limit_mb:200")
cca.record_history(True, device=0)
a = ctypes.c_void_p()
assert lib.cca_default(0, ctypes.byref(a)) == 0


def malloc(n):
    p = ctypes.c_void_p()
    s = lib.cca_malloc(a, ctypes.byref(p), n, None)
    return p.value if s == 0 else cca._lib.lib().cca_status_string(s).decode()


out = {}
with cca.profile(device=0, report=False) as prof:
    ptrs = [malloc(n) for n in (1000, 5 * MiB, 3 * MiB + 100, 80 * MiB)]
    assert lib.cca_free(a, ctypes.c_void_p(ptrs[1])) == 0
    assert malloc(150 * MiB) == "CCA_ERROR_OUT_OF_MEMORY"   # over the 200 MiB cap
base = min(s["address"] for s in cca.memory_snapshot())


def rel(x):
    if isinstance(x, dict):
        return {k: (x[k] - base if k in ("address", "addr") and x[k] else rel(x[k])) for k in sorted(x)
                if k not in ("time_us", "host_bytes")}
    if isinstance(x, list):
        return [rel(v) for v in x]
    return x


r = cca.last_oom(0)
out["oom"] = {n: getattr(r, n) for n in type(r._raw)._cca_fields if n != "stream"}
out["oom_text"] = str(r)
out["stats"] = rel(cca.memory_stats(0))
out["nested"] = rel(cca.memory_stats_as_nested_dict(0))
out["frag"] = rel(cca.fragmentation(0))
out["snapshot"] = rel(cca.memory_snapshot())
out["history"] = rel(cca.history(0))
out["profile"] = rel({k: v for k, v in vars(prof.result).items() if k not in ("wall_s", "children")})
out["summary"] = cca.memory_summary(0)
out["config"] = rel(cca.snapshots.allocator_settings())
out["sizes"] = {n: ctypes.sizeof(_lib.struct(n)) for n in ("cca_config_t", "cca_stats_t", "cca_frag_t",
                "cca_segment_info_t", "cca_block_info_t", "cca_oom_report_t", "cca_scope_result_t", "cca_history_entry_t",
                "cca_notice_t")}
for p in ptrs:
    if isinstance(p, int) and p != ptrs[1]:
        assert lib.cca_free(a, ctypes.c_void_p(p)) == 0
cca.check(0)
print(json.dumps(out, sort_keys=True, default=str))
'''


def _run(library):
    env = {k: v for k, v in os.environ.items() if k != "CCA_CONF"}
    env.update(CCA_LIBRARY=library, CCA_SIM_LIBRARY=SIM)
    p = subprocess.run([sys.executable, "-c", PROGRAM, SIM], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)


def _without_grown(x):
    if isinstance(x, dict):
        return {k: _without_grown(v) for k, v in x.items() if "grown_by_test_" not in k}
    if isinstance(x, list):
        return [_without_grown(v) for v in x]
    return x


@pytest.mark.skipif(not GROWN or not os.path.exists(GROWN), reason="libcca_grown.so (tests/grown) is not built: skipped")
def test_the_package_gives_the_same_figures_against_grown_structs():
    from conftest import LIB
    ref, grown = _run(LIB), _run(GROWN)
    for name, n in ref["sizes"].items():
        assert grown["sizes"][name] > n, "%s did not grow in libcca_grown.so" % name
    assert "grown_by_test_" in grown["oom"] and "grown_by_test_" not in ref["oom"], "the report shows every field"
    assert "grown_by_test_" in grown["frag"], "the fragmentation figures show every field"
    assert ref["oom"]["verdict"] == "cap" and ref["oom"]["requested"] == 150 << 20
    assert ref["stats"]["allocated_bytes.all.current"] == 1024 + (3 << 20) + 512 + (80 << 20)
    assert [e["action"] for e in ref["history"]].count("oom") == 1
    assert _without_grown(grown) == _without_grown(ref) | {"sizes": _without_grown(grown)["sizes"]}
