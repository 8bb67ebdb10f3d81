"""The batch-size balance point (cca.balance, cca-replay --batch) on
synthetic training steps whose peaks this test computes: a step at batch b
keeps 64 MiB of weights, makes three activations of b MiB in the forward
pass; in the backward pass, per layer, a 16 MiB weight gradient and a b MiB
input gradient (the previous layer's input gradient and the activation then
freed); then a 32 MiB optimizer temporary, and the gradients are freed
(zero_grad(set_to_none=True)). With accumulation, K micro-batches of m run
forward and backward before one optimizer step; after the first, each
weight gradient is made as a temporary, added into the kept one and freed
with the first input of its backward step that is freed after it (as
torch's autograd does)."""
import os

import pytest

import cca

MiB = 1 << 20
W, G, OPT = 64 * MiB, 16 * MiB, 32 * MiB


def step_events(batch, micro=1):
    """(action, name, bytes): one step at `batch`, in `micro` micro-batches."""
    ev = [("allocate", "w", W)]
    m = batch // micro
    for k in range(micro):
        for i in range(3):
            ev.append(("allocate", "a%d.%d" % (k, i), m * MiB))
        for i in reversed(range(3)):
            made = ("allocate", "g%d" % i, G) if k == 0 else ("allocate", "t%d.%d" % (k, i), G)
            ev += [made, ("allocate", "d%d.%d" % (k, i), m * MiB)]
            inputs = ([("free", "d%d.%d" % (k, i + 1), m * MiB)] if i < 2 else []) + \
                [("free", "a%d.%d" % (k, i), m * MiB)]
            if k > 0:                                     # the temporary goes with the first input freed
                inputs.insert(1, ("free", "t%d.%d" % (k, i), G))
            ev += inputs
        ev.append(("free", "d%d.0" % k, m * MiB))
    ev += [("allocate", "opt", OPT), ("free", "opt", OPT)]
    ev += [("free", "g%d" % i, G) for i in range(3)] + [("free", "w", W)]
    return ev


def write(path, events, device=None):
    with open(path, "w") as f:
        f.write("#cca-trace 1 device=0%s\nThread,Time,Action,Pointer,Size,Stream\n" %
                (" device_memory=%d" % device if device else ""))
        addr = {}
        for i, (act, name, size) in enumerate(events):
            addr.setdefault(name, 0x1000 * (len(addr) + 1))
            f.write("0,00:00:00.%06d,%s,0x%x,%d,0\n" % (i, act, addr[name], size))
    return path


def peak(events):
    live = top = 0
    for act, _, size in events:
        live += size if act == "allocate" else -size
        top = max(top, live)
    return top


@pytest.fixture
def steps(tmp_path):
    return {b: write(str(tmp_path / ("step%d.csv" % b)), step_events(b)) for b in (32, 48, 64, 96)}


