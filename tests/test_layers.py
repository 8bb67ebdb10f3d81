#!/usr/bin/env python3
"""The layers, checked in the sources (the build checks them too: stats/
has only include/ and allocator/view/ on its include path).

- stats/ includes only system headers, its own stats_internal.h, the public
  headers (cca.h, cca_accounting.h), the core's view (cca_view.h) and the
  shared hash map (common/cca_u64map.h);
- allocator/ includes nothing of stats/ and names no function stats/
  defines but the one table the core takes from it (_cca_stats_ops), and
  its view/ folder holds cca_view.h alone;
- sim/ includes nothing of allocator/ or stats/; common/ (what every layer
  may include) includes system headers alone;
- one prefix scheme (allocator/internal.h): a function FILE.c defines is
  _cca_FILE_* if other files call it, FILE_* if static.

With --objects CORE_LIB STATS_LIB (the built libcca_core.a, libcca_stats.a)
the same is checked in the objects: no object of the core uses a symbol
stats/ defines but _cca_stats_ops (an include or a call the sources hide
from the scan above would show there).

Usage: test_layers.py SOURCE_ROOT [--objects CORE_LIB STATS_LIB]"""
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
DEFINED = re.compile(r'^[A-Za-z_][\w \*]*?\b(_cca_\w+)\s*\(', re.M)


def sources(folder, exts=(".c", ".h", ".inc")):
    for name in sorted(os.listdir(folder)):
        if name.endswith(exts):
            yield os.path.join(folder, name)


def includes(path):
    return INCLUDE.findall(open(path, encoding="utf-8").read())


EXTERN = re.compile(r'^(?!static)[A-Za-z_][\w \*]*?\b(_cca_\w+)\s*\(', re.M)
STATIC = re.compile(r'^static\b[\w \*]*?\b([a-z]\w*)\s*\(', re.M)


def prefixes(folder):
    bad = []
    for path in sources(folder, (".c",)):
        stem = os.path.basename(path)[:-2]
        text = open(path, encoding="utf-8").read()
        for name in EXTERN.findall(text):
            if name != "_cca_" + stem and not name.startswith("_cca_%s_" % stem):
                bad.append("%s defines %s: its functions are _cca_%s_*" % (path, name, stem))
        for name in STATIC.findall(text):
            if not name.startswith(stem + "_"):
                bad.append("%s: static %s: its statics are %s_*" % (path, name, stem))
    return bad


def nm(*args):
    return subprocess.run(["nm", "--format=posix"] + list(args), capture_output=True, text=True, check=True).stdout


def objects(core_lib, stats_lib):
    """The core's objects' undefined symbols that stats/ defines."""
    defined = {line.split()[0] for line in nm("--defined-only", stats_lib).splitlines()
               if len(line.split()) >= 2 and line.split()[1] in "TDBRC"}
    bad, n = [], 0
    for line in nm("-A", "-u", core_lib).splitlines():
        member, _, rest = line.partition("]: ")
        if "libcca_stats.a.p" in member or not rest:
            continue
        n += 1
        sym = rest.split()[0]
        if sym in defined and sym != "_cca_stats_ops":
            bad.append("%s uses %s, which stats/ defines: the core tells stats/ only through _cca_stats_ops"
                       % (member.rsplit("/", 1)[-1], sym))
    if not defined or not n:
        bad.append("nm found no symbols in %s or %s: the checker is broken" % (core_lib, stats_lib))
    return bad


def main():
    root = sys.argv[1]
    bad = []
    if len(sys.argv) == 5 and sys.argv[2] == "--objects":
        bad += objects(sys.argv[3], sys.argv[4])
    stats, alloc, sim = (os.path.join(root, d) for d in ("stats", "allocator", "sim"))
    allowed = {"stats_internal.h", "cca.h", "cca_accounting.h", "cca_view.h", "cca_u64map.h"}
    for path in sources(stats):
        for kind, name in includes(path):
            if kind == '"' and name not in allowed:
                bad.append("%s includes \"%s\": stats/ sees the core only through cca_view.h" % (path, name))
    stats_defined = set()
    for path in sources(stats, (".c",)):
        stats_defined |= set(DEFINED.findall(open(path, encoding="utf-8").read()))
    for path in sources(alloc):
        text = open(path, encoding="utf-8").read()
        for kind, name in includes(path):
            if "stats" in name:
                bad.append("%s includes \"%s\": the core never calls stats/" % (path, name))
        for name in sorted(stats_defined):
            if re.search(r"\b%s\b" % name, text):
                bad.append("%s names %s, which stats/ defines: the core tells stats/ only through _cca_stats_ops"
                           % (path, name))
    view = sorted(os.listdir(os.path.join(alloc, "view")))
    if view != ["cca_view.h"]:
        bad.append("allocator/view/ holds %s: only cca_view.h (stats/ sees all of that folder)" % view)
    for path in sources(sim):
        for kind, name in includes(path):
            if kind == '"' and (name in ("internal.h", "types.h", "core.h", "cca_view.h") or "stats" in name):
                bad.append("%s includes \"%s\": the simulated device knows no allocator" % (path, name))
    for path in sources(os.path.join(root, "common")):
        for kind, name in includes(path):
            if kind == '"':
                bad.append("%s includes \"%s\": common/ may use only the C library" % (path, name))
    bad += prefixes(alloc) + prefixes(stats)
    if not stats_defined:
        bad.append("no functions found in stats/: the checker is broken")
    for line in bad:
        print("FAIL " + line)
    print("%d stats/ functions, %d violations" % (len(stats_defined), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
