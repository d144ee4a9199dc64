"""Closed-loop trials behind ``kairo fly …``: controllers, one trial, many trials.

A trial alternates decisions and physics: every ``decision_interval`` the controller reads the
odor at the fly's antennae and palps and sets the 2-D descending signal, which is held for
the physics steps until the next decision. Controllers share one interface, so the brainless
baselines, the direct Braitenberg wiring, the connectome and its null models run in the same
loop, from the same odor positions and seeds.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from kairo._errors import ConfigError, KairoError, SelectionError
from kairo._jobs import map_jobs, resolve_executor
from kairo._stats import wilcoxon_p
from kairo.connectome import load_connectome, null_model, prepare
from kairo.fly._config import CONTROLLERS, NULL_CONTROLLERS, FlySettings, TrialsConfig
from kairo.fly._loop import ConnectomeBrain, MotorMap, OdorSensing, SpikingBrain, \
    odor_contrast

__all__ = ["make_controller", "run_trial", "TrialResult", "trial_plan", "run_trials",
           "summarize_trials", "turning_index", "check_output_path"]

SETTLE_TIME = 0.1   # s: legs leave the stretched spawn posture; excluded from turning stats


# ---------------------------------------------------------------------------- controllers
class Controller:
    """Odor readings → (action, signals). ``signals`` feeds the trajectory table and video."""

    name = "controller"
    uses_brain = False

    def reset(self) -> None:
        pass

    def __call__(self, odor: np.ndarray) -> tuple[np.ndarray, dict]:
        raise NotImplementedError


class ConstantController(Controller):
    """No senses, no brain: both sides at ``base`` (walks straight, modulo the gait)."""

    name = "constant"

    def __init__(self, base: float, sensing: OdorSensing):
        self.action = np.clip(np.full(2, float(base)), -0.5, 1.5)
        self.sensing = sensing

    def __call__(self, odor):
        lr = self.sensing.intensities(odor)
        return self.action.copy(), {"odor_L": lr[0], "odor_R": lr[1]}


class BraitenbergController(Controller):
    """Sensory drive → motor map, no network in between (Braitenberg's vehicle 2).

    ``crossed`` wiring turns toward the stronger side (vehicle 2b), ``ipsilateral`` away (2a).
    """

    name = "braitenberg"

    def __init__(self, sensing: OdorSensing, motor: MotorMap):
        self.sensing, self.motor = sensing, motor

    def __call__(self, odor):
        lr = self.sensing.intensities(odor)
        drive = self.sensing.drive(lr)
        return self.motor(drive), {"odor_L": lr[0], "odor_R": lr[1], "drive_L": drive[0],
                                   "drive_R": drive[1]}


class BrainController(Controller):
    """Sensing → connectome reservoir → DN-VNC left/right → motor map."""

    uses_brain = True

    def __init__(self, sensing: OdorSensing, brain: ConnectomeBrain, motor: MotorMap,
                 fixed_scale: float = 0.0):
        self.sensing, self.brain, self.motor = sensing, brain, motor
        self.name = brain.label
        self.fixed_scale = fixed_scale

    def reset(self):
        d0 = self.brain.reset(self.sensing.offset)
        scale = self.fixed_scale or float(np.mean(np.abs(d0)))
        if not scale > 1e-12:
            raise ConfigError("the descending groups are silent under the tonic drive, so the "
                              "motor map has no reference; raise --sensing-offset or set "
                              "--motor-scale")
        self.motor = dataclasses.replace(self.motor, reference=tuple(d0), scale=scale)

    def __call__(self, odor):
        lr = self.sensing.intensities(odor)
        drive = self.sensing.drive(lr)
        act = self.brain.step(drive)
        return self.motor(act[2:]), {"odor_L": lr[0], "odor_R": lr[1], "drive_L": drive[0],
                                     "drive_R": drive[1], "sensory_L": act[0],
                                     "sensory_R": act[1], "dn_L": act[2], "dn_R": act[3]}


@functools.lru_cache(maxsize=4)
def _raw_connectome(name: str, compartment: str, data_dir: str | None):
    return load_connectome(name, data_dir=data_dir, compartment=compartment)


def _brain_connectome(cfg: FlySettings, null: str | None, seed: int, lif: bool = False):
    raw = _raw_connectome(cfg.connectome, cfg.compartment, cfg.data_dir)
    groups = []
    for attr in ("sensory_left", "sensory_right", "descending_left", "descending_right"):
        try:
            idx = raw.group(getattr(cfg, attr))
        except SelectionError as exc:   # name the option, not only the selection
            raise SelectionError(f"{attr} {getattr(cfg, attr)!r}: {exc}") from exc
        groups.append(idx)
    base = raw if null is None else null_model(raw, null, seed=np.random.SeedSequence(
        [int(seed), 3]))
    # a spiking brain reads synapse counts (w_syn sets the scale): no normalization, no gain
    c = prepare(base, norm="none" if lif else cfg.norm,
                spectral_radius_target=cfg.spectral_radius, alpha=1.0 if lif else cfg.alpha,
                signs=cfg.signs, inhibitory_fraction=cfg.inhibitory_fraction,
                seed=np.random.SeedSequence([int(cfg.seed), 2]))
    return c, groups


def make_controller(cfg: FlySettings, name: str | None = None, wiring: str | None = None,
                    seed: int | None = None) -> Controller:
    """The controller ``name`` (default ``cfg.controller``) with ``wiring``; nulls draw their
    random graph from ``seed``."""
    name = name or cfg.controller
    wiring = wiring or cfg.wiring
    seed = cfg.seed if seed is None else seed
    if name not in CONTROLLERS:
        raise ConfigError(f"unknown controller {name!r}; expected one of {', '.join(CONTROLLERS)}")
    sensing = OdorSensing(gain=cfg.sensing_gain, offset=cfg.sensing_offset,
                          mode=cfg.sensing_mode)
    if name == "constant":
        return ConstantController(cfg.motor_base, sensing)
    if name == "braitenberg":
        motor = MotorMap(gain=cfg.braitenberg_gain, base=cfg.motor_base, wiring=wiring,
                         reference=(cfg.sensing_offset, cfg.sensing_offset))
        return BraitenbergController(sensing, motor)
    lif = cfg.dynamics == "lif" or name == "spiking"
    c, (sl, sr, dl, dr) = _brain_connectome(cfg, NULL_CONTROLLERS.get(name), seed, lif)
    if lif:
        from kairo.reservoir import LIFNetwork

        net = LIFNetwork(c, cfg.lif_params(), engine="numba")
        brain = SpikingBrain(net, sensory=(sl, sr), descending=(dl, dr),
                             interval_ms=1000.0 * cfg.decision_interval,
                             rate_per_drive=cfg.rate_per_drive, filter_ms=cfg.dn_filter_ms,
                             settle_ms=cfg.settle_ms, seed=np.random.SeedSequence(
                                 [int(seed), 4]), label=name)
    else:
        brain = ConnectomeBrain(c, sensory=(sl, sr), descending=(dl, dr),
                                steps=cfg.brain_steps, leak=cfg.leak, bias=cfg.bias,
                                label=name)
    motor = MotorMap(gain=cfg.motor_gain, base=cfg.motor_base, wiring=wiring)
    return BrainController(sensing, brain, motor, fixed_scale=cfg.motor_scale)


# ---------------------------------------------------------------------------- one trial
@dataclass
class TrialResult:
    trajectory: pd.DataFrame            # one row per decision
    metrics: dict
    timing: dict                        # seconds per part


def _wrap(a):
    return (a + np.pi) % (2 * np.pi) - np.pi


def turning_index(traj: pd.DataFrame, settle: float = SETTLE_TIME) -> float:
    """Pearson r between odor contrast (L−R, relative) and the turning rate that follows.

    Positive: the fly turns toward the side that smells more (counter-clockwise, i.e. left,
    when the left side smells more); negative: away; near 0: odor does not steer it.
    """
    t = traj["t"].to_numpy()
    h = traj["heading"].to_numpy()
    c = traj["contrast"].to_numpy()
    if len(t) < 4:
        return float("nan")
    omega = _wrap(np.diff(h)) / np.diff(t)
    keep = t[:-1] >= settle
    x, y = c[:-1][keep], omega[keep]
    if x.size < 3 or np.std(x) == 0 or np.std(y) == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def trial_metrics(traj: pd.DataFrame, odor_xy, cfg: FlySettings) -> dict:
    d = traj["distance"].to_numpy()
    reached = np.flatnonzero(d <= cfg.success_radius)
    bearing = traj["bearing"].to_numpy()
    after = traj["t"].to_numpy() >= SETTLE_TIME
    return {
        "odor_x": float(odor_xy[0]), "odor_y": float(odor_xy[1]),
        "initial_distance": float(np.hypot(*odor_xy)),
        "final_distance": float(d[-1]),
        "min_distance": float(d.min()),
        "success": bool(reached.size),
        "time_to_reach": float(traj["t"].iloc[reached[0]]) if reached.size else float("nan"),
        "turning_index": turning_index(traj),
        "mean_abs_bearing_deg": float(np.degrees(np.abs(bearing[after]).mean()))
        if after.any() else float("nan"),
        "final_abs_bearing_deg": float(np.degrees(abs(bearing[-1]))),
        "path_length": float(np.hypot(np.diff(traj["x"]), np.diff(traj["y"])).sum()),
        "simulated_s": float(traj["t"].iloc[-1]),
        "diverged": False,
    }


_SIGNALS = ("odor_L", "odor_R", "drive_L", "drive_R", "sensory_L", "sensory_R", "dn_L", "dn_R")


def _row(world, odor_xy, signals: dict, action) -> dict:
    pos, heading = world.position, world.heading
    dx, dy = odor_xy - pos
    return {"t": world.time, "x": pos[0], "y": pos[1], "heading": heading,
            "distance": math.hypot(dx, dy),
            "bearing": float(_wrap(math.atan2(dy, dx) - heading)),
            "contrast": odor_contrast(np.array([signals["odor_L"], signals["odor_R"]])),
            **{s: float(signals.get(s, np.nan)) for s in _SIGNALS},
            "action_L": float(action[0]), "action_R": float(action[1])}


def run_trial(cfg: FlySettings, *, controller: Controller | None = None, odor_xy=None,
              seed: int | None = None, recorder=None, on_step=None, before_close=None,
              progress_bar: bool | None = False) -> TrialResult:
    """Run one closed-loop trial; ``recorder`` (a :class:`~kairo.fly.VideoRecorder`)
    receives a camera frame every ``recorder.frame_interval`` simulated seconds,
    ``on_step(world)`` is called after every physics step and ``before_close(world)`` once at
    the end, while the physics still exists (the live viewer uses both: its render thread
    reads the model and must stop before MuJoCo frees it)."""
    from kairo._progress import progress
    from kairo.fly._body import FlyWorld, PhysicsDiverged

    odor_xy = np.array([cfg.odor_x, cfg.odor_y] if odor_xy is None else odor_xy, dtype=float)
    seed = cfg.seed if seed is None else int(seed)
    # build: setup; controller: sensing + brain + motor map; physics: flygym's step (its CPG and
    # corrections included); render: MuJoCo's camera; video: kairo's panel and mp4 encoding
    timing = dict.fromkeys(("build", "controller", "physics", "render", "video",
                            "bookkeeping"), 0.0)
    t0 = time.perf_counter()
    controller = controller or make_controller(cfg, seed=seed)
    world = FlyWorld(odor_xy, arena_size=cfg.arena_size, timestep=cfg.timestep, seed=seed,
                     camera=recorder is not None,
                     frame_size=(recorder.size, recorder.size) if recorder else (480, 480))
    timing["build"] = time.perf_counter() - t0
    rows = []
    n_dec = int(round(cfg.duration / cfg.decision_interval))
    k = cfg.physics_per_decision
    frame_dt = recorder.frame_interval if recorder is not None else 0.0
    next_frame = 0.0
    diverged = None
    try:
        t = time.perf_counter()
        controller.reset()          # one-off setup (the brain settles): counted as build
        world.reset()
        timing["build"] += time.perf_counter() - t
        for _ in progress(range(n_dec), total=n_dec, desc=controller.name, enabled=progress_bar):
            t = time.perf_counter()
            odor = world.odor
            action, signals = controller(odor)
            timing["controller"] += time.perf_counter() - t
            t = time.perf_counter()
            row = _row(world, odor_xy, signals, action)
            rows.append(row)
            timing["bookkeeping"] += time.perf_counter() - t
            if row["distance"] <= cfg.success_radius:
                break
            try:
                for _ in range(k):
                    t = time.perf_counter()
                    world.step(action)
                    timing["physics"] += time.perf_counter() - t
                    if on_step is not None:
                        on_step(world)
                    if recorder is not None and world.time >= next_frame:
                        t = time.perf_counter()
                        frame = world.render()
                        t1 = time.perf_counter()
                        recorder.add(frame, world.time, rows)
                        next_frame += frame_dt
                        timing["render"] += t1 - t
                        timing["video"] += time.perf_counter() - t1
            except PhysicsDiverged as exc:
                diverged = str(exc)
                break
        else:   # ran to the end: one more row with where the last decision took the fly
            lr = controller.sensing.intensities(world.odor)
            rows.append(_row(world, odor_xy, {"odor_L": lr[0], "odor_R": lr[1]},
                             np.full(2, np.nan)))
    finally:
        try:
            if before_close is not None:
                before_close(world)
        finally:
            world.close()
    traj = pd.DataFrame(rows)
    metrics = trial_metrics(traj, odor_xy, cfg)
    metrics["diverged"] = diverged is not None
    loop = sum(v for key, v in timing.items() if key != "build")
    metrics["wall_s"] = loop
    metrics["real_time_factor"] = metrics["simulated_s"] / loop if loop else float("nan")
    return TrialResult(traj, metrics, timing)


# ---------------------------------------------------------------------------- many trials
def trial_plan(cfg: TrialsConfig) -> pd.DataFrame:
    """Odor positions and physics seeds, one per trial index, shared by every controller.

    Trials come in mirror pairs: trial 2k draws a bearing, trial 2k+1 uses its negative (with
    its own physics seed), so a controller that simply always turns one way cannot look like
    odor-seeking because the draws happened to put more sources on that side.
    """
    rows = []
    for i in range(cfg.n):
        pair = np.random.default_rng(np.random.SeedSequence([int(cfg.seed), 7, i // 2]))
        rng = np.random.default_rng(np.random.SeedSequence([int(cfg.seed), 8, i]))
        angle = pair.uniform(0, cfg.odor_angle) * (1 if i % 2 == 0 else -1)
        a = math.radians(angle)
        rows.append({"trial": i, "odor_angle_deg": angle,
                     "odor_x": cfg.odor_distance * math.cos(a),
                     "odor_y": cfg.odor_distance * math.sin(a),
                     "seed": int(rng.integers(2**31 - 1))})
    return pd.DataFrame(rows)


def _jobs(cfg: TrialsConfig) -> list[dict]:
    plan = trial_plan(cfg)
    jobs = []
    for name in cfg.controllers:
        for wiring in (cfg.wirings if name != "constant" else ("-",)):
            for r in plan.itertuples():
                jobs.append({"controller": name, "wiring": wiring, "trial": r.trial,
                             "odor_xy": (r.odor_x, r.odor_y), "seed": r.seed})
    return jobs


def _trial_job(task: tuple[TrialsConfig, dict]) -> dict:
    """One trial in a worker process (top level so it pickles)."""
    cfg, job = task
    wiring = job["wiring"] if job["wiring"] != "-" else cfg.wiring
    ctl = make_controller(cfg, job["controller"], wiring, seed=job["seed"])
    res = run_trial(cfg, controller=ctl, odor_xy=job["odor_xy"], seed=job["seed"])
    return {"job": job, "metrics": res.metrics, "timing": res.timing,
            "trajectory": res.trajectory[["t", "x", "y", "heading", "distance", "contrast",
                                          "action_L", "action_R"]].to_dict("list")}


def run_trials(cfg: TrialsConfig, progress_bar: bool | None = None) -> dict:
    """All trials, in parallel (``cfg.workers`` on ``cfg.executor``, see
    :func:`kairo._jobs.map_jobs`); returns per-trial metrics, trajectories and timing, and
    the executor and worker count actually used."""
    jobs = _jobs(cfg)
    # warm the data cache in this process so workers fail fast on a bad connectome or group
    if any(j["controller"] not in ("constant", "braitenberg") for j in jobs):
        _brain_connectome(cfg, None, cfg.seed)
    from kairo.fly._body import require_flygym

    require_flygym()
    executor, workers = resolve_executor(cfg.executor, cfg.workers, len(jobs))
    t0 = time.perf_counter()
    results = map_jobs(_trial_job, [(cfg, j) for j in jobs], workers=workers,
                       executor=executor, desc="trials", progress_bar=progress_bar)
    wall = time.perf_counter() - t0
    results.sort(key=lambda r: (cfg.controllers.index(r["job"]["controller"]),
                                r["job"]["wiring"], r["job"]["trial"]))
    rows, trajs = [], []
    for r in results:
        j = r["job"]
        rows.append({"controller": j["controller"], "wiring": j["wiring"], "trial": j["trial"],
                     "seed": j["seed"], **r["metrics"],
                     **{f"time_{k}": v for k, v in r["timing"].items()}})
        tr = pd.DataFrame(r["trajectory"])
        tr.insert(0, "trial", j["trial"])
        tr.insert(0, "wiring", j["wiring"])
        tr.insert(0, "controller", j["controller"])
        trajs.append(tr)
    return {"trials": pd.DataFrame(rows), "trajectories": pd.concat(trajs, ignore_index=True),
            "executor": executor, "workers": workers, "wall_s": wall,
            "trials_per_hour": len(jobs) / wall * 3600}


def summarize_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """Per controller and wiring: success rate, distances, time to reach and turning index,
    with a one-sample Wilcoxon test of the turning index against 0 and a paired test of the
    final distance against the constant-drive baseline (same odor positions and seeds)."""
    rows = []
    const = trials[trials.controller == "constant"].set_index("trial")["final_distance"]
    for (name, wiring), g in trials.groupby(["controller", "wiring"], sort=False):
        ti = g["turning_index"].dropna()
        row = {"controller": name, "wiring": wiring, "n": len(g),
               "success_rate": g["success"].mean(),
               "final_distance_median": g["final_distance"].median(),
               "final_distance_mean": g["final_distance"].mean(),
               "time_to_reach_median": g["time_to_reach"].median(),
               "turning_index_mean": ti.mean(), "turning_index_sd": ti.std(ddof=1),
               "turning_index_p": wilcoxon_p(ti.to_numpy()),
               "final_bearing_deg_median": g["final_abs_bearing_deg"].median(),
               "diverged": int(g["diverged"].sum())}
        if name != "constant" and len(const):
            paired = g.set_index("trial")["final_distance"].align(const, join="inner")
            row["vs_constant_distance_diff"] = float((paired[0] - paired[1]).median())
            row["vs_constant_p"] = wilcoxon_p((paired[0] - paired[1]).to_numpy())
        rows.append(row)
    return pd.DataFrame(rows)


def check_output_path(path: str | None, what: str, *, overwrite: bool = False) -> Path | None:
    """An output file's folder must exist (kairo does not invent folders for files), it must
    not be a folder, and an existing file is replaced only with ``overwrite``."""
    if not path:
        return None
    p = Path(path)
    if not p.parent.is_dir():
        raise KairoError(f"{what} {p}: folder {p.parent} does not exist")
    if p.is_dir():
        raise KairoError(f"{what} {p} is a folder; give a file name")
    if p.exists() and not overwrite:
        raise KairoError(f"{what} {p} already exists; choose another name or pass --overwrite")
    return p