def test_peak_live_is_fitted_on_two_and_exact_on_the_held_out(steps):
    for b in steps:                                      # layer 1's gradients made, a0, a1 and d2 live
        assert peak(step_events(b)) == W + 2 * G + 4 * b * MiB
    out = cca.balance({32: steps[32], 48: steps[48], 64: steps[64], 96: steps[96]}, device_memory="1GiB", reserve=0)
    bal = out["balance"]
    assert bal["fitted"] == [32, 48] and bal["accumulate"] == 1
    assert bal["per_micro_batch_rows"] == [1, 2, 3, 5, 8, 12]         # activations, input gradients
    assert bal["peak_live"] == {"intercept_bytes": W + 2 * G, "bytes_per_sample": 4 * MiB}
    assert [c["label"] for c in bal["configurations"]] == ["pytorch", "expandable", "lean"]
    mins = {t["trace"]: {c["label"]: c["min_device_bytes"] for c in t["configurations"]} for t in out["traces"]}
    for c in bal["configurations"]:
        assert [h["batch"] for h in c["held_out"]] == [64, 96]
        for h in c["held_out"]:
            assert h["predicted_peak_live_bytes"] == h["peak_live_bytes"] == W + 2 * G + 4 * h["batch"] * MiB
            # the step made at the batch is the recorded one, event for event: the same smallest device
            assert h["predicted_min_device_bytes"] == h["min_device_bytes"] == mins["step%d.csv" % h["batch"]][c["label"]]
        assert c["ratio"][0] == (mins["step32.csv"][c["label"]]) / (W + 2 * G + 128 * MiB)
        largest = c["largest_batch"]
        assert 0 <= c["margin_bytes"] and c["next_batch_needs_bytes"] > 1 << 30
        # confirmed on steps recorded (here: written) at the largest batch and the next
        for b, fits in ((largest, True), (largest + 1, False)):
            path = write(os.path.join(os.path.dirname(steps[32]), "x%d.csv" % b), step_events(b))
            (t,) = cca.replay(path, device_memory="1GiB", reserve=0)["traces"]
            (got,) = [x for x in t["configurations"] if x["label"] == c["label"]]
            assert got["fits"] is fits, (c["label"], b, got)
            if fits:
                assert got["min_device_bytes"] == (1 << 30) - c["margin_bytes"]
            else:
                assert got["min_device_bytes"] == c["next_batch_needs_bytes"]


def test_the_predicted_largest_batch_fits_and_the_next_recorded_does_not(steps):
    """Fitted on 32 and 48; a device between what 64 and 96 need: the
    prediction lies between them, and the replays of the held-out
    recordings agree."""
    ref = cca.balance({32: steps[32], 48: steps[48], 64: steps[64], 96: steps[96]}, device_memory="80GiB", reserve=0)
    for c in ref["balance"]["configurations"]:
        h = {x["batch"]: x for x in c["held_out"]}
        device = (h[64]["min_device_bytes"] + h[96]["min_device_bytes"]) // 2
        out = cca.balance({32: steps[32], 48: steps[48], 64: steps[64], 96: steps[96]}, device_memory=device,
                          reserve=0)
        (got,) = [x for x in out["balance"]["configurations"] if x["label"] == c["label"]]
        assert 64 <= got["largest_batch"] < 96, (c["label"], got)
        fits = {t["trace"]: {x["label"]: x["fits"] for x in t["configurations"]} for t in out["traces"]}
        assert fits["step64.csv"][c["label"]] is True and fits["step96.csv"][c["label"]] is False


def test_accumulation_tells_per_step_from_per_micro_batch_and_predicts_the_accumulated_run(steps, tmp_path):
    acc = write(str(tmp_path / "acc128x2.csv"), step_events(128, micro=2))
    # by hand: in the second micro-batch the three gradients stay while its activations and input
    # gradients peak, with layer 1's temporary on top
    assert peak(step_events(128, micro=2)) == W + 4 * G + 4 * 64 * MiB
    out = cca.balance({32: steps[32], 48: steps[48], 128: acc}, accumulate=2, device_memory="1GiB", reserve=0)
    bal = out["balance"]
    assert {k: bal[k] for k in ("paired", "per_step_allocations", "per_micro_batch_allocations",
                                "micro_batch_windows", "kept_bytes", "accumulate")} == {
        "paired": True, "per_step_allocations": 5, "per_micro_batch_allocations": 6, "micro_batch_windows": 1,
        "kept_bytes": 3 * G, "accumulate": 2}
    mins = {t["trace"]: {c["label"]: c["min_device_bytes"] for c in t["configurations"]} for t in out["traces"]}
    for c in bal["configurations"]:
        (h,) = c["held_out"]
        assert h["batch"] == 128 and h["predicted_peak_live_bytes"] == h["peak_live_bytes"] == W + 4 * G + 256 * MiB
        # the made run is the recorded one, event for event: the same smallest device
        assert h["predicted_min_device_bytes"] == h["min_device_bytes"] == mins["acc128x2.csv"][c["label"]]
        assert c["largest_batch"] % 2 == 0
    plain = cca.balance({32: steps[32], 48: steps[48]}, device_memory="1GiB", reserve=0)
    for a, p in zip(out["balance"]["configurations"], plain["balance"]["configurations"]):
        assert a["largest_batch"] > p["largest_batch"]       # what accumulation buys


