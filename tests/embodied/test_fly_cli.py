"""``kairo fly run | trials | view`` through the command-line entry point."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import kairo.embodied  # noqa: F401  (MUJOCO_GL=egl before flygym)

pytest.importorskip("flygym", reason="the [fly] extra is not installed: pip install "
                                     "'kairo[fly]'")

from kairo.cli import main  # noqa: E402


def test_fly_run_writes_results_and_video(tmp_path, capsys):
    out, video = tmp_path / "run", tmp_path / "fly.mp4"
    rc = main(["fly", "run", "--duration", "0.04", "--video", str(video), "--fps", "25",
               "--play-speed", "0.02", "--frame-size", "128", "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "turning index" in text and "video:" in text
    assert video.stat().st_size > 1000
    traj = pd.read_csv(out / "trajectory.csv")
    assert {"t", "x", "y", "heading", "dn_L", "dn_R", "action_L", "action_R"} <= set(traj)
    m = json.loads((out / "metrics.json").read_text())
    assert m["simulated_s"] == pytest.approx(0.04) and "timing" in m
    for f in ("config.yaml", "run.json", "timing.csv", "trajectory.png"):
        assert (out / f).is_file()


def test_fly_trials_writes_table_and_figure(tmp_path, capsys):
    out = tmp_path / "trials"
    rc = main(["fly", "trials", "--n", "2", "--controllers", "constant,braitenberg",
               "--wirings", "crossed,ipsilateral", "--duration", "0.04", "--workers", "1",
               "--out", str(out)])
    assert rc == 0
    trials = pd.read_csv(out / "trials.csv")
    assert len(trials) == 2 + 2 * 2
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary.controller) == ["constant", "braitenberg", "braitenberg"]
    assert (out / "trajectories.png").stat().st_size > 1000
    assert "trials in" in capsys.readouterr().out


@pytest.mark.parametrize("argv, fragment", [
    (["fly", "run", "--odor-x", "500"], "outside"),
    (["fly", "run", "--decision-interval", "0.00001"], "shorter than the physics timestep"),
    (["fly", "run", "--sensory-left", "celltype=nothing"], "sensory_left"),
    (["fly", "run", "--descending-right", "DN-VNC:unknown"], "descending_right"),
    (["fly", "run", "--video", "/no/such/folder/fly.mp4"], "does not exist"),
    (["fly", "trials", "--controllers", "connectome,ghost"], "ghost"),
    (["fly", "trials", "--video", "x.mp4"], "video"),
    (["fly", "run", "--controller", "rewird"], "controller"),
])
def test_fly_bad_input(argv, fragment, tmp_path, capsys):
    rc = main(argv + ["--out", str(tmp_path / "o")])
    assert rc == 2
    assert fragment in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_fly_view_without_display(monkeypatch, capsys):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert main(["fly", "view", "--duration", "0.04"]) == 2
    assert "xvfb-run -a kairo fly view" in capsys.readouterr().err
