"""``kairo tsc …``: list, train, evaluate, predict, compare pooling heads, benchmark (the
figures, maps and encodings, in :mod:`kairo.tsc._maps`).

Each command's config (``kairo.tsc._config``) is flat: the data options plus the
fields of :class:`ModelConfig` and :class:`TrainConfig` it needs, so a flag, a key in
``--config`` and a key in a results folder's ``config.yaml`` are the same name. Importing this
module does not import torch (the run functions do).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from pathlib import Path

import numpy as np

from kairo._command import Command
from kairo._errors import DataError, KairoError
from kairo.tsc._config import (BenchmarkConfig, CompareConfig, EncodingsConfig,
                                     EvaluateConfig, ListConfig, MapsConfig, PredictConfig,
                                     TABLE_POSITIONALS, TscTrainConfig, model_config)
from kairo.tsc._inputs import (_dataset_warning, _length_warning, _model_classes,
                               _resolve_dataset, _scored_data, inputs, load_data, load_file)
from kairo.tsc._maps import run_encodings, run_maps

__all__ = ["COMMANDS", "run_train", "run_evaluate", "run_predict"]

log = logging.getLogger(__name__)
# what a trained model's meta says "auto" chose, recorded under run.json's "resolved"
RESOLVED = ("znorm", "sam", "mixup", "cutmix", "time_warp", "smoothness", "head_norm",
            "weight_init", "layout", "stem_blocks", "stem_dilations", "stem_pool")


# ---------------------------------------------------------------------------- data
# ---------------------------------------------------------------------------- train & evaluate
def run_list(cfg: ListConfig, rd) -> str:
    from kairo.tsc import list_datasets

    return "\n".join(list_datasets())


def run_train(cfg: TscTrainConfig, rd) -> str:
    """Fit on the training split (early stopping on a stratified validation part), then
    score the test split; writes the model, metrics, tables and figures into ``rd``. A killed
    run resumes from ``rd.checkpoint`` (an ensemble's members from the files
    `ensemble_checkpoints` derives from it)."""
    from kairo.tsc import _inference
    from kairo.tsc._estimator import estimator_for

    model_cfg = model_config(cfg)
    train, test = _one_length(load_data(cfg, "train"), load_data(cfg, "test"), cfg)
    if train.n_classes < 2:
        raise DataError(f"{cfg.train_file or cfg.dataset}: the training series hold one class "
                        f"({train.classes[0]!r}); a classifier needs at least two")
    _check_pair(train, test)
    name = train.name
    if cfg.resample:
        from kairo.tsc._resample import resample_split

        train, test = resample_split(train, test, cfg.resample)
    split = "test"
    if cfg.cv_folds:
        # one fold of cross-validation inside the training split: the test split is not read
        from kairo.tsc._grid import cv_folds

        fit_idx, held_out = cv_folds(train.y, cfg.cv_folds, cfg.seed)[cfg.cv_fold]
        train, test, split = train.subset(fit_idx), train.subset(held_out), "cv"
    # the command is a layer over the estimator: the same configs, the same trainer
    est = estimator_for(cfg)
    if cfg.ensemble > 1:
        return _run_ensemble(cfg, rd, est, model_cfg, train, test, name, split)
    res = est._fit_data(train, checkpoint=rd.checkpoint)
    model = res["model"]
    for key in RESOLVED:
        if key in res["meta"]:
            rd.resolve(key if key != "layout" else "resnet_layout", res["meta"][key])
    meta = {"dataset": name if not cfg.train_file else cfg.train_file,   # canonical
            "resample": cfg.resample, "classes": list(train.classes),
            **{k: v for k, v in res["meta"].items() if k.startswith("znorm")},
            "n_steps": train.n_steps, "best_epoch": res["best_epoch"]}
    if cfg.model_file:
        _inference.save_classifier(rd.path / "model.pt", model, model_cfg, meta)
        rd.add("model.pt")
    report = _inference.evaluate(model, test)          # test labels matched to train's by name
    _write_report(rd, report, train.classes, split)
    import pandas as pd

    hist = pd.DataFrame(res["history"])
    rd.add("history.csv", hist)
    rd.add("curves.png", _curves_figure(hist))
    summary = {"dataset": meta["dataset"], "encoder": model_cfg.encoder, "pool": model_cfg.pool,
               f"{split}_accuracy": report["accuracy"], f"{split}_macro_f1": report["f1_macro"],
               "best_epoch": res["best_epoch"], "epochs_run": len(res["history"]),
               "train_seconds": res["seconds"], "samples_per_s": res["samples_per_s"],
               "n_params": int(sum(p.numel() for p in model.parameters()))}
    rd.add("summary.json", summary)
    return (f"{summary['dataset']}: {model_cfg.encoder} + {model_cfg.pool} pooling — "
            f"{_split_text(cfg)} accuracy {report['accuracy']:.2%}, macro F1 "
            f"{report['f1_macro']:.3f} "
            f"({len(test)} series; best epoch {res['best_epoch']}, "
            f"{res['seconds']:.1f} s"
            + (f", {res['samples_per_s']:.0f} samples/s)" if res["samples_per_s"] else ")"))


def _run_ensemble(cfg: TscTrainConfig, rd, est, model_cfg, train, test, name: str,
                  split: str) -> str:
    """``tsc train --ensemble N``: the members trained through the job runner, each
    checkpointing to its own file; one model.pt (the TSEnsemble), the ensemble's test metrics
    with each member's seed and test accuracy beside them."""
    import pandas as pd

    from kairo.tsc import _inference, _train

    n = cfg.ensemble
    extra = _train.ensemble_checkpoints(rd.checkpoint, n)[1:]   # member 0: rd.checkpoint
    for p in extra:
        rd.discard_on_success(p)
    with _kept_checkpoints(extra):
        res = est._fit_data(train, checkpoint=rd.checkpoint, executor=cfg.executor,
                            workers=cfg.workers)
        model, members = res["model"], res["members"]
        for key in RESOLVED:
            if key in model.fit_meta:
                rd.resolve(key if key != "layout" else "resnet_layout", model.fit_meta[key])
        rd.resolve("seeds", res["seeds"])
        rd.resolve("executor", res["executor"])
        rd.resolve("workers", res["workers"])
        if not cfg.threads:
            rd.resolve("threads", members[0]["meta"]["train_config"]["threads"])
        meta = {"dataset": name if not cfg.train_file else cfg.train_file,
                "resample": cfg.resample, "classes": list(train.classes),
                "n_steps": train.n_steps}
        if cfg.model_file:
            _inference.save_classifier(rd.path / "model.pt", model, model_cfg, meta)
            rd.add("model.pt")
        rows = []
        for i, m in enumerate(members):
            rep = _inference.evaluate(m["model"], test)     # the member alone, its own scaling
            rows.append({"member": i, "seed": m["seed"], f"{split}_accuracy": rep["accuracy"],
                         f"{split}_macro_f1": rep["f1_macro"], "best_epoch": m["best_epoch"],
                         "epochs_run": len(m["history"]), "train_seconds": m["seconds"]})
        report = _inference.evaluate(model, test)
        _write_report(rd, report, train.classes, split, extra={"members": rows})
        hist = pd.concat([pd.DataFrame(m["history"]).assign(member=i, seed=m["seed"])
                          for i, m in enumerate(members)], ignore_index=True)
        hist = hist[["member", "seed", *[c for c in hist if c not in ("member", "seed")]]]
        rd.add("history.csv", hist)
        rd.add("curves.png", _curves_figure(hist))
        summary = {"dataset": meta["dataset"], "encoder": model_cfg.encoder,
                   "pool": model_cfg.pool, "ensemble": n, "seeds": res["seeds"],
                   f"{split}_accuracy": report["accuracy"],
                   f"{split}_macro_f1": report["f1_macro"], "members": rows,
                   "train_seconds": res["seconds"],
                   "n_params": int(sum(p.numel() for p in model.parameters()))}
        rd.add("summary.json", summary)
    accs = ", ".join(f"{r[split + '_accuracy']:.2%}" for r in rows)
    return (f"{summary['dataset']}: {model_cfg.encoder} + {model_cfg.pool} pooling, ensemble "
            f"of {n} (seeds {res['seeds'][0]}…{res['seeds'][-1]}) — {_split_text(cfg)} "
            f"accuracy {report['accuracy']:.2%} (members {accs}), macro F1 {report['f1_macro']:.3f} "
            f"({len(test)} series; {res['seconds']:.1f} s)")


