#!/usr/bin/env bash
# README command 2: set up and run the whole test suite. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev,local
# the browser test drives Debian's chromium (Playwright's own browser download does not work offline)
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get install -y -q chromium >/dev/null || { apt-get update -q && apt-get install -y -q chromium >/dev/null; }
fi
source scripts/env.sh
export PAPERCHAT_TEST_DATA=${PAPERCHAT_TEST_DATA:-$(cd .. && pwd)/shared/data}
exec .venv/bin/python -m pytest "$@"
