#!/usr/bin/env python3
"""docs/benchmarks.md from a run of cca-bench --json: the figures cannot
drift from the code, since this page is only ever written from a run.

    scripts/torch-sim cca-bench --json /tmp/bench.json     # (or scripts/bench.sh --json ...)
    scripts/benchmarks_md.py /tmp/bench.json "scripts/torch-sim cca-bench --json /tmp/bench.json" > docs/benchmarks.md

The page: how the benchmark works (the text below), the run's machine and
allocators, the summary the run opened with (cca-bench's own lines), each
scenario's table (median, min..max, unit, CUDA calls per operation, and
the figures the replays add; the replays summarised over their traces),
and the goals. The dated lab log of earlier
runs is docs/history.md."""
import json
import sys

INTRO = """\
`cca-bench` runs cca (its default, `lean` and `expandable` presets) and its
peers interleaved within each repetition; each figure is the median over
the repetitions, min..max beside it. The scenarios are `cca-bench --help`'s;
what each measures, the `==` line over its table in the run's output.
Peers: `cub-default` and `cub-all` (CUB's `CachingDeviceAllocator`, its
default bins and bins for every size), `raw` (`cudaMalloc`/`cudaFree` each
time), `torch-native` and `torch-expandable` (PyTorch's own allocator,
under `scripts/torch-sim`); `(modelled)` rows add a real runtime's
latencies per call to the simulator's (not timed: in the run's output, not
here). Instructions, which stay
steady on a shared machine where nanoseconds do not: `scripts/instructions.sh`."""

SUMMARY_EXTRAS = (("geomean_reserved_over_live", "reserved/live (gmean)"), ("max_reserved_over_live", "worst"),
                  ("cudaMalloc_per_1k_events", "cudaMalloc/1k"), ("cuMemCreate_per_1k_events", "cuMemCreate/1k"),
                  ("cudaFree_per_1k_events", "cudaFree/1k"), ("geomean_min_capacity_over_live", "smallest device/live"),
                  ("traces_oom_at_1.05x", "OOM @1.05x"))


def num(v):
    if v is None:
        return "-"
    if isinstance(v, float) and v != int(v):
        return "%.4g" % v
    return "{:,}".format(int(v))


def cell(r):
    """One figure: median (min..max) [CUDA calls per operation]; modelled rows are not timed."""
    if r["error"]:
        return "failed: " + r["error"]
    timed = not r["modelled"] and r["reps"]
    spread = timed and r["min"] != r["max"]                    # one figure over the traces: no spread to show
    text = num(r["median"]) + (" (%s..%s)" % (num(r["min"]), num(r["max"])) if spread else "")
    calls = (r["calls_per_op"] or {}).get("total") if r["calls_per_op"] else None
    return text + (" [%s]" % num(calls) if calls else "")


def wide_table(out, rows, cases):
    """A scenario's cases side by side: one row per allocator, one column per case."""
    units = {c: next((r["unit"] for r in rows if r["case"] == c and r["unit"]), "") for c in cases}
    labels = []
    for r in rows:
        if r["allocator"] not in labels:
            labels.append(r["allocator"])
    out.append("| allocator | " + " | ".join("%s (%s)" % (c, units[c]) for c in cases) + " |")
    out.append("|" + " --- |" * (len(cases) + 1))
    for a in labels:
        by_case = {r["case"]: r for r in rows if r["allocator"] == a}
        if all(r["modelled"] for r in by_case.values()):
            continue                                  # not timed: the run's output has them
        out.append("| %s | " % a + " | ".join(cell(by_case[c]) if c in by_case else "-" for c in cases) + " |")


def table(out, rows, extras):
    unit = next((r["unit"] for r in rows if r["unit"]), "")
    cols = ["allocator", unit] + [name for _, name in extras]
    out.append("| " + " | ".join(cols) + " |")
    out.append("|" + " --- |" * len(cols))
    for r in rows:
        if r["modelled"]:
            continue                                  # not timed: the run's output has them
        cells = [r["allocator"], cell(r)]
        cells += [num(r["extra"].get(k)) for k, _ in extras] if not r["error"] else [""] * len(extras)
        out.append("| " + " | ".join(cells) + " |")


