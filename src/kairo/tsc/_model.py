"""The time-series classifier: encoder → pooling head → LayerNorm → Linear, built from one frozen
config.

x [B, C, T] (mask [B, T] bool, True = valid step) → encoder tokens [B, T', D] → pool [B, D] →
LayerNorm (unless ``head_norm`` is off) → logits [B, n_classes].
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch
from torch import nn

from kairo._errors import ConfigError
from kairo.tsc._config import ModelConfig
from kairo.tsc._encoders import (ResNet1D, TransformerEncoder,
                                      check_series)
from kairo.tsc._pooling import make_pool

__all__ = ["ModelConfig", "TSClassifier", "TSEnsemble", "build_classifier"]


class TSClassifier(nn.Module):
    """Encoder → pooling head → LayerNorm (optional) → Linear(D, n_classes).

    ``forward(x [B,C,T] float, mask [B,T] bool | None) → logits [B, n_classes]`` (mask True =
    valid step; padded steps never change the logits in eval mode). With the "cls" pool on a
    Transformer the CLS token is prepended before the encoder's blocks; on a ResNet the pool
    mixes it in with its own block (see :class:`ClsPool`).
    """

    def __init__(self, cfg: ModelConfig, n_channels: int, n_classes: int, max_len: int):
        super().__init__()
        for name, v, low in (("n_channels", n_channels, 1), ("n_classes", n_classes, 2),
                             ("max_len", max_len, 1)):
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ConfigError(f"{name} must be an integer ≥ {low}, got {v!r}")
        self.cfg, self.n_channels, self.n_classes, self.max_len = cfg, n_channels, n_classes, \
            max_len
        # "auto" resolved for this encoder and length; the config keeps "auto"
        self.resolved = cfg.resolved(max_len)
        if cfg.encoder == "resnet":
            self.encoder = ResNet1D(n_channels, d=cfg.d_model, blocks=cfg.blocks,
                                    kernel_sizes=cfg.kernel_sizes)
        else:
            self.encoder = TransformerEncoder(
                n_channels, d=cfg.d_model, n_heads=cfg.n_heads, n_kv_heads=cfg.n_kv_heads or None,
                layers=cfg.blocks, dropout=cfg.dropout, norm=cfg.norm_position, tokens=cfg.tokens,
                patch=cfg.patch, positional=cfg.positional, max_len=max_len,
                stem_blocks=self.resolved.get("stem_blocks", cfg.stem_blocks or 1),
                kernel_sizes=cfg.kernel_sizes,
                max_tokens=cfg.max_tokens,
                stem_dilations=tuple(self.resolved.get("stem_dilations") or ()) or None,
                stem_pool=int(self.resolved.get("stem_pool", 1)))
        d = self.encoder.d_out
        # on a Transformer the encoder's own attention mixes the CLS token
        self.prefix = cfg.pool == "cls" and cfg.encoder == "transformer"
        self.pool = make_pool(cfg.pool, d, cfg.pool_heads, cfg.pool_queries,
                              cls_mix=not self.prefix)
        # same keys with or without the norm: head.0 = LayerNorm (or nothing), head.1 = Linear
        self.head = nn.Sequential(nn.LayerNorm(d) if self.resolved["head_norm"] else nn.Identity(),
                                  nn.Linear(d, n_classes))
        if self.resolved["weight_init"] == "glorot":
            self.apply(_glorot)

    @property
    def arch(self) -> dict:
        """What a saved model must match to be loaded: the config fields and the data shape."""
        return {**dataclasses.asdict(self.cfg), "n_channels": self.n_channels,
                "n_classes": self.n_classes, "max_len": self.max_len}

    def _encode(self, x, mask, need_weights: bool):
        check_series(x, mask, self.n_channels)
        if self.prefix:
            return self.encoder(x, mask, prefix=self.pool.prepend, need_weights=need_weights)
        return self.encoder(x, mask, need_weights=need_weights)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        tokens, tmask = self._encode(x, mask, need_weights=False)                   # [B,T',D]
        return self.head(self.pool(tokens, tmask))                                 # [B,K]

    @torch.no_grad()
    def attention_maps(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> dict:
        """Attention weights for figures (call in eval mode for reproducible maps).

        Returns a dict:

        - ``"pool"``: [B, heads, T'] pooling weights over the tokens, or None (mean/max pools).
          For "cls": the (last) CLS attention row without the CLS column, so its rows sum to
          1 minus the CLS token's weight on itself.
        - ``"self"``: list per layer of [B, H, T'+n_prefix, T'+n_prefix], or None (ResNet).
        - ``"mask"``: [B, T'] valid tokens (aligned with "pool"), or None.
        - ``"n_prefix"``: 1 when "self" has the CLS token at index 0, else 0.
        - ``"steps_per_token"``: time steps per token (the patch size, or 1).
        - ``"logits"``: [B, n_classes], the forward pass's (through the reference attention).
        """
        tokens, tmask = self._encode(x, mask, need_weights=True)
        logits = self.head(self.pool(tokens, tmask))
        self_maps = getattr(self.encoder, "last_weights", None)
        pool = self.pool.last_weights
        n_prefix = 1 if self.prefix else 0
        if self.prefix:
            pool = self_maps[-1][:, :, 0, 1:]
            tmask = None if tmask is None else tmask[:, 1:]
        return {"pool": pool, "self": self_maps, "mask": tmask, "n_prefix": n_prefix,
                "steps_per_token": self.encoder.steps_per_token, "logits": logits}


class TSEnsemble(nn.Module):
    """Classifiers of one architecture whose class probabilities are averaged.

    ``forward(x [B,C,T], mask [B,T] | None) → [B, n_classes]`` returns the log of the members'
    mean softmax probabilities, log(1/n Σ_i softmax(member_i(x))): its softmax is that mean
    itself and its argmax the class of the averaged vote, so `predict`, `evaluate` and a
    saved model treat an ensemble as one classifier. ``n_channels``, ``n_classes``,
    ``max_len``, ``cfg`` and ``resolved`` are the members'; ``arch`` is theirs plus
    ``"ensemble"``, the member count (a saved ensemble is rebuilt from it).

    The input is scaled once, as member 0 was trained to see it (``fit_meta``: member 0's,
    with a ``members`` list of each member's seed and best epoch). Members trained with
    other per-channel statistics (``znorm="channel"``: each seed holds out its own validation
    series) get an affine map per channel onto their own scaling (buffers ``input_scale``,
    ``input_shift`` [n, C]; 1 and 0 for every other scaling), so each member sees what it
    would see alone, up to float32 rounding. Members without ``fit_meta`` take the input as
    given.
    """

    def __init__(self, members):
        super().__init__()
        members = list(members)
        if not members:
            raise ConfigError("an ensemble needs at least one member")
        bad = [type(m).__name__ for m in members if not isinstance(m, TSClassifier)]
        if bad:
            raise ConfigError(f"ensemble members must be TSClassifier models, got {bad[0]}")
        first = {**members[0].arch, **members[0].resolved}
        for i, m in enumerate(members[1:], 1):
            arch = {**m.arch, **m.resolved}
            diff = {k: (first.get(k), arch.get(k)) for k in sorted(set(first) | set(arch))
                    if first.get(k) != arch.get(k)}
            if diff:
                raise ConfigError(f"ensemble members must share one architecture; member {i} "
                                  f"differs from member 0 (member 0 vs {i}: {diff})")
        self.members = nn.ModuleList(members)
        m0 = members[0]
        self.cfg, self.n_channels, self.n_classes, self.max_len = m0.cfg, m0.n_channels, \
            m0.n_classes, m0.max_len
        self.resolved = dict(m0.resolved)
        scale, shift = _input_maps(members)
        device = next(m0.parameters()).device                  # the members' (fit_ensemble)
        self.register_buffer("input_scale", scale.to(device))                      # [n, C]
        self.register_buffer("input_shift", shift.to(device))                      # [n, C]
        meta = _ensemble_meta(members)
        if meta is not None:
            self.fit_meta = meta

    @property
    def n_members(self) -> int:
        return len(self.members)

    @property
    def arch(self) -> dict:
        """The members' architecture and ``"ensemble"``, their count."""
        return {**self.members[0].arch, "ensemble": self.n_members}

    def member_input(self, i: int, x: torch.Tensor, mask: torch.Tensor | None = None
                     ) -> torch.Tensor:
        """``x`` (scaled as the ensemble's ``fit_meta`` says) as member ``i`` was trained to
        see it; padded steps are left as they are."""
        xi = x * self.input_scale[i][None, :, None] + self.input_shift[i][None, :, None]
        return xi if mask is None else torch.where(mask[:, None, :], xi, x)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        check_series(x, mask, self.n_channels)
        logp = torch.stack([torch.log_softmax(m(self.member_input(i, x, mask), mask), dim=1)
                            for i, m in enumerate(self.members)])                 # [n, B, K]
        # log-sum-exp: the mean of probabilities without leaving log space (no underflow)
        return torch.logsumexp(logp, dim=0) - math.log(self.n_members)             # [B, K]


def _input_maps(members) -> tuple[torch.Tensor, torch.Tensor]:
    """Per member and channel (scale, shift) [n, C] from member 0's input scaling onto the
    member's own (see TSEnsemble)."""
    n, c = len(members), members[0].n_channels
    scale, shift = np.ones((n, c)), np.zeros((n, c))
    metas = [getattr(m, "fit_meta", None) for m in members]
    if all(isinstance(fm, dict) for fm in metas):
        modes = [fm.get("znorm", "none") for fm in metas]
        if len(set(modes)) > 1:
            raise ConfigError(f"ensemble members were trained with different input scalings "
                              f"(znorm {modes}); an ensemble scales its input once")
        if modes[0] == "channel":
            m0 = np.asarray(metas[0]["znorm_mean"], dtype=np.float64)
            s0 = np.asarray(metas[0]["znorm_std"], dtype=np.float64)
            for i, fm in enumerate(metas):
                mi = np.asarray(fm["znorm_mean"], dtype=np.float64)
                si = np.asarray(fm["znorm_std"], dtype=np.float64)
                # (x − m_i) / s_i = z0 · s0/s_i + (m0 − m_i)/s_i with z0 = (x − m0) / s0
                scale[i], shift[i] = s0 / si, (m0 - mi) / si
    return (torch.from_numpy(scale.astype(np.float32)),
            torch.from_numpy(shift.astype(np.float32)))


def _ensemble_meta(members) -> dict | None:
    """Member 0's ``fit_meta`` without its per-member fields, and a ``members`` list of each
    member's seed and epochs; None unless every member has one (a model from `fit`)."""
    metas = [getattr(m, "fit_meta", None) for m in members]
    if not all(isinstance(fm, dict) for fm in metas):
        return None
    classes = [list(fm.get("classes", [])) for fm in metas]
    if any(c != classes[0] for c in classes):
        raise ConfigError(f"ensemble members name different classes: {classes}")
    per_member = ("best_epoch", "epochs_run")
    meta = {k: v for k, v in metas[0].items() if k not in per_member}
    meta["members"] = [
        {"seed": fm.get("train_config", {}).get("seed"),
         **{k: fm[k] for k in (*per_member, "znorm_mean", "znorm_std") if k in fm}}
        for fm in metas]
    return meta


def _glorot(module: nn.Module) -> None:
    """Keras's defaults for a convolution or dense layer: Glorot-uniform weights (fan in and out
    count the kernel taps, as Keras's do), zero biases. Norms, embeddings, CLS tokens and
    pooling queries keep their own initialisation."""
    if isinstance(module, (nn.Conv1d, nn.Linear)):
        nn.init.xavier_uniform_(module.weight)
        if module.bias is not None:
            nn.init.zeros_(module.bias)


def build_classifier(cfg: ModelConfig, n_channels: int, n_classes: int,
                     max_len: int) -> TSClassifier:
    """A freshly initialised classifier (the caller seeds torch first)."""
    if not isinstance(cfg, ModelConfig):
        raise ConfigError(f"cfg must be a ModelConfig, got {type(cfg).__name__}")
    return TSClassifier(cfg, n_channels, n_classes, max_len)
