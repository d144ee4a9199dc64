"""The closed loop on the real body (flygym + MuJoCo, headless): short trials, the video,
the parallel trial runner and the live viewer under Xvfb."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("flygym", reason="the [fly] extra is not installed: pip install "
                                     "'kairo-circuits[fly]'")

from kairo import ConfigError, KairoError  # noqa: E402
from kairo.fly import (FlyConfig, TrialsConfig, VideoRecorder, make_controller,  # noqa: E402
                            run_trial, run_trials, summarize_trials)

SHORT = 0.04          # s simulated: two decisions (~1 s of wall time)


@pytest.fixture
def cfg(data_dir):
    return FlyConfig(duration=SHORT, data_dir=str(data_dir))


@pytest.mark.slow
def test_connectome_trial_runs_and_is_reproducible(cfg):
    a = run_trial(cfg)
    b = run_trial(cfg)
    tr = a.trajectory
    assert len(tr) == 3                      # two decisions + the final state
    assert tr["t"].is_monotonic_increasing and tr["t"].iloc[-1] == pytest.approx(SHORT, 1e-6)
    cols = ["x", "y", "heading", "distance", "odor_L", "odor_R", "dn_L", "dn_R"]
    assert np.all(np.isfinite(tr[cols].iloc[:-1].to_numpy()))
    assert np.all(np.isfinite(tr[cols[:6]].to_numpy()))   # the final row: no new decision
    acts = tr[["action_L", "action_R"]].iloc[:-1].to_numpy()
    assert np.all((acts >= -0.5) & (acts <= 1.5))
    # odor: source at (20, 8), on the fly's left → the left side smells more
    assert (tr["odor_L"] > tr["odor_R"]).all() and (tr["contrast"] > 0).all()
    assert tr["distance"].iloc[0] == pytest.approx(np.hypot(20, 8), abs=0.1)
    # the fly moves and the physics is deterministic for a seed
    assert np.hypot(tr.x.iloc[-1] - tr.x.iloc[0], tr.y.iloc[-1] - tr.y.iloc[0]) > 0.05
    np.testing.assert_array_equal(a.trajectory[cols].to_numpy(), b.trajectory[cols].to_numpy())
    m = a.metrics
    assert not m["success"] and not m["diverged"] and m["simulated_s"] == pytest.approx(SHORT)
    assert set(a.timing) == {"build", "controller", "physics", "render", "video",
                            "bookkeeping"}
    # the brain, sensing and motor map are a small share of the loop (docs/fly.md: < 2 %)
    assert a.timing["controller"] < a.timing["physics"]


@pytest.mark.slow
def test_spiking_brain_trial_runs_and_is_reproducible(cfg):
    """The connectome as LIF neurons drives the legs (w_syn 0.35: at Shiu's 0.275 mV the
    larval DN-VNC stay silent under olfactory input, docs/notes/reservoir.md)."""
    lif = FlyConfig(**{**cfg.__dict__, "controller": "spiking", "w_syn": 0.35,
                       "settle_ms": 100.0})
    a, b = run_trial(lif), run_trial(lif)
    tr = a.trajectory
    assert len(tr) == 3 and np.all(np.isfinite(tr[["dn_L", "dn_R"]].iloc[:-1].to_numpy()))
    assert (tr[["dn_L", "dn_R"]].iloc[:-1].to_numpy() > 0).all()          # rates in Hz
    np.testing.assert_array_equal(a.trajectory[["x", "y", "dn_L"]].to_numpy(),
                                  b.trajectory[["x", "y", "dn_L"]].to_numpy())
    assert a.timing["controller"] < a.timing["physics"]
    with pytest.raises(ConfigError, match="silent"):     # Shiu's weight: no reference
        run_trial(FlyConfig(**{**lif.__dict__, "w_syn": 0.275}))


@pytest.mark.slow
def test_braitenberg_wiring_sets_the_turn_direction(cfg):
    """Left smells more: crossed wiring speeds the right legs, uncrossed the left legs."""
    crossed = run_trial(cfg, controller=make_controller(cfg, "braitenberg", "crossed"))
    uncrossed = run_trial(cfg, controller=make_controller(cfg, "braitenberg", "ipsilateral"))
    c, u = crossed.trajectory.iloc[0], uncrossed.trajectory.iloc[0]
    assert c.action_R > c.action_L and u.action_L > u.action_R
    assert np.isnan(c.dn_L)                          # no brain in the loop


@pytest.mark.slow
def test_success_ends_the_trial(data_dir):
    cfg = FlyConfig(duration=0.2, odor_x=2.5, odor_y=0.0, success_radius=3.0,
                    controller="constant", data_dir=str(data_dir))
    r = run_trial(cfg)
    assert r.metrics["success"] and r.metrics["time_to_reach"] == 0.0
    assert len(r.trajectory) == 1


@pytest.mark.slow
def test_video_frames_show_the_fly_and_motion(cfg, tmp_path):
    import imageio.v3 as iio

    cfg = FlyConfig(**{**cfg.__dict__, "duration": 0.06, "play_speed": 0.02, "fps": 25,
                       "frame_size": 128})
    path = tmp_path / "fly.mp4"
    rec = VideoRecorder(path, fps=cfg.fps, play_speed=cfg.play_speed, duration=cfg.duration,
                        odor_xy=(cfg.odor_x, cfg.odor_y), frame_size=cfg.frame_size)
    run_trial(cfg, recorder=rec)
    rec.close(True)
    frames = iio.imread(path)
    assert frames.shape[0] == rec.n_frames >= 5
    assert frames.shape[1:] == (128, 256, 3)
    cam, panel = frames[..., :128, :], frames[..., 128:, :]
    assert cam.std(axis=(1, 2, 3)).min() > 5           # not a uniform image
    assert panel.std(axis=(1, 2, 3)).min() > 5
    # motion: the legs move in the tracking view and the panel's traces grow
    step = np.abs(np.diff(cam.astype(float), axis=0)).mean(axis=(1, 2, 3))
    print("camera frame-to-frame change", step.round(3).tolist())
    assert (step > 0.01).mean() > 0.8
    assert np.abs(cam[-1].astype(float) - cam[0]).mean() > 0.2
    assert np.abs(panel[-1].astype(float) - panel[1]).mean() > 0.1
    assert [p.name for p in tmp_path.iterdir()] == ["fly.mp4"]    # no temp file left


@pytest.mark.slow
def test_failed_trial_leaves_no_video(cfg, tmp_path, monkeypatch):
    from kairo.fly import _experiments as ex

    rec = VideoRecorder(tmp_path / "fly.mp4", fps=25, play_speed=0.02, duration=SHORT,
                        odor_xy=(20, 8), frame_size=128)

    def boom(self, odor):
        raise KairoError("controller failed")

    monkeypatch.setattr(ex.BrainController, "__call__", boom)
    with pytest.raises(KairoError, match="controller failed"):
        try:
            run_trial(cfg, recorder=rec)
        finally:
            rec.close(False)
    assert list(tmp_path.iterdir()) == []


def test_null_controller_differs_from_real(cfg):
    real = make_controller(cfg, "connectome")
    null = make_controller(cfg, "rewired", seed=1)
    real.reset()
    null.reset()
    assert not np.allclose(real.motor.reference, null.motor.reference)


@pytest.mark.slow
def test_trials_in_parallel_processes(data_dir):
    cfg = TrialsConfig(n=2, controllers=("braitenberg", "constant"), wirings=("crossed",),
                       duration=SHORT, workers=2, executor="processes", data_dir=str(data_dir))
    res = run_trials(cfg, progress_bar=False)
    t = res["trials"]
    assert len(t) == 4 and res["executor"] == "processes" and res["workers"] == 2
    assert list(t.controller) == ["braitenberg", "braitenberg", "constant", "constant"]
    assert list(t.wiring) == ["crossed", "crossed", "-", "-"]
    # the same odor positions and seeds for every controller (paired design)
    b, c = t[t.controller == "braitenberg"], t[t.controller == "constant"]
    np.testing.assert_array_equal(b[["odor_x", "odor_y", "seed"]].to_numpy(),
                                  c[["odor_x", "odor_y", "seed"]].to_numpy())
    serial = run_trials(TrialsConfig(**{**cfg.__dict__, "executor": "serial"}))
    np.testing.assert_allclose(serial["trials"]["final_distance"], t["final_distance"])
    s = summarize_trials(t)
    assert list(s.controller) == ["braitenberg", "constant"]
    assert set(res["trajectories"].controller) == {"braitenberg", "constant"}


@pytest.mark.slow
def test_trials_ray_executor_needs_ray(data_dir):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'kairo-circuits[ray]')")
    import signal

    cfg = TrialsConfig(n=1, controllers=("constant",), duration=SHORT, workers=1,
                       executor="ray", data_dir=str(data_dir))
    before = signal.getsignal(signal.SIGTERM)
    assert len(run_trials(cfg)["trials"]) == 1
    # ray.init installs its own SIGTERM handler; kairo puts the caller's back
    assert signal.getsignal(signal.SIGTERM) is before


def test_missing_flygym_gives_the_install_command(monkeypatch, cfg):
    from kairo.fly import FlyWorld

    monkeypatch.setitem(sys.modules, "flygym", None)
    with pytest.raises(KairoError, match=r"pip install 'kairo-circuits\[fly\]'"):
        FlyWorld((20, 8))


def test_bad_world_arguments():
    from kairo.fly import FlyWorld

    with pytest.raises(ConfigError, match="outside"):
        FlyWorld((0, 200))
    with pytest.raises(ConfigError, match="timestep"):
        FlyWorld((20, 8), timestep=1e-3)
    with pytest.raises(ConfigError, match="1 mm"):
        FlyWorld((0.1, 0))


# ---------------------------------------------------------------- the live viewer under Xvfb
def _start_xvfb():
    exe = shutil.which("Xvfb")
    if exe is None:
        pytest.skip("Xvfb is not installed (Debian: apt-get install xvfb); the viewer test "
                    "needs a virtual display")
    # -displayfd: Xvfb picks a free display itself and writes its number to the pipe
    r, w = os.pipe()
    proc = subprocess.Popen([exe, "-displayfd", str(w), "-screen", "0", "800x600x24",
                             "-nolisten", "tcp"], pass_fds=(w,), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    os.close(w)
    with os.fdopen(r) as f:
        number = f.readline().strip()
    if not number.isdigit():
        proc.terminate()
        pytest.skip("Xvfb did not start (no display number reported)")
    return proc, f":{number}"


def _stop_xvfb(proc):
    proc.terminate()             # SIGTERM lets Xvfb remove its lock file; SIGKILL would not
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.mark.slow
def test_viewer_under_xvfb_shows_the_fly(tmp_path, data_dir):
    from PIL import Image

    proc, display = _start_xvfb()
    try:
        shot = tmp_path / "viewer.png"
        env = {**os.environ, "DISPLAY": display}
        r = subprocess.run([sys.executable, "-m", "kairo.cli", "--data-dir", str(data_dir),
                            "fly", "view", "--duration", "0.04", "--no-keep-open",
                            "--output", str(shot)], env=env, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        assert f"screenshot: {shot}" in r.stdout and "turning index" in r.stdout
        img = np.asarray(Image.open(shot).convert("RGB"), dtype=float)
        assert img.std() > 10                     # not blank
        assert (img.sum(axis=2) > 30).mean() > 0.2   # a good part of the screen is drawn
    finally:
        _stop_xvfb(proc)


def test_viewer_without_display_says_how_to_get_one(monkeypatch, cfg):
    from kairo.fly import ViewConfig, run_viewer

    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    with pytest.raises(KairoError, match="xvfb-run"):
        run_viewer(ViewConfig(duration=SHORT))
