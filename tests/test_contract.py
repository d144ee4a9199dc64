"""The contract every registered command keeps (``kairo._app.commands()``): every flag has help,
every config field carries its help and accepted values, the default config round-trips
through a results folder's config.yaml, a bad value is refused naming its field, an existing
``--out`` is kept unless ``--overwrite``, and run.json holds the seed and the SHA-256 of every
input the command names.

The runs here are fakes (the command's ``run`` replaced through ``dataclasses.replace``): what is
tested is the path every run takes (``kairo._app.execute`` and the CLI), not the science.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from pathlib import Path

import pytest
import yaml

from kairo import ConfigError, KairoError


def pytest_generate_tests(metafunc):
    if "name" not in metafunc.fixturenames:
        return
    try:
        from kairo._app import commands

        names = sorted(commands())
    except Exception as exc:   # a family that does not import fails its test, not collection
        names = [f"<the registry does not build: {type(exc).__name__}: {exc}>"]
    metafunc.parametrize("name", names)


@pytest.fixture
def cmd(name):
    from kairo._app import get_command

    return get_command(name)


# the fields a command cannot do without (a circuit, a trained model), with a stand-in value;
# where a test runs the command they name files it makes (see _required and real_inputs)
REQUIRED = {
    "logic export": {"circuit": "circuit.json", "output": "circuit.c"},
    "logic verify": {"circuit": "circuit.json"},
    "logic fpga": {"circuit": "circuit.json"},
    "logic bench": {"circuit": "circuit.json"},
    "logic import": {"model": "model.pt"},
    "logic ensemble": {"circuits": ("circuit.json", "circuit.json")},
    "tsc evaluate": {"model": "model.pt"},
    "tsc maps": {"model": "model.pt"},
    "tsc predict": {"model": "model.pt", "input": "series.csv", "output": "predictions.csv"},
    "runs show": {"id": 1},
    "runs compare": {"ids": (1, 2)},
    "runs rm": {"ids": (1,)},
    "runs export": {"output": "runs.csv"},
    "sweep": {"spec": "spec.yaml"},
}
OUTPUTS = {"output"}
NOT_FILES = {"id", "ids"}
NEEDS_A_DISPLAY = {"fly view"}


def _required(cmd, where: Path | None = None, real: dict | None = None) -> dict:
    """The stand-ins of REQUIRED for ``cmd``; with ``where``, as files made there (copies of
    the ``real`` files by name where given, else a line of text)."""
    import shutil

    values = dict(REQUIRED.get(cmd.name, {}))
    if where is not None:
        for field, value in values.items():
            if field in NOT_FILES:
                continue
            names = value if isinstance(value, tuple) else (value,)
            paths = tuple(str(where / v) for v in names)
            values[field] = paths if isinstance(value, tuple) else paths[0]
            if field in OUTPUTS:
                continue
            for v in names:
                if real and v in real:
                    shutil.copyfile(real[v], where / v)
                else:
                    (where / v).write_text("stand-in\n")
    return values


def _each(value) -> tuple:
    """A field's stand-in as a tuple (a field of several files has a tuple)."""
    return value if isinstance(value, tuple) else (value,)


def _default_config(cmd, where: Path | None = None, real: dict | None = None):
    """The command's default config (its required fields given stand-ins)."""
    from kairo.cli import make_config

    return make_config(cmd, _required(cmd, where, real))


@pytest.fixture(scope="session")
def real_inputs(tmp_path_factory) -> dict:
    """Small real files for the commands that read their input before running: a circuit, a
    trained tsc model and series for it."""
    import numpy as np

    from kairo.cli import execute, make_config
    from kairo.logic import Circuit

    where = tmp_path_factory.mktemp("inputs")
    circuit = Circuit(n_inputs=4, ops=np.array([1, 6, 8, 14]), a=np.array([0, 2, 4, 5]),
                      b=np.array([1, 3, 4, 6]), outputs=np.array([6, 7]), n_classes=2, meta={})
    circuit.save(where / "circuit.json")
    cfg = make_config("tsc train", {"dataset": "ItalyPowerDemand", "epochs": 1, "d_model": 8,
                                    "n_heads": 1, "blocks": 1, "patience": 0, "threads": 1})
    out = execute("tsc train", cfg, out=where / "train").out
    series = np.random.default_rng(0).standard_normal((3, 24))       # ItalyPowerDemand's length
    np.savetxt(where / "series.csv", series, delimiter=",")
    return {"circuit.json": where / "circuit.json", "model.pt": out / "model.pt",
            "series.csv": where / "series.csv"}


