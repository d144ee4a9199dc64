"""kairo.tsc trainer: config checks, schedules, reproducible and resumable fits, early
stopping, saved classifiers, prediction and evaluation."""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pytest
import torch

import kairo.tsc._train as T
from kairo import ConfigError, DataError, DataNotFoundError, KairoError
from kairo._config import build_config
from kairo.tsc import (ModelConfig, TrainConfig, build_classifier, evaluate, fit,
                             from_arrays, load_classifier, load_dataset, predict,
                             recompute_bn_stats, save_classifier, smoothness, stratified_split,
                             znormalize)

# a tiny Transformer (with dropout, so the random streams matter) and a tiny ResNet
TINY = ModelConfig(d_model=16, n_heads=2, blocks=1, pool="mean", tokens="patch", patch=10,
                   dropout=0.2)
RESNET = ModelConfig(encoder="resnet", d_model=8, blocks=1, pool="mean")
QUIET = dict(progress_bar=False)


@pytest.fixture(scope="module")
def gunpoint():
    return load_dataset("GunPoint"), load_dataset("GunPoint", "test")


def _weights(model) -> dict:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# ---------------------------------------------------------------------------- config
@pytest.mark.parametrize("field, value", [
    ("epochs", -1), ("steps", 0), ("batch", 0), ("lr", 0.0), ("lr", float("nan")), ("weight_decay", -1.0),
    ("schedule", "linear"), ("warmup", 1.0), ("val_fraction", 1.0), ("patience", -1),
    ("seed", -1), ("znorm", "yes"), ("znorm", 1), ("label_smoothing", 1.0), ("max_grad_norm", -0.5),
    ("checkpoint_every", 0), ("threads", -2), ("device", "tpu"), ("epochs", True),
    ("plateau_patience", -1), ("plateau_factor", 1.0), ("plateau_factor", 0.0),
    ("min_lr", -1e-4), ("bn_stats", "precise"), ("bn_stats", True), ("sam_rho", -0.1),
    ("sam_rho", 0.0), ("sam_rho", float("inf")), ("sam", "yes"), ("sam", True)])
def test_bad_train_config_names_the_field(field, value):
    with pytest.raises(ConfigError, match=f"^{field}"):
        TrainConfig(**{field: value})


def test_train_config_defaults_and_build_config():
    cfg = TrainConfig()
    assert (cfg.epochs, cfg.batch, cfg.lr, cfg.weight_decay, cfg.schedule, cfg.val_fraction,
            cfg.patience, cfg.seed, cfg.znorm, cfg.label_smoothing, cfg.max_grad_norm,
            cfg.threads, cfg.bn_stats) == (0, 16, 1e-3, 0.05, "cosine", 0.0, 30, 0, "auto", 0.0,
                                           1.0, 0, "recompute")
    assert cfg.steps == 1500
    cfg = build_config(TrainConfig, {"epochs": "7", "schedule": "onecycle"}, {"lr": "0.01"})
    assert (cfg.epochs, cfg.schedule, cfg.lr) == (7, "onecycle", 0.01)
    with pytest.raises(ConfigError, match="warmup must be > 0 for the onecycle"):
        TrainConfig(schedule="onecycle", warmup=0.0)
    with pytest.raises(ConfigError, match="min_lr \\(0.01\\) must not exceed lr"):
        TrainConfig(schedule="plateau", lr=1e-3, min_lr=1e-2)
    TrainConfig(schedule="cosine", lr=1e-5)                 # min_lr only binds the plateau


def test_batches_cover_everything_without_a_batch_of_one():
    for n, b in [(40, 32), (33, 32), (65, 32), (5, 8), (1, 4), (64, 32)]:
        parts = T._batches(n, b)
        assert parts[0][0] == 0 and parts[-1][1] == n
        assert all(e0 == s1 for (_, e0), (s1, _) in zip(parts, parts[1:]))
        assert n == 1 or min(e - s for s, e in parts) > 1
    assert T._batches(33, 32) == [(0, 33)]


@pytest.mark.parametrize("schedule", ["cosine", "onecycle", "constant"])
def test_step_schedules(schedule):
    cfg = TrainConfig(schedule=schedule, lr=0.1, warmup=0.2)
    opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=cfg.lr)
    sched = T._scheduler(opt, cfg, 50)
    lrs = []
    for _ in range(50):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    lrs = np.array(lrs)
    if schedule == "constant":
        np.testing.assert_allclose(lrs, 0.1)
        return
    peak = int(lrs.argmax())
    assert lrs.max() == pytest.approx(0.1, rel=1e-6)
    assert 8 <= peak <= 10                                # after ~20 % of the 50 steps
    assert (np.diff(lrs[:peak + 1]) > 0).all() and (np.diff(lrs[peak:]) <= 1e-12).all()
    assert lrs[-1] < 0.01


# ---------------------------------------------------------------------------- fitting
def test_fit_is_reproducible_and_keeps_the_best_weights(gunpoint):
    tr, _ = gunpoint
    cfg = TrainConfig(epochs=4, batch=16, lr=3e-3, val_fraction=0.2, threads=1)
    rng_before, threads_before = torch.get_rng_state(), torch.get_num_threads()
    a = fit(TINY, cfg, tr, **QUIET)
    assert torch.equal(torch.get_rng_state(), rng_before)        # the caller's stream is kept
    assert torch.get_num_threads() == threads_before
    b = fit(TINY, cfg, tr, **QUIET)
    assert a["history"] == b["history"]
    assert _same_weights(_weights(a["model"]), _weights(b["model"]))
    h = a["history"]
    assert [e["epoch"] for e in h] == [1, 2, 3, 4]
    assert set(h[0]) == {"epoch", "train_loss", "val_loss", "val_acc", "lr"}
    losses = [e["val_loss"] for e in h]
    assert a["best_epoch"] == int(np.argmin(losses)) + 1
    assert a["seconds"] > 0 and a["samples_per_s"] > 0
    # the returned weights are the best epoch's: recompute its validation loss
    _, va = stratified_split(tr.y, cfg.val_fraction, cfg.seed)
    _, proba = predict(a["model"], tr.x[va])
    val_loss = -np.log(proba[np.arange(len(va)), tr.y[va]]).mean()
    assert val_loss == pytest.approx(losses[a["best_epoch"] - 1], rel=1e-4)
    assert a["model"].fit_meta["classes"] == ["1", "2"] and a["model"].fit_meta["znorm"]
    c = fit(TINY, dataclasses.replace(cfg, seed=1), tr, **QUIET)
    assert c["history"] != a["history"]


