#!/usr/bin/env bash
# Installs every Debian package that building, running and testing LLM Workbench needs.
# Idempotent: quiet and quick when everything is already there.
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build pkg-config git ccache
  qt6-base-dev qt6-base-dev-tools libqt6svg6 libgl-dev
  libqcustomplot-dev
  libsentencepiece-dev
  libpcre2-dev libicu-dev
  nlohmann-json3-dev
  libgtest-dev
  clang libclang-rt-14-dev
  xvfb xauth
  desktop-file-utils appstream
  fonts-dejavu-core
  time
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
