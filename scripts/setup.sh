#!/usr/bin/env bash
# Create .venv (if missing) and install kairo into it. torch is pinned to the CPU build and
# installed first so pip never resolves a multi-GB CUDA wheel on its own.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q "torch==2.13.0"
# The [fly] extra (flygym 1.2.1 + MuJoCo), the [fpga] extra (yowasp Yosys + nextpnr) and the
# [ray] extra (sweeps and grids on a Ray cluster) are installed by default: the demo and the
# tests use them. KAIRO_EXTRAS="" leaves them out; KAIRO_EXTRAS="fly,fpga,ray,bench" adds more.
EXTRAS="${KAIRO_EXTRAS-fly,fpga,ray}"
python -m pip install -q -e ".[test${EXTRAS:+,$EXTRAS}]"
