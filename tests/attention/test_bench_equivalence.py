"""benchmarks/attention_speed.py's same-computation check: a torch.nn.TransformerEncoderLayer's
weights copied into kairo's TransformerBlock give the same outputs (post-LN and pre-LN, with and
without a key-padding mask) and the same gradients; swapping k and v breaks the agreement."""

from __future__ import annotations


import numpy as np
import pytest
import torch

from kairo._errors import ConfigError



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


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("layout", ["channels_last", "bct"])
def test_resnet_layout_probe_copies_kairos_function(load_benchmark, train, layout):
    # the layout probe times kairo's ResNet in both layouts against a plain [B, C, T] copy; the
    # timing means something only if the copy computes the same function (train and eval mode)
    from kairo.attention import ModelConfig, build_classifier

    probe = load_benchmark("resnet_layout")
    torch.manual_seed(0)
    kairo = build_classifier(ModelConfig(encoder="resnet", layers=3, pool="mean"), 1, 4, 37)
    kairo.encoder.layout = layout
    plain = probe.PlainResNet(kairo)
    kairo.train(train), plain.train(train)
    x = torch.randn(5, 1, 37)
    with torch.no_grad():
        assert torch.allclose(kairo(x), plain(x), atol=1e-5)
        plain.blocks[1].convs[0].weight[0, 0, 0] += 1.0          # a copy that differs shows it
        assert not torch.allclose(kairo(x), plain(x), atol=1e-5)


def _runs_dir(path, datasets, seeds=3, encoder="resnet"):
    import pandas as pd

    rng = np.random.default_rng(sum(map(ord, path.name)))
    rows = [{"dataset": d, "encoder": encoder, "pool": p, "time_warp": 0.0, "seed": s,
             "test_accuracy": float(rng.uniform(0.5, 1.0)), "test_macro_f1": 0.5,
             "val_accuracy": 0.5, "best_epoch": 1, "epochs_run": 1, "seconds": 1.0,
             "n_params": 10}
            for d in datasets for p in ("mean", "max", "mha") for s in range(seeds)]
    path.mkdir()
    pd.DataFrame(rows).to_csv(path / "runs.csv", index=False)
    (path / "config.yaml").write_text(f"datasets: {datasets}\n")
    return path


def test_pooling_combine_equals_one_run_over_the_joined_tables(load_benchmark, tmp_path):
    import pandas as pd

    from kairo.attention._compare import pooling_tests

    probe = load_benchmark("pooling_combine")
    a = _runs_dir(tmp_path / "a", ["GunPoint", "ArrowHead"])
    b = _runs_dir(tmp_path / "b", ["JapaneseVowels"])
    c = _runs_dir(tmp_path / "c", ["GunPoint"], encoder="transformer")
    assert probe.main([str(a), str(b), str(c), "--out", str(tmp_path / "out")]) == 0
    joined = pd.concat([pd.read_csv(d / "runs.csv") for d in (a, b, c)], ignore_index=True)
    got = pd.read_csv(tmp_path / "out" / "tests.csv")
    want = pooling_tests(joined)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    assert set(got.encoder) == {"resnet", "transformer", "all"}
    assert got[(got.encoder == "resnet") & (got.pool == "max")].pairs.item() == 9
    assert {p.name for p in (tmp_path / "out").iterdir()} == {
        "runs.csv", "summary.csv", "tests.csv", "pooling.png", "sources.json"}


def test_pooling_combine_refuses_overlap_bad_tables_and_an_existing_out(load_benchmark,
                                                                         tmp_path, capsys):
    probe = load_benchmark("pooling_combine")
    a = _runs_dir(tmp_path / "a", ["GunPoint"])
    b = _runs_dir(tmp_path / "b", ["GunPoint", "ArrowHead"])
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "runs.csv").write_text("dataset,accuracy\nGunPoint,0.9\n")
    cases = [([a, b], "may come from one folder only"),
             ([a, tmp_path / "empty"], "empty/runs.csv: cannot read"),
             ([a, tmp_path / "bad"], "bad/runs.csv: expected a runs.csv of kairo tsc "
                                     "compare-pooling"),
             ([a], "exists; choose a new folder")]
    for dirs, msg in cases:
        out = a if msg.startswith("exists") else tmp_path / "out"
        with pytest.raises(SystemExit):
            probe.main([*map(str, dirs), "--out", str(out)])
        assert msg in capsys.readouterr().err
        assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
