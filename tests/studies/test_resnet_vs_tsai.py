"""benchmarks/studies/resnet_vs_tsai.py: the sign test over paired rounds, and the model pairing
(kairo's 7-5-3 ResNet has exactly the parameter count of tsai's ResNet for 1 channel, 10
classes)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.study


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("studies/resnet_vs_tsai")


def test_kairo_753_resnet_has_tsai_resnets_parameter_count(bench):
    from kairo.tsc import ModelConfig, build_classifier

    sizes = {ks: bench.n_params(build_classifier(
        ModelConfig(encoder="resnet", blocks=3, pool="mean", kernel_sizes=ks), 1, 10, 700))
        for ks in bench.KAIRO.values()}
    # tsai.models.ResNet.ResNet(c_in=1, c_out=10): 479,498 (benchmarks/results/*speed*.json)
    assert sizes == {(7, 5, 3): 479_498, (8, 5, 3): 504_138}
