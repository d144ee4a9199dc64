"""Logic-circuit inference throughput on one core: uint8 MNIST images in memory → classes.

For each circuit, the same images go through

* kairo      — ``CompiledCircuit.predict_images``: thresholds, bit transposition, gates, vote
               counting and argmax in the generated C (512-bit words on AVX-512);
* anchor     — difflogic's method as it describes it, as in ``kairo logic bench``: NumPy
               thresholds and packs 64 images per uint64 word, a generated C function with one
               statement per gate, popcount group sums (gcc -O3 -march=native); also timed
               without the NumPy packing ("C only");
* torchlogix — torchlogix 0.2.2's own generated C (``Circuit.get_c_code(pack_bits=64)``,
               ``circuit_bench_bool``: bool inputs packed in C, one statement per gate, per-bit
               group sums), compiled with the same gcc -O3 -march=native. torchlogix does not
               import on Python 3.11 (a 3.12-only nested f-string in circuit.py), so its
               ``circuit.py`` is loaded by a Python ≥ 3.12 with stand-in modules for torch and
               numpy (its C generator uses neither) and only writes the C source; the timing
               runs here. NumPy thresholds the images to the bools it expects.
* kairo_bits — NumPy thresholding + ``CompiledCircuit.predict`` (informational).

All must predict the same classes (asserted). The memory-bandwidth bound is one core's read
bandwidth (a C loop summing a 1 GiB uint64 buffer) / 784 bytes per image.

Usage::

    KAIRO_DATA_DIR=../shared/data python benchmarks/logic_inference.py [--circuit PATH ...]
        [--images N] [--repeats R] [--quick]

Without --circuit it trains two dense circuits with ``kairo logic train`` into --work (reused
when present): 0 vs 1 (2 × 2000 neurons, 300 iterations) and ten classes (2 × 4000, 600).
Writes benchmarks/results/logic_inference.json (``_quick`` with --quick).
"""

from __future__ import annotations

import argparse
import ctypes
import datetime as dt
import glob
import json
import logging
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np

from kairo.logic import (ANCHOR_BATCH, ANCHOR_FLAGS, AnchorCircuit, Circuit, bench_circuit,
                         bench_images, read_bandwidth, time_calls)
from kairo.logic.backends import build_shared_library, compile_c, find_compiler
from kairo.results import cpu_model

from _common import atomic_write_json, loadavg, pip_install_no_deps

HERE = Path(__file__).resolve().parent
TORCHLOGIX = "torchlogix==0.2.2"
DEFAULT_CIRCUITS = {
    "dense_0v1": ["--classes", "0,1", "--hidden", "2000", "--layers", "2", "--iters", "300"],
    "dense_10class": ["--hidden", "4000", "--layers", "2", "--iters", "600"],
}

# Loaded by Python >= 3.12: builds a torchlogix Circuit from our netlist, prints its C.
_TLX_GEN = r"""
import importlib.util, json, sys, types
tlx_dir, netlist = sys.argv[1], sys.argv[2]
# circuit.py imports torch and numpy at the top; its C generator uses neither
for name in ("numpy", "torch", "torch.fx", "torch.fx.experimental",
             "torch.fx.experimental.const_fold"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["torch.fx.experimental.const_fold"].split_const_subgraphs = None
spec = importlib.util.spec_from_file_location("tlx_circuit", tlx_dir + "/torchlogix/circuit.py")
tlx = importlib.util.module_from_spec(spec)
sys.modules["tlx_circuit"] = tlx
spec.loader.exec_module(tlx)
d = json.load(open(netlist))
gates = []
for gid, op, a, b in d["gates"]:
    kind, use_a, use_b = tlx.LUT_ID_TO_GATE[op]
    ins = [x for x, used in ((a, use_a), (b, use_b)) if used] + [-1, -1]
    gates.append(tlx.Gate(gate_id=gid, op=kind, in0=ins[0], in1=ins[1]))
nid = d["n_nodes"]
sums = [tlx.SumReduction(node_id=nid + c, input_ids=g) for c, g in enumerate(d["groups"])]
circ = tlx.Circuit(n_inputs=d["n_inputs"], input_shape=[d["n_inputs"]], gates=gates,
                   outputs=[s.node_id for s in sums], output_shape=[len(sums)], sum_nodes=sums)
sys.stdout.write(circ.get_c_code(pack_bits=64))
"""


