#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what is missing, builds
# (Release, with the GUI and, where the toolkit exists, the CUDA kernels), runs every CTest test
# (engine, CLI, GUI offscreen; GPU tests skip without a GPU), then the .deb built from that
# build, installed, run and purged (tests/package), then the GPU tests on the CPU's
# CUDA emulator (tests/cuda_emu), then the engine tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer, then the GGUF / safetensors fuzzers for a
# bounded time (LLMWB_FUZZ_SECONDS per target, default 60, the targets side by side). Each
# stage's wall time is printed at the end, before the summary line.
#
# Every build goes through ccache (installer/install-deps.sh installs it): with CCACHE_BASEDIR
# at the checkout, a fresh clone anywhere on the machine, and a developer's build configured
# with the same flags, reuse the objects of earlier runs. Each stage builds only the targets its
# tests run.
#
#   bash tests/run-all.sh            # everything
#   LLMWB_QUICK=1 bash tests/run-all.sh   # the Release build and its tests only
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${LLMWB_JOBS:-$(nproc)}"
cd "$root"

# Wall time per stage: `stage NAME` closes the stage before it; the table is printed at the end.
stage_names=()
stage_secs=()
stage_name=""
stage_start=0
SECONDS=0
end_stage() {
  if [[ -n $stage_name ]]; then
    stage_names+=("$stage_name")
    stage_secs+=($((SECONDS - stage_start)))
    stage_name=""
  fi
}
stage() {
  end_stage
  stage_name=$1
  stage_start=$SECONDS
  echo "== $1"
}

stage "Dependencies"
bash installer/install-deps.sh

# The compiler launcher for every configure below (and tests/fuzz/run-fuzz.sh). NOHASHDIR: the
# working directory stays out of the hash of -g builds, so another clone's objects match too.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
            -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  ccache --zero-stats >/dev/null
fi
export LLMWB_CMAKE_LAUNCHER="${launcher[*]}"

# Runs ctest in a build folder (a failure stops the script) and adds its test count to $passed.
# CTest starts the tests that took longest last time first (its CTestCostData.txt), so the slow
# ones run beside the many short ones instead of alone at the end; that record is kept outside
# the checkout (LLMWB_CTEST_COST_DIR) so that a fresh clone starts with it too.
passed=0
cost_dir="${LLMWB_CTEST_COST_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/llmwb/ctest-cost}"
run_ctest() {
  local dir=$1
  shift
  local log cost="$dir/Testing/Temporary/CTestCostData.txt" kept
  kept="$cost_dir/$(basename "$dir").txt"
  if [[ ! -f $cost && -f $kept ]]; then
    mkdir -p "$(dirname "$cost")"
    cp "$kept" "$cost"
  fi
  log=$(mktemp)
  (cd "$dir" && QT_QPA_PLATFORM=offscreen ctest --output-on-failure -j "$jobs" "$@") 2>&1 | tee "$log"
  local n
  n=$(sed -n 's/.*tests passed, 0 tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)
  passed=$((passed + ${n:-0}))
  rm -f "$log"
  if [[ -f $cost ]]; then
    mkdir -p "$cost_dir" && cp "$cost" "$kept" || true
  fi
}

stage "Release build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
cmake --build build -j "$jobs"

stage "Tests (Release)"
run_ctest build --timeout 1200

if [[ -z "${LLMWB_QUICK:-}" ]]; then
  # The .deb from the Release build folder, installed, run and purged as a user would
  # (tests/package/check-package.sh; it skips, saying why, unless root or LLMWB_PACKAGE_TEST=1).
  stage "Package: build, install, run, remove the .deb"
  log=$(mktemp)
  bash tests/package/check-package.sh build 2>&1 | tee "$log"
  n=$(sed -n 's/^check-package: \([0-9]*\) checks passed$/\1/p' "$log" | tail -1)
  passed=$((passed + ${n:-0}))
  rm -f "$log"

  # The CUDA backend (kernels, CudaModel, graphs, cuBLAS calls) on the CPU emulator: the gpu
  # tests run for real where no GPU exists (tests/cuda_emu; needs only the toolkit's headers).
  emu=OFF
  [[ -f /usr/local/cuda/include/cuda_runtime_api.h ]] && emu=ON
  if [[ $emu == ON ]]; then
    stage "CUDA emulator build"
    cmake -S . -B build-emu -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLMWB_BUILD_GUI=OFF \
      -DLLMWB_CUDA_EMULATION=ON "${launcher[@]}" >/dev/null
    cmake --build build-emu -j "$jobs" --target test_cuda_emulator test_cuda_kernels test_cuda_model test_cuda_parallel
    stage "CUDA backend on the CPU emulator"
    run_ctest build-emu -L gpu-emu --timeout 1800
  else
    echo "== CUDA emulator tests skipped: no CUDA toolkit headers at /usr/local/cuda"
  fi

  # The engine tests under the sanitizers, and (emulated) the CUDA kernels: there device memory
  # is ASan's heap, so a kernel's access one byte outside an allocation fails the test.
  # Only what runs here: the engine tests (llmwb_engine_tests) and the two emulated CUDA tests,
  # not the CLI, the examples or the CUDA model test.
  stage "ASan + UBSan build"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLLMWB_SANITIZE=ON \
    -DLLMWB_BUILD_GUI=OFF -DLLMWB_ENABLE_CUDA=OFF -DLLMWB_CUDA_EMULATION=$emu "${launcher[@]}" >/dev/null
  asan_targets=(llmwb_engine_tests)
  [[ $emu == ON ]] && asan_targets+=(test_cuda_kernels test_cuda_emulator)
  cmake --build build-asan -j "$jobs" --target "${asan_targets[@]}"
  stage "Engine tests under ASan + UBSan"
  export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
  run_ctest build-asan -L engine --timeout 1800
  if [[ $emu == ON ]]; then
    stage "CUDA kernels on the emulator under ASan + UBSan"
    run_ctest build-asan -R "^emu_test_cuda_(kernels|emulator)$" --timeout 1800
  fi

  stage "Fuzzing the model-file parsers (build, then ${LLMWB_FUZZ_SECONDS:-60} s per target)"
  bash tests/fuzz/run-fuzz.sh "${LLMWB_FUZZ_SECONDS:-60}"

fi

end_stage
echo "== Wall time per stage"
for i in "${!stage_names[@]}"; do
  printf '  %-64s %5d s\n' "${stage_names[$i]}" "${stage_secs[$i]}"
done
printf '  %-64s %5d s\n' "total" "$SECONDS"
if [[ ${#launcher[@]} -gt 0 ]]; then
  ccache --show-stats 2>/dev/null | grep -E '^ *(Hits|Misses):' | sed 's/^ */  ccache /' || true
fi

# Every test above passed (any failure has stopped the script).
echo "Summary: $passed passed, 0 failed"
