"""The build says in one sentence when it finds no CUDA runtime to build
against (meson setup, as pip install . runs it)."""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.skipif(shutil.which("meson") is None, reason="meson is not on PATH")
def test_no_cuda_runtime_is_one_sentence(tmp_path):
    r = subprocess.run(["meson", "setup", str(tmp_path / "b"), ROOT, "-Ddevice=cuda", "-Dtests=disabled",
                        "-Dbench=disabled", "-Dcudart_root=" + str(tmp_path / "nowhere")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    line = [ln for ln in (r.stdout + r.stderr).split("\n") if "ERROR:" in ln]
    assert len(line) == 1, r.stdout[-2000:]
    msg = line[0].split("ERROR: ", 1)[1]
    assert msg == ("Problem encountered: no CUDA runtime headers found (cuda_runtime_api.h and crt/host_defines.h; "
                   "looked in: %s): install the NVIDIA runtime wheels (pip install nvidia-cuda-runtime "
                   "nvidia-cuda-crt) or a CUDA toolkit, or set CUDA_PATH" % (tmp_path / "nowhere"))
