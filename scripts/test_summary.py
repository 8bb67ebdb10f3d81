"""What scripts/test.sh ran: tests run, passed, failed and skipped, and each
skip's reason, from meson's test log (the C suites; Criterion runs with
CRITERION_VERBOSITY_LEVEL=1 so that it names each skip) and pytest's JUnit
reports. A suite that ran no test and says not why is a failure.

Usage: python3 scripts/test_summary.py MESON_TESTLOG.json [PYTEST_JUNIT.xml | skip:NAME:REASON ...]
(skip:NAME:REASON: a part that did not run at all, with its reason)
Exit status: 0, or 1 when something failed or a suite ran nothing unexplained."""
import collections
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

SYNTH = re.compile(r"Synthesis: Tested: (\d+) \| Passing: (\d+) \| Failing: (\d+) \| Crashing: (\d+)")
CRIT_SKIP = re.compile(r"^\[SKIP\] (\S+?): (.*)$", re.M)
COMPAT = re.compile(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$", re.M)


def meson(path):
    run = passed = failed = 0
    skips, bad = [], []
    for line in open(path):
        t = json.loads(line)
        name = t["name"].split(" / ")[-1]
        out = (t.get("stdout") or "") + "\n" + (t.get("stderr") or "")
        result = t["result"]
        failed_before = failed
        m = SYNTH.findall(out)
        c = COMPAT.findall(out)
        if m:                                          # Criterion
            tested, ok, fail, crash = map(int, m[-1])
            named = [(f"{name}: {n}", r) for n, r in CRIT_SKIP.findall(out)]
            run += tested + len(named)
            passed += ok
            failed += fail + crash
            skips += named
            if tested == 0 and not named:
                bad.append(f"{name} ran no test and says not why")
        elif c:                                        # tests/crit.h's stand-in, plain programs
            p, f, s = int(c[-1][0]), int(c[-1][1]), int(c[-1][2] or 0)
            run += p + f + s
            passed += p
            failed += f
            named = [f"{name}: {n}" for n in re.findall(r"^\[SKIP\] (\S+)$", out, re.M)][:s]
            skips += [(n, "skipped") for n in named + [name] * (s - len(named))]
            if p + f + s == 0:
                bad.append(f"{name} ran no test and says not why")
        else:                                          # one program, one test
            run += 1
            if result == "SKIP":
                lines = [ln for ln in out.strip().split("\n") if ln.strip()]
                skips.append((name, lines[-1] if lines else "skipped (exit 77) without a reason"))
                if not lines:
                    bad.append(f"{name} skipped and says not why")
            elif result in ("OK", "EXPECTEDFAIL"):
                passed += 1
            else:
                failed += 1
        if (m or c) and result not in ("OK", "SKIP", "EXPECTEDFAIL") and failed == failed_before:
            failed += 1                                # it crashed or timed out before its count
            bad.append(f"{name}: {result} (meson) with no failing test counted")
    return run, passed, failed, skips, bad


def junit(path):
    run = passed = failed = 0
    skips = []
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        run += 1
        name = (case.get("classname", "") + "::" + case.get("name", "")).lstrip(":")
        sk = case.find("skipped")
        if sk is not None:
            skips.append((name, (sk.get("message") or "skipped").strip()))
        elif case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        else:
            passed += 1
    return run, passed, failed, skips


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    total = [0, 0, 0]
    skips, bad = [], []
    parts = []
    if os.path.exists(argv[1]):
        r, p, f, s, b = meson(argv[1])
        total = [total[0] + r, total[1] + p, total[2] + f]
        skips += s
        bad += b
        parts.append(f"C suites {r}")
    for path in argv[2:]:
        if path.startswith("skip:"):
            _, name, reason = path.split(":", 2)
            skips.append((name, reason))
            continue
        if not os.path.exists(path):
            continue
        r, p, f, s = junit(path)
        total = [total[0] + r, total[1] + p, total[2] + f]
        skips += s
        parts.append(f"{os.path.basename(path).replace('.xml', '')} {r}")
    print(f"summary: {total[0]} tests run ({', '.join(parts)}): {total[1]} passed, {total[2]} failed, "
          f"{len(skips)} skipped")
    by_reason = collections.OrderedDict()
    for name, reason in skips:
        by_reason.setdefault(reason, []).append(name)
    for reason, names in by_reason.items():
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        print(f"  {len(names)} skipped: {reason}  [{shown}]")
    for b in bad:
        print(f"  FAIL: {b}")
    return 1 if total[2] or bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
