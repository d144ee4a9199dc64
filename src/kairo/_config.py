"""Configs are frozen dataclasses; flags, YAML/TOML files and results folders share them.

Precedence: dataclass defaults < config file < command-line flags given explicitly. Every
field is declared with :func:`option` (help, choices, bounds) and checked by
:func:`check_fields`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import tomllib
import types
import typing
from dataclasses import field
from pathlib import Path

import yaml

from kairo._errors import ConfigError

__all__ = ["field_group", "option", "check_fields", "load_config_file", "build_config", "config_to_dict",
           "field_kind"]


def option(default, help: str, *, choices=None, low=None, high=None, positional=False,
           above=None, required=False, group=None, **kw):
    """A config field with its help text and the values it accepts (checked by
    :func:`check_fields`). ``low``/``high`` bound numbers inclusively, ``above`` exclusively;
    for tuple fields they apply to every element. A ``required`` field must not be left
    empty (its default is the empty value). ``group`` names the section of ``--help`` it is
    listed in (else its field group's ``_group``, see :func:`field_group`)."""
    meta = {"help": help, "choices": tuple(choices) if choices else None, "low": low,
            "high": high, "above": above, "positional": positional, "required": required,
            "group": group}
    if isinstance(default, (list, dict, set)):
        raise TypeError("option defaults must be immutable (use a tuple)")
    return field(default=default, metadata=meta, **kw)


def _bound_error(name, v, meta) -> str | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return f"{name} must be a finite number, got {v}"
    if meta.get("low") is not None and v < meta["low"]:
        return f"{name} must be ≥ {meta['low']}, got {v}"
    if meta.get("high") is not None and v > meta["high"]:
        return f"{name} must be ≤ {meta['high']}, got {v}"
    if meta.get("above") is not None and v <= meta["above"]:
        return f"{name} must be > {meta['above']}, got {v}"
    return None


def check_fields(cfg) -> None:
    """Check every field of ``cfg`` against the choices, bounds and ``required`` that
    :func:`option` gave it; the error names the field. Configs call it first in
    ``__post_init__``."""
    for f in dataclasses.fields(cfg):
        v = getattr(cfg, f.name)
        meta = f.metadata
        values = v if isinstance(v, tuple) else (v,)
        for one in values:
            if meta.get("choices") and one not in meta["choices"]:
                raise ConfigError(f"{f.name}: expected one of {', '.join(map(str, meta['choices']))}"
                                  f"; got {one!r}")
            msg = _bound_error(f.name, one, meta)
            if msg:
                raise ConfigError(msg)
    for f in dataclasses.fields(cfg):       # after the values given: those errors come first
        if f.metadata.get("required") and getattr(cfg, f.name) in ("", None, ()):
            how = (f"the {f.name.upper()} argument" if f.metadata.get("positional") else
                   f"--{f.name.replace('_', '-')}")
            raise ConfigError(f"{f.name}: required ({how})")


@functools.cache
def _type_hints(cls) -> dict:
    # evaluating a config's annotations is slow, and the parser asks once per field
    return typing.get_type_hints(cls)


def field_kind(cls, name: str):
    """(base type, is_tuple) of a config field, from its annotation."""
    hints = _type_hints(cls)
    t = hints[name]
    origin = typing.get_origin(t)
    if origin is tuple:
        return typing.get_args(t)[0], True
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(t) if a is not type(None)]
        return args[0], False
    return t, False


