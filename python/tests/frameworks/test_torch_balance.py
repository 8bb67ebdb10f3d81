"""The balance point on recordings of real torch: an MLP's two AdamW steps
recorded by cca (trace_file) at four batch sizes. Fitted on the two
smallest, the steps it makes at the other two are those torch made there:
their smallest devices are the recordings' own. On the device the
3072-sample recording needs, the predicted largest batch is at least 3072
and below 4096, and replaying those recordings (not fitted on) agrees.
With gradient accumulation, the run made for two micro-batches is the one
torch made: a recording of it replays to the same figures."""
import cca

BATCHES = (1024, 2048, 3072, 4096)


def record(runs, batch, accumulate=1):
    args = ["--batch=%d" % batch] + (["--accumulate=%d" % accumulate] if accumulate > 1 else [])
    runs("mlp", "cca", args=args)
    return runs.path("mlp", "cca", args=args) + ".csv"


def figures(out):
    return {t["trace"]: {c["label"]: c for c in t["configurations"]} for t in out["traces"]}


def test_the_balance_point_of_a_torch_mlp_is_confirmed_on_recordings_it_was_not_fitted_on(runs):
    rec = {b: record(runs, b) for b in BATCHES}
    name = {b: p.rsplit("/", 1)[1] for b, p in rec.items()}
    ref = cca.balance(rec, device_memory="80GiB", reserve=0)
    bal = ref["balance"]
    assert bal["fitted"] == [1024, 2048] and bal["paired"] is True
    assert bal["per_micro_batch_allocations"] > 0 and bal["per_step_allocations"] > 0
    assert bal["peak_live"]["bytes_per_sample"] > 0
    got = figures(ref)
    for c in bal["configurations"]:
        h = {x["batch"]: x for x in c["held_out"]}
        for b in (3072, 4096):                    # the made steps are torch's own there
            assert h[b]["predicted_peak_live_bytes"] == h[b]["peak_live_bytes"] == got[name[b]][c["label"]]["peak_live_bytes"]
            assert h[b]["predicted_min_device_bytes"] == h[b]["min_device_bytes"], (c["label"], h[b])
        device = h[3072]["min_device_bytes"]
        assert h[4096]["min_device_bytes"] > device
        out = cca.balance(rec, device_memory=device, reserve=0)
        (pred,) = [x for x in out["balance"]["configurations"] if x["label"] == c["label"]]
        assert 3072 <= pred["largest_batch"] < 4096, (c["label"], pred, device)
        fits = figures(out)
        assert fits[name[3072]][c["label"]]["fits"] is True
        assert fits[name[4096]][c["label"]]["fits"] is False


def test_accumulation_predicts_a_recorded_accumulating_run(runs):
    rec = {1024: record(runs, 1024), 2048: record(runs, 2048), 4096: record(runs, 4096, accumulate=2)}
    out = cca.balance(rec, accumulate=2, device_memory="80GiB", reserve=0)
    bal = out["balance"]
    assert bal["paired"] is True and bal["micro_batch_windows"] == 2     # one per step
    assert bal["kept_bytes"] > 0                  # the gradients, kept from one micro-batch to the next
    plain = cca.balance({1024: rec[1024], 2048: rec[2048]}, device_memory="80GiB", reserve=0)
    for c, p in zip(bal["configurations"], plain["balance"]["configurations"]):
        (h,) = c["held_out"]
        assert h["batch"] == 4096
        # the run made from the plain recordings is the one torch made, event for event
        assert h["predicted_peak_live_bytes"] == h["peak_live_bytes"], (c["label"], h)
        assert h["predicted_min_device_bytes"] == h["min_device_bytes"], (c["label"], h)
        assert c["largest_batch"] > p["largest_batch"]      # what accumulation buys
