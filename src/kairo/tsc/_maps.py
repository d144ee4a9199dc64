"""``kairo tsc maps`` and ``kairo tsc encodings``: the figures of a trained model's pooling
weights and self-attention, and of the sinusoidal encodings. Importing this module does not
import torch (the run functions do)."""

from __future__ import annotations

import numpy as np

from kairo._errors import ConfigError
from kairo.tsc._config import EncodingsConfig, MapsConfig

__all__ = ["run_maps", "run_encodings", "maps_figure"]


def run_maps(cfg: MapsConfig, rd) -> str:
    """Pooling weights over time and per-head self-attention for chosen series."""
    import torch

    from kairo.tsc import _inference, _train
    from kairo.tsc._inputs import (_dataset_warning, _model_classes, _resolve_dataset,
                                   _scored_data)

    model, meta = _inference.load_classifier(cfg.model)
    ensemble, which = None, ""
    if model.arch.get("ensemble"):
        # each member attends on its own: an average of their maps would be no model's
        n = model.arch["ensemble"]
        if cfg.member >= n:
            raise ConfigError(f"member {cfg.member}: model {cfg.model} is an ensemble of {n} "
                              f"models, members 0…{n - 1}")
        ensemble, model = model, model.members[cfg.member]
        which = f" (member {cfg.member} of the ensemble of {n})"
    elif cfg.member:
        raise ConfigError(f"member {cfg.member}: model {cfg.model} is one model, not an "
                          f"ensemble (kairo tsc train --ensemble); leave member at 0")
    cfg = _resolve_dataset(cfg, meta, rd)
    _dataset_warning(cfg, meta)
    data = _scored_data(cfg)
    classes = _model_classes(meta, data)
    bad = [i for i in cfg.series if not 0 <= i < len(data)]
    if bad:
        raise ConfigError(f"series {bad} are out of range: the {cfg.split} split has "
                          f"{len(data)} series (0…{len(data) - 1})")
    _inference.check_max_len(model, data.n_steps, f"{data.name} {cfg.split}")
    x_all = _train.scale_input(data.x, data.mask, meta.get("meta", meta))   # per series
    if ensemble is not None:
        # the input as this member was trained to see it (channel statistics of its own)
        with torch.no_grad():
            x_all = ensemble.member_input(
                cfg.member, torch.from_numpy(np.ascontiguousarray(x_all, dtype=np.float32)),
                None if data.mask is None else torch.from_numpy(data.mask)).numpy()
    x = x_all[list(cfg.series)]
    mask = None if data.mask is None else data.mask[list(cfg.series)]
    model.eval()
    with torch.no_grad():
        xt = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
        mt = None if mask is None else torch.from_numpy(mask)
        maps = model.attention_maps(xt, mt)
    pred = maps["logits"].argmax(1).numpy()
    names = []
    for j, i in enumerate(cfg.series):
        if f"attention_{i}.png" in names:                   # --series 0,0
            continue
        fig = maps_figure(data.x[i], None if data.mask is None else data.mask[i], maps, j,
                          title=f"{data.name} {cfg.split} #{i}: true {data.classes[data.y[i]]}, "
                                f"predicted {classes[pred[j]]}{which}")
        names.append(f"attention_{i}.png")
        rd.add(names[-1], fig)
    msg = f"wrote {', '.join(names)}{which}"
    if maps["pool"] is None:
        return msg + f"; a {model.cfg.pool} pool has no weights to summarise"
    table = _pool_table(model, x_all, data.mask, data.y, classes, data.classes)
    rd.add("pooling.csv", table)
    eff, peak = table["effective_fraction"], table["peak_ratio"]
    return (f"{msg}, pooling.csv; pooling weights over the {len(data)} {cfg.split} series: "
            f"effective fraction of tokens median {eff.median():.3f} (min {eff.min():.3f}; "
            f"1 = uniform, as mean pooling), peak weight {peak.median():.2f}× uniform "
            f"(max {peak.max():.2f}×)")