def test_fit_learns_gunpoint(gunpoint):
    tr, te = gunpoint
    cfg = TrainConfig(epochs=30, batch=8, lr=3e-3, patience=0, threads=1)
    r = fit(RESNET, cfg, tr, **QUIET)
    assert r["history"][-1]["train_loss"] < 0.8 * r["history"][0]["train_loss"]
    rep = evaluate(r["model"], te)
    assert rep["accuracy"] > 0.7                               # chance is 0.5
    assert rep["accuracy"] == pytest.approx(float((rep["pred"] == te.y).mean()))
    assert rep["confusion"].sum() == len(te) and 0 < rep["log_loss"] < 1


def test_early_stopping_returns_the_best_epoch(caplog, gunpoint, monkeypatch):
    tr, _ = gunpoint
    real = T._validate
    calls = []

    def worse_each_epoch(model, x, y, mask, batch=256):   # real accuracy, rising loss
        calls.append(1)
        return 1.0 + len(calls), real(model, x, y, mask, batch)[1]

    monkeypatch.setattr(T, "_validate", worse_each_epoch)
    cfg = TrainConfig(epochs=20, batch=16, schedule="constant", warmup=0.0, patience=3,
                      val_fraction=0.2, threads=1)
    with caplog.at_level(logging.INFO, logger="kairo.tsc._train"):
        r = fit(TINY, cfg, tr, progress_bar=False)
    assert r["stopped_early"] and r["best_epoch"] == 1 and len(r["history"]) == 4
    assert "early stop at epoch 4" in caplog.text
    # best = the weights after epoch 1: a constant-lr run of one epoch has them
    one = fit(TINY, dataclasses.replace(cfg, epochs=1), tr, **QUIET)
    assert _same_weights(_weights(r["model"]), _weights(one["model"]))


def test_plateau_halves_the_lr_after_patience_epochs_without_a_lower_loss(gunpoint,
                                                                         monkeypatch):
    tr, _ = gunpoint
    real, calls = T._validate, []

    def worse_each_epoch(model, x, y, mask, batch=256):   # the monitored loss never improves
        calls.append(1)
        return 1.0 + len(calls), real(model, x, y, mask, batch)[1]

    monkeypatch.setattr(T, "_validate", worse_each_epoch)
    cfg = TrainConfig(epochs=9, batch=16, lr=8e-3, schedule="plateau", plateau_patience=1,
                      plateau_factor=0.5, min_lr=2e-3, patience=0, val_fraction=0.2,
                      threads=1)
    r = fit(TINY, cfg, tr, **QUIET)
    lrs = [e["lr"] for e in r["history"]]                # the lr each epoch trained with
    # epoch 1 sets the best; two worse epochs (> patience 1) halve it, down to the floor;
    # the rate never changes inside an epoch (stepped per epoch, not per batch)
    assert lrs == pytest.approx([8e-3] * 3 + [4e-3] * 2 + [2e-3] * 4)
    assert r["best_epoch"] == 1 and not r["stopped_early"]


@pytest.mark.parametrize("schedule", ["cosine", "plateau"])
def test_resume_after_a_kill_gives_the_uninterrupted_result(gunpoint, monkeypatch, tmp_path, caplog,
                                                            schedule):
    tr, _ = gunpoint
    cfg = TrainConfig(epochs=5, batch=16, lr=3e-3, checkpoint_every=2, threads=1,
                      schedule=schedule, plateau_patience=0)
    full = fit(TINY, cfg, tr, checkpoint=tmp_path / "full.pt", **QUIET)

    real, calls = T._train_epoch, []

    def dies_in_epoch_4(*args, **kwargs):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt                      # the process is killed mid-epoch
        return real(*args, **kwargs)

    ckpt = tmp_path / "run.pt"
    monkeypatch.setattr(T, "_train_epoch", dies_in_epoch_4)
    with pytest.raises(KeyboardInterrupt):
        fit(TINY, cfg, tr, checkpoint=ckpt, **QUIET)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp left
    monkeypatch.setattr(T, "_train_epoch", real)
    with caplog.at_level(logging.INFO, logger="kairo.tsc._train"):
        again = fit(TINY, cfg, tr, checkpoint=ckpt, progress_bar=False)
    assert again["resumed_from"] == 2 and "resumed from" in caplog.text
    assert again["history"] == full["history"]
    assert again["best_epoch"] == full["best_epoch"]
    assert _same_weights(_weights(again["model"]), _weights(full["model"]))
    # a finished run is returned as it was, without training
    done = fit(TINY, cfg, tr, checkpoint=ckpt, **QUIET)
    assert done["resumed_from"] == 5 and done["history"] == full["history"]
    assert _same_weights(_weights(done["model"]), _weights(full["model"]))
    # timing covers every process that trained the run (it was 0 s and NaN samples/s)
    n_series = 5 * len(full["fit_index"])
    for res in (again, done):
        assert res["seconds"] > 0
        assert res["samples_per_s"] * res["seconds"] == pytest.approx(n_series)
    assert done["seconds"] == pytest.approx(again["seconds"], rel=0.5)


def test_resume_refuses_another_run(gunpoint, tmp_path):
    tr, _ = gunpoint
    ckpt = tmp_path / "run.pt"
    cfg = TrainConfig(epochs=1, batch=16, threads=1)
    fit(TINY, cfg, tr, checkpoint=ckpt, **QUIET)
    with pytest.raises(DataError, match=r"training options.*other settings.*'lr': "
                                        r"\(0\.001, 0\.01\)"):
        fit(TINY, dataclasses.replace(cfg, lr=0.01), tr, checkpoint=ckpt, **QUIET)
    with pytest.raises(DataError, match=r"architecture.*\{'d_model'"):
        fit(dataclasses.replace(TINY, d_model=32), cfg, tr, checkpoint=ckpt, **QUIET)
    with pytest.raises(DataError, match=r"data.*\{'digest'"):
        fit(TINY, cfg, tr.subset(np.arange(48)), checkpoint=ckpt, **QUIET)
    ckpt.write_bytes(ckpt.read_bytes()[:200])
    with pytest.raises(DataError, match=r"run\.pt: cannot be read safely"):
        fit(TINY, cfg, tr, checkpoint=ckpt, **QUIET)


