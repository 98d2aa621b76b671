#!/usr/bin/env bash
# README command 2: set up and run the whole test suite. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
export PAPERCHAT_TEST_DATA=${PAPERCHAT_TEST_DATA:-$(cd .. && pwd)/shared/data}
exec .venv/bin/python -m pytest "$@"
