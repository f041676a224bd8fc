#!/usr/bin/env bash
# Starts `llmwb-cli serve` on a free port and runs openai_client.mjs (the official `openai` npm
# package) against it, then stops the server with SIGINT and expects a clean exit.
# Usage: run_openai_client.sh LLMWB_CLI MODEL NPM_DIR SOURCE_DIR
set -euo pipefail
CLI=$1 MODEL=$2 NPM_DIR=$3 SRC=$4

fail() { echo "FAIL: $*" >&2; exit 1; }
command -v node >/dev/null || fail "node is not installed: this test drives the server with the official openai npm client (installer/install-deps.sh installs it)"
# The client: installed globally by installer/install-deps.sh, else into the build folder once.
MODULE_DIR=""
if command -v npm >/dev/null && [ -f "$(npm root -g 2>/dev/null)/openai/package.json" ]; then
  MODULE_DIR="$(npm root -g)"
elif [ -f "$NPM_DIR/node_modules/openai/package.json" ]; then
  MODULE_DIR="$NPM_DIR/node_modules"
else
  command -v npm >/dev/null || fail "npm is not installed and the openai package is not in $NPM_DIR"
  mkdir -p "$NPM_DIR"
  npm install --prefix "$NPM_DIR" --no-audit --no-fund --loglevel=error openai@6 >&2 ||
    fail "npm could not install the openai package into $NPM_DIR (no network or registry?)"
  MODULE_DIR="$NPM_DIR/node_modules"
fi

LOG=$(mktemp)
"$CLI" serve --model "$MODEL" --port 0 --threads 2 --max-model-len 128 >"$LOG" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true; rm -f "$LOG"' EXIT
URL=""
for _ in $(seq 1 300); do
  URL=$(sed -n 's/^llmwb-cli serve: ready: \(http:[^ ]*\)\/v1 .*/\1/p' "$LOG")
  [ -n "$URL" ] && break
  kill -0 $PID 2>/dev/null || { cat "$LOG" >&2; fail "the server exited before it was ready"; }
  sleep 0.1
done
[ -n "$URL" ] || { cat "$LOG" >&2; fail "the server did not become ready in 30 s"; }
echo "server at $URL (pid $PID)"

node "$SRC/openai_client.mjs" "$URL" "$CLI" "$MODEL" "$MODULE_DIR" "$PID"

kill -INT $PID
rc=0
wait $PID || rc=$?
cat "$LOG"
[ $rc -eq 0 ] || fail "the server exited with status $rc after SIGINT (expected a clean 0)"
echo "server stopped cleanly"
