"""``CompiledCircuit.predict_images`` (uint8 images → classes in C) against the reference
``Circuit.predict(circuit.image_bits(...))``; the anchor's method; ``kairo logic bench`` end to end."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from kairo import DataError, KairoError
from kairo.cli import main
from kairo.logic import ANCHOR_BATCH, AnchorCircuit, Circuit, bench_circuit, read_bandwidth
from kairo.logic._bench import anchor_source
from kairo.logic._circuit import ImageInput
from kairo.logic.backends import CompiledCircuit, c_source, compile_c, find_compiler
from kairo.results import cpu_flags
from netlists import first_varied, random_netlist

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None and shutil.which("cc") is None,
                                reason="no C compiler: apt-get install gcc")


def image_circuit(seed: int, n_pixels: int, thresholds, n_classes: int = 3, group: int = 5,
                  n_gates: int = 600, classes=None) -> Circuit:
    """The first random netlist over thresholded pixels from ``seed`` on that predicts
    several classes for random images (any circuit when ``n_classes`` is 1)."""
    probe = rand_images(99, 200, n_pixels)
    meta = {"thresholds": list(thresholds)}
    if classes is not None:
        meta["classes"] = list(classes)
    return first_varied(
        lambda s: random_netlist(s, n_pixels * len(thresholds), n_gates, n_classes, group,
                                 window=40, p_anywhere=0.3, p_two_input=0.8,
                                 outputs="sampled", meta=meta),
        lambda c: reference(c, probe), seed)


def reference(c: Circuit, images: np.ndarray) -> np.ndarray:
    th = np.asarray(c.meta["thresholds"], dtype=float)
    x = images.reshape(len(images), -1)
    return c.predict((x[:, None, :] > th[None, :, None]).reshape(len(x), -1))


def rand_images(seed: int, n: int, n_pixels: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, n_pixels), dtype=np.uint8)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("kairo-c-cache")


# ---------------------------------------------------------------------------- the C entry point
# every width takes a few seconds: the native one (512) stays in the fast loop
@pytest.mark.parametrize("width", [pytest.param(64, marks=pytest.mark.slow),
                                   pytest.param(256, marks=pytest.mark.slow), 512])
@pytest.mark.parametrize("n_pixels, thresholds, n_classes, group", [
    (20, (100, 200), 3, 5),                # one partial 64-pixel chunk, thermometer
    (64, (127,), 10, 3),                   # exactly one chunk, ten classes
    (70, (0, 63, 127, 200), 2, 150),       # two vote functions per class (VOTE_CHUNK 128)
    (130, (-3, 255.5, 50.5), 4, 1),        # always-1, always-0 and fractional thresholds
    (33, (9,), 1, 7),                      # one class: always class 0
])
def test_predict_images_matches_reference(cache, width, n_pixels, thresholds, n_classes,
                                          group):
    c = image_circuit(n_pixels + width, n_pixels, thresholds, n_classes, group)
    cc = compile_c(c, width=width, cache_dir=cache)
    for n in (1, 63, 64, 65, width - 1, width + 1, 1000):
        x = rand_images(n, n, n_pixels)
        ref = reference(c, x)
        np.testing.assert_array_equal(cc.predict_images(x), ref)
    if n_classes > 1:
        assert len(set(ref.tolist())) > 1, "the circuit should predict several classes"
    assert cc.predict_images(np.zeros((0, n_pixels), np.uint8)).shape == (0,)


def test_predict_images_ties_go_to_the_lowest_class(cache):
    """Classes 1 and 3 always have 1 vote, class 0 none, class 2 = p0 + p1: class 2 wins
    only with both pixels on, every tie goes to class 1."""
    t = Circuit(n_inputs=2, ops=[0, 15, 3, 5], a=[0, 0, 0, 0], b=[1, 1, 1, 1],
                outputs=[2, 2, 3, 2, 4, 5, 3, 2], n_classes=4, meta={"thresholds": [127]})
    x = rand_images(5, 300, 2)
    got = compile_c(t, width=256, cache_dir=cache).predict_images(x)
    np.testing.assert_array_equal(got, reference(t, x))
    np.testing.assert_array_equal(got, np.where((x > 127).all(axis=1), 2, 1))


@pytest.fixture(scope="module")
def mnist_test(data_dir):
    from kairo.data import load_mnist

    return load_mnist("test", data_dir)


@pytest.mark.slow
def test_predict_images_on_mnist(cache, mnist_test):
    x, _ = mnist_test
    x = x[:1500]
    c = image_circuit(7, 784, (50, 127, 200), n_classes=10, group=20, n_gates=3000)
    ref = c.predict(c.image_bits(x))
    assert len(set(ref.tolist())) > 2
    for width in (64, 512):
        cc = compile_c(c, width=width, cache_dir=cache)
        np.testing.assert_array_equal(cc.predict_images(x), ref)        # (n, 28, 28)
        np.testing.assert_array_equal(cc.predict_images(x.reshape(len(x), -1)), ref)
        out = np.empty(len(x), np.int32)
        assert cc.predict_images(x, out=out) is out
        np.testing.assert_array_equal(out, ref)


@pytest.mark.slow
@pytest.mark.parametrize("flags, simd", [(["-mno-avx512f"], "AVX2"),
                                         (["-mno-avx2", "-mno-avx512f"], "scalar")])
def test_avx2_and_scalar_paths(tmp_path, flags, simd):
    """The same source without AVX-512 (AVX2 compare + movemask) and without AVX2 (a loop)
    compiles warning-free and gives the same classes."""
    if "avx2" not in cpu_flags():
        pytest.skip("CPU without AVX2")
    c = image_circuit(3, 70, (30, 130, 250), n_classes=4, group=9)
    x = rand_images(1, 777, 70)
    for width in (64, 256):
        src, lib = tmp_path / f"w{width}.c", tmp_path / f"w{width}.so"
        src.write_text(c_source(c, width=width))
        r = subprocess.run([*find_compiler(), "-O2", "-march=native", *flags, "-Wall",
                            "-Wextra", "-Werror", "-shared", "-fPIC", "-o", str(lib),
                            str(src)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[:2000]
        cc = CompiledCircuit(c, lib, width)
        np.testing.assert_array_equal(cc.predict_images(x), reference(c, x))


def test_native_source_warning_free(tmp_path):
    c = image_circuit(4, 100, (127,), n_classes=3, group=4)
    for width in (64, 512):
        f = tmp_path / f"n{width}.c"
        f.write_text(c_source(c, width=width))
        r = subprocess.run([*find_compiler(), "-O1", "-march=native", "-Wall", "-Wextra",
                            "-Werror", "-c", "-o", str(tmp_path / "n.o"), str(f)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[:2000]


def test_bad_images(cache):
    c = image_circuit(2, 784, (127,), n_classes=2, group=3)
    cc = compile_c(c, width=64, cache_dir=cache)
    with pytest.raises(DataError, match=r"must be uint8 .* got dtype float32"):
        cc.predict_images(np.zeros((3, 784), np.float32))
    with pytest.raises(DataError, match=r"shape \(n_images, 784\) .* got shape \(3, 783\)"):
        cc.predict_images(np.zeros((3, 783), np.uint8))
    with pytest.raises(DataError, match=r"got shape \(784,\)"):
        cc.predict_images(np.zeros(784, np.uint8))
    with pytest.raises(DataError, match=r"got shape \(2, 27, 28\)"):
        cc.predict_images(np.zeros((2, 27, 28), np.uint8))
    with pytest.raises(KairoError, match=r"out must be a writable C-contiguous int32 array "
                                         r"of shape \(3,\)"):
        cc.predict_images(np.zeros((3, 784), np.uint8), out=np.zeros(3, np.int64))
    bare = Circuit(n_inputs=4, ops=[1], a=[0], b=[1], outputs=[4, 2], n_classes=2)
    assert bare.image_input is None
    with pytest.raises(KairoError, match="no pixel thresholds"):
        compile_c(bare, width=64, cache_dir=cache).predict_images(np.zeros((1, 4), np.uint8))
    odd = Circuit(n_inputs=5, ops=[1], a=[0], b=[1], outputs=[5, 2], n_classes=2,
                  meta={"thresholds": [10, 20]})               # 2 thresholds do not divide 5
    assert odd.image_input is None


def test_image_input_contract():
    c = image_circuit(1, 10, (-7, 0, 12.7, 254.2, 300), n_classes=1, group=2, n_gates=40)
    assert c.image_input == ImageInput((-1, 0, 12, 254, 255), 10)
    assert c.image_input.shape == (10,) and c.image_input.compare_thresholds().dtype == np.int16
    x = rand_images(3, 50, 10)
    np.testing.assert_array_equal(c.image_bits(x), (x[:, None, :] > np.array(
        [-7, 0, 12.7, 254.2, 300])[None, :, None]).reshape(50, -1))
    square = Circuit(n_inputs=1568, ops=[1], a=[0], b=[1], outputs=[1568, 2], n_classes=2,
                     meta={"thresholds": [50, 200]})
    assert square.image_input.shape == (28, 28) and square.image_input.n_pixels == 784
    assert square.image_input.compare_thresholds().dtype == np.uint8
    with pytest.raises(KairoError, match="no pixel thresholds"):
        Circuit(n_inputs=2, ops=[1], a=[0], b=[1], outputs=[2]).image_bits(x)


# ---------------------------------------------------------------------------- the anchor
@pytest.mark.parametrize("thresholds", [(60, 180), (-3, 255.5, 50.5)])
def test_anchor_matches_reference(cache, thresholds):
    c = image_circuit(9, 50, thresholds, n_classes=3, group=70)
    an = AnchorCircuit(c, cache_dir=cache)
    assert an.thresholds.dtype == (np.uint8 if thresholds[0] >= 0 else np.int16)
    src = anchor_source(c)
    assert src.count("const uint64_t g") == c.n_live_gates()
    for n in (1, 64, 130, ANCHOR_BATCH + 70):
        x = rand_images(n, n, 50)
        out = np.full(n, -1, np.int32)
        np.testing.assert_array_equal(an.predict_images(x, out), reference(c, x))


def test_read_bandwidth(cache):
    bw = read_bandwidth(8 << 20, repeats=2, cache_dir=cache)
    assert bw["bytes"] == 8 << 20 and bw["bytes_per_s"] > 1e8


def test_bench_circuit_figures(cache):
    c = image_circuit(11, 784, (127,), n_classes=2, group=40, classes=(0, 1))
    x = rand_images(0, 3000, 784)
    res = bench_circuit(c, x, repeats=2, bandwidth_bytes=4 << 20, cache_dir=cache)
    impl = res["implementations"]
    assert set(impl) == {"kairo", "anchor", "kairo_bits"}
    assert all(v["images_per_s"] > 0 for v in impl.values())
    assert res["speedup_vs_anchor"] == pytest.approx(
        impl["kairo"]["images_per_s"] / impl["anchor"]["images_per_s"])
    assert impl["anchor"]["predictions_equal"] and impl["anchor"]["c_only_images_per_s"] > 0
    assert res["bandwidth"]["bound_images_per_s"] == pytest.approx(
        res["bandwidth"]["bytes_per_s"] / 784)
    assert res["circuit"]["live_gates"] <= c.n_gates and res["bytes_per_image"] == 784
    with pytest.raises(KairoError, match="repeats must be a positive integer"):
        bench_circuit(c, x, repeats=0, cache_dir=cache)
    with pytest.raises(DataError, match="no images"):
        bench_circuit(c, x[:0], cache_dir=cache)


# ---------------------------------------------------------------------------- the command
def test_bench_command_end_to_end(tmp_path, data_dir, capsys):
    path = tmp_path / "c.json"
    image_circuit(12, 784, (127,), n_classes=2, group=30, classes=(0, 1)).save(path)
    out = tmp_path / "bench"
    assert main(["--data-dir", str(data_dir), "logic", "bench", "--circuit", str(path),
                 "--images", "5000", "--repeats", "2", "--bandwidth-mib", "8",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "kairo / anchor" in text and "images/s" in text
    res = json.loads((out / "bench.json").read_text())
    assert res["n_images"] == 5000 and res["accuracy_images"] == 2115     # MNIST test 0s, 1s
    assert 0 <= res["accuracy"] <= 1 and "MNIST test images" in res["images_source"]
    assert res["implementations"]["anchor"]["predictions_equal"]
    assert len(res["loadavg_before"]) == 3 and res["cpu"]
    assert (out / "run.json").is_file() and (out / "config.yaml").is_file()


def test_bench_bad_options(tmp_path, capsys):
    base = ["logic", "bench", "--circuit", str(tmp_path / "c.json")]
    assert main([*base, "--images", "0"]) == 2
    assert "images must be ≥ 1" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:              # argparse refuses a bad choice
        main([*base, "--width", "128"])
    assert exc.value.code == 2 and "invalid choice: '128'" in capsys.readouterr().err
