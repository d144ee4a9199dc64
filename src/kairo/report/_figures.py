"""The comparison figures of the report (Matplotlib, Agg canvases of their own: no pyplot, so
no global backend is chosen)."""

from __future__ import annotations

import math

__all__ = ["new_figure", "save", "compare_figure", "logic_figure", "tsc_figure",
           "sweep_figure"]


def new_figure(width: float = 7.0, height: float = 3.6):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def save(fig, path) -> None:
    fig.savefig(path, dpi=100, bbox_inches="tight")


def compare_figure(groups: list[dict]):
    """Real wiring against each null model, one panel per metric. ``groups``: ``{label,
    metric, real, nulls: {name: (mean, sd)}}``, one per ``reservoir compare`` run."""
    metrics = list(dict.fromkeys(g["metric"] for g in groups))
    fig = new_figure(max(5.0, 1.4 * len(groups) + 3), 3.4 * len(metrics))
    nulls = list(dict.fromkeys(n for g in groups for n in g["nulls"]))
    bars = ["real", *nulls]
    width = 0.8 / len(bars)
    for i, metric in enumerate(metrics):
        ax = fig.add_subplot(len(metrics), 1, i + 1)
        mine = [g for g in groups if g["metric"] == metric]
        for j, name in enumerate(bars):
            xs, ys, es = [], [], []
            for k, g in enumerate(mine):
                if name == "real":
                    y, e = g["real"], 0.0
                elif name in g["nulls"]:
                    y, e = g["nulls"][name]
                else:
                    continue
                xs.append(k + (j - (len(bars) - 1) / 2) * width)
                ys.append(y)
                es.append(0.0 if e is None or not math.isfinite(e) else e)
            ax.bar(xs, ys, width, yerr=es, capsize=2, label=name,
                   color="black" if name == "real" else None)
        ax.set_xticks(range(len(mine)), [g["label"] for g in mine], fontsize=8)
        ax.set_ylabel(metric)
        ax.set_title(f"{metric}: real wiring vs null models (mean ± sd of replicates)",
                     fontsize=9)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    return fig


def logic_figure(points: list[dict]):
    """Test accuracy against the circuit's gate count, one point per trained circuit:
    ``{label, gates, accuracy}``."""
    fig = new_figure(6.0, 3.8)
    ax = fig.add_subplot()
    ax.scatter([p["gates"] for p in points], [p["accuracy"] for p in points], zorder=3)
    for p in points:
        ax.annotate(p["label"], (p["gates"], p["accuracy"]), fontsize=7,
                    xytext=(3, 3), textcoords="offset points")
    if len({p["gates"] for p in points}) > 1 and min(p["gates"] for p in points) > 0 and \
            max(p["gates"] for p in points) / min(p["gates"] for p in points) > 20:
        ax.set_xscale("log")
    ax.set_xlabel("gates after simplification")
    ax.set_ylabel("test accuracy (circuit)")
    ax.set_title("logic circuits: accuracy vs size", fontsize=9)
    ax.grid(alpha=0.3)
    return fig


def tsc_figure(datasets: list[str], runs: dict, published: dict):
    """Accuracy per dataset: each kairo run (dots) and their mean (bar), next to published
    classifiers' accuracy on the same split (markers). ``runs``: dataset → accuracies;
    ``published``: classifier → {dataset: accuracy}."""
    fig = new_figure(max(5.0, 1.3 * len(datasets) + 3), 3.8)
    ax = fig.add_subplot()
    xs = range(len(datasets))
    means = [sum(runs[d]) / len(runs[d]) for d in datasets]
    # kairo in grey and black, so the published classifiers keep the colour cycle
    ax.bar(xs, means, 0.4, color="0.8", label="kairo (mean of runs)")
    for x, d in zip(xs, datasets):
        ax.scatter([x] * len(runs[d]), runs[d], color="black", s=14, zorder=3)
    markers = "osD^v<>ph*"
    for i, (name, accs) in enumerate(published.items()):
        pts = [(x, accs[d]) for x, d in zip(xs, datasets)
               if accs.get(d) is not None and math.isfinite(accs[d])]
        if pts:
            # each classifier a little to the right of kairo's bar, in its own column
            ax.scatter([p[0] + 0.3 + 0.07 * i for p in pts], [p[1] for p in pts],
                       marker=markers[i % 10],
                       s=22, label=name, zorder=3)
    ax.set_xticks(list(xs), datasets, fontsize=8)
    ax.set_ylabel("test accuracy")
    ax.set_title("time-series classification: kairo next to published results", fontsize=9)
    ax.set_xlim(-0.6, len(datasets) - 0.4 + 0.07 * len(published))
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(axis="y", alpha=0.3)
    return fig


def sweep_figure(param: str, xs: list, ys: list, metric: str, *, log: bool = False):
    """The sweep's metric against one swept parameter: every run (dots) and the mean at each
    value (line). Text values are placed in the order they first appear."""
    fig = new_figure(5.5, 3.4)
    ax = fig.add_subplot()
    numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in xs)
    if numeric:
        pos = list(xs)
    else:
        order = list(dict.fromkeys(map(str, xs)))
        pos = [order.index(str(x)) for x in xs]
        ax.set_xticks(range(len(order)), order, fontsize=8)
    ax.scatter(pos, ys, s=14, alpha=0.6, label="runs")
    by: dict = {}
    for p, y in zip(pos, ys):
        by.setdefault(p, []).append(y)
    keys = sorted(by)
    ax.plot(keys, [sum(by[k]) / len(by[k]) for k in keys], "-o", ms=3, color="tab:red",
            label="mean")
    if log and numeric and min(pos) > 0:
        ax.set_xscale("log")
    ax.set_xlabel(param)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} vs {param}", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return fig