def test_bad_batch_input_is_refused(steps, tmp_path):
    import subprocess
    exe = os.path.join(os.path.dirname(os.path.abspath(cca._lib.library_path())), "..", "tools", "cca-replay")
    cases = [
        (["--batch", "32=" + steps[32]], "two or more recordings"),
        (["--batch", "32=" + steps[32], "--batch", "32=" + steps[48]], "batch size 32 given twice"),
        (["--batch", "0=" + steps[32], "--batch", "4=" + steps[48]], "not B=TRACE"),
        (["--batch", "x=" + steps[32], "--batch", "4=" + steps[48]], "not B=TRACE"),
        (["--batch", "32=", "--batch", "4=" + steps[48]], "not B=TRACE"),
        ([steps[64], "--batch", "32=" + steps[32], "--batch", "48=" + steps[48]], "every trace is given as --batch"),
        (["--batch", "32=" + steps[32], "--batch", "48=" + steps[48], steps[64]], "every trace is given as --batch"),
        ([steps[32], "--accumulate", "2"], "--accumulate goes with --batch"),
        (["--batch", "32=" + steps[32], "--batch", "48=" + steps[48], "--accumulate", "0"], "from 1 to 4096"),
        (["--batch", "32=" + steps[32], "--batch", "48=" + steps[48]], "no device size"),
        (["--batch", "+32=" + steps[32], "--batch", "48=" + steps[48]], "not B=TRACE"),
        (["--batch", "32=" + steps[32], "--batch", "48=" + steps[48], "--to-csv", "/tmp"], "each go alone"),
        ([steps[32], "--svg", "/tmp/x.svg", "--segments-svg", "/tmp/y.svg"], "each go alone"),
        ([steps[32], "--svg", "/nonexistent-dir/x.svg"], "--svg: cannot write /nonexistent-dir/x.svg"),
    ]
    for args, msg in cases:
        p = subprocess.run([exe] + args, capture_output=True, text=True, timeout=120)
        assert p.returncode == 2 and msg in p.stderr, (args, p.returncode, p.stderr)
    with pytest.raises(TypeError):
        cca.balance({32: steps[32]}, device_memory="1GiB")
    with pytest.raises(ValueError):
        cca.balance({32: steps[32], -1: steps[48]}, device_memory="1GiB")
    with pytest.raises(cca.ReplayError, match="no device size"):
        cca.balance({32: steps[32], 48: steps[48]})


