// The CUDA C++ device surface for the simulator's build of the kernels
// (docs/cudasim.md): the function and parameter qualifiers, threadIdx / blockIdx / blockDim /
// gridDim, __syncthreads, __syncwarp, the __shfl*_sync family, atomicAdd on
// fp32 and float2, __cvta_generic_to_shared, and the entry points that
// kernels/cuda/warp_primitives.hpp's simulator forms and kernels/cuda/
// kernel_launch.hpp call. Force-included into every simulated translation unit.
//
// Every entry point is an out-of-line function of the simulator runtime, and
// everything between it and the kernel is always inlined, so the return address
// an entry point sees lies in the kernel's own code: the simulator uses it as
// the instruction's program counter, to tell one barrier or collective from
// another and to name source lines in its reports.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "harness/cudasim/half_types.hpp"
#include "harness/cudasim/instruction_types.hpp"
#include "harness/cudasim/vector_types.hpp"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __grid_constant__
#define CUDASIM_INLINE inline __attribute__((always_inline))

namespace cudasim {

// What a simulated thread knows about itself (PTX %tid, %ctaid, %ntid, %nctaid).
struct ThreadIdentity {
  uint3 thread_index;
  uint3 block_index;
  dim3 block_dim;
  dim3 grid_dim;
};
extern thread_local const ThreadIdentity* current_identity;

// Barriers and warp collectives (execution.cpp, instructions.cpp).
void barrier_sync();
void named_barrier_sync(int id, int threads);
void named_barrier_arrive(int id, int threads);
void warp_sync(unsigned member_mask);
std::uint32_t shuffle_b32(ShuffleMode mode, std::uint32_t value, std::uint32_t b, std::uint32_t c,
                          unsigned member_mask);
// Shared memory: the CTA's window, and the conversion of a generic address into it.
unsigned char* dynamic_shared_memory();
void* static_shared_memory(const void* site, std::size_t bytes, std::size_t alignment);
std::uint32_t generic_to_shared(const void* pointer);
std::uint32_t load_shared_u32(std::uint32_t address);
void store_shared_u32(std::uint32_t address, std::uint32_t value);
uint2 load_shared_v2_u32(std::uint32_t address);
uint4 load_shared_v4_u32(std::uint32_t address);
// Asynchronous copies global -> shared.
void cp_async_cg_16(std::uint32_t shared_destination, const void* global_source, std::uint32_t source_bytes);
void cp_async_commit_group();
void cp_async_wait_group(int pending);
// Tensor-core operands and products.
void ldmatrix_m8n8_b16(int matrices, bool transposed, std::uint32_t row_address, std::uint32_t* registers);
void mma_m16n8k16_f32(MmaInputType type, float* d, const std::uint32_t* a, const std::uint32_t* b, const float* c);
float ex2_approx_ftz_f32(float x);
// Global atomics (red / atom .global.add).
float atomic_add_f32(float* address, float value);
float2 atomic_add_v2_f32(float2* address, float2 value);
// red.global.add.f32 (count 1) and its .v2 / .v4 forms (count 2, 4): address
// aligned to count·4 bytes.
void red_add_f32(float* address, const float* values, int count);
// ld.acquire.gpu.global.s32 and red.release.gpu.global.add.s32: a semaphore
// in global memory that orders CTAs (a spin on the load lets other CTAs run).
int ld_acquire_gpu_s32(const int* address);
void red_release_gpu_add_s32(int* address, int value);

// Hopper (sm_90, sm_90a). Warp collectives (instructions.cpp): elect.sync
// returns whether the caller is the leader and sets `leader` to its lane;
// stmatrix stores `registers` (1, 2 or 4) as ldmatrix would have loaded them.
bool elect_sync(unsigned member_mask, std::uint32_t* leader);
void stmatrix_m8n8_b16(int matrices, bool transposed, std::uint32_t row_address, const std::uint32_t* registers);
// mbarrier objects and the async-proxy fences (mbarrier.cpp).
void mbarrier_init(std::uint32_t address, std::uint32_t count);
void mbarrier_inval(std::uint32_t address);
std::uint64_t mbarrier_arrive(std::uint32_t address, std::uint32_t count);
std::uint64_t mbarrier_arrive_expect_tx(std::uint32_t address, std::uint32_t tx_count);
void mbarrier_expect_tx(std::uint32_t address, std::uint32_t tx_count);
bool mbarrier_try_wait_parity(std::uint32_t address, std::uint32_t parity);
bool mbarrier_try_wait_parity_hint(std::uint32_t address, std::uint32_t parity, std::uint32_t suspend_ns);
bool mbarrier_try_wait(std::uint32_t address, std::uint64_t state);
void fence_mbarrier_init();
void fence_proxy_async();
// Tensor copies through tensor maps and bulk async-groups (tensor_copy.cpp).
void tma_load(int rank, std::uint32_t destination, const void* tensor_map, const std::int32_t* coordinates,
              std::uint32_t mbarrier);
void tma_store(int rank, const void* tensor_map, const std::int32_t* coordinates, std::uint32_t source);
void bulk_commit_group();
void bulk_wait_group(int pending, bool reads_only);
// cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 (tensor_copy.cpp).
void bulk_reduce_add_f32(float* global_destination, std::uint32_t shared_source, std::uint32_t bytes);
// Warpgroup collectives (warpgroup.cpp). a_registers: the register form's A
// fragment (4 registers), or null for A from descriptor_a.
void wgmma_fence();
void wgmma_mma_async(MmaInputType type, int n, float* d, std::uint64_t descriptor_a, const std::uint32_t* a_registers,
                     std::uint64_t descriptor_b, bool scale_d, int scale_a, int scale_b, bool trans_a, bool trans_b);
void wgmma_commit_group();
void wgmma_wait_group(int pending);
void setmaxnreg(bool increase, int count);

}  // namespace cudasim

