#!/usr/bin/env bash
# run-fuzz.sh [seconds-per-target, default 60]
#
# Configures build-fuzz with clang (libFuzzer + ASan + UBSan), builds every fuzz target
# (tests/fuzz/fuzz_*.cpp), seeds a temporary corpus (stories260K.gguf from ../shared and
# small generated GGUF / safetensors files; nothing is written into the repository), runs the
# targets side by side (one core each), each for the given time, and exits non-zero when any
# target finds a crash. Crashing inputs are kept in build-fuzz/fuzz-artifacts/<target>/.
#
# Environment: LLMWB_FUZZ_BUILD (build folder), LLMWB_SHARED_DIR (the shared/ folder),
# LLMWB_FUZZ_JOBS (build parallelism, default 2), LLMWB_FUZZ_PARALLEL (targets run at once,
# default: the number of cores), LLMWB_CMAKE_LAUNCHER (extra configure flags, e.g. the ccache
# launcher that tests/run-all.sh passes).
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${LLMWB_FUZZ_BUILD:-$root/build-fuzz}"
shared="${LLMWB_SHARED_DIR:-$root/../shared}"
jobs="${LLMWB_FUZZ_JOBS:-2}"
parallel="${LLMWB_FUZZ_PARALLEL:-$(nproc)}"
read -r -a launcher <<<"${LLMWB_CMAKE_LAUNCHER:-}"

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DLLMWB_FUZZ=ON \
  -DLLMWB_BUILD_GUI=OFF -DLLMWB_ENABLE_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLLMWB_SHARED_DIR="$shared" "${launcher[@]}" >/dev/null
cmake --build "$build" -j "$jobs" --target fuzz

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Little-endian integers and GGUF strings as bytes, for the generated seeds.
le32() { printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) \
  $(($1 >> 16 & 255)) $(($1 >> 24 & 255)))"; }
le64() { le32 $(($1 & 0xffffffff)); le32 $(($1 >> 32 & 0xffffffff)); }
gstr() { le64 "${#1}"; printf '%s' "$1"; }

# GGUF seeds: the real file, and a tiny one with a string, a u32, an array and one F32 tensor.
mkdir -p "$work/seeds/gguf" "$work/seeds/safetensors"
if [[ -f "$shared/models/stories260K/stories260K.gguf" ]]; then
  cp "$shared/models/stories260K/stories260K.gguf" "$work/seeds/gguf/"
fi
{
  printf 'GGUF'; le32 3; le64 1; le64 3
  gstr general.architecture; le32 8; gstr llama
  gstr general.alignment; le32 4; le32 32
  gstr tokenizer.ggml.scores; le32 9; le32 6; le64 2; le32 0; le32 0x3f800000
  gstr w; le32 2; le64 2; le64 1; le32 0; le64 0
} >"$work/seeds/gguf/tiny.gguf"
# Pad to the 32-byte alignment, then the tensor's 2 floats.
size=$(stat -c %s "$work/seeds/gguf/tiny.gguf")
head -c $(( (32 - size % 32) % 32 )) /dev/zero >>"$work/seeds/gguf/tiny.gguf"
{ le32 0x3f800000; le32 0x40000000; } >>"$work/seeds/gguf/tiny.gguf"

# safetensors seed: u64 header length, JSON header, data (one 2x2 F32 tensor).
header='{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"__metadata__":{"format":"pt"}}'
while (( ${#header} % 8 != 0 )); do header+=' '; done
{ le64 "${#header}"; printf '%s' "$header"; le32 0x3f800000; le32 0; le32 0; le32 0x3f800000; } \
  >"$work/seeds/safetensors/tiny.safetensors"
if [[ -f "$shared/models/stories260K/hf/model.safetensors" ]]; then
  cp "$shared/models/stories260K/hf/model.safetensors" "$work/seeds/safetensors/"
fi

# One target: its log in $work/NAME.log, its exit status in $work/NAME.status.
fuzz_one() {
  local exe=$1 name kind corpus artifacts
  name="$(basename "$exe")"
  kind="${name#fuzz_}"
  corpus="$work/corpus/$name"
  artifacts="$build/fuzz-artifacts/$name"
  mkdir -p "$corpus" "$artifacts"
  cp "$work/seeds/$kind"/* "$corpus/" 2>/dev/null || true
  echo "== $name: ${seconds}s, corpus $(ls "$corpus" | wc -l) seeds"
  local rc=0
  "$exe" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 >"$work/$name.log" 2>&1 || rc=$?
  echo "$rc" >"$work/$name.status"
}

targets=()
for exe in "$build"/tests/fuzz/fuzz_*; do
  [[ -x "$exe" && -f "$exe" ]] && targets+=("$exe")
done
running=0
for exe in "${targets[@]}"; do
  if ((running >= parallel)); then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$exe" &
  running=$((running + 1))
done
wait

status=0
for exe in "${targets[@]}"; do
  name="$(basename "$exe")"
  if [[ "$(cat "$work/$name.status" 2>/dev/null)" == 0 ]]; then
    echo "== $name"
    grep -E "^(stat::number_of_executed_units|stat::new_units_added|Done)" "$work/$name.log" || true
  else
    echo "!! $name failed; last lines of its log (inputs in $build/fuzz-artifacts/$name):"
    tail -n 40 "$work/$name.log"
    status=1
  fi
done
exit "$status"
