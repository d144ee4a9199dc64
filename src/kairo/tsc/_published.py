"""Published accuracies to compare kairo's classifiers with, read offline.

- The 2023 bake-off (Middlehurst, Schäfer and Bagnall, "Bake off redux: a review and
  experimental evaluation of recent time series classification algorithms", Data Mining and
  Knowledge Discovery 2024): each classifier's test accuracy on 30 resamples of the UCR
  archive (112 sets; 142 with the 30 new ones for the best of each family), as tsml-eval ships
  them (``bakeoff2023/``, whose README names the files and their licence). Column ``0`` is
  the archive's own train/test split, the others stratified resamples.
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

from functools import lru_cache
from importlib import resources

import pandas as pd

from kairo._errors import DataError

__all__ = ["RESNET_FAWAZ2019", "RESNET_FAWAZ2019_RUNS", "CONVTRAN_FOUMANI2024",
           "published_table", "bakeoff_results", "BAKEOFF_CLASSIFIERS", "RESNET", "CONVTRAN"]

# test-set hits / test-set size of each run (iterations 0-4), exact
_RESNET_HITS = {"ACSF1": ((93, 92, 93, 93, 87), 100),
                "ArrowHead": ((151, 144, 145, 151, 142), 175),
                "GunPoint": ((149, 149, 147, 148, 150), 150),
                "ItalyPowerDemand": ((994, 990, 987, 988, 988), 1029),
                "OSULeaf": ((237, 239, 235, 237, 238), 242),
                "PickupGestureWiimoteZ": ((36, 33, 35, 37, 35), 50)}
# the bake-off's best of each family (142 sets), then the 112-set tables of the deep-learning
# and convolution families
BAKEOFF_CLASSIFIERS = ("HC2", "H-InceptionTime", "MR-Hydra", "QUANT", "RDST", "WEASEL-2",
                       "FreshPRINCE", "PF", "InceptionTime", "ResNet", "MiniROCKET", "Hydra",
                       "MR")
# the bake-off's tables list a variable-length set under its equal-length version's name (the UCR
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


@lru_cache(maxsize=None)
def bakeoff_results(classifier: str) -> pd.DataFrame:
    """The bake-off's test accuracies of ``classifier`` (one of ``BAKEOFF_CLASSIFIERS``): one
    row per dataset, columns 0…29 the resamples (0 the archive's split)."""
    if classifier not in BAKEOFF_CLASSIFIERS:
        raise DataError(f"no published bake-off results for {classifier!r}; expected one of "
                        f"{', '.join(BAKEOFF_CLASSIFIERS)}")
    ref = resources.files("kairo.tsc") / "bakeoff2023" / f"{classifier}_accuracy.csv.gz"
    with resources.as_file(ref) as path:
        if not path.is_file():
            raise DataError(f"published results {path} are missing from the kairo install "
                            f"(reinstall kairo)")
        t = pd.read_csv(path, index_col=0, compression="gzip")
    t.index.name = "dataset"
    t.columns = [int(c) for c in t.columns]
    return t


def published_table(datasets, resamples: int = 30) -> pd.DataFrame:
    """One row per dataset: each bake-off classifier's accuracy on the archive's split
    (``<name>``) and its mean over resamples 0…``resamples``−1 (``<name> (R resamples)``),
    plus ResNet (Fawaz 2019) and ConvTran (Foumani 2024). Missing entries are NaN."""
    if isinstance(resamples, bool) or not isinstance(resamples, int) or \
            not 1 <= resamples <= 30:
        raise DataError(f"resamples must be an integer in 1…30 (the bake-off ran 30), got "
                        f"{resamples!r}")
    rows = []
    for ds in datasets:
        row = {"dataset": ds, RESNET: RESNET_FAWAZ2019.get(ds, float("nan")),
               CONVTRAN: CONVTRAN_FOUMANI2024.get(ds, float("nan"))}
        for name in BAKEOFF_CLASSIFIERS:
            t = bakeoff_results(name)
            key = _AEON_NAMES.get(ds, ds)      # "<name>_eq" is its own key already
            if key in t.index:
                row[name] = float(t.loc[key, 0])
                row[f"{name} ({resamples} resamples)"] = float(
                    t.loc[key, list(range(resamples))].mean())
            else:
                row[name] = row[f"{name} ({resamples} resamples)"] = float("nan")
        rows.append(row)
    return pd.DataFrame(rows).set_index("dataset")
