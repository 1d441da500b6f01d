// C = A · Bᵀ (A m x k, B n x k, C m x n, all row-major, bf16 or fp16, fp32
// accumulation) with Hopper's instructions, warp-specialised: the structure of
// a FlashAttention-3-class kernel with the attention taken out.
//
// Tiling (GemmTraits): one CTA per 128 x 128 tile of C, three warpgroups.
//   - Warpgroup 0, the producer, gives up registers (setmaxnreg.dec 40); one
//     elected thread of its first warp streams the CTA's A and B tiles of 64
//     k through a 4-stage pipeline with TMA: per stage it waits on the stage's
//     "empty" mbarrier, announces the stage's bytes on its "full" mbarrier
//     (arrive.expect_tx) and issues two tensor copies (128 x 64 each, 128-byte
//     swizzle) that complete on it. Out-of-bound rows and k are zero-filled.
//   - Warpgroups 1 and 2, the consumers, take registers (setmaxnreg.inc 232);
//     each owns 64 rows of the tile: per stage it waits on "full", issues four
//     wgmma.mma_async m64n128k16 (A and B from K-major, 128-byte swizzled
//     descriptors, 32 bytes further per k16 step), commits them as a group,
//     waits for the previous stage's group (wgmma.wait_group 1) and releases
//     that stage on "empty". The accumulators (64 fp32 per thread) stay in
//     registers across the whole k loop.
//   - Epilogue, per consumer: the accumulators are rounded to the element type
//     and written with stmatrix into two 64 x 64 halves of a 128-byte-swizzled
//     staging tile, fenced for the async proxy, the warpgroup synchronises on
//     its named barrier, and one thread stores both halves with TMA (rows and
//     columns outside C are not written).
// Shared memory: 4 stages x (16 KiB of A + 16 KiB of B), 2 x 16 KiB of C
// staging, the mbarriers; 1024-byte aligned for the 128-byte swizzle.
#include "kernels/cuda/hopper_gemm.hpp"

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "harness/cuda/cuda_check.hpp"
#include "kernels/cuda/hopper_primitives.hpp"
#include "kernels/cuda/kernel_launch.hpp"
#include "kernels/cuda/matrix_descriptor.hpp"
#include "kernels/cuda/sm90a_device.hpp"
#include "kernels/cuda/tensor_map.hpp"
#include "kernels/cuda/warp_primitives.hpp"

