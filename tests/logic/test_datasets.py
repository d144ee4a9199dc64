"""Image sets beyond MNIST: .npz and IDX files, their bad inputs, and logic networks and
circuits on non-square, multi-channel images."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
import torch

from kairo import ConfigError, DataError
from kairo.cli import main
from kairo.data import load_images
from kairo.logic import (Circuit, LogicTrainConfig, build_model, circuit_images, load_data,
                         predict, simplify, to_circuit, train)
from kairo.logic._train import random_shift


def _split(rng, n, h=9, w=7, c=3):
    """Class 0: the top half is bright in channel 0; class 1: the bottom half in channel c−1."""
    y = np.arange(n) % 2
    x = rng.integers(0, 90, (n, h, w, c), dtype=np.uint8)
    for i, k in enumerate(y):
        if k == 0:
            x[i, : h // 2, :, 0] = rng.integers(180, 256, (h // 2, w))
        else:
            x[i, h - h // 2:, :, c - 1] = rng.integers(180, 256, (h // 2, w))
    return x, y


def _toy(h=9, w=7, c=3, n_train=200, n_test=80, seed=0) -> dict:
    rng = np.random.default_rng(seed)
    xtr, ytr = _split(rng, n_train, h, w, c)
    xte, yte = _split(rng, n_test, h, w, c)
    return {"x_train": xtr, "y_train": ytr, "x_test": xte, "y_test": yte}


@pytest.fixture
def npz(tmp_path):
    path = tmp_path / "toy.npz"
    np.savez(path, **_toy())
    return path


def _write_idx(path, arr: np.ndarray, gz: bool):
    arr = np.ascontiguousarray(arr)
    head = bytes([0, 0, 0x08, arr.ndim]) + np.asarray(arr.shape, ">u4").tobytes()
    data = head + arr.astype(np.uint8).tobytes()
    (gzip.open if gz else open)(path, "wb").write(data)


# ---------------------------------------------------------------------------- loading
def test_npz_and_idx_give_the_same_set(npz, tmp_path):
    a = load_images(npz)
    assert a.shape == (9, 7, 3) and a.n_classes == 2 and a.n_pixels == 189
    assert a.x_train.dtype == np.uint8 and a.y_train.dtype == np.int64
    d = _toy()
    folder = tmp_path / "idx"
    folder.mkdir()
    for role, name in (("x_train", "train-images-idx3-ubyte"), ("y_train",
                       "train-labels-idx1-ubyte"), ("x_test", "t10k-images-idx3-ubyte"),
                       ("y_test", "t10k-labels-idx1-ubyte")):
        arr = d[role]
        if role.startswith("x"):
            name = name.replace("idx3", "idx4")          # 4-D: colour images
        _write_idx(folder / (name + (".gz" if role == "x_train" else "")), arr, role == "x_train")
    b = load_images(folder)
    for k in ("x_train", "y_train", "x_test", "y_test"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
    assert set(b.files) == {"x_train", "y_train", "x_test", "y_test"}


def test_grey_images_get_one_channel(tmp_path):
    d = _toy(c=1)
    d["x_train"], d["x_test"] = d["x_train"][..., 0], d["x_test"][..., 0]
    np.savez(tmp_path / "g.npz", **d)
    assert load_images(tmp_path / "g.npz").shape == (9, 7, 1)


def test_mnist_is_one_of_them(data_dir):
    with pytest.raises(ConfigError, match=r"classes: 10 not among the labels of dataset mnist "
                                          r"\(0…9\)"):
        load_data(LogicTrainConfig(classes=(1, 10), hidden=100, data_dir=str(data_dir)))
    m = load_images("mnist", data_dir)
    assert m.shape == (28, 28, 1) and m.n_classes == 10
    assert len(m.y_train) == 60000 and len(m.y_test) == 10000
    assert set(m.files) == {"mnist/train-images", "mnist/train-labels", "mnist/test-images",
                            "mnist/test-labels"}


def _bad(**change):
    d = _toy()
    d.update(change)
    return d


@pytest.mark.parametrize("arrays, fragment", [
    (lambda d: {k: v for k, v in d.items() if k != "y_test"}, "missing y_test"),
    (lambda d: _bad(x_train=d["x_train"].astype(np.float32)), "x_train: images must be uint8"),
    (lambda d: _bad(x_test=d["x_test"][:, 0, 0, 0]), "x_test: images must have shape"),
    (lambda d: _bad(y_train=d["y_train"][:-1]), "200 train images but 199 train labels"),
    (lambda d: _bad(y_test=-d["y_test"]), "y_test: labels must be integers 0…K−1, found -1"),
    (lambda d: _bad(y_train=d["y_train"] + 0.5), "y_train: labels must be integers"),
    (lambda d: _bad(y_train=d["y_train"][:, None]), "y_train: labels must be one integer"),
    (lambda d: _bad(y_test=d["y_test"] * 3), "label 3 has no training image"),
    (lambda d: _bad(y_train=d["y_train"] * 2), "class 1 has no training image"),
    (lambda d: _bad(x_test=d["x_test"][:, :8]), "train images are [9, 7, 3]"),
    (lambda d: _bad(x_train=d["x_train"][:0], y_train=d["y_train"][:0]), "x_train: no images"),
])
def test_bad_npz_is_refused_naming_the_field(tmp_path, arrays, fragment):
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays(_toy()))
    with pytest.raises(DataError) as exc:
        load_images(path)
    assert fragment in str(exc.value) and "bad" in str(exc.value)


def test_bad_files_and_folders(tmp_path, npz):
    with pytest.raises(DataError, match="no such file or folder"):
        load_images(tmp_path / "nope.npz")
    (tmp_path / "x.csv").write_text("1,2\n")
    with pytest.raises(DataError, match="a single file must be .npz"):
        load_images(tmp_path / "x.csv")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(DataError, match="junk.npz: not a readable .npz"):
        load_images(tmp_path / "junk.npz")
    np.savez(tmp_path / "obj.npz", **_bad(y_train=np.array(["a", {}] * 100, dtype=object)))
    with pytest.raises(DataError, match="without pickle"):
        load_images(tmp_path / "obj.npz")
    folder = tmp_path / "idx"
    folder.mkdir()
    with pytest.raises(DataError, match="no x_train IDX file"):
        load_images(folder)
    d = _toy(c=1)
    for name, arr in (("train-images-idx3-ubyte", d["x_train"][..., 0]),
                      ("train-labels-idx1-ubyte", d["y_train"]),
                      ("t10k-images-idx3-ubyte", d["x_test"][..., 0]),
                      ("t10k-labels-idx1-ubyte", d["y_test"])):
        _write_idx(folder / name, arr, gz=False)
    assert load_images(folder).shape == (9, 7, 1)
    raw = (folder / "t10k-labels-idx1-ubyte").read_bytes()
    (folder / "t10k-labels-idx1-ubyte").write_bytes(raw[:-3])
    with pytest.raises(DataError, match="t10k-labels-idx1-ubyte: the header says"):
        load_images(folder)
    (folder / "t10k-labels-idx1-ubyte").write_bytes(b"\x01\x02")
    with pytest.raises(DataError, match="not an IDX file"):
        load_images(folder)
    _write_idx(folder / "test-labels-idx1-ubyte", d["y_test"], gz=False)
    with pytest.raises(DataError, match="several y_test IDX files"):
        load_images(folder)


# ---------------------------------------------------------------------------- networks
@pytest.mark.parametrize("kw", [
    {},                                                             # dense
    {"kernels": 4, "conv_blocks": 1, "thresholds": (60, 180), "conv_groups": 2},
    {"kernels": 3, "conv_blocks": 2, "receptive": 2, "conv_depth": 2, "padding": 1},
])
def test_circuit_equals_the_model_on_colour_non_square_images(kw):
    """The circuit's input order (threshold-major over H·W·C row-major) and the conv's
    channels (threshold × colour) agree: the untrained network's circuit, gate for gate."""
    cfg = LogicTrainConfig(classes=(0, 1), hidden=40, layers=2, seed=3, dataset="x.npz", **kw)
    model = build_model(cfg, (9, 7, 3)).eval()
    circ = to_circuit(model, meta={"classes": [0, 1]})
    assert circ.meta["image_shape"] == [9, 7, 3]
    assert circ.n_inputs == 9 * 7 * 3 * len(cfg.thresholds)
    x = np.random.default_rng(0).integers(0, 256, (64, 9, 7, 3), dtype=np.uint8)
    bits = circ.image_bits(x)
    with torch.no_grad():
        ref = model.logic(model.features(_conv_in(model, x)).flatten(1) if len(model.features)
                          else model.bits(torch.from_numpy(x))).numpy().astype(bool)
    np.testing.assert_array_equal(circ.evaluate(bits), ref)
    np.testing.assert_array_equal(circ.predict(bits), predict(model, x))
    np.testing.assert_array_equal(simplify(circ)[0].evaluate(bits), ref)


