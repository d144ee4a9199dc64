"""The configs of ``kairo reservoir …`` (torch-free: the CLI builds them before any heavy
import). Each field carries its help text and accepted values; every config checks itself in
``__post_init__``, however it is built (API, file, flags).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from kairo._config import check_fields, option
from kairo._errors import ConfigError
from kairo._jobs import EXECUTORS

__all__ = ["ConnectomeSource", "SignSettings", "ReservoirSettings", "RunConfig", "CompareConfig",
           "SweepConfig", "PropagateConfig", "ScreenConfig", "LIFParams", "LIFSettings",
           "ACTIVATIONS", "ENGINES", "DEVICES", "INPUT_WEIGHTS", "DTYPES", "SWEEP_PARAMS",
           "DYNAMICS", "SPIKING_ENGINES"]

# the engine's vocabulary (kairo.reservoir.Reservoir checks its arguments against these)
ACTIVATIONS = ("tanh", "linear")
ENGINES = ("auto", "scipy", "torch", "numba")
DEVICES = ("auto", "cpu", "cuda")
INPUT_WEIGHTS = ("uniform", "positive", "constant")
DTYPES = ("float64", "float32")
SWEEP_PARAMS = ("alpha", "spectral_radius", "leak", "input_gain", "bias")
DYNAMICS = ("rate", "lif")
SPIKING_ENGINES = ("auto", "numba", "torch")
STATES = ("counts", "trace")
# names of kairo.connectome and kairo.reservoir's tasks, repeated here so that building a config
# imports neither (tests/reservoir/test_config.py keeps them equal)
NORMALIZATIONS = ("none", "spectral", "row", "column")
SIGNS = ("auto", "excitatory", "dale", "given")
NULL_MODELS = ("rewire", "weight-shuffle", "random-topology", "gaussian")
TASK_NAMES = ("memory-capacity", "narma10", "mackey-glass", "lorenz", "sine-square")
CLASSIFICATION_TASKS = ("sine-square",)


@dataclass(frozen=True)
class LIFParams:
    """Parameters of the LIF network, in ms, mV and Hz: Shiu et al. 2024's values (their
    repository philshiu/Drosophila_brain_model, ``model.py``)."""

    tau_m: float = 20.0            # membrane time constant
    tau_syn: float = 5.0           # synaptic current time constant
    refractory: float = 2.2        # refractory period
    delay: float = 1.8             # synaptic transmission delay
    dt: float = 0.1                # time step
    v_rest: float = -52.0          # resting potential
    v_reset: float = -52.0         # potential after a spike
    v_threshold: float = -45.0     # spike threshold
    w_syn: float = 0.275           # mV per synapse
    input_weight: float = 68.75    # mV per input spike (Shiu: 250 · w_syn)
    input_refractory: float = 0.0  # refractory period of input-driven neurons (Shiu: 0)

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                raise ConfigError(f"{f.name}: expected a finite number, got {v!r}")
        for name in ("tau_m", "tau_syn", "dt"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name}: must be > 0 ms, got {getattr(self, name)}")
        for name in ("refractory", "input_refractory"):
            v = getattr(self, name)
            if v < 0:
                raise ConfigError(f"{name}: must be ≥ 0 ms, got {v}")
            if 0 < v < self.dt:
                raise ConfigError(f"{name}: {v} ms is shorter than the time step dt = "
                                  f"{self.dt} ms (make dt smaller or the period 0)")
        if self.delay < self.dt:
            raise ConfigError(f"delay: {self.delay} ms is shorter than the time step dt = "
                              f"{self.dt} ms (the delay must be at least one step)")
        if self.v_threshold <= self.v_reset:
            raise ConfigError(f"v_threshold ({self.v_threshold} mV) must be above v_reset "
                              f"({self.v_reset} mV)")

    def steps(self, ms: float) -> int:
        """A duration in whole steps (Brian2's rounding: ``int((t + 10⁻³·dt) / dt)``)."""
        return int((ms + 1e-3 * self.dt) / self.dt)

    @property
    def delay_steps(self) -> int:
        return int(round(self.delay / self.dt))

    def propagator(self) -> tuple[float, float, float]:
        """``(a_m, a_s, c)``: one exact step is v − v_rest ← a_m (v − v_rest) + c g,
        g ← a_s g."""
        a_m = math.exp(-self.dt / self.tau_m)
        a_s = math.exp(-self.dt / self.tau_syn)
        if math.isclose(self.tau_m, self.tau_syn, rel_tol=1e-12):
            c = self.dt / self.tau_m * a_m          # the limit τ_syn → τ_m
        else:
            c = self.tau_syn / (self.tau_syn - self.tau_m) * (a_s - a_m)
        return a_m, a_s, c


@dataclass(frozen=True)
class LIFSettings:
    """The LIF neuron of ``--dynamics lif`` (Shiu et al. 2024's values; see LIFParams)."""

    tau_m: float = option(LIFParams.tau_m, "LIF: membrane time constant (ms)")
    tau_syn: float = option(LIFParams.tau_syn, "LIF: synaptic current time constant (ms)")
    refractory: float = option(LIFParams.refractory, "LIF: refractory period (ms)")
    delay: float = option(LIFParams.delay, "LIF: synaptic transmission delay (ms)")
    dt: float = option(LIFParams.dt, "LIF: time step (ms)")
    v_rest: float = option(LIFParams.v_rest, "LIF: resting potential (mV)")
    v_reset: float = option(LIFParams.v_reset, "LIF: potential after a spike (mV)")
    v_threshold: float = option(LIFParams.v_threshold, "LIF: spike threshold (mV)")
    w_syn: float = option(LIFParams.w_syn, "LIF: mV added to the synaptic current per "
                          "synapse")
    input_weight: float = option(LIFParams.input_weight, "LIF: mV added to v per input spike "
                                 "(250 · w_syn: one input spike makes a spike)")
    input_refractory: float = option(LIFParams.input_refractory, "LIF: refractory period of "
                                     "input-driven neurons (ms; Shiu et al.: 0)")
    spiking_engine: str = option("auto", "LIF engine: numba (event-driven CPU), torch "
                                 "(batched trials, CUDA), auto (torch on a GPU, else numba)",
                                 choices=SPIKING_ENGINES)
    device: str = option("auto", "device of the torch engines: cpu, cuda or auto (cuda when "
                         "available)", choices=DEVICES)

    def lif_params(self) -> LIFParams:
        return LIFParams(**{f.name: getattr(self, f.name) for f in fields(LIFParams)})


@dataclass(frozen=True)
class SignSettings:
    """Which synapses inhibit (``kairo.connectome.prepare(signs=...)``)."""

    signs: str = option("auto", "auto (the connectome's own signs if it has any, e.g. "
                        "FlyWire's transmitters, else excitatory), excitatory (all positive), "
                        "dale (inhibitory neurons by row) or given (the connectome's own signs)",
                        choices=SIGNS)
    inhibitory_fraction: float = option(0.0, "with --signs dale: fraction of neurons drawn "
                                        "inhibitory", low=0, high=1)
    inhibitory_types: tuple[str, ...] = option((), "with --signs dale: comma-separated cell "
                                               "types made inhibitory")


@dataclass(frozen=True)
class ConnectomeSource:
    """Which connectome a command reads (the reservoir commands and the fly share these)."""

    connectome: str = option("winding2023", "registered name (winding2023) or a path: "
                             "FlyWire Codex's connections.csv.gz (with classification.csv.gz "
                             "and neurons.csv.gz beside it), Shiu et al.'s "
                             "Connectivity_783.parquet, neuPrint's "
                             "traced-total-connections.csv, the folder holding one, or a "
                             ".csv/.npz/.zip")
    compartment: str = option("all", "Winding 2023 compartment matrix",
                              choices=("all", "aa", "ad", "da", "dd"))
    data_dir: str = option("", "data directory (default: $KAIRO_DATA_DIR, else the user "
                           "cache dir)")
    min_synapses: int = option(1, "FlyWire Codex: keep a pair of neurons only with at least "
                               "this many synapses over all neuropils (Codex's own "
                               "downloads: 5)", low=1)


@dataclass(frozen=True)
class ReservoirSettings(SignSettings, LIFSettings, ConnectomeSource):
    """How a connectome becomes a reservoir (shared by the reservoir commands)."""

    dynamics: str = option("rate", "rate (tanh/linear units on the normalized connectome) or "
                           "lif (a liquid state machine: spiking neurons on synapse counts, "
                           "the input as Poisson rates)", choices=DYNAMICS)
    norm: str = option("spectral", "connectome normalization: none, spectral (to "
                       "--spectral-radius), row (out-weights sum to 1), column",
                       choices=NORMALIZATIONS)
    spectral_radius: float = option(0.9, "target spectral radius for --norm spectral",
                                    above=0)
    alpha: float = option(1.0, "global gain applied after normalization")
    activation: str = option("tanh", "neuron nonlinearity", choices=ACTIVATIONS)
    leak: float = option(1.0, "leak rate a in (0, 1]: x ← (1−a)x + a·f(…); 1 = no leak",
                         above=0, high=1)
    input_gain: float = option(1.0, "scale of the input weights")
    bias: float = option(0.0, "constant added to every neuron's input")
    input_weights: str = option("uniform", "input weights: uniform U(−1, 1), positive "
                                "U(0, 1) or constant 1 (times --input-gain)",
                                choices=INPUT_WEIGHTS)
    input_group: str = option("sensory", "neurons receiving input, e.g. sensory, sensory:L, "
                              "'celltype=PN;side=R'")
    readout_group: str = option("all", "neurons the readout reads (all, DN-VNC, "
                                "DN-VNC+DN-SEZ, …)")
    engine: str = option("auto", "reservoir engine: scipy (sparse CPU), torch, numba "
                         "(compiled CPU kernels) or auto (torch on a GPU, else numba)",
                         choices=ENGINES)
    device: str = option("auto", "device of the torch engine: cpu, cuda or auto (cuda when "
                         "available)", choices=DEVICES)
    dtype: str = option("float64", "floating-point type of the states", choices=DTYPES)
    input_rate: float = option(100.0, "--dynamics lif: Poisson rate (Hz) of an input neuron "
                               "at input 0", low=0)
    rate_gain: float = option(200.0, "--dynamics lif: rate change (Hz) per unit of input "
                              "(times the input weight; rates clipped at 0)")
    step_ms: float = option(10.0, "--dynamics lif: simulated time per task step (ms)",
                            above=0)
    lsm_states: str = option("trace", "--dynamics lif: readout states: spike counts per "
                             "step or spike traces filtered by --trace-tau", choices=STATES)
    trace_tau: float = option(50.0, "--dynamics lif: time constant of the spike traces (ms)",
                              above=0)
    seed: int = option(0, "the run's seed (input weights, task series, Dale signs, null "
                       "models, Poisson input)")

    def __post_init__(self):
        check_fields(self)
        self.lif_params()
        if self.dynamics == "lif" and self.spiking_engine == "torch":
            raise ConfigError("spiking_engine: the liquid state machine (--dynamics lif) is one "
                              "long trial on the numba engine; torch runs batches of trials "
                              "(propagate, screen)")
        if self.dynamics == "lif" and self.step_ms < self.dt:
            raise ConfigError(f"step_ms ({self.step_ms} ms) must be at least one time step "
                              f"dt ({self.dt} ms)")
        if self.engine in ("scipy", "numba") and self.device == "cuda":
            raise ConfigError("device: cuda needs --engine torch or auto (the scipy and numba "
                              "engines run on the CPU)")


@dataclass(frozen=True)
class RunConfig(ReservoirSettings):
    """One reservoir on one task."""

    task: str = option("memory-capacity", f"reservoir task: {', '.join(TASK_NAMES)}, or "
                       "ngym:<Name> for a NeuroGym task (PerceptualDecisionMaking, "
                       "ContextDecisionMaking, DelayMatchSample, GoNogo, …)")
    n_train: int = option(4000, "training steps (after the washout)", low=1)
    n_test: int = option(1000, "test steps", low=1)
    washout: int = option(500, "initial steps discarded before training", low=0)
    max_delay: int = option(100, "memory-capacity: largest delay k recalled", low=1)
    horizon: int | None = option(None, "prediction horizon in steps (default: 84 for "
                                 "mackey-glass, 25 for lorenz)", low=1)
    period: int = option(8, "sine-square: steps per sine or square segment", low=2)
    cv: int = option(5, "contiguous cross-validation folds that choose the ridge penalty",
                     low=1)
    readout: str = option("ridge", "readout: ridge, or logistic (classification tasks)",
                          choices=("ridge", "logistic"))
    ngym_dt: float = option(100.0, "ngym tasks: ms per task step (NeuroGym's dt)", above=0)
    ngym_timing: tuple[str, ...] = option((), "ngym tasks: comma-separated period=ms "
                                          "durations, e.g. stimulus=500,decision=200")
    ngym_sigma: float | None = option(None, "ngym tasks: input noise sd (the task's default "
                                      "if unset)", low=0)
    ngym_cohs: tuple[float, ...] = option((), "ngym tasks with coherences "
                                          "(PerceptualDecisionMaking): comma-separated "
                                          "coherence levels")

    def __post_init__(self):
        super().__post_init__()
        if self.task not in TASK_NAMES and not (self.task.startswith("ngym:")
                                                and len(self.task) > len("ngym:")):
            raise ConfigError(f"task: expected one of {', '.join(TASK_NAMES)} or "
                              f"ngym:<NeuroGym task>, got {self.task!r}")
        if self.readout == "logistic" and not (self.task in CLASSIFICATION_TASKS
                                               or self.task.startswith("ngym:")):
            raise ConfigError(f"readout: logistic needs a classification task "
                              f"({', '.join(CLASSIFICATION_TASKS)}), got task {self.task!r}")


@dataclass(frozen=True)
class CompareConfig(RunConfig):
    """The real connectome against null models on one task."""

    nulls: int = option(20, "null-model replicates per null model (≥ 2, to estimate a "
                        "spread)", low=2)
    null_models: tuple[str, ...] = option(NULL_MODELS, "comma-separated null models",
                                          choices=NULL_MODELS)
    workers: int = option(0, "parallel worker processes, one condition (the real connectome "
                          "or one null replicate) each (0: one per core)", low=0)
    executor: str = option("auto", "auto (Ray when RAY_ADDRESS is set, else processes), "
                           "processes, ray, serial", choices=EXECUTORS)

    def __post_init__(self):
        super().__post_init__()
        if not self.null_models:
            raise ConfigError("null_models must name at least one null model")


@dataclass(frozen=True)
class SweepConfig(CompareConfig):
    """A metric against one parameter, real connectome vs null models."""

    param: str = option("alpha", "parameter to sweep", choices=SWEEP_PARAMS)
    values: tuple[float, ...] = option((0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0),
                                       "comma-separated parameter values")
    nulls: int = option(3, "null-model replicates per null model (≥ 2, to estimate a "
                        "spread; drawn from the same seeds at every value)", low=2)
    null_models: tuple[str, ...] = option(("rewire", "gaussian"), "comma-separated null "
                                          "models", choices=NULL_MODELS)

    def __post_init__(self):
        super().__post_init__()
        if self.dynamics == "lif":
            raise ConfigError("dynamics: reservoir sweep runs rate units only; sweep a spiking "
                              "reservoir's options (--w-syn, --input-rate, …) with kairo sweep "
                              "over reservoir compare --dynamics lif")
        if not self.values:
            raise ConfigError("values must hold at least one number")
        checks = {"leak": (lambda v: 0 < v <= 1, "in (0, 1]"),
                  "spectral_radius": (lambda v: v > 0, "> 0")}
        if self.param in checks:
            ok, text = checks[self.param]
            bad = [v for v in self.values if not ok(v)]
            if bad:
                raise ConfigError(f"values: {self.param} must be {text}, got {bad[0]}")


@dataclass(frozen=True)
class PropagateConfig(SignSettings, LIFSettings, ConnectomeSource):
    """Stimulate left or right sensory neurons and watch descending neurons respond."""

    dynamics: str = option("rate", "rate (tanh/linear units, constant input, every "
                           "--norms) or lif (spiking neurons on synapse counts, Poisson input "
                           "at each --rates)", choices=DYNAMICS)
    norms: tuple[str, ...] = option(("spectral", "row"), "comma-separated normalizations to "
                                    "compare", choices=NORMALIZATIONS)
    spectral_radius: float = option(0.9, "target spectral radius for the spectral "
                                    "normalization", above=0)
    activation: str = option("tanh", "neuron nonlinearity", choices=ACTIVATIONS)
    steps: int = option(20, "steps of constant stimulation", low=1)
    stimulus: float = option(1.0, "input to each stimulated neuron per step")
    rates: tuple[float, ...] = option((25.0, 50.0, 100.0, 150.0, 200.0), "--dynamics lif: "
                                      "comma-separated Poisson rates (Hz) into each "
                                      "stimulated neuron", low=0)
    duration_ms: float = option(1000.0, "--dynamics lif: simulated time per trial (ms)",
                                above=0)
    trials: int = option(5, "--dynamics lif: trials per rate and side (independent Poisson "
                         "input)", low=1)
    stim_group: str = option("sensory", "cell type stimulated on the left or the right (a "
                             "group without a side)")
    record_groups: tuple[str, ...] = option(("DN-VNC", "DN-SEZ"), "comma-separated cell types "
                                            "whose L/R activity is reported")
    convention: str = option("pre-to-post", "pre-to-post (biological) or reversed (post → "
                             "pre, labelled as such)", choices=("pre-to-post", "reversed"))
    seed: int = option(0, "the run's seed (Poisson input, Dale signs; the rate dynamics are "
                       "deterministic)")

    def __post_init__(self):
        check_fields(self)
        self.lif_params()
        if not self.norms:
            raise ConfigError("norms must name at least one normalization")
        if not self.record_groups:
            raise ConfigError("record_groups must name at least one cell type")
        if self.dynamics == "lif" and not self.rates:
            raise ConfigError("rates must name at least one Poisson rate")


@dataclass(frozen=True)
class ScreenConfig(SignSettings, LIFSettings, ConnectomeSource):
    """An activation screen (Shiu et al. 2024): stimulate one group with Poisson spikes and
    rank every neuron by how much its rate rises over baseline."""

    stimulate: str = option("celltype=sensory;annotation=olfactory;side=L", "the activated "
                            "neurons: a group (sensory:L, 'celltype=PN;side=R', on FlyWire "
                            "'class=olfactory;side=left') or @file of neuron ids")
    rate: float = option(150.0, "Poisson rate (Hz) into each activated neuron (Shiu et al.: "
                         "150)", above=0)
    stimulate2: str = option("", "a second activated group, at --rate2 (Shiu's two-frequency "
                             "experiment; empty: none)")
    rate2: float = option(0.0, "Poisson rate (Hz) into each neuron of --stimulate2", low=0)
    silence: str = option("", "neurons silenced in every trial: their synapses onto other "
                          "neurons are removed, as Shiu et al.'s model does (a group or @file; "
                          "empty: none)")
    exp_name: str = option("screen", "the experiment's name in spikes.parquet (the exp_name "
                           "column of Shiu et al.'s spike tables)")
    background_group: str = option("", "neurons given background Poisson input in every "
                                   "trial, stimulated and baseline (empty: none, so baseline "
                                   "rates are 0)")
    background_rate: float = option(0.0, "Poisson rate (Hz) into --background-group", low=0)
    trials: int = option(30, "trials with stimulation, and as many baseline trials", low=2)
    duration_ms: float = option(1000.0, "simulated time per trial (ms)", above=0)
    alpha_fdr: float = option(0.05, "false discovery rate of the responding neurons "
                              "(Benjamini–Hochberg over all neurons)", above=0, high=1)
    top: int = option(40, "neurons shown in the raster", low=1)
    seed: int = option(0, "the run's seed (Poisson input, Dale signs)")

    def __post_init__(self):
        check_fields(self)
        self.lif_params()
        if self.background_rate > 0 and not self.background_group:
            raise ConfigError("background_rate needs --background-group (the neurons it "
                              "drives)")
        if bool(self.stimulate2) != (self.rate2 > 0):
            raise ConfigError("stimulate2 and rate2 go together: a second group needs a rate "
                              "> 0 and a second rate needs --stimulate2")
        if not self.exp_name.strip():
            raise ConfigError("exp_name must not be empty")
