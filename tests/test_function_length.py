#!/usr/bin/env python3
"""test_function_length.py - no function in allocator/ or stats/ runs over
60 lines, from its signature's first line to its closing brace.
Comments, strings and preprocessor lines are blanked first; a function is
a "{" at brace depth 0 whose preceding text ends in ")" (attributes after
it allowed), not after "=" (an initializer), ending at its matching "}".
It is named by the last identifier before its parameter list that is not
__attribute__. Prints every function over the limit with its file, line
and length.
usage: test_function_length.py SRCDIR [LIMIT] [--expect N]
(--expect N: pass only when exactly N functions are over the limit; the
fixture test checks the checker itself)"""
import glob
import os
import re
import sys


def blank(text):
    """text with comments, string and character literals and preprocessor
    lines replaced by spaces (newlines kept, so line numbers stay)."""
    out, i, n = [], 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and text[i:].lstrip(" \t").startswith("#"):
            j = i
            while j < n and (text[j] != "\n" or text[j - 1] == "\\"):
                j += 1
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j += 1
        else:
            out.append(c)
            at_line_start = c == "\n" or (at_line_start and c in " \t")
            i += 1
            continue
        out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
        at_line_start = False
        i = j
    return "".join(out)


def functions(path):
    text = blank(open(path, encoding="utf-8").read())
    depth, start, last_end = 0, None, 0
    for i, c in enumerate(text):
        if c in ";}" and depth == 0:
            last_end = i + 1                           # a declaration or a body ends: the next begins after
        if c == "{":
            if depth == 0:
                head = text[last_end:i]
                core = re.sub(r"__attribute__\s*\(\(.*?\)\)", " ", head, flags=re.S).strip()
                start = None
                if core.endswith(")") and "=" not in core.split("(")[0] and "(" in core:
                    names = [w for w in re.findall(r"[A-Za-z_]\w*", core.split("(")[0]) if w != "__attribute__"]
                    if names:
                        first = last_end + len(head) - len(head.lstrip())
                        start = (text.count("\n", 0, first) + 1, names[-1])
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if start:
                    end_line = text.count("\n", 0, i) + 1
                    yield start[0], start[1], end_line - start[0] + 1
                start = None
                last_end = i + 1


def main(argv):
    expect = None
    if "--expect" in argv:
        k = argv.index("--expect")
        expect = int(argv[k + 1])
        argv = argv[:k] + argv[k + 2:]
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
    if expect is not None:
        print("%s expected %d over the limit, found %d" % ("ok  " if len(over) == expect else "FAIL", expect, len(over)))
        return 0 if len(over) == expect else 1
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
