#!/bin/sh
# test_readme.sh - README stays a front door: at most 10,240 bytes, and its
# C example compiles against include/cca.h as it is (C17, warnings as errors);
# docs/ without history.md (the dated log) stays at most 60 KB (61,440 bytes).
# usage: test_readme.sh SRCDIR CUDA_INC "CC [args]"
set -u
src=$1; cuda=$2; cc=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
size=$(wc -c < "$src/README.md")
if [ "$size" -le 10240 ]; then echo "ok   README.md is $size bytes (at most 10240)"
else echo "FAIL README.md is $size bytes, more than 10240: move detail to docs/"; fail=1; fi
docs=$(cat $(ls "$src"/docs/*.md | grep -v '/history\.md$') | wc -c)
if [ "$docs" -le 61440 ]; then echo "ok   docs/ without history.md is $docs bytes (at most 61440)"
else echo "FAIL docs/ without history.md is $docs bytes, more than 61440: remove what is stale or said twice"; fail=$((fail + 1)); fi
# The first ```c block: its #include lines at file scope, the rest in a
# function that has the streams it names.
awk '/^```c$/ { on = 1; next } on && /^```$/ { exit } on { print }' "$src/README.md" > "$tmp/block"
{
    echo '#include <stdio.h>'
    grep '^#include' "$tmp/block"
    echo 'void readme_example(cudaStream_t stream, cudaStream_t other_stream);'
    echo 'void readme_example(cudaStream_t stream, cudaStream_t other_stream) {'
    grep -v '^#include' "$tmp/block"
    echo '}'
} > "$tmp/example.c"
if [ "$(wc -l < "$tmp/block")" -gt 5 ] &&
   $cc -std=c17 -Wall -Wextra -Werror -fsyntax-only -I"$src/include" -I"$cuda" "$tmp/example.c" 2> "$tmp/err"; then
    echo "ok   README's example compiles"
else
    echo "FAIL README's example does not compile:"; cat "$tmp/err" "$tmp/example.c"; fail=$((fail + 1))
fi
echo "$((3 - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
