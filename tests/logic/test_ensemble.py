"""``kairo.logic.ensemble`` and ``kairo logic ensemble``: circuits side by side, votes summed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kairo._errors import KairoError
from kairo.cli import main
from kairo.logic import Circuit, circuit_images, ensemble, simplify, validation_split

from netlists import random_netlist


def _net(seed, n_inputs=12, n_classes=3, group=4, meta=None):
    return random_netlist(seed, n_inputs, 300, n_classes, group, window=40, p_two_input=0.7,
                          meta=meta)


def _bits(n_inputs, n=500, seed=9):
    return np.random.default_rng(seed).integers(0, 2, (n, n_inputs)).astype(bool)


def test_votes_are_the_sum_of_the_members_votes():
    members = [_net(1), _net(2, group=6), _net(3, group=2)]
    joined = ensemble(members)
    x = _bits(12)
    assert joined.n_gates == sum(c.n_gates for c in members)
    assert joined.n_outputs == sum(c.n_outputs for c in members)
    np.testing.assert_array_equal(joined.scores(x), sum(c.scores(x) for c in members))
    np.testing.assert_array_equal(joined.predict(x),
                                  sum(c.scores(x) for c in members).argmax(1))
    # class c's outputs are the members' class-c outputs, in member order
    out = joined.evaluate(x).reshape(len(x), 3, -1)
    start = 0
    for c in members:
        g = c.n_outputs // 3
        np.testing.assert_array_equal(out[:, :, start:start + g],
                                      c.evaluate(x).reshape(len(x), 3, g))
        start += g
    assert joined.meta["ensemble"] == {"members": 3, "gates": [300, 300, 300],
                                       "outputs_per_class": [4, 6, 2]}


def test_simplify_merges_what_members_share():
    a = _net(4)
    small, _ = simplify(a)
    joined, report = simplify(ensemble([a, a]))
    assert joined.n_gates == small.n_gates           # the second copy hashes onto the first
    x = _bits(12)
    np.testing.assert_array_equal(joined.scores(x), 2 * a.scores(x))
    assert report["before"]["n_gates"] == 2 * a.n_gates


def test_meta_keeps_what_every_member_agrees_on():
    shared = {"thresholds": [128], "classes": [0, 1, 2], "validation": {"seed": 3,
                                                                      "fraction": 0.1}}
    a = _net(1, meta={**shared, "dataset": "mnist", "note": "a"})
    b = _net(2, meta={**shared, "dataset": "mnist", "note": "b"})
    c = _net(3, meta={**shared, "validation": {"seed": 4, "fraction": 0.1}})
    assert ensemble([a, b]).meta == {**shared, "dataset": "mnist", "ensemble": {
        "members": 2, "gates": [300, 300], "outputs_per_class": [4, 4]}}
    assert set(ensemble([a, b, c]).meta) == {"thresholds", "classes", "ensemble"}


def test_members_that_do_not_fit_together_are_refused_by_name():
    a = _net(1, meta={"thresholds": [128], "classes": [0, 1, 2]})
    with pytest.raises(KairoError, match="at least two circuits, got 1"):
        ensemble([a])
    with pytest.raises(KairoError, match="second: expected a kairo.logic.Circuit, got dict"):
        ensemble([a, a.to_dict()], names=["first", "second"])
    with pytest.raises(KairoError, match="b.json reads 13 input bits but a.json reads 12"):
        ensemble([a, _net(2, n_inputs=13)], names=["a.json", "b.json"])
    with pytest.raises(KairoError, match="circuit 1 votes for 4 classes but circuit 0 for 3"):
        ensemble([a, _net(2, n_classes=4)])
    other = _net(2, meta={"thresholds": [64, 192], "classes": [0, 1, 2]})
    with pytest.raises(KairoError, match=r"6 pixels at thresholds \[64, 192\] but circuit 0 "
                                         r"as 12 pixels at thresholds \[128\]"):
        ensemble([a, other])
    with pytest.raises(KairoError, match=r"circuit 1 has classes \[3, 4, 5\] but circuit 0 "
                                         r"has \[0, 1, 2\]"):
        ensemble([a, _net(2, meta={"thresholds": [128], "classes": [3, 4, 5]})])
    with pytest.raises(KairoError, match="2 names for 3 circuits"):
        ensemble([a, a, a], names=["x", "y"])


@pytest.fixture(scope="module")
def member_files(tmp_path_factory):
    """Three untrained 0-vs-1 networks' circuits, as train writes them."""
    import torch

    from kairo.logic import LogicTrainConfig, build_model, to_circuit

    folder = tmp_path_factory.mktemp("members")
    paths = []
    for seed, hidden in ((0, 40), (1, 40), (2, 60)):
        torch.manual_seed(seed)
        model = build_model(LogicTrainConfig(classes=(0, 1), hidden=hidden, layers=2)).eval()
        meta = {"classes": [0, 1], "dataset": "mnist",
                "validation": {"seed": 7, "fraction": 0.05}}
        paths.append(to_circuit(model, meta=meta).save(folder / f"c{seed}.json"))
    return paths


