#!/usr/bin/env bash
# Builds the .deb and .tar.gz packages into build/ (after a Release build).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/installer/install-deps.sh"
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
cmake --build "$root/build" -j "$(nproc)"
(cd "$root/build" && cpack -G DEB && cpack -G TGZ)
ls -l "$root"/build/llmwb*.deb "$root"/build/llmwb*.tar.gz
