"""The embodied loop without physics: sensing, connectome brain, motor map, controllers,
trial statistics and configuration checks (no flygym / MuJoCo needed)."""

import dataclasses
import math
import os

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy import stats

from kairo import ConfigError, KairoError, SelectionError
from kairo.connectome import Connectome, prepare
from kairo.fly import (ACTION_RANGE, ConnectomeBrain, FlyConfig, MotorMap, OdorSensing,
                            TrialsConfig, ViewConfig, make_controller, odor_contrast,
                            summarize_trials, trial_plan, turning_index)
from kairo.fly._experiments import (BraitenbergController, BrainController,
                                         ConstantController, check_output_path, trial_metrics)

SENSORY_L = "celltype=sensory;annotation=olfactory;side=L"
SENSORY_R = "celltype=sensory;annotation=olfactory;side=R"


def _odor(left: float, right: float, dims: int = 1) -> np.ndarray:
    """flygym-style readings: palp and antenna equal on each side."""
    return np.tile([left, right, left, right], (dims, 1)).astype(float)


def _cfg(**kw) -> FlyConfig:
    return FlyConfig(data_dir=os.environ["KAIRO_DATA_DIR"], **kw)


# ---------------------------------------------------------------------------- sensing
def test_action_range():
    assert ACTION_RANGE == (-0.5, 1.5)


def test_intensities_weighted_average_per_side():
    s = OdorSensing(palp_antenna_weights=(1.0, 9.0))
    # order along axis 1: L palp, R palp, L antenna, R antenna
    odor = np.array([[2.0, 4.0, 10.0, 20.0]])
    np.testing.assert_allclose(s.intensities(odor), [(2 + 9 * 10) / 10, (4 + 9 * 20) / 10])
    # the palps alone, the antennae alone
    np.testing.assert_allclose(OdorSensing(palp_antenna_weights=(1, 0)).intensities(odor),
                               [2.0, 4.0])
    np.testing.assert_allclose(OdorSensing(palp_antenna_weights=(0, 3)).intensities(odor),
                               [10.0, 20.0])


def test_intensities_reads_the_selected_odor_dim():
    odor = np.array([[1.0, 1.0, 1.0, 1.0], [5.0, 0.0, 15.0, 10.0]])
    s = OdorSensing(palp_antenna_weights=(1, 1), odor_dim=1)
    np.testing.assert_allclose(s.intensities(odor), [10.0, 5.0])
    np.testing.assert_allclose(OdorSensing(palp_antenna_weights=(1, 1)).intensities(odor),
                               [1.0, 1.0])


@pytest.mark.parametrize("shape", [(4,), (1, 3), (2, 4, 1), (0, 4)])
def test_intensities_rejects_bad_shape(shape):
    with pytest.raises(KairoError, match="odor readings must have shape"):
        OdorSensing().intensities(np.ones(shape))


def test_intensities_rejects_missing_odor_dim():
    with pytest.raises(KairoError, match="odor dims > 1"):
        OdorSensing(odor_dim=1).intensities(np.ones((1, 4)))


def test_relative_drive_known_values_and_invariants():
    s = OdorSensing(gain=20.0, offset=1.0, mode="relative")
    # I = (3, 1): mean 2, relative (0.5, −0.5)
    np.testing.assert_allclose(s.drive([3.0, 1.0]), [1 + 20 * 0.5, 1 - 20 * 0.5])
    # equal sides: exactly the tonic offset
    assert np.array_equal(s.drive([0.7, 0.7]), [1.0, 1.0])
    # zero readings: the offset, no division by zero
    assert np.array_equal(s.drive([0.0, 0.0]), [1.0, 1.0])
    # scale invariance: approaching the source does not change the drive
    rng = np.random.default_rng(0)
    for lr in rng.uniform(0.01, 5.0, (20, 2)):
        np.testing.assert_allclose(s.drive(lr * 10.0), s.drive(lr), rtol=1e-12, atol=1e-12)
        # the two sides always sum to twice the offset
        assert s.drive(lr).sum() == pytest.approx(2.0, abs=1e-12)


def test_absolute_drive():
    s = OdorSensing(gain=3.0, offset=0.5, mode="absolute")
    np.testing.assert_allclose(s.drive([2.0, 1.0]), [6.5, 3.5])
    np.testing.assert_array_equal(s.drive([0.0, 0.0]), [0.5, 0.5])
    np.testing.assert_allclose(s.drive([20.0, 10.0]), [60.5, 30.5])   # not scale invariant


