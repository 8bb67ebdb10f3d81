#!/usr/bin/env python3
"""cca-bench's opening summary against the same run's JSON: each question's
line (hot path, threads, memory on traces, device calls) within the first
25 lines, its figures those of the JSON rows (cca:default's median and
min..max, the best peer - fastest, or highest throughput, of the
allocators that are not cca, not raw cudaMalloc and not modelled - the
winner and the ratio), the spread warning exactly where a figure's spread
passes 25% of its median, and the replay summaries' figures (the best cca
configuration and the best peer, lower wins).

Usage: test_bench_summary.py PATH/cca-bench"""
import json
import os
import re
import subprocess
import sys
import tempfile

TIMED = {"hot path, 64KiB pair": ("pingpong", "64KiB"), "hot path, 12 sizes": ("pingpong", "12sizes"),
         "hot path, mixed step": ("mixed", "1000-live"),
         "2 threads, own stream": ("threads", "mixed-1000-live/2-threads-own-streams"),
         "2 threads, one stream": ("threads", "mixed-1000-live/2-threads-shared-stream")}
TRACES = {"memory, real traces": ("replay-summary", ["geomean_reserved_over_live"], "max_reserved_over_live"),
          "memory, multistream": ("multistream-summary", ["geomean_reserved_over_live"], "max_reserved_over_live"),
          "device allocs/1k ev.": ("replay-summary", ["cudaMalloc_per_1k_events", "cuMemCreate_per_1k_events"], None),
          "device frees/1k ev.": ("replay-summary", ["cudaFree_per_1k_events", "cuMemUnmap_per_1k_events"], None)}
NUM = r"[-+0-9.e]+"
TIMED_RE = re.compile(r"^  (?P<q>.{22}) cca:default (?P<c>%s) (?P<unit>\S+) \((?P<cmin>%s)\.\.(?P<cmax>%s)\), "
                      r"best peer (?P<peer>\S+) (?P<p>%s) \((?P<pmin>%s)\.\.(?P<pmax>%s)\): (?P<winner>\S+) wins by "
                      r"(?P<ratio>%s)x(?P<wide>  \[spread too wide to trust: rerun with more --reps\])?$"
                      % ((NUM,) * 7))
TRACE_RE = re.compile(r"^  (?P<q>.{22}) cca:default (?P<c>%s)(?: \(worst (?P<cw>%s)\))?"
                      r"(?:, best cca (?P<bc>\S+) (?P<bcv>%s))?(?:, best peer (?P<bp>\S+) (?P<bpv>%s)"
                      r"(?: \(worst (?P<bpw>%s); (?P<bpa>%s) allocs, (?P<bpf>%s) frees per 1k events\))?"
                      r": (?P<verdict>cca wins|the peer wins|even))? \[(?P<n>\d+) traces\]$"
                      % ((NUM,) * 7))


