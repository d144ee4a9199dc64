"""Training-time augmentation: each transform's invariants, masks, reproducibility, bad input."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from kairo import ConfigError, DataError
from kairo.tsc import ModelConfig, TrainConfig, TSData, augment, cut_mix, fit, from_arrays
from kairo.tsc._augment import check_mask, is_active
from kairo.tsc._recipe import SAM_AUTO_STEPS, TIME_WARP_AUTO

RESNET = ModelConfig(encoder="resnet", d_model=8, blocks=1, pool="mean")
QUIET = dict(progress_bar=False)


def _ramp(b: int = 6, c: int = 2, t: int = 40) -> torch.Tensor:
    """Series whose value is the step index (so a resampled value is its source position)."""
    return torch.arange(t, dtype=torch.float32).expand(b, c, t).clone()


@pytest.mark.parametrize("field, value", [("jitter", -0.1), ("scaling", float("nan")),
                                          ("time_warp", 11.0), ("crop", 1.0), ("crop", -0.2),
                                          ("jitter", True)])
def test_bad_augmentation_settings_name_the_field(field, value):
    with pytest.raises(ConfigError, match=f"^{field}"):
        TrainConfig(**{field: value})


def test_all_off_is_inactive_and_tiny_settings_are_the_identity():
    assert not is_active(TrainConfig(time_warp=0))
    with pytest.raises(ValueError, match="'auto' must be resolved first"):
        is_active(TrainConfig())                 # the default, resolved by fit
    names = ("jitter", "scaling", "time_warp", "crop")
    assert all(is_active(TrainConfig(**{"time_warp": 0, f: 0.1})) for f in names)
    torch.manual_seed(0)
    x = torch.randn(4, 3, 33)
    for cfg in (TrainConfig(**{"time_warp": 0, f: 1e-9}) for f in names):
        torch.testing.assert_close(augment(x, None, cfg), x, atol=1e-5, rtol=0)


@pytest.mark.parametrize("warp, crop", [(0.5, 0.0), (0.0, 0.3), (0.5, 0.3)])
def test_time_maps_are_monotone_resamplings_of_the_series_itself(warp, crop):
    torch.manual_seed(1)
    x = _ramp()
    y = augment(x, None, TrainConfig(time_warp=warp, crop=crop))
    assert y.shape == x.shape
    assert (y.diff(dim=2) >= -1e-4).all()                    # time runs forward only
    assert (y >= -1e-4).all() and (y <= x.shape[2] - 1 + 1e-4).all()
    torch.testing.assert_close(y[:, 0], y[:, 1])             # one map per series, all channels
    assert not torch.allclose(y[0], y[1])                    # a new map per series
    if crop and not warp:
        # window slicing: a straight window of (1 - crop) of the series, stretched to full
        span = y[:, 0, -1] - y[:, 0, 0]
        torch.testing.assert_close(span, torch.full_like(span, (1 - crop) * 39), atol=1e-3,
                                   rtol=0)
    if warp and not crop:
        assert torch.allclose(y[:, :, 0], x[:, :, 0], atol=1e-4)    # ends stay put
        assert torch.allclose(y[:, :, -1], x[:, :, -1], atol=1e-4)


def test_time_maps_stay_inside_each_series_valid_steps():
    torch.manual_seed(2)
    lengths = torch.tensor([40, 25, 7, 1])
    mask = torch.arange(40)[None, :] < lengths[:, None]                      # [4, 40]
    x = _ramp(b=4, c=1) * mask[:, None, :]
    y = augment(x, mask, TrainConfig(time_warp=0.6, crop=0.2, jitter=0.1))
    assert (y[~mask[:, None, :].expand_as(y)] == 0).all()                    # padding stays 0
    clean = augment(x, mask, TrainConfig(time_warp=0.6, crop=0.2))
    for i, n in enumerate(lengths.tolist()):
        v = clean[i, 0, :n]
        assert (v >= -1e-4).all() and (v <= n - 1 + 1e-4).all()              # no padding read
    assert check_mask(mask) is None
    holes = mask.clone()
    holes[1, 3] = False
    assert "series [1]" in check_mask(holes)


def test_jitter_and_scaling_statistics():
    torch.manual_seed(3)
    x = torch.ones(400, 2, 50)
    noise = augment(x, None, TrainConfig(jitter=0.2, time_warp=0)) - x
    assert abs(noise.mean().item()) < 0.01 and noise.std().item() == pytest.approx(0.2, rel=0.02)
    y = augment(x, None, TrainConfig(scaling=0.3, time_warp=0))
    factor = y[:, :, 0]                                                      # [400, 2]
    torch.testing.assert_close(y, factor[:, :, None].expand_as(y))        # constant over time
    assert factor.std().item() == pytest.approx(0.3, rel=0.1)
    assert not torch.allclose(factor[:, 0], factor[:, 1])                    # per channel


def _toy(n: int = 24, t: int = 30):
    rng = np.random.default_rng(0)
    y = np.arange(n) % 2
    wave = np.sin(np.linspace(0, 3, t)[None, :] * (1 + y[:, None]))                # [n, t]
    x = rng.normal(size=(n, 1, t)) + wave[:, None, :]
    return from_arrays(x.astype(np.float32), y, name="toy")


def test_augmented_fit_is_reproducible_and_differs_from_plain():
    data = _toy()
    cfg = TrainConfig(epochs=3, batch=8, threads=1, time_warp=0.3, crop=0.1, jitter=0.05,
                      scaling=0.1)
    a, b = fit(RESNET, cfg, data, **QUIET), fit(RESNET, cfg, data, **QUIET)
    assert a["history"] == b["history"]
    plain = fit(RESNET, dataclasses.replace(cfg, time_warp=0.0, crop=0.0, jitter=0.0,
                                            scaling=0.0), data, **QUIET)
    assert plain["history"][0]["train_loss"] != a["history"][0]["train_loss"]


def test_time_maps_refuse_masks_with_holes():
    data = _toy()
    mask = np.ones((24, 30), dtype=bool)
    mask[5, 2] = False
    holes = from_arrays(data.x * mask[:, None, :], data.y, mask, name="holey")
    with pytest.raises(DataError, match="holey: series \\[5\\] have padding before valid"):
        fit(RESNET, TrainConfig(epochs=1, time_warp=0.2), holes, **QUIET)
    fit(RESNET, TrainConfig(epochs=1, batch=8, jitter=0.1, threads=1), holes, **QUIET)


def test_augmented_run_resumes_to_the_uninterrupted_result(tmp_path, monkeypatch):
    import kairo.tsc._train as T

    data = _toy()
    cfg = TrainConfig(epochs=4, batch=8, threads=1, checkpoint_every=2, time_warp=0.3,
                      crop=0.1, jitter=0.05)
    full = fit(RESNET, cfg, data, **QUIET)
    real, calls = T._train_epoch, []

    def dies_in_epoch_3(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(T, "_train_epoch", dies_in_epoch_3)
    with pytest.raises(KeyboardInterrupt):
        fit(RESNET, cfg, data, checkpoint=tmp_path / "run.pt", **QUIET)
    monkeypatch.setattr(T, "_train_epoch", real)
    again = fit(RESNET, cfg, data, checkpoint=tmp_path / "run.pt", **QUIET)
    assert again["resumed_from"] == 2 and again["history"] == full["history"]


def test_checkpoint_refuses_other_augmentation_scaling_or_head(tmp_path):
    data = _toy()
    ckpt = tmp_path / "run.pt"
    cfg = TrainConfig(epochs=2, batch=8, threads=1, checkpoint_every=1)
    torch_style = dataclasses.replace(RESNET, head_norm="true", weight_init="torch")
    fit(torch_style, cfg, data, checkpoint=ckpt, **QUIET)
    state = torch.load(ckpt, weights_only=True)
    state["epoch"], state["finished"], state["history"] = 1, False, state["history"][:1]
    torch.save(state, ckpt)
    with pytest.raises(DataError, match=r"'time_warp': \(0\.0, 0\.2\)"):
        fit(torch_style, dataclasses.replace(cfg, time_warp=0.2), data, checkpoint=ckpt, **QUIET)
    with pytest.raises(DataError, match=r"'znorm': \('series', 'channel'\)"):
        fit(torch_style, dataclasses.replace(cfg, znorm="channel"), data, checkpoint=ckpt,
            **QUIET)
    with pytest.raises(DataError, match=r"architecture.*'head_norm': \(True, False\)"):
        fit(RESNET, cfg, data, checkpoint=ckpt, **QUIET)       # the ResNet default: no norm
    again = fit(torch_style, cfg, data, checkpoint=ckpt, **QUIET)
    assert again["resumed_from"] == 1 and [h["epoch"] for h in again["history"]] == [1, 2]


@pytest.mark.parametrize("given, kept", [("auto", "auto"), ("0.25", 0.25), ("0", 0.0),
                                         (0.2, 0.2), (1, 1)])
def test_time_warp_takes_auto_or_a_number_given_as_text(given, kept):
    assert TrainConfig(time_warp=given).time_warp == kept


@pytest.mark.parametrize("given, msg", [
    ("warp", "time_warp: expected auto or a number"), ("-0.1", "time_warp must be auto or a "
                                                       "number in \\[0, 10\\], got -0.1"),
    ("nan", "time_warp must be auto or a number"), ("inf", "time_warp must be auto or a "),
    ("AUTO", "time_warp: expected auto"), (True, "time_warp must be a string or a number")])
def test_bad_time_warp_is_refused_naming_the_field(given, msg):
    with pytest.raises(ConfigError, match=msg):
        TrainConfig(time_warp=given)


def _smooth_toy(n: int = 24, t: int = 60) -> "TSData":
    """Two classes of smooth curves (median lag-1 autocorrelation near 1)."""
    y = np.arange(n) % 2
    u = np.linspace(0, 1, t)[None, :]
    rng = np.random.default_rng(3)
    x = np.sin(2 * np.pi * u * (1 + y[:, None]) + rng.uniform(0, 1, (n, 1)))
    return from_arrays(x[:, None, :].astype(np.float32), y, name="smooth")


TINY_TF = ModelConfig(encoder="transformer", tokens="conv", d_model=8, n_heads=2, blocks=1,
                      stem_blocks=1)


def test_auto_warps_smooth_series_exactly_as_the_explicit_setting_does():
    """The default resolves to TIME_WARP_AUTO on smooth series, and trains the very model an
    explicit --time-warp of that value trains; run metadata records what it chose."""
    data = _smooth_toy()
    cfg = TrainConfig(steps=6, batch=8, threads=1)
    auto = fit(TINY_TF, cfg, data, **QUIET)
    explicit = fit(TINY_TF, dataclasses.replace(cfg, time_warp=TIME_WARP_AUTO), data, **QUIET)
    off = fit(TINY_TF, dataclasses.replace(cfg, time_warp=0), data, **QUIET)
    assert auto["meta"]["time_warp"] == TIME_WARP_AUTO
    assert auto["meta"]["train_config"]["time_warp"] == TIME_WARP_AUTO
    assert auto["history"] == explicit["history"]
    for a, b in zip(auto["model"].state_dict().values(),
                    explicit["model"].state_dict().values()):
        torch.testing.assert_close(a, b, atol=0, rtol=0)
    assert off["meta"]["time_warp"] == 0.0 and off["history"] != auto["history"]
    rough = fit(TINY_TF, cfg, _toy(), **QUIET)                       # noise + slow wave
    assert rough["meta"]["time_warp"] == 0.0 and rough["meta"]["mixup"] == "off"


def test_auto_leaves_series_with_inner_padding_unwarped():
    """An explicit time warp refuses padding inside a series; auto just does not warp."""
    data = _smooth_toy()
    mask = np.ones((24, 60), dtype=bool)
    mask[5, 2] = False
    holes = from_arrays(data.x * mask[:, None, :], data.y, mask, name="holey")
    res = fit(TINY_TF, TrainConfig(steps=2, batch=8, threads=1), holes, **QUIET)
    assert res["meta"]["time_warp"] == 0.0
    with pytest.raises(DataError, match="holey: series \\[5\\] have padding before valid"):
        fit(TINY_TF, TrainConfig(steps=2, time_warp=0.2), holes, **QUIET)


# ---------------------------------------------------------------------------- CutMix
def _lengths_mask(lengths, t):
    return torch.arange(t)[None, :] < torch.as_tensor(lengths)[:, None]


@pytest.mark.parametrize("keep, place", [(0.7, 0.0), (0.7, 1.0), (0.3, 0.5), (0.0, 0.4),
                                         (1.0, 0.9)])
def test_cut_mix_replaces_one_stretch_inside_both_series_valid_steps(keep, place):
    t = 40
    lengths = torch.tensor([40, 25, 33, 10])
    mask = _lengths_mask(lengths, t)
    x = torch.stack([(i + 1) * 100 + torch.arange(t, dtype=torch.float32)
                     for i in range(4)])[:, None, :].repeat(1, 2, 1) * mask[:, None, :]
    perm = torch.tensor([1, 2, 3, 0])
    y, own = cut_mix(x, mask, perm, keep, place)
    for i in range(4):
        j = int(perm[i])
        took = (y[i] != x[i]).any(dim=0)                             # steps taken from j
        where = torch.nonzero(took).flatten()
        room = min(int(lengths[i]), int(lengths[j]))
        if len(where):
            assert where.max() - where.min() + 1 == len(where)        # one stretch
            assert where.max() < room                                 # valid in both
            torch.testing.assert_close(y[i][:, took], x[j][:, took], atol=0, rtol=0)
        assert len(where) == int(np.floor((place * keep + (1 - keep)) * room)) - \
            int(np.floor(place * keep * room))
        assert (y[i][:, ~mask[i]] == 0).all()                         # padding stays
        assert float(own[i]) == pytest.approx(1 - len(where) / int(lengths[i]))
    if keep == 1.0:
        torch.testing.assert_close(y, x, atol=0, rtol=0)
        assert (own == 1).all()


def test_cut_mix_without_a_mask_cuts_the_same_steps_of_every_series():
    torch.manual_seed(0)
    x = torch.randn(5, 3, 50)
    perm = torch.tensor([4, 3, 2, 1, 0])
    y, own = cut_mix(x, None, perm, 0.6, 0.25)          # 20 steps cut, from step 7
    torch.testing.assert_close(y[:, :, 7:27], x[perm][:, :, 7:27], atol=0, rtol=0)
    torch.testing.assert_close(y[:, :, :7], x[:, :, :7], atol=0, rtol=0)
    torch.testing.assert_close(y[:, :, 27:], x[:, :, 27:], atol=0, rtol=0)
    torch.testing.assert_close(own, torch.full((5,), 0.6))
    with pytest.raises(ValueError, match="keep and place must be in \\[0, 1\\]"):
        cut_mix(x, None, perm, 1.2, 0.5)


def test_cutmix_and_mixup_are_not_both_on():
    with pytest.raises(ConfigError, match="mixup and cutmix are both on"):
        TrainConfig(mixup="on", cutmix="on")
    for bad in ("yes", True):
        with pytest.raises(ConfigError, match="^cutmix"):
            TrainConfig(cutmix=bad)
    with pytest.raises(ConfigError, match="^cutmix_alpha"):
        TrainConfig(cutmix_alpha=0.0)


def _rough_long(n: int = 24, t: int = SAM_AUTO_STEPS + 16) -> "TSData":
    """Two classes of noisy oscillations (not smooth: mixup "auto" is off), longer than the
    sharpness-aware steps' reach (off too), so that CutMix is the only thing that varies."""
    rng = np.random.default_rng(5)
    y = np.arange(n) % 2
    steps = np.arange(t)[None, :]
    x = np.sin(np.pi * steps / (2 + y[:, None])) + rng.normal(0, 0.5, (n, t))
    return from_arrays(x[:, None, :].astype(np.float32), y, name="rough")