def test_cli_scores_the_simplified_join_and_each_member(member_files, tmp_path, data_dir):
    out = tmp_path / "ens"
    rc = main(["--store", "none", "--data-dir", str(data_dir), "logic", "ensemble",
               "--circuits", ",".join(map(str, member_files)), "--out", str(out)])
    assert rc == 0
    m = json.loads((out / "metrics.json").read_text())
    members = [Circuit.load(p) for p in member_files]
    circ = Circuit.load(out / "circuit.json")
    x, y, _ = circuit_images(circ, data_dir=data_dir)
    bits = circ.image_bits(x)
    want = sum(c.scores(bits) for c in members).argmax(1)
    np.testing.assert_array_equal(circ.predict(bits), want)
    assert m["test_accuracy_circuit"] == pytest.approx((want == y).mean())
    assert [r["test_accuracy"] for r in m["members"]] == pytest.approx(
        [(c.predict(bits) == y).mean() for c in members])
    assert m["gates_before"] == sum(c.n_gates for c in members) >= m["gates_after"]
    assert m["gates_after"] == circ.n_gates and m["n_test"] == len(y)
    assert circ.meta["classes"] == [0, 1] and circ.meta["ensemble"]["members"] == 3
    # scored on the training images all three held out (one shared validation split)
    xt, yt, _ = circuit_images(circ, data_dir=data_dir, split="train")
    held, _ = validation_split(len(yt), 7, 0.05)
    bits = circ.image_bits(xt[held])
    assert m["val_accuracy"] == pytest.approx(
        (sum(c.scores(bits) for c in members).argmax(1) == yt[held]).mean())
    assert [r["val_accuracy"] for r in m["members"]] == pytest.approx(
        [(c.predict(bits) == yt[held]).mean() for c in members])


def test_cli_gives_no_validation_score_for_members_split_differently(member_files, tmp_path,
                                                                       data_dir):
    other = Circuit.load(member_files[1])
    moved = Circuit(n_inputs=other.n_inputs, ops=other.ops, a=other.a, b=other.b,
                    outputs=other.outputs, n_classes=other.n_classes,
                    meta={**other.meta, "validation": {"seed": 8, "fraction": 0.05}})
    out = tmp_path / "ens"
    rc = main(["--store", "none", "--data-dir", str(data_dir), "logic", "ensemble", "--circuits",
               f"{member_files[0]},{moved.save(tmp_path / 'moved.json')}", "--out", str(out)])
    assert rc == 0
    m = json.loads((out / "metrics.json").read_text())
    assert m["val_accuracy"] is None and "val_accuracy" not in m["members"][0]
    assert "validation" not in Circuit.load(out / "circuit.json").meta
    # a split the members share but that no run could have written is no split either
    first = Circuit.load(member_files[0])
    for bad in ({"seed": "7", "fraction": 0.05}, {"seed": 7}, {"seed": 7, "fraction": 0.9}):
        files = []
        for i in range(2):
            c = Circuit(n_inputs=first.n_inputs, ops=first.ops, a=first.a, b=first.b,
                        outputs=first.outputs, n_classes=2, meta={**first.meta, "validation": bad})
            files.append(str(c.save(tmp_path / f"bad{i}.json")))
        rc = main(["--store", "none", "--data-dir", str(data_dir), "logic", "ensemble",
                   "--circuits", ",".join(files), "--out", str(out), "--overwrite"])
        assert rc == 0
        assert json.loads((out / "metrics.json").read_text())["val_accuracy"] is None


