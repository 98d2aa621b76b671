#!/usr/bin/env bash
# README command 2: set up and run the whole test suite. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev,local,dist
# the browser test drives Debian's chromium (Playwright's own browser download does not work offline)
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get install -y -q chromium >/dev/null || { apt-get update -q && apt-get install -y -q chromium >/dev/null; }
fi
source scripts/env.sh
# gates: types and lint, clean on src/ (and tests/ for lint) before any test runs
.venv/bin/mypy src
.venv/bin/ruff check src tests
export PAPERCHAT_TEST_DATA=${PAPERCHAT_TEST_DATA:-$(cd .. && pwd)/shared/data}

# a real Chroma server on a free loopback port with a temporary path, for tests/test_chroma_server.py;
# stopped by its process id when the tests end
chroma_dir=$(mktemp -d)
chroma_port=$(.venv/bin/python -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
.venv/bin/chroma run --path "$chroma_dir" --host 127.0.0.1 --port "$chroma_port" >"$chroma_dir.log" 2>&1 &
chroma_pid=$!
trap 'kill "$chroma_pid" 2>/dev/null; wait "$chroma_pid" 2>/dev/null || true; rm -rf "$chroma_dir" "$chroma_dir.log"' EXIT
for _ in $(seq 1 120); do
  if .venv/bin/python -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1] + '/api/v2/heartbeat', timeout=1)" "http://127.0.0.1:$chroma_port" 2>/dev/null; then
    break
  fi
  sleep 0.5
done
export PAPERCHAT_TEST_CHROMA_URL="http://127.0.0.1:$chroma_port"

# a local Ray cluster on loopback (2 CPUs: two embedding workers; no dashboard, no usage stats) for
# tests/test_ray_ingest.py. `ray start --block` stays in the foreground and stops the cluster's processes when
# it is killed, so it is ended by its process id like the Chroma server (`ray stop` would end every cluster here)
free_port() { .venv/bin/python -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }
ray_dir=$(mktemp -d /tmp/ray-XXXXXX)
ray_port=$(free_port)
.venv/bin/ray start --head --block --node-ip-address=127.0.0.1 --port="$ray_port" --ray-client-server-port="$(free_port)" \
  --dashboard-port="$(free_port)" --dashboard-agent-listen-port="$(free_port)" \
  --num-cpus=2 --include-dashboard=false --disable-usage-stats --object-store-memory=200000000 --temp-dir="$ray_dir" >"$ray_dir.log" 2>&1 &
ray_pid=$!
# (`|| true`: under set -e a killed server's status, 143, would otherwise become the script's exit status)
trap 'kill "$chroma_pid" "$ray_pid" 2>/dev/null; wait "$chroma_pid" "$ray_pid" 2>/dev/null || true; rm -rf "$chroma_dir" "$chroma_dir.log" "$ray_dir" "$ray_dir.log"' EXIT
for _ in $(seq 1 120); do
  grep -q "Ray runtime started" "$ray_dir.log" 2>/dev/null && break
  kill -0 "$ray_pid" 2>/dev/null || { cat "$ray_dir.log" >&2; break; }
  sleep 0.5
done
export PAPERCHAT_TEST_RAY_ADDRESS="127.0.0.1:$ray_port"
.venv/bin/python -m pytest "$@"
