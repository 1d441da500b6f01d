// The Hopper (sm_90a) instructions of a warp-specialised kernel, one thin
// inline wrapper each, in two forms like warp_primitives.hpp's: the inline PTX
// the GPU runs, and a call into the simulator (harness/cudasim, docs/cudasim.md).
//
//   - wgmma: fence, mma_async m64nNk16 with fp32 accumulators and fp16/bf16
//     inputs, A from a shared-memory matrix descriptor (SS) or from registers
//     (RS), B from a descriptor, K- or MN-major; commit_group, wait_group;
//     the operands' matrix descriptors come from kernels/cuda/matrix_descriptor.hpp.
//   - mbarrier: init, inval, arrive, arrive.expect_tx, expect_tx,
//     try_wait.parity (with or without a suspend-time hint), try_wait on the
//     state arrive returned; fence.mbarrier_init.
//   - TMA: cp.async.bulk.tensor loads (1d-5d, completing on an mbarrier) and
//     stores (bulk async-groups), their commit and wait[.read]; tensor maps
//     are made on the host (kernels/cuda/tensor_map.hpp) and passed to the
//     kernel as `const __grid_constant__ CUtensorMap` parameters.
//   - fence.proxy.async.shared::cta, elect.sync, setmaxnreg, named barriers
//     (bar.sync / bar.arrive with an id and a thread count), stmatrix .x4.
//   - Global reductions: red.global.add.f32 and its .v2 / .v4 vector forms,
//     and cp.reduce.async.bulk .add.f32 from shared memory (bulk async-groups);
//     a semaphore in global memory: ld.acquire.gpu, red.release.gpu.add.
//
// Shared-memory operands are 32-bit shared-window addresses (shared_address()).
// The GPU form needs -gencode=arch=compute_90a,code=sm_90a for wgmma and
// setmaxnreg; everything else needs sm_90.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/cuda_build.hpp"
#include "kernels/cuda/matrix_descriptor.hpp"
#include "kernels/cuda/warp_primitives.hpp"

#if !defined(ATTNBENCH_CUDASIM)
#include "kernels/cuda/wgmma_asm.hpp"
#endif

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN

// ---- wgmma ---------------------------------------------------------------------------

__device__ __forceinline__ void wgmma_fence() {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::wgmma_fence();
#else
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit_group() {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::wgmma_commit_group();
#else
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
// Waits until at most kPending of the warpgroup's most recent wgmma-groups are in flight.
template <int kPending>
__device__ __forceinline__ void wgmma_wait_group() {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::wgmma_wait_group(kPending);
#else
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
#endif
}

// Whether a wgmma operand in shared memory is K-major (imm-trans 0) or MN-major (1).
enum class Major { k = 0, mn = 1 };

// D (64 x N, fp32, the m64nNk16 accumulator fragment: d[i] of warpgroup thread
// t is row 16·(t / 32) + (t % 32) / 4 + 8·((i >> 1) & 1), column 8·(i >> 2) +
// 2·(t % 4) + (i & 1)) = A (64 x 16, descriptor) · B (16 x N, descriptor) + D
// when `accumulate`, else A · B.
template <int N, typename Element, Major kMajorA = Major::k, Major kMajorB = Major::k>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], std::uint64_t descriptor_a, std::uint64_t descriptor_b,
                                         bool accumulate) {
  static_assert(N % 8 == 0 && N >= 8 && N <= 256, "wgmma m64nNk16: N is a multiple of 8 from 8 to 256");
  static_assert(std::is_same_v<Element, __half> || std::is_same_v<Element, __nv_bfloat16>, "fp16 or bf16 inputs");
  constexpr bool kBf16 = std::is_same_v<Element, __nv_bfloat16>;
#if defined(ATTNBENCH_CUDASIM)
  cudasim::wgmma_mma_async(kBf16 ? cudasim::MmaInputType::bf16 : cudasim::MmaInputType::f16, N, d, descriptor_a,
                           nullptr, descriptor_b, accumulate, 1, 1, kMajorA == Major::mn, kMajorB == Major::mn);
#else
  WgmmaAsm<N>::template ss<kBf16, static_cast<int>(kMajorA), static_cast<int>(kMajorB), 1, 1>(
      d, descriptor_a, descriptor_b, accumulate ? 1 : 0);
#endif
}