@pytest.mark.parametrize("kw,fragment", [
    ({"mode": "log"}, "sensing mode"),
    ({"palp_antenna_weights": (-1.0, 2.0)}, "palp_antenna_weights"),
    ({"palp_antenna_weights": (0.0, 0.0)}, "palp_antenna_weights"),
    ({"palp_antenna_weights": (1.0, 2.0, 3.0)}, "palp_antenna_weights"),
    ({"gain": float("nan")}, "gain"),
    ({"offset": float("inf")}, "offset"),
])
def test_sensing_rejects_bad_config(kw, fragment):
    with pytest.raises(ConfigError, match=fragment):
        OdorSensing(**kw)


@pytest.mark.parametrize("lr,expected", [((3.0, 1.0), 1.0), ((1.0, 3.0), -1.0),
                                         ((1.0, 0.0), 2.0), ((2.0, 2.0), 0.0),
                                         ((0.0, 0.0), 0.0), ((1.1, 0.9), 0.2)])
def test_odor_contrast(lr, expected):
    c = odor_contrast(np.array(lr))
    assert isinstance(c, float)
    assert c == pytest.approx(expected, abs=1e-12)


# ---------------------------------------------------------------------------- motor map
def test_motor_map_known_values():
    ipsi = MotorMap(gain=2.0, base=1.0, wiring="ipsilateral", reference=(0.5, 0.5), scale=0.5)
    # z = (d − d0)/scale = (0.4, 0.2); W z = ½(0.2, −0.2)
    np.testing.assert_allclose(ipsi([0.7, 0.6]), [1.2, 0.8], atol=1e-12)
    crossed = MotorMap(gain=2.0, base=1.0, wiring="crossed", reference=(0.5, 0.5), scale=0.5)
    np.testing.assert_allclose(crossed([0.7, 0.6]), [0.8, 1.2], atol=1e-12)


def test_motor_map_turning_direction():
    d = np.array([1.2, 1.0])                       # more left activity
    a = MotorMap(gain=1.0, wiring="ipsilateral")(d)
    assert a[0] > a[1]                             # left legs harder: turns right
    b = MotorMap(gain=1.0, wiring="crossed")(d)
    assert b[1] > b[0]                             # right legs harder: turns left
    np.testing.assert_allclose(a, b[::-1])         # mirror images


def test_motor_map_equal_signals_give_base():
    m = MotorMap(gain=30.0, base=0.8, wiring="crossed", reference=(0.3, 0.3), scale=0.25)
    for v in (-3.0, 0.0, 0.2, 7.0):
        np.testing.assert_allclose(m([v, v]), [0.8, 0.8], atol=1e-12)
    # with unequal references it is the signal at the reference that walks straight
    m = MotorMap(gain=30.0, base=0.8, wiring="crossed", reference=(0.2, 0.3), scale=0.25)
    np.testing.assert_allclose(m([0.2, 0.3]), [0.8, 0.8], atol=1e-12)
    np.testing.assert_allclose(m([1.2, 1.3]), [0.8, 0.8], atol=1e-12)


def test_motor_map_is_affine_and_ignores_common_mode():
    m = MotorMap(gain=0.3, base=0.9, wiring="ipsilateral", reference=(0.1, -0.2), scale=2.0)
    rng = np.random.default_rng(1)
    zero = m(np.zeros(2))
    for a, b in rng.uniform(-1, 1, (10, 2, 2)):
        out = m(a + b)
        assert np.all((out > ACTION_RANGE[0]) & (out < ACTION_RANGE[1]))   # not clipped
        np.testing.assert_allclose(out, m(a) + m(b) - zero, atol=1e-12)
        np.testing.assert_allclose(m(a + 5.0), m(a), atol=1e-12)


def test_motor_map_is_clipped_to_action_range():
    m = MotorMap(gain=100.0, base=1.0, wiring="ipsilateral")
    np.testing.assert_array_equal(m([10.0, 0.0]), [1.5, -0.5])
    np.testing.assert_array_equal(m([0.0, 10.0]), [-0.5, 1.5])
    np.testing.assert_array_equal(MotorMap(base=5.0)([0.0, 0.0]), [1.5, 1.5])


