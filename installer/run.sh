#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: installs what is missing, builds, and opens the
# workbench GUI on a model (stories260K from ../shared by default). Without a display, it runs a
# headless generation instead.
#
#   bash installer/run.sh [--model PATH] [other llmwb / llmwb-cli generate flags]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash installer/install-deps.sh
if [[ ! -x build/app/llmwb-cli ]] || [[ -n "$(find engine app ui kernels -newer build/app/llmwb-cli -type f 2>/dev/null | head -1)" ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j "$(nproc)"
fi
if [[ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" && -x build/app/gui/llmwb ]]; then
  exec build/app/gui/llmwb "$@"
fi
echo "(no display: headless generation with llmwb-cli; set DISPLAY to open the GUI)" >&2
if [[ $# -eq 0 ]]; then
  set -- --prompt "Once upon a time" --temperature 0.8 --top-p 0.95 --max-tokens 200 --seed 42 --max-model-len 512
fi
exec build/app/llmwb-cli generate "$@"
