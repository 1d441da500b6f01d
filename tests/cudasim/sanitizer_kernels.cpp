// Built as CUDA code for the simulator (tests/CMakeLists.txt); see sanitizer_kernels.hpp.
#include "tests/cudasim/sanitizer_kernels.hpp"

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/kernel_launch.hpp"
#include "kernels/cuda/warp_primitives.hpp"

namespace cudasim_test {
namespace {

using attnbench::launch_kernel;

int launch_result() { return static_cast<int>(cudaGetLastError()); }

template <typename... Params, typename... Args>
int run(void (*kernel)(Params...), int blocks, int threads, std::size_t dynamic_bytes, int host_threads,
        Args... args) {
  cudasim::Stream stream{host_threads};
  launch_kernel(kernel, dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(threads)), dynamic_bytes,
                &stream, args...);
  return launch_result();
}

__global__ void neighbour_exchange_kernel(const float* in, float* out, bool barrier) {
  ATTNBENCH_STATIC_SHARED(tile, float[64]);
  const unsigned t = threadIdx.x;
  tile[t] = in[t];
  if (barrier) __syncthreads();
  out[t] = tile[(t + 1) % 64];
}

__global__ void read_then_overwrite_kernel(const float* in, float* out, bool barrier) {
  ATTNBENCH_STATIC_SHARED(tile, float[64]);
  const unsigned t = threadIdx.x;
  tile[t] = in[t];
  __syncthreads();
  const float neighbour = tile[(t + 1) % 64];
  if (barrier) __syncthreads();
  tile[t] = 2.0f * neighbour;
  out[t] = neighbour;
}

__global__ void warp_exchange_kernel(const float* in, float* out) {
  ATTNBENCH_STATIC_SHARED(tile, float[32]);
  const unsigned lane = threadIdx.x;
  tile[lane] = in[lane];
  __syncwarp();
  out[lane] = tile[31 - lane];
}

template <int kPending>
__global__ void two_stage_copy_kernel(const float* in, float* out) {
  const unsigned t = threadIdx.x;
  const std::uint32_t base = attnbench::shared_address(attnbench::dynamic_shared_memory());
  attnbench::copy_async_16(base + 16 * t, in + 4 * t, true);
  attnbench::copy_async_commit();
  attnbench::copy_async_16(base + 1024 + 16 * t, in + 4 * t, true);
  attnbench::copy_async_commit();
  attnbench::copy_async_wait<kPending>();
  __syncthreads();
  const float* stage = reinterpret_cast<const float*>(attnbench::dynamic_shared_memory() + 1024);
  for (int i = 0; i < 4; ++i) out[4 * t + i] = stage[4 * ((t + 1) % 64) + i];
}

__global__ void write_before_wait_kernel(const float* in, float* out) {
  const std::uint32_t base = attnbench::shared_address(attnbench::dynamic_shared_memory());
  attnbench::copy_async_16(base + 16 * threadIdx.x, in + 4 * threadIdx.x, true);
  attnbench::copy_async_commit();
  attnbench::store_shared_u32(base + 16 * threadIdx.x, 0u);
  attnbench::copy_async_wait<0>();
  out[threadIdx.x] = 0.0f;
}

__global__ void copy_never_waited_kernel(const float* in, float* out) {
  const std::uint32_t base = attnbench::shared_address(attnbench::dynamic_shared_memory());
  attnbench::copy_async_16(base + 16 * threadIdx.x, in + 4 * threadIdx.x, true);
  attnbench::copy_async_commit();
  out[threadIdx.x] = 1.0f;
}

__global__ void uninitialised_read_kernel(float* out) {
  ATTNBENCH_STATIC_SHARED(tile, float[64]);
  out[threadIdx.x] = tile[threadIdx.x];
}

__global__ void read_past_the_end_kernel(const float* in, float* out) { out[threadIdx.x] = in[threadIdx.x + 1]; }

__global__ void shared_index_past_the_end_kernel(float* out) {
  ATTNBENCH_STATIC_SHARED(tile, float[64]);
  tile[64 + threadIdx.x] = 1.0f;
  out[threadIdx.x] = 0.0f;
}

__global__ void misaligned_ldmatrix_kernel(float* out) {
  ATTNBENCH_STATIC_SHARED(tile, std::uint16_t[16 * 16 + 8]);
  const unsigned lane = threadIdx.x;
  for (int i = 0; i < 8; ++i) tile[8 * lane + i] = 1;
  __syncwarp();
  std::uint32_t registers[4];
  attnbench::load_matrix_x4(registers, attnbench::shared_address(&tile[0]) + 16 * lane + 4);
  out[lane] = static_cast<float>(registers[0]);
}

__global__ void divergent_barrier_kernel(float* out) {
  ATTNBENCH_STATIC_SHARED(tile, float[64]);
  const unsigned t = threadIdx.x;
  if (t < 32) {
    tile[t] = 1.0f;
    __syncthreads();
    out[t] = tile[t + 32];
  } else {
    __syncthreads();
    tile[t] = 2.0f;
    out[t] = 0.0f;
  }
}

__global__ void barrier_after_early_exit_kernel(float* out) {
  if (threadIdx.x >= 32) return;
  __syncthreads();
  out[threadIdx.x] = 1.0f;
}

__global__ void shuffle_with_missing_lanes_kernel(float* out) {
  float value = static_cast<float>(threadIdx.x);
  if (threadIdx.x % 32 < 16) value = __shfl_xor_sync(0xffffffffu, value, 1);
  out[threadIdx.x] = value;
}

__global__ void shuffle_modes_kernel(float* out, int width) {
  const unsigned lane = threadIdx.x;
  const float value = 100.0f + static_cast<float>(lane);
  out[lane] = __shfl_xor_sync(0xffffffffu, value, 5);
  out[32 + lane] = __shfl_up_sync(0xffffffffu, value, 3, width);
  out[64 + lane] = __shfl_down_sync(0xffffffffu, value, 3, width);
  out[96 + lane] = __shfl_sync(0xffffffffu, value, 2, width);
}

__global__ void ldmatrix_registers_kernel(float* out) {
  ATTNBENCH_STATIC_SHARED(tile, std::uint16_t[16 * 16]);
  const unsigned lane = threadIdx.x;
  for (int i = 0; i < 8; ++i) {
    const unsigned element = 8 * lane + static_cast<unsigned>(i);
    tile[element] = static_cast<std::uint16_t>(element);  // row element / 16, column element % 16
  }
  __syncwarp();
  const std::uint32_t row = attnbench::shared_address(&tile[0]) + 32 * (lane % 16) + 16 * (lane / 16);
  std::uint32_t plain[4], transposed[4];
  attnbench::load_matrix_x4(plain, row);
  attnbench::load_matrix_x4_transposed(transposed, row);
  for (int r = 0; r < 4; ++r) {
    out[8 * lane + static_cast<unsigned>(r)] = __builtin_bit_cast(float, plain[r]);
    out[8 * lane + 4 + static_cast<unsigned>(r)] = __builtin_bit_cast(float, transposed[r]);
  }
}

__global__ void dynamic_shared_kernel(float* out) {
  attnbench::dynamic_shared_memory()[threadIdx.x] = 1;
  out[threadIdx.x] = 1.0f;
}

__global__ void atomic_adds_kernel(float* out) {
  atomicAdd(out, 1.0f);
  atomicAdd(reinterpret_cast<float2*>(out + 2), make_float2(1.0f, 2.0f));
}

}  // namespace