@pytest.mark.parametrize("kw,fragment", [
    ({"wiring": "both"}, "wiring"),
    ({"scale": 0.0}, "scale"),
    ({"scale": -1.0}, "scale"),
    ({"scale": float("nan")}, "scale"),
    ({"gain": float("inf")}, "gain"),
])
def test_motor_map_rejects_bad_config(kw, fragment):
    with pytest.raises(ConfigError, match=fragment):
        MotorMap(**kw)


# ---------------------------------------------------------------------------- brain
def _chain(n: int = 5) -> Connectome:
    """0 = sensory L → 2 = inter → 3 = DN L; 1 = sensory R and 4 = DN R are unconnected."""
    w = sp.csr_matrix(([1.0, 1.0], ([0, 2], [2, 3])), shape=(n, n))
    return Connectome(w, name="chain")


def _chain_brain(**kw) -> ConnectomeBrain:
    return ConnectomeBrain(_chain(), sensory=(np.array([0]), np.array([1])),
                           descending=(np.array([3]), np.array([4])), **kw)


def test_chain_brain_known_topology():
    brain = _chain_brain(steps=10)
    np.testing.assert_array_equal(brain.reset(0.0), [0.0, 0.0])
    out = brain.step(np.array([1.0, 0.0]))
    # sensory L is tanh(1) from step 1; DN L is tanh(tanh(tanh(1))) from step 3: 8 of 10 steps
    np.testing.assert_allclose(out, [math.tanh(1.0), 0.0,
                                     0.8 * math.tanh(math.tanh(math.tanh(1.0))), 0.0],
                               rtol=1e-12)
    assert out[2] > 0 and out[3] == 0.0

    brain.reset(0.0)
    out = brain.step(np.array([0.0, 1.0]))     # right side has no path to a DN
    np.testing.assert_allclose(out, [0.0, math.tanh(1.0), 0.0, 0.0], atol=0)


def test_chain_brain_settles_to_fixed_point():
    brain = _chain_brain(steps=4, settle_steps=50)
    base = brain.reset(1.0)
    np.testing.assert_allclose(base, [math.tanh(math.tanh(math.tanh(1.0))), 0.0], rtol=1e-12)
    np.testing.assert_array_equal(brain.baseline, base)
    np.testing.assert_allclose(brain.step(np.ones(2))[2:], base, rtol=1e-12)


def test_overlapping_sensory_groups_receive_both_channels():
    w = sp.csr_matrix((3, 3))
    brain = ConnectomeBrain(Connectome(w), sensory=(np.array([0]), np.array([0, 1])),
                            descending=(np.array([2]), np.array([2])), steps=3,
                            activation="linear", settle_steps=0)
    out = brain.step(np.array([2.0, 0.5]))
    # neuron 0 is in both groups: 2 + 0.5; neuron 1 only in the right one: 0.5
    np.testing.assert_allclose(out, [2.5, (2.5 + 0.5) / 2, 0.0, 0.0], atol=1e-12)


def test_brain_rejects_empty_group_and_bad_steps(small):
    ok = (np.array([0]), np.array([1]))
    with pytest.raises(SelectionError, match="sensory group for side R"):
        ConnectomeBrain(small, sensory=(np.array([0]), np.array([], dtype=int)), descending=ok)
    with pytest.raises(SelectionError, match="descending group for side L"):
        ConnectomeBrain(small, sensory=ok, descending=([], np.array([2])))
    with pytest.raises(ConfigError, match="steps"):
        ConnectomeBrain(small, sensory=ok, descending=ok, steps=0)


@pytest.fixture(scope="module")
def winding_brain_parts(winding):
    c = prepare(winding, norm="row")
    groups = [winding.group(s) for s in (SENSORY_L, SENSORY_R, "DN-VNC:L", "DN-VNC:R")]
    return c, groups


def _winding_brain(parts) -> ConnectomeBrain:
    c, (sl, sr, dl, dr) = parts
    return ConnectomeBrain(c, sensory=(sl, sr), descending=(dl, dr), steps=10)


def test_winding_brain_steady_state_and_response(winding_brain_parts):
    brain = _winding_brain(winding_brain_parts)
    base = brain.reset(1.0)
    assert base.shape == (2,) and np.all(base > 0)
    for _ in range(3):                            # the tonic drive keeps it where it settled
        np.testing.assert_allclose(brain.step(np.ones(2))[2:], base, rtol=0, atol=1e-9)
    out = brain.step(np.array([21.0, 1.0]))       # a stronger left drive
    assert out[0] > out[1]                        # left sensory neurons more active
    assert np.max(np.abs(out[2:] - base)) > 1e-6  # and the DNs respond


