#!/usr/bin/env python3
"""test_function_length.py - no function in allocator/ or stats/ runs over
60 lines, signature and braces included (issue: one concern per function).
A function is found the way this tree writes one: its body opens with "{"
in column 0 after a signature that starts in column 0; it ends at the next
"}" in column 0. Initializers ("= {", "struct x {") are not functions.
Prints every function over the limit with its file, line and length.
usage: test_function_length.py SRCDIR [LIMIT]"""
import glob
import os
import sys


def functions(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        if not line.startswith("{"):
            continue
        j = i - 1
        while j > 0 and lines[j][:1] in (" ", "\t"):
            j -= 1                                     # the signature's first line
        sig = " ".join(lines[j:i])
        if "=" in sig.split("(")[0] or not sig.rstrip().endswith(")") or sig.startswith(("struct", "typedef", "#")):
            continue
        k = i + 1
        while k < len(lines) and not lines[k].startswith("}"):
            k += 1
        yield j + 1, sig.split("(")[0].split()[-1].lstrip("*"), k - j + 1


def main(argv):
    src, limit = argv[1], int(argv[2]) if len(argv) > 2 else 60
    files = sorted(f for d in ("allocator", "stats") for ext in ("c", "h", "inc")
                   for f in glob.glob(os.path.join(src, d, "*." + ext)))
    if not files:
        print("FAIL no sources under %s/allocator or %s/stats" % (src, src))
        return 1
    over, n = [], 0
    for f in files:
        for line, name, length in functions(f):
            n += 1
            if length > limit:
                over.append("%s:%d: %s is %d lines" % (os.path.relpath(f, src), line, name, length))
    for o in over:
        print("FAIL " + o)
    print("%s %d functions in %d files, %d over %d lines" % ("ok  " if not over else "FAIL", n, len(files), len(over),
                                                            limit))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
