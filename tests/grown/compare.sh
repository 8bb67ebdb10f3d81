#!/bin/sh
# The struct-growth test: old_program against the library as it is (REF)
# and against the library whose structs all grew (GROWN). Both must pass
# their own checks and print the same fields, and the grown library's
# structs must really be larger (its "layout NAME SIZE" lines), save those
# that never grow.
# Usage: compare.sh REF GROWN
set -u
ref=$("$1" 2>&1) || { echo "compare.sh: $1 failed:"; echo "$ref" | tail -5; exit 1; }
grown=$("$2" 2>&1) || { echo "compare.sh: $2 (the library with grown structs) failed:"; echo "$grown" | tail -5; exit 1; }
tmp=${TMPDIR:-/tmp}/cca-grown.$$
trap 'rm -f "$tmp".*' EXIT
printf '%s\n' "$ref" | grep -v '^layout ' > "$tmp.ref"
printf '%s\n' "$grown" | grep -v '^layout ' > "$tmp.grown"
if ! cmp -s "$tmp.ref" "$tmp.grown"; then
    echo "compare.sh: the old fields differ between the library and the one with grown structs:"
    diff "$tmp.ref" "$tmp.grown" | head -40
    exit 1
fi
printf '%s\n' "$ref" | grep '^layout ' > "$tmp.lref"
printf '%s\n' "$grown" | grep '^layout ' > "$tmp.lgrown"
bad=$(awk 'NR == FNR { size[$2] = $3; next }
           $2 == "cca_stat_t" || $2 == "cca_size_class_t" { if ($3 != size[$2]) print $2 " changed size"; next }
           !($2 in size) || $3 <= size[$2] { print $2 " did not grow (" size[$2] " -> " $3 ")" }' "$tmp.lref" "$tmp.lgrown")
n=$(wc -l < "$tmp.lgrown")
if [ -n "$bad" ] || [ "$n" -lt 2 ]; then
    echo "compare.sh: the grown library is not grown: ${bad:-no layouts printed}"
    exit 1
fi
tail -1 "$tmp.grown"
echo "compare.sh: $(grep -c ' = \|=$' "$tmp.ref") fields the same against the grown library ($((n - 2)) structs grown)"