def test_recordings_that_do_not_pair_fall_back_to_the_ratio_model(steps, tmp_path):
    """One more allocation in the second recording: sizes cannot be paired in
    order, so smallest devices are scaled from the nearer recording."""
    base = write(str(tmp_path / "step40.csv"), step_events(40))   # sizes no per-step allocation has
    extra = step_events(56)
    extra.insert(1, ("allocate", "x", MiB))
    extra.append(("free", "x", MiB))
    odd = write(str(tmp_path / "odd56.csv"), extra)
    out = cca.balance({40: base, 56: odd, 64: steps[64]}, device_memory="1GiB", reserve=0)
    bal = out["balance"]
    assert bal["paired"] is False
    assert bal["per_micro_batch_allocations"] == 6 and bal["per_step_allocations"] == 5   # told apart by size
    mins = {t["trace"]: {c["label"]: c["min_device_bytes"] for c in t["configurations"]} for t in out["traces"]}
    for c in bal["configurations"]:
        r0, r1 = c["ratio"]
        assert r0 == mins["step40.csv"][c["label"]] / peak(step_events(40))
        assert r1 == mins["odd56.csv"][c["label"]] / peak(extra)
        (h,) = c["held_out"]                                        # 64 is nearer 56
        p = bal["peak_live"]["intercept_bytes"] + bal["peak_live"]["bytes_per_sample"] * 64
        assert h["predicted_peak_live_bytes"] == round(p)
        assert h["predicted_min_device_bytes"] == int(-(-(p * r1) // 1))
        need = lambda b: (bal["peak_live"]["intercept_bytes"] + bal["peak_live"]["bytes_per_sample"] * b) * \
            (r0 if abs(b - 40) <= abs(b - 56) else r1)
        assert c["largest_batch"] == max(b for b in range(1, 4000) if need(b) <= 1 << 30)
    with pytest.raises(cca.ReplayError, match="accumulation needs recordings of the same step that pair"):
        cca.balance({40: base, 56: odd}, accumulate=2, device_memory="1GiB", reserve=0)


def test_edge_cases_of_the_balance_point(steps, tmp_path):
    import pickle
    # a step that does not grow with the batch fits any batch; the held-out one is still predicted
    flat = {b: write(str(tmp_path / ("flat%d.csv" % b)), [e for e in step_events(8)]) for b in (8, 16, 32)}
    out = cca.balance(flat, device_memory="1GiB", reserve=0)
    for c in out["balance"]["configurations"]:
        assert c["any_batch"] is True and c["largest_batch"] is None
        (h,) = c["held_out"]
        assert h["predicted_min_device_bytes"] == h["min_device_bytes"] > 0
    # a refused request in the recordings is not part of the step
    def with_failure(b):
        ev = step_events(b)
        path = write(str(tmp_path / ("fail%d.csv" % b)), ev)
        with open(path, "a") as f:
            f.write("0,00:00:01.000000,allocate failure,(nil),%d,0\n" % (8 << 30))
        return path
    plain = cca.balance({32: steps[32], 48: steps[48]}, device_memory="1GiB", reserve=0)
    failed = cca.balance({32: with_failure(32), 48: with_failure(48)}, device_memory="1GiB", reserve=0)
    assert [c["largest_batch"] for c in failed["balance"]["configurations"]] == \
        [c["largest_batch"] for c in plain["balance"]["configurations"]]
    # the same allocations in another order are not paired in order: told apart by size
    ev = step_events(48)
    i, j = ev.index(("allocate", "g2", G)), ev.index(("allocate", "d0.2", 48 * MiB))
    ev[i], ev[j] = ev[j], ev[i]                                      # a gradient where an activation was
    out = cca.balance({32: steps[32], 48: write(str(tmp_path / "reordered.csv"), ev)}, device_memory="1GiB", reserve=0)
    assert out["balance"]["paired"] is False
    # a snapshot of two devices is not one recording
    segs = [{"device": d, "address": (d + 1) << 40, "total_size": 2 * MiB, "stream": 0, "segment_type": "large",
             "blocks": [{"size": 2 * MiB, "state": "active_allocated"}]} for d in (0, 1)]
    two = tmp_path / "two.pickle"
    two.write_bytes(pickle.dumps({"segments": segs, "device_traces": [[], []]}, protocol=4))
    with pytest.raises(cca.ReplayError, match="2 devices in it"):
        cca.balance({8: str(two), 16: steps[32]}, device_memory="1GiB")
    with pytest.raises(cca.ReplayError, match="is more than"):
        cca.balance({(1 << 40) + 1: steps[32], 16: steps[48]}, device_memory="1GiB")


def test_many_traces_in_one_replay(steps):
    out = cca.replay([steps[32]] * 20, device_memory="1GiB", reserve=0)
    assert len(out["traces"]) == 20 and len({t["configurations"][0]["min_device_bytes"] for t in out["traces"]}) == 1
