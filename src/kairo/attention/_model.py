"""The time-series classifier: encoder → pooling head → LayerNorm → Linear, built from one frozen
config.

x [B, C, T] (mask [B, T] bool, True = valid step) → encoder tokens [B, T', D] → pool [B, D] →
LayerNorm (unless ``head_norm`` is off) → logits [B, n_classes].
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from kairo._errors import ConfigError
from kairo.attention._config import ModelConfig
from kairo.attention._encoders import (ResNet1D, TransformerEncoder,
                                      check_series)
from kairo.attention._pooling import make_pool

__all__ = ["ModelConfig", "TSClassifier", "build_classifier"]


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
        if cfg.encoder == "resnet":
            self.encoder = ResNet1D(n_channels, d=cfg.d_model, blocks=cfg.blocks,
                                    kernel_sizes=cfg.kernel_sizes)
        else:
            self.encoder = TransformerEncoder(
                n_channels, d=cfg.d_model, n_heads=cfg.n_heads, n_kv_heads=cfg.n_kv_heads or None,
                layers=cfg.blocks, dropout=cfg.dropout, norm=cfg.norm_position, tokens=cfg.tokens,
                patch=cfg.patch, positional=cfg.positional, max_len=max_len,
                stem_blocks=cfg.stem_blocks, kernel_sizes=cfg.kernel_sizes,
                max_tokens=cfg.max_tokens)
        d = self.encoder.d_out
        # on a Transformer the encoder's own attention mixes the CLS token
        self.prefix = cfg.pool == "cls" and cfg.encoder == "transformer"
        self.pool = make_pool(cfg.pool, d, cfg.pool_heads, cfg.pool_queries,
                              cls_mix=not self.prefix)
        # "auto" resolved for this encoder; the config keeps "auto"
        self.resolved = cfg.resolved()
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