// The same with A from registers: a[r] of warpgroup thread t holds elements
// 2r and 2r + 1 of its A fragment (m64nNk16 "register fragment layout for
// matrix A": element e at row 16·(t / 32) + (t % 32) / 4 + 8·((e >> 1) & 1),
// column 2·(t % 4) + (e & 1) + 8·(e >> 2)), low half first.
template <int N, typename Element, Major kMajorB = Major::k>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const std::uint32_t (&a)[4], std::uint64_t descriptor_b,
                                         bool accumulate) {
  static_assert(N % 8 == 0 && N >= 8 && N <= 256, "wgmma m64nNk16: N is a multiple of 8 from 8 to 256");
  static_assert(std::is_same_v<Element, __half> || std::is_same_v<Element, __nv_bfloat16>, "fp16 or bf16 inputs");
  constexpr bool kBf16 = std::is_same_v<Element, __nv_bfloat16>;
#if defined(ATTNBENCH_CUDASIM)
  cudasim::wgmma_mma_async(kBf16 ? cudasim::MmaInputType::bf16 : cudasim::MmaInputType::f16, N, d, 0, a, descriptor_b,
                           accumulate, 1, 1, false, kMajorB == Major::mn);
#else
  WgmmaAsm<N>::template rs<kBf16, static_cast<int>(kMajorB), 1, 1>(d, a, descriptor_b, accumulate ? 1 : 0);
#endif
}

// Pins registers for the compiler: no read or write of `values` moves across
// this point. Applied to wgmma's accumulator and A registers after each issue
// and each wgmma.wait_group (as CUTLASS's warpgroup_fence_operand does): the
// wait's asm orders memory, not registers, so without it a read of finished
// accumulators may be hoisted above the wait, and ptxas then serialises every
// wgmma of the function (C7514). Nothing to do on the simulator, whose
// instructions are calls.
template <typename Register, int N>
__device__ __forceinline__ void wgmma_fence_operand(Register (&values)[N]) {
  static_assert(std::is_same_v<Register, float> || std::is_same_v<Register, std::uint32_t>, "fp32 or b32 registers");
#if defined(ATTNBENCH_CUDASIM)
  (void)values;
#else
#pragma unroll
  for (int i = 0; i < N; ++i) {
    if constexpr (std::is_same_v<Register, float>) {
      asm volatile("" : "+f"(values[i])::"memory");
    } else {
      asm volatile("" : "+r"(values[i])::"memory");
    }
  }
#endif
}

template <typename Register, int M, int N>
__device__ __forceinline__ void wgmma_fence_operand(Register (&values)[M][N]) {
#pragma unroll
  for (int m = 0; m < M; ++m) wgmma_fence_operand(values[m]);
}

// ---- mbarrier ------------------------------------------------------------------------

__device__ __forceinline__ void mbarrier_init(std::uint32_t barrier, std::uint32_t arrivals) {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::mbarrier_init(barrier, arrivals);
#else
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(barrier), "r"(arrivals) : "memory");
#endif
}
__device__ __forceinline__ void mbarrier_inval(std::uint32_t barrier) {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::mbarrier_inval(barrier);
#else
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"(barrier) : "memory");
#endif
}
// Makes this thread's mbarrier.init operations visible to the other threads
// (after the barrier that follows) and to the async proxy (TMA's complete-tx).
__device__ __forceinline__ void fence_mbarrier_init() {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::fence_mbarrier_init();
#else
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
// An arrive-on (release); returns the state of the phase before it.
__device__ __forceinline__ std::uint64_t mbarrier_arrive(std::uint32_t barrier) {
#if defined(ATTNBENCH_CUDASIM)
  return cudasim::mbarrier_arrive(barrier, 1);
#else
  std::uint64_t state;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];\n" : "=l"(state) : "r"(barrier) : "memory");
  return state;
#endif
}
// expect-tx of `bytes`, then an arrive-on: the producer's announcement of a TMA load's bytes.
__device__ __forceinline__ std::uint64_t mbarrier_arrive_expect_tx(std::uint32_t barrier, std::uint32_t bytes) {
#if defined(ATTNBENCH_CUDASIM)
  return cudasim::mbarrier_arrive_expect_tx(barrier, bytes);
#else
  std::uint64_t state;
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;\n"
               : "=l"(state)
               : "r"(barrier), "r"(bytes)
               : "memory");
  return state;
