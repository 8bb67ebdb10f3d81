#!/bin/sh
# test_headers.sh - each public header compiles on its own, as C17 and as
# C++17, with nothing but -Iinclude and the CUDA include directory.
# usage: test_headers.sh SRCDIR CUDA_INC "CC [args]" "CXX [args]" HEADER...
# (CXX may be empty: the C++ half is then skipped)
set -u
src=$1; cuda=$2; cc=$3; cxx=$4; shift 4
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
for h in "$@"; do
    printf '#include <%s>\nint cca_header_test_dummy;\n' "$h" > "$tmp/t.c"
    if $cc -std=c17 -Wall -Wextra -Werror -fsyntax-only -I"$src/include" -I"$cuda" "$tmp/t.c" 2> "$tmp/err"; then
        echo "ok   $h as C17"
    else
        echo "FAIL $h as C17:"; cat "$tmp/err"; fail=$((fail + 1))
    fi
    n=$((n + 1))
    if [ -n "$cxx" ]; then
        cp "$tmp/t.c" "$tmp/t.cpp"
        if $cxx -std=c++17 -Wall -Wextra -Werror -fsyntax-only -I"$src/include" -I"$cuda" "$tmp/t.cpp" 2> "$tmp/err"; then
            echo "ok   $h as C++17"
        else
            echo "FAIL $h as C++17:"; cat "$tmp/err"; fail=$((fail + 1))
        fi
        n=$((n + 1))
    else
        echo "skip $h as C++17 (no C++ compiler)"
    fi
done
echo "$((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
