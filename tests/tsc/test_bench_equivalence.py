"""benchmarks/attention_speed.py's same-computation check: a torch.nn.TransformerEncoderLayer's
weights copied into kairo's TransformerBlock give the same outputs (post-LN and pre-LN, with and
without a key-padding mask) and the same gradients; swapping k and v breaks the agreement."""

from __future__ import annotations


import pytest
import torch

from kairo import ConfigError



@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("attention_speed")


@pytest.fixture(autouse=True)
def _one_thread():
    # tiny layers: one thread avoids OpenMP barrier stalls when other jobs hold the cores
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _inputs(b=3, t=20, seed=1):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, t, 64, generator=g)                                          # [B,T,D]
    valid = torch.arange(t)[None, :] < torch.tensor([t, t - 5, 4])[:, None]         # True = valid
    return x, valid


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_copied_weights_give_torch_outputs_in_eval(bench, norm_first, masked):
    ref, block = bench.paired_layers(norm_first, seed=3)
    x, valid = _inputs()
    with torch.no_grad():      # torch's fused fast path
        want = ref(x, src_key_padding_mask=~valid if masked else None)              # True = PAD
        got, _ = block(x, key_padding_mask=valid if masked else None)
    keep = valid if masked else torch.ones_like(valid)
    assert (want - got)[keep].abs().max() < 1e-5
    # padding really is ignored: changing padded inputs leaves valid outputs unchanged
    if masked:
        x2 = x.masked_fill(~valid[..., None], 7.0)
        with torch.no_grad():
            got2, _ = block(x2, key_padding_mask=valid)
        assert (got2 - got)[valid].abs().max() < 1e-5


@pytest.mark.parametrize("norm_first", [False, True])
def test_copied_weights_give_torch_gradients_in_training_without_dropout(bench, norm_first):
    ref, block = bench.paired_layers(norm_first, seed=4, dropout=0.0)
    ref.train(), block.train()
    x, valid = _inputs(seed=2)
    want = ref(x, src_key_padding_mask=~valid)
    got, _ = block(x, key_padding_mask=valid)
    w = torch.randn_like(want) * valid[..., None]         # a loss over valid positions only
    (want * w).sum().backward()
    (got * w).sum().backward()
    assert (ref.linear1.weight.grad - block.mlp[0].weight.grad).abs().max() < 1e-4
    assert (ref.self_attn.in_proj_weight.grad[:64] - block.attn.q_proj.weight.grad).abs().max() \
        < 1e-4
    assert (ref.self_attn.in_proj_weight.grad[64:] - block.attn.kv_proj.weight.grad).abs().max() \
        < 1e-4


def test_swapping_key_and_value_rows_breaks_agreement(bench):
    """The layout claim (kv_proj = k rows then v rows) is what makes the check pass."""
    ref, block = bench.paired_layers(False, seed=5)
    with torch.no_grad():
        kv = block.attn.kv_proj
        kv.weight.copy_(torch.cat([kv.weight[64:], kv.weight[:64]]))
        kv.bias.copy_(torch.cat([kv.bias[64:], kv.bias[:64]]))
        x, _ = _inputs()
        assert (ref(x) - block(x)[0]).abs().max() > 1e-2


def test_equivalence_record_and_norm_mismatch(bench):
    rec = bench.equivalence_check(seed=6, b=2, t=12)
    assert rec["passed"] and {k for k, v in rec.items() if isinstance(v, float)} == {
        "post_ln_no_mask", "post_ln_mask", "pre_ln_no_mask", "pre_ln_mask"}
    ref, _ = bench.paired_layers(True, seed=0)
    _, post_block = bench.paired_layers(False, seed=0)
    with pytest.raises(ConfigError, match="norm mismatch: torch norm_first=True"):
        bench.copy_torch_layer(ref, post_block)
    wide = torch.nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, batch_first=True)
    with pytest.raises(ConfigError, match="layer sizes differ"):
        bench.copy_torch_layer(wide, post_block)


@pytest.mark.parametrize("argv, fragment", [
    (["--acc-epochs", "MNIST1D=40"], "add --accuracy or --accuracy-only"),
    (["--accuracy-only", "--acc-epochs", "MNIST1D=x"], "expected NAME=N"),
    (["--accuracy-only", "--acc-epochs", "ECG=3"], "expected NAME=N"),
    (["--accuracy-only", "--acc-datasets", "ECG"], "unknown dataset(s) ECG"),
    (["--accuracy-only", "--acc-models", "nope"], "unknown model(s) nope"),
])
def test_accuracy_options_refuse_bad_values(bench, argv, fragment, capsys):
    with pytest.raises(SystemExit) as exc:
        bench.main(argv)
    assert exc.value.code == 2 and fragment in capsys.readouterr().err


def test_resnet_ablation_builds_each_head_and_init_combination(bench):
    # the four head × init combinations of the default change: the ablation must build what
    # its names say, or its table would attribute the change to the wrong half
    def head_has_norm(model):
        return any(isinstance(m, torch.nn.LayerNorm) for m in model.head.modules())

    def head_bias_zero(model):      # Glorot init zeroes biases; PyTorch's draws them
        linear = [m for m in model.head.modules() if isinstance(m, torch.nn.Linear)][-1]
        return not linear.bias.any()

    builders = bench.kairo_acc_builders(resnet_ablation=True)
    expect = {"kairo_resnet": (False, True),                   # (head LayerNorm, Glorot init)
              "kairo_resnet_before_keras": (True, False),
              "kairo_resnet_glorot_head_norm": (True, True),
              "kairo_resnet_torch_init_no_head_norm": (False, False)}
    for name, (norm, glorot) in expect.items():
        torch.manual_seed(0)
        model = builders[name](1, 3, 40)
        assert (head_has_norm(model), head_bias_zero(model)) == (norm, glorot), name


def test_every_speed_and_accuracy_model_builds_and_runs(bench):
    # a non-model entry in a builder table (a note pasted into it) crashed the speed run only
    # after minutes of timing; every entry must build a classifier that gives [B, classes]
    x = torch.randn(2, 1, 40)
    speed = bench.kairo_builders(40, 3)
    accuracy = bench.kairo_acc_builders(resnet_ablation=True)
    builds = [(f"speed {k}", b) for k, b in speed.items()]
    builds += [(f"accuracy {k}", b) for k, b in accuracy.items()]
    for name, build in builds:
        assert callable(build), name
        model = (build() if name.startswith("speed") else build(1, 3, 40)).eval()
        with torch.no_grad():
            assert model(x).shape == (2, 3), name
