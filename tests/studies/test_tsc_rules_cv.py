"""benchmarks/studies/tsc_rules_cv.py: the pre-registered decision on known rows (margins of one
training series, repeated splits averaged), and each rule's flip of a recipe."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.study


def _row(dataset, variant, cv, n, seed=0):
    return {"dataset": dataset, "variant": variant, "cv": cv, "n_train": n, "seed": seed}


def test_decision_counts_sets_beyond_one_series_and_averages_repeats(load_benchmark):
    study = load_benchmark("studies/tsc_rules_cv")
    rows = [_row("A", "recipe", 0.90, 10), _row("A", "sam flipped", 0.85, 10),    # Δ +0.05 < 0.1
            _row("B", "recipe", 0.80, 100), _row("B", "sam flipped", 0.70, 100),  # +0.10 > 0.01
            _row("C", "recipe", 0.60, 50), _row("C", "sam flipped", 0.70, 50),    # −0.10
            _row("C", "recipe", 0.70, 50, 1), _row("C", "sam flipped", 0.70, 50, 1),
            _row("A", "mixup flipped", 0.95, 10), _row("B", "mixup flipped", 0.795, 100),
            _row("C", "mixup flipped", 0.80, 50)]
    got = study.decide(rows)
    sam = got["sam"]
    assert sam["delta"] == pytest.approx({"A": 0.05, "B": 0.10, "C": -0.05})  # C: two seeds
    assert (sam["recipe_better"], sam["flip_better"]) == (1, 1)
    assert sam["mean_delta"] == pytest.approx(0.1 / 3) and sam["verdict"] == "kept"
    mix = got["mixup"]
    assert mix["delta"] == pytest.approx({"A": -0.05, "B": 0.005, "C": -0.20})
    assert (mix["recipe_better"], mix["flip_better"]) == (0, 1)
    assert mix["verdict"] == "not supported"
    assert set(got) == {"sam", "mixup"}                 # rules without rows are left out
    # one series of 270 in one fold of 54, as float fold means give it: within the margin
    folds = [52 / 54, 1.0, 1.0, 52 / 54, 1.0]
    flip = [53 / 54, 1.0, 52 / 54, 52 / 54, 1.0]
    one = study.decide([_row("J", "recipe", sum(folds) / 5, 270),
                        _row("J", "cutmix flipped", sum(flip) / 5, 270)])["cutmix"]
    assert one["delta"]["J"] > 1 / 270 and (one["recipe_better"], one["flip_better"]) == (0, 0)


def test_each_flip_reverses_the_recipes_choice(load_benchmark):
    study = load_benchmark("studies/tsc_rules_cv")
    recipe = {"sam": True, "mixup": False, "cutmix": True, "time_warp": 0.2, "stem_blocks": 3,
              "stem_dilations": [1]}
    assert study.flipped("sam", recipe) == {"sam": "off"}
    assert study.flipped("mixup", recipe) == {"mixup": "on"}
    assert study.flipped("time_warp", recipe) == {"time_warp": 0.0}
    assert study.flipped("time_warp", {**recipe, "time_warp": 0.0}) == {"time_warp": 0.2}
    assert study.flipped("stem_blocks", recipe) == {"options": {"stem_blocks": 1}}
    assert study.flipped("stem_blocks", {**recipe, "stem_blocks": 1}) == {
        "options": {"stem_blocks": 3}}
    assert study.flipped("stem_dilation", recipe) == {}     # short series: nothing to flip
    assert study.flipped("stem_dilation", {**recipe, "stem_dilations": [1, 2, 4]}) == {
        "options": {"stem_dilation": "off"}}
    with pytest.raises(ValueError, match="unknown rule 'pool'"):
        study.flipped("pool", recipe)