def test_winding_brain_deterministic(winding_brain_parts):
    drives = np.random.default_rng(3).uniform(0, 5, (5, 2))
    outs = []
    for _ in range(2):
        brain = _winding_brain(winding_brain_parts)
        outs.append(np.concatenate([brain.reset(1.0)] + [brain.step(d) for d in drives]))
    np.testing.assert_array_equal(outs[0], outs[1])
    # reset restarts from scratch: a reused brain repeats itself
    brain = _winding_brain(winding_brain_parts)
    first = np.concatenate([brain.reset(1.0)] + [brain.step(d) for d in drives])
    again = np.concatenate([brain.reset(1.0)] + [brain.step(d) for d in drives])
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first, outs[0])


# ---------------------------------------------------------------------------- controllers
def test_constant_controller_ignores_odor():
    cfg = _cfg(motor_base=0.7)
    ctl = make_controller(cfg, "constant")
    assert isinstance(ctl, ConstantController)
    for odor in (_odor(5.0, 1.0), _odor(1.0, 5.0), _odor(0.0, 0.0)):
        action, signals = ctl(odor)
        np.testing.assert_array_equal(action, [0.7, 0.7])
        assert signals["odor_L"] == odor[0, 0] and signals["odor_R"] == odor[0, 1]
    a, _ = ctl(_odor(1, 1))
    a[:] = 0                                      # the returned action is a copy
    np.testing.assert_array_equal(ctl(_odor(1, 1))[0], [0.7, 0.7])
    np.testing.assert_array_equal(make_controller(_cfg(motor_base=3.0), "constant")(
        _odor(1, 1))[0], [1.5, 1.5])


def test_braitenberg_turning_direction_and_values():
    cfg = _cfg()                 # sensing gain 50, offset 1; braitenberg gain 2; base 1
    crossed = make_controller(cfg, "braitenberg", "crossed")
    ipsi = make_controller(cfg, "braitenberg", "ipsilateral")
    assert isinstance(crossed, BraitenbergController)
    left_strong = _odor(1.001, 0.999)
    a, signals = crossed(left_strong)
    assert a[1] > a[0]           # crossed: speeds the right legs, turns toward the left
    # drive = 1 ± 50·0.001; action = 1 + 2·½·(∓0.1)
    np.testing.assert_allclose([signals["drive_L"], signals["drive_R"]], [1.05, 0.95])
    np.testing.assert_allclose(a, [0.9, 1.1], atol=1e-9)
    b, _ = ipsi(left_strong)
    assert b[0] > b[1]
    np.testing.assert_allclose(b, [1.1, 0.9], atol=1e-9)
    # equal odor: straight ahead, whatever the concentration
    for v in (0.0, 0.01, 100.0):
        np.testing.assert_allclose(crossed(_odor(v, v))[0], [1.0, 1.0], atol=1e-12)


@pytest.mark.winding
def test_connectome_controller_equal_odor_walks_straight():
    cfg = _cfg()
    ctl = make_controller(cfg, "connectome")
    assert isinstance(ctl, BrainController) and ctl.uses_brain and ctl.name == "connectome"
    ctl.reset()
    assert ctl.motor.scale == pytest.approx(np.mean(np.abs(ctl.motor.reference)))
    for v in (1.0, 0.3, 50.0):
        action, signals = ctl(_odor(v, v))
        np.testing.assert_allclose(action, [cfg.motor_base, cfg.motor_base], atol=1e-6)
        np.testing.assert_allclose([signals["dn_L"], signals["dn_R"]], ctl.motor.reference,
                                   atol=1e-9)
    # a left-biased odor changes the action (the brain is not silent)
    action, _ = ctl(_odor(1.2, 0.8))
    assert np.max(np.abs(action - cfg.motor_base)) > 1e-3


@pytest.mark.winding
def test_connectome_controller_fixed_scale():
    ctl = make_controller(_cfg(motor_scale=0.5), "connectome")
    ctl.reset()
    assert ctl.motor.scale == 0.5


