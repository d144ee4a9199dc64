"""Training-time augmentation of time series, applied batch by batch inside ``fit``.

Four transforms, each off at 0 and drawn from torch's random stream (which ``fit`` seeds per
epoch, so augmented runs stay reproducible and resumable):

- ``jitter``: add Gaussian noise of this standard deviation (in z-normalized units);
- ``scaling``: multiply each series and channel by 1 + N(0, scaling²);
- ``time_warp``: resample each series along a random smooth monotone time map whose log speed
  is a piecewise-linear curve through a few N(0, time_warp²) knots (Um et al. 2017);
- ``crop``: window slicing (Le Guennec et al. 2016): a random window of (1 − crop) of the
  series, stretched back to its full length.

``cut_mix`` is CutMix (Yun et al. 2019) for series, which ``fit`` applies per batch (it changes
the labels' weights as well as the series).

Time maps act on each series' valid steps only (padding sits at the end, see ``_data``), and
padded steps stay zero. Written here because the transforms must run on batched torch tensors
with masks inside the training loop; the augmentation libraries (tsaug, tsai's) work on NumPy
arrays or ignore masks.
"""

from __future__ import annotations

import torch

__all__ = ["augment", "is_active", "check_mask", "cut_mix"]

_KNOTS = 4          # interior knots of the time-warp speed curve


def _warp(cfg) -> float:
    if cfg.time_warp == "auto":
        raise ValueError("time_warp 'auto' must be resolved first (resolve_time_warp)")
    return float(cfg.time_warp)


def is_active(cfg) -> bool:
    """Whether the TrainConfig ``cfg`` asks for any augmentation (its ``time_warp`` a number:
    :func:`kairo.tsc.fit` resolves "auto" before training)."""
    return bool(cfg.jitter or cfg.scaling or _warp(cfg) or cfg.crop)


def check_mask(mask) -> str | None:
    """None when every row of ``mask`` [N, T] is a prefix of valid steps, else why not."""
    if mask is None:
        return None
    m = torch.as_tensor(mask)
    lengths = m.sum(dim=1)                                                   # [N]
    prefix = torch.arange(m.shape[1], device=m.device)[None, :] < lengths[:, None]
    bad = torch.nonzero((prefix != m).any(dim=1)).flatten()
    if len(bad):
        return (f"series {bad[:5].tolist()} have padding before valid steps; time_warp and "
                f"crop and cutmix need each series' valid steps first and padding at the "
                f"end")
    return None


def _time_map(n: int, t: int, lengths: torch.Tensor, warp: float, crop: float,
              device) -> torch.Tensor:
    """Source positions [n, t] (fractional step indices) for each output step."""
    u = torch.linspace(0.0, 1.0, t, device=device).expand(n, t)              # [n, t]
    if warp:
        knots = torch.randn(n, 1, _KNOTS + 2, device=device) * warp          # log speeds
        speed = torch.nn.functional.interpolate(knots, size=t, mode="linear",
                                                align_corners=True)[:, 0].exp()   # [n, t]
        cum = torch.cumsum(speed, dim=1) - speed[:, :1]
        u = cum / cum[:, -1:]                                                # monotone 0 → 1
    lo = torch.zeros(n, 1, device=device)
    span = torch.ones(n, 1, device=device)
    if crop:
        span = span * (1.0 - crop)
        lo = torch.rand(n, 1, device=device) * crop
    last = (lengths.to(u.dtype) - 1.0).clamp(min=0.0)[:, None]               # [n, 1]
    # output step j of a series of length L reads u at j / (L - 1), not at j / (t - 1)
    j = torch.arange(t, device=device, dtype=u.dtype)[None, :]
    q = (j / last.clamp(min=1.0)).clamp(max=1.0) * (t - 1)                   # index into u
    q0 = q.floor().long().clamp(max=t - 1)
    q1 = (q0 + 1).clamp(max=t - 1)
    w = q - q0
    uq = torch.gather(u, 1, q0) * (1 - w) + torch.gather(u, 1, q1) * w        # [n, t]
    return (lo + span * uq) * last


def augment(x: torch.Tensor, mask: torch.Tensor | None, cfg) -> torch.Tensor:
    """An augmented copy of the batch ``x`` [B, C, T] (``mask`` [B, T] marks valid steps)."""
    b, c, t = x.shape
    warp = _warp(cfg)
    if warp or cfg.crop:
        lengths = (torch.full((b,), t, device=x.device) if mask is None
                   else mask.sum(dim=1))
        pos = _time_map(b, t, lengths, warp, cfg.crop, x.device)             # [B, T]
        p0 = pos.floor().long().clamp(0, t - 1)
        p1 = (p0 + 1).clamp(max=t - 1)
        w = (pos - p0.to(pos.dtype)).to(x.dtype)[:, None, :]                 # [B, 1, T]
        gather = lambda p: torch.gather(x, 2, p[:, None, :].expand(b, c, t))  # noqa: E731
        x = gather(p0) * (1 - w) + gather(p1) * w
    if cfg.scaling:
        x = x * (1.0 + cfg.scaling * torch.randn(b, c, 1, device=x.device, dtype=x.dtype))
    if cfg.jitter:
        x = x + cfg.jitter * torch.randn_like(x)
    if mask is not None:
        x = x * mask[:, None, :].to(x.dtype)                                 # padding stays 0
    return x


def cut_mix(x: torch.Tensor, mask: torch.Tensor | None, perm: torch.Tensor, keep: float,
            place: float) -> tuple[torch.Tensor, torch.Tensor]:
    """CutMix for a batch of series: ``(mixed x, own weight [B])``.

    Series i gets a stretch of ``1 - keep`` of its steps replaced by the same steps of series
    ``perm[i]``, placed at ``place`` ∈ [0, 1] of the room left (0: at the start, 1: at the
    end). The stretch lies within the valid steps of both series (the shorter's length sets
    it), so padding never moves and every step of the result is a step of one of the two;
    ``keep`` and ``place`` are drawn once per batch. The own weight is the fraction of series
    i's valid steps it kept: the loss weighs its label by that and its partner's by the rest.
    """
    b, _, t = x.shape
    if not (0.0 <= keep <= 1.0 and 0.0 <= place <= 1.0):
        raise ValueError(f"keep and place must be in [0, 1], got {keep} and {place}")
    lengths = (torch.full((b,), t, device=x.device) if mask is None
               else mask.sum(dim=1))                                          # [B]
    room = torch.minimum(lengths, lengths[perm]).to(torch.float64)
    cut = 1.0 - keep
    # (1 - cut), not keep: the measured runs placed the cut so, and a floor can differ by a step
    start = torch.floor(place * (1.0 - cut) * room).long()
    stop = torch.floor((place * (1.0 - cut) + cut) * room).long()
    steps = torch.arange(t, device=x.device)[None, :]
    inside = (steps >= start[:, None]) & (steps < stop[:, None])              # [B, T]
    mixed = torch.where(inside[:, None, :], x[perm], x)
    own = 1.0 - (stop - start).to(x.dtype) / lengths.clamp(min=1).to(x.dtype)
    return mixed, own
