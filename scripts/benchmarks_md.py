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
`cca-bench` measures cca (its default, `lean` and `expandable` presets) and
its peers in one run, interleaved within each repetition, and reports the
median, the spread (min..max over the repetitions) and, in its own tables,
the paired ratio to cca. Scenarios: `pingpong` (alloc+free of one size on
one stream, and of twelve sizes in turn), `mixed` (1,000 live blocks,
sizes log-uniform 512 B-64 MiB, random frees), `threads` (pingpong and
mixed on two threads, own streams or one shared stream, against one
thread), `streams` (frees after `cca_record_stream` on a second stream),
`xfree` (frees by the allocating thread, by another thread, and by another
thread after 1,000 threads used `cudaStreamPerThread` and exited), `hooks`
(the torch entry points against libcca, both `dlopen`ed), `replay` (each
trace in `../shared/traces` and every `--trace`: ns per event, peak
reserved / peak live, device calls per 1,000 events, and the smallest
device that replays the trace), `multistream` (synthetic training
workloads on several streams with `record_stream`), `runtime` (the
simulator's own cost per call). `scripts/instructions.sh` counts
instructions with callgrind, which stay steady on a shared machine where
nanoseconds do not. Peers: `cub-default` and `cub-all` (CUB's
`CachingDeviceAllocator`, its default bins and bins for every size),
`raw` (`cudaMalloc`/`cudaFree` each time), `torch-native` and
`torch-expandable` (PyTorch's own allocator, under `scripts/torch-sim`);
`(modelled)` rows add a real runtime's latencies per call to the
simulator's (not timed)."""

REPLAY_EXTRAS = (("reserved_over_live", "reserved/live"), ("cudaMalloc_per_1k_events", "cudaMalloc/1k"),
                 ("cuMemCreate_per_1k_events", "cuMemCreate/1k"), ("cudaFree_per_1k_events", "cudaFree/1k"),
                 ("min_capacity_over_live", "smallest device/live"), ("ooms", "OOMs"))
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


def table(out, rows, extras):
    cols = ["allocator", "median", "min..max", "unit", "calls/op"] + [name for _, name in extras]
    out.append("| " + " | ".join(cols) + " |")
    out.append("|" + " --- |" * len(cols))
    for r in rows:
        if r["error"]:
            out.append("| %s | failed: %s |%s" % (r["allocator"], r["error"], " |" * (len(cols) - 2)))
            continue
        timed = not r["modelled"] and r["reps"]
        cells = [r["allocator"], num(r["median"]), "%s..%s" % (num(r["min"]), num(r["max"])) if timed else "-",
                 r["unit"], num((r["calls_per_op"] or {}).get("total")) if r["calls_per_op"] else "-"]
        cells += [num(r["extra"].get(k)) for k, _ in extras]
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
              ", quick" if meta.get("quick") else ""), "", INTRO, "",
           "Allocators: " + ", ".join("`%s`%s" % (a["label"], " (%s)" % a["conf"] if a["conf"] else "")
                                      for a in meta["allocators"]) + "."]
    for s in meta.get("skipped", []):
        out.append("Skipped: `%s`: %s." % (s["allocator"], s["skipped"]))
    out += ["", "## Summary", "", "The run's own opening lines:", "", "```"]
    out += [ln for ln in data.get("summary", []) if ln.strip() and not ln.startswith("==")]
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
    current = None
    for scen, case in order:
        if scen != current:
            out += ["", "## " + scen]
            current = scen
        these = [r for r in rows if r["scenario"] == scen and r["case"] == case]
        extras = REPLAY_EXTRAS if scen in ("replay", "multistream") else \
            SUMMARY_EXTRAS if scen.endswith("-summary") else ()
        out += ["", "**%s**" % case, ""]
        if scen.endswith("-summary") and scen[:-len("-summary")] in per_trace:
            names = per_trace[scen[:-len("-summary")]]
            out += ["%d traces: %s (each one's table: the run's own output)." % (len(names), ", ".join(names)), ""]
        table(out, these, extras)
    goals = [r for r in rows if r["scenario"] == "goal"]
    if goals:
        out += ["", "## Goals", "", "cca's targets, on this run's machine (MISSED: not met here).", "",
                "| goal | allocator | value | target | |", "| --- | --- | --- | --- | --- |"]
        for r in goals:
            e = r["extra"]
            met = "met" if e.get("met") else "MISSED"
            out.append("| %s | %s | %s | %s %s | %s |" % (r["case"], r["allocator"], num(r["median"]),
                                                          ">=" if e.get("at_least") else "<=", num(e.get("target")),
                                                          met))
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])