@pytest.mark.winding
def test_make_controller_errors():
    cfg = _cfg()
    with pytest.raises(ConfigError, match="unknown controller 'nope'"):
        make_controller(cfg, "nope")
    bad = _cfg(descending_left="celltype=DN-VNC;annotation=olfactory;side=L")
    with pytest.raises(KairoError, match="no neuron"):
        make_controller(bad, "connectome")


# ---------------------------------------------------------------------------- statistics
def _traj(heading, contrast, dt=0.02, t0=0.0):
    n = len(heading)
    return pd.DataFrame({"t": t0 + dt * np.arange(n), "heading": heading, "contrast": contrast})


def _steered(contrast, rate=1.0, h0=0.0, dt=0.02):
    """Heading that turns at ``rate · contrast`` (counter-clockwise when positive)."""
    h = h0 + np.concatenate([[0.0], np.cumsum(rate * np.asarray(contrast)[:-1] * dt)])
    return (h + np.pi) % (2 * np.pi) - np.pi


def test_turning_index_toward_and_away():
    c = np.random.default_rng(5).uniform(-1, 1, 60)
    assert turning_index(_traj(_steered(c, 2.0), c)) == pytest.approx(1.0, abs=1e-9)
    assert turning_index(_traj(_steered(c, -2.0), c)) == pytest.approx(-1.0, abs=1e-9)
    noisy = _steered(c, 2.0) + np.random.default_rng(6).normal(0, 1e-3, 60)
    assert 0.9 < turning_index(_traj(noisy, c)) < 1.0


def test_turning_index_wraps_across_pi():
    # heading 3.1 → −3.1 is a small counter-clockwise turn, and back a small clockwise one
    h = np.array([3.1, -3.1] * 6)
    c = np.array([1.0, -1.0] * 6)
    assert turning_index(_traj(h, c, t0=0.2)) == pytest.approx(1.0, abs=1e-12)
    # a fast steady turn that crosses ±π many times
    c = np.random.default_rng(7).uniform(0.5, 1.5, 100)
    h = _steered(c, rate=50.0, h0=3.0)
    assert np.sum(np.abs(np.diff(h)) > np.pi) >= 5
    assert turning_index(_traj(h, c)) == pytest.approx(1.0, abs=1e-9)


def test_turning_index_excludes_the_settling_time():
    c = np.random.default_rng(8).uniform(-1, 1, 40)
    h = _steered(c, 1.0)
    h[:5] = [0.0, 2.0, -1.0, 3.0, 0.5]   # t < 0.1 s: whatever the legs do there is ignored
    assert turning_index(_traj(h, c)) == pytest.approx(1.0, abs=1e-9)


def test_turning_index_undefined_cases():
    assert math.isnan(turning_index(_traj([0.0, 0.1, 0.2], [1.0, -1.0, 1.0], t0=1.0)))
    c = np.full(30, 0.5)                                      # constant contrast
    assert math.isnan(turning_index(_traj(_steered(c), c)))
    c = np.random.default_rng(9).uniform(-1, 1, 30)           # straight walk
    assert math.isnan(turning_index(_traj(np.zeros(30), c)))


def test_trial_metrics_known_values():
    cfg = FlyConfig(success_radius=3.0)
    t = np.array([0.0, 0.05, 0.1, 0.2, 0.3])
    traj = pd.DataFrame({"t": t, "x": [0.0, 3.0, 3.0, 6.0, 6.0], "y": [0.0, 4.0, 4.0, 8.0, 9.0],
                         "heading": np.zeros(5), "contrast": np.zeros(5),
                         "distance": [10.0, 5.0, 4.0, 2.5, 1.0],
                         "bearing": np.radians([90.0, -60.0, 30.0, -10.0, 20.0])})
    m = trial_metrics(traj, (6.0, 8.0), cfg)
    assert m["initial_distance"] == pytest.approx(10.0)
    assert m["final_distance"] == 1.0 and m["min_distance"] == 1.0
    assert m["success"] is True and m["time_to_reach"] == pytest.approx(0.2)
    assert m["path_length"] == pytest.approx(5.0 + 0.0 + 5.0 + 1.0)
    assert m["mean_abs_bearing_deg"] == pytest.approx((30 + 10 + 20) / 3)
    assert m["final_abs_bearing_deg"] == pytest.approx(20.0)
    assert m["simulated_s"] == pytest.approx(0.3)
    assert math.isnan(m["turning_index"]) and m["diverged"] is False
    far = traj.assign(distance=traj["distance"] + 10)
    m = trial_metrics(far, (6.0, 8.0), cfg)
    assert m["success"] is False and math.isnan(m["time_to_reach"])