def _ragged_toy():
    """24 two-channel series of 8–19 steps, padded with a mask; class 1 shifted up by 1."""
    rng = np.random.default_rng(0)
    series = [rng.normal(size=(2, n)) + (i % 2) for i, n in enumerate(rng.integers(8, 20, 24))]
    return from_arrays(series, np.arange(24) % 2, pad=True, name="toy")


def test_variable_length_data_and_no_validation_set():
    data = _ragged_toy()
    cfg = TrainConfig(epochs=6, batch=8, val_fraction=0.0, patience=1, threads=1)
    r = fit(TINY, cfg, data, **QUIET)
    assert all(e["val_loss"] is None for e in r["history"])
    # no validation set: all epochs run (patience ignored), the lowest training loss is kept
    losses = [e["train_loss"] for e in r["history"]]
    assert len(losses) == 6 and not r["stopped_early"]
    assert r["best_epoch"] == int(np.argmin(losses)) + 1
    pred, proba = predict(r["model"], data.x, data.mask)
    assert pred.shape == (24,) and proba.shape == (24, 2)


# ---------------------------------------------------------------------------- batch-norm statistics
def _first_bn_input(model, x):
    """What the first batch norm of a ResNet block normalizes: conv0(x), as [B, C, 1, T]."""
    blk = model.encoder.blocks[0]
    k = blk.kernel_sizes[0]
    return blk.convs[0](torch.nn.functional.pad(x, (0, 1)) if k % 2 == 0 else x)[:, :, None]


