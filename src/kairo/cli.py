"""The ``kairo`` command, built from the command registry (:mod:`kairo._app`): one sub-command
per registered command, one flag per config field (its help, default and choices come from
the field), so a flag, a key of a YAML/TOML ``--config`` file and a key of a results folder's
``config.yaml`` are the same name.

A script runs a command the way the CLI does, without the parser, through the re-exported
:func:`load_config_file` (a YAML/TOML config file → dict), :func:`make_config` (→ the
command's config) and :func:`execute` (run it into its results folder and the store).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import signal
import sys
import threading

from kairo import __version__
from kairo._app import commands, execute, make_config
from kairo._command import Command
from kairo._config import field_group, field_kind, load_config_file
from kairo._errors import KairoError

__all__ = ["main", "build_parser", "execute", "make_config", "load_config_file"]

_FAMILY_HELP = {
    "reservoir": "connectome reservoir computing",
    "fly": "the embodied fly: the connectome steers NeuroMechFly",
    "logic": "logic-gate networks: train, export, verify, import, ensemble, fpga, bench",
    "tsc": "attention models for time-series classification",
    "data": "the data directory: path, fetch, verify",
    "runs": "the results store: list, show, compare, export, rm",
}


def _flag_help(f: dataclasses.Field, is_tuple: bool) -> str:
    text = f.metadata.get("help", "")
    default = f.default
    if isinstance(default, bool) or default in ("", None, ()):
        return text
    shown = ",".join(map(str, default)) if is_tuple else default
    return f"{text} (default: {shown})"


class _FileOnly(argparse.Action):
    """A field that is no flag of this command: the error says where it is set."""

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{option_string} is not a flag of this command; set {self.dest} in a "
                     f"--config file")


def _add_flags(p: argparse.ArgumentParser, cmd: Command) -> None:
    p.add_argument("--config", help="YAML or TOML file with options (flags override it)")
    if cmd.folder:
        p.add_argument("--out", help="results folder (default: results/<command>-<time>)")
        p.add_argument("--overwrite", action=argparse.BooleanOptionalAction, default=False,
                       help="replace an existing --out folder")
    # a config built from field groups lists each concern under its own heading
    groups: dict = {}
    file_only = getattr(cmd.config, "_file_only", ())
    for f in dataclasses.fields(cmd.config):
        if f.name in file_only:            # set in a --config file (the epilog lists them)
            p.add_argument("--" + f.name.replace("_", "-"), action=_FileOnly, nargs="?",
                           default=argparse.SUPPRESS, help=argparse.SUPPRESS)
            continue
        base, is_tuple = field_kind(cmd.config, f.name)
        help_ = _flag_help(f, is_tuple)
        if f.metadata.get("positional"):
            p.add_argument(f.name, nargs="*" if is_tuple else "?", default=argparse.SUPPRESS,
                           help=help_)
            continue
        title = field_group(cmd.config, f)
        where = p if title is None else groups.setdefault(
            title, p.add_argument_group(f"{title} options"))
        kw: dict = {"dest": f.name, "default": argparse.SUPPRESS, "help": help_}
        if base is bool and not is_tuple:
            kw["action"] = argparse.BooleanOptionalAction
        else:
            kw["type"] = base if base in (int, float) and not is_tuple else str
            if f.metadata.get("choices") and not is_tuple:
                kw["choices"] = f.metadata["choices"]
        where.add_argument("--" + f.name.replace("_", "-"), **kw)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kairo", description="Computing with circuits.",
                                allow_abbrev=False)
    p.add_argument("--version", action="version", version=f"kairo {__version__}")
    p.add_argument("--data-dir", dest="global_data_dir", default=None,
                   help="data directory for every sub-command (else $KAIRO_DATA_DIR)")
    p.add_argument("--store", dest="global_store", default=None,
                   help="results store every run is recorded in (else $KAIRO_STORE, else "
                        "results/kairo.db; 'none': record nothing)")
    p.add_argument("-v", "--verbose", action="store_true", help="log what kairo is doing")
    top = p.add_subparsers(dest="_top", metavar="command", required=True)
    families: dict[str, argparse._SubParsersAction] = {}
    for name, cmd in commands().items():
        *family, leaf = name.split()
        if family:
            fam = family[0]
            if fam not in families:
                fp = top.add_parser(fam, help=_FAMILY_HELP.get(fam, ""), allow_abbrev=False)
                families[fam] = fp.add_subparsers(dest="_sub", metavar="subcommand", required=True)
            where = families[fam]
        else:
            where = top
        file_only = getattr(cmd.config, "_file_only", ())
        epilog = (f"Set in a --config file only: {', '.join(file_only)}." if file_only
                  else None)
        sp = where.add_parser(leaf, help=cmd.help, description=cmd.description or cmd.help,
                              epilog=epilog, allow_abbrev=False)
        sp.set_defaults(_command=name)
        _add_flags(sp, cmd)
    return p


class _Terminated(BaseException):
    """SIGTERM raised in the main thread, so results folders and temp files unwind as they do
    for Ctrl-C (a killed run leaves no hidden half-written folder; its checkpoint stays)."""


def _on_sigterm(signum, frame):
    raise _Terminated()


def main(argv=None) -> int:
    # only take SIGTERM over where nobody else has (not in a thread, not under a host's handler)
    own_term = threading.current_thread() is threading.main_thread() and \
        signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    if own_term:
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return _main(argv)
    except _Terminated:         # caught here so a SIGTERM at any point (parsing too) unwinds
        print("kairo: terminated (SIGTERM); a checkpointed run resumes when started again",
              file=sys.stderr)
        return 143
    finally:
        if own_term:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    # progress lines (when stderr is no terminal) are shown without -v
    logging.getLogger("kairo.progress").setLevel(logging.INFO)


def _main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _setup_logging(args.verbose)
    cmd = commands()[args._command]
    saved_store = os.environ.get("KAIRO_STORE")
    if args.global_store is not None:
        # the runs commands, and runs started inside this one, read the store from here
        os.environ["KAIRO_STORE"] = args.global_store if args.global_store.lower() == "none" \
            else os.path.abspath(args.global_store)
    try:
        flags = {f.name: getattr(args, f.name) for f in dataclasses.fields(cmd.config)
                 if hasattr(args, f.name)}
        file_values = load_config_file(args.config) if args.config else {}
        cfg = make_config(cmd, file_values, flags, source=args.config or "command line",
                          data_dir=args.global_data_dir)
        outcome = execute(cmd, cfg, out=getattr(args, "out", None),
                          overwrite=getattr(args, "overwrite", False))
        if outcome.summary:
            print(outcome.summary)
        if outcome.out is not None:
            print(f"results: {outcome.out}")
    except KairoError as exc:
        print(f"kairo: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kairo: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`: results are already written
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        if saved_store is None:
            os.environ.pop("KAIRO_STORE", None)
        else:
            os.environ["KAIRO_STORE"] = saved_store
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
