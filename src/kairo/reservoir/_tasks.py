"""Standard reservoir-computing tasks and their metrics.

Each generator returns a `TaskData`: inputs ``u`` (n_steps, n_inputs), targets ``y``
(n_steps, n_targets) aligned in time (the target at step t is what the readout must produce
from the state after input u(t)), and the split (washout, train, test).
"""

from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

from kairo._errors import ConfigError, KairoError

__all__ = ["TaskData", "TASKS", "make_task", "ngym_tasks", "ngym_task", "trial_accuracy",
           "memory_capacity_task", "narma", "narma10_task",
           "mackey_glass", "mackey_glass_task", "lorenz", "lorenz_task", "sine_square_task",
           "nrmse", "r2", "memory_capacity", "accuracy"]


@dataclass(frozen=True)
class TaskData:
    name: str
    u: np.ndarray            # (n_steps, n_inputs)
    y: np.ndarray            # (n_steps, n_targets)
    washout: int
    n_train: int
    n_test: int
    kind: str = "regression"  # or "classification"
    meta: dict = field(default_factory=dict)

    @property
    def train(self) -> slice:
        return slice(self.washout, self.washout + self.n_train)

    @property
    def test(self) -> slice:
        return slice(self.washout + self.n_train, self.washout + self.n_train + self.n_test)


# ---------------------------------------------------------------------------- metrics
def nrmse(y, y_hat) -> float:
    """Root-mean-square error divided by the target's standard deviation (mean over targets)."""
    y, y_hat = np.atleast_2d(np.asarray(y).T).T, np.atleast_2d(np.asarray(y_hat).T).T
    err = np.sqrt(np.mean((y - y_hat) ** 2, axis=0)) / np.std(y, axis=0)
    return float(np.mean(err))


def r2(y, y_hat) -> float:
    """Coefficient of determination, averaged over targets (scikit-learn's definition)."""
    from sklearn.metrics import r2_score

    return float(r2_score(y, y_hat))


def _sq_corr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a - a.mean(0)
    b = b - b.mean(0)
    den = np.sqrt((a * a).sum(0) * (b * b).sum(0))
    return np.divide((a * b).sum(0) ** 2, den ** 2, out=np.zeros(a.shape[1]), where=den > 0)


def memory_capacity(y, y_hat) -> tuple[float, np.ndarray]:
    """Jaeger's memory capacity: Σ_k corr²(u(t−k), ŷ_k(t)); returns (MC, per-delay curve)."""
    curve = _sq_corr(np.asarray(y, float), np.asarray(y_hat, float))
    return float(curve.sum()), curve


def accuracy(labels, scores) -> float:
    """Fraction of steps whose arg-max score equals the label."""
    return float(np.mean(np.argmax(scores, axis=1) == np.asarray(labels)))


# ---------------------------------------------------------------------------- generators
def _split_len(n_train: int, n_test: int, washout: int) -> int:
    for k, v in (("n_train", n_train), ("n_test", n_test)):
        if int(v) < 1:
            raise KairoError(f"{k} must be ≥ 1, got {v}")
    if int(washout) < 0:
        raise KairoError(f"washout must be ≥ 0, got {washout}")
    return int(washout + n_train + n_test)


def memory_capacity_task(*, n_train=4000, n_test=1000, washout=500, max_delay=100, seed=None,
                         **_) -> TaskData:
    """Jaeger (2001): i.i.d. u(t) ~ U(−0.5, 0.5); target k is u(t−k), k = 1..max_delay."""
    if int(max_delay) < 1:
        raise KairoError(f"max_delay must be ≥ 1, got {max_delay}")
    if washout < max_delay:
        raise KairoError(f"washout ({washout}) must be ≥ max_delay ({max_delay}) so every "
                         f"target u(t−k) exists")
    n = _split_len(n_train, n_test, washout)
    rng = np.random.default_rng(seed)
    u = rng.uniform(-0.5, 0.5, size=n)
    y = np.stack([np.roll(u, k) for k in range(1, max_delay + 1)], axis=1)
    return TaskData("memory-capacity", u[:, None], y, washout, n_train, n_test,
                    meta={"max_delay": max_delay})


