#!/bin/sh
# The struct-growth test: old_program against the library as it is (REF)
# and against the library whose structs all grew (GROWN). Both must pass
# their own checks and print the same fields.
# Usage: compare.sh REF GROWN
set -u
ref=$("$1" 2>&1) || { echo "compare.sh: $1 failed:"; echo "$ref" | tail -5; exit 1; }
grown=$("$2" 2>&1) || { echo "compare.sh: $2 (the library with grown structs) failed:"; echo "$grown" | tail -5; exit 1; }
if [ "$ref" != "$grown" ]; then
    echo "compare.sh: the old fields differ between the library and the one with grown structs:"
    printf '%s\n' "$ref" > "${TMPDIR:-/tmp}/cca-grown-ref.$$"
    printf '%s\n' "$grown" | diff "${TMPDIR:-/tmp}/cca-grown-ref.$$" - | head -40
    rm -f "${TMPDIR:-/tmp}/cca-grown-ref.$$"
    exit 1
fi
printf '%s\n' "$grown" | tail -1
echo "compare.sh: $(printf '%s\n' "$ref" | grep -c ' = \|=$') fields the same against the grown library"