def _split_text(cfg) -> str:
    return f"held-out fold {cfg.cv_fold} of {cfg.cv_folds}" if cfg.cv_folds else "test"


@contextlib.contextmanager
def _kept_checkpoints(paths):
    """On failure, name the members' checkpoints this run wrote (the results folder names
    only ``<out>.checkpoint.pt``, member 0's): the same command resumes from them."""
    before = {p: _mtime(p) for p in paths}
    try:
        yield
    except BaseException:
        kept = [str(p) for p in paths if _mtime(p) not in (None, before[p])]
        if kept:
            log.warning("the ensemble's other members' checkpoints %s are kept too: the same "
                        "command resumes from them (delete them to start over)",
                        ", ".join(kept))
        raise


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def _one_length(train, test, cfg):
    """Your own train and test files may differ in length (the shipped sets are padded to one
    length when loaded). With --pad both are padded to the longer; without it the ResNet and a
    rotary Transformer take any length, while a table of positions (sinusoidal, learned) ends
    at the training length, which is refused here rather than after training."""
    from kairo.tsc import _data

    if train.n_steps == test.n_steps:
        return train, test
    if cfg.pad:
        t = max(train.n_steps, test.n_steps)
        return _data.pad_to(train, t), _data.pad_to(test, t)
    if (cfg.encoder == "transformer" and cfg.positional in TABLE_POSITIONALS
            and test.n_steps > train.n_steps):
        raise DataError(f"the test series have {test.n_steps} steps, the training series "
                        f"{train.n_steps}: {cfg.positional} positions end at the training "
                        f"length; pass --pad to pad both splits to {test.n_steps} steps")
    return train, test


