"""The results folder and the shared config plumbing, on their own."""

from __future__ import annotations

from kairo.cli import execute, make_config
from kairo.results import ResultsDir


def test_only_a_run_that_keeps_a_checkpoint_deletes_it(tmp_path):
    ckpt = tmp_path / "a.checkpoint.pt"
    ckpt.write_text("a killed training run's state")
    cfg = make_config("data path")
    with ResultsDir(tmp_path / "a", command="data path", config=cfg, overwrite=True) as rd:
        rd.add("x.json", {"x": 1})
    assert ckpt.is_file()                  # another command with the same --out keeps it
    with ResultsDir(tmp_path / "a", command="data path", config=cfg, overwrite=True) as rd:
        assert rd.checkpoint == ckpt
    assert not ckpt.exists()               # the run that kept it deletes it once committed


def test_a_yaml_boolean_fills_an_auto_true_false_mode():
    cfg = make_config("tsc train", {"head_norm": False, "dataset": "GunPoint"})
    assert cfg.head_norm == "false"


def test_a_yaml_boolean_fills_an_on_off_mode():
    """YAML 1.1 reads an unquoted ``mixup: on`` as true: an on/off mode takes it."""
    cfg = make_config("tsc train", {"mixup": False, "cutmix": True, "sam": True,
                                    "dataset": "GunPoint"})
    assert (cfg.mixup, cfg.cutmix, cfg.sam) == ("off", "on", "on")


def test_data_path_from_the_api(tmp_path, monkeypatch):
    monkeypatch.setenv("KAIRO_DATA_DIR", str(tmp_path))
    assert execute("data path", make_config("data path")).summary == str(tmp_path)


def test_steps_inside_a_relative_results_folder_land_in_it(tmp_path, monkeypatch):
    """``kairo demo --out results/demo`` (relative, as scripts/demo.sh runs it): the steps,
    which run from inside the demo's folder, write their folders into it, not below a copy
    of the relative path."""
    from kairo.demo import Step, run_steps

    monkeypatch.chdir(tmp_path)
    enc = make_config("tsc encodings", {"d": 8, "positions": 8})
    with ResultsDir("results/demo", command="data path", config=make_config("data path")) as rd:
        assert rd.path.is_absolute()
        run_steps((rd.path, [Step("enc", "tsc encodings", enc)]))
    assert (tmp_path / "results" / "demo" / "enc" / "run.json").is_file()
    assert sorted(p.name for p in (tmp_path / "results" / "demo").iterdir()) == \
        ["config.yaml", "enc", "run.json"]
