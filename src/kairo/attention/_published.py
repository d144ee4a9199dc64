"""Published accuracies to compare kairo's classifiers with, read offline.

- The aeon wheel bundles accuracy tables of four classifiers (HC2, InceptionTime, FreshPRINCE,
  WEASEL-2.0) over 30 resamples of the UCR/UEA archive: column ``0`` is the archive's own
  train/test split, the others are stratified resamples.
- ResNet (Fawaz et al. 2019, "Deep learning for time series classification: a review",
  mean over their runs on the default split) for the datasets the issue quotes. Other ResNet
  figures are not bundled anywhere offline, so they are left out rather than guessed.
"""

from __future__ import annotations

import os
from functools import lru_cache

import pandas as pd

from kairo._errors import DataError

__all__ = ["RESNET_FAWAZ2019", "published_table", "AEON_CLASSIFIERS"]

RESNET_FAWAZ2019 = {"OSULeaf": 0.980, "ACSF1": 0.916, "ArrowHead": 0.838, "GunPoint": 0.991}
AEON_CLASSIFIERS = ("HC2", "InceptionTime", "FreshPRINCE", "WEASEL-2.0")


def _results_dir() -> str:
    import aeon

    return os.path.join(os.path.dirname(aeon.__file__), "testing", "example_results_files",
                        "classification", "accuracy")


@lru_cache(maxsize=None)
def _aeon_table(name: str) -> pd.DataFrame:
    path = os.path.join(_results_dir(), f"{name}_accuracy.csv")
    if not os.path.isfile(path):
        raise DataError(f"published results {path} are missing from the installed aeon wheel "
                        f"(expected {', '.join(AEON_CLASSIFIERS)})")
    return pd.read_csv(path, index_col=0)


def published_table(datasets) -> pd.DataFrame:
    """One row per dataset: each classifier's accuracy on the default split (``<name>``) and
    the mean over its 30 resamples (``<name> (30 resamples)``), plus ResNet (Fawaz 2019).
    Missing entries are NaN."""
    rows = []
    for ds in datasets:
        row = {"dataset": ds, "ResNet (Fawaz 2019)": RESNET_FAWAZ2019.get(ds, float("nan"))}
        for name in AEON_CLASSIFIERS:
            t = _aeon_table(name)
            if ds in t.index:
                row[name] = float(t.loc[ds].iloc[0])
                row[f"{name} (30 resamples)"] = float(t.loc[ds].mean())
            else:
                row[name] = row[f"{name} (30 resamples)"] = float("nan")
        rows.append(row)
    return pd.DataFrame(rows).set_index("dataset")
