// The 16-bit floating-point types of CUDA's cuda_fp16.h and cuda_bf16.h as the
// simulator's build of the kernels sees them: __half, __half2, __nv_bfloat16,
// __nv_bfloat162 and the conversions the kernels call. Storage is the IEEE
// binary16 / bfloat16 bit pattern; every conversion from fp32 rounds to nearest
// even, through the harness's own host conversions (harness/dtype.hpp), so the
// simulated kernels round exactly as the harness does when it stores inputs.
#pragma once

#include <cstdint>

#include "harness/dtype.hpp"

struct __half {
  std::uint16_t __x;
};
struct __half2 {
  __half x, y;
};
struct __nv_bfloat16 {
  std::uint16_t __x;
};
struct __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
static_assert(sizeof(__half2) == 4 && sizeof(__nv_bfloat162) == 4, "pairs are one 32-bit register");

inline float __half2float(__half value) { return attnbench::half_to_float(value.__x); }
inline __half __float2half_rn(float value) { return __half{attnbench::float_to_half(value)}; }
inline __half2 __floats2half2_rn(float first, float second) {
  return __half2{__float2half_rn(first), __float2half_rn(second)};
}
inline __half __ushort_as_half(unsigned short bits) { return __half{bits}; }
inline unsigned short __half_as_ushort(__half value) { return value.__x; }

inline float __bfloat162float(__nv_bfloat16 value) { return attnbench::bfloat16_to_float(value.__x); }
inline __nv_bfloat16 __float2bfloat16_rn(float value) { return __nv_bfloat16{attnbench::float_to_bfloat16(value)}; }
inline __nv_bfloat162 __floats2bfloat162_rn(float first, float second) {
  return __nv_bfloat162{__float2bfloat16_rn(first), __float2bfloat16_rn(second)};
}
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short bits) { return __nv_bfloat16{bits}; }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 value) { return value.__x; }