def train_circuits(work: Path, data_dir: str | None) -> dict[str, Path]:
    from kairo.cli import main

    out = {}
    for name, argv in DEFAULT_CIRCUITS.items():
        run = work / name
        if not (run / "circuit.json").is_file():
            pre = ["--data-dir", data_dir] if data_dir else []
            if main([*pre, "logic", "train", *argv, "--out", str(run), "--overwrite"]) != 0:
                raise SystemExit(f"training {name} failed")
        out[name] = run / "circuit.json"
    return out


# ------------------------------------------------------------------------------ torchlogix
def find_python312() -> str | None:
    cands = [shutil.which(n) for n in ("python3.13", "python3.12")]
    cands += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python3")))
    for exe in filter(None, cands):
        r = subprocess.run([exe, "-c", "import sys; print(sys.version_info >= (3, 12))"],
                           capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip() == "True":
            return exe
    return None


def torchlogix_source(circuit: Circuit, tlx_dir: Path, py: str) -> str:
    """torchlogix's generated C for our netlist (live gates, one SumReduction per class)."""
    k = circuit.n_inputs
    live = circuit.live_nodes()
    gates = [[int(k + g), int(circuit.ops[g]), int(circuit.a[g]), int(circuit.b[g])]
             for g in np.flatnonzero(live[k:])]
    grp = circuit.n_outputs // circuit.n_classes
    outs = circuit.outputs.tolist()
    net = {"n_inputs": k, "n_nodes": circuit.n_nodes, "gates": gates,
           "groups": [outs[c * grp:(c + 1) * grp] for c in range(circuit.n_classes)]}
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "net.json").write_text(json.dumps(net))
        (Path(tmp) / "gen.py").write_text(_TLX_GEN)
        r = subprocess.run([py, str(Path(tmp) / "gen.py"), str(tlx_dir),
                            str(Path(tmp) / "net.json")], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"torchlogix C generation failed: {r.stderr[-1500:]}")
    return r.stdout


def bench_torchlogix(circuit, images, ref, tlx_dir: Path, repeats: int) -> dict:
    py = find_python312()
    if py is None:
        return {"skipped": "no Python >= 3.12 found to run torchlogix's circuit.py"}
    if not (tlx_dir / "torchlogix" / "circuit.py").is_file():
        err = pip_install_no_deps(tlx_dir, TORCHLOGIX)
        if err:
            return {"skipped": f"pip install --no-deps {TORCHLOGIX} failed: {err}"}
    src = torchlogix_source(circuit, tlx_dir, py)
    t0 = time.perf_counter()
    built = build_shared_library(src, flags=ANCHOR_FLAGS, stem="torchlogix")
    lib = ctypes.CDLL(str(built.path))
    compile_s = time.perf_counter() - t0
    fn = lib.circuit_bench_bool
    fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int], None
    grp = circuit.n_outputs // circuit.n_classes
    odt = np.uint8 if grp <= 0xFF else np.uint16 if grp <= 0xFFFF else np.uint32
    th = circuit.image_input.compare_thresholds()
    n, nc, batch = len(images), circuit.n_classes, ANCHOR_BATCH
    pred = np.empty(n, dtype=np.int64)
    sums = np.empty((batch, nc), dtype=odt)

    def run_batch(bits, s0, m):
        fn(bits.ctypes.data, sums.ctypes.data, bits.shape[0])
        pred[s0:s0 + m] = sums[:m].argmax(axis=1)       # first maximum, as everywhere

    def full():
        for i, chunk in enumerate(AnchorCircuit.batches(images)):
            bits = np.ascontiguousarray((chunk[:, None, :] > th).reshape(len(chunk), -1))
            run_batch(bits, i * batch, min(batch, n - i * batch))

    full()
    if not np.array_equal(pred, ref):
        raise SystemExit("torchlogix's compiled C disagrees with kairo")
    t_full = time_calls(full, repeats)
    # C alone (circuit_bench_bool on bools thresholded beforehand; the argmax stays)
    pre = [np.ascontiguousarray((c[:, None, :] > th).reshape(len(c), -1))
           for c in AnchorCircuit.batches(images)]

    def c_only():
        for i, bits in enumerate(pre):
            run_batch(bits, i * batch, min(batch, n - i * batch))

    t_c = time_calls(c_only, repeats)
    pre.clear()
    return {"images_per_s": n / min(t_full), "c_only_images_per_s": n / min(t_c),
            "seconds_best": min(t_full),
            "method": "torchlogix 0.2.2 Circuit.get_c_code(pack_bits=64) + circuit_bench_bool "
                      "(bools packed in C, per-bit group sums) after NumPy thresholding; "
                      "argmax in NumPy",
            "flags": list(ANCHOR_FLAGS), "compile_seconds": round(compile_s, 2),
            "library_from_cache": built.from_cache,
            "python_for_codegen": py, "predictions_equal": True}