#endif
}
__device__ __forceinline__ void mbarrier_expect_tx(std::uint32_t barrier, std::uint32_t bytes) {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::mbarrier_expect_tx(barrier, bytes);
#else
  asm volatile("mbarrier.expect_tx.shared::cta.b64 [%0], %1;\n" ::"r"(barrier), "r"(bytes) : "memory");
#endif
}
// True once the phase of parity `parity` has completed (acquire); false when
// the thread's wait timed out first.
__device__ __forceinline__ bool mbarrier_try_wait_parity(std::uint32_t barrier, std::uint32_t parity) {
#if defined(ATTNBENCH_CUDASIM)
  return cudasim::mbarrier_try_wait_parity(barrier, parity);
#else
  std::uint32_t done;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(barrier), "r"(parity)
      : "memory");
  return done != 0;
#endif
}
// The same with a suspend-time hint (nanoseconds) for the time limit.
__device__ __forceinline__ bool mbarrier_try_wait_parity(std::uint32_t barrier, std::uint32_t parity,
                                                         std::uint32_t suspend_ns) {
#if defined(ATTNBENCH_CUDASIM)
  return cudasim::mbarrier_try_wait_parity_hint(barrier, parity, suspend_ns);
#else
  std::uint32_t done;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(barrier), "r"(parity), "r"(suspend_ns)
      : "memory");
  return done != 0;
#endif
}
// True once the phase `state` (from mbarrier_arrive) names has completed.
__device__ __forceinline__ bool mbarrier_try_wait(std::uint32_t barrier, std::uint64_t state) {
#if defined(ATTNBENCH_CUDASIM)
  return cudasim::mbarrier_try_wait(barrier, state);
#else
  std::uint32_t done;
  asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(done)
               : "r"(barrier), "l"(state)
               : "memory");
  return done != 0;
#endif
}
// Waits until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbarrier_wait_parity(std::uint32_t barrier, std::uint32_t parity) {
  while (!mbarrier_try_wait_parity(barrier, parity)) {
  }
}

// ---- TMA -----------------------------------------------------------------------------

// Copies the box at `coordinates` (innermost first) of the tensor `map`
// describes into shared memory at `destination` (128-byte aligned), swizzled
// as the map says; the copy performs a complete-tx of the box's bytes on
// `barrier`. Out-of-bound elements are zero-filled.
template <typename... Coordinates>
__device__ __forceinline__ void tma_load(std::uint32_t destination, const CUtensorMap* map, std::uint32_t barrier,
                                         Coordinates... coordinates) {
  constexpr int kRank = sizeof...(Coordinates);
  static_assert(kRank >= 1 && kRank <= 5, "cp.async.bulk.tensor copies 1 to 5 dimensions");
  const std::int32_t c[5] = {static_cast<std::int32_t>(coordinates)...};
#if defined(ATTNBENCH_CUDASIM)
  cudasim::tma_load(kRank, destination, map, c, barrier);
#else
  const auto tensor_map = reinterpret_cast<std::uint64_t>(map);
  if constexpr (kRank == 1) {
    asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2}], [%3];\n"
                 ::"r"(destination), "l"(tensor_map), "r"(c[0]), "r"(barrier) : "memory");
  } else if constexpr (kRank == 2) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"(destination), "l"(tensor_map), "r"(c[0]), "r"(c[1]), "r"(barrier) : "memory");
  } else if constexpr (kRank == 3) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
                 ::"r"(destination), "l"(tensor_map), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(barrier) : "memory");
  } else if constexpr (kRank == 4) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n"
                 ::"r"(destination), "l"(tensor_map), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(barrier) : "memory");
  } else {
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];\n"
                 ::"r"(destination), "l"(tensor_map), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "r"(barrier) : "memory");
  }
#endif
}

