"""The command line end to end: results folders, configs, provenance, re-runs."""

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from kairo.cli import main
from kairo.data import REGISTRY

FAST = ["--n-train", "200", "--n-test", "100", "--washout", "50", "--cv", "3",
        "--readout-group", "DN-VNC"]


@pytest.mark.slow
@pytest.mark.winding
def test_run_writes_results_folder(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["reservoir", "run", "--task", "narma10", "--norm", "row", *FAST,
                 "--out", str(out)]) == 0
    assert "nrmse" in capsys.readouterr().out
    names = {p.name for p in out.iterdir()}
    assert {"config.yaml", "run.json", "metrics.json", "test_predictions.png",
            "test_predictions.csv"} <= names
    run = json.loads((out / "run.json").read_text())
    assert run["seed"] == 0 and run["config"]["norm"] == "row"
    assert run["data"]["winding2023"]["sha256"] == REGISTRY["winding2023"].sha256
    assert "numpy" in run["environment"]["packages"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp left


def test_environment_records_the_cpu(monkeypatch):
    """The same seed trains to other weights on another CPU, so runs record which."""
    import sys

    from kairo.results import cpu_flags, cpu_model, environment

    cpuinfo = ("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 23\nmodel\t\t: 49\n"
               "model name\t: AMD EPYC\nflags\t\t: fpu sse2 avx avx2 fma\n\nprocessor\t: 1\n"
               "model name\t: other\n")
    real_open = open

    def fake_open(path, *a, **k):
        if path == "/proc/cpuinfo":
            import io
            return io.StringIO(cpuinfo)
        return real_open(path, *a, **k)

    monkeypatch.setattr("builtins.open", fake_open)
    assert cpu_flags() == {"fpu", "sse2", "avx", "avx2", "fma"}
    assert cpu_model() == "AMD EPYC family 23 model 49 (avx2)"
    env = environment()
    assert env["cpu"] == "AMD EPYC family 23 model 49 (avx2)"
    if "torch" in sys.modules:
        assert env["torch_cpu_capability"] == sys.modules["torch"].backends.cpu.\
            get_cpu_capability()


@pytest.mark.slow
@pytest.mark.winding
def test_config_file_flags_override_and_rerun_is_identical(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('task = "memory-capacity"\nmax_delay = 5\nn_train = 200\nn_test = 100\n'
                   'washout = 50\ncv = 3\nreadout_group = "DN-VNC"\nnorm = "spectral"\n')
    out1 = tmp_path / "a"
    assert main(["reservoir", "run", "--config", str(cfg), "--norm", "row",
                 "--out", str(out1)]) == 0
    recorded = yaml.safe_load((out1 / "config.yaml").read_text())
    assert recorded["norm"] == "row" and recorded["max_delay"] == 5  # flag beat the file
    out2 = tmp_path / "b"
    assert main(["reservoir", "run", "--config", str(out1 / "config.yaml"),
                 "--out", str(out2)]) == 0
    m1 = json.loads((out1 / "metrics.json").read_text())
    m2 = json.loads((out2 / "metrics.json").read_text())
    assert m1["mc"] == m2["mc"]


@pytest.mark.winding
def test_existing_out_needs_overwrite(tmp_path, capsys):
    out = tmp_path / "p"
    assert main(["reservoir", "propagate", "--steps", "3", "--out", str(out)]) == 0
    assert main(["reservoir", "propagate", "--steps", "3", "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["reservoir", "propagate", "--steps", "4", "--out", str(out),
                 "--overwrite"]) == 0
    assert yaml.safe_load((out / "config.yaml").read_text())["steps"] == 4


def test_data_commands(capsys, data_dir):
    assert main(["data", "path"]) == 0
    assert str(data_dir) in capsys.readouterr().out
    assert main(["data", "verify"]) == 0
    out = capsys.readouterr().out
    assert out.count("checksum ok") == 5                    # the connectome + 4 MNIST files
    assert "mnist/t10k-labels-idx1-ubyte" in out


@pytest.mark.slow
@pytest.mark.winding
def test_demo_quick(tmp_path, capsys, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="kairo.progress")
    out = tmp_path / "demo"
    assert main(["demo", "--quick", "--out", str(out)]) == 0
    report = (out / "report.md").read_text()
    sections = report.count("\n## ")
    # a line as each section starts and ends (the progress log, shown without -v)
    log = caplog.text
    for name in ("reservoir compare", "fly run", "logic train", "tsc train"):
        assert f"] {name} (" in log                 # "demo: [i/n] <command> (<section>)"
    assert log.count("demo: [") == log.count(" done in ") == sections >= 12
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo"]      # no temporary left
    for section in ("propagate", "narma10-row", "compare-memory-capacity", "sweep-alpha"):
        assert f"## {section}" in report
        assert (out / section / "config.yaml").is_file()
    assert len(list(out.rglob("*.png"))) >= 5
    # the logic family: trained, exported, verified
    assert "## logic-train" in report and "## logic-verify" in report and "bit-exact" in report
    # even the quick run learns (it once stopped at 100 iterations, at chance: 54 %)
    logic = json.loads((out / "logic-train" / "metrics.json").read_text())
    assert logic["test_accuracy_circuit"] > 0.9 and logic["circuit_matches_model"]
    for f in ("logic-train/circuit.json", "logic-train/circuit.c", "logic-train/circuit.v",
              "logic-verify/verify.json"):
        assert (out / f).is_file()
    # the time-series section: metrics and maps; the default pools by mean, so the maps are
    # the self-attention of each chosen series and there are no pooling weights to summarise
    assert "## tsc-train" in report and (out / "tsc-maps" / "attention_0.png").is_file()
    assert "a mean pool has no weights to summarise" in report
    # every section says how to re-run it from the report folder
    assert report.count("Re-run: `kairo ") == sections
    # report.html has the same sections (tests/report opens it in Chromium)
    html = (out / "report.html").read_text()
    assert html.count('<section id="') == sections and "fly-run" in html
    # every step is a run in the store, inside the demo's run, pointing at its final folder
    from kairo.runs import Store

    st = Store(os.environ["KAIRO_STORE"])
    demo = [r for r in st.runs(command="demo") if r.out == str(out.absolute())][-1]
    steps = st.runs(parent=demo.id)
    assert demo.status == "done"
    assert len(steps) == sections - ("Skipped: the embodied fly" in report)
    assert all(r.status == "done" and r.folder is not None and
               Path(r.out).parent == out.absolute() for r in steps if r.out)
    assert {r.command for r in steps} >= {"reservoir compare", "logic train", "tsc train"}
    # the fly, when the [fly] extra is installed
    import importlib.util

    if importlib.util.find_spec("flygym") is not None:
        assert "## fly-run" in report and (out / "fly-run" / "fly.mp4").stat().st_size > 0
    else:
        assert "Skipped: the embodied fly needs the [fly] extra" in report


def test_sigterm_unwinds_the_results_folder(tmp_path, capsys, monkeypatch):
    """SIGTERM during a command: the hidden temp folder is removed (as for Ctrl-C), the exit
    code is 143, and the default handler is back once main returns."""
    import dataclasses
    import os
    import signal

    from kairo import _app

    def killed(cfg, rd):
        rd.add("partial.json", {"x": 1})
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not interrupt the command")

    cmd = _app.get_command("tsc encodings")
    monkeypatch.setitem(_app.commands(), cmd.name, dataclasses.replace(cmd, run=killed))
    assert main(["tsc", "encodings", "--out", str(tmp_path / "run")]) == 143
    assert "terminated (SIGTERM)" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []                    # neither run/ nor .run.xxxx
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


@pytest.mark.slow
def test_tsc_grid_records_torch_kernels_and_resnet_layout(tmp_path):
    # compare-pooling trains in worker processes; the parent, which writes run.json, must
    # still record which torch kernels ran and which layout "auto" chose for the ResNet
    import subprocess

    out = tmp_path / "cmp"
    assert main(["tsc", "compare-pooling", "--datasets", "ItalyPowerDemand", "--encoders",
                 "resnet", "--pools", "mean,max", "--seeds", "1", "--epochs", "1",
                 "--d-model", "8", "--blocks", "1", "--patience", "0", "--workers", "2",
                 "--out", str(out)]) == 0
    run = json.loads((out / "run.json").read_text())
    code = ("import torch; from kairo.tsc._encoders import resnet_layout; "
            "print(torch.backends.cpu.get_cpu_capability(), resnet_layout('auto'))")
    here = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.split()
    assert [run["environment"]["torch_cpu_capability"], run["resolved"]["resnet_layout"]] \
        == here


def test_atomic_folder_publishes_whole_or_nothing(tmp_path):
    from kairo import KairoError
    from kairo.results import atomic_folder

    out = tmp_path / "res"
    with atomic_folder(out) as tmp:
        (tmp / "a.txt").write_text("1")
        assert not out.exists()                              # nothing visible while writing
    assert (out / "a.txt").read_text() == "1"
    with pytest.raises(KairoError, match="already exists.*--overwrite"):
        with atomic_folder(out):
            pass
    with pytest.raises(RuntimeError):
        with atomic_folder(out, overwrite=True) as tmp:
            (tmp / "b.txt").write_text("2")
            raise RuntimeError("failed half-way")
    # the failed run left the old folder as it was and no temporary sibling
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]
    assert sorted(p.name for p in out.iterdir()) == ["a.txt"]
    with atomic_folder(out, overwrite=True) as tmp:
        (tmp / "b.txt").write_text("2")
    assert sorted(p.name for p in out.iterdir()) == ["b.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]


def test_run_records_hold_resolved_values_inputs_and_files(tmp_path):
    """What a run resolved ("auto" settings), the checksums of its inputs and the files it
    wrote reach run.json; the config keeps what was asked for."""
    import dataclasses

    from kairo.results import ResultsDir, file_sha256

    @dataclasses.dataclass(frozen=True)
    class Cfg:
        seed: int = 3
        engine: str = "auto"

    data = tmp_path / "in.txt"
    data.write_text("data")
    with ResultsDir(tmp_path / "run", command="test", config=Cfg()) as rd:
        rd.resolve("engine", "scipy")
        rd.record_input("in", data)
        rd.add("x.txt", "x")
        (rd.path / "model.bin").write_bytes(b"1")
        rd.add("model.bin")
        with pytest.raises(FileNotFoundError, match="listed in the results but not written"):
            rd.add("missing.bin")
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["seed"] == 3 and run["config"] == {"seed": 3, "engine": "auto"}
    assert run["resolved"] == {"engine": "scipy"}
    assert run["data"] == {"in": {"path": str(data), "sha256": file_sha256(data)}}
    assert run["files"] == ["model.bin", "x.txt"]
    assert yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["engine"] == "auto"


def test_results_get_the_usual_permissions(tmp_path):
    import os
    import stat

    from kairo.results import atomic_folder, atomic_write_text

    old = os.umask(0o022)
    try:
        with atomic_folder(tmp_path / "res") as tmp:
            atomic_write_text(tmp / "a.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "res").stat().st_mode) == 0o755     # not mkdtemp's 0700
    assert stat.S_IMODE((tmp_path / "res" / "a.txt").stat().st_mode) == 0o644   # not 0600