def main(argv):
    if not argv:
        sys.exit("usage: scripts/benchmarks_md.py BENCH.json [COMMAND] > docs/benchmarks.md")
    with open(argv[0]) as f:
        data = json.load(f)
    command = argv[1] if len(argv) > 1 else "cca-bench --json " + argv[0]
    meta, rows = data["meta"], data["rows"]
    out = ["# cca - benchmarks", "",
           "Written by `scripts/benchmarks_md.py` from one run: `%s`, %s, %d CPUs (%s), %s, %d repetitions%s. "
           "Edit the generator, not this page; earlier runs are in [history.md](history.md)."
           % (command, meta["date"], meta["nproc"], meta["cpu"], meta["runtime"], meta["reps"],
              ", quick" if meta.get("quick") else ""), "", INTRO]
    for s in meta.get("skipped", []):
        out.append("Skipped: `%s`: %s." % (s["allocator"], s["skipped"]))
    out += ["", "## Summary", "", "The run's own opening lines:", "", "```"]
    # the questions and what their figures mean (the legend of the run's own tables is not this page's)
    keep = ("memory:", "device allocs, frees:")
    out += [ln for ln in data.get("summary", []) if ln.strip() and not ln.startswith("==")
            and (ln.startswith("  ") and not ln.startswith("    ") and ("wins" in ln or "even" in ln or ln.strip().startswith(keep)))]
    out += ["```"]
    order = []
    for r in rows:
        if (r["scenario"], r["case"]) not in order and r["scenario"] != "goal":
            order.append((r["scenario"], r["case"]))
    per_trace = {}                                    # replay's and multistream's traces: named, summarised below
    for scen, case in order:
        if scen in ("replay", "multistream"):
            per_trace.setdefault(scen, []).append(case)
    order = [(s_, c_) for s_, c_ in order if s_ not in per_trace]
    scenarios = []
    for scen, _ in order:
        if scen not in scenarios:
            scenarios.append(scen)
    out += ["", "Each cell: the median, min..max over the repetitions in brackets, and the CUDA runtime calls per "
            "operation in square brackets where there are any."]
    for scen in scenarios:
        cases = [c for s_, c in order if s_ == scen]
        these = [r for r in rows if r["scenario"] == scen]
        out += ["", "## " + scen, ""]
        if scen.endswith("-summary"):
            if scen[:-len("-summary")] in per_trace:
                names = per_trace[scen[:-len("-summary")]]
                out += ["%d traces (%s ... %s; each one's table: the run's own output)." % (len(names), names[0],
                                                                                           names[-1]), ""]
            for case in cases:
                if len(cases) > 1:
                    out += ["**%s**" % case, ""]
                table(out, [r for r in these if r["case"] == case], SUMMARY_EXTRAS)
        else:
            wide_table(out, these, cases)
    goals = [r for r in rows if r["scenario"] == "goal"]
    if goals:
        names, labels = [], []
        for r in goals:
            names += [] if r["case"] in names else [r["case"]]
            labels += [] if r["allocator"] in labels else [r["allocator"]]
        met_all = [n for n in names if all(r["extra"].get("met") for r in goals if r["case"] == n)]
        out += ["", "## Goals", "", "cca's targets, on this run's machine. Met by every configuration: %s. "
                "The others (MISSED: not met here):" % (", ".join(met_all) or "none"), "",
                "| goal | target | " + " | ".join(labels) + " |", "|" + " --- |" * (len(labels) + 2)]
        for name in (n for n in names if n not in met_all):
            these = {r["allocator"]: r for r in goals if r["case"] == name}
            first = next(iter(these.values()))["extra"]
            out.append("| %s | %s %s | " % (name, ">=" if first.get("at_least") else "<=", num(first.get("target")))
                       + " | ".join("%s %s" % (num(these[a]["median"]), "met" if these[a]["extra"].get("met")
                                                else "MISSED") if a in these else "-" for a in labels) + " |")
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])