// Copies the box at `coordinates` from shared memory at `source` (128-byte
// aligned, laid out and swizzled as the map says) to the tensor; elements
// outside the tensor are not written. Completes in the thread's bulk async-groups.
template <typename... Coordinates>
__device__ __forceinline__ void tma_store(const CUtensorMap* map, std::uint32_t source, Coordinates... coordinates) {
  constexpr int kRank = sizeof...(Coordinates);
  static_assert(kRank >= 1 && kRank <= 5, "cp.async.bulk.tensor copies 1 to 5 dimensions");
  const std::int32_t c[5] = {static_cast<std::int32_t>(coordinates)...};
#if defined(ATTNBENCH_CUDASIM)
  cudasim::tma_store(kRank, map, c, source);
#else
  const auto tensor_map = reinterpret_cast<std::uint64_t>(map);
  if constexpr (kRank == 1) {
    asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group [%0, {%2}], [%1];\n"
                 ::"l"(tensor_map), "r"(source), "r"(c[0]) : "memory");
  } else if constexpr (kRank == 2) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%2, %3}], [%1];\n"
                 ::"l"(tensor_map), "r"(source), "r"(c[0]), "r"(c[1]) : "memory");
  } else if constexpr (kRank == 3) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];\n"
                 ::"l"(tensor_map), "r"(source), "r"(c[0]), "r"(c[1]), "r"(c[2]) : "memory");
  } else if constexpr (kRank == 4) {
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n"
                 ::"l"(tensor_map), "r"(source), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]) : "memory");
  } else {
    asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];\n"
                 ::"l"(tensor_map), "r"(source), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]) : "memory");
  }
#endif
}
__device__ __forceinline__ void bulk_commit_group() {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::bulk_commit_group();
#else
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#endif
}
// Waits until at most kPending of the thread's bulk async-groups are incomplete.
template <int kPending>
__device__ __forceinline__ void bulk_wait_group() {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::bulk_wait_group(kPending, false);
#else
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}
// … only until their reads of shared memory are done (the source may then be reused).
template <int kPending>
__device__ __forceinline__ void bulk_wait_group_read() {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::bulk_wait_group(kPending, true);
#else
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(kPending) : "memory");
#endif
}

// ---- global reductions -----------------------------------------------------------------

// PTX ISA "Parallel Synchronization and Communication Instructions: red":
// *address += value, atomically, relaxed, .gpu scope;
// nothing is returned. `address` points to global memory, 4-byte aligned.
__device__ __forceinline__ void red_add_global(float* address, float value) {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::red_add_f32(address, &value, 1);
#else
  asm volatile("red.global.add.f32 [%0], %1;\n" ::"l"(address), "f"(value) : "memory");
#endif
}
// The .v2.f32 vector form (sm_90): address[0] += first, address[1] += second,
// each element's add atomic; `address` 8-byte aligned.
__device__ __forceinline__ void red_add_global_v2(float* address, float first, float second) {
#if defined(ATTNBENCH_CUDASIM)
  const float values[2] = {first, second};
  cudasim::red_add_f32(address, values, 2);
#else
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(address), "f"(first), "f"(second) : "memory");
#endif
}
// The .v4.f32 vector form (sm_90): address[0..3] += value.x..w; `address` 16-byte aligned.
__device__ __forceinline__ void red_add_global_v4(float* address, float4 value) {
#if defined(ATTNBENCH_CUDASIM)
  const float values[4] = {value.x, value.y, value.z, value.w};
  cudasim::red_add_f32(address, values, 4);
#else
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(address), "f"(value.x), "f"(value.y),
               "f"(value.z), "f"(value.w)
               : "memory");
#endif
}
// PTX ISA "Data Movement and Conversion Instructions: cp.reduce.async.bulk"
// (.global.shared::cta.bulk_group.add.f32): adds `bytes / 4` fp32 values from shared memory at
// `shared_address` to global memory at `global_address`, element by element,
// each add atomic. Both addresses 16-byte aligned, `bytes` a multiple of 16.
// Asynchronous, in the async proxy: the shared bytes are read, and the adds
// done, in the thread's bulk async-groups (bulk_commit_group, then
// bulk_wait_group_read before the source is reused and bulk_wait_group before
// the sums are read), like a TMA store's; shared bytes written with ordinary
// stores need fence_proxy_async first.
__device__ __forceinline__ void bulk_reduce_add_global(float* global_address, std::uint32_t shared_address,
                                                       std::uint32_t bytes) {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::bulk_reduce_add_f32(global_address, shared_address, bytes);
#else
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(global_address),
               "r"(shared_address), "r"(bytes)
               : "memory");
#endif
}

// ---- a semaphore in global memory ------------------------------------------------------

