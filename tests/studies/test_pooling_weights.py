"""benchmarks/studies/pooling_weights.py: a smoke run trains through the CLI, reads maps'
pooling.csv and writes its JSON whole, with the usual file permissions."""

from __future__ import annotations

import json
import os

import pytest

pytestmark = pytest.mark.study


def test_quick_run_summarises_the_pooling_weights(load_benchmark, tmp_path, capsys):
    bench = load_benchmark("studies/pooling_weights")
    out = tmp_path / "res" / "pooling_weights.json"
    old = os.umask(0o022)
    try:
        assert bench.main(["--quick", "--encoders", "resnet", "--pools", "attention,mha",
                           "--workers", "1", "--out", str(out)]) == 0
    finally:
        os.umask(old)
    res = json.loads(out.read_text())
    assert (out.stat().st_mode & 0o777) == 0o644               # not mkstemp's 0600
    assert [(r["pool"], r["heads"], r["series"]) for r in res["runs"]] == \
        [("attention", 1, 1029), ("mha", 4, 1029)]               # ItalyPowerDemand test
    for r in res["runs"]:
        assert 1 / 24 <= r["effective_fraction_min"] <= r["effective_fraction_median"] <= 1
        assert 1 <= r["peak_ratio_median"] <= r["peak_ratio_max"] <= 24
        assert len(r["per_head_effective_fraction"]) == r["heads"]
    assert sorted(p.name for p in out.parent.iterdir()) == ["pooling_weights.json"]
    assert "ItalyPowerDemand   resnet      mha" in capsys.readouterr().out
