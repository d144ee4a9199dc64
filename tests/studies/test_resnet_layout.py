"""benchmarks/studies/resnet_layout.py: the layout probe times kairo's ResNet in both layouts
against a plain [B, C, T] copy, which must compute the same function."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.study


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("layout", ["channels_last", "bct"])
def test_resnet_layout_probe_copies_kairos_function(load_benchmark, train, layout):
    # the layout probe times kairo's ResNet in both layouts against a plain [B, C, T] copy; the
    # timing means something only if the copy computes the same function (train and eval mode)
    from kairo.tsc import ModelConfig, build_classifier

    probe = load_benchmark("studies/resnet_layout")
    torch.manual_seed(0)
    kairo = build_classifier(ModelConfig(encoder="resnet", blocks=3, pool="mean"), 1, 4, 37)
    kairo.encoder.layout = layout
    plain = probe.PlainResNet(kairo)
    kairo.train(train), plain.train(train)
    x = torch.randn(5, 1, 37)
    with torch.no_grad():
        assert torch.allclose(kairo(x), plain(x), atol=1e-5)
        plain.blocks[1].convs[0].weight[0, 0, 0] += 1.0          # a copy that differs shows it
        assert not torch.allclose(kairo(x), plain(x), atol=1e-5)
