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
  libcpp-httplib-dev
  libgtest-dev
  libopenmpi-dev openmpi-bin
  clang libclang-rt-14-dev
  xvfb xauth
  desktop-file-utils appstream
  fonts-dejavu-core
  time
)

# The server's test drives it with the official `openai` npm client (tests/server): node from
# Debian where none is installed, and the package installed globally once.
if ! command -v node >/dev/null; then PKGS+=(nodejs npm); fi
openai_client() {
  if command -v npm >/dev/null && [ ! -f "$(npm root -g)/openai/package.json" ]; then
    echo "install-deps: npm install -g openai@6"
    ${SUDO:-} npm install -g --no-audit --no-fund --loglevel=error openai@6 >/dev/null
  fi
}

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if [ ${#missing[@]} -eq 0 ]; then
  openai_client
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
openai_client
echo "install-deps: done"