def test_cutmix_fit_is_reproducible_and_replaces_mixup_auto():
    data = _rough_long()
    cfg = TrainConfig(steps=6, batch=8, threads=1, cutmix="on")
    a, b = fit(TINY_TF, cfg, data, **QUIET), fit(TINY_TF, cfg, data, **QUIET)
    assert a["history"] == b["history"]
    for u, v in zip(a["model"].state_dict().values(), b["model"].state_dict().values()):
        torch.testing.assert_close(u, v, atol=0, rtol=0)
    assert a["meta"]["train_config"]["cutmix"] == "on"
    off = fit(TINY_TF, dataclasses.replace(cfg, cutmix="off"), data, **QUIET)
    assert off["history"] != a["history"]
    # the default, "auto", cuts these series (long, rough, of one length) exactly as "on"
    assert TrainConfig().cutmix == "auto"
    auto = fit(TINY_TF, dataclasses.replace(cfg, cutmix="auto"), data, **QUIET)
    assert auto["history"] == a["history"] and auto["meta"]["cutmix"] == "on"
    # the same series at many lengths (padded at the end): "auto" does not cut them
    lengths = np.where(np.arange(24) % 3 == 0, data.n_steps - 20, data.n_steps)
    mask = np.arange(data.n_steps)[None, :] < lengths[:, None]
    ragged = from_arrays(data.x * mask[:, None, :], data.y, mask, name="ragged")
    auto = fit(TINY_TF, dataclasses.replace(cfg, cutmix="auto"), ragged, **QUIET)
    pinned = fit(TINY_TF, dataclasses.replace(cfg, cutmix="off"), ragged, **QUIET)
    assert auto["meta"]["cutmix"] == "off" and auto["history"] == pinned["history"]
    smooth = _smooth_toy(t=80)
    plain = fit(TINY_TF, TrainConfig(steps=2, batch=8, threads=1), smooth, **QUIET)["meta"]
    assert (plain["mixup"], plain["cutmix"]) == ("on", "off")
    cut = fit(TINY_TF, dataclasses.replace(cfg, steps=2), smooth, **QUIET)
    assert cut["meta"]["mixup"] == "off"
    assert cut["meta"]["time_warp"] == TIME_WARP_AUTO                # warping stays


def test_cutmix_refuses_padding_inside_series():
    data = _rough_long()
    mask = np.ones((24, data.n_steps), dtype=bool)
    mask[3, 1] = False
    holes = from_arrays(data.x * mask[:, None, :], data.y, mask, name="holey")
    with pytest.raises(DataError, match="holey: series \\[3\\] have padding before valid"):
        fit(TINY_TF, TrainConfig(steps=2, cutmix="on"), holes, **QUIET)
