"""The scikit-learn estimators: scikit-learn's own estimator checks, model selection and
pipelines, aeon's input layouts, files, the equality with ``kairo tsc train``, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import check_classifiers_train, check_estimator

from kairo import ConfigError
from kairo.tsc import (ResNetClassifier, TransformerClassifier, load_classifier,
                             load_dataset, load_estimator, predict)
from kairo.cli import main

TINY_TF = dict(d_model=8, n_heads=2, blocks=1, ensemble=1, options={"stem_blocks": 1})
TINY_RN = dict(d_model=8, blocks=1)


def _tiny(cls, **kw):
    return cls(**{**(TINY_TF if cls is TransformerClassifier else TINY_RN), **kw})


def _gunpoint(n=40):
    train, test = load_dataset("GunPoint", "train"), load_dataset("GunPoint", "test")
    labels = np.array(train.classes)
    return (train.x[:n], labels[train.y[:n]], test.x[:n],
            np.array(test.classes)[test.y[:n]])


# scikit-learn's checks on 2-D X (rows of a few features, read as one-channel series) with a
# budget of 30 steps; what is expected to fail, and why
_EXPECTED = {
    "check_classifiers_train": "30 optimizer steps (kept small so the checks run in seconds) "
                               "do not reach 0.83 on blobs; "
                               "test_sklearn_accuracy_check_passes_with_a_training_budget runs "
                               "the check with 300-500 steps",
    "check_methods_subset_invariance": "float32 inference: a series' probabilities computed "
                                       "in a batch of another size agree to about 2e-7, the "
                                       "check asks 1e-7",
}


@pytest.mark.parametrize("cls", [TransformerClassifier, ResNetClassifier])
def test_scikit_learn_estimator_checks(cls):
    est = _tiny(cls, steps=30, random_state=0, znorm="none")
    results = check_estimator(est, expected_failed_checks=_EXPECTED, on_fail=None)
    failed = [(r["check_name"], repr(r["exception"])[:300]) for r in results
              if r["status"] == "failed"]
    assert not failed, failed
    assert sum(r["status"] == "passed" for r in results) >= 45


@pytest.mark.parametrize("cls,steps", [(TransformerClassifier, 300), (ResNetClassifier, 500)])
def test_sklearn_accuracy_check_passes_with_a_training_budget(cls, steps):
    """Blobs are not series: with the UCR convention (znorm auto → each series z-normalized)
    a row of two features loses its level, so the check runs with znorm='none'."""
    check_classifiers_train(cls.__name__, _tiny(cls, steps=steps, random_state=0,
                                                znorm="none"))


def test_parameters_are_the_configs_defaults_and_clone_keeps_them():
    from kairo.tsc import ModelConfig, TrainConfig

    tf = TransformerClassifier()
    model, train = tf.configs(seed=3)
    assert model == ModelConfig() and train == TrainConfig(seed=3)
    assert tf.ensemble == 2                        # kairo tsc train's default
    rn = ResNetClassifier(options={"label_smoothing": 0.1})
    model, train = rn.configs()
    assert model.encoder == "resnet" and model.blocks == 3 and train.label_smoothing == 0.1
    c = clone(TransformerClassifier(d_model=32, options={"jitter": 0.1}))
    assert c.d_model == 32 and c.options == {"jitter": 0.1}


def test_fit_predict_and_model_selection():
    x, y, xt, yt = _gunpoint()
    est = _tiny(TransformerClassifier, steps=40, random_state=0)
    assert est.fit(x, y) is est
    assert list(est.classes_) == ["1", "2"] and est.n_channels_ == 1
    proba = est.predict_proba(xt)
    assert proba.shape == (len(xt), 2) and np.allclose(proba.sum(1), 1)
    assert set(est.predict(xt)) <= {"1", "2"}
    assert est.recipe_["mixup"] == "on" and est.recipe_["znorm"] == "series"   # smooth series
    # the same seed, the same model; another seed, another
    again = clone(est).fit(x, y)
    np.testing.assert_array_equal(again.predict_proba(xt), proba)
    # model selection and pipelines
    cv = StratifiedKFold(2, shuffle=True, random_state=0)
    scores = cross_val_score(_tiny(TransformerClassifier, steps=20, random_state=0), x, y,
                             cv=cv, error_score="raise")
    assert scores.shape == (2,) and (scores >= 0).all()
    grid = GridSearchCV(_tiny(ResNetClassifier, steps=20, random_state=0),
                        {"lr": [1e-3, 3e-3]}, cv=cv, error_score="raise").fit(x, y)
    assert grid.best_params_["lr"] in (1e-3, 3e-3) and grid.score(xt, yt) >= 0
    pipe = make_pipeline(FunctionTransformer(lambda a: a[..., ::2]),
                         _tiny(ResNetClassifier, steps=20, random_state=0)).fit(x, y)
    assert pipe.predict(xt).shape == (len(xt),)
    assert pipe[-1].n_timepoints_ == 75


def test_labels_of_any_type_and_unequal_lengths():
    rng = np.random.default_rng(0)
    lengths = rng.integers(20, 41, size=24)
    y = np.array([10, 20, 30] * 8)
    series = [np.sin(np.arange(n) / (1 + k / 10))[None, :] + 0.1 * rng.normal(size=(1, n))
              for n, k in zip(lengths, y)]
    est = _tiny(TransformerClassifier, steps=30, random_state=0).fit(series, y)
    assert est.classes_.tolist() == [10, 20, 30] and est.n_timepoints_ == 40
    pred = est.predict(series[:5])                   # shorter longest series: padded to 40
    assert pred.dtype == y.dtype and set(pred) <= {10, 20, 30}
    # a series longer than any at fit: rotary positions read it (the window of a token is the
    # fitted one), and the other series' answers do not change; a table of positions covers
    # the fitted length only
    longer = est.predict_proba(series[:3] + [np.zeros((1, 50))])
    np.testing.assert_allclose(longer[:3], est.predict_proba(series[:3]), atol=1e-6)
    table = _tiny(TransformerClassifier, steps=5, random_state=0, positional="sinusoidal")
    with pytest.raises(ValueError, match="more than the 40 this classifier's positions cover"):
        table.fit(series, y).predict(series[:3] + [np.zeros((1, 50))])


def test_save_load_and_the_command_line_model(tmp_path):
    x, y, xt, _ = _gunpoint()
    est = _tiny(TransformerClassifier, steps=30, random_state=4).fit(x, y)
    est.save(tmp_path / "est.pt")
    back = load_estimator(tmp_path / "est.pt")
    assert type(back) is TransformerClassifier and back.get_params() == est.get_params()
    np.testing.assert_array_equal(back.predict_proba(xt), est.predict_proba(xt))
    assert back.classes_.tolist() == ["1", "2"] and back.recipe_ == est.recipe_
    # kairo tsc evaluate reads the estimator's file
    assert main(["tsc", "evaluate", "--model", str(tmp_path / "est.pt"), "--dataset",
                 "GunPoint", "--out", str(tmp_path / "eval")]) == 0


def test_the_estimator_trains_what_tsc_train_trains(tmp_path):
    """The round trip of the issue: TransformerClassifier(random_state=s).fit(X, y) and
    `kairo tsc train --seed s` on the same data give the same probabilities (an ensemble of
    two, as both default to)."""
    opts = ["--d-model", "8", "--n-heads", "2", "--blocks", "1", "--stem-blocks", "1",
            "--steps", "30", "--seed", "5"]
    assert main(["tsc", "train", "--dataset", "GunPoint", *opts, "--out",
                 str(tmp_path / "cli")]) == 0
    model, _ = load_classifier(tmp_path / "cli" / "model.pt")
    train, test = load_dataset("GunPoint", "train"), load_dataset("GunPoint", "test")
    est = TransformerClassifier(d_model=8, n_heads=2, blocks=1, steps=30, random_state=5,
                                options={"stem_blocks": 1})
    est.fit(train.x, np.array(train.classes)[train.y])
    np.testing.assert_array_equal(est.predict_proba(test.x), predict(model, test.x)[1])
    assert load_estimator(tmp_path / "cli" / "model.pt").ensemble == 2


def test_bad_input_is_refused_with_a_clear_error():
    x, y, xt, _ = _gunpoint(20)
    est = _tiny(TransformerClassifier, steps=10, random_state=0)
    bad = x.copy()
    bad[3, 0, 7] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(bad, y)
    with pytest.raises(ValueError, match="dimensions|dimension"):
        est.fit(x[:, :, :, None], y)
    with pytest.raises(ValueError, match="dimension|2D"):
        est.fit(x[:, 0, 0], y)
    with pytest.raises(ValueError, match="one class"):
        est.fit(x, np.full(len(x), "1"))
    with pytest.raises(ValueError, match="requires y"):
        est.fit(x, None)
    with pytest.raises(ConfigError, match=r"options: unknown or reserved fields \['nope'"):
        _tiny(TransformerClassifier, options={"stem_blocks": 1, "nope": 1}).fit(x, y)
    with pytest.raises(ConfigError, match="seed"):
        TransformerClassifier(options={"seed": 1}).fit(x, y)
    with pytest.raises(ConfigError, match="d_model"):
        _tiny(TransformerClassifier, d_model=0).fit(x, y)
    est.fit(x, y)
    with pytest.raises(ValueError, match=r"labels \['3'\] that the classifier was not fitted"):
        est.score(xt, np.where(np.arange(len(xt)) == 0, "3", "1"))
    with pytest.raises(ValueError, match="2 channels"):
        est.predict(np.concatenate([xt, xt], axis=1))
    with pytest.raises(ValueError, match="expecting 150 features"):
        est.predict(xt[:, :, :100])
    inf = xt.copy()
    inf[0, 0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity|inf"):
        est.predict(inf)
