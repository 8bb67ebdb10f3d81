#!/usr/bin/env bash
# Builds cca against the simulated device and runs every test suite: the C
# suites with meson, the Python package's with pytest, then the frameworks
# tier - real torch on the simulated device (scripts/torch-sim), for each
# torch in scripts/torch-sim.lock. Where the tier's environment cannot be
# made (no network for its first download) it is skipped, saying why,
# unless CCA_REQUIRE_TORCH_SIM=1 (CI), which makes that a failure.
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
# The frameworks tier, for each torch version the lock file names.
for t in $(sed -n 's/^torch==//p' scripts/torch-sim.lock); do
    echo "frameworks tier: torch $t"
    rc=0
    scripts/torch-sim --torch "$t" pytest -q -rs -p no:cacheprovider python/tests/frameworks || rc=$?
    if [ "$rc" = 77 ]; then
        [ "${CCA_REQUIRE_TORCH_SIM:-0}" = 1 ] && { echo "frameworks tier (torch $t): its environment could not be made" >&2; exit 1; }
        echo "frameworks tier (torch $t): skipped (the line above says why)"
    elif [ "$rc" != 0 ]; then
        exit "$rc"
    fi
done