def _check_pair(train, test) -> None:
    if train.n_channels != test.n_channels:
        raise DataError(f"train and test have different channel counts ({train.n_channels} vs "
                        f"{test.n_channels})")
    if tuple(train.classes) != tuple(test.classes) and not set(test.classes) <= \
            set(train.classes):
        raise DataError(f"the test labels {sorted(set(test.classes) - set(train.classes))} do "
                        f"not occur in the training data")


def _write_report(rd, report: dict, classes, split: str, extra: dict | None = None) -> None:
    from kairo.tsc import _metrics

    import pandas as pd

    rd.add("metrics.json", {k: v for k, v in report.items()
                            if k not in ("confusion", "per_class", "y", "pred", "proba")} |
           {"split": split, "confusion": np.asarray(report["confusion"]).tolist()} |
           (extra or {}))
    rd.add("per_class.csv", _metrics.per_class_table(report))
    # each scored series: its label, the predicted class and the class probabilities, as
    # `kairo tsc predict` writes them
    names = [str(c) for c in classes]
    per_series = pd.DataFrame(np.asarray(report["proba"]), columns=[f"p_{c}" for c in names])
    per_series.insert(0, "predicted", [names[i] for i in report["pred"]])
    per_series.insert(0, "label", [names[i] for i in report["y"]])
    per_series.insert(0, "series", np.arange(len(per_series)))
    rd.add("predictions.csv", per_series)

    cm = pd.DataFrame(np.asarray(report["confusion"]), index=[f"true {c}" for c in classes],
                      columns=[f"pred {c}" for c in classes])
    rd.add("confusion.csv", cm.reset_index(names="true"))
    rd.add("confusion.png",
           _metrics.confusion_figure(np.asarray(report["confusion"]), list(classes)))


