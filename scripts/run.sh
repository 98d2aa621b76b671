#!/usr/bin/env bash
# README command 1: set up, ingest the bundled demo corpus on first start, run the app.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
exec .venv/bin/python app.py "$@"