def load_config_file(path) -> dict:
    """Read a YAML (.yaml/.yml) or TOML (.toml) config into a flat dict (keys use ``_``)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    try:
        text = path.read_text()
        if path.suffix.lower() == ".toml":
            data = tomllib.loads(text)
        elif path.suffix.lower() in (".yaml", ".yml", ".json"):
            data = yaml.safe_load(text) if path.suffix.lower() != ".json" else json.loads(text)
        else:
            raise ConfigError(f"config file {path}: unknown extension {path.suffix!r}; use "
                              f".yaml, .yml, .toml or .json")
    except (yaml.YAMLError, tomllib.TOMLDecodeError, json.JSONDecodeError,
            UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path}: not valid {path.suffix[1:].upper()} ({exc})") \
            from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: expected a mapping of option names to values, "
                          f"got {type(data).__name__}")
    return {str(k).replace("-", "_"): v for k, v in data.items()}


def _coerce(cls, name: str, value, source: str):
    base, is_tuple = field_kind(cls, name)
    where = f"{source}: field {name!r}"
    # a mode whose choices include "true"/"false" (e.g. auto/true/false) or "on"/"off" takes
    # YAML's booleans (YAML 1.1 reads an unquoted on/off/yes/no as one)
    choices = next(f.metadata.get("choices") or () for f in dataclasses.fields(cls)
                   if f.name == name)
    bool_words = (("true", "false") if "true" in choices and "false" in choices else
                  ("on", "off") if "on" in choices and "off" in choices else None)

    def one(v):
        if base is bool:
            if isinstance(v, bool):
                return v
            if isinstance(v, str) and v.lower() in ("true", "false", "1", "0", "yes", "no"):
                return v.lower() in ("true", "1", "yes")
            raise ConfigError(f"{where} expects true/false, got {v!r}")
        if base is int:
            if isinstance(v, bool) or not (isinstance(v, int) or
                                           (isinstance(v, str) and v.lstrip("-").isdigit())):
                raise ConfigError(f"{where} expects an integer, got {v!r}")
            return int(v)
        if base is float:
            if isinstance(v, bool):
                raise ConfigError(f"{where} expects a number, got {v!r}")
            try:
                return float(v)
            except (TypeError, ValueError):
                raise ConfigError(f"{where} expects a number, got {v!r}") from None
        if base is str:
            if isinstance(v, bool) and bool_words:
                return bool_words[0] if v else bool_words[1]
            if not isinstance(v, (str, int, float)) or isinstance(v, bool):
                raise ConfigError(f"{where} expects a string, got {v!r}")
            return str(v)
        return v

    if value is None:
        return None
    if is_tuple:
        if isinstance(value, str):
            value = [p for p in value.split(",") if p.strip()]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where} expects a list, got {value!r}")
        return tuple(one(v.strip() if isinstance(v, str) else v) for v in value)
    return one(value)


def _sections(cls, vals: dict, src: str) -> dict:
    """``vals`` with each section named for a field group of ``cls`` (``model:``,
    ``training:``, ``augmentation:``, ``execution:``, … : a mapping of that group's fields, as
    ``--help`` lists them) merged into the top level; a key in the wrong section, or given
    twice, is refused naming both."""
    names = {f.name for f in dataclasses.fields(cls)}
    groups: dict[str, set] = {}
    for f in dataclasses.fields(cls):
        g = field_group(cls, f)
        if g:
            groups.setdefault(g, set()).add(f.name)
    out: dict = {}
    for k, v in vals.items():
        if k in groups and k not in names and isinstance(v, dict):
            items = [(str(kk).replace("-", "_"), vv) for kk, vv in v.items()]
            for kk, _ in items:
                if kk not in groups[k]:
                    home = next((g for g, ns in groups.items() if kk in ns), None)
                    raise ConfigError(f"{src}: {k}.{kk}: " + (
                        f"{kk} is a {home} option; put it under {home}:" if home else
                        f"no such {k} option; {k} options: {', '.join(sorted(groups[k]))}"))
        else:
            items = [(k, v)]
        for kk, vv in items:
            if kk in out:
                raise ConfigError(f"{src}: {kk} is given twice (at the top level and in its "
                                  f"section, or in two sections)")
            out[kk] = vv
    return out


def build_config(cls, file_values: dict | None = None, flag_values: dict | None = None,
                 *, source: str = "config"):
    """Build a frozen config of type ``cls``; unknown keys raise `ConfigError`. A config
    file may group its keys in sections named for the field groups (see :func:`_sections`)."""
    names = {f.name for f in dataclasses.fields(cls)}
    values = {}
    file_values = _sections(cls, file_values or {}, source)
    for src, vals in ((source, file_values), ("command line", flag_values or {})):
        unknown = sorted(set(vals) - names)
        if unknown:
            raise ConfigError(f"{src}: unknown option(s) {unknown}; valid options: "
                              f"{', '.join(sorted(names))}")
        for k, v in vals.items():
            values[k] = _coerce(cls, k, v, src)
    try:
        cfg = cls(**values)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{source}: {exc}") from exc
    return cfg


def config_to_dict(cfg) -> dict:
    d = dataclasses.asdict(cfg)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


def field_group(cls, f) -> str | None:
    """The concern a field of config ``cls`` belongs to (the section of ``--help`` listing
    it): the field's own ``group``, else the ``_group`` of the class in ``cls``'s MRO that
    declares it; None when neither names one."""
    if f.metadata.get("group"):
        return f.metadata["group"]
    for klass in cls.__mro__:
        if f.name in klass.__dict__.get("__annotations__", {}):
            return klass.__dict__.get("_group")
    return None
