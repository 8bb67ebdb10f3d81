#!/usr/bin/env bash
# The main job: builds cca-bench and everything its scenarios load
# (libcca, the hook library; optimized, on the simulated device unless
# CCA_BENCH_DEVICE=cuda) and runs the default scenarios, printing the tables.
# It runs in the caller's directory: --trace, --traces-dir and --json paths
# are the caller's (the default trace folder is ../shared/traces from there,
# else the one beside the source tree).
# Usage: scripts/bench.sh [cca-bench options]   e.g. --quick, --json out.json
#        CCA_BENCH_DEVICE=cuda scripts/bench.sh   (on a machine with a GPU)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
device=${CCA_BENCH_DEVICE:-sim}
dir="$root/build-bench-$device"
[ -f "$dir/build.ninja" ] || meson setup "$dir" "$root" -Ddevice="$device" -Dbuildtype=release -Dtests=disabled >/dev/null
ninja -C "$dir" >/dev/null                           # every target: cca-bench and the libraries it loads
exec "$dir/bench/cca-bench" "$@"
