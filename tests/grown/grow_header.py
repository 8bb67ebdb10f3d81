#!/usr/bin/env python3
"""Writes cca.h with one field appended to the field list of every public
struct that may grow, for the struct-growth test (tests/grown/).

Usage: grow_header.py IN_CCA_H OUT_CCA_H

Every X-macro list in cca.h must be named below, as growable or not, so
that a struct added later cannot be left out of the test silently."""
import re
import sys

# list -> the entry appended (its X() arity follows the list's own)
GROWABLE = {
    "CCA_CONFIG_FIELDS": 'X(int64_t, grown_by_test_, [3], "appended by tests/grown")',
    "CCA_STATS_TAIL_FIELDS": 'X(cca_stat_t, grown_by_test_, "appended by tests/grown")',
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
    "CCA_STAT_FIELDS": "the middle of cca_stats_t: appended fields go to CCA_STATS_TAIL_FIELDS",
    "CCA_COUNTER_FIELDS": "the middle of cca_stats_t: appended fields go to CCA_STATS_TAIL_FIELDS",
    "CCA_SIZE_CLASS_FIELDS": "cca_size_class_t sits in an array of cca_frag_t: it never grows",
    "CCA_CONFIG_KEYS": "the configuration keys, no struct",
}


def main():
    src, dst = sys.argv[1], sys.argv[2]
    lines = open(src).read().split("\n")
    out, seen, i = [], set(), 0
    while i < len(lines):
        m = re.match(r"#define (CCA_\w+)\(X\)", lines[i])
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
    missing = sorted((set(GROWABLE) | set(FIXED)) - seen)
    if missing:
        sys.exit("grow_header.py: cca.h no longer has %s" % ", ".join(missing))
    open(dst, "w").write("\n".join(out))


if __name__ == "__main__":
    main()
