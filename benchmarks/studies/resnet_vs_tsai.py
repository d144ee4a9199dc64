"""kairo's ResNet against tsai's ResNet, paired by round: is the speed gap larger than the drift?

``attention_speed.py`` times tsai's models once, in a subprocess after all of kairo's, so a
change of machine load between the two blocks lands in the ratio (on an Intel Xeon on
2026-12-02 two runs a few minutes apart gave kairo / tsai 0.96× and 1.04× in training).
This probe alternates instead: each round times kairo's ResNet (Fawaz's 8-5-3 kernels, the
default, and tsai's 7-5-3, the same computation as tsai's model) in this process and tsai's
ResNet in a fresh subprocess of the tsai environment, in alternating order, with the same
timer (``attention_speed.Timer``) on the same [64, 1, 700] batch. Each round gives a ratio;
the result is the median ratio over rounds, its range, and how many rounds kairo was ahead
(with a two-sided sign test), so drift shared by a round cancels.

Same computation first: kairo's 7-5-3 ResNet and tsai's ResNet must have the same parameter
count (479,498 for 1 channel, 10 classes); the run stops if they do not, or if the tsai
environment runs another torch version than this one.

Usage::

    python benchmarks/studies/resnet_vs_tsai.py [--rounds 8] [--repeats 2] [--threads 2]
        [--tsai-python PATH] [--out PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from datetime import datetime, timezone
from pathlib import Path

import torch

from kairo.stats import sign_test_p

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # benchmarks/: _common
from _common import atomic_write_json, loadavg  # noqa: E402
from attention_speed import (DEFAULT_TSAI_PYTHON, FULL, RESULTS, SEED, Timer,  # noqa: E402
                             n_params, run_tsai)

KAIRO = {"kairo_resnet": (8, 5, 3), "kairo_resnet_k753": (7, 5, 3)}


def main(argv=None) -> int:
    from kairo.results import environment
    from kairo.tsc import ModelConfig, build_classifier

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8, help="paired rounds (default 8)")
    parser.add_argument("--repeats", type=int, default=2,
                        help="timed repeats per model and round; a round's rate is the best")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tsai-python", type=Path, default=DEFAULT_TSAI_PYTHON)
    parser.add_argument("--out", type=Path, default=RESULTS / "resnet_vs_tsai.json")
    args = parser.parse_args(argv)
    for name in ("rounds", "repeats", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be ≥ 1, got {getattr(args, name)}")
    if not args.tsai_python.exists():
        parser.error(f"--tsai-python: {args.tsai_python} does not exist (docs/benchmarks.md "
                     f"says how to make the tsai environment)")
    torch.set_num_threads(args.threads)
    cfg = dict(FULL, repeats=args.repeats, threads=args.threads)

    g = torch.Generator().manual_seed(SEED)              # the batch time_models uses too
    x = torch.randn(cfg["batch"], 1, cfg["length"], generator=g)
    y = torch.randint(0, cfg["n_classes"], (cfg["batch"],), generator=g)
    timers = {}
    for name, ks in KAIRO.items():
        torch.manual_seed(SEED)
        model = build_classifier(ModelConfig(encoder="resnet", blocks=3, pool="mean",
                                             kernel_sizes=ks), 1, cfg["n_classes"],
                                 cfg["length"])
        timers[name] = Timer(name, model, x, y)
        timers[name].warm_up(cfg)

    rounds = []
    for r in range(args.rounds):
        rec = {"round": r, "loadavg_before": loadavg(), "order": "kairo first" if r % 2 == 0
               else "tsai first"}

        def time_kairo():
            for t in timers.values():
                t.times = {"train": [], "infer": []}
            for _ in range(args.repeats):                 # interleaved within the round
                for t in timers.values():
                    t.repeat()
            rec["kairo"] = {n: t.record() for n, t in timers.items()}

        def time_tsai():
            res = run_tsai(args.tsai_python, cfg, None, models=["tsai_resnet"])
            if not res["status"].startswith("ok"):
                raise SystemExit(f"round {r}: {res['status']}\n{res.get('stderr_tail', '')}")
            if not res.get("same_torch"):
                raise SystemExit(f"round {r}: {res['status']}")
            rec["tsai"] = res["speed"]["tsai_resnet"]
            rec["tsai_torch"] = res["torch"]

        for step in ((time_kairo, time_tsai) if r % 2 == 0 else (time_tsai, time_kairo)):
            step()
        if rec["kairo"]["kairo_resnet_k753"]["params"] != rec["tsai"]["params"]:
            print(f"kairo's 7-5-3 ResNet has {rec['kairo']['kairo_resnet_k753']['params']:,} "
                  f"parameters, tsai's {rec['tsai']['params']:,}: not the same model",
                  file=sys.stderr)
            return 1
        rec["ratio"] = {n: {k: round(rec["kairo"][n][k]["samples_per_s_best"]
                                     / rec["tsai"][k]["samples_per_s_best"], 4)
                            for k in ("train", "infer")} for n in KAIRO}
        rec["loadavg_after"] = loadavg()
        rounds.append(rec)
        print(f"round {r + 1}/{args.rounds} ({rec['order']}, load {rec['loadavg_after']}): "
              + "; ".join(f"{n} train ×{v['train']:.3f} infer ×{v['infer']:.3f}"
                          for n, v in rec["ratio"].items()), flush=True)

    summary = {}
    for n in KAIRO:
        summary[n] = {}
        for k in ("train", "infer"):
            rs = [rec["ratio"][n][k] for rec in rounds]
            wins, losses = sum(v > 1 for v in rs), sum(v < 1 for v in rs)
            summary[n][k] = {"median_ratio": round(statistics.median(rs), 4),
                             "min": min(rs), "max": max(rs), "rounds_ahead": wins,
                             "rounds_behind": losses,
                             "sign_test_p": round(sign_test_p(wins, losses), 4)}
    env = environment()
    res = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "command": "python benchmarks/studies/resnet_vs_tsai.py "
                      + " ".join(argv or sys.argv[1:]),
           "machine": {**env, "torch_num_threads": torch.get_num_threads()},
           # set to emulate another instruction set (ATEN_CPU_CAPABILITY=avx2
           # ONEDNN_MAX_CPU_ISA=AVX2); the tsai subprocess inherits them
           "env": {k: os.environ.get(k) for k in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA")},
           "setup": f"x [{cfg['batch']}, 1, {cfg['length']}], {cfg['n_classes']} classes; per "
                    f"round {args.repeats} interleaved repeats of ~{cfg['repeat_s']} s per "
                    "model and kind (train step with AdamW; inference in eval, no_grad), the "
                    "best of them is the round's rate; tsai in a fresh subprocess per round; "
                    "order alternates",
           "params": {**{n: n_params(t.model) for n, t in timers.items()},
                      "tsai_resnet": rounds[0]["tsai"]["params"]},
           "tsai_python": str(args.tsai_python), "tsai_torch": rounds[0]["tsai_torch"],
           "summary": summary, "rounds": rounds}
    atomic_write_json(args.out, res)
    for n, v in summary.items():
        print(f"{n} / tsai_resnet over {args.rounds} rounds: " + "; ".join(
            f"{k} median ×{s['median_ratio']:.3f} (×{s['min']:.3f}–×{s['max']:.3f}, ahead in "
            f"{s['rounds_ahead']}, sign test p {s['sign_test_p']})" for k, s in v.items()))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
