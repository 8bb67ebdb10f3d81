"""The balance point on recordings of real torch: an MLP's two AdamW steps
recorded by cca (trace_file) at four batch sizes. Fitted on the two
smallest, the largest batch predicted for a device between what the two
largest need lies between them, and replaying those recordings (not fitted
on) agrees: the smaller fits, the larger does not. With gradient
accumulation, the prediction for a run of two micro-batches is checked on
a recording of one."""
import cca

BATCHES = (1024, 2048, 3072, 4096)


def record(runs, batch, accumulate=1):
    args = ["--batch=%d" % batch] + (["--accumulate=%d" % accumulate] if accumulate > 1 else [])
    runs("mlp", "cca", args=args)
    return runs.path("mlp", "cca", args=args) + ".csv"


def test_the_balance_point_of_a_torch_mlp_is_confirmed_on_recordings_it_was_not_fitted_on(runs):
    rec = {b: record(runs, b) for b in BATCHES}
    ref = cca.balance(rec, device_memory="80GiB", reserve=0)
    bal = ref["balance"]
    assert bal["fitted"] == [1024, 2048]
    assert bal["peak_live"]["bytes_per_sample"] > 0
    for c in bal["configurations"]:
        h = {x["batch"]: x for x in c["held_out"]}
        for b in (3072, 4096):                    # the fit's error on the held-out recordings
            assert abs(h[b]["predicted_peak_live_bytes"] / h[b]["peak_live_bytes"] - 1) < 0.01, (c["label"], h[b])
            assert abs(h[b]["predicted_min_device_bytes"] / h[b]["min_device_bytes"] - 1) < 0.02, (c["label"], h[b])
        device = (h[3072]["min_device_bytes"] + h[4096]["min_device_bytes"]) // 2
        out = cca.balance(rec, device_memory=device, reserve=0)
        (got,) = [x for x in out["balance"]["configurations"] if x["label"] == c["label"]]
        assert 3072 <= got["largest_batch"] < 4096, (c["label"], got, device)
        fits = {t["trace"]: {x["label"]: x["fits"] for x in t["configurations"]} for t in out["traces"]}
        names = {b: p.rsplit("/", 1)[1] for b, p in rec.items()}
        assert fits[names[3072]][c["label"]] is True
        assert fits[names[4096]][c["label"]] is False


def test_accumulation_predicts_a_recorded_accumulating_run(runs):
    rec = {1024: record(runs, 1024), 2048: record(runs, 2048), 4096: record(runs, 4096, accumulate=2)}
    out = cca.balance(rec, accumulate=2, device_memory="80GiB", reserve=0)
    mb = out["balance"]["micro_batch"]
    assert mb["paired"] is True and mb["per_micro_batch_allocations"] > 0 and mb["per_step_allocations"] > 0
    assert mb["kept_bytes"] > 0                   # the gradients, kept from one micro-batch to the next
    plain = cca.balance({1024: rec[1024], 2048: rec[2048]}, device_memory="80GiB", reserve=0)
    for c, p in zip(out["balance"]["configurations"], plain["balance"]["configurations"]):
        (h,) = c["held_out"]
        assert h["batch"] == 4096
        err = h["predicted_peak_live_bytes"] / h["peak_live_bytes"] - 1
        assert 0 <= err < 0.02, (c["label"], h)   # never below the recorded run, and close to it
        assert c["largest_batch"] > p["largest_batch"]
