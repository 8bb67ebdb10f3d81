#!/usr/bin/env bash
# The whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer
# (any report fails: -fno-sanitize-recover=all, leak checks in test bodies),
# then the plain stress programs under ThreadSanitizer (Criterion cannot
# start under TSan).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
flags=-fno-sanitize-recover=all
[ -f build-asan/build.ninja ] || meson setup build-asan -Ddevice=sim -Dbuildtype=debug \
    -Db_sanitize=address,undefined -Dc_args=$flags -Dcpp_args=$flags -Dc_link_args=$flags -Dcpp_link_args=$flags
ninja -C build-asan
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    meson test -C build-asan --print-errorlogs --verbose --num-processes 2 --timeout-multiplier 4
[ -f build-tsan/build.ninja ] || meson setup build-tsan -Ddevice=sim -Dbuildtype=debugoptimized -Db_sanitize=thread
ninja -C build-tsan
TSAN_OPTIONS=halt_on_error=1 meson test -C build-tsan --print-errorlogs --verbose --suite tsan --timeout-multiplier 4
