"""The frameworks tier: real torch on the simulated device. These tests run
under scripts/torch-sim (scripts/torch-sim pytest python/tests/frameworks),
which sets CCA_TORCH_SIM_ENV; elsewhere they are skipped, saying so.

Each program runs in a process of its own (programs.py) once per session
and configuration; the tests compare what those runs wrote."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
IN_TIER = bool(os.environ.get("CCA_TORCH_SIM_ENV"))


def pytest_collection_modifyitems(config, items):
    if IN_TIER:
        return
    skip = pytest.mark.skip(reason="the frameworks tier runs under scripts/torch-sim "
                                   "(scripts/torch-sim pytest python/tests/frameworks)")
    for item in items:
        if os.path.dirname(str(item.fspath)) == HERE:
            item.add_marker(skip)


class Runs:
    def __init__(self, tmp):
        self.tmp = tmp
        self.done = {}

    def path(self, program, allocator, expandable=False, repeat=0, args=()):
        """The run's OUT.json (the mlp program records to OUT.json.csv beside it)."""
        return os.path.join(self.tmp, "%s-%s%s-%d%s.json" % (program, allocator, "-x" if expandable else "", repeat,
                                                             "".join(a.replace("--", "-").replace("=", "")
                                                                     for a in args)))

    def __call__(self, program, allocator, expandable=False, repeat=0, args=()):
        key = (program, allocator, expandable, repeat, tuple(args))
        if key not in self.done:
            out = self.path(program, allocator, expandable, repeat, args)
            cmd = [sys.executable, os.path.join(HERE, "programs.py"), program, allocator] + \
                  (["--expandable"] if expandable else []) + list(args) + [out]
            env = {k: v for k, v in os.environ.items() if k not in ("PYTORCH_CUDA_ALLOC_CONF", "CCA_CONF")}
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
            assert r.returncode == 0, "%s failed (%d):\n%s" % (" ".join(cmd[1:]), r.returncode, r.stderr[-4000:])
            with open(out) as fh:
                self.done[key] = json.load(fh)
        return self.done[key]


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    return Runs(str(tmp_path_factory.mktemp("frameworks")))