def test_cli_refuses_bad_members_and_a_blown_budget(member_files, tmp_path, data_dir, capsys):
    args = ["--store", "none", "--data-dir", str(data_dir), "logic", "ensemble"]
    out = tmp_path / "ens"
    assert main([*args, "--circuits", str(member_files[0]), "--out", str(out)]) != 0
    assert "at least two circuits, got 1" in capsys.readouterr().err
    missing = tmp_path / "nope.json"
    assert main([*args, "--circuits", f"{member_files[0]},{missing}", "--out", str(out)]) != 0
    assert f"circuit file {missing} does not exist" in capsys.readouterr().err
    three = Circuit.load(member_files[0])
    wide = Circuit(n_inputs=three.n_inputs, ops=three.ops, a=three.a, b=three.b,
                   outputs=np.tile(three.outputs, 3), n_classes=6, meta={"thresholds": [128]})
    wide_file = wide.save(tmp_path / "six.json")
    assert main([*args, "--circuits", f"{member_files[0]},{wide_file}", "--out", str(out)]) != 0
    assert f"circuit {wide_file} votes for 6 classes" in capsys.readouterr().err
    assert main([*args, "--circuits", ",".join(map(str, member_files)), "--max-gates", "5",
                 "--out", str(out)]) != 0
    assert "more than --max-gates 5; nothing was written" in capsys.readouterr().err
    assert not (out / "circuit.json").exists()


def test_the_validation_split_is_what_train_holds_out(data_dir):
    from kairo.logic import LogicTrainConfig, load_data

    # without --val-seed the split is the one every committed run used: seeded by --seed
    held, kept = validation_split(1000, 5, 0.1)
    perm = np.random.default_rng(np.random.SeedSequence([5, 12])).permutation(1000)
    np.testing.assert_array_equal(np.concatenate([held, kept]), perm)
    assert len(held) == 100
    x, y, _ = circuit_images(Circuit(n_inputs=784, ops=np.array([1]), a=np.array([0]),
                                     b=np.array([1]), outputs=np.array([784, 784]), n_classes=2,
                                     meta={"thresholds": [128], "classes": [0, 1]}),
                             data_dir=data_dir, split="train")
    for seed, val_seed in ((5, -1), (5, 9), (6, 9)):
        d = load_data(LogicTrainConfig(classes=(0, 1), seed=seed, val_seed=val_seed,
                                       data_dir=str(data_dir)))
        held, kept = validation_split(len(y), seed if val_seed < 0 else val_seed, 0.1)
        np.testing.assert_array_equal(d["val"][0].reshape(len(held), -1), x[held])
        np.testing.assert_array_equal(d["val"][1], y[held])
        np.testing.assert_array_equal(d["train"][1], y[kept])


def test_a_branch_with_another_validation_split_is_no_single_run():
    from kairo.logic import LogicTrainConfig
    from kairo.logic._train import branch_info

    old = LogicTrainConfig(seed=3)
    assert branch_info(old, LogicTrainConfig(seed=3, val_seed=3), 10)["same_as_single_run"]
    info = branch_info(old, LogicTrainConfig(seed=3, val_seed=4), 10)
    assert info["differs_before"] == ["validation split"]
