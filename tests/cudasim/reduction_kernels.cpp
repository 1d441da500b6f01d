// Built as CUDA code for the simulator (tests/CMakeLists.txt); see reduction_kernels.hpp.
#include "tests/cudasim/reduction_kernels.hpp"

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/hopper_primitives.hpp"
#include "kernels/cuda/kernel_launch.hpp"

namespace cudasim_test {
namespace {

using attnbench::dynamic_shared_memory;
using attnbench::launch_kernel;
using attnbench::shared_address;

template <typename... Params, typename... Args>
int run_on(int host_threads, void (*kernel)(Params...), int ctas, int threads, std::size_t dynamic_bytes,
           Args... args) {
  cudasim::Stream stream{host_threads};
  launch_kernel(kernel, dim3(static_cast<unsigned>(ctas)), dim3(static_cast<unsigned>(threads)), dynamic_bytes,
                &stream, args...);
  return static_cast<int>(cudaGetLastError());
}

template <typename... Params, typename... Args>
int run(void (*kernel)(Params...), int ctas, int threads, std::size_t dynamic_bytes, Args... args) {
  return run_on(1, kernel, ctas, threads, dynamic_bytes, args...);
}

__global__ void red_add_kernel(float* sums, RedForm form, int offset) {
  const unsigned t = threadIdx.x;
  const float value = static_cast<float>((blockIdx.x + 1) * (t + 1));
  float* target = sums + 4 * t + offset;
  switch (form) {
    case RedForm::scalar:
      for (int i = 0; i < 4; ++i) attnbench::red_add_global(target + i, value);
      break;
    case RedForm::v2:
      attnbench::red_add_global_v2(target, value, value);
      attnbench::red_add_global_v2(target + 2, value, value);
      break;
    case RedForm::v4:
      attnbench::red_add_global_v4(target, make_float4(value, value, value, value));
      break;
  }
}

__global__ void red_add_to_shared_kernel(float* out) {
  float* slot = reinterpret_cast<float*>(dynamic_shared_memory());
  *slot = 0.0f;
  attnbench::red_add_global(slot, 1.0f);
  out[0] = *slot;
}

__global__ void bulk_reduce_kernel(float* sums, float* out, BulkReduce variant) {
  float* tile = reinterpret_cast<float*>(dynamic_shared_memory());
  const unsigned t = threadIdx.x;
  tile[t] = static_cast<float>(t + 1);
  if (variant != BulkReduce::not_fenced) attnbench::fence_proxy_async();
  if (t == 0) attnbench::red_add_global(sums, 0.0f);
  __syncthreads();
  if (variant == BulkReduce::never_waited && t != 0) return;
  if (t == 0) {
    const std::uint32_t bytes = variant == BulkReduce::size_not_16 ? 20 : 128;
    float* destination = sums + (variant == BulkReduce::misaligned_global ? 1 : 0);
    const std::uint32_t source = shared_address(tile) + (variant == BulkReduce::misaligned_shared ? 4 : 0);
    attnbench::bulk_reduce_add_global(destination, source, bytes);
    if (variant == BulkReduce::never_waited) return;
    attnbench::bulk_commit_group();
    if (variant != BulkReduce::waited_too_late) {
      attnbench::bulk_wait_group_read<0>();
      attnbench::bulk_wait_group<0>();
    }
  }
  __syncthreads();
  if (t == 0 && variant == BulkReduce::waited_too_late) attnbench::bulk_wait_group<0>();
  if (t < 2) out[t] = sums[t];
}

__global__ void mixed_access_kernel(float* sums, float* out, int* counter, MixedAccess variant) {
  const unsigned t = threadIdx.x;
  attnbench::red_add_global(sums + t, 1.0f);
  __syncthreads();
  if (variant == MixedAccess::store_then_add || variant == MixedAccess::store_then_add_unsynced) {
    sums[(t + 1) % 64] = 0.0f;
    if (variant == MixedAccess::store_then_add) __syncthreads();
    attnbench::red_add_global(sums + t, 1.0f);
    return;
  }
  if (t == 0) attnbench::red_release_gpu_add(counter, 1);
  if (blockIdx.x + 1 != gridDim.x) return;
  if (variant != MixedAccess::uncounted_read && t == 0) {
    while (attnbench::ld_acquire_gpu(counter) != static_cast<int>(gridDim.x)) {
    }
  }
  if (variant == MixedAccess::counted_read) __syncthreads();
  out[t] = sums[t];
}

__global__ void accumulate_kernel(float* sums, int* semaphore, Accumulation variant) {
  const int c = static_cast<int>(blockIdx.x), ctas = static_cast<int>(gridDim.x);
  const int turn = variant == Accumulation::ordered       ? c
                   : variant == Accumulation::wait_too_long ? c + 1
                                                            : ctas - 1 - c;
  if (variant != Accumulation::unordered) {
    if (threadIdx.x == 0) {
      while (attnbench::ld_acquire_gpu(semaphore) != turn) {
      }
    }
    __syncthreads();
  }
  attnbench::red_add_global(sums + threadIdx.x, addend(c, static_cast<int>(threadIdx.x)));
  if (variant != Accumulation::unordered) {
    __syncthreads();
    if (threadIdx.x == 0) attnbench::red_release_gpu_add(semaphore, 1);
  }
}

}  // namespace

float addend(int cta, int thread) {
  const unsigned mix = static_cast<unsigned>(cta) * 2654435761u ^ static_cast<unsigned>(thread) * 40503u;
  const float magnitude = static_cast<float>(1u << (mix % 24)) * (1.0f + static_cast<float>(mix >> 24 & 0x7f) / 128.0f);
  return (mix >> 8 & 1u) != 0 ? -magnitude : magnitude;
}

int mixed_access(float* sums, float* out, int* counter, int ctas, MixedAccess variant) {
  return run(&mixed_access_kernel, ctas, 64, 0, sums, out, counter, variant);
}

int accumulate(float* sums, int* semaphore, int ctas, Accumulation variant, int host_threads) {
  return run_on(host_threads, &accumulate_kernel, ctas, 64, 0, sums, semaphore, variant);
}

int red_add(float* sums, int ctas, RedForm form, int offset) {
  return run(&red_add_kernel, ctas, 64, 0, sums, form, offset);
}

int red_add_to_shared(float* out) { return run(&red_add_to_shared_kernel, 1, 1, 16, out); }

int bulk_reduce_add(float* sums, float* out, BulkReduce variant) {
  return run(&bulk_reduce_kernel, 1, 32, 256, sums, out, variant);
}

}  // namespace cudasim_test