def _curves_figure(hist):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 3.2), layout="constrained")
    a, b = fig.subplots(1, 2)
    if "seed" in hist:                     # an ensemble: one colour per member
        for k, (seed, h) in enumerate(hist.groupby("seed", sort=False)):
            a.plot(h["epoch"], h["train_loss"], color=f"C{k}", label=f"seed {seed} train")
            if h["val_loss"].notna().any():
                a.plot(h["epoch"], h["val_loss"], color=f"C{k}", ls="--",
                       label=f"seed {seed} validation")
                b.plot(h["epoch"], h["val_acc"], color=f"C{k}", label=f"seed {seed}")
        if b.lines:
            b.legend(frameon=False, fontsize=7)
    else:
        a.plot(hist["epoch"], hist["train_loss"], label="train")
        if "val_loss" in hist and hist["val_loss"].notna().any():
            a.plot(hist["epoch"], hist["val_loss"], label="validation")
            b.plot(hist["epoch"], hist["val_acc"], color="C1")
    a.set(xlabel="epoch", ylabel="loss", title="loss")
    a.legend(frameon=False)
    b.set(xlabel="epoch", ylabel="accuracy", title="validation accuracy")
    return fig


def _load(path):
    """The fitted estimator of a model file and the file's training record (the set, its
    classes and length)."""
    from kairo.tsc._estimator import load_estimator

    est = load_estimator(path)
    return est, est.model_.fit_meta


def run_evaluate(cfg: EvaluateConfig, rd) -> str:
    from kairo.tsc import _inference

    est, meta = _load(cfg.model)
    cfg = _resolve_dataset(cfg, meta, rd)
    _dataset_warning(cfg, meta)
    data = _scored_data(cfg)
    names = _model_classes(meta, data)
    _length_warning(data, meta.get("meta", meta))
    y = _inference.labels_as(data, names)              # matched to the model's by name
    report = _inference.scores(y, est._proba(data.x, data.mask), names)
    _write_report(rd, report, names, cfg.split)
    return (f"{cfg.split} accuracy {report['accuracy']:.2%}, macro F1 {report['f1_macro']:.3f} "
            f"on {len(data)} series")


def run_predict(cfg: PredictConfig, rd=None) -> str:
    """Predicted class and class probabilities for every series of ``--input``, as CSV."""
    import pandas as pd

    from kairo._io import atomic_write_text

    out = Path(cfg.output)
    if not out.parent.is_dir():
        raise KairoError(f"output {out}: folder {out.parent} does not exist")
    if out.is_dir():
        raise KairoError(f"output {out} is a folder; --output names the CSV file to write")
    for name in ("input", "model"):
        if out.exists() and out.resolve() == Path(getattr(cfg, name)).resolve():
            raise KairoError(f"output {out} is the {name} file; write the predictions "
                             f"elsewhere")
    if out.exists() and not cfg.overwrite:
        raise KairoError(f"output {out} already exists; choose another --output or pass "
                         f"--overwrite")
    est, meta = _load(cfg.model)
    data = load_file(cfg.input, pad=cfg.pad, labelled=cfg.labelled)
    m = meta.get("meta", meta)
    notes = []
    hint = ""
    if Path(cfg.input).suffix.lower() == ".csv":    # a label column is told only by length
        hint = (" (if the first CSV column holds no labels, leave out --labelled)"
                if cfg.labelled else
                " (if the first CSV column holds labels, pass --labelled)")
    note = _length_warning(data, m, hint)
    if note:
        notes.append(note)
    proba = est._proba(data.x, data.mask)
    pred = proba.argmax(1)
    classes = [str(c) for c in m.get("classes", range(proba.shape[1]))]
    df = pd.DataFrame(proba, columns=[f"p_{c}" for c in classes])
    df.insert(0, "predicted", [classes[i] for i in pred])
    if cfg.labelled:
        df.insert(1, "label", [str(data.classes[i]) for i in data.y])
        known = df.label.isin(classes)
        if known.any():
            notes.insert(0, f"accuracy {(df.predicted == df.label)[known].mean():.2%} on the "
                            f"{int(known.sum())} series whose label is one of the model's "
                            f"classes")
        else:
            notes.insert(0, "no label of the file is one of the model's classes "
                            f"({', '.join(classes)})")
    atomic_write_text(out, df.to_csv(index_label="series"))
    return f"wrote {out} ({len(df)} series)" + "".join(f"; {n}" for n in notes)