def _argv(cmd, where: Path) -> list[str]:
    argv = cmd.name.split()
    positional = {f.name for f in dataclasses.fields(cmd.config) if f.metadata.get("positional")}
    for field, value in _required(cmd, where).items():
        value = ",".join(value) if isinstance(value, tuple) else value
        argv += [value] if field in positional else ["--" + field.replace("_", "-"), value]
    return argv


def _fake_run(cfg, rd):
    """What a run writes, cheaply: one file through the results folder."""
    if rd is not None:
        rd.add("fake.json", {"ok": True})
    return "fake run"


def _parsers(parser: argparse.ArgumentParser):
    """Every (path, parser) of the command tree: the top level, each family, each command."""
    todo = [((), parser)]
    while todo:
        path, p = todo.pop()
        yield path, p
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo.extend(((*path, n), sub) for n, sub in action.choices.items())


def _command_parser(name: str) -> argparse.ArgumentParser:
    from kairo.cli import build_parser

    return dict(_parsers(build_parser()))[tuple(name.split())]


def _flags(p: argparse.ArgumentParser) -> set[str]:
    return {s for a in p._actions for s in a.option_strings}


# ------------------------------------------------------------------------------ help
def test_registry_is_not_empty():
    from kairo._app import commands

    assert len(commands()) >= 10


def test_every_flag_has_help_text(name, cmd):
    p = _command_parser(name)
    # a field set only in a --config file has no flag to describe: the epilog names it
    file_only = getattr(cmd.config, "_file_only", ())
    missing = [a.dest for a in p._actions if not isinstance(a, argparse._HelpAction)
               and a.dest not in file_only and not (a.help or "").strip()]
    assert not missing, f"kairo {name}: flags without help: {missing}"
    assert (cmd.help or "").strip(), f"kairo {name} has no help line"
    text = p.format_help()               # renders (a bare % in a help text would not)
    assert all(f"--{f.name.replace('_', '-')}" in text for f in dataclasses.fields(cmd.config)
               if not f.metadata.get("positional") and f.name not in file_only)
    assert all(f.name in " ".join(text.split()) for f in dataclasses.fields(cmd.config)
               if f.name in file_only)


def test_top_level_and_family_flags_have_help_text():
    from kairo.cli import build_parser

    for path, p in _parsers(build_parser()):
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for choice in a._choices_actions:
                    assert (choice.help or "").strip(), f"kairo {' '.join(path)} {choice.dest}"
            elif not isinstance(a, argparse._HelpAction):
                assert (a.help or "").strip(), f"kairo {' '.join(path)} {a.dest}: no help"


def test_every_config_field_is_declared_with_help(name, cmd):
    cls = cmd.config
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, \
        f"{cls.__name__} must be a frozen dataclass"
    for f in dataclasses.fields(cls):
        assert "choices" in f.metadata, f"{cls.__name__}.{f.name} is not declared with option()"
        assert len(f.metadata["help"].strip()) >= 8, f"{cls.__name__}.{f.name}: no real help"


def test_every_field_is_a_flag(name, cmd):
    """The parser has one flag per field (``--x-y`` for ``x_y``; a positional field by its
    name), and ``--out``/``--overwrite`` exactly for the commands with a results folder."""
    p = _command_parser(name)
    flags = _flags(p)
    positional = {a.dest for a in p._actions if not a.option_strings}
    for f in dataclasses.fields(cmd.config):
        if f.metadata.get("positional"):
            assert f.name in positional, f"kairo {name}: {f.name} is not positional"
        else:
            assert "--" + f.name.replace("_", "-") in flags, f"kairo {name}: no flag {f.name}"
    assert ({"--out", "--overwrite"} <= flags) == cmd.folder
    if cmd.folder:
        assert not {"output", "overwrite"} & {f.name for f in dataclasses.fields(cmd.config)}, \
            "a results-folder command takes --out, not --output"


