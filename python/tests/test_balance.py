"""The batch-size balance point (cca.balance, cca-replay --batch) on
synthetic training steps whose peaks this test computes: a step at batch b
keeps 64 MiB of weights, makes three activations of b MiB in the forward
pass, three 16 MiB gradients in the backward pass (each activation freed
as its gradient is made) and a 32 MiB optimizer temporary, then frees the
gradients (zero_grad(set_to_none=True)). With accumulation, K micro-batches
of m run forward and backward before one optimizer step; after the first,
each gradient is made as a temporary, added into the kept one and freed
once the activation it came from is (as torch's autograd does)."""
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
            if k == 0:
                ev += [("allocate", "g%d" % i, G), ("free", "a%d.%d" % (k, i), m * MiB)]
            else:                                         # made again, added into g, freed with the activation
                ev += [("allocate", "t%d.%d" % (k, i), G), ("free", "a%d.%d" % (k, i), m * MiB),
                       ("free", "t%d.%d" % (k, i), G)]
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
    for b in steps:                                      # the first gradient made, no activation freed yet
        assert peak(step_events(b)) == W + 3 * b * MiB + G
    out = cca.balance({32: steps[32], 48: steps[48], 64: steps[64], 96: steps[96]}, device_memory="1GiB", reserve=0)
    bal = out["balance"]
    assert bal["fitted"] == [32, 48] and bal["accumulate"] == 1
    assert bal["peak_live"] == {"intercept_bytes": W + G, "bytes_per_sample": 3 * MiB}
    assert [c["label"] for c in bal["configurations"]] == ["pytorch", "expandable", "lean"]
    mins = {t["trace"]: {c["label"]: c["min_device_bytes"] for c in t["configurations"]} for t in out["traces"]}
    for c in bal["configurations"]:
        assert [h["batch"] for h in c["held_out"]] == [64, 96]
        for h in c["held_out"]:
            assert h["predicted_peak_live_bytes"] == h["peak_live_bytes"] == W + G + 3 * h["batch"] * MiB
            # the step made at the batch is the recorded one, event for event: the same smallest device
            assert h["predicted_min_device_bytes"] == h["min_device_bytes"] == mins["step%d.csv" % h["batch"]][c["label"]]
        assert c["ratio"][0] == (mins["step32.csv"][c["label"]]) / (W + G + 96 * MiB)
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
    # by hand: in the second micro-batch the weights and the three gradients stay while its activations
    # peak, and the first gradient's temporary comes on top
    assert peak(step_events(128, micro=2)) == W + 4 * G + 3 * 64 * MiB
    out = cca.balance({32: steps[32], 48: steps[48], 128: acc}, accumulate=2, device_memory="1GiB", reserve=0)
    bal = out["balance"]
    assert {k: bal[k] for k in ("paired", "per_step_allocations", "per_micro_batch_allocations",
                                "micro_batch_windows", "kept_bytes", "accumulate")} == {
        "paired": True, "per_step_allocations": 5, "per_micro_batch_allocations": 3, "micro_batch_windows": 1,
        "kept_bytes": 3 * G, "accumulate": 2}
    mins = {t["trace"]: {c["label"]: c["min_device_bytes"] for c in t["configurations"]} for t in out["traces"]}
    for c in bal["configurations"]:
        (h,) = c["held_out"]
        assert h["batch"] == 128 and h["predicted_peak_live_bytes"] == h["peak_live_bytes"] == W + 4 * G + 192 * MiB
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
    assert bal["per_micro_batch_allocations"] == 3 and bal["per_step_allocations"] == 5   # told apart by size
    mins = {t["trace"]: {c["label"]: c["min_device_bytes"] for c in t["configurations"]} for t in out["traces"]}
    for c in bal["configurations"]:
        r0, r1 = c["ratio"]
        assert r0 == mins["step40.csv"][c["label"]] / (W + G + 120 * MiB)
        assert r1 == mins["odd56.csv"][c["label"]] / (W + G + MiB + 168 * MiB)
        (h,) = c["held_out"]                                        # 64 is nearer 56
        p = bal["peak_live"]["intercept_bytes"] + bal["peak_live"]["bytes_per_sample"] * 64
        assert h["predicted_peak_live_bytes"] == round(p)
        assert h["predicted_min_device_bytes"] == int(-(-(p * r1) // 1))
        need = lambda b: (bal["peak_live"]["intercept_bytes"] + bal["peak_live"]["bytes_per_sample"] * b) * \
            (r0 if abs(b - 40) <= abs(b - 56) else r1)
        assert c["largest_batch"] == max(b for b in range(1, 4000) if need(b) <= 1 << 30)
    with pytest.raises(cca.ReplayError, match="accumulation needs recordings of the same step that pair"):
        cca.balance({40: base, 56: odd}, accumulate=2, device_memory="1GiB", reserve=0)