def test_trial_plan_reproducible_and_within_bounds():
    cfg = TrialsConfig(n=12, seed=3, odor_distance=25.0, odor_angle=60.0)
    a, b = trial_plan(cfg), trial_plan(cfg)
    pd.testing.assert_frame_equal(a, b)
    assert list(a["trial"]) == list(range(12))
    assert (a["odor_angle_deg"].abs() <= 60.0).all()
    np.testing.assert_allclose(np.hypot(a["odor_x"], a["odor_y"]), 25.0)
    np.testing.assert_allclose(np.degrees(np.arctan2(a["odor_y"], a["odor_x"])),
                               a["odor_angle_deg"])
    assert a["seed"].between(0, 2**31 - 2).all() and a["seed"].nunique() == 12
    other = trial_plan(TrialsConfig(n=12, seed=4, odor_distance=25.0, odor_angle=60.0))
    assert not np.allclose(other["odor_angle_deg"], a["odor_angle_deg"])
    assert (other["seed"] != a["seed"]).all()
    # trial i does not depend on how many trials are planned
    short = trial_plan(TrialsConfig(n=5, seed=3, odor_distance=25.0, odor_angle=60.0))
    pd.testing.assert_frame_equal(short, a.iloc[:5])
    # mirror pairs: trial 2k+1 is trial 2k reflected across the fly's start heading
    np.testing.assert_allclose(a["odor_angle_deg"].iloc[1::2].to_numpy(),
                               -a["odor_angle_deg"].iloc[0::2].to_numpy())
    assert (a["odor_angle_deg"].iloc[0::2] >= 0).all()
    straight = trial_plan(TrialsConfig(n=3, odor_angle=0.0))
    np.testing.assert_allclose(straight["odor_y"], 0.0)
    np.testing.assert_allclose(straight["odor_x"], 20.0)


def test_summarize_trials_exact():
    nan = float("nan")
    rows = []

    def add(controller, wiring, trial, success, dist, ttr, ti, bearing, diverged=False):
        rows.append({"controller": controller, "wiring": wiring, "trial": trial,
                     "success": success, "final_distance": dist, "time_to_reach": ttr,
                     "turning_index": ti, "final_abs_bearing_deg": bearing,
                     "diverged": diverged})

    for i, (d, ti, br) in enumerate([(20, 0.05, 90), (18, 0.1, 80), (22, -0.1, 100),
                                     (19, nan, 70)]):
        add("constant", "-", i, False, float(d), nan, ti, float(br))
    for i, (s, d, ttr, ti, br, dv) in enumerate([(True, 2.5, 1.0, 0.5, 5, False),
                                                 (True, 2.9, 1.5, 0.6, 10, False),
                                                 (False, 10.0, nan, 0.7, 40, True),
                                                 (True, 1.0, 0.5, 0.8, 3, False)]):
        add("braitenberg", "crossed", i, s, d, ttr, ti, float(br), dv)
    add("braitenberg", "ipsilateral", 0, False, 30.0, nan, -0.4, 120.0)
    add("braitenberg", "ipsilateral", 2, False, 25.0, nan, -0.6, 150.0)
    out = summarize_trials(pd.DataFrame(rows))

    assert list(zip(out.controller, out.wiring)) == [("constant", "-"),
                                                     ("braitenberg", "crossed"),
                                                     ("braitenberg", "ipsilateral")]
    const, crossed, ipsi = (out.iloc[i] for i in range(3))
    assert const["n"] == 4 and const["success_rate"] == 0.0
    assert const["final_distance_median"] == 19.5
    assert math.isnan(const["time_to_reach_median"])
    assert const["turning_index_mean"] == pytest.approx(0.05 / 3)
    assert math.isnan(const["vs_constant_distance_diff"])

    assert crossed["n"] == 4 and crossed["success_rate"] == 0.75
    assert crossed["final_distance_median"] == pytest.approx(2.7)
    assert crossed["final_distance_mean"] == pytest.approx(16.4 / 4)
    assert crossed["time_to_reach_median"] == 1.0
    assert crossed["turning_index_mean"] == pytest.approx(0.65)
    assert crossed["turning_index_sd"] == pytest.approx(np.std([0.5, 0.6, 0.7, 0.8], ddof=1))
    assert crossed["turning_index_p"] == pytest.approx(0.125)   # exact, all 4 positive
    assert crossed["final_bearing_deg_median"] == 7.5
    assert crossed["diverged"] == 1
    diffs = np.array([2.5 - 20, 2.9 - 18, 10 - 22, 1 - 19])
    assert crossed["vs_constant_distance_diff"] == pytest.approx(-16.3)
    assert crossed["vs_constant_p"] == pytest.approx(stats.wilcoxon(diffs).pvalue)

    # paired on the trials both have (0 and 2): differences 10 and 3
    assert ipsi["n"] == 2 and ipsi["vs_constant_distance_diff"] == pytest.approx(6.5)
    assert math.isnan(ipsi["vs_constant_p"]) and math.isnan(ipsi["turning_index_p"])
    assert ipsi["turning_index_mean"] == pytest.approx(-0.5)


