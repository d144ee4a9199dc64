#!/usr/bin/env bash
# Set up and run the test suite: every test except the studies' (tests/studies/, marker
# `study`, run with `-m study`). Arguments go to pytest: `-m "not slow"` is the quick
# developer loop. Tests read data from $KAIRO_DATA_DIR (default ../shared/data); those
# needing the Winding archive (marker `winding`) skip without it, saying where it goes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
export KAIRO_DATA_DIR="${KAIRO_DATA_DIR:-$(cd .. && pwd)/shared/data}"
python -m pytest "$@"
