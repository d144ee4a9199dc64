"""Published accuracies to compare kairo's classifiers with, read offline.

- The aeon wheel bundles accuracy tables of four classifiers (HC2, InceptionTime, FreshPRINCE,
  WEASEL-2.0) over 30 resamples of the UCR/UEA archive: column ``0`` is the archive's own
  train/test split, the others are stratified resamples.
- ResNet (Fawaz et al. 2019, "Deep learning for time series classification: a review"): the
  accuracy of each of their five runs on the UCR 2018 archive's default split, from their
  repository's results/results-ucr-128.csv (github.com/hfawaz/dl-4-tsc), for the univariate
  sets the aeon wheel ships. Their means are the figures the issue quotes (ArrowHead 0.838,
  …). Other ResNet figures are not bundled anywhere offline, so they are left out rather than
  guessed.
- ConvTran (Foumani, Tan, Webb and Salehi 2024, "Improving position encoding of transformers
  for multivariate time series classification", Data Mining and Knowledge Discovery,
  doi:10.1007/s10618-023-00948-2): the test accuracy the paper reports on the UEA archive's
  default split for the two multivariate sets the aeon wheel ships (JapaneseVowels,
  BasicMotions); the aeon tables above hold univariate sets only.
"""

from __future__ import annotations

import os
from functools import lru_cache

import pandas as pd

from kairo._errors import DataError

__all__ = ["RESNET_FAWAZ2019", "RESNET_FAWAZ2019_RUNS", "CONVTRAN_FOUMANI2024",
           "published_table", "AEON_CLASSIFIERS", "RESNET", "CONVTRAN"]

# test-set hits / test-set size of each run (iterations 0-4), exact
_RESNET_HITS = {"ACSF1": ((93, 92, 93, 93, 87), 100),
                "ArrowHead": ((151, 144, 145, 151, 142), 175),
                "GunPoint": ((149, 149, 147, 148, 150), 150),
                "ItalyPowerDemand": ((994, 990, 987, 988, 988), 1029),
                "OSULeaf": ((237, 239, 235, 237, 238), 242),
                "PickupGestureWiimoteZ": ((36, 33, 35, 37, 35), 50)}
AEON_CLASSIFIERS = ("HC2", "InceptionTime", "FreshPRINCE", "WEASEL-2.0")
# aeon's tables list a variable-length set under its equal-length version's name (the UCR
# archive's copy, short series extended by low-amplitude noise). kairo loads either: the
# original series padded and masked, or "<name>_eq". Both hold the same test series.
_AEON_NAMES = {"PickupGestureWiimoteZ": "PickupGestureWiimoteZ_eq"}
# Fawaz et al.'s networks take fixed-length input and the archive ships this set's series
# with unequal lengths, so their runs were on the equal-length copy: one figure, both names
_RESNET_HITS.update({eq: _RESNET_HITS[ds] for ds, eq in _AEON_NAMES.items()
                     if ds in _RESNET_HITS})
RESNET_FAWAZ2019_RUNS = {ds: tuple(h / n for h in hits) for ds, (hits, n) in _RESNET_HITS.items()}
RESNET_FAWAZ2019 = {ds: sum(r) / len(r) for ds, r in RESNET_FAWAZ2019_RUNS.items()}
# ConvTran's loader pads a variable-length set's series at the end to the longest length
# (github.com/Navidfoumani/ConvTran, Dataset/load_UEA_data.py), so its JapaneseVowels figure
# is kairo's padded "JapaneseVowels", not the resampled "JapaneseVowels_eq"
CONVTRAN_FOUMANI2024 = {"JapaneseVowels": 0.989, "BasicMotions": 1.000}
RESNET = "ResNet (Fawaz 2019)"
CONVTRAN = "ConvTran (Foumani 2024)"


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
    the mean over its 30 resamples (``<name> (30 resamples)``), plus ResNet (Fawaz 2019) and
    ConvTran (Foumani 2024). Missing entries are NaN."""
    rows = []
    for ds in datasets:
        row = {"dataset": ds, RESNET: RESNET_FAWAZ2019.get(ds, float("nan")),
               CONVTRAN: CONVTRAN_FOUMANI2024.get(ds, float("nan"))}
        for name in AEON_CLASSIFIERS:
            t = _aeon_table(name)
            key = _AEON_NAMES.get(ds, ds)      # "<name>_eq" is its own key already
            if key in t.index:
                row[name] = float(t.loc[key].iloc[0])
                row[f"{name} (30 resamples)"] = float(t.loc[key].mean())
            else:
                row[name] = row[f"{name} (30 resamples)"] = float("nan")
        rows.append(row)
    return pd.DataFrame(rows).set_index("dataset")