def test_single_file_output_obeys_overwrite(name, cmd, tmp_path, request):
    """A command without a folder writes at most the one file named by ``output``: an
    existing one only with ``overwrite`` (as --overwrite for folders), never its input file,
    never a folder."""
    from kairo.cli import execute
    from kairo._config import field_kind

    fields = {f.name: f for f in dataclasses.fields(cmd.config)}
    if cmd.folder or "output" not in fields:
        pytest.skip("no single-file output")
    assert "overwrite" in fields and field_kind(cmd.config, "overwrite") == (bool, False)
    assert fields["overwrite"].default is False
    if name in NEEDS_A_DISPLAY:
        pytest.skip("needs a display (tests/fly run it under Xvfb)")
    cfg = _default_config(cmd, tmp_path, request.getfixturevalue("real_inputs"))
    out = Path(cfg.output)
    assert execute(cmd, cfg).out is None and out.is_file()
    out.write_text("mine")
    with pytest.raises(KairoError, match="--overwrite"):
        execute(cmd, cfg)
    assert out.read_text() == "mine"
    execute(cmd, dataclasses.replace(cfg, overwrite=True))
    assert out.read_text() != "mine"
    for field in set(REQUIRED[name]) - OUTPUTS:
        source = Path(getattr(cfg, field))
        before = source.read_bytes()
        with pytest.raises(KairoError, match=f"input|{field}"):
            execute(cmd, dataclasses.replace(cfg, output=str(source), overwrite=True))
        assert source.read_bytes() == before
    with pytest.raises(KairoError, match="folder"):
        execute(cmd, dataclasses.replace(cfg, output=str(tmp_path), overwrite=True))


def test_booleans_are_switches(name, cmd):
    from kairo._config import field_kind

    flags = _flags(_command_parser(name))
    file_only = getattr(cmd.config, "_file_only", ())
    for f in dataclasses.fields(cmd.config):
        if field_kind(cmd.config, f.name) == (bool, False) and f.name not in file_only:
            opt = f.name.replace("_", "-")
            assert {f"--{opt}", f"--no-{opt}"} <= flags, f"kairo {name}: --{opt} is no switch"


# ------------------------------------------------------------------------------ config.yaml
def test_default_config_round_trips_through_config_yaml(name, cmd, tmp_path):
    from kairo.cli import load_config_file, make_config
    from kairo.results import ResultsDir

    cfg = _default_config(cmd)
    with ResultsDir(tmp_path / "run", command=name, config=cfg):
        pass
    values = load_config_file(tmp_path / "run" / "config.yaml")
    assert set(values) == {f.name for f in dataclasses.fields(cfg)}
    assert make_config(cmd, values, source="config.yaml") == cfg


def test_required_fields_are_refused_when_missing(name, cmd):
    from kairo.cli import make_config

    if not REQUIRED.get(name):
        pytest.skip("no required field")
    for field in REQUIRED[name]:
        values = {k: v for k, v in REQUIRED[name].items() if k != field}
        with pytest.raises(ConfigError, match=field):
            make_config(cmd, values)


# ------------------------------------------------------------------------------ bad values
def _bad_values(cls):
    """(field, a value its choices or bounds refuse) for every field that has them."""
    from kairo._config import field_kind

    for f in dataclasses.fields(cls):
        base, is_tuple = field_kind(cls, f.name)
        meta = f.metadata
        bad = []
        if meta.get("choices"):
            numeric = all(isinstance(c, (int, float)) and not isinstance(c, bool)
                          for c in meta["choices"])
            bad.append(max(meta["choices"]) + 1 if numeric else "no-such-choice")
        step = 1 if base is int else 0.5
        if meta.get("low") is not None:
            bad.append(base(meta["low"] - step))
        if meta.get("high") is not None:
            bad.append(base(meta["high"] + step))
        if meta.get("above") is not None:
            bad.append(base(meta["above"]))
        if base is float and any(meta.get(k) is not None for k in ("low", "high", "above")):
            bad.append(math.nan)
        for v in bad:
            yield f.name, ((v,) if is_tuple else v)