# ---------------------------------------------------------------------------- configs
@pytest.mark.parametrize("kw,fragment", [
    ({"odor_x": 500.0}, "arena"),
    ({"odor_y": -150.0}, "arena"),
    ({"decision_interval": 1e-5}, "decision_interval"),
    ({"duration": 0.01}, "duration"),
    ({"duration": 0.0}, "duration must be > 0"),
    ({"timestep": float("nan")}, "timestep"),
    ({"controller": "nope"}, "controller: expected one of"),
    ({"wiring": "sideways"}, "wiring: expected one of"),
    ({"leak": 0.0}, "leak"),
    ({"inhibitory_fraction": 1.5}, "inhibitory_fraction"),
    ({"sensing_mode": "log"}, "sensing_mode"),
    ({"norm": "nope"}, "norm"),
    ({"brain_steps": 0}, "brain_steps"),
    ({"motor_scale": -1.0}, "motor_scale"),
])
def test_fly_config_validation(kw, fragment):
    with pytest.raises(ConfigError, match=fragment):
        FlyConfig(**kw)


def test_fly_config_defaults_and_physics_per_decision():
    cfg = FlyConfig()
    assert cfg.physics_per_decision == 200
    assert FlyConfig(decision_interval=1e-4).physics_per_decision == 1


@pytest.mark.parametrize("kw,fragment", [
    ({"controllers": ("nope",)}, "controllers: expected one of .*got 'nope'"),
    ({"wirings": ("sideways",)}, "wirings: expected one of .*got 'sideways'"),
    ({"controllers": ()}, "must not be empty"),
    ({"workers": -1}, "workers"),
    ({"n": 0}, "n must be"),
    ({"wirings": ()}, "must not be empty"),
    ({"odor_angle": 200.0}, "odor_angle"),
    ({"odor_distance": 200.0}, "odor_distance"),
    ({"executor": "threads"}, "executor"),
    ({"odor_x": 500.0}, "arena"),                 # the FlyConfig checks still run
])
def test_trials_config_validation(kw, fragment):
    with pytest.raises(ConfigError, match=fragment):
        TrialsConfig(**kw)


@pytest.mark.parametrize("kw,fragment", [
    ({"fps": 0}, "fps"),
    ({"frame_size": 32}, "frame_size"),
    ({"play_speed": 0.0}, "play_speed"),
    ({"odor_x": 500.0}, "arena"),
])
def test_video_config_validation(kw, fragment):
    with pytest.raises(ConfigError, match=fragment):
        FlyConfig(**kw)


def test_video_in_results_only_for_a_bare_name():
    assert not FlyConfig().video_in_results
    assert FlyConfig(video="fly.mp4").video_in_results
    assert not FlyConfig(video="./fly.mp4").video_in_results
    assert not FlyConfig(video="/tmp/fly.mp4").video_in_results


def test_only_fly_run_records_video():
    # a set of trials and the viewer record no video: the fields do not exist there
    for cls in (TrialsConfig, ViewConfig):
        names = {f.name for f in dataclasses.fields(cls)}
        assert not names & {"video", "fps", "play_speed", "frame_size"}


