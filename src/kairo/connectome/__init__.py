"""Connectomes: the sparse graph and neuron table, loaders, normalizations and null models."""

from kairo.connectome._adult import (INHIBITORY_TRANSMITTERS, adult_files, load_codex,
                                     load_neuprint, load_shiu, read_id_file, save_shiu,
                                     transmitter_sign)
from kairo.connectome._core import NEURON_COLUMNS, Connectome, parse_group
from kairo.connectome._synthetic import synthetic_flywire
from kairo.connectome._io import (REGISTERED, WINDING_COMPARTMENTS, load_adjacency_csv,
                                  load_connectome, load_edge_list_csv, load_npz,
                                  load_winding2023, save_npz)
from kairo.connectome._transform import (NORMALIZATIONS, NULL_MODELS, SIGN_MODES, apply_signs,
                                         costi_design, degree_preserving_rewire, gaussian_esn,
                                         normalize, null_model, prepare, random_topology,
                                         resolve_signs, scale, spectral_radius, weight_shuffle)

__all__ = ["Connectome", "NEURON_COLUMNS", "parse_group", "REGISTERED", "WINDING_COMPARTMENTS",
           "load_connectome", "load_winding2023", "load_adjacency_csv", "load_edge_list_csv",
           "load_npz", "save_npz", "load_shiu", "save_shiu", "load_codex", "load_neuprint",
           "adult_files", "read_id_file", "transmitter_sign", "INHIBITORY_TRANSMITTERS",
           "synthetic_flywire", "NORMALIZATIONS", "NULL_MODELS", "SIGN_MODES", "resolve_signs",
           "spectral_radius",
           "normalize", "scale", "apply_signs", "prepare", "null_model",
           "degree_preserving_rewire", "weight_shuffle", "random_topology", "gaussian_esn",
           "costi_design"]
