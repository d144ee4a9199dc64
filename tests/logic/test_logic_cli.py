"""``kairo logic train → export → verify`` through the command line, on real MNIST."""

from __future__ import annotations

import json
import shutil

import pytest

from kairo.cli import main
from kairo.logic import Circuit


@pytest.fixture(scope="module")
def trained(tmp_path_factory, data_dir):
    out = tmp_path_factory.mktemp("logic") / "train"
    rc = main(["--data-dir", str(data_dir), "logic", "train", "--classes", "0,1", "--hidden",
               "100", "--layers", "2", "--iters", "150", "--eval-every", "50", "--out", str(out)])
    assert rc == 0
    return out


@pytest.fixture(scope="module")
def circuit_file(tmp_path_factory):
    """An untrained network's circuit, as train writes it (export needs no trained one)."""
    from kairo.logic import LogicTrainConfig, build_model, to_circuit

    path = tmp_path_factory.mktemp("circuit") / "circuit.json"
    model = build_model(LogicTrainConfig(classes=(0, 1), hidden=20, layers=2)).eval()
    to_circuit(model, meta={"classes": [0, 1]}).save(path)
    return path


@pytest.mark.slow
def test_train_writes_a_verified_circuit(trained):
    m = json.loads((trained / "metrics.json").read_text())
    assert m["test_accuracy_circuit"] > 0.95 and m["circuit_matches_model"]
    assert m["gates_after"] <= m["gates_before"] == 200
    # the per-layer report: wires are what the simplifier can drop
    assert [(r["layer"], r["gates"], r["copies"]) for r in m["layers"]] == \
        [("logic.0", 100, 1), ("logic.1", 100, 1)]
    assert sum(r["gates"] - r["wires"] for r in m["layers"]) >= m["gates_after"]
    # the vote of two classes of 50 outputs: two 50-bit popcounts and one 6-bit comparison
    assert m["vote_gates"]["argmax"] == 1 + 4 * 5
    assert m["vote_gates"]["total"] == m["vote_gates"]["popcount"] + 21
    c = Circuit.load(trained / "circuit.json")
    assert c.meta["classes"] == [0, 1] and c.n_classes == 2
    for f in ("config.yaml", "run.json", "history.csv", "model.pt", "circuit_raw.json"):
        assert (trained / f).is_file()
    assert not trained.with_name(trained.name + ".checkpoint.pt").exists()
    run = json.loads((trained / "run.json").read_text())
    assert set(run["data"]) == {"mnist/train-images", "mnist/train-labels", "mnist/test-images",
                                "mnist/test-labels"}
    assert all(len(d["sha256"]) == 64 for d in run["data"].values())
    assert run["resolved"]["engine"] == m["engine"] in ("torch", "fused")
    assert run["config"]["engine"] == "auto"


@pytest.mark.parametrize("fmt, needle", [("c", "kairo_predict_one"), ("verilog", "module"),
                                         ("json", '"format":"kairo.circuit"')])
def test_export_formats(circuit_file, tmp_path, fmt, needle, capsys):
    out = tmp_path / f"circuit.{fmt}"
    assert main(["logic", "export", "--circuit", str(circuit_file), "--format", fmt,
                 "--output", str(out)]) == 0
    assert needle in out.read_text()
    assert not list(tmp_path.glob(".*"))                # written atomically, checked, renamed
    assert "bit-exact with the reference on 1000 MNIST test images" in capsys.readouterr().out


def test_export_keeps_nothing_that_disagrees(circuit_file, tmp_path, capsys, monkeypatch):
    """A writer that writes another circuit (one gate changed) is caught before the file is
    kept; --no-verify keeps it unchecked."""
    import kairo.logic
    from kairo.logic import write_c as real_write_c

    good = Circuit.load(circuit_file)
    live = good.outputs[0]                               # an output gate: changing it shows
    ops = good.ops.copy()
    ops[live - good.n_inputs] ^= 0b1111                  # its complement
    bad = Circuit(good.n_inputs, ops, good.a, good.b, good.outputs, good.n_classes, good.meta)
    monkeypatch.setattr(kairo.logic, "write_c", lambda c, path, **kw: real_write_c(bad, path))
    out = tmp_path / "model.c"
    argv = ["logic", "export", "--circuit", str(circuit_file), "--format", "c", "--output",
            str(out)]
    assert main(argv) == 2
    assert "disagrees with the reference on sample 0 of 1000 MNIST test images" in \
        capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.glob(".*"))
    assert main(argv + ["--no-verify"]) == 0
    assert out.is_file() and "not checked" in capsys.readouterr().out


def test_export_checks_a_circuit_without_images_on_random_inputs(tmp_path, capsys):
    from netlists import random_netlist

    path = tmp_path / "r.json"
    random_netlist(1, 12, 60, 2, 3, window=8).save(path)
    assert main(["logic", "export", "--circuit", str(path), "--format", "c", "--output",
                 str(tmp_path / "r.c"), "--verify-samples", "300"]) == 0
    assert "on 300 random inputs" in capsys.readouterr().out


