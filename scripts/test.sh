#!/usr/bin/env bash
# Set up and run the test suite. Tests read data from $KAIRO_DATA_DIR (default ../shared/data).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
export KAIRO_DATA_DIR="${KAIRO_DATA_DIR:-$(cd .. && pwd)/shared/data}"
python -m pytest "$@"