#define threadIdx (::cudasim::current_identity->thread_index)
#define blockIdx (::cudasim::current_identity->block_index)
#define blockDim (::cudasim::current_identity->block_dim)
#define gridDim (::cudasim::current_identity->grid_dim)
constexpr int warpSize = 32;

CUDASIM_INLINE void __syncthreads() { ::cudasim::barrier_sync(); }
CUDASIM_INLINE void __syncwarp(unsigned mask = 0xffffffffu) { ::cudasim::warp_sync(mask); }

// CUDA's shuffle intrinsics in terms of shfl.sync's b and c operands: c holds
// the segment mask (32 - width) << 8 and, but for .up, the clamp 0x1f.
template <typename T>
CUDASIM_INLINE T cudasim_shuffle(::cudasim::ShuffleMode mode, unsigned mask, T value, int b, std::uint32_t c) {
  static_assert(sizeof(T) == 4, "the simulator shuffles 32-bit values");
  return std::bit_cast<T>(::cudasim::shuffle_b32(mode, std::bit_cast<std::uint32_t>(value),
                                                 static_cast<std::uint32_t>(b), c, mask));
}
CUDASIM_INLINE std::uint32_t cudasim_segment(int width) { return static_cast<std::uint32_t>(32 - width) << 8; }
template <typename T>
CUDASIM_INLINE T __shfl_sync(unsigned mask, T value, int source_lane, int width = 32) {
  return cudasim_shuffle(::cudasim::ShuffleMode::index, mask, value, source_lane, cudasim_segment(width) | 0x1fu);
}
template <typename T>
CUDASIM_INLINE T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32) {
  return cudasim_shuffle(::cudasim::ShuffleMode::butterfly, mask, value, lane_mask, cudasim_segment(width) | 0x1fu);
}
template <typename T>
CUDASIM_INLINE T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  return cudasim_shuffle(::cudasim::ShuffleMode::up, mask, value, static_cast<int>(delta), cudasim_segment(width));
}
template <typename T>
CUDASIM_INLINE T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  return cudasim_shuffle(::cudasim::ShuffleMode::down, mask, value, static_cast<int>(delta),
                         cudasim_segment(width) | 0x1fu);
}

CUDASIM_INLINE float atomicAdd(float* address, float value) { return ::cudasim::atomic_add_f32(address, value); }
CUDASIM_INLINE float2 atomicAdd(float2* address, float2 value) {
  return ::cudasim::atomic_add_v2_f32(address, value);
}
CUDASIM_INLINE std::size_t __cvta_generic_to_shared(const void* pointer) {
  return ::cudasim::generic_to_shared(pointer);
}
