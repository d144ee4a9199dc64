"""``kairo fly run | trials | view`` through the command-line entry point."""

from __future__ import annotations

import json

import pandas as pd
import pytest

pytest.importorskip("flygym", reason="the [fly] extra is not installed: pip install "
                                     "'kairo-circuits[fly]'")

from kairo.cli import main  # noqa: E402

VIDEO = ["--fps", "25", "--play-speed", "0.02", "--frame-size", "128"]


@pytest.mark.slow
@pytest.mark.winding
def test_fly_run_writes_results_and_video(tmp_path, capsys):
    out, video = tmp_path / "run", tmp_path / "fly.mp4"
    argv = ["fly", "run", "--duration", "0.04", "--video", str(video), *VIDEO,
            "--out", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "turning index" in text and f"video: {video}" in text
    assert video.stat().st_size > 1000
    traj = pd.read_csv(out / "trajectory.csv")
    assert {"t", "x", "y", "heading", "dn_L", "dn_R", "action_L", "action_R"} <= set(traj)
    m = json.loads((out / "metrics.json").read_text())
    assert m["simulated_s"] == pytest.approx(0.04) and "timing" in m
    for f in ("config.yaml", "run.json", "timing.csv", "trajectory.png", "video_frame.png"):
        assert (out / f).is_file()
    run = json.loads((out / "run.json").read_text())
    assert run["data"]["winding2023"]["sha256"]          # the connectome read
    assert run["resolved"]["motor_scale"] > 0             # 0 in the config: automatic
    assert "video_frame.png" in run["files"] and "fly.mp4" not in run["files"]
    # the video obeys --overwrite like the results folder
    assert main(argv + ["--overwrite"]) == 0
    capsys.readouterr()
    assert main(argv[:-2] + ["--out", str(tmp_path / "again")]) == 2
    assert "already exists" in capsys.readouterr().err
    assert not (tmp_path / "again").exists()


@pytest.mark.slow
def test_fly_run_video_into_the_results_folder(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["fly", "run", "--controller", "constant", "--duration", "0.04", "--video",
                 "fly.mp4", *VIDEO, "--out", str(out)]) == 0
    assert f"video: {out / 'fly.mp4'}" in capsys.readouterr().out
    assert (out / "fly.mp4").stat().st_size > 1000
    run = json.loads((out / "run.json").read_text())
    assert {"fly.mp4", "video_frame.png", "trajectory.csv"} <= set(run["files"])
    assert run["data"] == {}                              # no brain, no connectome read
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


@pytest.mark.slow
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
    run = json.loads((out / "run.json").read_text())
    assert run["resolved"] == {"executor": "serial", "workers": 1}
    assert run["data"] == {}


@pytest.mark.parametrize("argv, fragment", [
    (["fly", "run", "--odor-x", "500"], "outside"),
    (["fly", "run", "--decision-interval", "0.00001"], "shorter than the physics timestep"),
    # checked against the connectome's neurons
    pytest.param(["fly", "run", "--sensory-left", "celltype=nothing"], "sensory_left",
                 marks=pytest.mark.winding),
    pytest.param(["fly", "run", "--descending-right", "DN-VNC:unknown"], "descending_right",
                 marks=pytest.mark.winding),
    (["fly", "run", "--video", "/no/such/folder/fly.mp4"], "does not exist"),
    (["fly", "run", "--frame-size", "32"], "frame_size"),
    (["fly", "trials", "--controllers", "connectome,ghost"], "ghost"),
])
def test_fly_bad_input(argv, fragment, tmp_path, capsys):
    rc = main(argv + ["--out", str(tmp_path / "o")])
    assert rc == 2
    assert fragment in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv, fragment", [
    (["fly", "run", "--controller", "rewird"], "--controller"),
    (["fly", "trials", "--video", "x.mp4"], "--video"),       # one trial records a video
])
def test_fly_flags_refused_by_the_parser(argv, fragment, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and fragment in capsys.readouterr().err


def test_fly_view_without_display(monkeypatch, capsys):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert main(["fly", "view", "--duration", "0.04"]) == 2
    assert "xvfb-run -a kairo fly view" in capsys.readouterr().err


def test_fly_view_refuses_an_existing_output(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("DISPLAY", ":99")          # checked after the display is found
    shot = tmp_path / "shot.png"
    shot.write_bytes(b"old")
    assert main(["fly", "view", "--output", str(shot)]) == 2
    assert "already exists" in capsys.readouterr().err and shot.read_bytes() == b"old"
