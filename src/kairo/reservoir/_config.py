"""The configs of ``kairo reservoir …`` (torch-free: the CLI builds them before any heavy
import). Each field carries its help text and accepted values; every config checks itself in
``__post_init__``, however it is built (API, file, flags).
"""

from __future__ import annotations

from dataclasses import dataclass

from kairo._app import check_fields, option
from kairo._errors import ConfigError
from kairo._jobs import EXECUTORS

__all__ = ["ConnectomeSource", "ReservoirSettings", "RunConfig", "CompareConfig", "SweepConfig", "PropagateConfig",
           "ACTIVATIONS", "ENGINES", "DEVICES", "INPUT_WEIGHTS", "DTYPES", "SWEEP_PARAMS"]

# the engine's vocabulary (kairo.reservoir.Reservoir checks its arguments against these)
ACTIVATIONS = ("tanh", "linear")
ENGINES = ("auto", "scipy", "torch")
DEVICES = ("auto", "cpu", "cuda")
INPUT_WEIGHTS = ("uniform", "positive", "constant")
DTYPES = ("float64", "float32")
SWEEP_PARAMS = ("alpha", "spectral_radius", "leak", "input_gain", "bias")
# names of kairo.connectome and kairo.reservoir's tasks, repeated here so that building a config
# imports neither (tests/reservoir/test_config.py keeps them equal)
NORMALIZATIONS = ("none", "spectral", "row", "column")
SIGNS = ("excitatory", "dale")
NULL_MODELS = ("rewire", "weight-shuffle", "random-topology", "gaussian")
TASK_NAMES = ("memory-capacity", "narma10", "mackey-glass", "lorenz", "sine-square")
CLASSIFICATION_TASKS = ("sine-square",)


@dataclass(frozen=True)
class ConnectomeSource:
    """Which connectome a command reads (the reservoir commands and the fly share these)."""

    connectome: str = option("winding2023", "registered name (winding2023) or path to a "
                             ".csv/.npz/.zip/folder")
    compartment: str = option("all", "Winding 2023 compartment matrix",
                              choices=("all", "aa", "ad", "da", "dd"))
    data_dir: str = option("", "data directory (default: $KAIRO_DATA_DIR, else the user "
                           "cache dir)")


@dataclass(frozen=True)
class ReservoirSettings(ConnectomeSource):
    """How a connectome becomes a reservoir (shared by the reservoir commands)."""

    norm: str = option("spectral", "connectome normalization: none, spectral (to "
                       "--spectral-radius), row (out-weights sum to 1), column",
                       choices=NORMALIZATIONS)
    spectral_radius: float = option(0.9, "target spectral radius for --norm spectral",
                                    above=0)
    alpha: float = option(1.0, "global gain applied after normalization")
    signs: str = option("excitatory", "excitatory (all positive) or dale (inhibitory neurons "
                        "by row)", choices=SIGNS)
    inhibitory_fraction: float = option(0.0, "with --signs dale: fraction of neurons drawn "
                                        "inhibitory", low=0, high=1)
    inhibitory_types: tuple[str, ...] = option((), "with --signs dale: comma-separated cell "
                                               "types made inhibitory")
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
    engine: str = option("auto", "reservoir engine: scipy (sparse CPU), torch, or auto "
                         "(torch on a GPU or for batches in float32 or huge graphs, else "
                         "scipy)", choices=ENGINES)
    device: str = option("auto", "device of the torch engine: cpu, cuda or auto (cuda when "
                         "available)", choices=DEVICES)
    dtype: str = option("float64", "floating-point type of the states", choices=DTYPES)
    seed: int = option(0, "the run's seed (input weights, task series, Dale signs, null "
                       "models)")

    def __post_init__(self):
        check_fields(self)
        if self.engine == "scipy" and self.device == "cuda":
            raise ConfigError("device: cuda needs --engine torch or auto (the scipy engine "
                              "runs on the CPU)")


@dataclass(frozen=True)
class RunConfig(ReservoirSettings):
    """One reservoir on one task."""

    task: str = option("memory-capacity", "reservoir task", choices=TASK_NAMES)
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

    def __post_init__(self):
        super().__post_init__()
        if self.readout == "logistic" and self.task not in CLASSIFICATION_TASKS:
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
                        "spread; drawn once and reused at every value)", low=2)
    null_models: tuple[str, ...] = option(("rewire", "gaussian"), "comma-separated null "
                                          "models", choices=NULL_MODELS)

    def __post_init__(self):
        super().__post_init__()
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
class PropagateConfig(ConnectomeSource):
    """Stimulate left or right sensory neurons and watch descending neurons respond."""

    norms: tuple[str, ...] = option(("spectral", "row"), "comma-separated normalizations to "
                                    "compare", choices=NORMALIZATIONS)
    spectral_radius: float = option(0.9, "target spectral radius for the spectral "
                                    "normalization", above=0)
    activation: str = option("tanh", "neuron nonlinearity", choices=ACTIVATIONS)
    steps: int = option(20, "steps of constant stimulation", low=1)
    stimulus: float = option(1.0, "input to each stimulated neuron per step")
    stim_group: str = option("sensory", "cell type stimulated on the left or the right (a "
                             "group without a side)")
    record_groups: tuple[str, ...] = option(("DN-VNC", "DN-SEZ"), "comma-separated cell types "
                                            "whose L/R activity is reported")
    convention: str = option("pre-to-post", "pre-to-post (biological) or reversed (post → "
                             "pre, labelled as such)", choices=("pre-to-post", "reversed"))
    seed: int = option(0, "the run's seed (the dynamics are deterministic; recorded)")

    def __post_init__(self):
        check_fields(self)
        if not self.norms:
            raise ConfigError("norms must name at least one normalization")
        if not self.record_groups:
            raise ConfigError("record_groups must name at least one cell type")
