"""The fused CPU kernels against the pure-PyTorch reference: values and every gradient."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kairo import ConfigError, KairoError
from kairo.logic import _kernel_threads, _kernels, _layers
from kairo.logic import LogicConv2d, LogicDense, LogicTrainConfig, OrPooling2d, build_model

RTOL, ATOL = 1e-5, 1e-6


@pytest.fixture(params=["serial", "threads"])
def threading_mode(request, monkeypatch):
    """Small jobs run in the caller; "threads" forces 3 threads and many parts on them."""
    if request.param == "threads":
        monkeypatch.setattr(_kernels, "_SERIAL_WORK", 0)
        _kernels.set_num_threads(3)
    yield request.param
    _kernels.set_num_threads(0)


def _run(make, x0: torch.Tensor, engine: str, *, seed: int = 0, train: bool = True):
    """Output, input gradient and weight gradient of a fresh layer under a fixed loss."""
    layer = make(engine).train(train)
    x = x0.clone().requires_grad_(True)
    y = layer(x)
    w = torch.randn(y.shape, generator=torch.Generator().manual_seed(seed), dtype=y.dtype)
    (y * w).sum().backward()
    weight = getattr(layer, "weight", None)
    return y.detach(), x.grad, None if weight is None else weight.grad


def _assert_same(make, x0, **kw):
    ref = _run(make, x0, "torch", **kw)
    fused = _run(make, x0, "fused", **kw)
    for name, r, f in zip(("output", "input grad", "weight grad"), ref, fused):
        if r is not None:
            torch.testing.assert_close(f, r, rtol=RTOL, atol=ATOL,
                                       msg=lambda m, name=name: f"{name}: {m}")
    return ref, fused


@pytest.mark.parametrize("n_in, n_out, pairing", [
    (300, 100, "unique"),          # n_in > 2·n_out: a random subset of inputs is read
    (300, 100, "random"),
    (40, 200, "unique"),           # inputs read by many gates: the CSR scatter
    (1, 3, "random"),              # one input, read twice by every gate
])
def test_dense_fused_equals_torch(n_in, n_out, pairing, threading_mode):
    torch.manual_seed(0)
    x0 = torch.rand(37, n_in)
    make = lambda be: LogicDense(n_in, n_out, wiring=pairing, seed=2, engine=be)  # noqa: E731
    _assert_same(make, x0)
    _assert_same(make, (x0 > 0.5).float(), train=False)      # discrete gates on bits


@pytest.mark.parametrize("c_in, k, r, depth, stride, pad, groups, hw", [
    (1, 4, 3, 3, 1, 1, 1, (12, 12)),
    (2, 6, 3, 2, 2, 0, 2, (11, 9)),
    (4, 4, 2, 1, 1, 1, 4, (5, 7)),
    (3, 5, 5, 4, 3, 2, 1, (13, 10)),
    (2, 3, 1, 2, 1, 0, 1, (4, 4)),             # 1×1 window: leaves read one pixel per channel
])
def test_conv_fused_equals_torch(c_in, k, r, depth, stride, pad, groups, hw, threading_mode):
    torch.manual_seed(1)
    x0 = torch.rand(9, c_in, *hw)
    make = lambda be: LogicConv2d(c_in, k, receptive=r, depth=depth, stride=stride,  # noqa: E731
                                  padding=pad, groups=groups, seed=3, engine=be)
    _assert_same(make, x0)
    _assert_same(make, (x0 > 0.5).float(), train=False)


@pytest.mark.parametrize("kernel, stride", [(2, 2), (3, 2), (2, 1), (1, 1), (2, 3)])
def test_pool_fused_equals_torch_including_ties(kernel, stride, threading_mode):
    """Disjoint windows (covering the input or not) and overlapping ones."""
    torch.manual_seed(2)
    x0 = torch.rand(5, 3, 9, 8)
    make = lambda be: OrPooling2d(kernel, stride, engine=be)  # noqa: E731
    _assert_same(make, x0)
    # bits tie everywhere: max_pool2d gives the gradient to the first maximum, so must we
    _assert_same(make, (x0 > 0.7).float())


def test_gumbel_mode_fused_equals_torch():
    x0 = torch.rand(6, 2, 8, 8)
    for cls, x in ((LogicConv2d, x0), (LogicDense, x0.flatten(1))):
        outs = []
        for be in ("torch", "fused"):
            torch.manual_seed(5)                  # the same Gumbel noise for both
            layer = (cls(2, 4, mode="gumbel", seed=1, engine=be) if cls is LogicConv2d
                     else cls(128, 30, mode="gumbel", seed=1, engine=be))
            outs.append(layer(x))
        torch.testing.assert_close(outs[1], outs[0], rtol=RTOL, atol=ATOL)


@pytest.mark.slow
def test_gradcheck_float64():
    torch.manual_seed(3)
    dense = LogicDense(5, 3, seed=0, engine="fused").double()
    conv = LogicConv2d(2, 2, receptive=2, depth=2, padding=1, groups=2, seed=0,
                       engine="fused").double()
    pool = OrPooling2d(2, 1, engine="fused")
    xd = torch.rand(2, 5, dtype=torch.float64, requires_grad=True)
    xc = torch.rand(2, 2, 3, 2, dtype=torch.float64, requires_grad=True)
    _kernels.set_num_threads(1)                # many tiny calls: no thread hand-offs
    try:
        for layer, x in ((dense, xd), (conv, xc)):
            w = layer.weight.detach().clone().requires_grad_(True)
            assert torch.autograd.gradcheck(_with_weight(layer, w), (x, w))
        assert torch.autograd.gradcheck(pool, (xc,))    # distinct reals: no ties to break
    finally:
        _kernels.set_num_threads(0)


def _with_weight(layer, w):
    """``layer`` with its logits replaced by ``w`` (so gradcheck can vary them)."""
    return lambda x, w: torch.func.functional_call(layer, {"weight": w}, (x,))


def test_whole_conv_model_gradients_match():
    cfg = LogicTrainConfig(classes=(0, 1, 2), kernels=3, hidden=30, thresholds=(60, 180),
                           conv_groups=1, seed=4)
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.integers(0, 256, (16, 784), dtype=np.uint8))
    y = torch.from_numpy(rng.integers(0, 3, 16))
    grads = {}
    for be in ("torch", "fused"):
        model = build_model(LogicTrainConfig(**{**cfg.__dict__, "engine": be}))
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        grads[be] = [p.grad for p in model.parameters()]
    for r, f in zip(grads["torch"], grads["fused"]):
        torch.testing.assert_close(f, r, rtol=1e-4, atol=1e-6)


def test_results_do_not_depend_on_the_thread_count(monkeypatch):
    monkeypatch.setattr(_kernels, "_SERIAL_WORK", 0)
    torch.manual_seed(6)
    x0 = torch.rand(33, 2, 10, 10)
    make_c = lambda be: LogicConv2d(2, 8, seed=0, engine=be)  # noqa: E731
    make_d = lambda be: LogicDense(200, 150, seed=0, engine=be)  # noqa: E731
    runs = []
    for n in (1, 3):
        _kernels.set_num_threads(n)
        try:
            runs.append((_run(make_c, x0, "fused"), _run(make_d, x0.flatten(1), "fused")))
        finally:
            _kernels.set_num_threads(0)
    (c1, d1), (c3, d3) = runs
    for a, b in zip(d1 + c1[:1] + c1[2:], d3 + c3[:1] + c3[2:]):
        assert torch.equal(a, b)                       # dense and conv outputs/weights: bitwise
    torch.testing.assert_close(c1[1], c3[1], rtol=RTOL, atol=ATOL)  # summed per-thread buffers


def test_training_threads_restores_torch_threads():
    before = torch.get_num_threads()
    with _kernels.training_threads():
        assert torch.get_num_threads() == 1 and _kernel_threads._n_threads() == before
    assert torch.get_num_threads() == before and _kernel_threads._THREADS[0] == 0


def test_dense_users_csr_and_its_cache_follow_reloaded_wiring():
    ptr, users = _kernels.dense_users(torch.tensor([2, 0, 2]), torch.tensor([0, 1, 2]), 4)
    # input 0: gate 0 side b (1), gate 1 side a (2); input 1: gate 1 b; input 2: 0a, 2a, 2b
    np.testing.assert_array_equal(ptr, [0, 2, 3, 6, 6])
    np.testing.assert_array_equal(users, [2 * 1 + 0, 2 * 0 + 1, 2 * 1 + 1, 0, 4, 5])
    a = LogicDense(50, 40, seed=0, engine="fused")
    x = torch.rand(8, 50, requires_grad=True)
    a(x).sum().backward()                              # builds and caches a's CSR
    other = LogicDense(50, 40, seed=9, engine="torch")
    a.load_state_dict(other.state_dict())              # new wiring, same buffers
    g_fused = torch.autograd.grad(a(x).sum(), x)[0]
    g_ref = torch.autograd.grad(other(x).sum(), x)[0]
    torch.testing.assert_close(g_fused, g_ref, rtol=RTOL, atol=ATOL)


def test_engine_choice(monkeypatch):
    x = torch.rand(4, 10)
    with pytest.raises(ConfigError, match="engine must be one of auto, torch, fused"):
        LogicDense(10, 5, engine="numba")
    with pytest.raises(KairoError, match="float32/float64 CPU tensors"):
        LogicDense(10, 5, engine="fused").half()(x.half())
    assert _layers._use_fused("auto", x) and not _layers._use_fused("torch", x)
    assert not _layers._use_fused("auto", x.half())            # auto falls back quietly
    monkeypatch.setattr(_layers, "_KERNELS", [None])           # as if numba were missing
    assert not _layers.fused_available() and not _layers._use_fused("auto", x)
    with pytest.raises(ConfigError, match="needs numba"):
        LogicDense(10, 5, engine="fused")
    torch.testing.assert_close(LogicDense(10, 5, seed=1)(x),
                               LogicDense(10, 5, seed=1, engine="torch")(x))


def test_parallel_runs_every_part_once_and_reraises():
    seen = []
    _kernels.set_num_threads(3)
    try:
        _kernel_threads._parallel(lambda p, lo, hi: seen.append((p, lo, hi)),
                                  _kernels._split(10, 4))
        assert sorted(seen) == [(0, 0, 2), (1, 2, 5), (2, 5, 8), (3, 8, 10)]

        def boom(p, lo, hi):
            raise RuntimeError(f"part {p}")
        with pytest.raises(RuntimeError, match="part"):
            _kernel_threads._parallel(boom, _kernels._split(10, 4))
    finally:
        _kernels.set_num_threads(0)


def test_groupsum_reads_neuron_major_outputs_without_a_copy():
    from kairo.logic import GroupSum

    x = torch.rand(12, 5, dtype=torch.float64)           # (n_out, n_samples), as fused
    head = GroupSum(3, tau=2.0)
    torch.testing.assert_close(head(x.t()), head(x.t().contiguous()))
    assert head(x.t()).shape == (5, 3)
