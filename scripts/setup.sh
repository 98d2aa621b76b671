#!/usr/bin/env bash
# Create .venv and install paperchat with its pinned dependencies (offline-safe: no model downloads).
# Usage: bash scripts/setup.sh [EXTRAS]   e.g. "dev,local" (dev = test tools, local = llama.cpp answerer).
# Re-running is cheap: it reinstalls only when pyproject.toml or this script changed, or new extras are asked.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
EXTRAS=${1:-}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.paperchat-installed
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
have_hash=$(cut -d' ' -f1 "$stamp" 2>/dev/null || true)
have_extras=$(cut -s -d' ' -f2 "$stamp" 2>/dev/null || true)
missing=""
for e in ${EXTRAS//,/ }; do
  case ",$have_extras," in *",$e,"*) ;; *) missing="$missing $e" ;; esac
done
if [ "$have_hash" != "$want" ] || [ -n "$missing" ]; then
  [ "$have_hash" = "$want" ] && EXTRAS=$(echo "$have_extras,$EXTRAS" | sed 's/^,//;s/,$//')
  .venv/bin/python -m pip install -q --upgrade pip
  # torch first and pinned: the CPU build on disk, never a multi-GB CUDA build.
  .venv/bin/python -m pip install -q "torch==2.13.0"
  # the local extra builds llama-cpp-python from source once (~5 min); pip caches the wheel after that.
  target="."
  [ -n "$EXTRAS" ] && target=".[$EXTRAS]"
  .venv/bin/python -m pip install -q -e "$target"
  echo "$want $EXTRAS" > "$stamp"
fi