def _pool_table(model, x_all, mask, y, classes, true_names):
    """pool_concentration for every series of a split, a row per series and pooling head.
    attention_maps also keeps every layer's [B, H, T, T] self-attention (float32), so the
    batch keeps those under ~256 MB."""
    import pandas as pd
    import torch

    from kairo.tsc._pooling import pool_concentration

    t = x_all.shape[-1]
    per_series = 4 * t * t * model.cfg.n_heads * model.cfg.blocks
    batch = max(1, min(64, (256 << 20) // per_series))
    pred, eff, peak = [], [], []
    for s in range(0, len(y), batch):
        xt = torch.from_numpy(np.ascontiguousarray(x_all[s:s + batch], dtype=np.float32))
        mt = None if mask is None else torch.from_numpy(mask[s:s + batch])
        maps = model.attention_maps(xt, mt)                     # no_grad inside
        c = pool_concentration(maps["pool"], maps["mask"])
        pred.append(maps["logits"].argmax(1).numpy())
        eff.append(c["effective_fraction"])
        peak.append(c["peak_ratio"])
    eff, peak, pred = np.concatenate(eff), np.concatenate(peak), np.concatenate(pred)
    n, heads = eff.shape                                        # rows: series-major, then head
    return pd.DataFrame({"series": np.repeat(np.arange(n), heads),
                         "true": np.repeat(np.asarray(true_names, dtype=object)[y], heads),
                         "predicted": np.repeat(np.asarray(classes, dtype=object)[pred], heads),
                         "head": np.tile(np.arange(heads), n),
                         "effective_fraction": eff.ravel(), "peak_ratio": peak.ravel()})


def maps_figure(series, mask, maps: dict, j: int, title: str = ""):
    """The series with the pooling head's weights drawn on its time axis (a token covers
    ``steps_per_token`` steps), and the last layer's self-attention head by head."""
    from matplotlib.figure import Figure

    pool, selfs = maps.get("pool"), maps.get("self") or []
    step = int(maps.get("steps_per_token", 1))
    n_pre = int(maps.get("n_prefix", 0))
    tmask = maps.get("mask")
    valid = None if tmask is None else np.asarray(tmask[j], dtype=bool)
    n_heads = selfs[-1].shape[1] if selfs else 0
    rows = 2 + (1 if selfs else 0)
    cols = max(3, n_heads)
    fig = Figure(figsize=(2.6 * cols, 2.4 * rows), layout="constrained")
    grid = fig.add_gridspec(rows, cols)
    ax = fig.add_subplot(grid[0, :])
    t = np.arange(series.shape[-1]) if mask is None else np.flatnonzero(mask)
    for c in range(series.shape[0]):
        ax.plot(t, series[c, t], lw=1)
    ax.set(title=title or "series", xlabel="time step")
    ax = fig.add_subplot(grid[1, :], sharex=fig.axes[0])
    if pool is not None:
        w = np.asarray(pool[j], dtype=float)                      # [heads, tokens]
        if valid is not None:
            w = np.where(valid[None, :], w, np.nan)
        centre = (np.arange(w.shape[1]) + 0.5) * step - 0.5     # token centres in steps
        for h in range(w.shape[0]):
            ax.step(centre, w[h], where="mid", lw=1, label=f"query·head {h}")
        # the axis is scaled to the weights' range: the uniform level shows how far from mean
        # pooling they are (a CLS row sums to less than 1, hence its own sum)
        n_valid = w.shape[1] if valid is None else int(valid.sum())
        ax.axhline(float(np.nanmean(np.nansum(w, 1))) / n_valid, color="0.5", ls="--", lw=0.8,
                   label="uniform (mean pooling)")
        lo, hi = ax.get_ylim()                                  # headroom for the legend
        ax.set_ylim(lo, hi + 0.3 * (hi - lo))
        ax.legend(frameon=False, fontsize=7, ncol=5, loc="upper center")
        ax.set(title=f"pooling weights (one token = {step} step{'s' if step > 1 else ''})",
               xlabel="time step", ylabel="weight")
    else:
        ax.text(0.5, 0.5, "this pooling head has no attention weights (mean/max)",
                ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
    if selfs:
        last = np.asarray(selfs[-1][j], dtype=float)               # [H, T'+n_pre, T'+n_pre]
        keep = np.arange(last.shape[-1])
        if valid is not None:
            keep = np.concatenate([np.arange(n_pre), n_pre + np.flatnonzero(valid)])
        for h in range(n_heads):
            a = fig.add_subplot(grid[2, h])
            a.imshow(last[h][np.ix_(keep, keep)], cmap="magma", aspect="auto")
            a.set(title=f"layer {len(selfs)} head {h}", xlabel="key token",
                  ylabel="query token" if h == 0 else None)
    return fig


def run_encodings(cfg: EncodingsConfig, rd) -> str:
    from kairo.tsc._encodings import encoding_figure, offset_rotation, sinusoidal_table

    rd.add("sinusoidal.png", encoding_figure(d=cfg.d, n_pos=cfg.positions, base=cfg.base))
    pe = sinusoidal_table(cfg.positions, cfg.d, cfg.base).double()
    err = 0.0
    # offsets that leave at least one pair of positions to compare
    phis = sorted({p for p in (1, 5, cfg.positions // 3) if 1 <= p < cfg.positions})
    for phi in phis:
        m = offset_rotation(phi, cfg.d, cfg.base).double()
        err = max(err, float((pe[phi:] - pe[:-phi] @ m.T).abs().max()))
    rd.add("encodings.json", {"d": cfg.d, "positions": cfg.positions, "base": cfg.base,
                                     "offsets": phis, "max_offset_rotation_error": err})
    return (f"wrote sinusoidal.png; pe(pos+φ) = M_φ·pe(pos) holds to {err:.1e} "
            f"(φ = {', '.join(map(str, phis))})")