def test_config_choices_match_the_library():
    from kairo import _jobs
    from kairo.connectome import NORMALIZATIONS, SIGN_MODES

    fields = {f.name: f for f in dataclasses.fields(TrialsConfig)}
    assert fields["norm"].metadata["choices"] == NORMALIZATIONS
    assert fields["signs"].metadata["choices"] == SIGN_MODES
    assert fields["executor"].metadata["choices"] == _jobs.EXECUTORS


def test_configs_import_without_numpy():
    import subprocess
    import sys

    code = ("import sys, kairo.fly._commands, kairo.fly; "
            "print(sorted(m for m in ('numpy', 'pandas', 'torch', 'flygym', 'mujoco', "
            "'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_check_output_path(tmp_path):
    assert check_output_path(None, "video") is None
    assert check_output_path("", "video") is None
    p = tmp_path / "out.csv"
    assert check_output_path(str(p), "table") == p
    p.write_text("x")
    with pytest.raises(KairoError, match="already exists"):
        check_output_path(str(p), "table")
    assert check_output_path(str(p), "table", overwrite=True) == p
    missing = tmp_path / "no_such_folder"
    with pytest.raises(KairoError, match="no_such_folder") as exc:
        check_output_path(str(missing / "out.csv"), "table")
    assert "does not exist" in str(exc.value) and str(exc.value).startswith("table")
    with pytest.raises(KairoError, match="is a folder"):
        check_output_path(str(tmp_path), "table")


# ---------------------------------------------------------------------------- spiking brain
def _spiking_chain_brain(**kw):
    from kairo.fly import SpikingBrain
    from kairo.reservoir import LIFNetwork

    # 0 = sensory L → 2 → 3 = DN L with 200 synapses each (one spike makes the next one fire)
    w = sp.csr_matrix(([200.0, 200.0], ([0, 2], [2, 3])), shape=(5, 5))
    return SpikingBrain(LIFNetwork(w, engine="numba"), sensory=(np.array([0]), np.array([1])),
                        descending=(np.array([3]), np.array([4])), interval_ms=20.0, **kw)


def test_spiking_brain_rates_follow_the_drive_through_the_chain():
    brain = _spiking_chain_brain(rate_per_drive=100.0, filter_ms=1e-6, settle_ms=0.0)
    np.testing.assert_array_equal(brain.reset(0.0), [0.0, 0.0])       # no drive, no spikes
    out = np.array([brain.step(np.array([1.0, 0.0])) for _ in range(50)])   # 1 s at 100 Hz
    assert out[:, 0].mean() == pytest.approx(100.0, rel=0.25)       # sensory L at the rate
    assert (out[:, 1] == 0).all() and (out[:, 3] == 0).all()        # the right side is silent
    # DN L relays sensory L's spikes (200 synapses make a spike within a few ms), except
    # those that reach a relay still refractory or integrating the previous one
    assert 0.4 < out[:, 2].sum() / out[:, 0].sum() <= 1.0
    again = _spiking_chain_brain(rate_per_drive=100.0, filter_ms=1e-6, settle_ms=0.0)
    again.reset(0.0)
    np.testing.assert_array_equal(again.step(np.array([1.0, 0.0])), out[0])   # seeded


def test_spiking_brain_filters_descending_rates():
    brain = _spiking_chain_brain(rate_per_drive=200.0, filter_ms=100.0, settle_ms=0.0)
    brain.reset(0.0)
    dn = [brain.step(np.array([1.0, 0.0]))[2] for _ in range(30)]
    assert dn[0] < dn[-1]                                   # rises towards the rate, smoothly
    assert max(abs(np.diff(dn))) < 0.25 * max(dn)


def test_spiking_brain_and_config_errors(small):
    from kairo.fly import SpikingBrain
    from kairo.reservoir import LIFNetwork

    net = LIFNetwork(small, engine="numba")
    ok = (np.array([0]), np.array([1]))
    with pytest.raises(SelectionError, match="sensory"):
        SpikingBrain(net, sensory=(np.array([0]), np.array([], dtype=int)), descending=ok,
                     interval_ms=20.0)
    with pytest.raises(ConfigError, match="filter_ms"):
        SpikingBrain(net, sensory=ok, descending=ok, interval_ms=20.0, filter_ms=0.0)
    with pytest.raises(ConfigError, match="tau_m"):
        FlyConfig(dynamics="lif", tau_m=-1.0)
    with pytest.raises(ConfigError, match="rate_per_drive"):
        FlyConfig(dynamics="lif", rate_per_drive=0.0)
