#!/usr/bin/env bash
# Set up and run kairo's main job: `kairo demo`, which writes results/demo/report.md.
# Data: $KAIRO_DATA_DIR if set, else ../shared/data if present, else the user cache dir
# (downloaded on first use when online).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
if [ -z "${KAIRO_DATA_DIR:-}" ] && [ -d ../shared/data ]; then
  export KAIRO_DATA_DIR="$(cd ../shared/data && pwd)"
fi
kairo demo --out "${1:-results/demo}" --overwrite
