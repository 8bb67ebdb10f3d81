#!/usr/bin/env python3
"""Writes the public headers (cca.h, cca_accounting.h) with one field
appended to the field list of every public struct that may grow, for the
struct-growth test (tests/grown/).

Usage: grow_header.py OUT_DIR HEADER...   (each written as OUT_DIR/its name)

Every X-macro list in the headers must be named below, as growable or not,
so that a struct added later cannot be left out of the test silently."""
import os
import re
import sys

# list -> the entry appended (its X() arity follows the list's own)
GROWABLE = {
    "CCA_CONFIG_FIELDS": 'X(int64_t, grown_by_test_, [3], "appended by tests/grown")',
    "CCA_STATS_LIST_": 'F(X, CCA_STAT, grown_by_test_, "appended by tests/grown")',
    "CCA_FRAG_FIELDS": 'X(int64_t, grown_by_test_, [3], "appended by tests/grown")',
    "CCA_SEGMENT_INFO_FIELDS": 'X(int64_t, grown_by_test_, [3], "appended by tests/grown")',
    "CCA_BLOCK_INFO_FIELDS": 'X(int64_t, grown_by_test_, [3], "appended by tests/grown")',
    "CCA_OOM_REPORT_FIELDS": 'X(int64_t, grown_by_test_, [3], "appended by tests/grown")',
    "CCA_SCOPE_RESULT_FIELDS": 'X(int64_t, grown_by_test_, [3], "appended by tests/grown")',
    "CCA_HISTORY_ENTRY_FIELDS": 'X(int64_t, grown_by_test_, [3], "appended by tests/grown")',
    "CCA_NOTICE_FIELDS": 'X(int64_t, grown_by_test_, [3], "appended by tests/grown")',
}
FIXED = {
    "CCA_STAT_PARTS": "cca_stat_t sits in arrays of cca_stats_t: it never grows",
    "CCA_STATS_FIELDS": "a view of CCA_STATS_LIST_ (grown there)",
    "CCA_STAT_FIELDS": "a view of CCA_STATS_LIST_ (grown there)",
    "CCA_COUNTER_FIELDS": "a view of CCA_STATS_LIST_ (grown there)",
    "CCA_SIZE_CLASS_FIELDS": "cca_size_class_t sits in an array of cca_frag_t: it never grows",
    "CCA_CONFIG_KEY_LIST_": "the configuration keys, no struct",
    "CCA_CONFIG_KEY_TABLE": "a view of CCA_CONFIG_KEY_LIST_, no struct",
    "CCA_CONFIG_KEYS": "a view of CCA_CONFIG_KEY_LIST_, no struct",
    "CCA_CONFIG_PRESETS": "the presets, no struct",
}


def grow(src, seen):
    lines = open(src).read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"#define (CCA_\w+)\((?:F, )?X\)", lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        name = m.group(1)
        if name not in GROWABLE and name not in FIXED:
            sys.exit("grow_header.py: %s is a field list this test does not know: add it to GROWABLE "
                     "(and so to the test) or to FIXED with the reason" % name)
        seen.add(name)
        j = i
        while lines[j].rstrip().endswith("\\"):
            j += 1
        out.extend(lines[i:j + 1])
        if name in GROWABLE:
            out[-1] = out[-1] + " \\"
            out.append("    " + GROWABLE[name])
        i = j + 1
    return "\n".join(out)


def main():
    out_dir, srcs = sys.argv[1], sys.argv[2:]
    seen, grown = set(), {}
    for src in srcs:
        grown[os.path.basename(src)] = grow(src, seen)
    missing = sorted((set(GROWABLE) | set(FIXED)) - seen)
    if missing:
        sys.exit("grow_header.py: the headers no longer have %s" % ", ".join(missing))
    for name, text in grown.items():
        open(os.path.join(out_dir, name), "w").write(text)


if __name__ == "__main__":
    main()