# ------------------------------------------------------------------------------ main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--circuit", action="append", help="circuit.json (repeatable)")
    ap.add_argument("--images", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--work", default="/tmp/kairo-logic-bench",
                    help="where default circuits are trained and torchlogix is installed")
    ap.add_argument("--no-torchlogix", action="store_true")
    ap.add_argument("--quick", action="store_true", help="50,000 images, 2 repeats")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    # the per-implementation images/s lines of `kairo logic bench` as they are measured
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.quick:
        args.images, args.repeats = 50_000, 2
    data_dir = os.environ.get("KAIRO_DATA_DIR")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    circuits = ({Path(p).parent.name or Path(p).stem: Path(p) for p in args.circuit}
                if args.circuit else train_circuits(work, data_dir))

    res = {"script": "benchmarks/logic_inference.py",
           "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
           "cpu": cpu_model(), "cpu_count": os.cpu_count(), "python": platform.python_version(),
           "versions": {p: version(p) for p in ("kairo-circuits", "numpy")},
           "gcc": subprocess.run([*find_compiler(), "--version"], capture_output=True,
                                 text=True).stdout.splitlines()[0],
           "images": args.images, "repeats": args.repeats, "circuits": {}}
    print(f"load {loadavg()}; measuring read bandwidth …")
    lb = loadavg()
    bw = read_bandwidth(1 << 30)
    res["bandwidth"] = {**bw, "loadavg_before": lb, "loadavg_after": loadavg()}
    print(f"read bandwidth {bw['bytes_per_s'] / 1e9:.1f} GB/s")
    for name, path in circuits.items():
        c = Circuit.load(path)
        images, labels, source = bench_images(c, args.images, data_dir)
        print(f"\n{name}: {c.n_gates} gates, {c.n_outputs} outputs, {c.n_classes} classes; "
              f"{len(images):,} images ({source})")
        r = bench_circuit(c, images, repeats=args.repeats, bandwidth_bytes=0)
        ref = np.empty(len(images), np.int32)
        compile_c(c).predict_images(images, out=ref)
        if not args.no_torchlogix:
            lb = loadavg()
            t = bench_torchlogix(c, images, ref.astype(np.int64), work / "torchlogix",
                                 args.repeats)
            r["implementations"]["torchlogix"] = {**t, "loadavg_before": lb,
                                                  "loadavg_after": loadavg()}
            if "images_per_s" in t:
                print(f"torchlogix: {t['images_per_s']:,.0f} images/s "
                      f"(C only {t['c_only_images_per_s']:,.0f})")
                r["speedup_vs_torchlogix"] = (r["implementations"]["kairo"]["images_per_s"]
                                              / t["images_per_s"])
                r["speedup_vs_torchlogix_c_only"] = (
                    r["implementations"]["kairo"]["images_per_s"] / t["c_only_images_per_s"])
            else:
                print(f"torchlogix skipped: {t['skipped']}")
        bound = bw["bytes_per_s"] / images.shape[1]
        r["bandwidth_bound_images_per_s"] = bound
        r["kairo_fraction_of_bound"] = r["implementations"]["kairo"]["images_per_s"] / bound
        r["images_source"] = source
        r["circuit_path"] = str(path)
        if labels is not None:
            r["accuracy"] = float((ref[:len(labels)] == labels).mean())
        res["circuits"][name] = r
        print(f"kairo / anchor {r.get('speedup_vs_anchor', float('nan')):.1f}×, "
              f"{r['kairo_fraction_of_bound']:.0%} of the bandwidth bound "
              f"({bound:,.0f} images/s)")
        del images
    out = Path(args.out) if args.out else \
        HERE / "results" / f"logic_inference{'_quick' if args.quick else ''}.json"
    atomic_write_json(out, res)
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