def narma(u: np.ndarray, order: int = 10) -> np.ndarray:
    """NARMA of the given order with the Atiya & Parlos (2000) coefficients:

    y(t+1) = 0.3 y(t) + 0.05 y(t) Σ_{i=0}^{order−1} y(t−i) + 1.5 u(t−order+1) u(t) + 0.1
    """
    y = np.zeros(len(u))
    for t in range(order - 1, len(u) - 1):
        y[t + 1] = (0.3 * y[t] + 0.05 * y[t] * y[t - order + 1:t + 1].sum()
                    + 1.5 * u[t - order + 1] * u[t] + 0.1)
    return y


def narma10_task(*, n_train=4000, n_test=1000, washout=500, seed=None, **_) -> TaskData:
    """NARMA-10 with u(t) ~ U(0, 0.5): input u(t), target y(t+1), so that the state after
    u(t) predicts y(t+1). Rare divergent draws are redrawn from the same seeded stream."""
    n = _split_len(n_train, n_test, washout) + 1
    rng = np.random.default_rng(seed)
    for _attempt in range(100):
        u = rng.uniform(0.0, 0.5, size=n)
        y = narma(u, 10)
        if np.all(np.isfinite(y)) and np.abs(y).max() < 10:
            break
    else:  # pragma: no cover - practically never
        raise KairoError("NARMA-10 diverged in 100 draws")
    return TaskData("narma10", u[:-1, None], y[1:, None], washout, n_train, n_test)


def mackey_glass(n: int, *, tau: float = 17.0, beta: float = 0.2, gamma: float = 0.1,
                 power: float = 10.0, dt: float = 0.1, sample_every: int = 10, x0: float = 1.2,
                 rng=None, discard: int = 1000) -> np.ndarray:
    """Mackey-Glass series dx/dt = β x(t−τ)/(1+x(t−τ)^n) − γ x, integrated with RK4.

    Delayed values at half-steps are linear interpolations of the stored history. The history
    before t=0 is x0 (plus a tiny seeded jitter when ``rng`` is given). Samples are taken every
    ``sample_every·dt`` time units after discarding ``discard`` samples of transient.
    """
    d = int(round(tau / dt))
    total = (n + discard) * sample_every
    x = np.empty(total + d + 1)
    x[:d + 1] = x0 if rng is None else x0 + 0.01 * rng.standard_normal(d + 1)

    def f(xt, xd):
        return beta * xd / (1.0 + xd ** power) - gamma * xt

    for i in range(d, total + d):
        xd0, xd1 = x[i - d], x[i - d + 1]
        xdh = 0.5 * (xd0 + xd1)
        k1 = f(x[i], xd0)
        k2 = f(x[i] + 0.5 * dt * k1, xdh)
        k3 = f(x[i] + 0.5 * dt * k2, xdh)
        k4 = f(x[i] + dt * k3, xd1)
        x[i + 1] = x[i] + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return x[d:][::sample_every][discard:discard + n]  # x[d] is t = 0


def mackey_glass_task(*, n_train=4000, n_test=1000, washout=500, horizon=84, seed=None,
                      **_) -> TaskData:
    """h-step prediction of Mackey-Glass (τ = 17, sampled every time unit); input and target
    are z-scored with the same constants. The default horizon of 84 steps is the long-range
    benchmark of Jaeger & Haas (2004); one step ahead is nearly trivial for any reservoir."""
    if int(horizon) < 1:
        raise KairoError(f"horizon must be ≥ 1, got {horizon}")
    n = _split_len(n_train, n_test, washout)
    x = mackey_glass(n + horizon, rng=np.random.default_rng(seed))
    x = (x - x.mean()) / x.std()
    return TaskData("mackey-glass", x[:n, None], x[horizon:horizon + n, None], washout,
                    n_train, n_test, meta={"horizon": horizon, "tau": 17})


def lorenz(n: int, *, dt: float = 0.02, sigma=10.0, rho=28.0, beta=8.0 / 3.0, rng=None,
           discard: int = 500) -> np.ndarray:
    """Lorenz-63 sampled every ``dt`` (DOP853, rtol 1e-9), shape (n, 3)."""
    x0 = np.array([1.0, 1.0, 1.0]) + (0 if rng is None else rng.standard_normal(3))

    def rhs(_t, s):
        return [sigma * (s[1] - s[0]), s[0] * (rho - s[2]) - s[1], s[0] * s[1] - beta * s[2]]

    t = np.arange(n + discard) * dt
    sol = solve_ivp(rhs, (0, t[-1]), x0, t_eval=t, method="DOP853", rtol=1e-9, atol=1e-9)
    return sol.y.T[discard:]


