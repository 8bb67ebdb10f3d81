#!/usr/bin/env bash
# The main job: builds cca-bench (optimized, on the simulated device unless
# -Ddevice=cuda is given) and runs the default scenarios, printing the table.
# Usage: scripts/bench.sh [cca-bench options]   e.g. --quick, --json out.json
#        CCA_BENCH_DEVICE=cuda scripts/bench.sh   (on a machine with a GPU)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
device=${CCA_BENCH_DEVICE:-sim}
dir=build-bench-$device
[ -f "$dir/build.ninja" ] || meson setup "$dir" -Ddevice="$device" -Dbuildtype=release -Dtests=disabled >/dev/null
ninja -C "$dir" bench/cca-bench >/dev/null
exec "$dir/bench/cca-bench" "$@"