def _conv_in(model, x):
    """The conv input built by hand: channel t·C + c is pixel[..., c] > threshold t."""
    t = model.binarize.t.numpy()
    xb = (x[:, None, :, :, :] > t[None, :, None, None, None])         # (n, T, H, W, C)
    xb = xb.transpose(0, 1, 4, 2, 3).reshape(len(x), -1, x.shape[1], x.shape[2])
    return torch.from_numpy(xb.astype(np.float32))


def test_image_shape_errors():
    with pytest.raises(ConfigError, match="conv block 2 of conv_blocks=2 gets a 1×1"):
        build_model(LogicTrainConfig(classes=(0, 1), hidden=40, kernels=2, dataset="x.npz",
                                     padding=0), (4, 5, 1))
    with pytest.raises(ConfigError, match="not a square"):
        build_model(LogicTrainConfig(classes=(0, 1), hidden=40, kernels=2), 63)
    with pytest.raises(ConfigError, match="3 thresholds × 2 colour channels"):
        build_model(LogicTrainConfig(classes=(0, 1), hidden=40, kernels=4, dataset="x.npz",
                                     conv_groups=4, thresholds=(50, 100, 150)), (9, 7, 2))


def test_random_shift_moves_colour_images_together():
    x = _toy(n_train=20)["x_train"]
    s = random_shift(x, 2, np.random.default_rng(0))
    assert s.shape == x.shape
    # one shift per image: every channel moves the same way (a pixel's colour is kept)
    for i in range(len(x)):
        hits = [(dy, dx) for dy in range(-2, 3) for dx in range(-2, 3)
                if np.array_equal(s[i], np.roll(np.pad(x[i], ((2, 2), (2, 2), (0, 0))),
                                                (dy, dx), (0, 1))[2:-2, 2:-2])]
        assert hits


