// launch.cuh — kernel launches and dynamic shared memory spelled so that the same kernels/*.cu
// build with nvcc and, in the emulation build (tests/cuda_emu), with the host compiler:
//   LLMWB_LAUNCH(grid, block, smem, stream, kernel<T>)(args...)   // kernel<T><<<grid, block, smem, stream>>>(args...)
//   LLMWB_DYNAMIC_SHARED(float, smem);                             // extern __shared__ float smem[];
#pragma once

#if defined(LLMWB_CUDA_EMU)
#define LLMWB_LAUNCH(grid, block, smem, stream, ...) LLMWB_EMU_LAUNCH(grid, block, smem, stream, __VA_ARGS__)
#define LLMWB_DYNAMIC_SHARED(type, name) LLMWB_EMU_DYNAMIC_SHARED(type, name)
#else
#define LLMWB_LAUNCH(grid, block, smem, stream, ...) __VA_ARGS__<<<grid, block, smem, stream>>>
#define LLMWB_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif
