#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what is missing, builds
# (Release, with the GUI and, where the toolkit exists, the CUDA kernels), runs every CTest test
# (engine, CLI, GUI offscreen; GPU tests skip without a GPU), then the GPU tests on the CPU's
# CUDA emulator (tests/cuda_emu), then the engine tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer, then the GGUF / safetensors fuzzers for a
# bounded time.
#
#   bash tests/run-all.sh            # everything
#   LLMWB_QUICK=1 bash tests/run-all.sh   # the Release build and its tests only
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${LLMWB_JOBS:-$(nproc)}"
cd "$root"

bash installer/install-deps.sh

# Runs ctest in a build folder (a failure stops the script) and adds its test count to $passed.
passed=0
run_ctest() {
  local dir=$1
  shift
  local log
  log=$(mktemp)
  (cd "$dir" && QT_QPA_PLATFORM=offscreen ctest --output-on-failure -j "$jobs" "$@") 2>&1 | tee "$log"
  local n
  n=$(sed -n 's/.*tests passed, 0 tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)
  passed=$((passed + ${n:-0}))
  rm -f "$log"
}

echo "== Release build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"

echo "== Tests (Release)"
run_ctest build --timeout 1200

if [[ -z "${LLMWB_QUICK:-}" ]]; then
  # The CUDA backend (kernels, CudaModel, graphs, cuBLAS calls) on the CPU emulator: the gpu
  # tests run for real where no GPU exists (tests/cuda_emu; needs only the toolkit's headers).
  emu=OFF
  [[ -f /usr/local/cuda/include/cuda_runtime_api.h ]] && emu=ON
  if [[ $emu == ON ]]; then
    echo "== CUDA backend on the CPU emulator"
    cmake -S . -B build-emu -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLMWB_BUILD_GUI=OFF \
      -DLLMWB_CUDA_EMULATION=ON >/dev/null
    cmake --build build-emu -j "$jobs" --target test_cuda_emulator test_cuda_kernels test_cuda_model
    run_ctest build-emu -L gpu-emu --timeout 1800
  else
    echo "== CUDA emulator tests skipped: no CUDA toolkit headers at /usr/local/cuda"
  fi

  # The engine tests under the sanitizers, and (emulated) the CUDA kernels: there device memory
  # is ASan's heap, so a kernel's access one byte outside an allocation fails the test.
  echo "== Engine tests under ASan + UBSan"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLLMWB_SANITIZE=ON \
    -DLLMWB_BUILD_GUI=OFF -DLLMWB_ENABLE_CUDA=OFF -DLLMWB_CUDA_EMULATION=$emu >/dev/null
  cmake --build build-asan -j "$jobs"
  export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
  run_ctest build-asan -L engine --timeout 1800
  if [[ $emu == ON ]]; then
    echo "== CUDA kernels on the emulator under ASan + UBSan"
    run_ctest build-asan -R "^emu_test_cuda_(kernels|emulator)$" --timeout 1800
  fi

  echo "== Fuzzing the model-file parsers"
  bash tests/fuzz/run-fuzz.sh "${LLMWB_FUZZ_SECONDS:-60}"

fi

# Every test above passed (any failure has stopped the script).
echo "Summary: $passed passed, 0 failed"