# ---------------------------------------------------------------------------- figures
def run_compare(cfg: CompareConfig, rd) -> str:
    from kairo.tsc._compare import run_compare as compare

    return compare(cfg, rd)


def run_benchmark(cfg: BenchmarkConfig, rd) -> str:
    from kairo.tsc._benchmark import run_benchmark as benchmark

    return benchmark(cfg, rd)


def _grid_inputs(cfg) -> dict[str, Path]:
    from kairo.tsc._grid import canonical_datasets

    return inputs(dataclasses.replace(cfg, datasets=canonical_datasets(cfg.datasets)))


COMMANDS = [
    Command("tsc list", ListConfig, run_list, "datasets available offline", folder=False,
            record=False),
    Command("tsc train", TscTrainConfig, run_train, "train a classifier (encoder + pooling "
            "head) and score it on the test split", inputs=inputs,
            description="train a classifier (encoder + pooling head) and score it on the test "
            "split; a killed run resumes from <out>.checkpoint.pt. With --ensemble N the "
            "members (seeds seed … seed+N-1) train in parallel into one model.pt whose class "
            "probabilities are their mean; member 0 checkpoints to <out>.checkpoint.pt (it is "
            "the one-model run), member i to <out>.checkpoint-member<i>.pt, and a killed "
            "ensemble resumes member by member", headline=("summary.dataset", "accuracy")),
    Command("tsc evaluate", EvaluateConfig, run_evaluate, "metrics of a trained model on a "
            "dataset", inputs=inputs, headline=("accuracy", "f1_macro")),
    Command("tsc predict", PredictConfig, run_predict, "classes and probabilities for your "
            "series (CSV)", folder=False),
    Command("tsc compare-pooling", CompareConfig, run_compare, "every pooling head × encoder × "
            "dataset × seed, with paired tests against mean pooling", inputs=_grid_inputs,
            description="every pooling head × encoder × dataset × seed, with paired tests "
            "against mean pooling; each run is a kairo tsc train run in <out>.runs/ (moved "
            "into the folder as runs/ at the end), and the same command after a stop runs "
            "only what is missing"),
    Command("tsc benchmark", BenchmarkConfig, run_benchmark, "the best configuration per "
            "dataset (chosen on the training split: validation hold-out or k-fold CV) next to "
            "MiniRocket and MultiRocket-Hydra on the same splits and published results",
            inputs=_grid_inputs,
            description="the best configuration per dataset (encoder × pooling head × "
            "time-warp candidates, chosen on the training split: validation hold-out "
            "or k-fold CV), refit on the whole training split, next to MiniRocket and "
            "MultiRocket-Hydra on the same splits and published results; each selection "
            "run, fold and refit is a kairo tsc train run in <out>.runs/ (moved into the "
            "folder as runs/ at the end), and the same command after a stop runs only what is "
            "missing (the peers, seeded and fast, run again)"),
    Command("tsc maps", MapsConfig, run_maps, "pooling weights and self-attention of a trained "
            "model for chosen series (figures)", inputs=inputs),
    Command("tsc encodings", EncodingsConfig, run_encodings, "heatmap of the sinusoidal "
            "positional encoding"),
]
