"""Your copy of the UCR/UEA archive ($KAIRO_TSC_ARCHIVE): its layouts and formats load by
name like the shipped sets, and bad folders or files are refused naming them."""

from __future__ import annotations

import numpy as np
import pytest

from kairo import DataError
from kairo.tsc import list_datasets, load_dataset


def _rows(rng, n, lengths, sep):
    lines = []
    for i in range(n):
        t = lengths[i % len(lengths)]
        v = [f"{x:.6f}" for x in rng.normal(size=t)]
        v += ["NaN"] * (max(lengths) - t)
        lines.append(sep.join([str(1 + i % 2)] + v))
    return "\n".join(lines) + "\n"


def test_archive_layouts_and_formats(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    (tmp_path / "Ragged").mkdir()                   # the 2018 archive: <Name>/<Name>_TRAIN.tsv
    for split, n in (("TRAIN", 6), ("TEST", 4)):
        (tmp_path / "Ragged" / f"Ragged_{split}.tsv").write_text(
            _rows(rng, n, [20, 30], "\t"))
        (tmp_path / f"Flat_{split}.csv").write_text(_rows(rng, n, [12], ","))
    (tmp_path / "Lonely_TRAIN.csv").write_text(_rows(rng, 4, [12], ","))     # no test file
    monkeypatch.setenv("KAIRO_TSC_ARCHIVE", str(tmp_path))
    names = list_datasets()
    assert {"Ragged", "Flat"} <= set(names) and "Lonely" not in names
    assert "GunPoint" in names and names[-1] == "MNIST1D"
    train, test = load_dataset("ragged", "train"), load_dataset("Ragged", "test")
    assert train.x.shape == (6, 1, 30) and test.x.shape == (4, 1, 30)
    assert train.lengths.tolist() == [20, 30, 20, 30, 20, 30] and train.classes == ("1", "2")
    flat = load_dataset("Flat", "test")
    assert flat.x.shape == (4, 1, 12) and flat.mask is None
    # the shipped copy of a set wins over an archive's
    (tmp_path / "GunPoint_TRAIN.csv").write_text(_rows(rng, 4, [12], ","))
    (tmp_path / "GunPoint_TEST.csv").write_text(_rows(rng, 4, [12], ","))
    assert load_dataset("GunPoint", "train").x.shape == (50, 1, 150)


def test_bad_archives_are_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("KAIRO_TSC_ARCHIVE", str(tmp_path / "nowhere"))
    with pytest.raises(DataError, match="KAIRO_TSC_ARCHIVE.*nowhere is not a folder"):
        list_datasets()
    monkeypatch.setenv("KAIRO_TSC_ARCHIVE", str(tmp_path))
    (tmp_path / "Gap_TRAIN.tsv").write_text("1\t0.1\tNaN\t0.3\n2\t0.2\t0.1\t0.0\n")
    (tmp_path / "Gap_TEST.tsv").write_text("1\t0.1\t0.2\t0.3\n")
    with pytest.raises(DataError, match=r"Gap_TRAIN.tsv: line 1 has a gap"):
        load_dataset("Gap", "train")
    (tmp_path / "Word_TRAIN.csv").write_text("1,0.1,x\n")
    (tmp_path / "Word_TEST.csv").write_text("1,0.1,0.2\n")
    with pytest.raises(DataError, match="Word_TRAIN.csv: line 1 holds a value that is not a"):
        load_dataset("Word", "train")
    with pytest.raises(DataError, match="unknown dataset 'Missing'"):
        load_dataset("Missing")


def test_benchmark_takes_an_archive_set(tmp_path, monkeypatch):
    from kairo.cli import main

    rng = np.random.default_rng(1)
    for split, n in (("TRAIN", 12), ("TEST", 8)):
        (tmp_path / f"Toy_{split}.csv").write_text(_rows(rng, n, [16], ","))
    monkeypatch.setenv("KAIRO_TSC_ARCHIVE", str(tmp_path))
    out = tmp_path / "bench"
    assert main(["tsc", "benchmark", "--datasets", "Toy", "--encoders", "resnet", "--pools",
                 "mean", "--seeds", "1", "--workers", "1", "--epochs", "1", "--d-model", "4",
                 "--blocks", "1", "--peers", "minirocket", "--out", str(out)]) == 0
    assert "| Toy |" in (out / "table.md").read_text()