def lorenz_task(*, n_train=4000, n_test=1000, washout=500, horizon=25, seed=None,
                **_) -> TaskData:
    """h-step prediction of the Lorenz-63 state: input (x, y, z)(t), target (x, y, z)(t+h),
    z-scored per coordinate. Default h = 25 samples (0.5 time units, about half a
    Lyapunov time); at 10 samples or fewer the Winding reservoir reaches NRMSE < 1e-3."""
    if int(horizon) < 1:
        raise KairoError(f"horizon must be ≥ 1, got {horizon}")
    n = _split_len(n_train, n_test, washout)
    s = lorenz(n + horizon, rng=np.random.default_rng(seed))
    s = (s - s.mean(0)) / s.std(0)
    return TaskData("lorenz", s[:n], s[horizon:horizon + n], washout, n_train, n_test,
                    meta={"horizon": horizon, "dt": 0.02})


def sine_square_task(*, n_train=4000, n_test=1000, washout=500, period=8, seed=None,
                     **_) -> TaskData:
    """Sine/square waveform classification (Paquot et al. 2012): a random sequence of sine and
    square periods; the readout labels each step (one-hot targets, accuracy of the arg-max)."""
    if int(period) < 2:
        raise KairoError(f"period must be ≥ 2, got {period} (steps per waveform)")
    n = _split_len(n_train, n_test, washout)
    rng = np.random.default_rng(seed)
    n_per = -(-n // period)
    kind = rng.integers(0, 2, size=n_per)
    phase = np.sin(2 * np.pi * np.arange(period) / period)
    square = np.where(np.arange(period) < period // 2, 1.0, -1.0)
    u = np.concatenate([phase if k == 0 else square for k in kind])[:n]
    labels = np.repeat(kind, period)[:n]
    y = np.eye(2)[labels]
    return TaskData("sine-square", u[:, None], y, washout, n_train, n_test,
                    kind="classification", meta={"period": period, "labels": labels})


TASKS = {
    "memory-capacity": memory_capacity_task,
    "narma10": narma10_task,
    "mackey-glass": mackey_glass_task,
    "lorenz": lorenz_task,
    "sine-square": sine_square_task,
}

#: The headline metric per task and whether larger is better.
HEADLINE = {"memory-capacity": ("mc", True), "narma10": ("nrmse", False),
            "mackey-glass": ("nrmse", False), "lorenz": ("nrmse", False),
            "sine-square": ("accuracy", True)}


def make_task(name: str, **params) -> TaskData:
    """A task by name: one of ``TASKS``, or ``ngym:<Name>`` for a NeuroGym task
    (:func:`ngym_task`)."""
    if name.startswith(PREFIX):
        return ngym_task(name[len(PREFIX):], **params)
    if name not in TASKS:
        raise KairoError(f"unknown task {name!r}; expected one of {', '.join(TASKS)} or "
                         f"ngym:<NeuroGym task>")
    return TASKS[name](**params)


# ---------------------------------------------------------------------------- NeuroGym
# NeuroGym's cognitive tasks (``--task ngym:PerceptualDecisionMaking``). The trials come from
# the ``neurogym`` package itself (its environments generate the observations and the ground
# truth; nothing is re-implemented here). A task is a sequence of whole trials: the
# observations are the reservoir's input, the readout is trained on the decision period only
# (one-hot targets of the correct action), and each test trial is scored once — the arg-max of
# the readout averaged over its decision period against the trial's correct action.
PREFIX = "ngym:"


def _neurogym():
    try:
        import neurogym
    except ImportError as exc:
        raise KairoError("NeuroGym tasks need the neurogym package: pip install "
                         "'kairo-circuits[ngym]' (or pip install neurogym==1.0.8)") from exc
    return neurogym


def ngym_tasks() -> list[str]:
    """The NeuroGym environments the installed package offers, without the ``-v0``."""
    from neurogym.envs.registration import all_envs

    _neurogym()
    return sorted(name.rsplit("-v", 1)[0] for name in all_envs())


def _parse_timing(timing) -> dict:
    out = {}
    for item in timing:
        period, sep, ms = str(item).partition("=")
        try:
            out[period.strip()] = float(ms)
        except ValueError:
            sep = ""
        if not sep or not period.strip():
            raise ConfigError(f"ngym_timing: expected period=ms items (e.g. stimulus=500), "
                              f"got {item!r}")
    return out


def ngym_task(name: str, *, n_train: int = 4000, n_test: int = 1000, washout: int = 500,
              seed=None, dt: float = 100.0, timing=(), sigma: float | None = None,
              cohs=(), **_) -> TaskData:
    """Whole trials of NeuroGym's ``name`` covering at least washout + n_train + n_test
    steps; the three spans are rounded up to trial boundaries."""
    ngym = _neurogym()
    available = ngym_tasks()
    if name not in available:
        raise KairoError(f"unknown NeuroGym task {name!r}; the installed neurogym offers: "
                         f"{', '.join(available)}")
    kwargs: dict = {"dt": float(dt)}
    if timing:
        kwargs["timing"] = _parse_timing(timing)
    if sigma is not None:
        kwargs["sigma"] = float(sigma)
    if cohs:
        kwargs["cohs"] = [float(c) for c in cohs]
    env_id = f"{name}-v0"
    import neurogym.envs.registration as reg

    cls = reg.ALL_ENVS.get(env_id)
    accepted = set(inspect.signature(_env_class(cls)).parameters) if cls else set()
    for key, option in (("sigma", "ngym_sigma"), ("cohs", "ngym_cohs")):
        if key in kwargs and key not in accepted:
            raise ConfigError(f"{option}: NeuroGym's {name} has no {key!r} option (it takes "
                              f"{', '.join(sorted(accepted - {'self'})) or 'none'})")
    try:
        with warnings.catch_warnings():       # gymnasium's note on render_modes is noise here
            warnings.simplefilter("ignore", UserWarning)
            env = ngym.make(env_id, **kwargs).unwrapped
    except (TypeError, ValueError, KeyError) as exc:
        raise ConfigError(f"NeuroGym {name}: {exc}") from exc
    env.seed(int(np.random.default_rng(seed).integers(2**31)))
    need = [int(washout), int(n_train), int(n_test)]
    obs, gts, masks, trial_of, labels = [], [], [], [], []
    spans, total = [], 0
    for want in need:
        got = 0
        while got < want or (want > 0 and got == 0):
            env.new_trial()
            ob, gt = np.asarray(env.ob, dtype=np.float64), np.asarray(env.gt)
            if "decision" not in env.start_ind:
                raise KairoError(f"NeuroGym {name} has no decision period; kairo scores "
                                 f"trials on it")
            mask = np.zeros(len(gt), dtype=bool)
            mask[env.start_ind["decision"]:env.end_ind["decision"]] = True
            if not mask.any():
                raise ConfigError(f"NeuroGym {name}: the decision period is shorter than one "
                                  f"step of dt = {dt} ms (set ngym_timing or ngym_dt)")
            obs.append(ob)
            gts.append(gt)
            masks.append(mask)
            trial_of.append(np.full(len(gt), len(labels)))
            labels.append(int(np.bincount(gt[mask]).argmax()))
            got += len(gt)
        spans.append(got)
        total += got
    u = np.concatenate(obs)
    gt = np.concatenate(gts).astype(np.int64)
    n_actions = int(env.action_space.n)
    y = np.eye(n_actions)[gt]
    return TaskData(f"{PREFIX}{name}", u, y, spans[0], spans[1], spans[2],
                    kind="classification",
                    meta={"labels": gt, "mask": np.concatenate(masks),
                          "trial": np.concatenate(trial_of), "trial_labels": np.array(labels),
                          "n_actions": n_actions, "dt": float(dt), "n_trials": len(labels)})


def _env_class(cls):
    if isinstance(cls, str):                      # "module:Class" entry points
        import importlib

        mod, _, attr = cls.partition(":")
        return getattr(importlib.import_module(mod), attr)
    return cls


def trial_accuracy(data: TaskData, y_hat: np.ndarray, span: slice) -> tuple[float, int]:
    """Accuracy over the trials whose steps all lie in ``span``: the arg-max of the readout
    averaged over each trial's decision period against the trial's correct action."""
    trial, mask = data.meta["trial"][span], data.meta["mask"][span]
    full = np.flatnonzero(np.bincount(data.meta["trial"]) ==
                          np.bincount(trial, minlength=data.meta["n_trials"]))
    correct = []
    for t in full:
        sel = (trial == t) & mask
        correct.append(int(y_hat[sel].mean(0).argmax() == data.meta["trial_labels"][t]))
    if not correct:
        raise KairoError("the test span holds no whole trial: raise n_test")
    return float(np.mean(correct)), len(correct)