namespace attnbench {
ATTNBENCH_CUDA_BUILD_BEGIN
namespace {

struct GemmTraits {
  static constexpr int kBlockM = 128, kBlockN = 128, kBlockK = 64;
  static constexpr int kStages = 4;
  static constexpr int kConsumers = 2;  // warpgroups of 64 rows each
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kRowBytes = kBlockK * 2;                // 128: one swizzle span per row
  static constexpr int kTileBytes = kBlockM * kRowBytes;       // 16 KiB for A, the same for B
  static constexpr int kStageBytes = 2 * kTileBytes;
  static constexpr int kStagingBytes = 64 * kBlockN * 2;       // a consumer's 64 x 128 C tile
  static constexpr int kBarrierOffset = kStages * kStageBytes + kConsumers * kStagingBytes;
  static constexpr int kSharedBytes = kBarrierOffset + 1024 /* mbarriers */ + 1024 /* alignment */;
  static constexpr int kProducerRegisters = 40, kConsumerRegisters = 232;
  static_assert(kBlockM == 64 * kConsumers, "each consumer warpgroup owns 64 rows");
};

// The stage's A tile (rows of 128 bytes, swizzled) as a wgmma operand: 8-row groups 1024 bytes apart.
__device__ __forceinline__ std::uint64_t k_major_descriptor(std::uint32_t tile, int row, int k16) {
  return make_matrix_descriptor(tile + static_cast<std::uint32_t>(row * GemmTraits::kRowBytes + 32 * k16), 16,
                                8 * GemmTraits::kRowBytes, MatrixSwizzle::bytes128);
}

// The staging address of C's element (row, column) of a consumer's tile: two 64-column halves, each 64
// rows of 128 bytes with the 16-byte chunks of row r permuted by XOR with r mod 8 (128-byte swizzle).
__device__ __forceinline__ std::uint32_t staging_offset(int row, int column) {
  const int half = column / 64, chunk = column % 64 / 8;
  return static_cast<std::uint32_t>(half * 64 * 128 + row * 128 + 16 * (chunk ^ (row % 8)) + 2 * (column % 8));
}

template <typename Element>
__global__ void __launch_bounds__(GemmTraits::kThreads, 1)
    hopper_gemm_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                       const __grid_constant__ CUtensorMap c_map, int k_tiles) {
  using T = GemmTraits;
  const std::uint32_t window = shared_address(dynamic_shared_memory());
  const std::uint32_t base = (window + 1023) / 1024 * 1024;
  const auto stage_a = [&](int s) { return base + static_cast<std::uint32_t>(s * T::kStageBytes); };
  const auto stage_b = [&](int s) { return stage_a(s) + T::kTileBytes; };
  const auto full = [&](int s) { return base + T::kBarrierOffset + 8u * static_cast<std::uint32_t>(s); };
  const auto empty = [&](int s) { return full(s) + 8u * T::kStages; };
  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  const int m0 = static_cast<int>(blockIdx.y) * T::kBlockM, n0 = static_cast<int>(blockIdx.x) * T::kBlockN;

  if (threadIdx.x == 0) {
    for (int s = 0; s < T::kStages; ++s) {
      mbarrier_init(full(s), 1);
      mbarrier_init(empty(s), T::kConsumers);
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    setmaxnreg_dec<T::kProducerRegisters>();
    if (threadIdx.x < 32 && elect_one_sync()) {
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % T::kStages;
        const auto phase = static_cast<std::uint32_t>(kt / T::kStages) & 1u;
        mbarrier_wait_parity(empty(s), phase ^ 1u);  // the first use waits for the phase before phase 0: none
        mbarrier_arrive_expect_tx(full(s), T::kStageBytes);
        tma_load(stage_a(s), &a_map, full(s), kt * T::kBlockK, m0);
        tma_load(stage_b(s), &b_map, full(s), kt * T::kBlockK, n0);
      }
    }
    return;
  }

  setmaxnreg_inc<T::kConsumerRegisters>();
  const int consumer = warpgroup - 1;
  const int thread = static_cast<int>(threadIdx.x) % 128;
  float accumulators[T::kBlockN / 2];
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int s = kt % T::kStages;
    mbarrier_wait_parity(full(s), static_cast<std::uint32_t>(kt / T::kStages) & 1u);
    wgmma_fence();
#pragma unroll
    for (int k16 = 0; k16 < T::kBlockK / 16; ++k16) {
      wgmma_ss<T::kBlockN, Element>(accumulators, k_major_descriptor(stage_a(s), 64 * consumer, k16),
                                    k_major_descriptor(stage_b(s), 0, k16), kt > 0 || k16 > 0);
    }
    wgmma_commit_group();
    wgmma_wait_group<1>();  // the previous stage's products are done: release it
    if (kt > 0 && thread == 0) mbarrier_arrive(empty((kt - 1) % T::kStages));
  }
  wgmma_wait_group<0>();

