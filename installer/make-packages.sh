#!/usr/bin/env bash
# Builds the .deb and .tar.gz packages into build/ from a Release build (installs the build
# dependencies first). The .deb carries llmwb, llmwb-cli, the desktop entry, the icons, the
# AppStream data and the stories260K demo model (taken from ../shared/models; never committed).
#
#   bash installer/make-packages.sh             # build/llmwb_VERSION_ARCH.deb and .tar.gz
#   bash installer/make-packages.sh --install   # ... then install the .deb with apt (sudo)
#
# tests/package/check-package.sh builds, installs, runs and removes the .deb as CI does.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
install=0
case "${1:-}" in
  "") ;;
  --install) install=1 ;;
  *) echo "usage: bash installer/make-packages.sh [--install]" >&2; exit 2 ;;
esac
bash "$root/installer/install-deps.sh"
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
# Only what the packages hold (installer/packaging.cmake), not the tests.
cmake --build "$root/build" -j "$(nproc)" --target llmwb llmwb-cli
(cd "$root/build" && cpack -G DEB && cpack -G TGZ)
ls -l "$root"/build/llmwb*.deb "$root"/build/llmwb*.tar.gz
if [[ $install == 1 ]]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  deb="$(ls -t "$root"/build/llmwb_*.deb | head -1)"
  $SUDO apt-get install -y "$deb"
  echo "installed: run llmwb (or LLM Workbench in the applications menu) and llmwb-cli; remove with: sudo apt purge llmwb"
fi
