#!/usr/bin/env bash
# Builds cca against the simulated device and runs every test suite: the C
# suites with meson, the Python package's with pytest, then the frameworks
# tier - real torch on the simulated device (scripts/torch-sim), for each
# torch in scripts/torch-sim.lock. Where the tier's environment cannot be
# made (no network for its first download) it is skipped, saying why,
# unless CCA_REQUIRE_TORCH_SIM=1 (CI), which makes that a failure. It ends
# with what ran: tests run, passed, failed and skipped, and each skip's
# reason (scripts/test_summary.py); a suite that ran no test and says not
# why fails it.
# Usage: scripts/test.sh [build-dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
dir=${1:-build}
[ -f "$dir/build.ninja" ] || meson setup "$dir" -Ddevice=sim
ninja -C "$dir"
# Criterion names each skipped test and its reason at verbosity 1
CRITERION_VERBOSITY_LEVEL=1 meson test -C "$dir" --print-errorlogs --verbose --num-processes 2
# The Python package against the simulated build: pytest from the package
# registry, in a virtual environment inside the build folder.
venv="$dir/pyenv"
[ -x "$venv/bin/pytest" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q pytest; }
rm -f "$dir"/pytest-*.xml
CCA_LIBRARY="$PWD/$dir/allocator/libcca.so" PYTHONPATH="$PWD/python" "$venv/bin/pytest" -rs python/tests \
    --ignore=python/tests/frameworks --junitxml="$PWD/$dir/pytest-package.xml"   # the tier runs those below
# The frameworks tier, for each torch version the lock file names.
tier_skips=()
for t in $(sed -n 's/^torch==//p' scripts/torch-sim.lock); do
    echo "frameworks tier: torch $t"
    rc=0
    scripts/torch-sim --torch "$t" pytest -q -rs -p no:cacheprovider python/tests/frameworks \
        --junitxml="$PWD/$dir/pytest-tier-torch-$t.xml" || rc=$?
    if [ "$rc" = 77 ]; then
        [ "${CCA_REQUIRE_TORCH_SIM:-0}" = 1 ] && { echo "frameworks tier (torch $t): its environment could not be made" >&2; exit 1; }
        echo "frameworks tier (torch $t): skipped (the line above says why)"
        tier_skips+=("skip:frameworks tier (torch $t):its environment could not be made (see torch-sim's line above)")
    elif [ "$rc" != 0 ]; then
        exit "$rc"
    fi
done
python3 scripts/test_summary.py "$dir/meson-logs/testlog.json" "$dir"/pytest-*.xml "${tier_skips[@]}"