// What a fixed order among CTAs is built from (e.g. the dQ contributions of the
// key tiles added in turn): a CTA waits until a counter reaches its turn with
// ld_acquire_gpu in a loop, does its part, and passes the turn on with
// red_release_gpu_add. Both 4-byte aligned global addresses, .gpu scope.

// ld.acquire.gpu.global.s32: later accesses of the thread are ordered after it,
// and it sees what a release it reads from published.
__device__ __forceinline__ int ld_acquire_gpu(const int* address) {
#if defined(ATTNBENCH_CUDASIM)
  return cudasim::ld_acquire_gpu_s32(address);
#else
  int value;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(value) : "l"(address) : "memory");
  return value;
#endif
}
// red.release.gpu.global.add.s32: *address += value, atomically, after every
// earlier access of the thread (publish them with a barrier first when other
// threads of the CTA made them).
__device__ __forceinline__ void red_release_gpu_add(int* address, int value) {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::red_release_gpu_add_s32(address, value);
#else
  asm volatile("red.release.gpu.global.add.s32 [%0], %1;\n" ::"l"(address), "r"(value) : "memory");
#endif
}

// ---- the rest: proxy fence, elect, setmaxnreg, named barriers, stmatrix -------------

// Orders this thread's generic-proxy accesses to shared memory (st.shared,
// stmatrix, plain C++) with later async-proxy ones (wgmma operands, TMA stores)
// and the reverse; then a barrier orders them for other threads.
__device__ __forceinline__ void fence_proxy_async() {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::fence_proxy_async();
#else
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// True in one lane of the (fully active) warp, the same every time.
__device__ __forceinline__ bool elect_one_sync() {
#if defined(ATTNBENCH_CUDASIM)
  return cudasim::elect_sync(0xffffffffu, nullptr);
#else
  std::uint32_t elected;
  asm volatile("{\n.reg .b32 lane;\n.reg .pred p;\nelect.sync lane|p, %1;\nselp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(elected)
               : "r"(0xffffffffu));
  return elected != 0;
#endif
}

// The warpgroup's per-thread register count, raised (inc) or lowered (dec) to
// kCount (24-256, a multiple of 8); every warp of the warpgroup executes it.
template <int kCount>
__device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(kCount >= 24 && kCount <= 256 && kCount % 8 == 0, "setmaxnreg: 24 to 256, a multiple of 8");
#if defined(ATTNBENCH_CUDASIM)
  cudasim::setmaxnreg(true, kCount);
#else
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kCount));
#endif
}
template <int kCount>
__device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(kCount >= 24 && kCount <= 256 && kCount % 8 == 0, "setmaxnreg: 24 to 256, a multiple of 8");
#if defined(ATTNBENCH_CUDASIM)
  cudasim::setmaxnreg(false, kCount);
#else
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kCount));
#endif
}

// bar.sync / bar.arrive on barrier `id` (1-15; 0 is __syncthreads's) for
// `threads` threads (a multiple of 32): sync waits for them, arrive does not.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::named_barrier_sync(id, threads);
#else
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
#endif
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::named_barrier_arrive(id, threads);
#else
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
#endif
}

// Stores four 8x8 matrices of 16-bit elements: lane l gives the address of row
// l % 8 of matrix l / 8; register i holds matrix i's row l / 4, columns
// 2(l % 4) and 2(l % 4) + 1 (the inverse of load_matrix_x4).
__device__ __forceinline__ void store_matrix_x4(std::uint32_t row_address, const std::uint32_t (&registers)[4]) {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::stmatrix_m8n8_b16(4, false, row_address, registers);
#else
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(row_address),
               "r"(registers[0]), "r"(registers[1]), "r"(registers[2]), "r"(registers[3])
               : "memory");
#endif
}
// … transposed: register i holds matrix i's rows 2(l % 4) and 2(l % 4) + 1 of column l / 4.
__device__ __forceinline__ void store_matrix_x4_transposed(std::uint32_t row_address,
                                                           const std::uint32_t (&registers)[4]) {
#if defined(ATTNBENCH_CUDASIM)
  cudasim::stmatrix_m8n8_b16(4, true, row_address, registers);
#else
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(row_address),
               "r"(registers[0]), "r"(registers[1]), "r"(registers[2]), "r"(registers[3])
               : "memory");
#endif
}

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
