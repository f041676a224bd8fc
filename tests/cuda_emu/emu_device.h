// emu_device.h — force-included (-include) into every kernels/*.cu of the emulation build: the
// CUDA device-side language on the host compiler. Function qualifiers vanish, __shared__
// variables become thread_local statics (the fibers of one block share the OS thread that runs
// them, and a block runs start to end on one thread), the built-in index variables read the
// running fiber's context, and barriers, shuffles and launches go to the emulator (emu.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "emu.h"

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __noinline__
#undef __shared__
#undef __constant__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __shared__ static thread_local
#define __constant__ static
#define __launch_bounds__(...)

#define threadIdx (::llmwb::emu::ctx().thread_idx)
#define blockIdx (::llmwb::emu::ctx().block_idx)
#define blockDim (::llmwb::emu::ctx().block_dim)
#define gridDim (::llmwb::emu::ctx().grid_dim)

// Kernel launch and dynamic shared memory (kernels/launch.cuh chooses these or CUDA's syntax).
#define LLMWB_EMU_LAUNCH(grid, block, smem, stream, ...) \
  ::llmwb::emu::launcher(&__VA_ARGS__, #__VA_ARGS__, grid, block, smem, stream)
#define LLMWB_EMU_DYNAMIC_SHARED(type, name) type* const name = static_cast<type*>(::llmwb::emu::ctx().dyn_smem)

// cuda_runtime.h's typed overload (nvcc only): the kernel's address is its identity.
template <class... P>
inline cudaError_t cudaFuncSetAttribute(void (*kernel)(P...), cudaFuncAttribute attr, int value) {
  return ::cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), attr, value);
}

inline void __syncthreads() { ::llmwb::emu::syncthreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { ::llmwb::emu::syncwarp(mask); }

template <class T>
inline T __llmwb_emu_shfl(unsigned mask, T v, int arg, int width, bool xor_mode) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "shuffles move at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  bits = ::llmwb::emu::shuffle(mask, bits, arg, width, xor_mode);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return __llmwb_emu_shfl(mask, v, lane_mask, width, true);
}
template <class T>
inline T __shfl_sync(unsigned mask, T v, int src_lane, int width = 32) {
  return __llmwb_emu_shfl(mask, v, src_lane, width, false);
}

// Device math and bit casts the kernels use. The fast-math intrinsics are computed exactly:
// the tests' tolerances must hold for the accurate results the device approximates.
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float __int_as_float(int u) { float f; std::memcpy(&f, &u, 4); return f; }
inline int __float_as_int(float f) { int u; std::memcpy(&u, &f, 4); return u; }
template <class T>
inline T __ldg(const T* p) { return *p; }

// CUDA's integer min/max accept mixed operand types.
template <class A, class B>
inline std::common_type_t<A, B> min(A a, B b) {
  return a < b ? a : b;
}
template <class A, class B>
inline std::common_type_t<A, B> max(A a, B b) {
  return a < b ? b : a;
}
