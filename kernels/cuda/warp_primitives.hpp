// Every PTX instruction the CUDA kernels issue, one thin inline wrapper each:
// asynchronous 16-byte copies global -> shared (cp.async, with zero fill past
// the end of a tensor), ldmatrix (plain and transposed), mma.sync m16n8k16 with
// fp32 accumulation for fp16 and bf16, shared-memory loads and stores by
// shared-window address, fp32 atomic adds to global memory, packing two fp32
// values into one 16-bit pair register, and the approximate exp2 the online
// softmax runs on. Fragment layouts are documented, and tested on the CPU, in
// kernels/cuda/flash_geometry.hpp.
//
// Each wrapper has two forms: the inline PTX the GPU runs, and the simulator's
// (harness/cudasim, docs/cudasim.md), which executes the same instruction with
// the PTX ISA's semantics on the host. Nothing else in the kernels is PTX.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

#include "kernels/cuda/cuda_build.hpp"
#include "kernels/cuda/element_conversion.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

// Shared-memory operands are 32-bit shared-window addresses (cvta.to.shared).
__device__ __forceinline__ std::uint32_t shared_address(const void* pointer) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(pointer));
}

// Copies 16 bytes from `source` to shared memory, or writes 16 zero bytes when
// `inside` is false (then `source` is not read, but must still be a valid address).
__device__ __forceinline__ void copy_async_16(std::uint32_t destination, const void* source, bool inside) {
  const int source_bytes = inside ? 16 : 0;
#if defined(ATTNBENCH_CUDASIM)
  cudasim::cp_async_cg_16(destination, source, static_cast<std::uint32_t>(source_bytes));
#else
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(destination), "l"(source),
               "r"(source_bytes));
#endif
}
__device__ __forceinline__ void copy_async_commit() {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::cp_async_commit_group();
#else
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
// Waits until at most `kPending` committed groups of this thread are still in flight.
template <int kPending>
__device__ __forceinline__ void copy_async_wait() {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::cp_async_wait_group(kPending);
#else
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
#endif
}

// Four 8x8 matrices of 16-bit elements; lane l gives the address of row l % 8 of
// matrix l / 8 and receives, in register i, matrix i's row l / 4, columns
// 2(l % 4) and 2(l % 4) + 1.
__device__ __forceinline__ void load_matrix_x4(std::uint32_t (&registers)[4], std::uint32_t row_address) {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::ldmatrix_m8n8_b16(4, false, row_address, registers);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(registers[0]), "=r"(registers[1]), "=r"(registers[2]), "=r"(registers[3])
               : "r"(row_address));
#endif
}
// The same four matrices transposed: register i holds matrix i's rows 2(l % 4)
// and 2(l % 4) + 1 of column l / 4.
__device__ __forceinline__ void load_matrix_x4_transposed(std::uint32_t (&registers)[4],
                                                          std::uint32_t row_address) {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::ldmatrix_m8n8_b16(4, true, row_address, registers);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(registers[0]), "=r"(registers[1]), "=r"(registers[2]), "=r"(registers[3])
               : "r"(row_address));
#endif
}

// D = A B + D for one warp: A 16x16 (row), B 16x8 (col), D 16x8 fp32.
template <typename Element>
__device__ __forceinline__ void mma_16x8x16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                            std::uint32_t b1);
template <>
__device__ __forceinline__ void mma_16x8x16<__half>(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                    std::uint32_t b1) {
#if defined(ATTNBENCH_CUDASIM)
  const std::uint32_t b[2] = {b0, b1};
  cudasim::mma_m16n8k16_f32(cudasim::MmaInputType::f16, d, a, b, d);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}
template <>
__device__ __forceinline__ void mma_16x8x16<__nv_bfloat16>(float (&d)[4], const std::uint32_t (&a)[4],
                                                           std::uint32_t b0, std::uint32_t b1) {
#if defined(ATTNBENCH_CUDASIM)
  const std::uint32_t b[2] = {b0, b1};
  cudasim::mma_m16n8k16_f32(cudasim::MmaInputType::bf16, d, a, b, d);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// 32-bit and vector loads and stores by shared-window address.
__device__ __forceinline__ void store_shared_u32(std::uint32_t address, std::uint32_t value) {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::store_shared_u32(address, value);
#else
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(address), "r"(value));
#endif
}
__device__ __forceinline__ float2 load_shared_float2(std::uint32_t address) {
#if defined(ATTNBENCH_CUDASIM)
  const uint2 bits = cudasim::load_shared_v2_u32(address);
  float2 value;
  std::memcpy(&value.x, &bits.x, sizeof(float));
  std::memcpy(&value.y, &bits.y, sizeof(float));
  return value;
#else
  float2 value;
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(value.x), "=f"(value.y) : "r"(address));
  return value;
#endif
}
__device__ __forceinline__ uint4 load_shared_16(std::uint32_t address) {
#if defined(ATTNBENCH_CUDASIM)
  return cudasim::load_shared_v4_u32(address);
#else
  uint4 chunk;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(chunk.x), "=r"(chunk.y), "=r"(chunk.z), "=r"(chunk.w)
               : "r"(address));
  return chunk;
#endif
}

// Adds (first, second) to the two fp32 values at `address` (8-byte aligned):
// one red.global.add.v2.f32 on sm_90, two red.global.add.f32 before it. The
// simulator models sm_90.
__device__ __forceinline__ void add_pair_to_global(float* address, float first, float second) {
#if defined(ATTNBENCH_CUDASIM) || __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float2*>(address), make_float2(first, second));
#else
  atomicAdd(address, first);
  atomicAdd(address + 1, second);
#endif
}

// Two fp32 values rounded to the 16-bit type, `first` in the low half.
template <typename Element>
__device__ __forceinline__ std::uint32_t pack_pair(float first, float second) {
  const typename ElementPair<Element>::type pair = ElementPair<Element>::make(first, second);
  std::uint32_t bits;
  std::memcpy(&bits, &pair, sizeof(bits));
  return bits;
}

// exp2 through the SFU (ex2.approx, relative error about 2^-22, flushes
// subnormals); exp2(-inf) = 0. An Exp policy for kernels/common/online_softmax.hpp.
struct FastExp2 {
  __device__ __forceinline__ static float exp(float x) {
#if defined(ATTNBENCH_CUDASIM)
    return cudasim::ex2_approx_ftz_f32(x);
#else
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
#endif
  }
  __device__ __forceinline__ static float log(float x) { return ::log2f(x); }
};

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