@pytest.mark.parametrize("batch", [256, 7])
def test_recompute_bn_stats_gives_the_statistics_of_the_whole_split(gunpoint, batch):
    tr, _ = gunpoint
    torch.manual_seed(0)
    model = T._build(RESNET, 1, 2, tr.n_steps)
    model.train()
    x = torch.from_numpy(znormalize(tr.x))
    model(x[:8])                                          # running stats of one batch of 8
    bns = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm1d)]
    assert recompute_bn_stats(model, x, batch=batch) == len(bns) >= 3
    assert not model.training and all(m.momentum == 0.1 for m in bns)
    y = _first_bn_input(model, x).detach()
    bn = model.encoder.blocks[0].norms[0]
    if batch >= len(x):        # one pass: exactly the split's mean and unbiased variance
        torch.testing.assert_close(bn.running_mean, y.mean((0, 2, 3)), atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(bn.running_var, y.var((0, 2, 3)), atol=1e-5, rtol=1e-4)
    else:                      # chunks: the equal-weight mean of the chunks' means
        chunks = [c.mean((0, 2, 3)) for c in y.tensor_split(-(-len(y) // batch))]
        assert len(chunks) == 8                            # 50 series: 6 or 7 per chunk
        torch.testing.assert_close(bn.running_mean, torch.stack(chunks).mean(0), atol=1e-5,
                                   rtol=1e-4)
    # the weights are untouched and a second pass gives the same statistics (no dropout, no
    # memory of the earlier state)
    before = _weights(model)
    recompute_bn_stats(model, x, batch=batch)
    assert _same_weights(before, _weights(model))


def test_recompute_bn_stats_ignores_padding_masks_and_models_without_batch_norm():
    torch.manual_seed(0)
    tiny = T._build(TINY, 1, 2, 50)
    before = _weights(tiny)
    assert recompute_bn_stats(tiny, torch.randn(4, 1, 50)) == 0
    assert _same_weights(before, _weights(tiny)) and not tiny.training
    res = T._build(RESNET, 1, 2, 50)
    with pytest.raises(ConfigError, match="batch must be an integer"):
        recompute_bn_stats(res, torch.randn(4, 1, 50), batch=0)
    with pytest.raises(DataError, match=r"\[N, C, T\] with N ≥ 1"):
        recompute_bn_stats(res, torch.randn(1, 50))
    with pytest.raises(DataError, match="N ≥ 1"):
        recompute_bn_stats(res, torch.randn(0, 1, 50))


def test_fit_recomputes_bn_stats_on_the_fit_series_only(gunpoint):
    tr, te = gunpoint
    cfg = TrainConfig(epochs=3, batch=16, seed=0, threads=1, val_fraction=0.2, patience=0,
                      bn_stats="running")
    a = fit(RESNET, cfg, tr, **QUIET)
    b = fit(RESNET, dataclasses.replace(cfg, bn_stats="recompute"), tr, **QUIET)
    wa, wb = _weights(a["model"]), _weights(b["model"])
    stats = [k for k in wa if k.endswith(("running_mean", "running_var"))]
    # same training; only the statistics differ
    assert all(torch.equal(wa[k], wb[k]) for k in wa if k not in stats and
               not k.endswith("num_batches_tracked"))
    assert not all(torch.equal(wa[k], wb[k]) for k in stats)
    # …and they are those of the fit indices (the validation hold-out excluded)
    fit_idx, _ = stratified_split(tr.y, 0.2, 0)
    np.testing.assert_array_equal(b["fit_index"], fit_idx)       # and fit reports them
    assert len(fit(RESNET, dataclasses.replace(cfg, val_fraction=0.0), tr,
                   **QUIET)["fit_index"]) == len(tr)
    x = torch.from_numpy(znormalize(tr.x))
    recompute_bn_stats(a["model"], x[torch.from_numpy(fit_idx)])
    assert all(torch.allclose(_weights(a["model"])[k], wb[k], atol=1e-6) for k in stats)
    assert b["meta"]["train_config"]["bn_stats"] == "recompute"


def test_bad_fit_arguments(gunpoint):
    tr, _ = gunpoint
    with pytest.raises(ConfigError, match="train_cfg must be a TrainConfig"):
        fit(TINY, {"epochs": 1}, tr, **QUIET)
    with pytest.raises(KairoError, match="data must be a TSData"):
        fit(TINY, TrainConfig(epochs=1), (tr.x, tr.y), **QUIET)


# ---------------------------------------------------------------------------- saved models
@pytest.fixture(scope="module")
def trained(gunpoint):
    tr, _ = gunpoint
    return fit(TINY, TrainConfig(epochs=2, batch=16, threads=1), tr, **QUIET)


def test_save_load_round_trip(trained, gunpoint, tmp_path):
    _, te = gunpoint
    path = tmp_path / "model.pt"
    save_classifier(path, trained["model"], TINY, {"note": "hello"})
    model, meta = load_classifier(path, expect_arch=trained["model"].arch)
    assert meta["note"] == "hello" and meta["classes"] == ["1", "2"] and meta["znorm"] == "series"
    assert meta["model_config"]["d_model"] == 16
    p1, q1 = predict(trained["model"], te.x)
    p2, q2 = predict(model, te.x)
    np.testing.assert_array_equal(p1, p2)
    np.testing.assert_allclose(q1, q2, rtol=1e-6)
    assert not model.training


def test_load_rejects_bad_files(trained, tmp_path):
    path = tmp_path / "model.pt"
    save_classifier(path, trained["model"], TINY)
    other = dict(trained["model"].arch, d_model=32, n_heads=4)
    with pytest.raises(DataError, match=r"different architecture .*'d_model': \(16, 32\).*"
                                        r"'n_heads': \(2, 4\)"):
        load_classifier(path, expect_arch=other)
    cut = tmp_path / "cut.pt"
    cut.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(DataError, match=r"cut\.pt: cannot be read safely"):
        load_classifier(cut)
    junk = tmp_path / "junk.pt"
    torch.save({"format": "something else"}, junk)
    with pytest.raises(DataError, match=r"junk\.pt: not a kairo\.attention\.classifier file"):
        load_classifier(junk)
    with pytest.raises(DataNotFoundError, match="does not exist"):
        load_classifier(tmp_path / "absent.pt")
    with pytest.raises(KairoError, match="model_cfg does not describe this model"):
        save_classifier(tmp_path / "x.pt", trained["model"], dataclasses.replace(TINY, blocks=2))
    with pytest.raises(KairoError, match="meta must hold only JSON values"):
        save_classifier(tmp_path / "x.pt", trained["model"], TINY, {"bad": object()})


def test_head_options_stay_auto_and_resolve_per_encoder(tmp_path):
    """head_norm and weight_init travel with the model file; "auto" stays in the config and is
    resolved per encoder when the model is built (ResNet: no head norm, Glorot; Transformer:
    LayerNorm head, PyTorch init), so replace(encoder=…) gets the other encoder's defaults; a
    model with the other setting is a different architecture."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(24, 1, 20))
    y = np.arange(24) % 2
    x[y == 1] += 1.0
    data = from_arrays(x, y, name="toy")
    assert (RESNET.head_norm, RESNET.weight_init) == ("auto", "auto")
    assert RESNET.resolved() == {"head_norm": False, "weight_init": "glorot"}
    tf = dataclasses.replace(RESNET, encoder="transformer", d_model=8, n_heads=2)
    assert tf.resolved() == {"head_norm": True, "weight_init": "torch"}
    assert ModelConfig(encoder="resnet", head_norm="true").resolved()["head_norm"] is True
    with pytest.raises(ConfigError, match="head_norm: expected one of auto, true, false"):
        ModelConfig(head_norm="yes")
    r = fit(RESNET, TrainConfig(epochs=2, batch=8, val_fraction=0.0, threads=1), data, **QUIET)
    model = r["model"]
    assert r["meta"]["head_norm"] is False and r["meta"]["weight_init"] == "glorot"
    assert isinstance(model.head[0], torch.nn.Identity)
    path = tmp_path / "keras.pt"
    save_classifier(path, model, RESNET)
    loaded, meta = load_classifier(path, expect_arch=model.arch)
    assert meta["model_config"]["head_norm"] == "auto"
    np.testing.assert_array_equal(predict(loaded, data.x)[1], predict(model, data.x)[1])
    torch_style = dataclasses.replace(RESNET, head_norm="true", weight_init="torch")
    before = build_classifier(torch_style, 1, 2, 20)
    with pytest.raises(DataError, match=r"'head_norm': \('auto', 'true'\)"):
        load_classifier(path, expect_arch=before.arch)


# ---------------------------------------------------------------------------- prediction
def test_predict_applies_znorm_and_validates(trained, gunpoint):
    _, te = gunpoint
    model = trained["model"]
    pred, proba = predict(model, te.x[:20, 0])                 # [n, T] for one channel
    np.testing.assert_allclose(proba.sum(1), 1, rtol=1e-5)
    assert pred.dtype == np.int64 and proba.dtype == np.float32
    np.testing.assert_array_equal(pred, proba.argmax(1))
    # z-normalized inputs: an affine change of every series changes nothing
    _, shifted = predict(model, 3.0 * te.x[:20] + 7.0)
    np.testing.assert_allclose(shifted, proba, atol=1e-4)
    assert model.training is False
    with pytest.raises(DataError, match="x has 2 channels, the model was trained on 1"):
        predict(model, np.zeros((3, 2, 150)))
    # rotary positions read series longer than at fit; a table of positions does not
    assert predict(model, np.zeros((3, 1, 151)))[1].shape == (3, 2)
    table = build_classifier(dataclasses.replace(TINY, positional="sinusoidal"), 1, 2, 150)
    with pytest.raises(DataError, match="151 steps, more than the model's max_len 150"):
        predict(table.eval(), np.zeros((3, 1, 151)))
    bad = te.x[:4].copy()
    bad[2, 0, 7] = np.nan
    with pytest.raises(DataError, match="predict: x contains 1 NaN value in series 2"):
        predict(model, bad)
    bad = te.x[:4].astype(np.float64)
    bad[3, 0, 7] = 1e300
    with pytest.raises(DataError, match="predict: x contains 1 value beyond float32's range"):
        predict(model, bad)
    mask = np.ones((4, bad.shape[2]), bool)
    mask[3, 7:] = False                                    # the value is padding: ignored
    np.testing.assert_array_equal(predict(model, bad, mask)[0][:3], predict(model, bad[:3])[0])
    with pytest.raises(DataError, match="mask must be a bool array of shape"):
        predict(model, te.x[:4], mask=np.ones((4, 10), bool))
    with pytest.raises(DataError, match=r"got shape \(150,\)"):
        predict(model, te.x[0, 0])


def test_evaluate_matches_classes_by_name(trained, gunpoint):
    _, te = gunpoint
    model = trained["model"]
    rep = evaluate(model, te)
    flipped = from_arrays(te.x, [te.classes[i] for i in te.y], classes=("2", "1"))
    rep2 = evaluate(model, flipped)
    assert rep2["accuracy"] == pytest.approx(rep["accuracy"])
    np.testing.assert_array_equal(rep2["confusion"], rep["confusion"])
    alien = from_arrays(te.x[:4], ["1", "2", "3", "1"])
    with pytest.raises(DataError, match=r"classes \['3'\] the model was not trained on"):
        evaluate(model, alien)


def test_znorm_setting_is_what_predict_uses(gunpoint):
    tr, te = gunpoint
    r = fit(RESNET, TrainConfig(epochs=1, batch=16, znorm="none", threads=1), tr, **QUIET)
    assert r["model"].fit_meta["znorm"] == "none"
    _, raw = predict(r["model"], te.x[:10])
    r["model"].fit_meta["znorm"] = "series"
    _, normed = predict(r["model"], te.x[:10])
    r["model"].fit_meta["znorm"] = "none"
    _, manual = predict(r["model"], znormalize(te.x[:10]))
    np.testing.assert_allclose(normed, manual, rtol=1e-5)
    assert not np.allclose(raw, normed)
    r["model"].fit_meta["znorm"] = "robust"
    with pytest.raises(DataError, match="unknown input scaling znorm='robust'"):
        predict(r["model"], te.x[:10])


def test_znorm_takes_modes_only():
    for bad in (True, "true"):
        with pytest.raises(ConfigError, match="znorm"):
            TrainConfig(znorm=bad)
    assert build_config(TrainConfig, {}, {"znorm": "channel"}).znorm == "channel"


def test_auto_znorm_is_series_for_one_channel_and_channel_for_several(tmp_path):
    from kairo.tsc._recipe import resolve_znorm

    assert [resolve_znorm("auto", c) for c in (1, 2, 12)] == ["series", "channel", "channel"]
    assert resolve_znorm("none", 5) == "none" and resolve_znorm("series", 5) == "series"
    rng = np.random.default_rng(0)
    x = rng.normal(size=(24, 3, 20)) * [[[1.0], [10.0], [0.1]]] + [[[0.0], [5.0], [-2.0]]]
    data = from_arrays(x, np.arange(24) % 2)
    cfg = TrainConfig(epochs=2, batch=8, threads=1, val_fraction=0, checkpoint_every=1)
    r = fit(RESNET, cfg, data, checkpoint=tmp_path / "c.pt", **QUIET)
    meta = r["model"].fit_meta
    assert meta["znorm"] == "channel" and meta["train_config"]["znorm"] == "channel"
    np.testing.assert_allclose(meta["znorm_std"], x.std(axis=(0, 2)), rtol=1e-5)
    # a checkpoint of "auto" is the run of what it chose, and not of another scaling
    again = fit(RESNET, dataclasses.replace(cfg, znorm="channel"), data,
                checkpoint=tmp_path / "c.pt", **QUIET)
    assert again["resumed_from"] == 2
    with pytest.raises(DataError, match=r"'znorm': \('channel', 'series'\)"):
        fit(RESNET, dataclasses.replace(cfg, znorm="series"), data,
            checkpoint=tmp_path / "c.pt", **QUIET)


def test_channel_znorm_uses_training_statistics(gunpoint, tmp_path):
    """znorm="channel": one mean and std per channel from the series trained on (not the
    hold-out), saved with the model and applied unchanged at predict."""
    tr, te = gunpoint
    cfg = TrainConfig(epochs=1, batch=16, znorm="channel", val_fraction=0.2, threads=1)
    r = fit(RESNET, cfg, tr, **QUIET)
    meta = r["model"].fit_meta
    fit_idx, _ = stratified_split(tr.y, cfg.val_fraction, cfg.seed)
    assert meta["znorm"] == "channel"
    seen = tr.x[fit_idx].astype(np.float64)
    np.testing.assert_allclose(meta["znorm_mean"], [seen.mean()], atol=1e-12)
    np.testing.assert_allclose(meta["znorm_std"], [seen.std()], rtol=1e-12)
    _, proba = predict(r["model"], te.x[:10])
    r["model"].fit_meta = {**meta, "znorm": "none"}
    _, manual = predict(r["model"], (te.x[:10] - meta["znorm_mean"][0]) / meta["znorm_std"][0])
    np.testing.assert_allclose(proba, manual, rtol=1e-4, atol=1e-6)
    r["model"].fit_meta = meta
    # unlike per-series scaling, the input's level reaches the model
    assert not np.allclose(predict(r["model"], te.x[:10] + 7.0)[1], proba, atol=1e-3)
    save_classifier(tmp_path / "m.pt", r["model"], RESNET, meta)
    loaded, lmeta = load_classifier(tmp_path / "m.pt")
    assert lmeta["znorm_mean"] == meta["znorm_mean"]
    np.testing.assert_allclose(predict(loaded, te.x[:10])[1], proba, rtol=1e-5)
    broken = {k: v for k, v in meta.items() if k != "znorm_std"}
    r["model"].fit_meta = broken
    with pytest.raises(DataError, match="lacks the channel statistics"):
        predict(r["model"], te.x[:10])


# ---------------------------------------------------------------------------- ensembles
def _toy(channels: int = 2, n: int = 24, steps: int = 20):
    """Two separable classes; a second channel on another level and scale, so that
    znorm="auto" is "channel" and each seed's hold-out gives other channel statistics."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(n, channels, steps))
    y = np.arange(n) % 2
    x[y == 1] += 1.0
    if channels > 1:
        x[:, 1] = 5.0 * x[:, 1] + 3.0
    return from_arrays(x, y, name="toy")


def test_ensemble_forward_is_the_log_of_the_members_mean_probabilities():
    """Hand-checked: members whose logits are their head's bias alone (zero weights), with
    probabilities (1/4, 3/4) and (1/2, 1/2), average to (3/8, 5/8)."""
    from kairo.tsc import TSEnsemble

    torch.manual_seed(0)
    a, b = (build_classifier(RESNET, 1, 2, 20).eval() for _ in range(2))
    with torch.no_grad():
        for m, bias in ((a, [0.0, np.log(3.0)]), (b, [0.0, 0.0])):
            m.head[1].weight.zero_()
            m.head[1].bias.copy_(torch.tensor(bias))
    ens = TSEnsemble([a, b]).eval()
    x = torch.randn(5, 1, 20)
    with torch.no_grad():
        out = ens(x)
    assert out.shape == (5, 2)
    torch.testing.assert_close(out.exp(), torch.tensor([[3 / 8, 5 / 8]]).expand(5, 2))
    # and for members that depend on the input: softmax(forward) is the members' mean
    torch.manual_seed(1)
    c, d = (build_classifier(RESNET, 1, 2, 20).eval() for _ in range(2))
    ens = TSEnsemble([c, d]).eval()
    with torch.no_grad():
        mean = (torch.softmax(c(x), 1) + torch.softmax(d(x), 1)) / 2
        torch.testing.assert_close(torch.softmax(ens(x), 1), mean)
        assert torch.equal(ens(x).argmax(1), mean.argmax(1))
        mask = torch.arange(20)[None, :] < torch.tensor([[20], [12], [15], [20], [9]])
        mean = (torch.softmax(c(x, mask), 1) + torch.softmax(d(x, mask), 1)) / 2
        torch.testing.assert_close(torch.softmax(ens(x, mask), 1), mean)
    assert ens.arch == {**c.arch, "ensemble": 2}
    assert (ens.n_members, ens.n_channels, ens.n_classes, ens.max_len) == (2, 1, 2, 20)
    with pytest.raises(ConfigError, match="at least one member"):
        TSEnsemble([])
    # a Transformer ensemble refuses series beyond its table of positions, as one model does
    tf = [build_classifier(dataclasses.replace(TINY, positional="learned"), 1, 2, 20)
          for _ in range(2)]
    with pytest.raises(DataError, match="more than the model's max_len 20"):
        predict(TSEnsemble(tf), np.zeros((2, 1, 30)))
    with pytest.raises(ConfigError, match=r"member 1 differs from member 0.*'d_model': \(8, 16\)"):
        TSEnsemble([c, build_classifier(dataclasses.replace(RESNET, d_model=16), 1, 2, 20)])


@pytest.mark.parametrize("executor", [
    "serial", pytest.param("processes", marks=pytest.mark.slow)])    # spawning costs ~15 s
def test_fit_ensemble_members_are_the_fits_of_their_seeds(executor):
    """Members (trained here, or in worker processes) are, weight for weight, the models fit
    gives in this process with seeds seed … seed+n-1; the ensemble scales its input once
    (member 0's channel statistics) and still gives each member its own, so its
    probabilities are the mean of the members' predictions."""
    from kairo.tsc import TSEnsemble, fit_ensemble

    data = _toy()
    # hold-outs, so that the members' channel statistics differ
    cfg = TrainConfig(epochs=2, batch=8, seed=3, val_fraction=0.2, threads=1)
    rng_before = torch.get_rng_state()
    r = fit_ensemble(RESNET, cfg, data, 2, workers=2, executor=executor, **QUIET)
    assert torch.equal(torch.get_rng_state(), rng_before)
    assert (r["executor"], r["seeds"]) == (executor, [3, 4])
    assert r["workers"] == (2 if executor == "processes" else 1)
    ens = r["model"]
    assert isinstance(ens, TSEnsemble) and not ens.training
    for i, seed in enumerate((3, 4)):
        alone = fit(RESNET, dataclasses.replace(cfg, seed=seed), data, **QUIET)
        assert _same_weights(_weights(alone["model"]), _weights(ens.members[i]))
        assert r["members"][i]["history"] == alone["history"]
        assert r["members"][i]["seed"] == seed
        assert ens.members[i].fit_meta["znorm_mean"] == alone["meta"]["znorm_mean"]
    meta = ens.fit_meta
    assert meta["znorm"] == "channel" and [m["seed"] for m in meta["members"]] == [3, 4]
    assert meta["znorm_mean"] == meta["members"][0]["znorm_mean"]           # member 0's
    assert meta["members"][0]["znorm_mean"] != meta["members"][1]["znorm_mean"]
    pred, proba = predict(ens, data.x)
    mean = np.mean([predict(m, data.x)[1] for m in ens.members], axis=0)
    np.testing.assert_allclose(proba, mean, atol=1e-6)
    np.testing.assert_array_equal(pred, mean.argmax(1))
    with pytest.raises(ConfigError, match="ensemble must be an integer ≥ 1"):
        fit_ensemble(RESNET, cfg, data, 0)


def test_an_ensemble_of_one_is_its_model():
    from kairo.tsc import fit_ensemble

    data = _toy(channels=1)
    cfg = TrainConfig(epochs=2, batch=8, threads=1)
    one = fit_ensemble(RESNET, cfg, data, 1, executor="processes", **QUIET)
    assert one["executor"] == "serial"                     # one job runs in this process
    alone = fit(RESNET, cfg, data, **QUIET)
    assert _same_weights(_weights(one["model"].members[0]), _weights(alone["model"]))
    p1, q1 = predict(one["model"], data.x)
    p2, q2 = predict(alone["model"], data.x)
    np.testing.assert_array_equal(p1, p2)
    np.testing.assert_allclose(q1, q2, rtol=1e-6, atol=1e-7)
    rep = evaluate(one["model"], data)
    assert rep["accuracy"] == evaluate(alone["model"], data)["accuracy"]


def test_saved_ensemble_round_trips_and_bad_files_keep_their_errors(tmp_path):
    from kairo.tsc import TSEnsemble, fit_ensemble

    data = _toy()
    r = fit_ensemble(RESNET, TrainConfig(epochs=1, batch=8, threads=1), data, 2,
                     executor="serial", **QUIET)
    path = tmp_path / "ens.pt"
    save_classifier(path, r["model"], RESNET, {"note": "hi"})
    model, meta = load_classifier(path, expect_arch=r["model"].arch)    # weights_only inside
    assert isinstance(model, TSEnsemble) and model.arch["ensemble"] == 2 and not model.training
    assert meta["note"] == "hi" and [m["seed"] for m in meta["members"]] == [0, 1]
    assert torch.equal(model.input_shift, r["model"].input_shift)
    for loaded, trained in zip(model.members, r["model"].members):     # each its own scaling
        assert loaded.fit_meta["znorm_mean"] == trained.fit_meta["znorm_mean"]
        assert loaded.fit_meta["train_config"]["seed"] == trained.fit_meta["train_config"]["seed"]
        np.testing.assert_array_equal(predict(loaded, data.x)[1], predict(trained, data.x)[1])
    p1, q1 = predict(r["model"], data.x)
    p2, q2 = predict(model, data.x)
    np.testing.assert_array_equal(p1, p2)
    np.testing.assert_array_equal(q1, q2)
    # one model's arch is not an ensemble's, nor the other way round
    with pytest.raises(DataError, match=r"different architecture .*'ensemble': \(2, None\)"):
        load_classifier(path, expect_arch=r["model"].members[0].arch)
    cut = tmp_path / "cut.pt"
    cut.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(DataError, match=r"cut\.pt: cannot be read safely"):
        load_classifier(cut)
    state = torch.load(path, weights_only=True)
    for count, msg in [(3, "weights do not fit the architecture"),
                       (0, "ensemble size must be an integer ≥ 1, got 0")]:
        torch.save({**state, "arch": {**state["arch"], "ensemble": count}}, tmp_path / "x.pt")
        with pytest.raises(DataError, match=msg):
            load_classifier(tmp_path / "x.pt")


# ---------------------------------------------------------------------------- mixup
def test_mixup_at_weight_one_is_plain_training(monkeypatch):
    """A mixing weight of 1 keeps every batch as it is: a ResNet (no dropout, so the shuffle's
    random draw changes nothing else) trains to the same weights as without mixup."""
    data = _toy(channels=1)
    cfg = TrainConfig(epochs=3, batch=8, threads=1)
    plain = fit(RESNET, cfg, data, **QUIET)["model"]
    monkeypatch.setattr(torch.distributions.Beta, "sample", lambda self: torch.tensor(1.0))
    mixed = fit(RESNET, dataclasses.replace(cfg, mixup="on"), data, **QUIET)["model"]
    assert _same_weights(_weights(plain), _weights(mixed))


def test_mixup_mixes_series_labels_and_masks(monkeypatch):
    """Weight 1/4: each series is ¼ itself and ¾ another of its batch, the loss ¼ and ¾ of
    the two labels' cross-entropies, and the mixed series is valid where either is."""
    seen = {}

    class Probe(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(2))

        def forward(self, x, mask):
            seen.update(x=x.detach().clone(), mask=mask.clone())
            return self.w.expand(len(x), 2) + x[:, 0, :2]

    monkeypatch.setattr(torch.distributions.Beta, "sample", lambda self: torch.tensor(0.25))
    torch.manual_seed(0)
    x = torch.arange(24, dtype=torch.float32).view(4, 1, 6)
    mask = torch.arange(6)[None, :] < torch.tensor([[6], [3], [5], [2]])
    x = x * mask[:, None, :]
    y = torch.tensor([0, 1, 1, 0])
    model = Probe()
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    cfg = TrainConfig(batch=4, mixup="on", time_warp=0)     # fit resolves "auto" first
    loss = T._train_epoch(model, opt, None, torch.nn.CrossEntropyLoss(), x, y, mask,
                          torch.arange(4), dataclasses.replace(cfg, schedule="plateau"))
    partner = [int(np.argmin([float((seen["x"][i] - 0.25 * x[i] - 0.75 * x[j]).abs().max())
                              for j in range(4)])) for i in range(4)]
    assert sorted(partner) == [0, 1, 2, 3]                            # a permutation
    for i, j in enumerate(partner):
        torch.testing.assert_close(seen["x"][i], 0.25 * x[i] + 0.75 * x[j])
        assert torch.equal(seen["mask"][i], mask[i] | mask[j])
    ce = torch.nn.functional.cross_entropy
    logits = x[:, 0, :2] * 0.25 + x[partner, 0, :2] * 0.75
    want = 0.25 * ce(logits, y) + 0.75 * ce(logits, y[partner])
    assert loss == pytest.approx(float(want), rel=1e-6)


def test_mixup_runs_are_reproducible_and_differ_from_plain_ones():
    data = _ragged_toy()
    cfg = TrainConfig(epochs=2, batch=8, threads=1, mixup="on", mixup_alpha=0.4)
    a, b = (fit(TINY, cfg, data, **QUIET)["model"] for _ in range(2))
    assert _same_weights(_weights(a), _weights(b))
    plain = fit(TINY, dataclasses.replace(cfg, mixup="off"), data, **QUIET)["model"]
    assert not _same_weights(_weights(a), _weights(plain))
    with pytest.raises(ConfigError, match="mixup: expected one of auto, on, off; got '0.2'"):
        TrainConfig(mixup="0.2")
    with pytest.raises(ConfigError, match="mixup_alpha must be > 0.0"):
        TrainConfig(mixup_alpha=0.0)


def test_smoothness_known_values():
    t = np.arange(2000)
    flip = np.where(t % 2 == 0, 1.0, -1.0)                  # +1, −1, …: lag-1 r = −1 exactly
    assert smoothness(flip[None, None, :]) == pytest.approx(-1.0, abs=1e-12)
    sine = np.sin(2 * np.pi * t / 40)                       # 50 whole periods: r ≈ cos(2π/40)
    assert smoothness(sine[None, None, :]) == pytest.approx(np.cos(2 * np.pi / 40), abs=1e-3)
    noise = np.random.default_rng(0).normal(size=(200, 1, 200))
    assert abs(smoothness(noise)) < 0.02
    # the median over series and channels: two smooth channels outvote one that flips
    both = np.stack([sine, sine, flip])[None]                                  # [1, 3, T]
    assert smoothness(both) == pytest.approx(np.cos(2 * np.pi / 40), abs=1e-3)
    # scale and offset do not matter; a constant series is left out; none left is NaN
    assert smoothness(5 * sine[None, None, :] + 3) == pytest.approx(
        smoothness(sine[None, None, :]), abs=1e-12)
    assert smoothness(np.stack([sine, np.ones(2000)])[:, None, :]) == pytest.approx(
        smoothness(sine[None, None, :]), abs=1e-12)
    assert np.isnan(smoothness(np.ones((3, 1, 10))))
    assert np.isnan(smoothness(np.zeros((3, 1, 2))))                  # one pair of steps
    with pytest.raises(DataError, match=r"smoothness: x must be \[n_series"):
        smoothness(np.zeros((3, 10)))
    with pytest.raises(DataError, match="smoothness: mask must have shape"):
        smoothness(np.zeros((3, 1, 10)), np.ones((3, 9), dtype=bool))


def test_smoothness_reads_only_the_real_steps():
    """Padding (whatever it holds) and pairs that straddle it do not count: a padded set
    measures as its series do alone."""
    rng = np.random.default_rng(3)
    lengths = (30, 12, 25)
    series = [np.cumsum(rng.normal(size=(1, n)), axis=1) for n in lengths]
    data = from_arrays(series, np.array([0, 1, 0]), pad=True, name="ragged")
    alone = np.median([smoothness(data.x[i:i + 1, :, :n]) for i, n in enumerate(lengths)])
    x = data.x.copy()
    x[~np.broadcast_to(data.mask[:, None, :], x.shape)] = 100.0                # garbage pad
    assert smoothness(x, data.mask) == pytest.approx(alone, abs=1e-12)
    assert smoothness(x) != pytest.approx(alone, abs=1e-3)              # the mask matters


def test_mixup_auto_is_on_for_smooth_series_and_recorded():
    """"auto" trains exactly as "on" where the training series are smooth and as "off" where
    they are not; the run meta names what it chose and the smoothness it read."""
    conv = ModelConfig(d_model=8, n_heads=2, blocks=1, stem_blocks=1)
    cfg = TrainConfig(epochs=1, batch=8, threads=1)
    rng = np.random.default_rng(1)
    y = np.arange(16) % 2
    t = np.linspace(0, 1, 80)
    smooth = from_arrays(np.sin(2 * np.pi * (t[None, :] + rng.uniform(size=(16, 1)))
                                * (1 + y[:, None]))[:, None, :], y, name="smooth")
    rough = from_arrays(rng.normal(size=(16, 1, 80)) + y[:, None, None], y, name="rough")
    for data, chosen in ((smooth, "on"), (rough, "off")):
        auto = fit(conv, cfg, data, **QUIET)
        assert auto["meta"]["mixup"] == chosen
        assert auto["meta"]["train_config"]["mixup"] == chosen
        assert auto["meta"]["smoothness"] == pytest.approx(smoothness(data.x))
        pinned = fit(conv, dataclasses.replace(cfg, mixup=chosen), data, **QUIET)["model"]
        other = fit(conv, dataclasses.replace(cfg, mixup="off" if chosen == "on" else "on"),
                    data, **QUIET)["model"]
        assert _same_weights(_weights(auto["model"]), _weights(pinned))
        assert not _same_weights(_weights(auto["model"]), _weights(other))


# ---------------------------------------------------------------------------- SAM
class _Net(torch.nn.Module):
    """Linear → batch norm → linear: small enough to compute a SAM step by hand."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(6, 5)
        self.bn = torch.nn.BatchNorm1d(5)
        self.b = torch.nn.Linear(5, 2)

    def forward(self, x, mask):
        return self.b(torch.relu(self.bn(self.a(x[:, 0]))))


def test_sam_step_is_the_gradient_at_the_perturbed_weights():
    """One step of SGD (lr 0.1) under SAM moves w by −lr · ∇L(w + ρ g/‖g‖), g = ∇L(w), the
    gradient taken at the moved weights, with the batch-norm running statistics those of the
    first pass alone."""
    torch.manual_seed(0)
    x, y = torch.randn(8, 1, 6), torch.tensor([0, 1] * 4)
    model, rho, lr = _Net(), 0.3, 0.1
    ref = _Net()
    ref.load_state_dict(model.state_dict())
    ce = torch.nn.CrossEntropyLoss()

    ref.train()
    g = torch.autograd.grad(ce(ref(x, None), y), list(ref.parameters()))
    stats = {k: v.clone() for k, v in ref.bn.named_buffers()}        # after one pass at w
    norm = torch.sqrt(sum((gi ** 2).sum() for gi in g))
    moved = _Net()
    moved.load_state_dict(ref.state_dict())
    with torch.no_grad():
        for p, gi in zip(moved.parameters(), g):
            p.add_(rho * gi / norm)
    moved.train()
    g_sharp = torch.autograd.grad(ce(moved(x, None), y), list(moved.parameters()))

    opt = torch.optim.SGD(model.parameters(), lr=lr)
    cfg = TrainConfig(batch=8, sam="on", sam_rho=rho, max_grad_norm=0.0, schedule="plateau",
                      time_warp=0)
    T._train_epoch(model, opt, None, ce, x, y, None, torch.arange(8), cfg)
    for (name, p), p0, gs in zip(model.named_parameters(), ref.parameters(), g_sharp):
        torch.testing.assert_close(p.detach(), p0.detach() - lr * gs, msg=name)
        assert not torch.allclose(gs, g[[n for n, _ in ref.named_parameters()].index(name)])
    for k, v in model.bn.named_buffers():
        assert torch.equal(v, stats[k]), k


def test_sam_runs_are_reproducible_and_differ_from_plain_ones():
    data = _ragged_toy()
    cfg = TrainConfig(epochs=2, batch=8, threads=1, sam="on", sam_rho=0.05)
    a, b = (fit(TINY, cfg, data, **QUIET)["model"] for _ in range(2))
    assert _same_weights(_weights(a), _weights(b))
    plain = fit(TINY, dataclasses.replace(cfg, sam="off"), data, **QUIET)["model"]
    assert not _same_weights(_weights(a), _weights(plain))


def test_sam_auto_is_on_for_short_series_and_recorded():
    """"auto" trains exactly as "on" on series of at most 64 steps (conv tokens) and as "off"
    beyond; run meta and the saved train_config name what it chose."""
    conv = ModelConfig(d_model=8, n_heads=2, blocks=1, stem_blocks=1)
    cfg = TrainConfig(epochs=1, batch=8, threads=1)
    short = _ragged_toy()                                        # at most 19 steps
    rng = np.random.default_rng(1)
    long_ = from_arrays(rng.normal(size=(16, 1, 70)) + np.arange(16)[:, None, None] % 2,
                        np.arange(16) % 2, name="long")
    for data, chosen in ((short, "on"), (long_, "off")):
        auto = fit(conv, cfg, data, **QUIET)
        assert auto["meta"]["sam"] == chosen
        assert auto["meta"]["train_config"]["sam"] == chosen
        pinned = fit(conv, dataclasses.replace(cfg, sam=chosen), data, **QUIET)["model"]
        other = fit(conv, dataclasses.replace(cfg, sam="off" if chosen == "on" else "on"),
                    data, **QUIET)["model"]
        assert _same_weights(_weights(auto["model"]), _weights(pinned))
        assert not _same_weights(_weights(auto["model"]), _weights(other))
