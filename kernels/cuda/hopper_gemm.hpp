// A warp-specialised GEMM on Hopper's instructions (kernels/cuda/hopper_gemm.cu):
// the pattern a FlashAttention-3-class kernel is built from, small enough to
// read in one sitting and to check against a host product. Compiled for sm_90a
// on the GPU and for the simulator (docs/cudasim.md); the interface has no
// CUDA types, so a test can call either build.
#pragma once

#include <string>

#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

// C (m x n, row-major) = A (m x k, row-major) · Bᵀ, B n x k row-major: both
// operands K-major. Elements are bf16 (`bf16`) or fp16, C in the same type,
// accumulated in fp32. m, n, k ≥ 1; n and k multiples of 8 (TMA's 16-byte
// strides); pointers 16-byte aligned device memory. One launch on the default
// stream (the simulator: on `host_threads` host threads); returns when it is done.
// Throws std::invalid_argument for sizes it cannot take, DeviceError on CUDA errors.
void hopper_gemm(const void* a, const void* b, void* c, int m, int n, int k, bool bf16, int host_threads);

// Whether this build's device can run hopper_gemm (the GPU: compute capability
// 9.0 exactly, sm_90a code); `why` says why not.
bool hopper_gemm_runs_here(std::string& why);

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
