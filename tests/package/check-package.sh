#!/usr/bin/env bash
# The .deb as a user gets it: builds it from a Release build folder, installs it (dpkg -i, then
# apt-get -f install for its dependencies), runs the installed binaries (llmwb-cli --version, the
# stories260K greedy generation from the installed demo model equal to the published text,
# llmwb --smoke-test under Xvfb), then purges it and checks that nothing of it is left.
#
#   bash tests/package/check-package.sh [BUILD_DIR]     (default: build)
#
# It installs into and removes from THIS system, so it runs only as root or with
# LLMWB_PACKAGE_TEST=1 (then through sudo); otherwise it says so and skips. It refuses to run
# where llmwb is installed already (it would remove that copy). The GUI's settings written by the
# smoke test go to a scratch HOME, deleted at the end. Prints "check-package: N checks passed".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
[[ -f $build/CMakeCache.txt ]] || { echo "check-package: error: $build is no CMake build folder (configure a Release build first)" >&2; exit 1; }
shared="$(readlink -f "$(sed -n 's/^LLMWB_SHARED_DIR:PATH=//p' "$build/CMakeCache.txt")")"
reference="$shared/models/stories260K/greedy-from-bos.txt"

if [[ $(id -u) -ne 0 && -z "${LLMWB_PACKAGE_TEST:-}" ]]; then
  echo "check-package: skipped: it installs the llmwb package into this system and removes it again;" \
       "run it as root or with LLMWB_PACKAGE_TEST=1 (uses sudo)"
  exit 0
fi
SUDO=()
[[ $(id -u) -ne 0 ]] && SUDO=(sudo)
if dpkg-query -W -f='${Status}' llmwb 2>/dev/null | grep -q "install ok installed"; then
  echo "check-package: error: llmwb is installed on this system already; this check would replace and" \
       "remove it. Remove it first (apt-get purge llmwb) or run the check elsewhere" >&2
  exit 1
fi

checks=0
fail() {
  echo "check-package: FAILED: $*" >&2
  exit 1
}
pass() {
  checks=$((checks + 1))
  echo "  ok   $*"
}

