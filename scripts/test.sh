#!/usr/bin/env bash
# Builds cca against the simulated device and runs every test suite: the C
# suites with meson, then the Python package's with pytest.
# Usage: scripts/test.sh [build-dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
dir=${1:-build}
[ -f "$dir/build.ninja" ] || meson setup "$dir" -Ddevice=sim
ninja -C "$dir"
meson test -C "$dir" --print-errorlogs --verbose --num-processes 2
# The Python package against the simulated build: pytest from the package
# registry, in a virtual environment inside the build folder.
venv="$dir/pyenv"
[ -x "$venv/bin/pytest" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q pytest; }
CCA_LIBRARY="$PWD/$dir/allocator/libcca.so" PYTHONPATH="$PWD/python" "$venv/bin/pytest" -rs python/tests