def test_export_obeys_overwrite_and_never_writes_its_input(circuit_file, tmp_path, capsys):
    circuit = str(circuit_file)
    out = tmp_path / "c.c"
    out.write_text("old")
    argv = ["logic", "export", "--circuit", circuit, "--format", "c", "--output", str(out)]
    assert main(argv) == 2
    assert "already exists" in capsys.readouterr().err and out.read_text() == "old"
    assert main(argv + ["--overwrite"]) == 0
    assert "kairo_predict_one" in out.read_text()
    assert main(["logic", "export", "--circuit", circuit, "--format", "json", "--output",
                 circuit, "--overwrite"]) == 2
    assert "is the input circuit" in capsys.readouterr().err
    assert main(["logic", "export", "--circuit", circuit, "--output", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


@pytest.mark.slow
def test_verify_all_backends_bit_exact(trained, tmp_path, data_dir, capsys):
    if shutil.which("iverilog") is None and shutil.which("verilator") is None:
        pytest.skip("no Verilog simulator: apt-get install iverilog")
    out = tmp_path / "verify"
    assert main(["--data-dir", str(data_dir), "logic", "verify", "--circuit",
                 str(trained / "circuit.json"), "--verilog-samples", "300",
                 "--out", str(out)]) == 0
    v = json.loads((out / "verify.json").read_text())
    assert v["all_bit_exact"] and v["n_samples"] == 2115          # every 0 and 1 test image
    assert set(v["backends"]) == {"c", "verilog"}
    run = json.loads((out / "run.json").read_text())
    # the whole set is read (its labels are checked against the training labels)
    assert set(run["data"]) == {"circuit", "mnist/train-images", "mnist/train-labels",
                                "mnist/test-images", "mnist/test-labels"}
    assert v["backends"]["verilog"]["samples"] == 300


@pytest.mark.slow
def test_verify_with_verilator(trained, tmp_path, data_dir):
    from netlists import HAVE_VERILATOR

    if not HAVE_VERILATOR:
        pytest.skip("Verilator >= 5 missing: apt-get install verilator")
    out = tmp_path / "verify"
    assert main(["--data-dir", str(data_dir), "logic", "verify", "--circuit",
                 str(trained / "circuit.json"), "--backends", "verilog", "--simulator",
                 "verilator", "--verilog-samples", "100", "--out", str(out)]) == 0
    v = json.loads((out / "verify.json").read_text())
    assert v["all_bit_exact"] and v["backends"]["verilog"] == {
        "samples": 100, "bit_exact": True, "simulator": "verilator"}


@pytest.mark.parametrize("argv, fragment", [
    (["logic", "train", "--kernels", "4", "--conv-blocks", "5"], "conv block 5 of conv_blocks=5"),
    (["logic", "train", "--kernels", "4", "--engine", "gpu"], "--engine: invalid choice"),
    (["logic", "train", "--classes", "0,1,2", "--hidden", "100"], "class groups do not divide"),
    (["logic", "train", "--iters", "100", "--snapshots", "100"], "snapshots must be iterations"),
    (["logic", "train", "--snapshots", "5k"], "snapshots"),
    (["logic", "train", "--iters", "100", "--fix-at", "100"], "fix_at must be iterations"),
    (["logic", "verify", "--circuit", "x.json", "--simulator", "modelsim"],
     "--simulator: invalid choice"),
    (["logic", "export", "--circuit", "/no/such.json", "--format", "c", "--output", "x.c"],
     "does not exist"),
    (["logic", "export", "--circuit", "x.json", "--format", "vhdl", "--output", "x.v"],
     "format"),
])
def test_logic_bad_input(argv, fragment, capsys):
    try:
        rc = main(argv)
    except SystemExit as exc:            # argparse refuses a value outside a flag's choices
        rc = exc.code
    assert rc == 2
    assert fragment in capsys.readouterr().err


def test_truncated_circuit_file(circuit_file, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    text = circuit_file.read_text()
    bad.write_text(text[: len(text) // 2])
    assert main(["logic", "export", "--circuit", str(bad), "--format", "c", "--output",
                 str(tmp_path / "x.c")]) == 2
    assert "truncated" in capsys.readouterr().err
    assert not (tmp_path / "x.c").exists()


@pytest.mark.slow
def test_snapshots_are_kept_and_a_run_branches_from_one(tmp_path, data_dir, capsys):
    common = ["--data-dir", str(data_dir), "logic", "train", "--classes", "0,1", "--hidden",
              "100", "--layers", "2", "--eval-every", "50"]
    a = tmp_path / "a"
    assert main(common + ["--iters", "100", "--snapshots", "50", "--out", str(a)]) == 0
    assert (a / "checkpoint-50.pt").is_file()
    assert not list(tmp_path.glob("a.checkpoint*"))          # nothing left next to the run
    b = tmp_path / "b"
    assert main(common + ["--iters", "150", "--gate-temperature", "0.1",
                          "--gate-temperature-from", "50", "--init-from",
                          str(a / "checkpoint-50.pt"), "--out", str(b)]) == 0
    assert "at iteration 50 (a single run of this config replays it)" in capsys.readouterr().out
    m = json.loads((b / "metrics.json").read_text())
    assert m["resumed_from"] == 50 and m["branch"]["same_as_single_run"]
    assert [h["iter"] for h in m["history"]] == [50, 100, 150]
    # a checkpoint that is not there: a clear error and no results folder
    c = tmp_path / "c"
    assert main(common + ["--iters", "150", "--init-from", str(tmp_path / "none.pt"),
                          "--out", str(c)]) == 2
    assert "none.pt does not exist" in capsys.readouterr().err
    assert not c.exists() and not list(tmp_path.glob(".c.*"))
