#!/usr/bin/env bash
# Builds cca against the simulated device and runs every test suite.
# Usage: scripts/test.sh [build-dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
dir=${1:-build}
[ -f "$dir/build.ninja" ] || meson setup "$dir" -Ddevice=sim
ninja -C "$dir"
meson test -C "$dir" --print-errorlogs --verbose --num-processes 2
