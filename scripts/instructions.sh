#!/usr/bin/env bash
# Instructions per free, counted with callgrind inside cca_free (inclusive),
# and per alloc+free pair through dlopen'ed libraries (libcca, the hooks):
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
count() {   # variant -> instructions inside cca_free per free: (Ir(2N) - Ir(N)) / N, one-time costs cancel
    for m in "$n" "$((2 * n))"; do
        valgrind --tool=callgrind --toggle-collect=cca_free --callgrind-out-file="$tmp/out.$m" \
            "$dir/bench/cca-bench" --alloc cca:default --count-xfree "$1" --count "$m" >/dev/null 2>"$tmp/err" ||
            { cat "$tmp/err" >&2; exit 1; }
    done
    awk -v a="$(awk '/^summary:/ { print $2 }' "$tmp/out.$n")" -v b="$(awk '/^summary:/ { print $2 }' "$tmp/out.$((2 * n))")" \
        -v n="$n" 'BEGIN { printf "%.1f", (b - a) / n }'
}
same=$(count same-thread)
cross=$(count cross-thread)
exited=$(count cross-thread-1000-exited)
printf 'instructions per cca_free (callgrind, %s frees of 4 KiB, cca:default, release build)\n' "$n"
printf '  same-thread               %8s\n' "$same"
printf '  cross-thread              %8s   %.2fx same-thread (goal <= 1.5x)\n' "$cross" "$(awk -v a="$cross" -v b="$same" 'BEGIN{print a/b}')"
printf '  cross-thread, 1000 exited %8s   %.2fx cross-thread (goal <= 1.2x)\n' "$exited" "$(awk -v a="$exited" -v b="$cross" 'BEGIN{print a/b}')"

# The hot path through shared libraries loaded with dlopen, as frameworks
# load them: cca_malloc/cca_free from libcca.so against
# cca_torch_malloc/cca_torch_free from libcca_hooks.so (goal: at most 30
# instructions more per pair).
tdir=build-instr-sim
[ -f "$tdir/build.ninja" ] || meson setup "$tdir" -Ddevice=sim -Dbuildtype=release -Dtests=disabled >/dev/null
ninja -C "$tdir" allocator/libcca.so.0.1.0 hooks/libcca_hooks.so bench/hotpath_dlopen >/dev/null
pairs() {   # lib sizes mode -> instructions per pair
    for m in 1000 21000; do
        valgrind --tool=callgrind --callgrind-out-file="$tmp/p.$m" "$tdir/bench/hotpath_dlopen" "$PWD/$1" "$m" "$2" "$3" \
            >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
    done
    awk -v a="$(awk '/^summary:/ { print $2 }' "$tmp/p.1000")" -v b="$(awk '/^summary:/ { print $2 }' "$tmp/p.21000")" \
        'BEGIN { printf "%.0f", (b - a) / 20000 }'
}
printf '\ninstructions per alloc+free pair through dlopen (callgrind, release build)\n'
for sizes in one twelve; do
    c=$(pairs "$tdir/allocator/libcca.so" "$sizes" cca)
    h=$(pairs "$tdir/hooks/libcca_hooks.so" "$sizes" hooks)
    printf '  %-6s sizes: cca_malloc+cca_free %5s, cca_torch_malloc+cca_torch_free %5s (+%s; goal <= 30)\n' \
        "$sizes" "$c" "$h" "$((h - c))"
done

# The general path, in-process (static build): (Ir(2N) - Ir(N)) / N after a
# warm-up (cca-bench's instructions scenario), for cca's configurations and CUB with bins for every size.
# Goals there: <= 500 per 12-size pair, <= 600 per mixed step (one free +
# one allocation).
ninja -C "$dir" bench/cca-bench >/dev/null
printf '\n'
"$dir/bench/cca-bench" --scenario instructions --count "$n" --alloc cca:default --alloc cca:lean --alloc cub-all |
    sed -n '/== instructions/,/^$/p'
