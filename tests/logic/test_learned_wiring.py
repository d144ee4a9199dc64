"""Learned wiring: each dense gate input chooses among candidate sources. The candidate sets,
the fused kernel against the torch reference (values and gradients, every gate mode), a
numerical gradient check, the discretized layer equal to its circuit bit for bit, a toy task
whose right wiring training must find, and a killed run that resumes exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kairo import ConfigError
from kairo.logic import (LogicDense, LogicTrainConfig, load_data,
                         model_from_checkpoint, train)
from kairo.logic._layers import candidate_sets
from resume import assert_circuit_is_model, train_killed_and_resumed


@pytest.mark.parametrize("n_in, n_out, k", [(784, 100, 8), (40, 300, 6), (5, 7, 8), (2, 3, 2)])
def test_candidate_sets_cover_the_inputs_without_repeats(n_in, n_out, k):
    cand = candidate_sets(n_in, n_out, k, np.random.default_rng(0))
    assert cand.shape == (2, n_out, k) and cand.dtype == np.int64
    assert cand.min() >= 0 and cand.max() < n_in
    rows = cand.reshape(-1, k)
    if k <= n_in:
        assert all(len(set(r)) == k for r in rows)            # no source twice in a set
    else:
        assert all(len(set(r)) == n_in for r in rows)         # every input, some twice
    if 2 * n_out * k >= n_in:
        assert set(cand.ravel()) == set(range(n_in))          # every input is a candidate
    again = candidate_sets(n_in, n_out, k, np.random.default_rng(0))
    np.testing.assert_array_equal(cand, again)


def _pair(engine_a, engine_b, mode, dtype, **kw):
    out = []
    for engine in (engine_a, engine_b):
        m = LogicDense(37, 23, wiring="learned", candidates=5, seed=3, engine=engine,
                       mode=mode, **kw).to(dtype)
        with torch.no_grad():
            torch.manual_seed(1)
            for p in (m.weight, m.wire_a, m.wire_b):
                p.normal_()
        out.append(m)
    return out


@pytest.mark.parametrize("mode", ["soft", "hard", "gumbel"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fused_learned_wiring_equals_torch(mode, dtype):
    ref, fast = _pair("torch", "fused", mode, dtype)
    x = torch.rand(19, 37, dtype=dtype, requires_grad=True)
    w = torch.linspace(-1, 1, 19 * 23, dtype=dtype).reshape(19, 23)
    got = []
    for m in (ref, fast):
        torch.manual_seed(7)                     # the same Gumbel draw for both
        y = m(x, temperature=0.7)
        got.append((y, *torch.autograd.grad((y * w).sum(), [x, m.weight, m.wire_a,
                                                             m.wire_b])))
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else dict(rtol=1e-12,
                                                                          atol=1e-12)
    for name, a, b in zip(["y", "x", "gates", "wire_a", "wire_b"], *got):
        torch.testing.assert_close(b, a, **tol, msg=name)


def test_fused_learned_wiring_gradcheck():
    from kairo.logic import _kernels

    torch.manual_seed(0)
    ca = torch.randint(0, 9, (6, 4))
    cb = torch.randint(0, 9, (6, 4))
    users = _kernels.dense_users(ca.reshape(-1), cb.reshape(-1), 9)
    args = [torch.rand(9, 5, dtype=torch.float64, requires_grad=True),
            torch.randn(6, 4, dtype=torch.float64, requires_grad=True), ca, cb,
            torch.rand(6, 4, dtype=torch.float64, requires_grad=True),
            torch.rand(6, 4, dtype=torch.float64, requires_grad=True), users]
    assert torch.autograd.gradcheck(_kernels.dense_learned, args)


@pytest.mark.parametrize("engine", ["torch", "fused"])
def test_discretized_learned_layer_is_its_circuit(engine):
    m = LogicDense(30, 12, wiring="learned", candidates=6, seed=2, engine=engine)
    with torch.no_grad():
        torch.manual_seed(4)
        for p in (m.weight, m.wire_a, m.wire_b):
            p.normal_()
    ia, ib = m.sources()
    rows = torch.arange(12)
    assert torch.equal(ia, m.ca[rows, m.wire_a.argmax(1)])
    assert torch.equal(ib, m.cb[rows, m.wire_b.argmax(1)])
    x = torch.randint(0, 2, (64, 30)).float()
    m.eval()
    y = m(x)
    ops = m.ops()
    from kairo.logic import TRUTH
    a, b = x[:, ia].long().numpy(), x[:, ib].long().numpy()
    want = (np.asarray(TRUTH)[ops][None, :] >> (2 * a + b)) & 1
    np.testing.assert_array_equal(y.numpy(), want)
    # "fixed" in training computes the same discrete layer, and its logits get no gradient
    m.train()
    y2 = m(x.requires_grad_(), fixed=True)
    torch.testing.assert_close(y2, y)
    y2.sum().backward()
    assert m.wire_a.grad is None and m.weight.grad is None


def test_fused_discrete_learned_layer_follows_every_optimizer_step():
    """The fused discrete path caches the chosen sources' CSR: after each optimizer step that
    moves a choice it must equal the torch reference given the same weights (and the input
    gradient too, which is what the CSR serves)."""
    torch.manual_seed(0)
    f = LogicDense(64, 128, wiring="learned", candidates=8, engine="fused", seed=1)
    ref = LogicDense(64, 128, wiring="learned", candidates=8, engine="torch", seed=1)
    opt = torch.optim.Adam(f.parameters(), lr=0.5)
    x = torch.randint(0, 2, (32, 64)).float()
    seen = set()
    for _ in range(4):
        f.train()
        opt.zero_grad()
        f(x).sum().backward()
        opt.step()
        ref.load_state_dict(f.state_dict())
        seen.add(tuple(f.sources()[0].tolist()))
        for m in (f, ref):
            m.eval()
        xf, xr = x.clone().requires_grad_(), x.clone().requires_grad_()
        yf, yr = f(xf), ref(xr)
        torch.testing.assert_close(yf, yr)
        (yf * torch.arange(128.0)).sum().backward()
        (yr * torch.arange(128.0)).sum().backward()
        torch.testing.assert_close(xf.grad, xr.grad)
    assert len(seen) > 1                                    # the wiring did move


@pytest.mark.parametrize("engine", ["torch", "fused"])
@pytest.mark.parametrize("target", ["copy", "and_not"])
def test_training_finds_the_wiring_of_a_gate(engine, target):
    """One gate among 16 inputs, every input a candidate of both gate inputs: gradient descent
    on the gate and wiring logits finds y = x7, and y = x3 AND NOT x11 (the latter needs a
    good start: 6 of 10 seeds find it alone; seed 0 does)."""
    f = {"copy": lambda x: x[:, 7], "and_not": lambda x: x[:, 3] * (1 - x[:, 11])}[target]
    torch.manual_seed(0)
    m = LogicDense(16, 1, wiring="learned", candidates=16, seed=0, engine=engine)
    opt = torch.optim.Adam(m.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1)
    for _ in range(300):
        x = torch.randint(0, 2, (64, 16), generator=g).float()
        loss = torch.nn.functional.binary_cross_entropy(m(x)[:, 0].clamp(1e-6, 1 - 1e-6),
                                                        f(x))
        opt.zero_grad()
        loss.backward()
        opt.step()
    ia, ib = m.sources()
    used = {int(ia[0]), int(ib[0])}
    assert (7 in used) if target == "copy" else used == {3, 11}
    m.eval()
    x = torch.randint(0, 2, (256, 16), generator=g).float()
    torch.testing.assert_close(m(x)[:, 0], f(x))


def test_learned_wiring_config_and_layer_errors():
    with pytest.raises(ConfigError, match="wiring: expected one of random, unique, learned"):
        LogicTrainConfig(wiring="zigzag")
    with pytest.raises(ConfigError, match="candidates"):
        LogicTrainConfig(wiring="learned", candidates=1)
    with pytest.raises(ConfigError, match="candidates must be an integer"):
        LogicDense(4, 4, wiring="learned", candidates=0)
    with pytest.raises(ConfigError, match="wiring must be one of"):
        LogicDense(4, 4, wiring="zigzag")
    from kairo.logic import LogicConv2d
    with pytest.raises(ConfigError, match="wiring must be one of"):
        LogicConv2d(1, 4, wiring="zigzag")


@pytest.fixture(scope="module")
def learned_zero_one(data_dir):
    cfg = LogicTrainConfig(classes=(0, 1), hidden=60, layers=2, iters=120, eval_every=60,
                           checkpoint_every=40, wiring="learned", candidates=4,
                           data_dir=str(data_dir))
    return cfg, load_data(cfg)


def test_learned_network_trains_resumes_exactly_and_is_its_circuit(learned_zero_one, tmp_path):
    cfg, data = learned_zero_one
    full = train_killed_and_resumed(cfg, data, tmp_path, stop=40)
    assert full["history"][-1]["val_discrete"] > 0.95
    assert any(n.endswith("wire_a") for n, _ in full["model"].named_parameters())
    model, cfg2 = model_from_checkpoint(tmp_path / "full.pt")
    assert cfg2 == cfg
    assert_circuit_is_model(model, data)
    # a checkpoint of random wiring does not load into learned wiring
    other = LogicTrainConfig(**{**cfg.__dict__, "wiring": "unique"})
    with pytest.raises(Exception, match="wiring"):
        train(other, checkpoint=tmp_path / "full.pt", data=data, progress_bar=False)


# ---------------------------------------------------------------------------- redraw
def test_redraw_replaces_the_least_likely_candidates_and_keeps_the_circuit():
    m = LogicDense(100, 50, wiring="learned", candidates=8, seed=1)
    with torch.no_grad():
        m.wire_a.normal_(generator=torch.Generator().manual_seed(0))
        m.wire_b.normal_(generator=torch.Generator().manual_seed(1))
    src = m.sources()
    before = [(m.ca.clone(), m.wire_a.detach().clone()), (m.cb.clone(), m.wire_b.detach().clone())]
    out = m.redraw(0.25, np.random.default_rng(0))
    assert [w is v for (w, _), v in zip(out, (m.wire_a, m.wire_b))] == [True, True]
    for (cand, w), (c0, w0), (_, mask) in zip(((m.ca, m.wire_a), (m.cb, m.wire_b)), before, out):
        assert all(len(set(r.tolist())) == 8 for r in cand)        # still no source twice
        assert not ((cand != c0) & ~mask).any()                    # only the masked slots move
        assert mask.sum(1).max() <= 2 and mask.sum() > 0.9 * 2 * 50  # 2 of 8 (rare clashes)
        for r in range(50):
            # the two least likely go (a few stay where the drawn source was in the set);
            # the new ones start at the lowest logit the set keeps, the third smallest
            low = w0[r].sort().values
            assert w0[r][mask[r]].max() <= low[1] if mask[r].any() else True
            torch.testing.assert_close(w.detach()[r][mask[r]],
                                       low[2].expand(int(mask[r].sum())))
            torch.testing.assert_close(w.detach()[r][~mask[r]], w0[r][~mask[r]])
    for a, b in zip(src, m.sources()):                             # the argmax stays
        assert torch.equal(a, b)
    # equal logits: the argmax (the first) is kept all the same
    m2 = LogicDense(100, 5, wiring="learned", candidates=4, seed=0)
    first = m2.sources()
    m2.redraw(0.5, np.random.default_rng(0))
    assert all(torch.equal(a, b) for a, b in zip(first, m2.sources()))


def test_redraw_refuses_what_it_cannot_do():
    with pytest.raises(ConfigError, match="learned"):
        LogicDense(10, 5, wiring="unique").redraw(0.25, np.random.default_rng(0))
    m = LogicDense(10, 5, wiring="learned", candidates=4)
    for bad in (0, 1, 1.5):
        with pytest.raises(ConfigError, match="fraction"):
            m.redraw(bad, np.random.default_rng(0))
    assert LogicDense(4, 5, wiring="learned", candidates=4).redraw(0.5, np.random.default_rng(0)) == []
    with pytest.raises(ConfigError, match="rewire_every"):
        LogicTrainConfig(rewire_every=100)                         # unique wiring


def test_a_rewiring_run_resumes_exactly_and_is_its_circuit(learned_zero_one, tmp_path):
    cfg, data = learned_zero_one
    cfg = LogicTrainConfig(**{**cfg.__dict__, "rewire_every": 30, "rewire_fraction": 0.5})
    full = train_killed_and_resumed(cfg, data, tmp_path, stop=40)
    assert full["history"][-1]["val_discrete"] > 0.95
    plain = LogicDense(784, 60, wiring="learned", candidates=4, seed=0)
    model = full["model"]
    first = next(m for m in model.modules() if isinstance(m, LogicDense))
    assert first.ca.shape == plain.ca.shape
    assert_circuit_is_model(model, data)



def test_the_rewiring_schedule_stops_at_the_cosine_phase_and_a_branch_knows_it():
    from kairo.logic._train import branch_info, rewire_at

    cfg = LogicTrainConfig(wiring="learned", iters=1000, rewire_every=100, lr_decay_from=700)
    assert [d for d in range(1, 1001) if rewire_at(cfg, d)] == [100, 200, 300, 400, 500, 600]
    whole = LogicTrainConfig(wiring="learned", iters=1000, rewire_every=300)
    assert [d for d in range(1, 1001) if rewire_at(whole, d)] == [300, 600, 900]
    assert not any(rewire_at(LogicTrainConfig(wiring="learned"), d) for d in range(1, 1001))
    # branching at 250 from a run that rewired every 100: another period or fraction differs
    # before the branch point, a later start of rewiring does not
    old = LogicTrainConfig(wiring="learned", iters=1000, rewire_every=100)
    same = LogicTrainConfig(**{**old.__dict__, "iters": 2000})
    assert branch_info(old, same, 250)["same_as_single_run"]
    for kw in ({"rewire_every": 200}, {"rewire_fraction": 0.5}, {"rewire_every": 0}):
        info = branch_info(old, LogicTrainConfig(**{**old.__dict__, **kw}), 250)
        assert info["differs_before"] == ["rewiring schedule"], kw
    none = LogicTrainConfig(wiring="learned", iters=1000)
    assert branch_info(none, LogicTrainConfig(**{**none.__dict__, "rewire_fraction": 0.5}),
                       250)["same_as_single_run"]
