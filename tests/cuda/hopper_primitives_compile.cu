// Compile check: every wrapper of kernels/cuda/hopper_primitives.hpp builds for
// sm_90a, wgmma in both forms (SS with K- and MN-major operands, RS) and both
// input types for every N the PTX ISA allows, so that an asm operand table
// (kernels/cuda/wgmma_asm.hpp) a kernel has not used yet cannot hide a typo.
// Nothing here runs.
#include <utility>

#include "kernels/cuda/hopper_primitives.hpp"

namespace attnbench {

template <int N>
__device__ void every_form(float* out, std::uint64_t a_descriptor, std::uint64_t b_descriptor,
                           const std::uint32_t (&a)[4]) {
  float d[N / 2] = {};
  wgmma_fence();
  wgmma_ss<N, __nv_bfloat16>(d, a_descriptor, b_descriptor, true);
  wgmma_ss<N, __half, Major::mn, Major::mn>(d, a_descriptor, b_descriptor, false);
  wgmma_rs<N, __nv_bfloat16, Major::mn>(d, a, b_descriptor, true);
  wgmma_rs<N, __half>(d, a, b_descriptor, false);
  wgmma_commit_group();
  wgmma_wait_group<0>();
  for (int i = 0; i < N / 2; ++i) out[threadIdx.x * (N / 2) + i] = d[i];
}

template <int... kSteps>
__device__ void every_shape(std::integer_sequence<int, kSteps...>, float* out, std::uint64_t a_descriptor,
                            std::uint64_t b_descriptor, const std::uint32_t (&a)[4]) {
  (every_form<8 * (kSteps + 1)>(out, a_descriptor, b_descriptor, a), ...);
}

__global__ void __launch_bounds__(128) hopper_wgmma_compile_check(float* out, std::uint64_t a_descriptor,
                                                                 std::uint64_t b_descriptor) {
  const std::uint32_t a[4] = {threadIdx.x, 1, 2, 3};
  every_shape(std::make_integer_sequence<int, 32>{}, out, a_descriptor, b_descriptor, a);
}

__global__ void __launch_bounds__(384, 1)
    hopper_rest_compile_check(const __grid_constant__ CUtensorMap map, std::uint16_t* out) {
  extern __shared__ __align__(128) unsigned char smem[];
  const std::uint32_t base = shared_address(smem), barrier = base + 65536;
  if (threadIdx.x == 0) {
    mbarrier_init(barrier, 1);
    fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x < 128) {
    setmaxnreg_dec<40>();
    if (threadIdx.x < 32 && elect_one_sync()) {
      mbarrier_arrive_expect_tx(barrier, 16384);
      tma_load(base, &map, barrier, 0);
      tma_load(base, &map, barrier, 0, 1);
      tma_load(base, &map, barrier, 0, 1, 2);
      tma_load(base, &map, barrier, 0, 1, 2, 3);
      tma_load(base, &map, barrier, 0, 1, 2, 3, 4);
      mbarrier_expect_tx(barrier, 16);
      const std::uint64_t state = mbarrier_arrive(barrier);
      while (!mbarrier_try_wait(barrier, state)) {
      }
    }
    return;
  }
  setmaxnreg_inc<232>();
  mbarrier_wait_parity(barrier, 0);
  while (!mbarrier_try_wait_parity(barrier, 1, 1000)) {
  }
  const std::uint32_t registers[4] = {1, 2, 3, 4};
  store_matrix_x4(base + threadIdx.x * 16, registers);
  store_matrix_x4_transposed(base + threadIdx.x * 16, registers);
  fence_proxy_async();
  named_barrier_sync(1, 256);
  named_barrier_arrive(2, 256);
  if (threadIdx.x == 128) {
    tma_store(&map, base, 0);
    tma_store(&map, base, 0, 1);
    tma_store(&map, base, 0, 1, 2);
    tma_store(&map, base, 0, 1, 2, 3);
    tma_store(&map, base, 0, 1, 2, 3, 4);
    bulk_commit_group();
    bulk_wait_group_read<0>();
    bulk_wait_group<0>();
    mbarrier_inval(barrier);
  }
  out[threadIdx.x] = smem[threadIdx.x];
}

__global__ void __launch_bounds__(128) hopper_reduction_compile_check(float* sums, int* semaphore) {
  if (threadIdx.x == 0) {
    while (ld_acquire_gpu(semaphore) != static_cast<int>(blockIdx.x)) {
    }
  }
  __syncthreads();
  extern __shared__ __align__(128) unsigned char smem[];
  const float value = static_cast<float>(threadIdx.x);
  red_add_global(sums + threadIdx.x, value);
  red_add_global_v2(sums + 2 * threadIdx.x, value, value);
  red_add_global_v4(sums + 4 * threadIdx.x, make_float4(value, value, value, value));
  reinterpret_cast<float*>(smem)[threadIdx.x] = value;
  fence_proxy_async();
  __syncthreads();
  if (threadIdx.x == 0) {
    bulk_reduce_add_global(sums, shared_address(smem), 512);
    bulk_commit_group();
    bulk_wait_group<0>();
    red_release_gpu_add(semaphore, 1);
  }
}

}  // namespace attnbench