scratch="$(mktemp -d)"
installed=0
cleanup() {
  # A failure in the middle leaves no package behind.
  if [[ $installed == 1 ]]; then "${SUDO[@]}" dpkg --purge llmwb >/dev/null 2>&1 || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT

# Every path named *llmwb* in the system's folders, before and after: the purge must restore it.
system_llmwb_paths() {
  find /usr /etc /opt /var -name '*llmwb*' -not -path '/var/tmp/*' -not -path '/var/cache/*' 2>/dev/null | sort
}
system_llmwb_paths >"$scratch/before.txt"

echo "== the package"
# Configured again so that --version names the commit checked out now (llmwb/build_info.h).
cmake "$build" >/dev/null
cmake --build "$build" --target llmwb llmwb-cli
mkdir -p "$build/packages"
rm -f "$build"/packages/llmwb_*.deb
(cd "$build" && cpack -G DEB -B "$build/packages" >"$scratch/cpack.log" 2>&1) || { cat "$scratch/cpack.log"; fail "cpack -G DEB"; }
deb="$(ls "$build"/packages/llmwb_*.deb)"
echo "  $deb ($(du -h "$deb" | cut -f1))"
depends="$(dpkg-deb -f "$deb" Depends)"
echo "  Depends: $depends"
if grep -qiE 'cuda|cudart|cublas|nvidia' <<<"$depends"; then fail "the package depends on CUDA: $depends"; fi
pass "the package depends on no CUDA package"
dpkg-deb -c "$deb" | awk '{print $6}' >"$scratch/contents.txt"
for f in ./usr/bin/llmwb ./usr/bin/llmwb-cli ./usr/share/llmwb/models/stories260K/stories260K.gguf \
         ./usr/share/applications/llmwb.desktop ./usr/share/metainfo/io.github.llmwb.metainfo.xml \
         ./usr/share/icons/hicolor/scalable/apps/llmwb.svg ./usr/share/icons/hicolor/256x256/apps/llmwb.png; do
  grep -qxF "$f" "$scratch/contents.txt" || fail "the package has no $f"
done
pass "the package carries both binaries, the demo model, the desktop entry, the icons and the AppStream data"
cmp -s "$shared/models/stories260K/stories260K.gguf" <(dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/share/llmwb/models/stories260K/stories260K.gguf) \
  || fail "the packaged demo model differs from $shared/models/stories260K/stories260K.gguf"
pass "the packaged demo model is shared/'s stories260K.gguf"

echo "== install"
export DEBIAN_FRONTEND=noninteractive
installed=1
if ! "${SUDO[@]}" dpkg -i "$deb" >"$scratch/dpkg.log" 2>&1; then
  "${SUDO[@]}" apt-get -f install -y -qq >>"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "apt-get -f install"; }
fi
"${SUDO[@]}" apt-get -f install -y -qq >>"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "apt-get -f install"; }
dpkg-query -W -f='${Status}' llmwb | grep -q "install ok installed" || { cat "$scratch/dpkg.log"; fail "llmwb is not installed"; }
pass "dpkg -i and apt-get -f install leave llmwb installed"
dpkg -L llmwb >"$scratch/files.txt"

# Every library the installed binaries load comes from a Debian package: none from the CUDA
# toolkit (/usr/local/cuda) or the build tree, so the package runs where no toolkit exists.
for bin in /usr/bin/llmwb-cli /usr/bin/llmwb; do
  env -u LD_LIBRARY_PATH ldd "$bin" >"$scratch/ldd.txt"
  if grep -q "not found" "$scratch/ldd.txt"; then cat "$scratch/ldd.txt"; fail "$bin: a library is not found"; fi
  while read -r lib; do
    # Debian 12 merged /lib into /usr/lib: a package may name either path.
    dpkg -S "$lib" >/dev/null 2>&1 || dpkg -S "/usr$lib" >/dev/null 2>&1 \
      || dpkg -S "$(readlink -f "$lib")" >/dev/null 2>&1 || fail "$bin loads $lib, which no Debian package holds"
  done < <(awk '$2 == "=>" && $3 ~ /^\// {print $3}' "$scratch/ldd.txt")
done
pass "every library the installed binaries load belongs to a Debian package (no CUDA toolkit library)"

desktop-file-validate /usr/share/applications/llmwb.desktop || fail "desktop-file-validate"
pass "the installed desktop entry validates (desktop-file-validate)"
appstreamcli validate --no-net --strict /usr/share/metainfo/io.github.llmwb.metainfo.xml >"$scratch/as.txt" 2>&1 \
  || { cat "$scratch/as.txt"; fail "appstreamcli validate"; }
pass "the installed AppStream metadata validates (appstreamcli validate --strict)"
icon="$(sed -n 's/^Icon=//p' /usr/share/applications/llmwb.desktop)"
ls /usr/share/icons/hicolor/*/apps/"$icon".* >/dev/null 2>&1 || fail "no hicolor icon named $icon"
pass "the desktop entry's icon ($icon) is installed in the hicolor theme"

echo "== the installed binaries"
# Run as a user would: from a scratch folder, with no LLMWB_MODEL, a scratch HOME for the GUI's
# settings. Where a mount namespace can be made (root), the CUDA toolkit (/usr/local/cuda) and
# the source tree's stories260K are hidden under empty tmpfs mounts: the binaries then run as on
# a machine without the toolkit, and the installed demo is the only model the default can be.
cd "$scratch"
hide=()
hidden="(the CUDA toolkit and the source tree's model stay visible: no mount namespace here)"
if unshare -m true 2>/dev/null; then
  dirs="$shared/models/stories260K"
  [[ -d /usr/local/cuda ]] && dirs+=":$(readlink -f /usr/local/cuda)"
  hide=(unshare -m sh -c 'IFS=:; for d in $0; do mount -t tmpfs none "$d" || exit 1; done; unset IFS; exec "$@"' "$dirs")
  hidden="(with ${dirs//:/ and } hidden)"
fi
echo "  the installed binaries run $hidden"
run() { env -u LLMWB_MODEL -u LD_LIBRARY_PATH HOME="$scratch/home" XDG_CONFIG_HOME="$scratch/home/.config" \
          XDG_DATA_HOME="$scratch/home/.local/share" XDG_CACHE_HOME="$scratch/home/.cache" \
          XDG_RUNTIME_DIR="$scratch/runtime" "${hide[@]}" "$@"; }
mkdir -p "$scratch/home" "$scratch/runtime" && chmod 700 "$scratch/runtime"
version="$(run /usr/bin/llmwb-cli --version)" || fail "llmwb-cli --version"
echo "$version" | sed 's/^/  | /'
[[ $version == "$("$build/app/llmwb-cli" --version)" ]] || fail "the installed llmwb-cli --version differs from the build's"
[[ $version =~ ^llmwb\ [0-9]+\.[0-9]+\.[0-9]+\ \(commit\ ([0-9a-f]+(-dirty)?|unknown)\) ]] || fail "llmwb-cli --version: no version and commit"
pass "llmwb-cli --version names the version, commit and build options of this build"
[[ "$(run /usr/bin/llmwb --version)" == "$version" ]] || fail "llmwb --version differs from llmwb-cli --version"
pass "llmwb --version says the same"

# The published greedy output from BOS (as tests/engine/test_stories260k.cpp compares it).
run /usr/bin/llmwb-cli generate --prompt "" --temperature 0 --max-tokens 256 --max-model-len 512 \
  >"$scratch/greedy.txt" 2>"$scratch/greedy.err" || { cat "$scratch/greedy.err"; fail "llmwb-cli generate"; }
[[ "$(sed -e 's/[[:space:]]*$//' "$scratch/greedy.txt")" == "$(sed -e 's/[[:space:]]*$//' "$reference")" ]] \
  || { diff "$reference" "$scratch/greedy.txt" | head; fail "the greedy generation differs from $reference"; }
pass "llmwb-cli generate with no --model (the installed demo) equals the published greedy text"

smoke=(run /usr/bin/llmwb --smoke-test)
if command -v xvfb-run >/dev/null 2>&1; then
  smoke=(run env -u QT_QPA_PLATFORM xvfb-run -a -s "-screen 0 1600x1000x24" /usr/bin/llmwb --smoke-test)
else
  echo "  (no xvfb-run: the smoke test runs offscreen)"
  export QT_QPA_PLATFORM=offscreen
fi
"${smoke[@]}" >"$scratch/smoke.txt" 2>&1 || { cat "$scratch/smoke.txt"; fail "llmwb --smoke-test"; }
grep "smoke-test: ok" "$scratch/smoke.txt" | sed 's/^/  | /'
grep -q "smoke-test: ok: /usr/share/llmwb/models/stories260K/stories260K.gguf loaded" "$scratch/smoke.txt" \
  || { cat "$scratch/smoke.txt"; fail "llmwb --smoke-test did not open the installed demo model"; }
pass "llmwb --smoke-test opens the installed demo, generates and renders every view"

echo "== removal"
"${SUDO[@]}" apt-get purge -y -qq llmwb >"$scratch/purge.log" 2>&1 || { cat "$scratch/purge.log"; fail "apt-get purge llmwb"; }
installed=0
if dpkg-query -W -f='${Status}' llmwb 2>/dev/null | grep -q "installed"; then fail "llmwb is still installed"; fi
pass "apt-get purge removes llmwb"
left=()
while read -r f; do
  # A folder others share (/usr/bin) stays; the package's own files and folders go.
  if [[ -d $f && ! -L $f ]]; then
    [[ $f == *llmwb* ]] && left+=("$f")
  elif [[ -e $f || -L $f ]]; then
    left+=("$f")
  fi
done <"$scratch/files.txt"
[[ ${#left[@]} -eq 0 ]] || fail "left after the purge: ${left[*]}"
pass "every file dpkg -L listed ($(wc -l <"$scratch/files.txt") paths) is gone"
system_llmwb_paths >"$scratch/after.txt"
diff "$scratch/before.txt" "$scratch/after.txt" >"$scratch/diff.txt" || { cat "$scratch/diff.txt"; fail "paths named *llmwb* under /usr /etc /opt /var differ from before"; }
pass "no path named *llmwb* under /usr /etc /opt /var is left"

echo "check-package: $checks checks passed"
