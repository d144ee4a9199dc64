"""NeuroGym's cognitive tasks as reservoir tasks (``--task ngym:PerceptualDecisionMaking``).

The trials come from the ``neurogym`` package itself (its environments generate the
observations and the ground truth; nothing is re-implemented here). A task is a sequence of
whole trials: the observations are the reservoir's input, the readout is trained on the
decision period only (one-hot targets of the correct action), and each test trial is scored
once — the arg-max of the readout averaged over its decision period against the trial's
correct action (``trial_accuracy``).
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np

from kairo._errors import ConfigError, KairoError
from kairo.reservoir._tasks import TaskData

__all__ = ["PREFIX", "ngym_tasks", "ngym_task", "trial_accuracy"]

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
