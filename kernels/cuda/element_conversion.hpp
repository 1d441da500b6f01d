// Conversions between fp32 and the 16-bit storage types of CUDA kernels (fp16,
// bf16), all round-to-nearest-even, as the harness rounds on the host.
// CUDA only (device code); sm_80 and later for bf16.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "kernels/cuda/cuda_build.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename Element>
__device__ __forceinline__ Element from_float(float x);
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Two adjacent elements, stored with one 32-bit access.
template <typename Element>
struct ElementPair;
template <>
struct ElementPair<__half> {
  using type = __half2;
  __device__ __forceinline__ static type make(float first, float second) { return __floats2half2_rn(first, second); }
};
template <>
struct ElementPair<__nv_bfloat16> {
  using type = __nv_bfloat162;
  __device__ __forceinline__ static type make(float first, float second) {
    return __floats2bfloat162_rn(first, second);
  }
};

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
