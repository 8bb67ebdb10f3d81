#!/usr/bin/env bash
# Instructions per free, counted with callgrind inside cca_free (inclusive):
# a free by the allocating thread, by another thread, and by another thread
# after 1,000 threads used cudaStreamPerThread and exited. Instruction
# counts stay the same run after run on these shared machines, where
# nanoseconds do not. Usage: scripts/instructions.sh [N]   (default 20000)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind >/dev/null; }
n=${1:-20000}
dir=build-bench-sim
[ -f "$dir/build.ninja" ] || meson setup "$dir" -Ddevice=sim -Dbuildtype=release -Dtests=disabled >/dev/null
ninja -C "$dir" bench/cca-bench >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() {   # variant -> instructions inside cca_free per free
    valgrind --tool=callgrind --toggle-collect=cca_free --callgrind-out-file="$tmp/out" \
        "$dir/bench/cca-bench" --alloc cca:default --count-xfree "$1" --count "$n" >/dev/null 2>"$tmp/err" ||
        { cat "$tmp/err" >&2; exit 1; }
    ir=$(awk '/^summary:/ { print $2 }' "$tmp/out")
    awk -v ir="$ir" -v n="$n" 'BEGIN { printf "%.1f", ir / n }'
}
same=$(count same-thread)
cross=$(count cross-thread)
exited=$(count cross-thread-1000-exited)
printf 'instructions per cca_free (callgrind, %s frees of 4 KiB, cca:default, release build)\n' "$n"
printf '  same-thread               %8s\n' "$same"
printf '  cross-thread              %8s   %.2fx same-thread (goal <= 1.5x)\n' "$cross" "$(awk -v a="$cross" -v b="$same" 'BEGIN{print a/b}')"
printf '  cross-thread, 1000 exited %8s   %.2fx cross-thread (goal <= 1.2x)\n' "$exited" "$(awk -v a="$exited" -v b="$cross" 'BEGIN{print a/b}')"
