"""A config file may group its options in sections named for the concerns ``--help`` lists
(``model:``, ``training:``, ``augmentation:``, ``execution:``, ``data:``): the same config as
the flat file, and a key in the wrong section or given twice is refused naming it."""

from __future__ import annotations

import pytest

from kairo import ConfigError
from kairo.cli import load_config_file, make_config

NESTED = """\
data:
  dataset: ArrowHead
model:
  d-model: 32
  blocks: 1
training:
  steps: 100
  sam: "off"
augmentation:
  mixup: "off"
  time_warp: 0.1
execution:
  threads: 1
ensemble: 1
"""
FLAT = """\
dataset: ArrowHead
d_model: 32
blocks: 1
steps: 100
sam: "off"
mixup: "off"
time_warp: 0.1
threads: 1
ensemble: 1
"""


def _cfg(tmp_path, text, name="c.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return make_config("tsc train", load_config_file(p), source=str(p))


def test_sections_by_concern_read_as_the_flat_file(tmp_path):
    nested = _cfg(tmp_path, NESTED)
    assert nested == _cfg(tmp_path, FLAT, "flat.yaml")
    assert (nested.dataset, nested.d_model, nested.steps, nested.time_warp) == \
        ("ArrowHead", 32, 100, 0.1)


def test_toml_tables_are_sections_too(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text('ensemble = 1\n[model]\nd_model = 32\n[training]\nsteps = 100\n')
    cfg = make_config("tsc train", load_config_file(p))
    assert (cfg.d_model, cfg.steps, cfg.ensemble) == (32, 100, 1)


@pytest.mark.parametrize("text, message", [
    ("model:\n  lr: 0.1\n", "model.lr: lr is a training option; put it under training:"),
    ("model:\n  foo: 1\n", "model.foo: no such model option"),
    ("d_model: 8\nmodel:\n  d_model: 16\n", "d_model is given twice"),
    ("modle:\n  d_model: 16\n", "unknown option(s) ['modle']"),
])
def test_a_key_in_the_wrong_section_is_refused_naming_it(tmp_path, text, message):
    with pytest.raises(ConfigError) as err:
        _cfg(tmp_path, text)
    assert message in str(err.value) and "c.yaml" in str(err.value)


def test_a_config_without_groups_takes_no_sections(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("model:\n  x: 1\n")
    with pytest.raises(ConfigError, match="unknown option"):
        make_config("data path", load_config_file(p))