int neighbour_exchange(const float* in, float* out, bool barrier) {
  return run(&neighbour_exchange_kernel, 1, 64, 0, 1, in, out, barrier);
}
int read_then_overwrite(const float* in, float* out, bool barrier) {
  return run(&read_then_overwrite_kernel, 1, 64, 0, 1, in, out, barrier);
}
int warp_exchange(const float* in, float* out) { return run(&warp_exchange_kernel, 1, 32, 0, 1, in, out); }
int two_stage_copy(const float* in, float* out, int waited_groups_pending) {
  switch (waited_groups_pending) {
    case 0:
      return run(&two_stage_copy_kernel<0>, 1, 64, 2048, 1, in, out);
    case 1:
      return run(&two_stage_copy_kernel<1>, 1, 64, 2048, 1, in, out);
    default:
      return run(&two_stage_copy_kernel<2>, 1, 64, 2048, 1, in, out);
  }
}
int write_before_wait(const float* in, float* out) { return run(&write_before_wait_kernel, 1, 32, 512, 1, in, out); }
int copy_never_waited(const float* in, float* out) { return run(&copy_never_waited_kernel, 1, 32, 512, 1, in, out); }
int uninitialised_read(float* out) { return run(&uninitialised_read_kernel, 1, 64, 0, 1, out); }
int read_past_the_end(const float* in, float* out) { return run(&read_past_the_end_kernel, 1, 64, 0, 1, in, out); }
int shared_index_past_the_end(float* out) { return run(&shared_index_past_the_end_kernel, 1, 64, 0, 1, out); }
int misaligned_ldmatrix(float* out) { return run(&misaligned_ldmatrix_kernel, 1, 32, 0, 1, out); }
int divergent_barrier(float* out) { return run(&divergent_barrier_kernel, 1, 64, 0, 1, out); }
int barrier_after_early_exit(float* out) { return run(&barrier_after_early_exit_kernel, 1, 64, 0, 1, out); }
int shuffle_with_missing_lanes(float* out) { return run(&shuffle_with_missing_lanes_kernel, 1, 32, 0, 1, out); }
int shuffle_modes(float* out, int width) { return run(&shuffle_modes_kernel, 1, 32, 0, 1, out, width); }
int ldmatrix_registers(float* out) { return run(&ldmatrix_registers_kernel, 1, 32, 0, 1, out); }
int launch_with_dynamic_shared(float* out, std::size_t dynamic_bytes, int raised_limit) {
  if (raised_limit > 0) {
    const cudaError_t raised =
        cudaFuncSetAttribute(&dynamic_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, raised_limit);
    if (raised != cudaSuccess) {
      (void)cudaGetLastError();  // the runtime keeps the error for cudaGetLastError, as on a GPU
      return static_cast<int>(raised);
    }
  }
  return run(&dynamic_shared_kernel, 1, 32, dynamic_bytes, 1, out);
}
int atomic_adds(float* out, int blocks, int host_threads) {
  return run(&atomic_adds_kernel, blocks, 64, 0, host_threads, out);
}

}  // namespace cudasim_test