def g(x):
    return "%.4g" % x


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main(bench):
    tmp = tempfile.mkdtemp()
    with open(os.path.join(tmp, "small.csv"), "w") as f:        # a trace of known shape: 30 MiB blocks, one freed
        f.write("Thread,Time,Action,Pointer,Size,Stream\n")
        for i in range(4):
            f.write("0,00:00:00.%06d,allocate,0x10%d0000000,31457280,0\n" % (i, i + 1))
        f.write("0,00:00:00.000004,free,0x1020000000,31457280,0\n")
        f.write("0,00:00:00.000005,allocate,0x1050000000,10485760,0\n")
    js = os.path.join(tmp, "out.json")
    args = [bench, "--quick", "--reps", "3", "--traces-dir", os.path.join(tmp, "none"), "--trace",
            os.path.join(tmp, "small.csv"), "--json", js]
    for s in ("pingpong", "mixed", "threads", "replay", "multistream"):
        args += ["--scenario", s]
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        fail("cca-bench exited %d: %s" % (r.returncode, r.stderr[-2000:]))
    lines = r.stdout.splitlines()
    with open(js) as f:
        rows = json.load(f)["rows"]

    def row(scen, case, alloc):
        return next((x for x in rows if x["scenario"] == scen and x["case"] == case and x["allocator"] == alloc), None)

    def peers(scen, case):
        return [x for x in rows if x["scenario"] == scen and x["case"] == case and not x["allocator"].startswith("cca")
                and not x["allocator"].startswith("raw") and not x["modelled"] and not x["error"]]

    head = lines[:25]
    seen = set()
    for ln in head:
        m = TIMED_RE.match(ln)
        if m:
            q = m["q"].strip()
            scen, case = TIMED[q]
            c = row(scen, case, "cca:default")
            higher = c["unit"].startswith("Mops")
            best = (max if higher else min)(peers(scen, case), key=lambda x: x["median"])
            want = (g(c["median"]), c["unit"], g(c["min"]), g(c["max"]), best["allocator"], g(best["median"]),
                    g(best["min"]), g(best["max"]))
            got = (m["c"], m["unit"], m["cmin"], m["cmax"], m["peer"], m["p"], m["pmin"], m["pmax"])
            if got != want:
                fail("%s: %s, the JSON says %s" % (q, got, want))
            ratio = c["median"] / best["median"] if higher else best["median"] / c["median"]
            winner = "cca:default" if ratio >= 1 else best["allocator"]
            if (m["winner"], m["ratio"]) != (winner, "%.2f" % (ratio if ratio >= 1 else 1 / ratio)):
                fail("%s: winner %s by %s, the JSON says %s by %.2f" % (q, m["winner"], m["ratio"], winner, ratio))
            wide = any(x["median"] > 0 and (x["max"] - x["min"]) / x["median"] > 0.25 for x in (c, best))
            if bool(m["wide"]) != wide:
                fail("%s: the spread warning is %s, the spreads say %s" % (q, bool(m["wide"]), wide))
            seen.add(q)
            continue
        m = TRACE_RE.match(ln)
        if m:
            q = m["q"].strip()
            scen, keys, worst = TRACES[q]

            def fig(x):
                return sum(x["extra"][k] for k in keys)

            c = row(scen, "all-traces", "cca:default")
            if m["c"] != g(fig(c)) or (worst and m["cw"] != g(c["extra"][worst])):
                fail("%s: cca:default %s, the JSON says %s" % (q, m["c"], g(fig(c))))
            allr = [x for x in rows if x["scenario"] == scen and x["case"] == "all-traces" and not x["error"]
                    and all(k in x["extra"] for k in keys)]
            bc = min((x for x in allr if x["allocator"].startswith("cca")), key=fig)
            bp = min((x for x in allr if not x["allocator"].startswith(("cca", "raw")) and not x["modelled"]), key=fig)
            if bc["allocator"] != "cca:default" and (m["bc"], m["bcv"]) != (bc["allocator"], g(fig(bc))):
                fail("%s: best cca %s %s, the JSON says %s %s" % (q, m["bc"], m["bcv"], bc["allocator"], g(fig(bc))))
            if (m["bp"], m["bpv"]) != (bp["allocator"], g(fig(bp))):
                fail("%s: best peer %s %s, the JSON says %s %s" % (q, m["bp"], m["bpv"], bp["allocator"], g(fig(bp))))
            if worst:
                e = bp["extra"]
                want = (g(e[worst]), g(e["cudaMalloc_per_1k_events"] + e["cuMemCreate_per_1k_events"]),
                        g(e["cudaFree_per_1k_events"] + e["cuMemUnmap_per_1k_events"]))
                if (m["bpw"], m["bpa"], m["bpf"]) != want:
                    fail("%s: the peer's worst and device calls %s, the JSON says %s"
                         % (q, (m["bpw"], m["bpa"], m["bpf"]), want))
            verdict = "cca wins" if fig(bc) < fig(bp) else "the peer wins" if fig(bc) > fig(bp) else "even"
            if m["verdict"] != verdict or int(m["n"]) != int(c["extra"]["traces"]):
                fail("%s: %s over %s traces, the JSON says %s over %d" % (q, m["verdict"], m["n"], verdict,
                                                                          c["extra"]["traces"]))
            seen.add(q)
    missing = sorted(set(TIMED) | set(TRACES)) if not seen else sorted((set(TIMED) | set(TRACES)) - seen)
    if missing:
        fail("questions not answered in the first 25 lines: %s\n%s" % (missing, "\n".join(head)))
    if not any(ln.startswith("== how to read the tables below") for ln in lines[:40]):
        fail("no legend before the tables")
    with open(js) as f:
        summary = json.load(f)["summary"]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("== summary"))
    if lines[start:start + len(summary) - 1] != summary[1:]:
        fail("the JSON's summary is not the lines the run opened with")
    # docs/benchmarks.md's generator reads this JSON: every scenario and the summary in its page
    here = os.path.dirname(os.path.abspath(__file__))
    g_ = subprocess.run([sys.executable, os.path.join(here, "..", "scripts", "benchmarks_md.py"), js, "cca-bench ..."],
                        capture_output=True, text=True, timeout=120)
    if g_.returncode != 0:
        fail("scripts/benchmarks_md.py failed: " + g_.stderr[-2000:])
    page = g_.stdout
    for scen in ("pingpong", "mixed", "threads", "replay-summary", "multistream-summary", "Goals"):
        if "\n## %s\n" % scen not in page:
            fail("the generated page has no section %s" % scen)
    if summary[2].strip() not in page:
        fail("the generated page lacks the run's summary")
    print("PASS: %d questions, each as the JSON has it; the generated page holds them" % len(seen))


if __name__ == "__main__":
    main(os.path.abspath(sys.argv[1]))