def test_a_bad_value_is_refused_naming_its_field(name, cmd):
    from kairo.cli import make_config

    cases = list(_bad_values(cmd.config))
    if not cases:
        pytest.skip(f"{cmd.config.__name__} has no field with choices or bounds")
    base = _default_config(cmd)
    for field, value in cases:
        with pytest.raises(ConfigError) as info:
            make_config(cmd, {field: value})
        assert field in str(info.value), f"{field}={value!r}: {info.value}"
        # the same whichever way the config is built
        with pytest.raises(ConfigError, match=field):
            dataclasses.replace(base, **{field: value})


def test_an_unknown_option_is_refused(name, cmd):
    from kairo.cli import make_config

    with pytest.raises(ConfigError, match="no_such_option"):
        make_config(cmd, {"no_such_option": 1})


# ------------------------------------------------------------------------------ --overwrite
def test_existing_out_is_kept_unless_overwrite(name, cmd, tmp_path):
    from kairo.cli import execute

    if not cmd.folder:
        pytest.skip("no results folder")
    fake = dataclasses.replace(cmd, run=_fake_run, inputs=None)
    cfg = _default_config(cmd, tmp_path)
    out = tmp_path / "out"
    assert execute(fake, cfg, out=out).out == out
    (out / "mine.txt").write_text("keep me")
    with pytest.raises(KairoError, match="--overwrite"):
        execute(fake, cfg, out=out)
    assert (out / "mine.txt").read_text() == "keep me"
    execute(fake, cfg, out=out, overwrite=True)
    assert not (out / "mine.txt").exists() and (out / "fake.json").is_file()
    stand_ins = {Path(v).name for vs in _required(cmd).values() for v in _each(vs)}
    assert sorted(p.name for p in tmp_path.iterdir() if p.name not in stand_ins) == ["out"]


def test_cli_out_and_overwrite(name, cmd, tmp_path, monkeypatch, capsys):
    """The same through the command line: exit code 2 and a message naming --overwrite."""
    from kairo import _app
    from kairo.cli import main

    if not cmd.folder:
        pytest.skip("no results folder")
    monkeypatch.setitem(_app.commands(), name, dataclasses.replace(cmd, run=_fake_run,
                                                                    inputs=None))
    out = tmp_path / "out"
    argv = [*_argv(cmd, tmp_path), "--out", str(out)]
    assert main(argv) == 0
    assert main(argv) == 2 and "--overwrite" in capsys.readouterr().err
    assert main([*argv, "--overwrite"]) == 0
    assert yaml.safe_load((out / "config.yaml").read_text()) is not None


# ------------------------------------------------------------------------------ run.json
def test_run_json_holds_the_seed_and_every_inputs_sha256(name, cmd, tmp_path, request):
    from kairo.cli import execute
    from kairo.results import file_sha256

    if not cmd.folder:
        pytest.skip("no results folder")
    real = request.getfixturevalue("real_inputs") if REQUIRED.get(name) else None
    cfg = _default_config(cmd, tmp_path, real)
    fields = {f.name for f in dataclasses.fields(cfg)}
    inputs = {k: Path(v) for k, v in (cmd.inputs(cfg) if cmd.inputs else {}).items()}
    absent = [str(p) for p in inputs.values() if not p.is_file()]
    if absent:
        pytest.skip(f"the default config's inputs are not here: {absent}")
    fake = dataclasses.replace(cmd, run=_fake_run)           # the real inputs(), a fake run
    out = execute(fake, cfg, out=tmp_path / "out").out
    run = json.loads((out / "run.json").read_text())
    assert run["command"] == f"kairo {name}"
    if "seed" in fields:
        assert run["seed"] == cfg.seed
    assert set(run["data"]) == set(inputs)
    for label, path in inputs.items():
        assert run["data"][label] == {"path": str(path), "sha256": file_sha256(path)}
    assert "fake.json" in run["files"]
    for field, value in _required(cmd, tmp_path, real).items():   # the circuit, the model
        for one in _each(value) if field not in OUTPUTS else ():
            assert Path(one) in inputs.values(), f"kairo {name}: {field} is not an input"