  // Epilogue: accumulators -> staging (stmatrix, four 8x8 matrices per 16 columns) -> C (TMA).
  const std::uint32_t staging = base + static_cast<std::uint32_t>(T::kStages * T::kStageBytes + consumer * T::kStagingBytes);
  const int warp = thread / 32, lane = thread % 32;
  const int row = 16 * warp + 8 * (lane / 8 % 2) + lane % 8;  // the row lane `lane` addresses
#pragma unroll
  for (int j = 0; j < T::kBlockN / 8; j += 2) {
    const std::uint32_t registers[4] = {
        pack_pair<Element>(accumulators[4 * j], accumulators[4 * j + 1]),
        pack_pair<Element>(accumulators[4 * j + 2], accumulators[4 * j + 3]),
        pack_pair<Element>(accumulators[4 * j + 4], accumulators[4 * j + 5]),
        pack_pair<Element>(accumulators[4 * j + 6], accumulators[4 * j + 7])};
    store_matrix_x4(staging + staging_offset(row, 8 * j + 8 * (lane / 16)), registers);
  }
  fence_proxy_async();
  named_barrier_sync(1 + consumer, 128);
  if (thread == 0) {
    tma_store(&c_map, staging, n0, m0 + 64 * consumer);
    tma_store(&c_map, staging + 64 * 128, n0 + 64, m0 + 64 * consumer);
    bulk_commit_group();
    bulk_wait_group_read<0>();  // shared memory must outlive the copies' reads
  }
}

// A row-major rows x columns matrix of 16-bit elements, read or written in `box` tiles.
CUtensorMap matrix_map(const void* data, int rows, int columns, std::uint32_t box_columns, std::uint32_t box_rows,
                       bool bf16, CUtensorMapSwizzle swizzle, const char* what) {
  TensorMapShape shape;
  shape.dims[0] = static_cast<std::uint64_t>(columns);
  shape.dims[1] = static_cast<std::uint64_t>(rows);
  shape.byte_strides[0] = 2 * static_cast<std::uint64_t>(columns);
  shape.box[0] = box_columns;
  shape.box[1] = box_rows;
  return make_tensor_map(bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, data, shape,
                         swizzle, what);
}

template <typename Element>
void launch(const void* a, const void* b, void* c, int m, int n, int k, bool bf16, cudaStream_t stream) {
  using T = GemmTraits;
  const CUtensorMap a_map = matrix_map(a, m, k, T::kBlockK, T::kBlockM, bf16, CU_TENSOR_MAP_SWIZZLE_128B, "A");
  const CUtensorMap b_map = matrix_map(b, n, k, T::kBlockK, T::kBlockN, bf16, CU_TENSOR_MAP_SWIZZLE_128B, "B");
  const CUtensorMap c_map = matrix_map(c, m, n, 64, 64, bf16, CU_TENSOR_MAP_SWIZZLE_128B, "C");
  ATTNBENCH_CUDA_CHECK(
      cudaFuncSetAttribute(&hopper_gemm_kernel<Element>, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSharedBytes));
  const dim3 grid(static_cast<unsigned>((n + T::kBlockN - 1) / T::kBlockN),
                  static_cast<unsigned>((m + T::kBlockM - 1) / T::kBlockM));
  launch_kernel(&hopper_gemm_kernel<Element>, grid, dim3(T::kThreads), T::kSharedBytes, stream, a_map, b_map, c_map,
                (k + T::kBlockK - 1) / T::kBlockK);
  ATTNBENCH_CUDA_CHECK_LAUNCH();
  ATTNBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace

void hopper_gemm(const void* a, const void* b, void* c, int m, int n, int k, bool bf16, int host_threads) {
  if (m < 1 || n < 1 || k < 1 || n % 8 != 0 || k % 8 != 0) {
    throw std::invalid_argument("hopper_gemm: m, n, k must be positive and n, k multiples of 8 (got m " +
                                std::to_string(m) + ", n " + std::to_string(n) + ", k " + std::to_string(k) + ")");
  }
#if defined(ATTNBENCH_CUDASIM)
  cudasim::Stream simulated{host_threads};
  cudaStream_t stream = &simulated;
#else
  (void)host_threads;
  cudaStream_t stream = nullptr;
#endif
  if (bf16) {
    launch<__nv_bfloat16>(a, b, c, m, n, k, true, stream);
  } else {
    launch<__half>(a, b, c, m, n, k, false, stream);
  }
}

bool hopper_gemm_runs_here(std::string& why) { return sm90a_code_runs_here(why); }

ATTNBENCH_CUDA_BUILD_END
}  // namespace attnbench
