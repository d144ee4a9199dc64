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
python -m pip install -q -e ".[test]${KAIRO_EXTRAS:+,$KAIRO_EXTRAS}"
