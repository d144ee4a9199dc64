"""A sweep's spec: which command, its base config, the grid or the search, the repeats.

A spec is checked whole before anything runs: an unknown command or field, an empty grid, a
value of the wrong type (every grid point's config is built up front) is refused with the
field named.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path

from kairo._errors import ConfigError

__all__ = ["SweepSpec", "SearchSpace", "Point", "load_spec", "spec_from_dict", "grid_points",
           "SAMPLERS"]

SAMPLERS = ("tpe", "random", "qmc")
_KEYS = {"name", "command", "base", "grid", "search", "seeds", "metric", "goal"}
_SEARCH_KEYS = {"space", "trials", "sampler", "seed"}


@dataclass(frozen=True)
class SearchSpace:
    """One searched field: a number range (``log`` scale, ``step``) or a list of choices."""

    name: str
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    choices: tuple | None = None
    integer: bool = False


@dataclass(frozen=True)
class SweepSpec:
    """A sweep over a registered command (see :func:`load_spec` for the file format)."""

    name: str
    command: str
    base: dict
    grid: dict | None = None               # field -> tuple of values
    space: tuple[SearchSpace, ...] = ()
    trials: int = 0
    sampler: str = "tpe"
    sampler_seed: int = 0
    seeds: tuple[int, ...] | None = None   # None: the command's config has no seed, or no repeats
    metric: str = ""
    goal: str = "max"

    @property
    def kind(self) -> str:
        return "grid" if self.grid is not None else "search"

    def as_dict(self) -> dict:
        """The spec as data (what the store keeps and the sweep id is hashed from)."""
        d = {"name": self.name, "command": self.command, "base": self.base,
             "seeds": list(self.seeds) if self.seeds is not None else None,
             "metric": self.metric, "goal": self.goal}
        if self.grid is not None:
            d["grid"] = {k: list(v) for k, v in self.grid.items()}
        else:
            d["search"] = {"space": {s.name: _space_dict(s) for s in self.space},
                           "trials": self.trials, "sampler": self.sampler,
                           "seed": self.sampler_seed}
        return d

    @property
    def id(self) -> str:
        """Stable id: the same spec (whatever its file is called) is the same sweep, so
        running it again resumes it."""
        d = self.as_dict()
        d.pop("name")
        blob = json.dumps(d, sort_keys=True, default=str).encode()
        return f"{self.name}-{hashlib.sha256(blob).hexdigest()[:8]}"


def _space_dict(s: SearchSpace) -> dict:
    if s.choices is not None:
        return {"choices": list(s.choices)}
    d = {"low": s.low, "high": s.high}
    if s.log:
        d["log"] = True
    if s.step is not None:
        d["step"] = s.step
    return d


@dataclass(frozen=True)
class Point:
    """One run of a sweep: its key (folder name, stable across resumes), the swept values
    and the seed, and the full config values handed to the command."""

    key: str
    values: dict
    seed: int | None
    config: dict


def load_spec(path) -> SweepSpec:
    """Read a sweep spec (YAML, TOML or JSON)::

        command: reservoir run          # a registered command with a results folder
        base: {task: narma10, n_train: 1000}   # its config (flags' names, _ or -)
        grid:                           # a value list, or a range, per field
          alpha: [0.5, 1.0, 1.5]
          spectral_radius: {range: [0.5, 1.5, 0.25]}   # start, stop (inclusive), step
          leak: {linspace: [0.1, 1.0, 4]}             # also logspace: [lo, hi, n] (log10)
        # or, instead of grid, an Optuna search:
        search:
          space: {alpha: {low: 0.1, high: 2.0, log: true}, norm: {choices: [row, spectral]}}
          trials: 20
          sampler: tpe                  # tpe, random, qmc
          seed: 0
        seeds: 3                        # repeats: seeds 0,1,2 (or a list)
        metric: nrmse                   # a metric of the command's runs (kairo runs show)
        goal: min                       # min or max
    """
    from kairo._config import load_config_file

    path = Path(path)
    data = load_config_file(path)      # keys with - become _
    data.setdefault("name", path.stem)
    return spec_from_dict(data, source=str(path))


def spec_from_dict(data: dict, *, source: str = "spec") -> SweepSpec:
    """Check a spec given as data; errors name ``source`` and the field."""
    from kairo._app import get_command, make_config

    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {unknown}; a sweep spec has "
                          f"{', '.join(sorted(_KEYS))}")
    if not data.get("command"):
        raise ConfigError(f"{source}: command: required (a registered command, e.g. "
                          f"'reservoir run')")
    try:
        cmd = get_command(str(data["command"]))
    except ConfigError as exc:
        raise ConfigError(f"{source}: command: {exc}") from None
    if not cmd.folder or not cmd.record:
        raise ConfigError(f"{source}: command: {cmd.name!r} writes no results folder and "
                          f"cannot be swept")
    if cmd.name == "demo":
        raise ConfigError(f"{source}: command: the demo is not swept")
    fields = {f.name: f for f in dataclasses.fields(cmd.config)}
    base = data.get("base") or {}
    if not isinstance(base, dict):
        raise ConfigError(f"{source}: base: expected a mapping of {cmd.name} options, got "
                          f"{type(base).__name__}")
    base = {str(k).replace("-", "_"): v for k, v in base.items()}
    make_config(cmd, base, source=f"{source}: base")      # unknown fields, bad values

    has_grid, has_search = data.get("grid") is not None, data.get("search") is not None
    if has_grid == has_search:
        raise ConfigError(f"{source}: give either grid or search (got "
                          f"{'both' if has_grid else 'neither'})")
    seeds = _seeds(data.get("seeds"), fields, source)
    goal = str(data.get("goal", "max")).lower()
    goal = {"maximize": "max", "minimize": "min"}.get(goal, goal)
    if goal not in ("max", "min"):
        raise ConfigError(f"{source}: goal: expected max or min, got {data.get('goal')!r}")
    metric = str(data.get("metric") or "")
    common = dict(name=str(data["name"]) if data.get("name") else "sweep", command=cmd.name,
                  base=base, seeds=seeds, metric=metric, goal=goal)
    if not common["name"].replace("-", "").replace("_", "").isalnum():
        raise ConfigError(f"{source}: name: letters, digits, - and _ only, got "
                          f"{common['name']!r}")
    if has_grid:
        grid = _grid(data["grid"], cmd, fields, source)
        spec = SweepSpec(grid=grid, **common)
        for p in grid_points(spec):       # every point's config, built before anything runs
            make_config(cmd, p.config, source=f"{source}: grid point {p.key}")
        return spec
    search = data["search"]
    if not isinstance(search, dict):
        raise ConfigError(f"{source}: search: expected a mapping (space, trials, sampler)")
    unknown = sorted(set(search) - _SEARCH_KEYS)
    if unknown:
        raise ConfigError(f"{source}: search: unknown key(s) {unknown}; expected "
                          f"{', '.join(sorted(_SEARCH_KEYS))}")
    if not metric:
        raise ConfigError(f"{source}: metric: a search needs the metric it optimises")
    trials = search.get("trials")
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ConfigError(f"{source}: search.trials: expected a positive integer, got "
                          f"{trials!r}")
    sampler = str(search.get("sampler", "tpe")).lower()
    if sampler not in SAMPLERS:
        raise ConfigError(f"{source}: search.sampler: expected one of {', '.join(SAMPLERS)}, "
                          f"got {sampler!r}")
    sseed = search.get("seed", 0)
    if isinstance(sseed, bool) or not isinstance(sseed, int):
        raise ConfigError(f"{source}: search.seed: expected an integer, got {sseed!r}")
    space = _space(search.get("space"), cmd, fields, source)
    spec = SweepSpec(space=space, trials=trials, sampler=sampler, sampler_seed=sseed,
                     **common)
    for s in space:                         # both ends (or every choice) must be valid
        for v in (s.choices if s.choices is not None else (s.low, s.high)):
            make_config(cmd, {**base, s.name: v}, source=f"{source}: search.space.{s.name}")
    return spec


def _seeds(value, fields, source) -> tuple[int, ...] | None:
    if value is None:
        return None
    if "seed" not in fields:
        raise ConfigError(f"{source}: seeds: this command's config has no seed field")
    if isinstance(value, bool):
        raise ConfigError(f"{source}: seeds: expected a count or a list of integers")
    if isinstance(value, int):
        if value < 1:
            raise ConfigError(f"{source}: seeds: expected a count ≥ 1, got {value}")
        return tuple(range(value))
    if isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool)
                                                 and v >= 0 for v in value):
        if len(set(value)) != len(value):
            raise ConfigError(f"{source}: seeds: {value} repeats a seed")
        return tuple(value)
    raise ConfigError(f"{source}: seeds: expected a count or a non-empty list of integers "
                      f"≥ 0, got {value!r}")


def _field(name, cmd, fields, where) -> str:
    key = str(name).replace("-", "_")
    if key not in fields:
        raise ConfigError(f"{where}: {name!r} is not an option of {cmd.name}; options: "
                          f"{', '.join(fields)}")
    if key == "seed":
        raise ConfigError(f"{where}: sweep seeds with the spec's seeds key, not as a field")
    return key


def _grid(grid, cmd, fields, source) -> dict:
    if not isinstance(grid, dict) or not grid:
        raise ConfigError(f"{source}: grid: expected a non-empty mapping of option names to "
                          f"value lists")
    out = {}
    for name, values in grid.items():
        where = f"{source}: grid.{name}"
        key = _field(name, cmd, fields, f"{source}: grid")
        if isinstance(values, dict):
            values = _expand(values, where)
        if not isinstance(values, list):
            raise ConfigError(f"{where}: expected a list of values or a range/linspace/"
                              f"logspace mapping, got {values!r}")
        if not values:
            raise ConfigError(f"{where}: empty grid (no values)")
        out[key] = tuple(tuple(v) if isinstance(v, list) else v for v in values)
    return out


def _expand(d: dict, where: str) -> list:
    if len(d) != 1 or next(iter(d)) not in ("range", "linspace", "logspace"):
        raise ConfigError(f"{where}: expected {{range: [start, stop, step]}}, {{linspace: "
                          f"[lo, hi, n]}} or {{logspace: [lo, hi, n]}}, got {d!r}")
    kind, args = next(iter(d.items()))
    if (not isinstance(args, list) or len(args) != 3 or
            not all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in args)):
        raise ConfigError(f"{where}.{kind}: expected three numbers, got {args!r}")
    a, b, c = args
    if kind == "range":
        if c <= 0 or b < a:
            raise ConfigError(f"{where}.range: expected start ≤ stop and step > 0, got {args}")
        n = int(math.floor((b - a) / c + 1e-9)) + 1
        vals = [a + i * c for i in range(n)]
        if all(isinstance(x, int) for x in args):
            return [int(v) for v in vals]
        return [round(v, 12) for v in vals]
    if not isinstance(c, int) or c < 1:
        raise ConfigError(f"{where}.{kind}: the count must be an integer ≥ 1, got {c!r}")
    step = (b - a) / (c - 1) if c > 1 else 0.0
    vals = [a + i * step for i in range(c)]
    return [round(10 ** v if kind == "logspace" else v, 12) for v in vals]


def _space(space, cmd, fields, source) -> tuple[SearchSpace, ...]:
    import typing

    from kairo._config import field_kind

    if not isinstance(space, dict) or not space:
        raise ConfigError(f"{source}: search.space: expected a non-empty mapping of option "
                          f"names to {{low, high}} or {{choices}}")
    out = []
    for name, d in space.items():
        where = f"{source}: search.space.{name}"
        key = _field(name, cmd, fields, f"{source}: search.space")
        if not isinstance(d, dict):
            raise ConfigError(f"{where}: expected {{low, high[, log, step]}} or {{choices: "
                              f"[...]}}, got {d!r}")
        base, is_tuple = field_kind(cmd.config, key)
        if "choices" in d:
            if set(d) != {"choices"} or not isinstance(d["choices"], list) or not d["choices"]:
                raise ConfigError(f"{where}: choices must be a non-empty list on its own")
            out.append(SearchSpace(key, choices=tuple(d["choices"])))
            continue
        if set(d) - {"low", "high", "log", "step"} or "low" not in d or "high" not in d:
            raise ConfigError(f"{where}: expected low and high (and optionally log, step), "
                              f"got {sorted(d)}")
        if is_tuple or base not in (int, float) or base is typing.Any:
            raise ConfigError(f"{where}: {key} is not a number; search it with choices")
        lo, hi = d["low"], d["high"]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (lo, hi)) \
                or lo >= hi:
            raise ConfigError(f"{where}: expected numbers low < high, got {lo!r}, {hi!r}")
        log = bool(d.get("log", False))
        if log and lo <= 0:
            raise ConfigError(f"{where}: a log scale needs low > 0, got {lo}")
        out.append(SearchSpace(key, low=lo, high=hi, log=log, step=d.get("step"),
                               integer=base is int))
    return tuple(out)


def _label(v) -> str:
    s = ",".join(map(str, v)) if isinstance(v, tuple) else str(v)
    return "".join(c if c.isalnum() or c in ".-_," else "_" for c in s)[:24]


def grid_points(spec: SweepSpec) -> list[Point]:
    """Every point of a grid sweep: the product of the grid's values, times the seeds."""
    names = list(spec.grid)
    points = []
    seeds = spec.seeds if spec.seeds is not None else (None,)
    for i, combo in enumerate(itertools.product(*(spec.grid[n] for n in names))):
        values = dict(zip(names, combo))
        for seed in seeds:
            key = f"p{i:03d}-" + "-".join(f"{n}={_label(v)}" for n, v in values.items())
            if seed is not None:
                key += f"-seed={seed}"
            cfg = {**spec.base, **values, **({"seed": seed} if seed is not None else {})}
            points.append(Point(key, values, seed, cfg))
    return points