def test_train_and_verify_on_an_npz_set(npz, tmp_path, capsys):
    cfg = LogicTrainConfig(dataset=str(npz), classes=(0, 1), hidden=60, layers=2, iters=80,
                           eval_every=40, kernels=2, conv_blocks=1)
    data = load_data(cfg)
    assert data["shape"] == (9, 7, 3) and data["train"][0].shape[1:] == (9, 7, 3)
    res = train(cfg, data=data, progress_bar=False)
    circ = to_circuit(res["model"], meta={"classes": [0, 1], "dataset": str(npz)})
    x, y, name = circuit_images(circ)
    assert name == "toy" and x.shape == (80, 189)
    assert (circ.predict(circ.image_bits(x)) == y).mean() > 0.9
    # the command line: train records the set (and its file's hash), verify finds it again
    out = tmp_path / "run"
    assert main(["logic", "train", "--dataset", str(npz), "--classes", "0,1", "--hidden", "40",
                 "--iters", "40", "--eval-every", "20", "--out", str(out)]) == 0
    c = Circuit.load(out / "circuit.json")
    assert c.meta["dataset"] == str(npz) and c.meta["image_shape"] == [9, 7, 3]
    run = json.loads((out / "run.json").read_text())
    assert list(run["data"]) == ["images"] and len(run["data"]["images"]["sha256"]) == 64
    assert main(["logic", "verify", "--circuit", str(out / "circuit.json"), "--backends",
                 "numpy,c", "--out", str(tmp_path / "v")]) == 0
    v = json.loads((tmp_path / "v" / "verify.json").read_text())
    assert v["dataset"] == "toy" and v["n_samples"] == 80 and v["all_bit_exact"]


def test_bad_dataset_arguments(npz, tmp_path, capsys, data_dir):
    assert main(["logic", "train", "--dataset", str(npz), "--classes", "0,5", "--hidden", "40",
                 "--out", str(tmp_path / "a")]) == 2
    assert "classes: 5 not among the labels of dataset" in capsys.readouterr().err
    assert main(["logic", "train", "--dataset", str(tmp_path / "none.npz"), "--classes",
                 "0,1", "--hidden", "40", "--out", str(tmp_path / "b")]) == 2
    assert "none.npz: no such file or folder" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    # a circuit checked on images of another size is refused, naming both sizes
    model = build_model(LogicTrainConfig(classes=(0, 1), hidden=20, layers=1), (9, 7, 3))
    to_circuit(model.eval(), meta={"classes": [0, 1]}).save(tmp_path / "c.json")
    assert main(["--data-dir", str(data_dir), "logic", "verify", "--circuit",
                 str(tmp_path / "c.json"), "--backends", "numpy", "--out",
                 str(tmp_path / "v")]) == 2
    err = capsys.readouterr().err
    assert "784 values" in err and "reads 189 per image" in err


def test_checkpoints_carry_the_image_shape(npz, tmp_path):
    from kairo.logic import model_from_checkpoint
    from kairo.logic._train import CHECKPOINT_FORMAT
    from kairo._checkpoint import load_checkpoint, save_checkpoint

    cfg = LogicTrainConfig(dataset=str(npz), classes=(0, 1), hidden=20, layers=1, iters=20,
                           eval_every=10, checkpoint_every=10)
    ckpt = tmp_path / "run.checkpoint.pt"
    train(cfg, checkpoint=ckpt, progress_bar=False)
    model, _ = model_from_checkpoint(ckpt)
    assert model.image_shape == (9, 7, 3)
    # a branch onto images of another shape is refused before any weight is loaded
    grey = tmp_path / "grey.npz"
    d = _toy(c=1)
    np.savez(grey, **d)
    other = LogicTrainConfig(**{**cfg.__dict__, "dataset": str(grey), "iters": 40,
                                "init_from": str(ckpt)})
    with pytest.raises(ConfigError, match=r"trained on images of shape \(9, 7, 3\)"):
        train(other, progress_bar=False)
    state = load_checkpoint(ckpt, kind=CHECKPOINT_FORMAT)
    del state["image_shape"]
    save_checkpoint(tmp_path / "old.pt", state, kind=CHECKPOINT_FORMAT)
    with pytest.raises(DataError, match="old.pt: no image shape"):
        model_from_checkpoint(tmp_path / "old.pt")
