"""``kairo sweep SPEC``: a grid or an Optuna search over any command's options."""

from __future__ import annotations

from kairo._command import Command
from kairo.sweep._config import SweepConfig

__all__ = ["COMMANDS", "sweep_summary"]


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def sweep_summary(result) -> str:
    """Counts, failures and the best configurations of a finished sweep, as text."""
    spec = result.spec
    counts = {s: sum(p["status"] == s for p in result.points)
              for s in ("done", "skipped", "failed")}
    lines = [f"sweep {result.id} ({spec.kind}, {spec.command}): {len(result.points)} points — "
             f"{counts['done']} run now, {counts['skipped']} done earlier, "
             f"{counts['failed']} failed"]
    for p in result.failed[:5]:
        lines.append(f"  failed {p['key']}: {p['error']}")
    best = result.best()
    if spec.metric and best:
        lines.append(f"best by {spec.metric} ({spec.goal}, mean over seeds):")
        for b in best:
            vals = ", ".join(f"{k}={_fmt(v)}" for k, v in b["values"].items())
            lines.append(f"  {spec.metric} {_fmt(b['mean'])} (n={b['n']}): {vals}  "
                         f"runs {','.join(map(str, b['runs']))}")
    elif spec.metric:
        lines.append(f"no point reported the metric {spec.metric!r} (kairo runs show ID lists "
                     f"a run's metrics)")
    lines.append(f"points: {result.out / 'points.csv'}; kairo runs list --sweep {result.id}")
    return "\n".join(lines)


def _run(cfg: SweepConfig, rd) -> str:
    from kairo.sweep import load_spec, run_sweep

    spec = load_spec(cfg.spec)
    result = run_sweep(spec, out=cfg.out or None, workers=cfg.workers, executor=cfg.executor,
                       address=cfg.address, fail_fast=cfg.fail_fast)
    return sweep_summary(result)


COMMANDS = [
    Command("sweep", SweepConfig, _run, "run a grid or Optuna search over a command's options",
            description="every point is a normal run recorded in the results store with the "
                        "sweep's id; local processes or Ray; the same spec again resumes it",
            folder=False, record=False),
]
